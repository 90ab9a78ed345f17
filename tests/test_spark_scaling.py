"""Scaling a running job on real local Spark: live progressive migration of the consolidate
stage's state (Ding et al. §3), against the pandas oracle — through scale-out and scale-in, a
stop in the middle of a migration, and a crash right after a hand-off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.oracle import compare_results, window_oracle
from tests.spark_jobs import make_spec, random_stream, results_by_batch, run_job

from elastream.core.spec import ScaleEvent
from elastream.runtimes.spark.file_run import Paths
from elastream.stores.migration_store import FAULT, MigrationStore

pytestmark = pytest.mark.spark

EVENTS = (ScaleEvent(2, 3), ScaleEvent(5, 2))


def _spec(tmp_path: Path, df: Any, **overrides: Any) -> Any:
    df.to_parquet(tmp_path / "in.parquet")
    settings = dict(aggs=["sum:v", "count"], windows=["2h", "6h/2h"], planner="hash",
                    rows_per_batch=100, slots=2, key_groups=8, max_moves=1, scale_at=EVENTS,
                    tau=0.5)
    output = overrides.pop("output", tmp_path / "out")
    settings.update(overrides)
    return make_spec(tmp_path / "in.parquet", output, **settings)


def _oracle(df: Any, spec: Any) -> Any:
    return window_oracle(df, time_col="ts", key_col="key", aggs=spec.windowing.aggs,
                         windows=spec.windowing.windows)


def test_scale_out_then_in_live_is_exact_and_moves_one_key_group_per_batch(
        spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=21, rows=1600)
    # The scale-in is due while the scale-out still moves key groups: it waits for it.
    spec = _spec(tmp_path, df, scale_at=(ScaleEvent(2, 4), ScaleEvent(3, 2)))
    run = run_job(spark, spec)
    compare_results(run.results, _oracle(df, spec))
    assert run.summary["nothing_lost"]
    loaded = [m for m in run.metrics if m["valid_rows"]]
    events = [(m["batch_id"], m["scale_to"]) for m in loaded if m.get("scale_to")]
    assert [slots for _, slots in events] == [4, 2]
    assert events[1][0] > 3
    assert max(m["moves"] for m in loaded) == 1  # mini-migrations of --max-moves key groups
    assert sum(m["moves"] for m in loaded) >= 2
    assert max(m["active_slots"] for m in loaded) == 4
    assert loaded[-1]["active_slots"] == 2 and loaded[-1]["key_groups_to_move"] == 0
    # Every hand-off was taken over, and the driver collected the files behind it.
    store = MigrationStore(Paths(spec.files.output).migration)
    moved = {(m["routing_version"], kg) for m in loaded for kg in m["moved_key_groups"]}
    assert moved <= store.acknowledged()
    assert not list(store.directory.glob("v*/kg*.arrow")) or store.receipts()


def test_stopped_mid_migration_resumes_exactly(spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=22, rows=1000)
    spec = _spec(tmp_path, df, max_batches=4)
    first = run_job(spark, spec)
    last = [m for m in first.metrics if m["valid_rows"]][-1]
    assert last["key_groups_to_move"] > 0, "stopped after the migration ended"
    rest = run_job(spark, _spec(tmp_path, df))
    compare_results(rest.results, _oracle(df, spec))
    assert rest.summary["nothing_lost"]


def test_crash_right_after_a_hand_off_loses_nothing_and_counts_nothing_twice(
        spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=23, rows=1000)
    spec = _spec(tmp_path, df)
    trigger = Paths(spec.files.output).migration / FAULT
    trigger.parent.mkdir(parents=True)
    trigger.touch()
    with pytest.raises(Exception, match="injected fault"):
        run_job(spark, spec)
    assert not trigger.exists()
    again = run_job(spark, spec)
    compare_results(again.results, _oracle(df, spec))
    assert again.summary["nothing_lost"]


def test_stop_the_world_scaling_is_exact(spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=24, rows=800)
    spec = _spec(tmp_path, df, scale_mode="stop")
    run = run_job(spark, spec)
    compare_results(run.results, _oracle(df, spec))
    restarts = [m for m in run.metrics if "restart_seconds" in m]
    assert len(restarts) == 2 and all(m["moves"] >= 1 for m in restarts)


def test_key_groups_that_do_not_move_are_never_held_back(spark: Any, tmp_path: Path) -> None:
    """Every window of a key group that never moved is emitted in the same micro-batch as in a
    job that does not scale; a moved key group's windows at most one batch later."""
    df = random_stream(seed=25, rows=1200)
    scaled = _spec(tmp_path, df, scale_at=(ScaleEvent(2, 4),), max_moves=2)
    still = _spec(tmp_path, df, scale_at=(), output=tmp_path / "still")
    runs = {name: run_job(spark, spec) for name, spec in (("scaled", scaled), ("still", still))}
    moved = {kg for m in runs["scaled"].metrics for kg in m["moved_key_groups"]}
    assert moved
    from pyspark.sql import functions as F

    keys = spark.createDataFrame(df[["key"]].drop_duplicates())
    kg_of = dict(keys.select("key", F.pmod(F.xxhash64("key"), F.lit(scaled.routing.key_groups)))
                 .toPandas().itertuples(index=False, name=None))
    window = ["key", "window_length", "window_slide", "window_start"]
    both = results_by_batch(scaled.files.output).merge(
        results_by_batch(still.files.output), on=window, suffixes=("_scaled", "_still"))
    assert len(both) == len(runs["still"].results)
    delay = both["batch_scaled"] - both["batch_still"]
    was_moved = both["key"].map(kg_of).isin(moved)
    assert (delay[~was_moved] == 0).all()
    assert delay[was_moved].between(0, 1).all()

