"""The block loop shared by the schemes that choose the least-loaded of several candidates.

PKG, D-Choices, W-Choices and FISH all route a tuple to the least-loaded of its key's
candidate workers and then update the loads; they differ in how they pick the candidates
(and, for FISH, in what "load" means). :class:`BlockedScheme` cuts each chunk into blocks of
``block`` tuples aligned to the stream (:func:`.waterfill.block_spans`); for each block it

1. finds the block's distinct keys (``np.unique``),
2. asks the scheme for their candidate lists (:meth:`BlockedScheme._plan`, which may first
   update the scheme's statistics with the block's tuples — so with ``block = 1`` a tuple is
   counted before it is routed, as in the papers' code),
3. routes the block with :func:`.waterfill.route_block` against the current levels, and
4. adds the block's tuples to the loads once (``np.bincount``).

Loads are kept per live worker, in the order of :meth:`set_workers`; a worker that stays
keeps its load, a new one starts at :meth:`BlockedScheme._initial_load`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.base import check_batch, check_workers
from elastream.algorithms.grouping.hashing import choice
from elastream.algorithms.grouping.waterfill import block_spans, route_block
from elastream.core import rules

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

DEFAULT_BLOCK: Final = 16384


class BlockedScheme:
    """Base of PKG, D-C, W-C and FISH; subclasses implement :meth:`_plan`."""

    name = "blocked"

    def __init__(
        self, workers: Sequence[int], *, seed: int = 0, block: int = DEFAULT_BLOCK
    ) -> None:
        self._workers = check_workers(workers)
        self.seed = seed
        self.block = rules.integer("block", block)
        self._position = 0
        self._load = np.zeros(len(self._workers), dtype=np.float64)
        self._step = np.ones(len(self._workers), dtype=np.float64)

    @property
    def workers(self) -> I64:
        """Live worker ids, in the order loads and candidate positions refer to."""
        return self._workers.copy()

    @property
    def loads(self) -> F64:
        """Load of each live worker (tuples sent so far, or FISH's inferred queue ``C_w``)."""
        return self._load.copy()

    def route(self, keys: npt.ArrayLike, times: npt.ArrayLike) -> I64:
        """Worker id of each tuple, block by block."""
        key_array, time_array = check_batch(keys, times)
        out = np.empty(len(key_array), dtype=np.int64)
        for start, stop in block_spans(self._position, len(key_array), self.block):
            out[start:stop] = self._route_block(key_array[start:stop], time_array[start:stop])
        self._position += len(key_array)
        return self._workers[out]

    def set_workers(self, workers: Sequence[int]) -> None:
        """Change the live workers; survivors keep their loads."""
        new = check_workers(workers)
        old = dict(zip(self._workers.tolist(), self._load.tolist(), strict=True))
        surviving = np.array([old[w] for w in new.tolist() if w in old], dtype=np.float64)
        start = self._initial_load(surviving)
        self._load = np.array([old.get(w, start) for w in new.tolist()], dtype=np.float64)
        self._workers = new
        self._step = np.ones(len(new), dtype=np.float64)
        self._workers_changed()

    def _initial_load(self, surviving: F64) -> float:
        """Load a newly added worker starts with: the least surviving local count.

        So that a cumulative count does not send every choice to the newcomer until it has
        caught up with workers that ran from the start.
        """
        return float(surviving.min()) if len(surviving) else 0.0

    def _workers_changed(self) -> None:
        """Hook: rebuild anything that depends on the live workers."""

    def _route_block(self, keys: I64, times: F64) -> I64:
        unique, inverse, order = distinct(keys)
        plan = self._plan(unique, inverse, times)
        group = plan.group_of_key[inverse]
        if plan.shared:  # tuples by (group, arrival): shared groups first, then as by key
            first = np.flatnonzero(group < plan.shared)
            if plan.shared > 1:
                first = first[np.argsort(group[first] * len(group) + first)]
            order = np.concatenate((first, order[group[order] >= plan.shared]))
        level = self._load * self._step
        chosen = route_block(group, np.bincount(group), plan.cand_ptr, plan.cand, level,
                             self._step, order)
        self._load += np.bincount(chosen, minlength=len(self._load))
        return chosen

    def _plan(self, unique: I64, inverse: I64, times: F64) -> Candidates:
        """Candidates for a block's distinct keys, after updating the scheme's statistics."""
        raise NotImplementedError

    def _pairs(self, keys: I64) -> tuple[I64, I64]:
        """PKG's two hash choices of each key, as (cand_ptr, cand) with repeats removed."""
        n = len(self._workers)
        first = choice(keys, n, self.seed, 1)
        second = choice(keys, n, self.seed, 2)
        two = first != second
        cand = np.stack((first, second), axis=1).reshape(-1)
        keep = np.ones(len(cand), dtype=bool)
        keep[1::2] = two
        ptr = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(1 + two, out=ptr[1:])
        return ptr, cand[keep]


def distinct(keys: I64) -> tuple[I64, I64, I64]:
    """``np.unique(keys, return_inverse=True)`` plus the tuples sorted by (key, arrival).

    >>> [a.tolist() for a in distinct(np.array([5, 2, 5, 2, 9]))]
    [[2, 5, 9], [1, 0, 1, 0, 2], [1, 3, 0, 2, 4]]
    """
    size = len(keys)
    low, high = int(keys.min()), int(keys.max())
    if low >= 0 and high < (1 << 62) // size:  # one unstable sort of unique values is stable
        order = np.argsort(keys * size + np.arange(size))
    else:
        order = np.argsort(keys, kind="stable")
    ranked = keys[order]
    first = np.empty(size, dtype=bool)
    first[0] = True
    np.not_equal(ranked[1:], ranked[:-1], out=first[1:])
    inverse = np.empty(size, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ranked[first], inverse, order


class Candidates(NamedTuple):
    """The candidate lists of a block's distinct keys, as :func:`.waterfill.route_block` takes them.

    Groups ``0 … shared − 1`` are each shared by several keys (one list for all of them);
    the other groups belong to one key each, numbered in increasing key order — so the
    block's tuples sorted by (key, arrival) are sorted by group too, apart from the shared
    groups, whose tuples are put first in arrival order.
    """

    group_of_key: I64
    cand_ptr: I64
    cand: I64
    shared: int = 0


def join_groups(
    num_keys: int,
    per_key: list[tuple[I64, I64, I64]],
    shared: list[tuple[I64, I64]] | None = None,
) -> Candidates:
    """One :class:`Candidates` from disjoint key subsets.

    ``per_key`` parts are (indices of their distinct keys, cand_ptr over those keys, cand);
    ``shared`` parts are (indices of their keys, the one candidate list they all use). Every
    key must be in exactly one part.

    >>> c = join_groups(3, [(np.array([2, 0]), np.array([0, 2, 3]), np.array([4, 5, 6]))],
    ...                 [(np.array([1]), np.array([0, 1, 2]))])
    >>> c.group_of_key.tolist(), c.cand_ptr.tolist(), c.cand.tolist(), c.shared
    ([1, 0, 2], [0, 3, 4, 6], [0, 1, 2, 6, 4, 5], 1)
    """
    shared = [(keys, cand) for keys, cand in shared or [] if len(keys)]
    group_of_key = np.empty(num_keys, dtype=np.int64)
    sizes = np.zeros(num_keys, dtype=np.int64)
    own = np.ones(num_keys, dtype=bool)
    for number, (keys, _) in enumerate(shared):
        group_of_key[keys] = number
        own[keys] = False
    for keys, ptr, _ in per_key:
        sizes[keys] = np.diff(ptr)
    mine = np.flatnonzero(own)
    group_of_key[mine] = len(shared) + np.arange(len(mine))
    lengths = np.concatenate([[len(cand) for _, cand in shared], sizes[mine]]).astype(np.int64)
    cand_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=cand_ptr[1:])
    cand = np.empty(int(cand_ptr[-1]), dtype=np.int64)
    for number, (_, lst) in enumerate(shared):
        cand[cand_ptr[number]:cand_ptr[number + 1]] = lst
    for keys, ptr, part in per_key:
        if len(keys):
            each = np.diff(ptr)
            col = np.arange(len(part)) - np.repeat(ptr[:-1], each)
            cand[np.repeat(cand_ptr[group_of_key[keys]], each) + col] = part
    return Candidates(group_of_key, cand_ptr, cand, len(shared))
