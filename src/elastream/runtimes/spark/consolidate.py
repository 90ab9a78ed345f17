"""Enorm's consolidate stage on Spark: one ``transformWithStateInPandas`` operator per job.

Grouped by the *slot* that owns a key group under the batch's owner version — a fixed pin
per slot, never the raw key (a Python call per key costs ~0.6 ms, DESIGN.md; even one call per
key group cost ~45 ms of pandas work per micro-batch on the flights, so each call handles many
key groups). A slot keeps the parts of each key group as one entry of a map state
(:mod:`.keygroup_state`), merges pane partials from any number of compute slots, and, when the
event-time watermark passes window ends, assembles each requested window with the fewest
merges (:mod:`elastream.algorithms.windows`) and emits it exactly once. A batch reads and writes
only the entries of the key groups that received partials, have windows to emit, or move; the
slot's small ``meta`` value (how far it emitted, its heartbeat, its migration book, which key
groups it holds) is read once per call.

**Live progressive migration** (Ding et al. §3). When a routing version moves key group ``kg``
from slot ``a`` to slot ``b``, the compute stage sends ``kg``'s new records to ``b`` at once,
while ``kg``'s window state stays with ``a``: this stage is grouped by the batch's *owner*
version (:meth:`~elastream.stores.routing_store.RoutingStore.owner`), which moves one watermark step
later. Pane partials arrive in every micro-batch with records and wait in their key groups'
state; every slot fires a heartbeat timer in each micro-batch that advances the watermark, and
there each slot (in the first handler call of the batch: the rows' call if the slot got any,
else its timer's)

1. takes over every key group it gained under the owner version: the hand-off was written in an
   earlier, committed batch, so it is there; partials that reached the slot before, in this
   batch, waited in its state (the wait buffer);
2. emits every window the watermark closed: it holds all of its key groups' partials;
3. hands off to the migration store (:mod:`elastream.stores.migration_store`) the parts
   of every key group the batch's routing version moved away, and drops them;
4. records the batch's routing version as the owner version of the batches after it.

So no window is held back by a move, and a stream that ends right after a move still emits
everything its last watermark closed. Both sides name a hand-off by the version that moved the
key group, read off the published routing history
(:class:`~elastream.stores.routing_history.RoutingHistory`); they need no other channel. The
controller moves a key group again only once its last hand-off was written, so the new owner
takes it over (step 1) before it can hand it on (step 3).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pyspark import TaskContext
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import (
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from elastream.algorithms.windows.assemble import assemble, empty_parts, finalize
from elastream.algorithms.windows.combine import late_records, part_ends
from elastream.algorithms.windows.consolidation import ConsolidationPlan
from elastream.core.aggregates import AggSpec, partial_columns
from elastream.runtimes.spark.batch import micro_batch_id, routing_for_task
from elastream.runtimes.spark.busy import add_busy
from elastream.runtimes.spark.compute import BLOB
from elastream.runtimes.spark.costs import add_costs
from elastream.runtimes.spark.handoffs import Handoffs
from elastream.runtimes.spark.keygroup_state import (
    KEY_SCHEMA,
    VALUE_SCHEMA,
    KeyGroupParts,
    from_blobs,
)
from elastream.runtimes.spark.pins import pins_for
from elastream.runtimes.spark.slot_meta import NOT_YET, SlotMeta
from elastream.stores.migration_store import MigrationStore
from elastream.stores.routing_history import RoutingHistory
from elastream.stores.routing_store import RoutingStore

META_SCHEMA = StructType([StructField("upto", LongType()), StructField("heartbeat", LongType()),
                          StructField("book", StringType())])

_HISTORY: dict[str, tuple[int | None, RoutingHistory, RoutingHistory]] = {}
"""Per routing directory, the last batch's routing histories, kept by the Python worker."""


def _history(routing_dir: str) -> tuple[RoutingHistory, RoutingHistory]:
    """The routing history up to the task's micro-batch's version, and up to its owner's.

    Read once per micro-batch and worker (newer versions only, :meth:`RoutingHistory.load`).
    """
    batch = micro_batch_id()
    cached = _HISTORY.get(routing_dir)
    if cached is not None and batch is not None and cached[0] == batch:
        return cached[1], cached[2]
    store = RoutingStore(routing_dir)
    version = routing_for_task(store).version
    owner = routing_for_task(store, owner=True).version
    known = cached[1] if cached is not None else None
    history = RoutingHistory.load(store, known, upto=version)
    owned = history.upto(owner)
    _HISTORY[routing_dir] = (batch, history, owned)
    return history, owned


