"""Jobs whose stores are given as URIs, end to end on local Spark, against the oracle.

Everything as ``file://`` URIs (state, checkpoints, results sink); and the job's state on an
S3-compatible server (moto on 127.0.0.1: routing versions, driver-bound micro-batches, owner
records, the history snapshot, hand-offs of a live scale-out, metrics), with Spark's own
checkpoints local (its S3 connector is not installed here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import functions as F
from tests.oracle import compare_results
from tests.test_spark_api import ADVANCE_MS, ROWS, START_MS, _rate_expected, _wait_for

import elastream as es
from elastream.runtimes.spark.sink import batch_of
from elastream.stores.filesystem import ArrowFolder, folder
from elastream.stores.migration_store import MigrationStore
from elastream.stores.routing_store import RoutingStore

pytestmark = pytest.mark.spark


def _rate(spark: Any) -> Any:
    rate = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS)
            .option("startTimestamp", START_MS).option("advanceMillisPerBatch", ADVANCE_MS)
            .load())
    return rate.select("timestamp",
                       F.concat(F.lit("k"), (F.col("value") * 7 % 13).cast("string")).alias("key"),
                       (F.col("value") % 17).cast("double").alias("v"))


def _run(spark: Any, state_dir: str, results: str, checkpoint: str, batches: int,
         **options: Any) -> es.WindowedJob:
    job = es.windowed(_rate(spark), key="key", time="timestamp", windows=["1m", "3m/1m"],
                      aggs=["sum:v", "count"], key_groups=8, state_dir=state_dir, **options)
    query = (job.results.writeStream.foreachBatch(es.ParquetBatchSink(results))
             .option("checkpointLocation", checkpoint).start())
    try:
        _wait_for(job, query, batches=batches)
    finally:
        query.stop()
        job.stop()
    return job


def _check_exact(job: es.WindowedJob, results: Path, checkpoint: Path) -> None:
    expected = _rate_expected(job, checkpoint,
                              (b for p in results.iterdir() if (b := batch_of(p)) is not None))
    got = pd.read_parquet(results)  # pandas: sees every file the sink wrote
    for column in ("window_start", "window_end"):
        got[column] = pd.to_datetime(got[column], utc=True)
    compare_results(got, expected)


def test_a_job_given_file_uris_is_exact(spark: Any, tmp_path: Path) -> None:
    es.configure(spark, 2)
    job = _run(spark, f"file://{tmp_path}/state", f"file://{tmp_path}/out",
               f"file://{tmp_path}/cp", batches=8, planner="fish", slots=2)
    _check_exact(job, tmp_path / "out", tmp_path / "cp")
    # The URIs named local folders: the stores are where the plain paths would put them.
    assert job.state_dir.exclusive and job.binder is None
    assert RoutingStore(tmp_path / "state" / "_routing").bindings()
    assert (tmp_path / "state" / "metrics.jsonl").read_text().count("\n") == len(job.metrics)
    assert sorted(p.name for p in (tmp_path / "out").iterdir())[0].startswith("part-")


def test_a_job_keeping_its_state_on_s3_scales_out_live_and_is_exact(
        spark: Any, tmp_path: Path, s3_uri: str) -> None:
    es.configure(spark, 3)
    job = _run(spark, s3_uri, str(tmp_path / "out"), str(tmp_path / "cp"), batches=14,
               planner="hash", slots=2, max_slots=3, scale_at=["3:3"], max_moves=2)
    _check_exact(job, tmp_path / "out", tmp_path / "cp")
    state = folder(s3_uri)
    assert isinstance(state, ArrowFolder) and job.binder is not None
    routing = RoutingStore(state / "_routing")
    bindings = routing.bindings()
    assert len(bindings) >= 10 and list(bindings.values()) == sorted(bindings.values())
    assert routing.current_version() == max(r["routing_version"] for r in job.metrics) > 0
    # Key groups moved to the third slot with their state, through hand-offs on S3.
    moved = sum(r["moves"] for r in job.metrics)
    assert moved >= 2 and len(set(routing.current().slot_of)) == 3  # type: ignore[union-attr]
    migration = MigrationStore(state / "_migration")
    assert len(migration.acknowledged()) == moved
    assert len([n for n in state.names() if n.startswith("metrics.jsonl.")]) == len(job.metrics)
