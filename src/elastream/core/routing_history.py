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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from elastream.core.routing import RoutingStore, RoutingTable


class RoutingHistory:
    """Slot of every key group at versions ``0 … V−1`` (a V × G array, version = row)."""

    def __init__(self, slot_of: np.ndarray) -> None:
        self.slot_of = np.asarray(slot_of, dtype=np.int64)
        if self.slot_of.ndim != 2 or self.slot_of.shape[0] < 1:
            raise ValueError(f"need a versions × key groups array, got {self.slot_of.shape}")

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
        return int(self.slot_of.shape[0] - 1)

    def arrivals(self, slot: int) -> np.ndarray:
        """Per key group, the first version of ``slot``'s current tenure.

        0: held since the start; −1: ``slot`` does not own it now.
        """
        elsewhere = self.slot_of != slot
        ever = elsewhere.any(axis=0)
        last = self.version - np.argmax(elsewhere[::-1], axis=0)
        arrival = np.where(ever, last + 1, 0)
        return np.where(elsewhere[-1], -1, arrival)

    def departures(self, slot: int) -> np.ndarray:
        """Per key group, the version that last took it away from ``slot``: its hand-off's name.

        −1 where ``slot`` owns it now or never did.
        """
        held = self.slot_of == slot
        last = self.version - np.argmax(held[::-1], axis=0)
        return np.where(held.any(axis=0) & ~held[-1], last + 1, -1)

    def last_moves(self) -> np.ndarray:
        """Per key group, the version of its latest move (0: it never moved)."""
        changed = np.vstack([np.zeros((1, self.slot_of.shape[1]), dtype=bool),
                             self.slot_of[1:] != self.slot_of[:-1]])
        return np.where(changed.any(axis=0), self.version - np.argmax(changed[::-1], axis=0), 0)

    def upto(self, version: int) -> RoutingHistory:
        """The history of versions ``0 … version`` (what a batch bound to ``version`` sees)."""
        if not 0 <= version <= self.version:
            raise ValueError(f"version {version} outside [0, {self.version}]")
        return self if version == self.version else RoutingHistory(self.slot_of[:version + 1])

    @classmethod
    def load(cls, store: RoutingStore, known: RoutingHistory | None = None,
             upto: int | None = None) -> RoutingHistory:
        """Published versions ``0 … upto`` (default: the current one) of ``store``.

        Reads only the versions newer than ``known``; returns ``known`` itself (or a prefix of
        it) when it already holds them.
        """
        last = store.current_version() if upto is None else upto
        if last is None:
            raise ValueError(f"no routing version published in {store.directory}")
        if known is not None and not np.array_equal(
                store.get(min(known.version, last)).slot_of,
                known.slot_of[min(known.version, last)]):
            known = None  # another job's history in a folder of the same name
        if known is not None and known.version >= last:
            return known.upto(last)
        first = 0 if known is None else known.version + 1
        fresh = np.array([store.get(v).slot_of for v in range(first, last + 1)], dtype=np.int64)
        return cls(fresh if known is None else np.vstack([known.slot_of, fresh]))

