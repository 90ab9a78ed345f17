"""Where each key group was at every routing version: who hands state off, who waits for it.

A key group's state lives with the slot that owns it. When a version moves key group ``kg`` from
slot ``a`` to slot ``b``, ``a`` hands the state off and ``b`` takes it over (the live
progressive migration of Ding et al. §3). Both sides must name that hand-off the same way
without talking to each other; they do so by the version at which ``kg`` arrived at ``b`` —
the first version of ``b``'s current tenure — which both read off the published history.

>>> h = RoutingHistory(np.array([[0, 0, 1], [1, 0, 1], [1, 0, 0]]))
>>> h.arrivals(slot=0).tolist(), h.arrivals(slot=1).tolist()
([-1, 0, 2], [1, -1, -1])
>>> h.departures(slot=0).tolist(), h.departures(slot=1).tolist()
([1, -1, -1], [-1, -1, 2])
>>> h.last_moves().tolist()
[1, 0, 2]

**Compaction.** The history only needs what a hand-off still in flight can ask: the controller
moves a key group again only once its last hand-off was written, so of the versions before the
oldest one a running micro-batch can still use (``base``), each key group needs only the tenure
it was in at ``base`` (its first version, ``start``) and the slot before it (``previous``, whose
hand-off may still be outstanding). :meth:`compacted` keeps that; the driver publishes it
(:meth:`save`), so a worker reads one small file and the versions after it, not every version.

>>> c = h.compacted(base=2)
>>> c.base, c.slot_of.tolist(), c.start.tolist(), c.previous.tolist()
(2, [[1, 0, 0]], [1, 0, 2], [0, -1, 1])
>>> c.arrivals(slot=0).tolist(), c.departures(slot=1).tolist(), c.last_moves().tolist()
([-1, 0, 2], [-1, -1, 2], [1, 0, 2])
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

from elastream.core.routing import RoutingTable
from elastream.stores.routing_store import RoutingStore

SNAPSHOT = "history.npz"
"""The compacted history the driver publishes beside the routing versions."""


class RoutingHistory:
    """Slot of every key group at versions ``base … V`` (``slot_of``, one row per version).

    And, per key group, the first version of the tenure that held it at ``base`` (``start``;
    0: held since the start) and the slot that held it before (``previous``; −1: none).
    """

    def __init__(self, slot_of: np.ndarray, base: int = 0, start: np.ndarray | None = None,
                 previous: np.ndarray | None = None) -> None:
        self.slot_of = np.asarray(slot_of, dtype=np.int64)
        if self.slot_of.ndim != 2 or self.slot_of.shape[0] < 1:
            raise ValueError(f"need a versions × key groups array, got {self.slot_of.shape}")
        groups = self.slot_of.shape[1]
        self.base = int(base)
        self.start = np.zeros(groups, dtype=np.int64) if start is None else np.asarray(
            start, dtype=np.int64)
        self.previous = np.full(groups, -1, dtype=np.int64) if previous is None else np.asarray(
            previous, dtype=np.int64)

    @classmethod
    def of(cls, tables: Sequence[RoutingTable]) -> RoutingHistory:
        """The history of tables ``0 … V−1`` (each table's version must be its index)."""
        for index, table in enumerate(tables):
            if table.version != index:
                raise ValueError(f"routing version {table.version} at position {index}")
        return cls(np.array([t.slot_of for t in tables]))

    @property
    def version(self) -> int:
        """The latest version."""
        return int(self.base + self.slot_of.shape[0] - 1)

    def arrivals(self, slot: int) -> np.ndarray:
        """Per key group, the first version of ``slot``'s current tenure.

        0: held since the start; −1: ``slot`` does not own it now.
        """
        elsewhere = self.slot_of != slot
        ever = elsewhere.any(axis=0)
        last = self.version - np.argmax(elsewhere[::-1], axis=0)
        arrival = np.where(ever, last + 1, self.start)
        return np.where(elsewhere[-1], -1, arrival)

    def departures(self, slot: int) -> np.ndarray:
        """Per key group, the version that last took it away from ``slot``: its hand-off's name.

        −1 where ``slot`` owns it now or never did (or its hand-off is older than ``base``).
        """
        held = self.slot_of == slot
        last = self.version - np.argmax(held[::-1], axis=0)
        from_rows = np.where(held[-1], -1, last + 1)
        before = np.where(self.previous == slot, self.start, -1)
        return np.where(held.any(axis=0), from_rows, before)

    def last_moves(self) -> np.ndarray:
        """Per key group, the version of its latest move (0: it never moved)."""
        changed = np.vstack([np.zeros((1, self.slot_of.shape[1]), dtype=bool),
                             self.slot_of[1:] != self.slot_of[:-1]])
        return np.where(changed.any(axis=0), self.version - np.argmax(changed[::-1], axis=0),
                        self.start)

    def upto(self, version: int) -> RoutingHistory:
        """The history of versions ``… version`` (what a batch bound to ``version`` sees)."""
        if not self.base <= version <= self.version:
            raise ValueError(f"version {version} outside [{self.base}, {self.version}]")
        if version == self.version:
            return self
        return RoutingHistory(self.slot_of[:version - self.base + 1], self.base, self.start,
                              self.previous)

    def compacted(self, base: int) -> RoutingHistory:
        """The same answers for every version from ``base`` on, without the rows before it."""
        base = min(max(base, self.base), self.version)
        if base == self.base:
            return self
        rows = self.slot_of[:base - self.base + 1]
        elsewhere = rows != rows[-1]
        ever = elsewhere.any(axis=0)
        last = rows.shape[0] - 1 - np.argmax(elsewhere[::-1], axis=0)
        groups = np.arange(rows.shape[1])
        start = np.where(ever, self.base + last + 1, self.start)
        previous = np.where(ever, rows[last, groups], self.previous)
        return RoutingHistory(self.slot_of[base - self.base:], base, start, previous)

    # -- the published history -------------------------------------------------------------
    def save(self, store: RoutingStore) -> None:
        """Publish this history as the store's snapshot (atomically replaced)."""
        buffer = io.BytesIO()
        np.savez(buffer, slot_of=self.slot_of, base=np.int64(self.base), start=self.start,
                 previous=self.previous)
        store.folder.publish(SNAPSHOT, buffer.getvalue())

    @classmethod
    def snapshot(cls, store: RoutingStore) -> RoutingHistory | None:
        """The store's published snapshot (``None``: none yet)."""
        published = store.folder.latest(SNAPSHOT)
        if published is None:
            return None
        data = np.load(io.BytesIO(published))
        return cls(data["slot_of"], int(data["base"]), data["start"], data["previous"])

    @classmethod
    def load(cls, store: RoutingStore, known: RoutingHistory | None = None,
             upto: int | None = None) -> RoutingHistory:
        """Published versions up to ``upto`` (default: the current one) of ``store``.

        Starts from ``known`` (or the store's snapshot) and reads only the versions after it;
        returns ``known`` itself (or a prefix of it) when it already holds them. Compacted as
        far as the snapshot is.
        """
        last = store.current_version() if upto is None else upto
        if last is None:
            raise ValueError(f"no routing version published in {store.folder}")
        if known is not None and not _matches(store, known, last):
            known = None  # another job's history in a folder of the same name
        snapshot = cls.snapshot(store)
        if snapshot is not None and (known is None or snapshot.base > known.base):
            known = snapshot if known is None or known.version < snapshot.base else \
                known.compacted(snapshot.base)
        try:
            return cls._extended(store, known, last)
        except FileNotFoundError:
            # Versions older than a newer snapshot were dropped meanwhile: start from it.
            return cls._extended(store, cls.snapshot(store), last)

    @classmethod
    def _extended(cls, store: RoutingStore, known: RoutingHistory | None,
                  last: int) -> RoutingHistory:
        if known is not None and known.version >= last:
            return known.upto(last)
        first = 0 if known is None else known.version + 1
        fresh = np.array([store.get(v).slot_of for v in range(first, last + 1)], dtype=np.int64)
        if known is None:
            return cls(fresh)
        return RoutingHistory(np.vstack([known.slot_of, fresh]), known.base, known.start,
                              known.previous)


def compact_history(store: RoutingStore, below: int,
                    known: RoutingHistory | None = None) -> RoutingHistory:
    """Compact ``store``'s history for micro-batches ``below`` and after, and publish it.

    Those batches are owned at the owner version of batch ``below`` or later (and route by
    later ones), so that version is the new base. Versions older than the previous snapshot's
    base are deleted: a worker that read that snapshot needs none of them (one that read an
    older one and misses a version starts again from the newest, :meth:`RoutingHistory.load`).
    Returns the history up to the current version.
    """
    history = RoutingHistory.load(store, known)
    compacted = history.compacted(store.owner(below))
    if compacted is not history:
        compacted.save(store)
        store.forget_versions(below=history.base)
    return compacted


def _matches(store: RoutingStore, known: RoutingHistory, last: int) -> bool:
    """Whether ``known`` is this store's history (its newest version still there agrees)."""
    version = min(known.version, last)
    if version < known.base:
        return False
    try:
        table = store.get(version)
    except FileNotFoundError:
        return False
    return bool(np.array_equal(table.slot_of, known.slot_of[version - known.base]))
