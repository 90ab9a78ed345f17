"""Routing inside a micro-batch's own tasks: each row's slot and pin from the bound version.

Every stage of a micro-batch routes by the version bound to it (:meth:`RoutingStore.bind`):
a task finds its micro-batch (:mod:`.batch`), reads that version from the store in its Python
worker and looks each row's key group up in one array, vectorised over the Arrow batches of a
``mapInArrow``. The records' slots are looked up before the shuffle by pin, the pane partials'
owner slots (the batch's owner version, :meth:`RoutingStore.owner`) right where the partials
are made. No routing table travels as a broadcast: two Python data sources joined that way
cost two planned reads and two broadcast exchanges per micro-batch, and ~3 s of Python worker
start-ups in the first (``benchmarks/throughput/README.md``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from elastream.core.routing import RoutingTable
from elastream.runtimes.spark.batch import routing_for_task
from elastream.runtimes.spark.pins import pins_for
from elastream.stores.routing_store import RoutingStore

SLOT, PIN, VERSION = "slot", "pin", "version"
OWNER_PIN, OWNER_VERSION = "owner_pin", "owner_version"


def slots_of(routing: RoutingTable, kg: np.ndarray, key_hash: np.ndarray | None = None,
             record_hash: np.ndarray | None = None) -> np.ndarray:
    """The slot of each row: its key group's, or a split hot key's bucket.

    The bucket is the one the record's hash picks (``pmod(record_hash, buckets)``), when the
    hashes are given.
    """
    slots: np.ndarray = np.asarray(routing.slot_of, dtype=np.int32)[kg]
    if routing.hot_keys and key_hash is not None and record_hash is not None:
        for key, buckets in routing.hot_keys:
            hit = key_hash == key
            if hit.any():
                slots[hit] = np.asarray(buckets, dtype=np.int32)[
                    np.mod(record_hash[hit], len(buckets))]
    return slots


def _column(batch: pa.RecordBatch, name: str) -> np.ndarray:
    values: np.ndarray = batch.column(batch.schema.get_field_index(name)).to_numpy(
        zero_copy_only=False)
    return values


def _appended(batch: pa.RecordBatch, drop: str | None,
              columns: dict[str, pa.Array]) -> pa.RecordBatch:
    keep = [name for name in batch.schema.names if name != drop]
    arrays = [batch.column(batch.schema.get_field_index(name)) for name in keep]
    return pa.RecordBatch.from_arrays(arrays + list(columns.values()),
                                      names=keep + list(columns))


def route_batches(batches: Iterator[pa.RecordBatch], *, routing_dir: str, partitions: int,
                  record_hash: str | None) -> Iterator[pa.RecordBatch]:
    """Rows with ``slot``, ``pin`` and ``version`` of the micro-batch's routing version.

    With ``record_hash`` (a column, dropped here) split hot keys are spread over their buckets
    by ``kh`` and that hash.
    """
    routing: RoutingTable | None = None
    pins = pins_for(partitions).astype(np.int32)
    for batch in batches:
        if not batch.num_rows:
            continue
        if routing is None:
            routing = routing_for_task(RoutingStore(routing_dir))
        kg = _column(batch, "kg")
        hashes = (_column(batch, "kh"), _column(batch, record_hash)) if record_hash else ()
        slots = slots_of(routing, kg, *hashes)
        yield _appended(batch, record_hash, {
            SLOT: pa.array(slots, pa.int32()), PIN: pa.array(pins[slots], pa.int32()),
            VERSION: pa.array(np.full(len(kg), routing.version, dtype=np.int64))})


def with_owner(table: pa.Table, *, routing_dir: str, partitions: int,
               longest_ms: int = 0) -> pa.Table:
    """``table`` (with ``kg`` and pane ``start``) with ``owner_pin`` and ``owner_version``.

    That is where each key group's state lives in the task's micro-batch. A key group in a
    smooth migration (:meth:`RoutingTable.smooth_moves`) has two owners: a partial of a pane
    starting at or after the boundary goes to the new slot, one starting before the boundary
    plus ``longest_ms`` (the longest window) to the old slot — both, in between.
    """
    owner = routing_for_task(RoutingStore(routing_dir), owner=True)
    kg = table.column("kg").to_numpy()
    slots = np.asarray(owner.slot_of)[kg]
    if owner.smooth:
        start = table.column("start").to_numpy()
        groups, old_of, boundary_of = np.array(owner.smooth, dtype=np.int64).T
        old_slot = np.full(owner.num_key_groups, -1, dtype=np.int64)
        old_slot[groups] = old_of
        at = np.zeros(owner.num_key_groups, dtype=np.int64)
        at[groups] = boundary_of
        old, boundary = old_slot[kg], at[kg]
        moving = old >= 0
        to_new = ~moving | (start >= boundary)
        to_old = moving & (start < boundary + longest_ms)
        table = pa.concat_tables([table.filter(pa.array(to_new)),
                                  table.filter(pa.array(to_old))])
        slots = np.concatenate([slots[to_new], old[to_old]])
    pins = pins_for(partitions).astype(np.int32)[slots]
    return (table.append_column(OWNER_PIN, pa.array(pins, pa.int32()))
            .append_column(OWNER_VERSION,
                           pa.array(np.full(len(slots), owner.version, dtype=np.int64))))
