"""The Python API on the user's own streaming DataFrames and sinks, against the oracle."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark import cloudpickle
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from tests.oracle import compare_results, window_oracle

import elastream as es
from elastream.core.errors import OptionError, SessionError

pytestmark = pytest.mark.spark

START_MS = 1_000_000_000_000
ROWS, ADVANCE_MS = 40, 20_000


def _wait_for(job: Any, query: Any, batches: int) -> None:
    """Until the job observed ``batches`` micro-batches of the query (or the query failed)."""
    while sum(r["batches"] for r in job.metrics) < batches:
        assert query.exception() is None and job.loop.error is None
        time.sleep(0.1)


def _rate_expected(job: Any, checkpoint: Path, written: Iterator[int]) -> pd.DataFrame:
    """The windows the sink must hold: every one the rate rows of micro-batches 0..N closed,
    N the last batch the query committed or its sink ``written`` (a stop can fall after the
    sink wrote a batch and before Spark reported it: the job's metrics then lack it). The
    watermark of batch N is the one Spark logged in the checkpoint's offsets for it."""
    last = max([*written, *(int(p.name) for p in (checkpoint / "commits").iterdir()
                             if p.name.isdigit())])
    consumed = (last + 1) * ROWS  # rate-micro-batch: ROWS rows a batch, from batch 0
    reported = sum(r["input_rows"] for r in job.metrics)
    assert reported % ROWS == 0 and consumed - ROWS <= reported <= consumed
    meta = json.loads((checkpoint / "offsets" / str(last)).read_text().splitlines()[1])
    watermark = pd.Timestamp(meta["batchWatermarkMs"], unit="ms", tz="UTC")
    expected = window_oracle(_rate_rows(consumed), time_col="timestamp", key_col="key",
                             aggs=job.spec.windowing.aggs, windows=job.spec.windowing.windows)
    expected = expected[expected["window_end"] <= watermark]
    assert len(expected) > 0
    return expected


def _rate_rows(rows: int) -> pd.DataFrame:
    """What ``rate-micro-batch`` gave for ``rows`` rows, with the test's key and value."""
    value = pd.Series(range(rows))
    return pd.DataFrame({
        "timestamp": pd.to_datetime(START_MS + (value // ROWS) * ADVANCE_MS, unit="ms",
                                    utc=True),
        "key": "k" + (value * 7 % 13).astype(str),
        "v": (value % 17).astype(float),
    })


def test_rate_source_into_the_users_parquet_sink_is_exact(spark: Any, tmp_path: Path) -> None:
    es.configure(spark, 2)
    rate = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS)
            .option("startTimestamp", START_MS).option("advanceMillisPerBatch", ADVANCE_MS)
            .load())
    df = rate.select("timestamp",
                     F.concat(F.lit("k"), (F.col("value") * 7 % 13).cast("string")).alias("key"),
                     (F.col("value") % 17).cast("double").alias("v"))
    job = es.windowed(df, key="key", time="timestamp", windows=["1m", "3m/1m"],
                      aggs=["sum:v", "count"], planner="fish", slots=2, key_groups=8,
                      state_dir=tmp_path / "state")
    query = (job.results.writeStream.format("parquet")
             .option("checkpointLocation", str(tmp_path / "cp")).start(str(tmp_path / "out")))
    try:
        _wait_for(job, query, batches=6)
    finally:
        query.stop()
        job.stop()
    assert sum(r["input_rows"] for r in job.metrics) >= 6 * ROWS
    sink_log = tmp_path / "out" / "_spark_metadata"  # the batches a reader sees (N, N.compact)
    expected = _rate_expected(job, tmp_path / "cp", (int(p.name.split(".")[0])
                                                     for p in sink_log.iterdir()
                                                     if p.name.split(".")[0].isdigit()))
    results = spark.read.parquet(str(tmp_path / "out")).toPandas()
    for column in ("window_start", "window_end"):
        results[column] = pd.to_datetime(results[column], utc=True)
    compare_results(results, expected)


# -- a Python streaming data source ----------------------------------------------------------

BATCHES, PER_BATCH = 5, 60


def _source_rows(batch: int) -> list[tuple[Any, str, float]]:
    base = pd.Timestamp("2001-03-01", tz="UTC") + pd.Timedelta(hours=batch)
    return [(base + pd.Timedelta(seconds=36 * i), f"k{(batch * 7 + i * 3) % 11}",
             float(i % 17)) for i in range(PER_BATCH)]


