"""Enorm's consolidate stage on Spark: one ``transformWithStateInPandas`` operator per job.

Grouped by the *slot* that owns a key group under the batch's owner version — a fixed pin
per slot, never the raw key (a Python call per key costs ~0.6 ms, DESIGN.md; even one call per
key group cost ~45 ms of pandas work per micro-batch on the flights, so each call handles many
key groups). A slot keeps the parts of all its keys in one value state (an Arrow IPC blob with
each part's key group), merges pane partials from any number of compute slots, and, when the
event-time watermark passes window ends, assembles each requested window with the fewest
merges (:mod:`elastream.algorithms.windows`) and emits it exactly once.

**Live progressive migration** (Ding et al. §3). When a routing version moves key group ``kg``
from slot ``a`` to slot ``b``, the compute stage sends ``kg``'s new records to ``b`` at once,
while ``kg``'s window state stays with ``a``: this stage is grouped by the batch's *owner*
version (:meth:`~elastream.core.routing.RoutingStore.owner`), which moves one watermark step
later. Every slot fires a heartbeat timer in each micro-batch that advances the watermark (the
only batches in which pane partials arrive here); there each slot

1. takes over every key group it gained under the owner version: the hand-off was written in an
   earlier, committed batch, so it is there; partials that reached the slot before, in this
   batch, waited in its state (the wait buffer);
2. emits every window the watermark closed: it holds all of its key groups' partials;
3. hands off to the migration store (:mod:`elastream.runtimes.spark.migration_store`) the parts
   of every key group the batch's routing version moved away, and drops them;
4. records the batch's routing version as the owner version of the batches after it.

So no window is held back by a move, and a stream that ends right after a move still emits
everything its last watermark closed. Both sides name a hand-off by the version that moved the
key group, read off the published routing history
(:class:`~elastream.core.routing_history.RoutingHistory`); they need no other channel. The
controller moves a key group again only once its last hand-off was written, so the new owner
takes it over (step 1) before it can hand it on (step 3).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
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
from elastream.core.pins import pins_for
from elastream.core.routing import RoutingStore
from elastream.core.routing_history import RoutingHistory
from elastream.runtimes.spark.batch import micro_batch_id, routing_for_task
from elastream.runtimes.spark.migration_store import MigrationStore

NOT_YET = -(1 << 62)
"""``upto`` of a consolidation slot that has emitted nothing yet."""

STATE_SCHEMA = StructType([StructField("blob", BinaryType()), StructField("upto", LongType()),
                           StructField("book", StringType())])

_HISTORY: dict[str, RoutingHistory] = {}
"""Routing history per routing directory, kept by the Python worker between calls."""


def _history(routing_dir: str) -> tuple[RoutingHistory, RoutingHistory]:
    """The routing history up to the task's micro-batch's version, and up to its owner's."""
    store = RoutingStore(routing_dir)
    version = routing_for_task(store).version
    owner = routing_for_task(store, owner=True).version
    history = RoutingHistory.load(store, _HISTORY.get(routing_dir), upto=version)
    known = _HISTORY.get(routing_dir)
    if known is None or history.version >= known.version:
        _HISTORY[routing_dir] = history
    return history, history.upto(owner)


