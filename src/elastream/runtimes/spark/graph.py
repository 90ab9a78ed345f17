"""Operator graphs with fan-out or fan-in on Spark: tagged rows, one stage per depth.

A streaming query is one plan: two branches that read the consolidate stage's output would
each run the whole source pipeline again (its state, its hand-offs). So a graph runs as a
chain of stages over one stream of *graph rows* — ``_el_to`` (the operator the row is for;
empty: a result), ``_el_op`` (the operator that made it), ``key`` (the values of the reading
operator's key, or of the result's, joined by ``␟``), the window bounds (epoch ms, length and
slide in s), every value column of the graph (as doubles) and ``_el_event`` (the window's end
less 1 µs):

1. **the source's component** — one ``mapInArrow`` over the consolidate stage's partitions
   (slot-local, no shuffle): the source's and the fused window operators' windows (rows of
   their length), every fused regroup operator (each upstream window instance grouped by its
   key: the component's key groups hash its partition attributes, so every window a group
   needs was emitted by one slot in one micro-batch), then a result row per window of each
   sink of the component and a row per window and reader for each unfused reader;
2. **one stage per depth of unfused operators** (:func:`~elastream.core.chain.levels`) — a
   ``transformWithStateInPandas`` grouped by ``(_el_to, key)`` (one ``Exchange``): each
   operator of the depth adds its rows to its windows (the upstream window's own instance, or
   the tumbling window holding its start), keeps them in state and emits each window once the
   event-time watermark passes its end, as results and as rows for its readers; rows for
   later operators, and results, pass through.

Every window of an operator is emitted by one call in the micro-batch whose watermark passes
its end (an input window ending there is emitted in that batch too), so each window is emitted
once and no later than the watermark allows; the state is Spark's, restored with its checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import (
    BinaryType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from elastream.core.aggregates import AggSpec
from elastream.core.chain import (
    SOURCE,
    ChainOperator,
    levels,
    readers,
    record_aggs,
    result_columns,
    sinks,
    stages,
)
from elastream.core.spec import PipelineSpec
from elastream.runtimes.spark.consolidate import EVENT
from elastream.runtimes.spark.keygroup_state import from_blobs, to_blob
from elastream.runtimes.spark.parse import KEY_JOIN as SEPARATOR

TO, BY = "_el_to", "_el_op"
BOUNDS = ("window_start", "window_end", "window_length", "window_slide")
OPERATOR = "operator"
STATE_SCHEMA = StructType([StructField("blob", BinaryType())])


def graph_results(windows: DataFrame, spec: PipelineSpec) -> DataFrame:
    """The sinks' windows (with ``operator`` when several) from the consolidate stage's."""
    ops = spec.chaining.chain
    fused = spec.chaining.fused or 0
    values = value_columns(spec)
    schema = graph_schema(values)
    renamed = record_aggs(spec.windowing.aggs, ops, fused)
    columns = list(dict.fromkeys(rec.output_name for named in renamed.values()
                                 for rec in named.values()))
    built = stages(spec.source_keys, spec.windowing.aggs, spec.windowing.windows, ops)
    lengths = {name: built[name].window.length_ms // 1000 for name in renamed}
    rows = windows.select("key", *BOUNDS, *columns).mapInArrow(
        partial(component_batches, source_keys=spec.source_keys, ops=ops, fused=fused,
                renamed=renamed, lengths=lengths, values=values), schema)
    depth = levels(ops, fused)
    for level in range(1, max(depth.values(), default=0) + 1):
        here = [op for op in ops if depth.get(op.id) == level]
        rows = rows.groupBy(TO, "key").transformWithStateInPandas(
            statefulProcessor=Downstream(here, ops, values, built),
            outputStructType=schema, outputMode="Append", timeMode="EventTime",
            eventTimeColumnName=EVENT)
    several = len(sinks(ops)) > 1
    counts = {a.output_name for op in sinks(ops) for a in op.aggs if a.func == "count"}
    return rows.filter(F.col(TO) == "").select(
        *([F.col(BY).alias(OPERATOR)] if several else []), "key", *BOUNDS,
        *[F.col(c).cast("long" if c in counts else "double").alias(c)
          for c in result_columns(ops)])


def value_columns(spec: PipelineSpec) -> tuple[str, ...]:
    """Every value column a graph row may carry: the source's outputs and each operator's."""
    return tuple(dict.fromkeys([*(a.output_name for a in spec.windowing.aggs),
                                *(a.output_name for op in spec.chaining.chain
                                  for a in op.aggs)]))


def graph_schema(values: Sequence[str]) -> StructType:
    """The layout of graph rows (module docstring)."""
    return StructType([StructField(TO, StringType()), StructField(BY, StringType()),
                       StructField("key", StringType()),
                       *(StructField(b, LongType()) for b in BOUNDS),
                       *(StructField(v, DoubleType()) for v in values),
                       StructField(EVENT, TimestampType())])


def component_batches(batches: Iterator[pa.RecordBatch], *, source_keys: Sequence[str],
                      ops: Sequence[ChainOperator], fused: int,
                      renamed: Mapping[str, Mapping[str, AggSpec]], lengths: Mapping[str, int],
                      values: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """A consolidate partition's windows through the source's component, as graph rows."""
    windows = keyed_windows(batches, source_keys)
    if windows is None:
        return
    frames = {name: windows.loc[windows["window_length"] == length,
                                [*source_keys, *BOUNDS, *(r.output_name for r in
                                                          renamed[name].values())]]
              .set_axis([*source_keys, *BOUNDS, *renamed[name]], axis=1)
              for name, length in lengths.items()}
    keys = {SOURCE: tuple(source_keys), **{op.id: op.keys for op in ops}}
    for op in ops[:fused]:
        if op.id not in frames:
            read = list(dict.fromkeys(a.column for a in op.aggs if a.column is not None))
            union = pd.concat([frames[name][[*op.keys, *BOUNDS, *read]] for name in op.inputs],
                              ignore_index=True)
            grouped = union.groupby([*op.keys, *BOUNDS], sort=False)
            frames[op.id] = pd.DataFrame({a.output_name: pandas_agg(grouped, a)
                                          for a in op.aggs}).reset_index()
    by_id = {op.id: op for op in ops}
    ends = {op.id for op in sinks(ops)}
    out = []
    for name, frame in frames.items():
        out += rows_of(frame, name, keys[name], [by_id[r] for r in readers(ops)[name]
                                                 if r not in frames], name in ends)
    table = pd.concat(out, ignore_index=True) if out else pd.DataFrame()
    if len(table):
        yield from pa.Table.from_pandas(graph_frame(table, values), preserve_index=False,
                                        schema=pa.schema(graph_fields(values))).to_batches()


def keyed_windows(batches: Iterator[pa.RecordBatch], keys: Sequence[str]
                  ) -> pd.DataFrame | None:
    """A ``mapInArrow`` partition's windows with the joined ``key`` split into ``keys``.

    ``None`` when the partition has no rows.
    """
    received = [b for b in batches if b.num_rows]
    if not received:
        return None
    windows: pd.DataFrame = pa.Table.from_batches(received).to_pandas()
    parts = windows["key"].str.split(SEPARATOR, n=len(keys) - 1, expand=True)
    parts.columns = list(keys)
    return pd.concat([parts, windows.drop(columns="key")], axis=1)


def rows_of(frame: pd.DataFrame, name: str, keys: Sequence[str],
            unfused_readers: Sequence[ChainOperator], sink: bool) -> list[pd.DataFrame]:
    """An operator's windows as graph rows: for each unfused reader, and as results."""
    out = []
    for reader in unfused_readers:
        rows = frame[[*BOUNDS, *_read(reader)]].copy()
        rows[TO], rows[BY], rows["key"] = reader.id, name, joined_key(frame, reader.keys)
        out.append(rows)
    if sink:
        rows = frame.drop(columns=list(keys))
        rows[TO], rows[BY], rows["key"] = "", name, joined_key(frame, keys)
        out.append(rows)
    return out


