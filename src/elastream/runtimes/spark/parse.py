"""Validate raw records in Spark SQL: typed event time, key and values, or a dead-letter reason.

A record is malformed when it could not be split into fields, its time is missing or cannot be
parsed, its key is missing or empty, or a value cell is present but not a number. The first
rule broken becomes the record's ``reason``; valid records have a null reason. Nulls in value
columns are valid (aggregates skip them, as SQL does).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from elastream.core.aggregates import value_columns
from elastream.core.errors import OptionError
from elastream.core.spec import PipelineSpec
from elastream.workloads.replay import CORRUPT, PUNCT

TS, KEY, REASON = "_el_ts", "_el_key", "_el_reason"
KEY_JOIN = "\u001f"
"""Between the values of a several-column key inside a job (shown joined by commas)."""
VALUE_PREFIX = "_el_v_"
"""Before the name of each value column, as a double (``_el_v_delay``)."""


def _event_time(raw: DataFrame, column: str) -> Column:
    kind = raw.schema[column].dataType
    col = F.col(column)
    if isinstance(kind, T.TimestampType):
        return col
    if isinstance(kind, (T.TimestampNTZType, T.DateType)):
        return col.cast("timestamp")
    if isinstance(kind, T.NumericType):
        return F.timestamp_seconds(col)
    return F.try_to_timestamp(col.cast("string"))


def _number(raw: DataFrame, column: str) -> Column:
    if isinstance(raw.schema[column].dataType, T.NumericType):
        return F.col(column).cast("double")
    return F.col(column).cast("string").try_cast("double")


def parse(raw: DataFrame, spec: PipelineSpec) -> DataFrame:
    """Add ``_el_ts``, ``_el_key``, a double ``_el_v_<name>`` per value column, ``_el_reason``.

    ``_el_key`` is the source operator's key as text (several columns' values joined by
    :data:`KEY_JOIN`); its columns and the key columns of the job's further operators must be
    present and non-empty. A column the spec names that the input lacks is an
    :class:`OptionError` naming the option.
    """
    names = set(raw.columns)
    for option, column in spec.named_columns:
        if column not in names:
            shown = ", ".join(c for c in raw.columns if c not in (CORRUPT, PUNCT))
            raise OptionError(option, f"must name a column of the input ({shown})", column)
    time_col, sources, key_cols = spec.source.time_col, spec.source_keys, spec.key_columns
    values = value_columns(spec.windowing.aggs)
    if CORRUPT not in names:
        raw = raw.withColumn(CORRUPT, F.lit(None).cast("string"))
    if PUNCT not in names:
        raw = raw.withColumn(PUNCT, F.lit(False))
    ts = _event_time(raw, time_col)
    key = F.col(sources[0]).cast("string") if len(sources) == 1 else F.concat_ws(
        KEY_JOIN, *[F.col(c).cast("string") for c in sources])
    reason = F.when(F.col(CORRUPT).isNotNull(), F.concat(F.lit("malformed record: "),
                                                         F.col(CORRUPT)))
    reason = reason.when(F.col(time_col).isNull(), F.lit(f"{time_col}: missing time"))
    reason = reason.when(ts.isNull(), F.concat(F.lit(f"{time_col}: cannot parse time '"),
                                               F.col(time_col).cast("string"), F.lit("'")))
    for column in key_cols:
        text = F.col(column).cast("string")
        reason = reason.when(text.isNull() | (F.trim(text) == ""),
                             F.lit(f"{column}: missing key"))
    for value in values:
        bad = F.col(value).isNotNull() & _number(raw, value).isNull()
        reason = reason.when(bad, F.concat(F.lit(f"{value}: not a number '"),
                                           F.col(value).cast("string"), F.lit("'")))
    return raw.select(
        "*",
        ts.alias(TS),
        key.alias(KEY),
        *[_number(raw, v).alias(VALUE_PREFIX + v) for v in values],
        F.when(F.col(PUNCT), F.lit(None)).otherwise(reason).alias(REASON),
    )


def dead_letter(parsed: DataFrame, raw_columns: Sequence[str]) -> DataFrame:
    """Malformed records: every raw column as text, plus the reason."""
    bad = parsed.filter(F.col(REASON).isNotNull() & ~F.col(PUNCT))
    return bad.select(*[F.col(c).cast("string").alias(c) for c in raw_columns],
                      F.col(REASON).alias("reason"))


def valid(parsed: DataFrame, lateness: str) -> DataFrame:
    """Valid records under an event-time watermark; punctuations move the watermark only.

    The filter mentions ``ts`` so the optimizer cannot push it below the watermark operator,
    which would drop the punctuation before it advanced the watermark.
    """
    watermarked = parsed.withWatermark(TS, lateness)
    return watermarked.filter(F.col(REASON).isNull() & ~(F.col(PUNCT) & F.col(TS).isNotNull()))