class _Batches(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


class CountingSource(DataSource):
    """``BATCHES`` micro-batches of ``PER_BATCH`` rows, one more each time Spark asks."""

    @classmethod
    def name(cls) -> str:
        return "elastream_test_counting"

    def schema(self) -> str:
        return "ts timestamp, key string, v double"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802
        return _CountingReader()


class _CountingReader(DataSourceStreamReader):
    def __init__(self) -> None:
        self.offered = 0

    def initialOffset(self) -> dict[str, int]:  # noqa: N802
        return {"batch": 0}

    def latestOffset(self) -> dict[str, int]:  # noqa: N802
        self.offered = min(self.offered + 1, BATCHES)
        return {"batch": self.offered}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [_Batches(start["batch"], end["batch"])]

    def read(self, partition: Any) -> Iterator[tuple[Any, ...]]:
        for batch in range(partition.start, partition.end):
            yield from _source_rows(batch)

    def commit(self, end: dict[str, int]) -> None:
        pass


def test_python_data_source_into_a_foreach_batch_function_is_exact(
        spark: Any, tmp_path: Path) -> None:
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(CountingSource)
    es.configure(spark, 3)
    df = spark.readStream.format("elastream_test_counting").load()
    job = es.windowed(df, key="key", time="ts", windows=["2h", "4h/1h"], aggs=["avg:v", "max:v"],
                      planner="flux", slots=3, key_groups=12, state_dir=tmp_path / "state")
    collected: list[pd.DataFrame] = []
    query = (job.results.writeStream
             .foreachBatch(lambda frame, batch: collected.append(frame.toPandas()))
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
        job.stop()
    rows = pd.DataFrame([r for b in range(BATCHES) for r in _source_rows(b)],
                        columns=["ts", "key", "v"])
    expected = window_oracle(rows, time_col="ts", key_col="key", aggs=job.spec.windowing.aggs,
                             windows=job.spec.windowing.windows)
    expected = expected[expected["window_end"] <= rows["ts"].max()]
    results = pd.concat(collected, ignore_index=True)
    for column in ("window_start", "window_end"):
        results[column] = pd.to_datetime(results[column], utc=True)
    compare_results(results, expected)
    assert sum(r["input_rows"] for r in job.metrics) == len(rows)
    page = job.report()  # the state_dir's metrics; results and dead letter are the user's
    assert page == tmp_path / "state" / "report.html"
    assert 'data-plot="slot-load"' in page.read_text()
    assert 'data-skipped="summary"' in page.read_text()


# -- mistakes -------------------------------------------------------------------------------


def test_a_wrong_session_setting_is_named_with_its_fix(spark: Any, tmp_path: Path) -> None:
    df = spark.readStream.format("rate").load().withColumnRenamed("value", "key")
    es.configure(spark, 4)
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    try:
        with pytest.raises(SessionError) as caught:
            es.windowed(df, key="key", time="timestamp", windows=["1m"], slots=4,
                        state_dir=tmp_path)
    finally:
        es.configure(spark, 4)
    message = str(caught.value)
    assert "spark.sql.shuffle.partitions must be '4', got '7'" in message
    assert "spark.conf.set('spark.sql.shuffle.partitions', '4')" in message
    assert "elastream.configure" in message


@pytest.mark.parametrize(("arguments", "argument"), [
    ({"windows": ["6x"]}, "windows"),
    ({"aggs": ["median:v"]}, "aggs"),
    ({"slots": 0}, "slots"),
    ({"planner": "nope"}, "planner"),
    ({"scale_at": ["3:2"], "planner": "elasticutor"}, "scale_at"),
    ({"autoscale": (3, 8), "slots": 2}, "autoscale"),
    ({"latency_target": 2.0}, "latency_target"),
    ({"planner": "flux", "planner_options": {"min_imbalence": 0.1}}, "min_imbalence"),
    ({"planner": "cola", "planner_options": {"max_moves": 2}}, "max_moves"),
    ({"max_slots": 1, "slots": 2}, "max_slots"),
    ({"lateness": "soon"}, "lateness"),
])
def test_api_errors_name_the_argument(spark: Any, tmp_path: Path, arguments: dict[str, Any],
                                      argument: str) -> None:
    df = spark.readStream.format("rate").load().withColumn("v", F.col("value") * 1.0)
    settings: dict[str, Any] = dict(key="value", time="timestamp", windows=["1m"],
                                    aggs=["sum:v"], state_dir=tmp_path)
    settings.update(arguments)
    with pytest.raises(OptionError) as caught:
        es.windowed(df, **settings)
    assert caught.value.option == argument
    assert str(caught.value).startswith(f"{argument} ")


def test_a_static_dataframe_is_refused(spark: Any, tmp_path: Path) -> None:
    static = spark.range(3).withColumn("ts", F.current_timestamp())
    with pytest.raises(OptionError, match=r"^df must be a streaming DataFrame"):
        es.windowed(static, key="id", time="ts", windows=["1m"], state_dir=tmp_path)
