"""Enorm's consolidate stage on Spark: one ``transformWithStateInPandas`` operator.

Grouped by a consolidation slot — a fixed function of the key group, never the raw key (a
Python call per key costs ~0.6 ms, DESIGN.md; even one call per key group cost ~45 ms of pandas
work per micro-batch on the flights, so each call handles many key groups). It keeps the parts
of every key of the slot in one value state (an Arrow IPC blob), merges pane
partials from any number of slots, and, when the event-time watermark passes window ends,
assembles each requested window with the fewest merges (:mod:`elastream.algorithms.windows`)
and emits it exactly once. One timer per consolidation slot is enough: a firing handles every window
end up to the current watermark and arms the next one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
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

from elastream.algorithms.windows.assemble import assemble, empty_parts, finalize
from elastream.algorithms.windows.consolidation import ConsolidationPlan
from elastream.core.aggregates import AggSpec, partial_columns

NOT_YET = -(1 << 62)
"""``upto`` of a consolidation slot that has emitted nothing yet."""

STATE_SCHEMA = StructType([StructField("blob", BinaryType()), StructField("upto", LongType())])


def output_schema(aggs: Sequence[AggSpec]) -> StructType:
    """Result rows: key, window bounds, length and slide in seconds, one column per aggregate."""
    fields = [
        StructField("key", StringType()),
        StructField("window_start", TimestampType()),
        StructField("window_end", TimestampType()),
        StructField("window_length", LongType()),
        StructField("window_slide", LongType()),
    ]
    for agg in aggs:
        kind = LongType() if agg.func == "count" else DoubleType()
        fields.append(StructField(agg.output_name, kind))
    return StructType(fields)


class Consolidate(StatefulProcessor):
    """Merges partials of a consolidation slot's keys into complete windows.

    Input columns: ``key``, ``start`` (pane start, epoch ms) and the job's partial columns.
    """

    def __init__(self, plan: ConsolidationPlan, aggs: Sequence[AggSpec]) -> None:
        self.plan = plan
        self.aggs = tuple(aggs)
        self.partials = partial_columns(aggs)

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Open the per-key-group state."""
        self.handle = handle
        self.state = handle.getValueState("parts", STATE_SCHEMA)

    def _load(self) -> tuple[pd.DataFrame, int]:
        if not self.state.exists():
            return empty_parts(self.partials), NOT_YET
        blob, upto = self.state.get()  # type: ignore[misc]
        with pa.ipc.open_stream(blob) as reader:
            return reader.read_pandas(), int(upto)

    def _save(self, parts: pd.DataFrame, upto: int) -> None:
        table = pa.Table.from_pandas(parts, preserve_index=False)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        self.state.update((sink.getvalue().to_pybytes(), upto))

    def _arm(self, after_ms: int) -> None:
        """Timer at the first window end (of any spec) after ``after_ms``."""
        self.handle.registerTimer(min(s.next_end_after(after_ms) for s in self.plan.specs))

    def handleInputRows(
        self, key: Any, rows: Iterator[Any], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        """Add new pane partials to the group's parts and arm the timer."""
        new = pd.concat(list(rows), ignore_index=True)
        if new.empty:
            return
        new = new.assign(length=self.plan.pane_ms)[["key", "start", "length", *self.partials]]
        parts, upto = self._load()
        late = int((new["start"] + self.plan.pane_ms <= upto).sum())
        if late:
            print(f"elastream consolidate: slot pin {key[0]}: {late} partials arrived after "
                  f"their windows closed", file=sys.stderr)
        parts = new if parts.empty else pd.concat([parts, new], ignore_index=True)
        self._save(parts, upto)
        self._arm(int(new["start"].min()) + self.plan.pane_ms - 1)
        yield from ()

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        """Emit every window ending up to the watermark; keep only parts still needed."""
        watermark = timerValues.getCurrentWatermarkInMs()
        parts, upto = self._load()
        if watermark <= upto or parts.empty:
            return
        after = upto if upto != NOT_YET else int(parts["start"].min()) - 1
        done = assemble(parts, self.plan, after, watermark)
        self._save(done.parts, watermark)
        if not done.parts.empty:
            self._arm(watermark)
        if done.windows.empty:
            return
        windows = done.windows
        out = pd.DataFrame({
            "key": windows["key"].astype(str),
            "window_start": pd.to_datetime(windows["start"], unit="ms", utc=True),
            "window_end": pd.to_datetime(windows["start"] + windows["length"], unit="ms",
                                         utc=True),
            "window_length": windows["length"] // 1000,
            "window_slide": windows["slide"] // 1000,
        })
        yield pd.concat([out, finalize(windows, self.aggs)], axis=1)

    def close(self) -> None:
        """Nothing to release."""