@dataclass
class SlotState:
    """One slot's state: parts (with ``kg``), emitted-up-to mark, and its migration book.

    ``pending``: key groups gained whose hand-off has not arrived (their parts wait);
    ``received`` / ``handed``: ``(version, kg)`` hand-offs taken over / written.
    """

    parts: pd.DataFrame
    upto: int
    pending: set[int] = field(default_factory=set)
    received: set[tuple[int, int]] = field(default_factory=set)
    handed: set[tuple[int, int]] = field(default_factory=set)

    def book(self) -> str:
        """The migration book as JSON."""
        return json.dumps({"pending": sorted(self.pending),
                           "received": sorted(map(list, self.received)),
                           "handed": sorted(map(list, self.handed))})

    @classmethod
    def of(cls, parts: pd.DataFrame, upto: int, book: str | None) -> SlotState:
        """Rebuild from the stored blob's parts, mark and book."""
        data = json.loads(book) if book else {}
        return cls(parts, upto, set(data.get("pending", [])),
                   {(int(v), int(k)) for v, k in data.get("received", [])},
                   {(int(v), int(k)) for v, k in data.get("handed", [])})


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
    """Merges partials of a slot's key groups into complete windows, and moves key groups.

    Input columns: ``kg``, ``key``, ``start`` (pane start, epoch ms) and the job's partial
    columns. ``partitions`` (P, the slots' pins), ``routing_dir`` and ``migration_dir`` are the
    job's.
    """

    def __init__(self, plan: ConsolidationPlan, aggs: Sequence[AggSpec], *, partitions: int,
                 routing_dir: str, migration_dir: str) -> None:
        self.plan = plan
        self.aggs = tuple(aggs)
        self.partials = partial_columns(aggs)
        self.pins = pins_for(partitions)
        self.routing_dir = routing_dir
        self.migration_dir = migration_dir

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Open the slot's state."""
        self.handle = handle
        self.state = handle.getValueState("parts", STATE_SCHEMA)
        self.store = MigrationStore(self.migration_dir)

    # -- state ---------------------------------------------------------------------------------
    def _empty(self) -> pd.DataFrame:
        return empty_parts(self.partials).assign(kg=pd.Series(dtype=np.int64))

    def _load(self) -> SlotState:
        if not self.state.exists():
            return SlotState(self._empty(), NOT_YET)
        blob, upto, book = self.state.get()  # type: ignore[misc]
        with pa.ipc.open_stream(blob) as reader:
            return SlotState.of(reader.read_pandas(), int(upto), book)

    def _save(self, slot: SlotState) -> None:
        table = pa.Table.from_pandas(slot.parts, preserve_index=False)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        self.state.update((sink.getvalue().to_pybytes(), slot.upto, slot.book()))

    def _slot(self, key: Any) -> int:
        return int(np.flatnonzero(self.pins == int(key[0]))[0])

    def _heartbeat(self, watermark: int) -> None:
        """One timer just past the watermark: fires in the next batch that advances it."""
        target = watermark + 1
        timers = list(self.handle.listTimers())
        for timer in timers:
            if timer != target:
                self.handle.deleteTimer(timer)
        if target not in timers:
            self.handle.registerTimer(target)

    # -- handlers ------------------------------------------------------------------------------
    def handleInitialState(self, key: Any, initialState: Any, timerValues: TimerValues) -> None:
        """Every slot starts with a heartbeat, so it can hand off even before it gets rows."""
        self._heartbeat(timerValues.getCurrentWatermarkInMs())

    def handleInputRows(
        self, key: Any, rows: Iterator[Any], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        """Add new pane partials to the slot's parts.

        Those of a gained key group wait for its hand-off, which this batch's timer takes over
        before anything is emitted.
        """
        new = pd.concat(list(rows), ignore_index=True)
        if new.empty:
            return
        new = new.assign(length=self.plan.pane_ms)[["key", "start", "length", *self.partials,
                                                    "kg"]]
        slot = self._load()
        me = self._slot(key)
        arrivals = _history(self.routing_dir)[1].arrivals(me)
        for kg in np.unique(new["kg"].to_numpy()):
            if not self._settled(slot, int(kg), int(arrivals[kg])):
                slot.pending.add(int(kg))
        settled = ~new["kg"].isin(slot.pending)
        late = int((settled & (new["start"] + self.plan.pane_ms <= slot.upto)).sum())
        if late:
            print(f"elastream consolidate: slot {me}: {late} partials arrived after their "
                  f"windows closed", file=sys.stderr)
        slot.parts = new if slot.parts.empty else pd.concat([slot.parts, new], ignore_index=True)
        self._save(slot)
        if next(iter(self.handle.listTimers()), None) is None:  # a slot made before heartbeats
            self._heartbeat(timerValues.getCurrentWatermarkInMs())
        yield from ()

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        """Take over gained key groups, emit windows up to the watermark, hand off lost ones.

        Runs in every batch that advances the watermark (the heartbeat), on every slot. The
        slot owns (by the owner version) every key group whose partials reach it here, so it
        emits their windows whole; what the batch's routing moved away it then hands off, and
        from the next batch on (the owner version recorded here) the new owner takes it over.
        """
        watermark = timerValues.getCurrentWatermarkInMs()
        slot = self._load()
        me = self._slot(key)
        history, owned = _history(self.routing_dir)
        out = [*self._take_over(slot, owned.arrivals(me)), self._emit(slot, watermark)]
        self._hand_off(slot, history.departures(me))
        batch = micro_batch_id()
        if batch is not None:
            RoutingStore(self.routing_dir).set_owner(batch + 1, history.version)
        self._save(slot)
        self._heartbeat(max(watermark, slot.upto))
        windows = pd.concat([w for w in out if not w.empty], ignore_index=True) \
            if any(not w.empty for w in out) else None
        if windows is not None:
            yield self._rows(windows)

    # -- steps ---------------------------------------------------------------------------------
    @staticmethod
    def _settled(slot: SlotState, kg: int, arrival: int) -> bool:
        """Whether ``kg``'s state is here: held since the start, or its hand-off taken over."""
        return arrival == 0 or (arrival > 0 and (arrival, kg) in slot.received)

    def _assemble(self, parts: pd.DataFrame, after: int, upto: int
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Windows ending in ``(after, upto]`` and the parts to keep (with their ``kg``)."""
        if parts.empty:
            return pd.DataFrame(), parts
        kg_of = parts.drop_duplicates("key").set_index("key")["kg"]
        if after == NOT_YET:
            after = int(parts["start"].min()) - 1
        done = assemble(parts.drop(columns="kg"), self.plan, after, upto)
        kept = done.parts.assign(kg=done.parts["key"].map(kg_of).astype(np.int64))
        return done.windows, kept

    def _emit(self, slot: SlotState, watermark: int) -> pd.DataFrame:
        """Assemble the settled key groups' windows up to the watermark."""
        if watermark <= slot.upto:
            return pd.DataFrame()
        waiting = slot.parts["kg"].isin(slot.pending)
        windows, kept = self._assemble(slot.parts[~waiting], slot.upto, watermark)
        slot.parts = pd.concat([kept, slot.parts[waiting]], ignore_index=True)
        slot.upto = watermark
        return windows

    def _hand_off(self, slot: SlotState, departures: np.ndarray) -> None:
        """Write every lost key group's parts to the migration store and drop them."""
        for kg in np.flatnonzero(departures >= 0):
            version = int(departures[kg])
            if (version, int(kg)) in slot.handed:
                continue
            if int(kg) in slot.pending:  # its own state never arrived: it cannot travel on
                print(f"elastream consolidate: key group {kg} moves on before its state "
                      f"arrived; its partials stay", file=sys.stderr)
                continue
            mine = slot.parts["kg"] == kg
            parts = slot.parts[mine].sort_values(["key", "start", "length"], kind="stable")
            self.store.hand_off(version, int(kg), parts, slot.upto)
            self.store.fault_point()
            slot.parts = slot.parts[~mine]
            slot.handed.add((version, int(kg)))
            slot.pending.discard(int(kg))

    def _take_over(self, slot: SlotState, arrivals: np.ndarray) -> list[pd.DataFrame]:
        """Merge every gained key group's hand-off that arrived; emit what it had not."""
        out = []
        for kg in np.flatnonzero(arrivals > 0):
            version = int(arrivals[kg])
            if (version, int(kg)) in slot.received:
                continue
            got = self.store.take_over(version, int(kg))
            if got is None:
                slot.pending.add(int(kg))
                continue
            parts, sender_upto = got
            waiting = slot.parts["kg"] == kg
            merged = pd.concat([parts, slot.parts[waiting]], ignore_index=True)
            if sender_upto > slot.upto:
                raise RuntimeError(f"key group {kg} arrived from a slot ahead of this one "
                                   f"({sender_upto} > {slot.upto})")
            windows, kept = self._assemble(merged, sender_upto, slot.upto)
            out.append(windows)
            slot.parts = pd.concat([slot.parts[~waiting], kept], ignore_index=True)
            slot.received.add((version, int(kg)))
            slot.pending.discard(int(kg))
            self.store.acknowledge(version, int(kg))
        return out

    def _rows(self, windows: pd.DataFrame) -> pd.DataFrame:
        out = pd.DataFrame({
            "key": windows["key"].astype(str),
            "window_start": pd.to_datetime(windows["start"], unit="ms", utc=True),
            "window_end": pd.to_datetime(windows["start"] + windows["length"], unit="ms",
                                         utc=True),
            "window_length": windows["length"] // 1000,
            "window_slide": windows["slide"] // 1000,
        })
        return pd.concat([out, finalize(windows, self.aggs)], axis=1)

    def close(self) -> None:
        """Nothing to release."""