def _read(op: ChainOperator) -> list[str]:
    return list(dict.fromkeys(a.column for a in op.aggs if a.column is not None))


def joined_key(frame: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """The values of ``keys`` joined by ``␟``: a window's internal key."""
    if len(keys) == 1:
        return frame[keys[0]].astype(str)
    return frame[list(keys)].astype(str).agg(SEPARATOR.join, axis=1)


def graph_fields(values: Sequence[str]) -> list[pa.Field]:
    """The Arrow fields of graph rows."""
    return [pa.field(TO, pa.string()), pa.field(BY, pa.string()), pa.field("key", pa.string()),
            *(pa.field(b, pa.int64()) for b in BOUNDS), *(pa.field(v, pa.float64())
                                                          for v in values),
            pa.field(EVENT, pa.timestamp("us"))]


def graph_frame(table: pd.DataFrame, values: Sequence[str]) -> pd.DataFrame:
    """``table`` in the graph rows' column order, missing values null, the event time set."""
    out = table.reindex(columns=[TO, BY, "key", *BOUNDS, *values])
    for b in BOUNDS:
        out[b] = out[b].astype("int64")
    for v in values:
        out[v] = out[v].astype("float64")
    out[EVENT] = pd.to_datetime(out["window_end"].to_numpy() * 1000 - 1, unit="us")
    return out


def pandas_agg(grouped: Any, agg: AggSpec) -> pd.Series:
    """SQL semantics: nulls skipped; a sum, min, max or avg of no value is null."""
    column = grouped[agg.column]
    if agg.func == "count":
        found = column.count().astype("int64")
    elif agg.func == "sum":
        found = column.sum(min_count=1).astype("float64")
    else:
        found = getattr(column, {"min": "min", "max": "max", "avg": "mean"}[agg.func])()
    return pd.Series(found, dtype="int64" if agg.func == "count" else "float64")


class Downstream(StatefulProcessor):
    """The unfused operators of one depth, grouped by ``(operator, key)`` (module docstring).

    State per group: one Arrow blob of its open windows' accumulators (``start``, ``end``,
    and per aggregate its sum, count, min or max), and a timer at each open window's end.
    """

    def __init__(self, here: Sequence[ChainOperator], ops: Sequence[ChainOperator],
                 values: Sequence[str], built: Mapping[str, Any]) -> None:
        self.here = {op.id: op for op in here}
        self.by_id = {op.id: op for op in ops}
        self.readers = readers(ops)
        self.ends = {op.id for op in sinks(ops)}
        self.values = tuple(values)
        self.columns = [f.name for f in graph_fields(values)]
        self.lengths = {op.id: (op.window or built[op.inputs[0]].window).length_ms
                        for op in here}

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Open the group's state."""
        self.handle = handle
        self.open = handle.getValueState("open", STATE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: TimerValues
                        ) -> Iterator[pd.DataFrame]:
        """Add the rows for one of this depth's operators; pass the others on."""
        op = self.here.get(str(key[0]))
        if op is None:  # (Spark hands columns named _x over as _0, _1, …: named again)
            yield from (frame.set_axis(self.columns, axis=1) for frame in rows)
            return
        new = _accumulators(pd.concat([f.set_axis(self.columns, axis=1) for f in rows],
                                      ignore_index=True), op, self.lengths[op.id])
        held = self._held()
        fresh = set(new["end"]) - (set() if held is None else set(held["end"]))
        open_ = _merged(new if held is None else pd.concat([held, new], ignore_index=True), op)
        watermark = timerValues.getCurrentWatermarkInMs()
        for end in sorted(fresh):
            if end > watermark:
                self.handle.registerTimer(int(end))
        yield from self._emit(op, str(key[1]), open_, watermark)

    def handleExpiredTimer(self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        """Emit the group's windows the watermark passed."""
        op = self.here[str(key[0])]
        held = self._held()
        if held is not None:
            yield from self._emit(op, str(key[1]), held, timerValues.getCurrentWatermarkInMs())

    def _held(self) -> pd.DataFrame | None:
        if not self.open.exists():
            return None
        table = from_blobs([self.open.get()[0]])  # type: ignore[index]
        return None if table is None else table.to_pandas()

    def _emit(self, op: ChainOperator, key: str, open_: pd.DataFrame, watermark: int
              ) -> Iterator[pd.DataFrame]:
        due = open_["end"] <= watermark
        kept = open_[~due]
        if len(kept):
            self.open.update((to_blob(kept.reset_index(drop=True)),))
        else:
            self.open.clear()
        if not due.any():
            return
        done = open_[due]
        parts = pd.Series([key] * len(done)).str.split(SEPARATOR, n=len(op.keys) - 1,
                                                      expand=True)
        parts.columns = list(op.keys)
        frame = pd.concat([parts, _finished(done.reset_index(drop=True), op,
                                            self.lengths[op.id])], axis=1)
        out = rows_of(frame, op.id, op.keys, [self.by_id[r] for r in self.readers[op.id]],
                      op.id in self.ends)
        if out:
            yield graph_frame(pd.concat(out, ignore_index=True), self.values)

    def close(self) -> None:
        """Nothing to release."""


def _accumulators(rows: pd.DataFrame, op: ChainOperator, length_ms: int) -> pd.DataFrame:
    """Each row as partial aggregates of the window of ``op`` it falls in."""
    start = rows["window_start"].to_numpy(dtype=np.int64)
    if op.window is not None:
        start = start - start % length_ms
    out = {"start": start, "end": start + length_ms}
    for i, agg in enumerate(op.aggs):
        column = rows[agg.column].to_numpy(dtype=np.float64)
        present = ~np.isnan(column)
        if agg.func in ("sum", "avg"):
            out[f"s{i}"] = np.where(present, column, 0.0)
        if agg.func in ("sum", "avg", "count"):
            out[f"c{i}"] = present.astype(np.float64)
        if agg.func in ("min", "max"):
            out[f"m{i}"] = column
    return pd.DataFrame(out)


def _merged(frame: pd.DataFrame, op: ChainOperator) -> pd.DataFrame:
    """Accumulators of one window added up (min and max skip nulls)."""
    how = {c: ("min" if op.aggs[int(c[1:])].func == "min" else "max") if c[0] == "m"
           else "sum" for c in frame.columns if c not in ("start", "end")}
    return frame.groupby(["start", "end"], as_index=False, sort=True).agg(how)


def _finished(done: pd.DataFrame, op: ChainOperator, length_ms: int) -> pd.DataFrame:
    """Finished windows: bounds, and each aggregate from its accumulators."""
    out = pd.DataFrame({"window_start": done["start"], "window_end": done["end"],
                        "window_length": (done["end"] - done["start"]) // 1000,
                        "window_slide": (done["end"] - done["start"]) // 1000})
    for i, agg in enumerate(op.aggs):
        if agg.func == "count":
            out[agg.output_name] = done[f"c{i}"]
        elif agg.func == "sum":
            out[agg.output_name] = done[f"s{i}"].where(done[f"c{i}"] > 0)
        elif agg.func == "avg":
            out[agg.output_name] = (done[f"s{i}"] / done[f"c{i}"]).where(done[f"c{i}"] > 0)
        else:
            out[agg.output_name] = done[f"m{i}"]
    return out
