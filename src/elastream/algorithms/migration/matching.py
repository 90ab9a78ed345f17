"""The cheapest node assignment for a fixed target partitioning (§4.2, §5.1 line 3).

Given current intervals ``I_0 … I_{n−1}`` (node ``i`` holds ``I_i``) and a target partitioning
``J_0 … J_{n′−1}``, assigning the ``J_k`` to nodes is a bipartite matching that maximises the
*gain* — the state of ``I_i ∩ J_k`` summed over matched pairs (§4.2); the migration cost is all
state minus the gain. Both sides are interval partitions of ``0 … m``, so every non-empty
``I_i ∩ J_k`` is one *piece* of their common refinement, and the pieces in task order form a
chain in which the pieces of one ``I_i`` (and of one ``J_k``) are consecutive. The matching is
then a choice of pieces with no two from the same run, solved by a dynamic program along the
pieces whose state is "is the current piece's ``I_i`` taken" × "is its ``J_k`` taken": O(n + n′)
time for one pair (:func:`match`, with the pairs), and vectorised over many pairs at once in
:func:`pair_gains` (O(N·(n + n′)) for N pairs; used by OMS and PMC, where Lemmas 5.1–5.2 make
the cost of a transition depend on the partitionings only).

:func:`assign_nodes` completes a matching into a node id per target interval: matched intervals
keep their node; the others take, in task order, the unmatched current nodes (lowest id first),
then new ids ``n, n+1, …``; current nodes left over are removed.

>>> prefix = np.r_[0.0, np.cumsum([1.0, 1, 1, 1, 1, 1])]
>>> match(np.array([0, 3, 6]), np.array([0, 2, 4, 6]), prefix)
(4.0, {0: 0, 2: 1})
>>> pair_gains(np.array([[0, 3, 6]]), np.array([[0, 2, 4, 6]]), prefix).tolist()
[4.0]
>>> assign_nodes(2, 3, {0: 0, 2: 1})
(0, 2, 1)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

_NONE = -np.inf


def _pieces(current: I64, target: I64, prefix: F64) -> list[tuple[int, int, float]]:
    """``(i, k, state of I_i ∩ J_k)`` for every non-empty piece, in task order."""
    cuts = np.union1d(current, target)
    out = []
    for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        i = int(np.searchsorted(current, lo, "right")) - 1
        k = int(np.searchsorted(target, lo, "right")) - 1
        out.append((i, k, float(prefix[hi] - prefix[lo])))
    return out


def match(current: I64, target: I64, prefix: F64) -> tuple[float, dict[int, int]]:
    """The largest gain and a matching ``{target interval: current node}`` achieving it.

    ``current``, ``target``: boundaries (``n + 1`` and ``n′ + 1`` of them, from 0 to ``m``);
    ``prefix``: prefix sums of the state (``m + 1``). Pairs of zero gain are left unmatched.
    """
    pieces = _pieces(np.asarray(current), np.asarray(target), prefix)
    # value[(used_i, used_k)] after each piece, and where it came from
    value: dict[tuple[bool, bool], float] = {(False, False): 0.0}
    trail: list[dict[tuple[bool, bool], tuple[tuple[bool, bool], bool]]] = []
    previous: tuple[int, int] | None = None
    for i, k, weight in pieces:
        same_i = previous is not None and previous[0] == i
        same_k = previous is not None and previous[1] == k
        nxt: dict[tuple[bool, bool], float] = {}
        back: dict[tuple[bool, bool], tuple[tuple[bool, bool], bool]] = {}
        for (used_i, used_k), v in value.items():
            carried = (used_i and same_i, used_k and same_k)
            if v > nxt.get(carried, _NONE):
                nxt[carried], back[carried] = v, ((used_i, used_k), False)
        if (False, False) in nxt and weight > 0:
            taken = nxt[(False, False)] + weight
            if taken > nxt.get((True, True), _NONE):
                nxt[(True, True)], back[(True, True)] = taken, (back[(False, False)][0], True)
        value, previous = nxt, (i, k)
        trail.append(back)
    best = max(value, key=lambda s: value[s])
    pairs: dict[int, int] = {}
    at = best
    for (i, k, _), back in zip(reversed(pieces), reversed(trail), strict=True):
        at, took = back[at]
        if took:
            pairs[k] = i
    return value[best], dict(sorted(pairs.items()))


def pair_gains(current: I64, target: I64, prefix: F64) -> F64:
    """The largest gain of every pair of rows ``(current[r], target[r])``, vectorised.

    ``current``: shape ``(N, L1)``, ``target``: ``(N, L2)``, each row non-decreasing boundaries
    from 0 to ``m`` (pad with ``m`` for empty intervals at the end). Same answer as
    :func:`match` for each row.
    """
    a = np.asarray(current, dtype=np.int64)
    b = np.asarray(target, dtype=np.int64)
    rows = a.shape[0]
    merged = np.concatenate([a, b], axis=1)
    order = np.argsort(merged, axis=1, kind="stable")
    cuts = np.take_along_axis(merged, order, axis=1)
    from_a = (order < a.shape[1]).astype(np.int64)
    # For a piece starting at cuts[t] < cuts[t+1], every boundary equal to cuts[t] sorts at or
    # before t, so these counts identify its I_i and J_k; they never decrease along t.
    count_a = np.cumsum(from_a, axis=1)
    count_b = np.arange(1, cuts.shape[1] + 1) - count_a
    weight = prefix[cuts[:, 1:]] - prefix[cuts[:, :-1]]
    ff = np.zeros(rows)
    tf = np.full(rows, _NONE)
    ft = np.full(rows, _NONE)
    tt = np.full(rows, _NONE)
    for t in range(weight.shape[1]):
        if t:
            si = count_a[:, t] == count_a[:, t - 1]
            sk = count_b[:, t] == count_b[:, t - 1]
            ff = np.maximum.reduce([ff, np.where(si, _NONE, tf), np.where(sk, _NONE, ft),
                                    np.where(si | sk, _NONE, tt)])
            tf, ft, tt = (np.maximum(np.where(si, tf, _NONE), np.where(si & ~sk, tt, _NONE)),
                          np.maximum(np.where(sk, ft, _NONE), np.where(sk & ~si, tt, _NONE)),
                          np.where(si & sk, tt, _NONE))
        tt = np.maximum(tt, ff + weight[:, t])
    gains: F64 = np.maximum.reduce([ff, tf, ft, tt])
    return gains


def assign_nodes(current_nodes: int, target_intervals: int,
                 pairs: Mapping[int, int]) -> tuple[int, ...]:
    """Node id of every target interval (module docstring).

    Matched intervals from ``pairs``; the rest in task order from the unmatched current nodes
    (lowest first), then new ids ``current_nodes, …``.
    """
    taken = set(pairs.values())
    spare = [i for i in range(current_nodes) if i not in taken]
    spare.reverse()
    fresh = current_nodes
    out = []
    for k in range(target_intervals):
        if k in pairs:
            out.append(pairs[k])
        elif spare:
            out.append(spare.pop())
        else:
            out.append(fresh)
            fresh += 1
    return tuple(out)
