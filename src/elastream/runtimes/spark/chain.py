"""Chained operators on Spark (:mod:`elastream.core.chain`), fused or one shuffle each.

A chain (each operator reads the one before, one sink) runs here; a graph with fan-out or
fan-in runs as tagged rows through one stage per depth (:mod:`.graph`).

Fused operators run in the source's component; every other one is a Spark aggregation with
its own shuffle.

Input: the consolidate stage's windows of the source component — ``key`` (the key's values
joined by ``␟``), ``window_start``/``window_end`` (epoch ms), length and slide (s), the source's
aggregates and, when operators follow unfused, ``_el_event``. The consolidation already built
the fused *window* operators' lengths from the shorter windows' partials (the pipeline adds them
to its windows); here the chain

1. keeps the last fused window operator's windows, its aggregates named as it names them;
2. runs each fused *regroup* operator inside the partition that emitted the windows
   (``mapInArrow``, no shuffle): the component's key groups hash its partition attributes, so
   every window of one regrouped key was emitted by one slot in one micro-batch;
3. runs each unfused operator as Spark's streaming ``groupBy(window(event, L), keys)`` in
   append mode, chained through ``window_time`` — an ``Exchange`` and a state store each.

Output: the last operator's windows in the consolidate stage's layout (without ``_el_event``);
a graph's: its sinks' windows, with an ``operator`` column when there are several.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial

import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from elastream.core.aggregates import AggSpec
from elastream.core.chain import SOURCE, ChainOperator, Stage, is_linear, record_aggs, stages
from elastream.core.spec import PipelineSpec
from elastream.runtimes.spark.consolidate import EVENT
from elastream.runtimes.spark.graph import (
    OPERATOR,
    graph_results,
    joined_key,
    keyed_windows,
    pandas_agg,
)
from elastream.runtimes.spark.parse import KEY_JOIN as SEPARATOR

BOUNDS = ("window_start", "window_end", "window_length", "window_slide")
__all__ = ["OPERATOR", "chained"]


def chained(windows: DataFrame, spec: PipelineSpec) -> DataFrame:
    """The chain's last operator's windows (a graph's sinks') from the source's ``windows``."""
    ops = spec.chaining.chain
    if not ops:
        return windows
    if not is_linear(ops):
        return graph_results(windows, spec)
    built = stages(spec.source_keys, spec.windowing.aggs, spec.windowing.windows, ops)
    fused = spec.chaining.fused or 0
    frame = _last_window_operator(windows, spec, fused)
    for op in ops[:fused]:
        if op.window is None:
            frame = _regroup(frame, op, built[op.inputs[0]])
    if fused == len(ops):
        return frame.select("key", *BOUNDS, *_outputs(ops[-1]))
    event: Column = F.col(EVENT)
    for op in ops[fused:]:
        frame = _aggregate(frame, op, built[op.inputs[0]], event)
        event = F.window_time("window")
    last, window = ops[-1], built[ops[-1].id].window
    return frame.select(
        F.concat_ws(SEPARATOR, *[F.col(k) for k in last.keys]).alias("key"),
        F.unix_millis(F.col("window.start")).alias("window_start"),
        F.unix_millis(F.col("window.end")).alias("window_end"),
        F.lit(window.length_ms // 1000).cast("long").alias("window_length"),
        F.lit(window.slide_ms // 1000).cast("long").alias("window_slide"),
        *_outputs(last))


def _outputs(op: ChainOperator) -> list[str]:
    return [a.output_name for a in op.aggs]


def _last_window_operator(windows: DataFrame, spec: PipelineSpec, fused: int) -> DataFrame:
    """The windows of the last fused window operator (the source's when there is none)."""
    lengths = spec.fused_windows
    if not lengths:
        return windows
    renamed = record_aggs(spec.windowing.aggs, spec.chaining.chain, fused)
    last = [name for name in renamed if name != SOURCE][-1]
    extra = [EVENT] if EVENT in windows.columns else []
    return windows.filter(F.col("window_length") == lengths[-1].length_ms // 1000).select(
        "key", *BOUNDS, *[F.col(rec.output_name).alias(name)
                          for name, rec in renamed[last].items()], *extra)


def _key_parts(keys: Sequence[str]) -> list[Column]:
    parts = F.split(F.col("key"), SEPARATOR, len(keys))
    return [parts.getItem(i).alias(k) for i, k in enumerate(keys)]


def _spark_agg(agg: AggSpec) -> Column:
    column = F.col(agg.column or "")
    made = {"sum": F.sum, "min": F.min, "max": F.max, "avg": F.avg, "count": F.count}[agg.func]
    result = made(column)
    return (result.cast("long") if agg.func == "count" else result.cast("double")
            ).alias(agg.output_name)


def _aggregate(frame: DataFrame, op: ChainOperator, upstream: Stage, event: Column
               ) -> DataFrame:
    """One unfused operator: Spark's windowed aggregation by ``op``'s key (a shuffle)."""
    length = f"{(op.window or upstream.window).length_ms // 1000} seconds"
    keyed = frame.select(event.alias(EVENT), *(
        _key_parts(upstream.keys) if "key" in frame.columns else [F.col(k) for k in upstream.keys]
    ), *upstream.outputs)
    return keyed.groupBy(F.window(F.col(EVENT), length), *op.keys).agg(
        *[_spark_agg(a) for a in op.aggs])


def _regroup(frame: DataFrame, op: ChainOperator, upstream: Stage) -> DataFrame:
    """One fused regroup operator: grouped inside each partition (no shuffle)."""
    fields = [StructField("key", StringType())] + [
        StructField(b, LongType()) for b in BOUNDS] + [
        StructField(a.output_name, LongType() if a.func == "count" else DoubleType())
        for a in op.aggs]
    return frame.select("key", *BOUNDS, *upstream.outputs).mapInArrow(
        partial(_regroup_batches, keys=upstream.keys, op=op), StructType(fields))


def _regroup_batches(batches: Iterator[pa.RecordBatch], *, keys: Sequence[str],
                     op: ChainOperator) -> Iterator[pa.RecordBatch]:
    """A partition's windows regrouped by ``op``'s key (the ``mapInArrow`` function)."""
    frame = keyed_windows(batches, keys)
    if frame is None:
        return
    grouped = frame.groupby([*op.keys, *BOUNDS], sort=False)
    out = pd.DataFrame({a.output_name: pandas_agg(grouped, a) for a in op.aggs})
    out = out.reset_index()
    result = pd.concat([joined_key(out, op.keys).rename("key"), out[list(BOUNDS)],
                        out[[a.output_name for a in op.aggs]]], axis=1)
    yield from pa.Table.from_pandas(result, preserve_index=False).to_batches()
