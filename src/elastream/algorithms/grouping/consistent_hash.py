"""Consistent hashing with virtual nodes: a ring of 2^32 positions, FISH §5.

FISH (Huang, §5, Fig. 8): "Each key can be hashed to a space with 2^32 buckets. We connect
these numbers to form a hash ring. [...] The worker is also mapped to the ring by using the
same hash algorithm as key. In a clockwise direction, all the keys stored in their nearest
worker." With few workers the arcs are uneven, so "each worker has multiple virtual nodes,
which are further mapped onto the hash ring" (§5, after Karger et al. and Chord).

:class:`HashRing` places ``virtual_nodes`` points per worker at ``hash32(worker, replica)``
and a key at ``hash32(key)`` (:mod:`.hashing`, same seed); the key belongs to the first point
at or after its position, wrapping past 2^32 − 1 (equal positions: lower worker id, then lower
replica). Adding a worker only moves the keys whose first point is now one of the new
worker's (each moves *to* it, about 1/(n+1) of them); removing one only moves the keys that
were its own, each to the next point clockwise. :meth:`HashRing.successors` lists, for a ring
point, every worker in the order met walking clockwise — FISH's candidates: a key with ``d``
candidate workers uses the first ``d`` distinct workers after its position.

:class:`ConsistentHashGrouping` ("ch") routes each tuple to its key's owner: field grouping
that survives worker changes. Parameters: ``virtual_nodes`` (default 100 per worker; the
paper gives no number). Cost: ring build O(nV log nV); routing O(b log nV) per chunk of ``b``
tuples; the full successor table (built on first use) O(nV · n) time and memory, int16.

>>> ring = HashRing([0, 1, 2], virtual_nodes=8, seed=1)
>>> owners = ring.owner(np.arange(6))
>>> bigger = HashRing([0, 1, 2, 3], virtual_nodes=8, seed=1).owner(np.arange(6))
>>> bool(np.all((owners == bigger) | (bigger == 3)))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.base import check_batch, check_workers
from elastream.algorithms.grouping.hashing import RING_SALT, VNODE_SALT, hash32
from elastream.core import rules

I64 = npt.NDArray[np.int64]

DEFAULT_VIRTUAL_NODES: Final = 100
MAX_TABLE_CELLS: Final = 1 << 22
"""Largest successor table (ring points × workers) built in full; beyond it rows are cached."""


class HashRing:
    """The ring for one set of workers (immutable; build a new one when workers change)."""

    def __init__(
        self, workers: Sequence[int] | I64, *, virtual_nodes: int = DEFAULT_VIRTUAL_NODES,
        seed: int = 0,
    ) -> None:
        self.workers = check_workers(workers)
        self.virtual_nodes = rules.integer("virtual_nodes", virtual_nodes)
        self.seed = seed
        n, v = len(self.workers), self.virtual_nodes
        owner = np.repeat(np.arange(n, dtype=np.int64), v)
        replica = np.tile(np.arange(v, dtype=np.int64), n)
        points = np.concatenate([
            hash32(self.workers, seed, VNODE_SALT + r) for r in range(v)
        ]).reshape(v, n).T.reshape(-1)
        order = np.lexsort((replica, self.workers[owner], points))
        self.points: I64 = points[order]
        """Ring positions of the virtual nodes, ascending."""
        self.owners: I64 = owner[order]
        """Position in :attr:`workers` of each point's worker."""
        self._table: npt.NDArray[np.signedinteger[Any]] | None = None
        self._rows: dict[int, I64] = {}

    def __len__(self) -> int:
        return len(self.points)

    def point(self, keys: I64) -> I64:
        """Index of the first ring point at or after each key's position (clockwise)."""
        at = np.searchsorted(self.points, hash32(keys, self.seed, RING_SALT), side="left")
        at[at == len(self.points)] = 0
        return at

    def owner(self, keys: I64) -> I64:
        """Worker id owning each key."""
        return self.workers[self.owners[self.point(np.asarray(keys, dtype=np.int64))]]

    def successors(self, points: I64, count: int | None = None) -> I64:
        """The first ``count`` (default all) workers met walking clockwise from each point.

        Returned as positions in :attr:`workers`, shape ``(len(points), count)``.
        """
        n = len(self.workers)
        count = n if count is None else min(count, n)
        if len(self.points) * n <= MAX_TABLE_CELLS:
            table = self._table
            if table is None:
                dtype = np.int16 if n < np.iinfo(np.int16).max else np.int32
                table = self._table = self._walk(np.arange(len(self.points))).astype(dtype)
            return table[points, :count].astype(np.int64)
        missing = np.array(sorted({int(p) for p in points} - self._rows.keys()), dtype=np.int64)
        if len(missing):
            for p, row in zip(missing.tolist(), self._walk(missing), strict=True):
                self._rows[p] = row
        if not len(points):
            return np.empty((0, count), dtype=np.int64)
        return np.stack([self._rows[int(p)][:count] for p in points])

    def _walk(self, points: I64) -> I64:
        """Clockwise distance from each point to each worker's next point, ranked."""
        size, n = len(self.points), len(self.workers)
        distance = np.empty((len(points), n), dtype=np.int64)
        by_worker = np.argsort(self.owners, kind="stable")
        bounds = np.searchsorted(self.owners[by_worker], np.arange(n + 1))
        for w in range(n):
            mine = by_worker[bounds[w]:bounds[w + 1]]  # ring indices of w's points, ascending
            nxt = mine[np.searchsorted(mine, points) % len(mine)]
            distance[:, w] = (nxt - points) % size
        ranked: I64 = np.argsort(distance, axis=1)
        return ranked


class ConsistentHashGrouping:
    """CH: each key to the owner of its ring arc (see the module docstring)."""

    name = "ch"

    def __init__(
        self, workers: Sequence[int], *, seed: int = 0,
        virtual_nodes: int = DEFAULT_VIRTUAL_NODES,
    ) -> None:
        self.ring = HashRing(workers, virtual_nodes=virtual_nodes, seed=seed)

    def route(self, keys: npt.ArrayLike, times: npt.ArrayLike) -> I64:
        """Worker of each tuple: its key's owner on the ring."""
        key_array, _ = check_batch(keys, times)
        return self.ring.owner(key_array)

    def set_workers(self, workers: Sequence[int]) -> None:
        """Rebuild the ring for the new live workers (only adjacent arcs change owner)."""
        self.ring = HashRing(workers, virtual_nodes=self.ring.virtual_nodes, seed=self.ring.seed)
