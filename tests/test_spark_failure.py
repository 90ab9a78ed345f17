"""Real Spark failures named in one line: a Python worker's exception, else the Java root cause.

Every failure is raised by the local Spark session (a UDF that raises, a ``foreachBatch``
function that raises, a missing path, a corrupted checkpoint), never built by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import functions as F

from elastream.runtimes.spark.failure import failure_report, is_spark_failure, root_cause
from elastream.runtimes.spark.sink import ParquetBatchSink

pytestmark = pytest.mark.spark


def raised(action: Callable[[], Any]) -> BaseException:
    with pytest.raises(Exception) as caught:
        action()
    return caught.value


def bad_record(x):  # type: ignore[no-untyped-def]  # no hints: PySpark reads them as pandas'
    if x == 7:
        raise ValueError(f"bad record {x}")
    return x


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "in").mkdir()
    pd.DataFrame({"id": range(10)}).to_parquet(tmp_path / "in" / "a.parquet")
    return tmp_path


def stream(spark: Any, folder: Path, name: str, *, udf: bool = False,
           sink: Callable[[Any, int], Any] = lambda frame, batch: None) -> Any:
    rows = spark.readStream.schema("id long").parquet(str(folder / "in"))
    if udf:
        rows = rows.select(F.udf(bad_record, "long")("id").alias("id"))
    return (rows.writeStream.foreachBatch(sink).trigger(availableNow=True)
            .option("checkpointLocation", str(folder / name)).start())


def test_a_python_udf_failure_is_named_by_its_python_exception(spark: Any) -> None:
    error = raised(spark.range(10).select(F.udf(bad_record, "long")("id")).collect)
    assert is_spark_failure(error)
    assert root_cause(error) == "ValueError: bad record 7"
    report = failure_report(error)
    assert "Traceback" in report and "at org.apache.spark" in report


def test_a_streaming_udf_failure_either_way_it_surfaces(spark: Any, folder: Path) -> None:
    query = stream(spark, folder, "udf", udf=True, sink=lambda frame, batch: frame.collect())
    error = raised(query.awaitTermination)
    assert root_cause(error) == "ValueError: bad record 7"
    assert root_cause(query.exception()) == "ValueError: bad record 7"  # text and causes only


def test_a_foreach_batch_failure(spark: Any, folder: Path) -> None:
    def sink(frame: Any, batch: int) -> None:
        raise KeyError("sink broke")

    error = raised(stream(spark, folder, "sink", sink=sink).awaitTermination)
    assert root_cause(error) == "KeyError: 'sink broke'"


def test_a_failure_through_py4j_in_foreach_batch_is_named_by_the_spark_error_under_it(
        spark: Any, tmp_path: Path) -> None:
    # pandas writes nanosecond timestamps, which Spark's Parquet reader refuses; the sink's
    # toArrow() meets it as a Py4J error whose message holds the Java exceptions.
    (tmp_path / "in").mkdir()
    pd.DataFrame({"ts": pd.to_datetime(["2024-01-01 00:00:00.5"]), "v": [1.0]}).to_parquet(
        tmp_path / "in" / "part-12.parquet")
    query = (spark.readStream.schema("ts timestamp, v double").parquet(str(tmp_path / "in"))
             .writeStream.foreachBatch(ParquetBatchSink(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    error = raised(query.awaitTermination)
    cause = root_cause(error)
    assert cause.startswith("SparkException: [FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH]")
    assert "part-12.parquet" in cause and "column [ts]" in cause and "INT64" in cause


def test_a_java_failure_is_named_by_its_innermost_exception(spark: Any, folder: Path) -> None:
    error = raised(lambda: spark.read.parquet(str(folder / "missing")).collect())
    assert root_cause(error).startswith("AnalysisException: [PATH_NOT_FOUND] Path does not "
                                        "exist: file:")


def test_a_corrupted_checkpoint(spark: Any, folder: Path) -> None:
    stream(spark, folder, "checkpoint").awaitTermination()
    (folder / "checkpoint" / "offsets" / "0").write_text("v1\n{not json")
    query = stream(spark, folder, "checkpoint")
    with pytest.raises(Exception):  # noqa: B017 (what it raises is the next asserts' subject)
        query.awaitTermination()
    error = query.exception()
    cause = root_cause(error)
    assert cause.startswith("ChecksumException: Checksum error: file:")
    assert cause.split(" at 0 ")[0].endswith("/checkpoint/offsets/0")
    assert failure_report(error).count("at org.apache") > 5  # the causes' stack traces too


def test_other_errors_are_not_spark_failures() -> None:
    assert not is_spark_failure(ValueError("x"))
    assert not is_spark_failure(OSError("disk full"))
