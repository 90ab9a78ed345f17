"""Operator graphs on real local Spark (Enorm §4.1–4.4): fan-out and fan-in, fused into the
components Algorithm 1 plans, each equal to the pandas oracle of the graph computed operator by
operator through a live scale-out; and each plan has one shuffle per unfused operator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from tests.chain_oracle import chain_oracle
from tests.oracle import compare_results
from tests.spark_jobs import make_spec, random_stream, run_job

from elastream.core.options import spec_values
from elastream.core.spec import ScaleEvent

pytestmark = pytest.mark.spark

DIAMOND = {
    # Per route 1 h sums (the source); per origin (A) and per route (B), each hour; C: per
    # origin, the union of A's and B's windows (the sink).
    "operators": [
        {"id": "A", "keys": ["key"], "aggs": ["sum:sum_v", "max:sum_v"]},
        {"id": "B", "keys": ["key", "dest"], "aggs": ["sum:sum_v", "sum:count"]},
        {"id": "C", "keys": ["key"], "aggs": ["sum:sum_sum_v", "count:sum_sum_v"]},
    ],
    "edges": [{"from": "source", "to": "A", "rate": 4}, {"from": "source", "to": "B"},
              {"from": "A", "to": "C"}, {"from": "B", "to": "C"}],
}
FAST_AND_BRANCH = {
    # Enorm's Fast Job (windowed sums at 1, 5, 10 and 20 h, each of the one before) and a
    # branch off the 5 h operator: the largest 5 h sum per 10 h (a max of sums: not a
    # consolidation length, so a Spark aggregation of its own).
    "operators": [
        {"id": "w5", "keys": ["key"], "aggs": ["sum:sum_v"], "window": "5h"},
        {"id": "w10", "keys": ["key"], "aggs": ["sum:sum_sum_v"], "window": "10h"},
        {"id": "w20", "keys": ["key"], "aggs": ["sum:sum_sum_sum_v"], "window": "20h"},
        {"id": "peak10", "keys": ["key"], "aggs": ["max:sum_sum_v"], "window": "10h"},
    ],
    "edges": [{"from": "source", "to": "w5"}, {"from": "w5", "to": "w10"},
              {"from": "w10", "to": "w20"}, {"from": "w5", "to": "peak10"}],
}


def _routes(seed: int, rows: int) -> pd.DataFrame:
    df = random_stream(seed=seed, rows=rows, keys=8)
    df["dest"] = np.random.default_rng(seed).choice([f"d{i}" for i in range(5)], rows)
    return df


def _diamond(tmp_path: Path, df: pd.DataFrame, **overrides: Any) -> Any:
    df.to_parquet(tmp_path / "in.parquet")
    return make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count"],
                     windows=["1h"], key_col="key,dest", partition_by=("key",),
                     **spec_values({"chain": DIAMOND}), **overrides)


def test_a_fused_diamond_is_exact_through_a_live_scale_out(spark: Any, tmp_path: Path) -> None:
    df = _routes(seed=41, rows=500)
    spec = _diamond(tmp_path, df, rows_per_batch=125, slots=2, max_slots=4,
                    scale_at=(ScaleEvent(1, 4),))
    # Algorithm 1 puts every operator with the source (all partitioned by origin): one
    # slot-local stage regroups A, B and C, C reading both.
    assert spec.chaining.fused == 3 and spec.component_pa == ("key",)
    run = run_job(spark, spec)
    assert sum(m["moves"] for m in run.metrics) > 0
    expected = chain_oracle(df, spec)
    assert len(expected) > 50
    compare_results(run.results, expected)
    assert run.summary["nothing_lost"]


def test_an_unfused_diamond_stopped_and_resumed_is_exact(spark: Any, tmp_path: Path) -> None:
    # Every operator its own component: A and B one stage of Spark's state (depth 1), C, over
    # the union of their windows, another (depth 2). Stopped after one micro-batch with
    # windows open in every stage, then resumed from the checkpoint: each window once.
    df = _routes(seed=42, rows=300)
    spec = _diamond(tmp_path, df, rows_per_batch=100, slots=2, fused=0, max_batches=1)
    first = run_job(spark, spec)
    assert 0 < first.summary["input_rows"] < len(df)
    resumed = run_job(spark, spec.with_(max_batches=None))
    compare_results(resumed.results, chain_oracle(df, spec))
    assert resumed.summary["input_rows"] == len(df) and resumed.summary["nothing_lost"]


def test_the_fast_job_with_a_branch_is_exact_through_a_live_scale_out(
        spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=43, rows=600, keys=6)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count"],
                     windows=["1h"], rows_per_batch=150, slots=2, max_slots=4,
                     scale_at=(ScaleEvent(1, 4),), **spec_values({"chain": FAST_AND_BRANCH}))
    # The Fast Job's windows fuse (consolidation lengths); the branch is a max of sums, so it
    # runs as its own component off the 5 h windows.
    assert spec.chaining.fused == 3 and [op.id for op in spec.chaining.chain][3] == "peak10"
    run = run_job(spark, spec)
    assert sum(m["moves"] for m in run.metrics) > 0
    expected = chain_oracle(df, spec)
    assert set(expected["operator"]) == {"w20", "peak10"} and len(expected) > 0
    compare_results(run.results, expected)


@pytest.mark.parametrize(("graph", "fused", "depth"), [
    (DIAMOND, 3, 0), (DIAMOND, 0, 2),
    (FAST_AND_BRANCH, 3, 1), (FAST_AND_BRANCH, 2, 1), (FAST_AND_BRANCH, 1, 2),
    (FAST_AND_BRANCH, 0, 3),
])
def test_the_plan_has_one_exchange_per_depth_of_unfused_operators(
        spark: Any, tmp_path: Path, graph: dict[str, Any], fused: int, depth: int) -> None:
    # The components run as planned: the source's in one slot-local stage, the unfused
    # operators in one stage per depth (each one shuffle, whatever the edges into it), and the
    # source's pipeline once (a second branch over it would run it, state and all, again).
    import elastream as es

    es.configure(spark, 2)
    pd.DataFrame({"ts": pd.to_datetime(["2001-01-01"]), "key": ["a"], "dest": ["b"],
                  "v": [1.0]}).to_parquet(tmp_path / "in.parquet")
    stream = spark.readStream.schema("ts timestamp, key string, dest string, v double").parquet(
        str(tmp_path))
    key = "key,dest" if graph is DIAMOND else "key"
    plans = []
    for chain in ({}, {"graph": graph, "fused": fused}):
        job = es.windowed(stream, key=key, time="ts", windows=["1h"],
                          aggs=["sum:v", "count"], partition_by=["key"], planner="hash",
                          slots=2, state_dir=str(tmp_path / f"state{len(plans)}"),
                          start_controller=False, **chain)
        assert job.spec.chaining.fused == (fused if chain else None)
        plans.append(spark._jvm.PythonSQLUtils.explainString(
            job.results._jdf.queryExecution(), "simple"))
        job.stop()
    exchanges = [plan.count("Exchange ") for plan in plans]
    assert exchanges[1] - exchanges[0] == depth
    assert plans[1].count("TransformWithState") == 1 + depth
