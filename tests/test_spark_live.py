"""Elasticity on a live stream through the Python API: files keep arriving while micro-batches
run back to back and the control loop moves key groups, scales, or publishes at random moments
beside them (no lock-step); the results must equal the pandas oracle for every reader."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.live import (
    FolderWriter,
    assert_one_version_per_batch,
    folder_stream,
    no_moves,
    read_folder,
    running,
    split,
)
from tests.oracle import compare_results, window_oracle
from tests.spark_jobs import random_stream, rotate_every_batch

from elastream.control.controller import Controller
from elastream.core.aggregates import AggSpec
from elastream.core.plan import Move
from elastream.core.spec import PipelineSpec, ScaleEvent
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.api import build_job, configure
from elastream.runtimes.spark.sink import ParquetBatchSink

pytestmark = pytest.mark.spark

AGGS = ("sum:v", "count")
WINDOWS = ("2h", "6h/2h")


def _spec(**overrides: Any) -> PipelineSpec:
    settings: dict[str, Any] = dict(time_col="ts", key_col="key", slots=2, key_groups=8,
                                    planner="hash", max_moves=1)
    settings.update(overrides)
    return PipelineSpec.of(aggs=tuple(AggSpec.parse(a) for a in AGGS),
                           windows=tuple(WindowSpec.parse(w) for w in WINDOWS), **settings)


def _expected(df: pd.DataFrame, spec: PipelineSpec) -> pd.DataFrame:
    """Windows the stream's last watermark closed (the newest event time)."""
    expected = window_oracle(df, time_col="ts", key_col="key", aggs=spec.windowing.aggs,
                             windows=spec.windowing.windows)
    return expected[expected["window_end"] <= pd.Timestamp(df["ts"].max())]


def _run_live(spark: Any, tmp_path: Path, df: pd.DataFrame, spec: PipelineSpec, *,
              files: int = 16, interval: float = 0.3, controller: Controller | None = None,
              beside: Any = None) -> tuple[Any, pd.DataFrame]:
    """Stream ``df`` into a watched folder while the job runs; its results as pandas reads them.

    ``beside(job)``, if given, starts something that runs with the query and returns how to
    stop it, once the query has processed every file.
    """
    configure(spark, spec.scaling.max_slots)
    folder, out = tmp_path / "in", tmp_path / "results"
    folder.mkdir()
    job = build_job(folder_stream(spark, folder), spec, tmp_path / "state", {},
                    controller=controller)
    query = (job.results.writeStream.foreachBatch(ParquetBatchSink(out))
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    writer = FolderWriter(folder, split(df, files), interval)
    with running(query, job):
        writer.start()
        stop = beside(job) if beside is not None else None
        writer.join()
        query.processAllAvailable()
        if stop is not None:
            stop()
    return job, read_folder(out)


def test_live_folder_with_moves_every_batch_is_exact(spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=31, rows=1600)
    spec = _spec(planner="flux")
    job, results = _run_live(spark, tmp_path, df, spec,
                             controller=Controller(rotate_every_batch, None))
    compare_results(results, _expected(df, spec))
    assert sum(r["input_rows"] for r in job.metrics) == len(df)
    assert sum(r["valid_rows"] + r["dead_letter_rows"] for r in job.metrics) == len(df)
    assert sum(r["moves"] for r in job.metrics) >= 3
    assert assert_one_version_per_batch(job) >= 2
    # Several files' batches ran while the control loop planned: no lock-step.
    assert max(r["batches"] for r in job.metrics) >= 1


def test_live_folder_scales_out_and_in_with_live_hand_offs(spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=32, rows=2000)
    spec = _spec(scale_at=(ScaleEvent(2, 4), ScaleEvent(6, 2)))
    job, results = _run_live(spark, tmp_path, df, spec, files=24, interval=0.3)
    compare_results(results, _expected(df, spec))
    loaded = [r for r in job.metrics if r["valid_rows"]]
    assert [r["scale_to"] for r in loaded if r.get("scale_to")] == [4, 2]
    assert max(r["active_slots"] for r in loaded) == 4
    assert max(r["moves"] for r in job.metrics) == 1  # mini-migrations of max_moves
    assert job.routing.slot_of == tuple(job.runtime.load_state()["slot_of"])  # type: ignore[index]
    assert len(set(job.routing.slot_of)) == 2
    assert_one_version_per_batch(job)


def test_versions_published_at_random_moments_keep_results_exact(
        spark: Any, tmp_path: Path) -> None:
    """100+ routing versions published by a thread at random moments, during batches too."""
    df = random_stream(seed=33, rows=2000)
    spec = _spec(slots=3, key_groups=12)
    published: list[int] = []
    done = threading.Event()

    def publish_at_random(job: Any) -> Any:
        def publisher() -> None:
            rng = random.Random(33)
            while not done.is_set() or len(published) < 100:
                time.sleep(rng.uniform(0.0, 0.06))
                table = job.runtime.routing()
                free = [kg for kg in range(table.num_key_groups)
                        if kg not in job.runtime.in_flight()]
                if not free:
                    continue
                kg = rng.choice(free)
                target = rng.choice([s for s in range(3) if s != table.slot_of[kg]])
                job.runtime.publish(table.apply([Move(kg, table.slot_of[kg], target)]))
                published.append(kg)

        thread = threading.Thread(target=publisher, daemon=True)
        thread.start()

        def stop() -> None:
            done.set()
            thread.join()

        return stop

    job, results = _run_live(spark, tmp_path, df, spec, files=20, interval=0.3,
                             controller=Controller(no_moves, None), beside=publish_at_random)
    assert len(published) >= 100
    compare_results(results, _expected(df, spec))
    assert job.routing.version == len(published)
    assert assert_one_version_per_batch(job) >= 5


def test_query_stopped_abruptly_mid_migration_restarts_exactly(
        spark: Any, tmp_path: Path) -> None:
    """The query is stopped (not drained) while key groups are moving, then started again on
    the same checkpoint and state while the files keep arriving."""
    df = random_stream(seed=34, rows=2000)
    spec = _spec(scale_at=(ScaleEvent(1, 4),))
    configure(spark, spec.scaling.max_slots)
    folder, out, state = tmp_path / "in", tmp_path / "results", tmp_path / "state"
    folder.mkdir()
    writer = FolderWriter(folder, split(df, 20), 0.3, hold_after=8)

    def start() -> tuple[Any, Any]:
        job = build_job(folder_stream(spark, folder), spec, state, {})
        query = (job.results.writeStream.foreachBatch(ParquetBatchSink(out))
                 .option("checkpointLocation", str(tmp_path / "cp")).start())
        return job, query

    job, query = start()
    with running(query, job):
        writer.start()
        # Stop right after the first mini-migration was published: key groups are moving.
        # (The writer holds after 8 files, so this comes whatever the machine's speed.)
        deadline = time.monotonic() + 600
        while not any(r.get("moves") for r in job.metrics):
            assert job.loop.error is None and query.exception() is None
            assert time.monotonic() < deadline, f"no move after 8 files: {job.metrics}"
            time.sleep(0.05)
    moving = job.metrics[-1]
    assert moving["key_groups_to_move"] > moving["moves"], moving
    writer.release()
    job, query = start()
    with running(query, job):
        writer.join()
        query.processAllAvailable()
    compare_results(read_folder(out), _expected(df, spec))
