"""A Kafka topic as a job's input: its values parsed into columns, the unparsable kept whole.

Spark's Kafka source gives each record as ``key``, ``value`` (bytes), ``topic``, ``partition``,
``offset`` and ``timestamp``. :func:`kafka_records` turns the values, JSON objects or CSV lines,
into the columns of a DDL schema (Spark's ``from_json`` / ``from_csv``, permissive): a value
that is not of the schema — not JSON, a field of another type, a CSV line of other fields — or
no value at all keeps its text in ``_corrupt``, which the job sends to the dead letter with its
reason, and every record keeps ``kafka_topic``, ``kafka_partition`` and ``kafka_offset``, so a
dead-letter row names where it came from.

For the API, on a Kafka DataFrame of your own::

    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "host:9092")
           .option("subscribe", "flights").load())
    job = es.windowed(es.kafka_records(raw, "date timestamp, origin string, delay double"),
                      key="origin", time="date", windows=["1h"], state_dir="/jobs/delays")
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from elastream.core.kafka_topic import KafkaTopic
from elastream.workloads.replay import CORRUPT

ORIGIN = ("kafka_topic", "kafka_partition", "kafka_offset")
"""Where each record came from: columns every record carries into the dead letter."""
NO_VALUE = "(no value)"
"""The corrupt text of a record without a value (a tombstone)."""


def kafka_stream(spark: SparkSession, source: KafkaTopic, *, rows_per_batch: int,
                 starting_offsets: str | None = None) -> DataFrame:
    """Spark's Kafka source on ``source``: at most ``rows_per_batch`` records a micro-batch.

    ``starting_offsets``: ``earliest`` or ``latest`` (Spark's default), for a new query only;
    a query that resumes goes on from its checkpoint's offsets.
    """
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", source.bootstrap)
              .option("subscribe", source.topic)
              .option("maxOffsetsPerTrigger", rows_per_batch))
    if starting_offsets is not None:
        reader = reader.option("startingOffsets", starting_offsets)
    return reader.load()


def kafka_records(kafka: DataFrame, schema: str, value_format: str = "json") -> DataFrame:
    """The records of Kafka's DataFrame ``kafka``, parsed by the DDL ``schema``.

    The columns of ``schema`` from each value (``value_format`` ``json`` or ``csv``), the
    value's text in ``_corrupt`` when it is not of the schema, and :data:`ORIGIN`.
    """
    fields = T.StructType.fromDDL(schema)
    assert isinstance(fields, T.StructType)
    read_as = f"{schema}, {CORRUPT} string"
    value = F.col("value").cast("string")
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
    parsed = (F.from_json(value, read_as, options) if value_format == "json"
              else F.from_csv(value, F.lit(read_as), options))
    record = kafka.select(parsed.alias("_el_record"), value.alias("_el_value"),
                          F.col("topic").alias(ORIGIN[0]), F.col("partition").alias(ORIGIN[1]),
                          F.col("offset").alias(ORIGIN[2]))
    corrupt = F.when(F.col("_el_value").isNull(), F.lit(NO_VALUE)).otherwise(
        F.col(f"_el_record.{CORRUPT}"))
    return record.select(*[F.col(f"_el_record.`{f.name}`").alias(f.name) for f in fields],
                         *ORIGIN, corrupt.alias(CORRUPT))
