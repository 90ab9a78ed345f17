"""Every partitioning of the tasks into intervals that meets τ (the search space of §5).

OMS (§5.1, Fig. 8 line 2) and PMC (§5.2, Fig. 9 lines 3 and 5) range over "each partitioning of
the m tasks into n intervals that satisfies load balancing". By Lemmas 5.1–5.2 only the
partitioning matters, not which node holds which interval, and an empty interval is just an idle
node; so a partitioning for ``n`` nodes is a set of at most ``n − 1`` distinct cuts in
``1 … m−1`` with every interval's work ``≤ (1+τ)·W/n``. It is stored as ``n + 1`` boundaries,
the cuts in order and the empty intervals at the end (padded with ``m``): the canonical form
used wherever partitionings are compared.

:func:`feasible_partitionings` lists them all by a depth-first search that never enters a dead
end: a prefix ending at cut ``b`` is extended only while the fewest intervals that can still
cover ``[b, m)`` (:func:`cover_counts`, greedy and exact) fit in the intervals left. Time is
O(m) per partitioning listed; their number grows like ``C(m−1, n−1)``, so ``limit`` (a count)
stops the search with :class:`~elastream.core.errors.OptionError` when there are more.

>>> feasible_partitionings(np.array([1.0, 1.0, 1.0, 1.0]), 2, capacity=3.0).tolist()
[[0, 1, 4], [0, 2, 4], [0, 3, 4]]
>>> canonical(np.array([0, 2, 2, 4]), 4).tolist()
[0, 2, 4, 4]
"""

from __future__ import annotations

import numpy as np

from elastream.algorithms.migration.intervals import F64, I64, LOAD_RTOL
from elastream.core.errors import OptionError

_FAR = np.iinfo(np.int64).max // 4


def reach(work: F64, capacity: float) -> I64:
    """``reach[b]``: the farthest end ``x`` such that ``[b, x)`` fits in ``capacity``."""
    load = np.r_[0.0, np.cumsum(work)]
    far: I64 = np.searchsorted(load, load + capacity * (1 + LOAD_RTOL), "right") - 1
    return far


def cover_counts(work: F64, capacity: float) -> I64:
    """``need[b]``: fewest intervals of work ``≤ capacity`` covering ``[b, m)`` (huge if none).

    >>> cover_counts(np.array([1.0, 1.0, 1.0]), 2.0).tolist()
    [2, 1, 1, 0]
    """
    m = work.size
    far = reach(work, capacity)
    need = np.full(m + 1, _FAR, dtype=np.int64)
    need[m] = 0
    for b in range(m - 1, -1, -1):
        if far[b] > b:
            need[b] = min(_FAR, 1 + need[far[b]])
    return need


def feasible_partitionings(work: F64, nodes: int, *, capacity: float,
                           limit: int = 100_000) -> I64:
    """All partitionings for ``nodes`` nodes meeting ``capacity``.

    Canonical, in lexicographic order, shape ``(count, nodes + 1)``; raises
    :class:`OptionError` past ``limit`` of them.
    """
    m = work.size
    far = reach(work, capacity)
    need = cover_counts(work, capacity)
    out: list[list[int]] = []
    if need[0] > nodes:
        return np.empty((0, nodes + 1), dtype=np.int64)
    stack: list[tuple[int, list[int]]] = [(0, [0])]
    while stack:
        at, cuts = stack.pop()
        left = nodes - (len(cuts) - 1)  # intervals still to place, including [at, …)
        if far[at] >= m:
            out.append(cuts + [m] * (nodes + 1 - len(cuts)))
            if len(out) > limit:
                raise OptionError("limit", f"is exceeded: more than {limit} partitionings of "
                                  f"{m} tasks for {nodes} nodes meet the load bound", limit)
        # next cut x: [at, x) fits, and [x, m) can still be covered by left − 1 intervals
        for x in range(min(int(far[at]), m - 1), at, -1):
            if need[x] <= left - 1:
                stack.append((x, [*cuts, x]))
    result = np.array(out, dtype=np.int64).reshape(-1, nodes + 1)
    order = np.lexsort(result.T[::-1])
    return result[order]


def canonical(bounds: I64, m: int, width: int | None = None) -> I64:
    """The canonical boundaries of a partitioning.

    Its distinct cuts, then ``m`` as padding up to ``width`` entries (default: as many as given).
    """
    b = np.asarray(bounds, dtype=np.int64)
    cuts = np.unique(b[(b > 0) & (b < m)])
    size = b.size if width is None else width
    out = np.full(size, m, dtype=np.int64)
    out[0] = 0
    out[1:1 + cuts.size] = cuts
    return out
