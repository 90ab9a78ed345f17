"""Every planner balances and scales on real local Spark: 4 → 6 → 3 slots, live hand-offs, exact.

``hash`` keeps key-group ranges (tests/test_spark_scaling.py); the balancing planners scale by
moves: a scale-out adds empty slots they fill, a scale-in marks slots as leaving, which milp and
albic empty while they balance, cola and potc place nothing on, and flux and fish get drained.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.oracle import compare_results, window_oracle
from tests.spark_jobs import make_spec, random_stream, read_run, run_job

from elastream.core.spec import ScaleEvent
from elastream.runtimes.spark.file_run import Paths
from elastream.stores.migration_store import MigrationStore

pytestmark = pytest.mark.spark

EVENTS = (ScaleEvent(1, 6), ScaleEvent(3, 3))


def _check(run: Any, df: pd.DataFrame, spec: Any, *, closed_only: bool = False) -> None:
    expected = window_oracle(df, time_col="ts", key_col="key", aggs=spec.windowing.aggs,
                             windows=spec.windowing.windows)
    if closed_only:  # a watched folder emits the windows its watermark closed
        expected = expected[expected["window_end"] <= pd.Timestamp(df["ts"].max())]
    compare_results(run.results, expected)
    assert run.summary["nothing_lost"] and run.summary["input_rows"] == len(df)
    asked = [m for m in run.metrics if m.get("scale_to")]
    assert [m["scale_to"] for m in asked] == [6, 3]
    assert asked[0]["slots_added"] == [4, 5] and len(asked[1]["slots_marked"]) == 3
    after = [m for m in run.metrics if m["batch_id"] >= asked[1]["batch_id"]]
    assert sum(m["moves"] for m in after) > 0
    gone = [s for m in after for s in m.get("slots_gone", [])]
    assert gone and set(gone) <= set(asked[1]["slots_marked"])
    if closed_only:
        return  # a hand-off of the last batch is taken over when the next file arrives
    # Every hand-off of a moved key group was taken over.
    store = MigrationStore(Paths(spec.files.output).migration)
    moved = {(m["routing_version"], kg) for m in run.metrics for kg in m["moved_key_groups"]}
    assert moved <= store.acknowledged()


# fish and albic scale a watched folder through the same events (below).
@pytest.mark.parametrize("planner", ["flux", "milp", "cola", "potc"])
def test_a_balancing_planner_scales_out_and_in_live_and_stays_exact(
        spark: Any, tmp_path: Path, planner: str) -> None:
    df = random_stream(seed=31, rows=600, keys=40)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count"],
                     windows=["2h", "6h/2h"], planner=planner, rows_per_batch=100, slots=4,
                     key_groups=12, max_moves=6, scale_at=EVENTS)
    run = run_job(spark, spec)
    _check(run, df, spec)
    if planner in ("flux", "fish", "milp", "albic"):  # cola and potc have no move budget
        assert all(m["moves"] <= spec.routing.max_moves for m in run.metrics)
    assert {m["plan_status"] for m in run.metrics if m["plan_status"]} <= {
        "optimal", "feasible", "unchanged"}
    assert read_run(spec, run.summary).summary == run.summary


@pytest.mark.parametrize("planner", ["fish", "albic"])  # drained, and emptied by the MILP
def test_a_planner_scales_a_watched_folder_out_and_in(
        spark: Any, tmp_path: Path, planner: str) -> None:
    df = random_stream(seed=32, rows=800, keys=40, hours=40)
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(8):
        df.iloc[i * 100:(i + 1) * 100].to_parquet(folder / f"part-{i:02}.parquet",
                                                  coerce_timestamps="us")
    spec = make_spec(folder, tmp_path / "out", aggs=["sum:v", "count"], windows=["2h"],
                     planner=planner, slots=4, key_groups=12, max_moves=6, scale_at=EVENTS,
                     mode="watch", max_batches=8)
    run = run_job(spark, spec)
    _check(run, df, spec, closed_only=True)


def _autoscaled(spark: Any, tmp_path: Path, *, seed: int, rows: int, planner: str,
                slots: int, latency_target: float) -> tuple[Any, dict[str, Any]]:
    """A replay autoscaled within 1…4 slots, equal to the oracle; its run and the record of
    its first autoscale event."""
    df = random_stream(seed=seed, rows=rows, keys=40)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count"],
                     windows=["2h"], planner=planner, rows_per_batch=100, slots=slots,
                     key_groups=12, max_moves=6, autoscale=(1, 4),
                     latency_target=latency_target)
    run = run_job(spark, spec)
    compare_results(run.results, window_oracle(df, time_col="ts", key_col="key",
                                               aggs=spec.windowing.aggs,
                                               windows=spec.windowing.windows))
    assert run.summary["nothing_lost"] and run.summary["scale_events"][0]["by"] == "autoscale"
    return run, next(m for m in run.metrics if m.get("scale_asked_by") == "autoscale")


def test_autoscale_grows_the_job_to_its_cores_when_no_slot_count_meets_the_target(
        spark: Any, tmp_path: Path) -> None:
    """A target below a batch's fixed seconds (O ≥ T): the model asks for its most slots, as
    soon as it measured a service rate (whatever the machine's speed), and the job grows to
    the 2 cores of ``local[2]``: more slots would add no parallelism."""
    run, grown = _autoscaled(spark, tmp_path, seed=33, rows=800, planner="flux", slots=1,
                             latency_target=0.01)
    decided = [m["autoscale"] for m in run.metrics if "autoscale" in m]
    assert spark.sparkContext.defaultParallelism == 2
    assert grown["scale_to"] == 2 and grown["slots_added"] == [1]
    assert grown["autoscale"]["cores"] == 2 and grown["autoscale"]["overhead_seconds"] >= 0.01
    assert grown["autoscale"]["reason"] == ("2 slots, one per core the job runs on: more add "
                                            "no parallelism")
    assert all(d["decision"] == "hold" for d in decided if d is not grown["autoscale"])


def test_autoscale_shrinks_a_job_whose_slots_wait_more_than_they_work(
        spark: Any, tmp_path: Path) -> None:
    """A target far above any batch's time: the model asks for ⌊λ/μ⌋ + 1 slots, and with 2
    cores at most two slots work at once (λ/μ is about the slots' busy seconds per second of
    wall time, < 2), so 4 slots are more than needed whatever the machine's speed: after
    ``patience`` steps the job scales in, and the leaving slots are emptied live."""
    run, shrunk = _autoscaled(spark, tmp_path, seed=34, rows=1200, planner="fish", slots=4,
                              latency_target=3600.0)
    decision = shrunk["autoscale"]
    assert decision["decision"] == "in" and decision["slots"] < 4
    assert decision["reason"] == f"{decision['slots']} slots kept up for 3 steps"
    assert len(shrunk["slots_marked"]) == 4 - decision["slots"]
    gone = [s for m in run.metrics for s in m.get("slots_gone", [])]
    assert set(shrunk["slots_marked"]) <= set(gone)
