"""Elasticutor on local Spark: slots sized by measured service rates, results exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.live import folder_stream
from tests.oracle import compare_results
from tests.spark_jobs import make_spec, random_stream, run_job
from tests.test_spark_pipeline import oracle_for

import elastream as es
from elastream.core.errors import OptionError
from elastream.stores.routing_store import RoutingStore

pytestmark = pytest.mark.spark


def test_slots_follow_the_measured_load_and_results_stay_exact(spark: Any,
                                                                 tmp_path: Path) -> None:
    df = random_stream(seed=5, rows=600, keys=20)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count"],
                     windows=["2h", "6h/2h"], rows_per_batch=150, slots=4, key_groups=16,
                     planner="elasticutor",
                     planner_options={"executors": 2, "latency_target": 30.0})
    run = run_job(spark, spec)
    compare_results(run.results, oracle_for(df, spec))
    assert run.summary["nothing_lost"] and run.summary["input_rows"] == len(df)
    planned = [r for r in run.metrics if r["valid_rows"]]
    # The first batches hold the workers' start: no rate is measured from them. Every later
    # step measured each slot's busy seconds and the span, and the model sized the slots:
    # at least one per elastic executor, at most the four there are.
    timed = [r for r in planned if "busy_seconds" in r]
    assert len(timed) >= len(planned) - 2
    for record in timed:
        assert len(record["busy_seconds"]) == 4 and record["interval_seconds"] > 0
        assert record["overhead_seconds"] >= 0
    assert all(2 <= r["slots_used"] <= 4 for r in planned)
    # The slots in use hold every key group: the routing's, after the last plan applied.
    last = RoutingStore(spec.files.output / "_routing").current()
    assert last is not None and len(set(last.slot_of)) <= planned[-1]["slots_used"]


def test_holding_executors_needs_a_cluster_and_a_planner_that_sizes_slots(
        spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    df = folder_stream(spark, tmp_path / "in")
    with pytest.raises(OptionError, match="spark_executors needs a cluster master"):
        es.windowed(df, key="key", time="ts", windows=["1h"], slots=2, planner="elasticutor",
                    state_dir=tmp_path / "state", spark_executors=(1, 2),
                    start_controller=False)
    with pytest.raises(OptionError, match="spark_executors needs a job that sizes its slots"):
        es.windowed(df, key="key", time="ts", windows=["1h"], slots=2, planner="flux",
                    state_dir=tmp_path / "state", spark_executors=(1, 2),
                    start_controller=False)