LATE = "late_rows"
"""Output column that is null on windows; a row with it set counts records that came too late."""
EVENT = "_el_event"
"""Output column (with ``event_time``): a window's end less 1 µs, the event time chained Spark
aggregations window it by."""


def output_schema(aggs: Sequence[AggSpec], event_time: bool = False) -> StructType:
    """What the stage emits: key, window bounds (epoch ms), length and slide (s), aggregates.

    With ``event_time``, also ``_el_event``: a window's end less 1 µs as a timestamp (the event
    time of the window as the tuple of a chained Spark aggregation: it falls in the window).

    And ``late_rows``: null on windows; set (with everything else null) on a row counting the
    records of partials that reached a slot after their windows were emitted, and were dropped.
    :func:`elastream.runtimes.spark.pipeline.build` turns the bounds into timestamps and the
    late rows into an observed metric.
    """
    fields = [StructField("key", StringType())]
    fields += [StructField(name, LongType()) for name in
               ("window_start", "window_end", "window_length", "window_slide")]
    for agg in aggs:
        kind = LongType() if agg.func == "count" else DoubleType()
        fields.append(StructField(agg.output_name, kind))
    fields.append(StructField(LATE, LongType()))
    if event_time:
        fields.append(StructField(EVENT, TimestampType()))
    return StructType(fields)


