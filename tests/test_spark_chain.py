"""Chained operators on real local Spark (Enorm §4.1–4.4): every fused and unfused plan equals
the pandas oracle of the chain computed operator by operator, while key groups move every
batch; and each operator fused into the source's component saves the plan one shuffle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from tests.chain_oracle import chain_oracle
from tests.oracle import compare_results
from tests.spark_jobs import make_spec, random_stream, run_job

from elastream.core.aggregates import AggSpec
from elastream.core.chain import ChainOperator
from elastream.core.windows import WindowSpec

pytestmark = pytest.mark.spark


def _fast_job(fused: int | None) -> dict[str, Any]:
    """Enorm's Fast Job: windowed sums at 1, 5, 10 and 20 (here hours), each of the one before."""
    names = ["sum_v", "sum_sum_v", "sum_sum_sum_v"]
    chain = tuple(ChainOperator(f"w{length}", ("key",), (AggSpec("sum", name),),
                                WindowSpec.parse(f"{length}h"))
                  for length, name in zip((5, 10, 20), names, strict=True))
    return dict(aggs=["sum:v", "count"], windows=["1h"], chain=chain, fused=fused)


def _routes(seed: int, rows: int) -> pd.DataFrame:
    df = random_stream(seed=seed, rows=rows, keys=8)
    df["dest"] = np.random.default_rng(seed).choice([f"d{i}" for i in range(5)], rows)
    return df


def test_fused_window_and_regroup_operators_are_exact_while_key_groups_move(
        spark: Any, tmp_path: Path) -> None:
    # Per route: 1 h sums; fused window operator: 3 h sums of them (same key, composed); fused
    # regroup operator: per origin, the largest 3 h route sum and the routes' record count.
    df = _routes(seed=21, rows=700)
    df.to_parquet(tmp_path / "in.parquet")
    chain = (ChainOperator("route3h", ("key", "dest"),
                           (AggSpec("sum", "sum_v"), AggSpec("sum", "count")),
                           WindowSpec.parse("3h"), ("key",)),
             ChainOperator("origin", ("key",),
                           (AggSpec("max", "sum_sum_v"), AggSpec("sum", "sum_count"))))
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count"],
                     windows=["1h"], key_col="key,dest", partition_by=("key", "dest"),
                     chain=chain, rows_per_batch=140, slots=3)
    assert spec.chaining.fused == 2 and spec.component_pa == ("key",)
    run = run_job(spark, spec, force_moves=True)
    assert sum(m["moves"] for m in run.metrics) > 0
    compare_results(run.results, chain_oracle(df, spec))
    assert run.summary["nothing_lost"]


def test_a_chain_half_fused_half_spark_aggregations_is_exact(spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=22, rows=600, keys=6)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", rows_per_batch=150,
                     **_fast_job(fused=1))
    run = run_job(spark, spec, force_moves=True)
    expected = chain_oracle(df, spec)
    assert len(expected) > 0 and set(expected["window_length"]) == {20 * 3600}
    compare_results(run.results, expected)


def test_each_fused_operator_saves_one_shuffle(spark: Any, tmp_path: Path) -> None:
    import elastream as es

    es.configure(spark, 2)
    pd.DataFrame({"ts": pd.to_datetime(["2001-01-01"]), "key": ["a"], "v": [1.0]}).to_parquet(
        tmp_path / "in.parquet")
    stream = spark.readStream.schema("ts timestamp, key string, v double").parquet(str(tmp_path))
    exchanges = {}
    for fused in range(4):
        job = es.windowed(stream, key="key", time="ts", windows=["1h"], aggs=["sum:v"],
                         chain=[dict(id=f"w{n}", keys=["key"], aggs=[f"sum:{c}"],
                                     window=f"{n}h")
                                for n, c in ((5, "sum_v"), (10, "sum_sum_v"),
                                             (20, "sum_sum_sum_v"))],
                         fused=fused, planner="hash", slots=2,
                         state_dir=str(tmp_path / f"state{fused}"), start_controller=False)
        plan = spark._jvm.PythonSQLUtils.explainString(job.results._jdf.queryExecution(),
                                                       "simple")
        exchanges[fused] = plan.count("Exchange ")
        job.stop()
    # Three chained operators: each one not fused adds its own aggregation's shuffle.
    assert [exchanges[f] - exchanges[3] for f in range(4)] == [3, 2, 1, 0]
