"""``elastream run``'s one query: results, dead letter and counts of a micro-batch, together.

The job's results and its dead letter come from one input, so ``elastream run`` runs them as
one streaming query (:func:`one_stream`: a struct column for each, the other null) whose
``foreachBatch`` function, :class:`JobSink`, writes micro-batch ``N``'s windows to
``results/part-N.parquet``, its malformed records to ``dead_letter/part-N.parquet`` (or to Delta
tables, or Kafka topics: ``--sink``, :func:`sinks_of`) and its counts to the ledger
(:mod:`.ledger`), all before Spark commits the batch. Sinks and counts then follow the same
commits: whatever stops the job, what it wrote agrees, and a batch that runs again (killed
before its commit) writes the same rows and counts again (a Kafka topic then holds them
twice: :mod:`.kafka_sink`).

The counts are the batch's observed metrics (:class:`~.progress.MetricNames`), read from the
query's execution of this batch right after the sink collected its rows: rows read, rows valid,
rows too late. The dead-letter and window rows are those written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from elastream.core.kafka_topic import KafkaTopic
from elastream.runtimes.spark.delta_sink import DeltaBatchSink
from elastream.runtimes.spark.kafka_sink import DEAD_KEY, KafkaBatchSink
from elastream.runtimes.spark.ledger import CountsLedger
from elastream.runtimes.spark.progress import MetricNames
from elastream.runtimes.spark.sink import ParquetBatchSink
from elastream.stores.filesystem import LocalFolder

RESULT, DEAD = "_el_result", "_el_dead"


def one_stream(results: DataFrame, dead_letter: DataFrame) -> DataFrame:
    """The job's results and dead letter as one streaming DataFrame.

    Both read the same source, which the query then reads once per micro-batch.
    """
    result = F.struct(*results.columns)
    dead = F.struct(*dead_letter.columns)
    as_results = results.select(result.alias(RESULT))
    as_dead = dead_letter.select(dead.alias(DEAD))
    return (as_results.withColumn(DEAD, F.lit(None).cast(as_dead.schema[DEAD].dataType))
            .unionByName(as_dead.withColumn(
                RESULT, F.lit(None).cast(as_results.schema[RESULT].dataType))))


class BatchSink(Protocol):
    """Where a micro-batch's rows go: a Parquet folder, a Delta table, a Kafka topic."""

    def write_table(self, batch_id: int, table: pa.Table) -> None:
        """Write micro-batch ``batch_id``'s rows, once for every reader (Kafka: at least)."""

    def rows(self, *, through: int) -> int | None:
        """The rows held of micro-batches up to ``through`` (``None``: cannot tell)."""


def sinks_of(output: Path, sink: str | KafkaTopic) -> tuple[BatchSink, BatchSink]:
    """The results' and the dead letter's sinks of ``elastream run``'s ``--sink``.

    ``parquet``: folders ``output/results``, ``output/dead_letter``; ``delta``: tables there;
    a Kafka topic ``T``: ``T`` and ``T-dead-letter``.
    """
    if isinstance(sink, KafkaTopic):
        return (KafkaBatchSink(sink),
                KafkaBatchSink(KafkaTopic(sink.bootstrap, f"{sink.topic}-dead-letter"),
                               DEAD_KEY))
    kind = {"parquet": ParquetBatchSink, "delta": DeltaBatchSink}[sink]
    return kind(output / "results"), kind(output / "dead_letter")


class JobSink:
    """``foreachBatch`` of :func:`one_stream`: writes results, dead letter and counts.

    ``spark``: the session that runs the query (the batches get a clone of it, which does not
    know the session's queries); ``output``: the job's output folder (local: the ledger);
    ``names``: its observed metrics; ``sinks``: where the results and the dead letter go
    (:func:`sinks_of`; default: Parquet folders in ``output``).
    """

    def __init__(self, spark: SparkSession, output: Path, names: MetricNames,
                 sinks: tuple[BatchSink, BatchSink] | None = None) -> None:
        self.spark = spark
        self.results, self.dead_letter = sinks or sinks_of(output, "parquet")
        self.ledger = CountsLedger(LocalFolder(output))
        self.names = names

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id``'s windows, malformed records and counts."""
        table = frame.toArrow()
        metrics = observed(self.spark, batch_id, self.names)
        results, dead = _rows(table, RESULT), _rows(table, DEAD)
        self.results.write_table(batch_id, results)
        self.dead_letter.write_table(batch_id, dead)

        def rows(name: str) -> int:
            return int(metrics.get(name, {}).get("rows") or 0)

        self.ledger.record(batch_id, {
            "input_rows": rows(self.names.input), "valid_rows": rows(self.names.load),
            "late_rows": rows(self.names.late), "dead_letter_rows": dead.num_rows,
            "output_rows": results.num_rows})


def observed(spark: SparkSession, batch_id: int, names: MetricNames) -> dict[str, Any]:
    """The observed metrics of the job's micro-batch ``batch_id``, from inside the batch.

    Spark reports them with the batch's progress, after its commit; its query's execution of
    the batch holds them as soon as the batch's rows were collected. The query is the active
    one running ``batch_id`` whose metrics carry the job's names.
    """
    for query in spark._jsparkSession.streams().active():
        execution = query.streamingQuery().lastExecution()
        if execution is None or execution.currentBatchId() != batch_id:
            continue
        metrics = execution.observedMetrics()
        if metrics.contains(names.input):
            return {name: json.loads(metrics.apply(name).json())
                    for name in (names.input, names.load, names.late)
                    if metrics.contains(name)}
    raise RuntimeError(f"no running query of this job is at micro-batch {batch_id}")


def _rows(table: pa.Table, column: str) -> pa.Table:
    """The rows of one struct column that are set, as a table of its fields."""
    chosen = table.filter(pc.is_valid(table[column]))[column].combine_chunks()
    return pa.Table.from_arrays(chosen.flatten(), names=[f.name for f in chosen.type])