class Consolidate(StatefulProcessor):
    """Merges partials of a slot's key groups into complete windows, and moves key groups.

    Input: packed rows (:func:`~elastream.runtimes.spark.compute.packed`), whose blobs hold
    ``kg``, the key, ``start`` (pane or window start, epoch ms), ``length`` (a pane's, or a
    window partial's marker: :mod:`elastream.algorithms.windows.combine`) and the job's partial
    columns. ``partitions`` (P, the slots' pins), ``routing_dir`` and
    ``migration_dir`` are the job's. ``busy``: the job's accumulator of busy seconds per slot
    (:mod:`.busy`), or ``None``; ``costs``: its accumulator of stage costs (:mod:`.costs`).
    """

    def __init__(self, plan: ConsolidationPlan, aggs: Sequence[AggSpec], *, partitions: int,
                 routing_dir: str, migration_dir: str, busy: Any = None, costs: Any = None,
                 event_time: bool = False) -> None:
        self.plan = plan
        self.longest_ms = max(spec.length_ms for spec in plan.specs)
        self.event_time = event_time
        self.busy = busy
        self.costs = costs
        self.partitions = partitions
        self.aggs = tuple(aggs)
        self.partials = partial_columns(aggs)
        self.pins = pins_for(partitions)
        self.routing_dir = routing_dir
        self.migration_dir = migration_dir

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Open the slot's state: its meta value and its map of key-group parts."""
        self.handle = handle
        self.spent: dict[str, float] = {}
        self.meta = handle.getValueState("meta", META_SCHEMA)
        empty = empty_parts(self.partials).assign(kg=pd.Series(dtype=np.int64))
        self.parts = KeyGroupParts(handle.getMapState("parts", KEY_SCHEMA, VALUE_SCHEMA), empty)
        self.moves = Handoffs(self.parts, MigrationStore(self.migration_dir), self.routing_dir,
                              self.longest_ms)

    # -- state ---------------------------------------------------------------------------------
    def _load(self) -> SlotMeta:
        self.parts.begin()
        if not self.meta.exists():
            return SlotMeta()
        upto, heartbeat, book = self.meta.get()  # type: ignore[misc]
        return SlotMeta.of(upto, heartbeat, book)

    def _save(self, meta: SlotMeta, watermark: int, fired: int | None = None) -> None:
        """Write the changed key groups and the meta; keep one heartbeat past the watermark.

        The heartbeat fires in the next batch that advances the watermark (``fired``: the timer
        being handled, which Spark deletes itself).
        """
        self.parts.flush(meta.held)
        target = max(watermark, meta.upto) + 1
        if meta.heartbeat != target:
            if meta.heartbeat is not None and meta.heartbeat != fired:
                self.handle.deleteTimer(meta.heartbeat)
            self.handle.registerTimer(target)
            meta.heartbeat = target
        self.meta.update((meta.upto, meta.heartbeat, meta.book()))

    def _slot(self, key: Any) -> int:
        """The slot whose pin is ``key``; its state partition must be this task's (pins.py)."""
        slot = int(np.flatnonzero(self.pins == int(key[0]))[0])
        context = TaskContext.get()
        if context is not None and context.partitionId() != slot:
            raise RuntimeError(
                f"elastream: slot {slot}'s pin {int(key[0])} reached state partition "
                f"{context.partitionId()}: the state layout is broken (is "
                "spark.sql.streaming.statefulOperator.useStrictDistribution false?)")
        return slot

    # -- handlers ------------------------------------------------------------------------------
    def handleInitialState(self, key: Any, initialState: Any, timerValues: TimerValues) -> None:
        """Every slot starts with a heartbeat, so it can hand off even before it gets rows."""
        meta = self._load()
        self._save(meta, timerValues.getCurrentWatermarkInMs())

    def handleInputRows(
        self, key: Any, rows: Iterator[Any], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        """Add new pane partials to their key groups (and do the heartbeat's work, if due).

        In a batch that advances the watermark, the slot takes over, emits and hands off in
        this one pass. Partials of a gained key group wait for its hand-off.
        """
        yield from self._timed(self._input_rows(key, rows, timerValues))

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        """The heartbeat: in every batch that advances the watermark, on every slot.

        A slot that got rows in this batch did the work then; the others do it here.
        """
        yield from self._timed(self._heartbeat(key, timerValues, expiredTimerInfo))

    def _timed(self, handler: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """A handler's output; the seconds it took are added to the slot's busy time.

        And to the stage's costs, with the partials it received and the hand-offs it did.
        """
        started = time.perf_counter()
        self.spent = dict.fromkeys(("partials", "handoff_seconds", "handoffs"), 0.0)
        try:
            yield from handler
        finally:
            if self.busy is not None:
                add_busy(self.busy, self.partitions, started)
            add_costs(self.costs, consolidate_seconds=time.perf_counter() - started,
                      **self.spent)

    def _input_rows(self, key: Any, rows: Iterator[Any], timerValues: TimerValues
                    ) -> Iterator[pd.DataFrame]:
        packed = from_blobs(blob for frame in rows for blob in frame[BLOB])
        if packed is None or packed.num_rows == 0:
            return
        new = packed.rename_columns(["kg", "key", *packed.column_names[2:]]).to_pandas()
        new = new[["key", "start", "length", *self.partials, "kg"]]
        self.spent["partials"] += len(new)
        watermark = timerValues.getCurrentWatermarkInMs()
        meta = self._load()
        me = self._slot(key)
        history, owned = _history(self.routing_dir)
        arrivals = owned.arrivals(me)
        for kg in np.unique(new["kg"].to_numpy()):
            if int(kg) not in meta.leaving and not self.moves.settled(meta, int(kg),
                                                                 int(arrivals[kg])):
                meta.pending.add(int(kg))
        # A settled key group's pane that ended by the slot's emitted mark is too late: every
        # window holding it was emitted. (A pending one's mark is its sender's, still unknown.)
        # A smoothly leaving key group's panes from its boundary on are the new slot's to count.
        # A window partial (combined execution) is late when its window ended by the mark.
        late = ~new["kg"].isin(meta.pending) & (part_ends(new, self.plan) <= meta.upto)
        if late.any():
            theirs = new["start"] >= new["kg"].map(meta.leaving).fillna(np.inf)
            yield self._late(late_records(new[late & ~theirs], self.plan))
            new = new[~late]
        if meta.heartbeat is not None and watermark >= meta.heartbeat:
            windows = self._advance(meta, me, watermark, new, history, owned)
        else:
            self.parts.append(new, meta.held)
            windows = None
        self._save(meta, watermark)
        if windows is not None:
            yield self._rows(windows)

    def _heartbeat(self, key: Any, timerValues: TimerValues,
                   expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        watermark = timerValues.getCurrentWatermarkInMs()
        meta = self._load()
        windows = None
        if watermark > meta.upto:
            history, owned = _history(self.routing_dir)
            windows = self._advance(meta, self._slot(key), watermark, None, history, owned)
        self._save(meta, watermark, fired=expiredTimerInfo.getExpiryTimeInMs())
        if windows is not None:
            yield self._rows(windows)

    # -- steps ---------------------------------------------------------------------------------
    def _advance(self, meta: SlotMeta, me: int, watermark: int, new: pd.DataFrame | None,
                 history: RoutingHistory, owned: RoutingHistory) -> pd.DataFrame | None:
        """Take over gained key groups, emit windows up to the watermark, hand off lost ones.

        The slot owns (by the owner version) every key group whose partials reach it here, so
        it emits their windows whole; what the batch's routing moved away it then hands off,
        and from the next batch on (the owner version recorded here) the new owner takes it
        over. Returns the windows emitted (``None``: none).
        """
        new = self.parts.empty if new is None else new
        batch = micro_batch_id()
        started = time.perf_counter()
        out = self.moves.take_over(meta, owned.arrivals(me), me, batch, self._assemble)
        taken = time.perf_counter() - started
        out.append(self._emit(meta, watermark, new))
        started = time.perf_counter()
        self.spent["handoffs"] += self.moves.hand_off(meta, history.departures(me), me, batch)
        self.spent["handoff_seconds"] += taken + time.perf_counter() - started
        self.moves.finish_smooth(meta, owned.version)
        if batch is not None:
            RoutingStore(self.routing_dir).set_owner(batch + 1, history.version)
        found = [w for w in out if not w.empty]
        return pd.concat(found, ignore_index=True) if found else None

    def _assemble(self, parts: pd.DataFrame, after: int, upto: int, meta: SlotMeta
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Windows ending in ``(after, upto]`` and the parts to keep (with their ``kg``).

        Of a key group in a smooth migration, only the windows on this slot's side of its
        boundary.
        """
        if parts.empty:
            return pd.DataFrame(), parts
        kg_of = parts.drop_duplicates("key").set_index("key")["kg"]
        if after == NOT_YET:
            after = int(parts["start"].min()) - 1
        done = assemble(parts.drop(columns="kg"), self.plan, after, upto)
        kept = done.parts.assign(kg=done.parts["key"].map(kg_of).astype(np.int64))
        windows = done.windows
        if (meta.leaving or meta.joining) and not windows.empty:
            kg = windows["key"].map(kg_of)
            start = windows["start"]
            theirs = (start >= kg.map(meta.leaving).fillna(np.inf)) | (
                start < kg.map(meta.joining).fillna(-np.inf))
            windows = windows[~theirs].reset_index(drop=True)
        return windows, kept

    def _emit(self, meta: SlotMeta, watermark: int, new: pd.DataFrame) -> pd.DataFrame:
        """Assemble the settled key groups' windows up to the watermark; store what waits.

        Reads the key groups held, taken over or given partials; when no window of any length
        ends in ``(upto, watermark]``, only those given partials.
        """
        fresh = set(np.unique(new["kg"].to_numpy()).tolist())
        due = meta.upto == NOT_YET or any(
            len(spec.starts_ending_in(meta.upto, watermark)) for spec in self.plan.specs)
        # Held, given partials, or just taken over (not yet written back).
        ready = sorted(kg for kg in (meta.held | fresh | self.parts.dirty if due else fresh)
                       if kg not in meta.pending)
        waiting = new["kg"].isin(meta.pending)
        if waiting.any():
            self.parts.append(new[waiting], meta.held)
            new = new[~waiting]
        parts = pd.concat([self.parts.get(ready, meta.held), new], ignore_index=True)
        windows = pd.DataFrame()
        if due:
            windows, parts = self._assemble(parts, meta.upto, watermark, meta)
        self.parts.put(parts, ready)
        meta.upto = max(meta.upto, watermark)
        return windows

    def _rows(self, windows: pd.DataFrame) -> pd.DataFrame:
        start = windows["start"].to_numpy()
        out = pd.DataFrame({
            "key": windows["key"],
            "window_start": start,
            "window_end": start + windows["length"].to_numpy(),
            "window_length": windows["length"].to_numpy() // 1000,
            "window_slide": windows["slide"].to_numpy() // 1000,
        })
        out = pd.concat([out, finalize(windows, self.aggs)], axis=1)
        out[LATE] = pd.Series(pd.NA, index=out.index, dtype="Int64")
        if self.event_time:
            out[EVENT] = pd.to_datetime(out["window_end"].to_numpy() * 1000 - 1, unit="us")
        return out

    def _late(self, records: int) -> pd.DataFrame:
        row: dict[str, list[int | None]] = {
            f.name: [None] for f in output_schema(self.aggs, self.event_time)}
        row[LATE] = [records]
        return pd.DataFrame(row)

    def close(self) -> None:
        """Nothing to release."""
