"""Least-loaded choice for a whole block of tuples: the routing kernel of PKG, D-C, W-C and FISH.

**The per-tuple rule** all four schemes share (PKG, Nasir et al. ICDE 2015 §IV; D-C/W-C,
Nasir et al. ICDE 2016; FISH Algorithm 3 lines 12–18): a tuple whose key has the candidate
workers ``c_1, …, c_d`` goes to the candidate with the smallest *level* ``L_c``; ties go to
the earliest candidate in the list; then ``L_c += step_c``. Levels are the source's local
counts for PKG, D-C and W-C (``step = 1``) and FISH's estimated waiting time ``C_w × P_w``
(``step = P_w``, the seconds one tuple costs worker ``w``).

**The blocked rule** of :func:`route_block` routes a block of ``B`` tuples with a bounded
number of numpy calls. It aims at what the per-tuple rule reaches by the block's end — levels
as even as the candidate lists allow — and at spreading each worker's tuples over the block:

1. *Groups.* The caller groups the block's tuples by candidate list: one group per key, or one
   shared group for keys with the same list (W-C's and D-C's hot keys that may use every worker).
2. *Keys seen once in the block* take their least-level candidate (ties: earliest) under the
   levels as of the block's start — the per-tuple rule, blind to the rest of the block.
3. *Keys seen ``m ≥ 2`` times with at most two candidates* (PKG pairs) are then water-filled
   on the levels after step 2: a group's ``m`` tuples are split between its candidates so as
   to even out their levels, which is what the per-tuple rule does with ``m`` consecutive
   tuples of one key. Pairs that share a worker share its deficit: with ``λ`` the level all
   their tuples would reach if they could go anywhere among their workers and ``M_w`` their
   total demand on worker ``w``, group ``g`` sees a level ``L_w < λ`` as
   ``λ − (λ − L_w)·m_g/M_w``, so a deficit is filled once between them, not once by each.
4. *The other repeated keys* (hot keys with many candidates) are placed jointly, on the levels
   after step 3: the room each worker has below the common water level of their tuples is
   shared out by matrix scaling (Sinkhorn: group ``g`` gives worker ``w`` an amount
   ``a_g·b_w``, every group's total its demand, every worker's total its room), then one
   damped round in which every group re-fills against the others corrects groups whose
   candidates have too little room. A single group is water-filled exactly. Fractional
   amounts are rounded to whole tuples by largest remainders.
5. *Order within the block.* Worker ``w`` receives, over the block, its tuples of step 2 and
   its slots of steps 3–4; a group holding ``x`` of them gets levels evenly spread over ``w``'s
   fill ``[L_w, L_w + busy_w·step_w]``, and the group's tuples, in arrival order, take its
   slots in increasing level. Every worker's tuples are thus spread over the block, as with
   the per-tuple rule (which always feeds the lowest worker), not bunched at its start.
6. The caller adds the block's assignments to the levels once (``np.bincount``).

With ``B = 1`` every block is one key seen once, so the blocked rule *is* the per-tuple rule
(tests compare them tuple for tuple). A key only ever goes to its own candidates, whatever
``B``. On a Zipf(1.5) stream over 128 workers at 90% load the blocked rule keeps every
worker's tuple count within a few tuples of the per-tuple rule at each block end (W-C, FISH)
and the simulated mean latency within about one service time of it, for blocks of 2k–32k.
Cost per block: O(B log B + E) time and O(B + E) memory, ``E`` = the block's candidates in
total; about a hundred numpy calls, independent of ``B``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


def block_spans(position: int, length: int, block: int) -> list[tuple[int, int]]:
    """Block boundaries ``[start, stop)`` in a chunk, aligned to multiples of ``block``.

    ``position`` is the stream index of the chunk's first tuple. Aligning to the stream (not the
    chunk) makes routing independent of how the stream is cut into chunks, as long as every
    cut falls on a multiple of ``block``.

    >>> block_spans(6, 10, 4)
    [(0, 2), (2, 6), (6, 10)]
    """
    spans = []
    start = 0
    while start < length:
        stop = min(length, start + block - (position + start) % block)
        spans.append((start, stop))
        start = stop
    return spans


def dedupe(rows: I64) -> tuple[I64, I64]:
    """Candidate lists (cand_ptr, cand) from a matrix with one list per row.

    Repeated workers within a row are dropped; first occurrences keep their order.

    >>> ptr, cand = dedupe(np.array([[3, 3, 1], [2, 1, 2]]))
    >>> ptr.tolist(), cand.tolist()
    ([0, 2, 4], [3, 1, 2, 1])
    """
    order = np.argsort(rows, axis=1, kind="stable")
    ranked = np.take_along_axis(rows, order, axis=1)
    repeat = np.zeros(rows.shape, dtype=bool)
    np.put_along_axis(repeat, order[:, 1:], ranked[:, 1:] == ranked[:, :-1], axis=1)
    keep = ~repeat
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=ptr[1:])
    return ptr, rows[keep]


def water_level(level: F64, step: F64, amount: float) -> float:
    """The level ``λ`` with ``Σ max(0, λ − level)/step = amount``: where ``amount`` tuples fill to.

    >>> water_level(np.array([0.0, 2.0, 10.0]), np.ones(3), 4.0)
    3.0
    """
    order = np.argsort(level, kind="stable")
    lv, rate = level[order], 1.0 / step[order]
    cum_rate = np.cumsum(rate)
    cum_mass = np.cumsum(lv * rate)
    needed = lv * (cum_rate - rate) - (cum_mass - lv * rate)
    last = int(np.count_nonzero(needed < amount)) - 1
    return float((amount + cum_mass[last]) / cum_rate[last])


def route_block(
    group: I64, counts: I64, cand_ptr: I64, cand: I64, level: F64, step: F64,
    order: I64 | None = None,
) -> I64:
    """Worker position of every tuple of one block by the blocked rule (module docstring).

    Args:
        group: group of each tuple, ``0 ≤ group < G``, in arrival order.
        counts: tuples per group (``np.bincount(group)``, all ≥ 1).
        cand_ptr: group ``g``'s candidates are ``cand[cand_ptr[g]:cand_ptr[g+1]]`` (≥ 1 each,
            no repeats: see :func:`dedupe`), in preference order for ties.
        cand: candidate worker positions ``0 ≤ c < n``.
        level: current level of each of the ``n`` workers (not modified).
        step: how much one tuple raises each worker's level (> 0).
        order: the tuples' indices sorted by (group, arrival), if the caller has them.

    Key 0 (three tuples, candidates 0 and 1) and key 1 (one tuple, candidates 1 and 2), all
    levels 0: key 1 takes worker 1 (the first of two equal levels), then key 0 evens out
    workers 0 and 1 — two tuples to 0, one to 1 — spread over the block:

    >>> route_block(np.array([0, 0, 0, 1]), np.array([3, 1]), np.array([0, 2, 4]),
    ...             np.array([0, 1, 1, 2]), np.zeros(3), np.ones(3)).tolist()
    [0, 1, 0, 1]
    """
    sizes = np.diff(cand_ptr)
    entry_group = np.repeat(np.arange(len(counts)), sizes)
    out = np.empty(len(group), dtype=np.int64)
    once = counts[entry_group] == 1
    start_level, level = level, level.copy()
    singles = np.zeros(len(level))
    if once.any():
        chosen = _least_level(entry_group[once], cand[once], level)
        solo = counts[group] == 1
        tuple_of_group = np.empty(len(counts), dtype=np.int64)
        tuple_of_group[group[solo]] = np.flatnonzero(solo)
        out[tuple_of_group[entry_group[once][_segment_starts(entry_group[once])]]] = chosen
        singles = np.bincount(chosen, minlength=len(level)).astype(np.float64)
        level += singles * step
    if not once.all():
        if order is None:
            order = np.argsort(group * len(group) + np.arange(len(group)))
        members = order[counts[group[order]] > 1]
        _fill_repeated(members, counts, entry_group[~once], cand[~once], level, step, out,
                       start_level, singles)
    return out


def _segment_starts(ids: I64) -> I64:
    """Index of the first element of each run of equal, contiguous ``ids``."""
    starts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    return np.concatenate((np.zeros(1, dtype=np.int64), starts))


def _least_level(entry_group: I64, cand: I64, level: F64) -> I64:
    """Per group (contiguous entries), the first candidate of least level."""
    lv = level[cand]
    starts = _segment_starts(entry_group)
    lengths = np.diff(np.append(starts, len(cand)))
    is_min = lv == np.repeat(np.minimum.reduceat(lv, starts), lengths)
    hits = np.flatnonzero(is_min)
    first = hits[_segment_starts(entry_group[hits])]
    return cand[first]


def _fill_repeated(
    members: I64, counts: I64, entry_group: I64, cand: I64, level: F64, step: F64, out: I64,
    start_level: F64, singles: F64,
) -> None:
    """Steps 3–5 of the module docstring for the groups seen more than once.

    Writes ``out`` at ``members``: those groups' tuples sorted by group, then arrival.
    """
    n = len(level)
    starts, sizes = _run_starts(entry_group)
    groups = entry_group[starts]
    dense = np.repeat(np.arange(len(groups)), sizes)
    demand = counts[groups]
    slots = np.zeros(len(cand), dtype=np.int64)
    level = level.copy()
    for pairs in (True, False):  # keys with at most two candidates first, then all the others
        chosen = (sizes <= 2) == pairs
        if not chosen.any():
            continue
        entries = np.flatnonzero(chosen[dense])
        phase = np.repeat(np.arange(int(chosen.sum())), sizes[chosen])
        fill = _water_fill(phase, cand[entries], level, step, demand[chosen], joint=not pairs)
        slots[entries] = fill
        level += np.bincount(cand[entries], weights=fill, minlength=n) * step
    # Order each group's slots by the level its worker has when the slot is filled, all groups
    # of the block together: worker w's block fill (its single tuples and every group's slots)
    # spans [start_level_w, start_level_w + busy_w * step_w], and a group with x of w's slots
    # takes them evenly spread over that span; the group's tuples take its slots in arrival
    # order. So every worker receives its tuples spread over the block, as the per-tuple rule
    # (which always feeds the currently lowest worker) would, not in a burst at its start.
    total = int(slots.sum())
    slot_entry = np.repeat(np.arange(len(slots)), slots)
    t = np.arange(total) - np.repeat(np.cumsum(slots) - slots, slots)
    busy = np.bincount(cand, weights=slots, minlength=n) + singles
    spread = (busy * step)[cand] / np.maximum(slots, 1)
    slot_level = start_level[cand][slot_entry] + (t + 0.5) * spread[slot_entry]
    sort_key = dense[slot_entry] + _unit(slot_level)
    out[members] = cand[slot_entry[np.argsort(sort_key)]]


def _water_fill(
    dense: I64, cand: I64, level: F64, step: F64, demand: I64, *, joint: bool
) -> I64:
    """How many of each group's ``demand`` tuples go to each of its candidates.

    Entries are grouped by ``dense``; the result is in whole tuples. One group alone is
    water-filled exactly; several
    are balanced jointly (:func:`_joint_fill`) or, for pairs, each on levels that show it only
    its share of every worker's deficit (:func:`_shared_fill`).
    """
    want = demand.astype(np.float64)
    if len(want) == 1:
        fill = _continuous_fill(dense, level[cand], step[cand], want)
    elif joint:
        fill = _joint_fill(dense, cand, level, step, want)
    else:
        fill = _shared_fill(dense, cand, level, step, want)
    return _round_fill(dense, fill, demand)


def _shared_fill(dense: I64, cand: I64, level: F64, step: F64, want: F64) -> F64:
    """Each group water-fills alone, on levels that show it its share of each deficit.

    A worker's deficit below the common level ``λ`` is scaled by the group's share
    ``m_g / M_w`` of the demand on that worker, so that groups sharing a worker fill its
    deficit once between them rather than once each.
    """
    n = len(level)
    usable = np.bincount(cand, weights=want[dense], minlength=n)
    lam = water_level(level[usable > 0], step[usable > 0], float(want.sum()))
    lv = level[cand]
    seen = np.where(lv < lam, lam - (lam - lv) * want[dense] / usable[cand], lv)
    return _continuous_fill(dense, seen, step[cand], want)


SINKHORN_ROUNDS = 16
"""Matrix-scaling rounds of :func:`_joint_fill`."""


def _joint_fill(dense: I64, cand: I64, level: F64, step: F64, want: F64) -> F64:
    """Fractional fill of several groups whose candidate lists overlap (step 4).

    It aims at the levels the per-tuple rule converges to: every worker the groups can reach
    ends at one common water level where the groups' lists allow it.

    First the *room* of each worker below the common level ``λ`` (where the groups' total
    would fill their workers to) is shared out by matrix scaling (Sinkhorn): group ``g`` gives
    worker ``w`` the amount ``a_g·b_w``, with ``a`` making every group's total its demand and
    ``b`` every worker's total its room (a group none of whose candidates has room fills its
    own candidates). Then every group re-fills its own candidates once against the others'
    fill: matrix scaling spreads a group with more tuples than its candidates have room by
    the scaling factors, not evenly, and this evens it out.
    """
    n = len(level)
    lv, st = level[cand], step[cand]
    usable = np.bincount(cand, minlength=n) > 0
    lam = water_level(level[usable], step[usable], float(want.sum()))
    room = np.where(usable, np.maximum(lam - level, 0.0) / step, 0.0)
    has_room = room[cand] > 0
    d_in, c_in = dense[has_room], cand[has_room]
    scale, a = room.copy(), np.zeros(len(want))
    for _ in range(SINKHORN_ROUNDS):
        reach = np.bincount(d_in, weights=scale[c_in], minlength=len(want))
        np.divide(want, reach, out=a, where=reach > 0)
        taken = np.bincount(c_in, weights=a[d_in], minlength=n)
        np.divide(room, taken, out=scale, where=taken > 0)
    fill = np.zeros(len(cand))
    fill[has_room] = a[d_in] * scale[c_in]
    got = np.bincount(dense, weights=fill, minlength=len(want))
    stuck = got <= 0
    if stuck.any():  # no candidate below λ: the group fills its own candidates
        solo = _continuous_fill(dense, lv, st, want)
        fill = np.where(stuck[dense], solo, fill)
        got = np.bincount(dense, weights=fill, minlength=len(want))
    fill *= (want / got)[dense]
    others = np.bincount(cand, weights=fill, minlength=n)[cand] - fill
    return _continuous_fill(dense, lv + others * st, st, want)


def _continuous_fill(dense: I64, seen: F64, step: F64, want: F64) -> F64:
    """Fractional water-fill of each group's ``want`` onto its candidates' ``seen`` levels."""
    sizes = np.bincount(dense)
    order = np.argsort(dense + _unit(seen))  # by group, then level (ties: any order)
    lv_s, rate = seen[order], 1.0 / step[order]
    starts = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(sizes)[:-1]))
    cum_rate = np.cumsum(rate) - rate
    cum_mass = np.cumsum(lv_s * rate) - lv_s * rate
    cum_rate -= np.repeat(cum_rate[starts], sizes)
    cum_mass -= np.repeat(cum_mass[starts], sizes)
    active = lv_s * cum_rate - cum_mass < want[dense]
    last = starts + np.bincount(dense, weights=active).astype(np.int64) - 1
    lam_g = (want + cum_mass[last] + lv_s[last] * rate[last]) / (cum_rate[last] + rate[last])
    fill = np.empty(len(seen))
    fill[order] = np.where(active, (lam_g[dense] - lv_s) * rate, 0.0)
    return fill


def _round_fill(dense: I64, fill: F64, demand: I64) -> I64:
    """Integer counts summing to each group's demand: floors, then the largest remainders."""
    base = np.floor(fill + 1e-9).astype(np.int64)
    missing = demand - np.bincount(dense, weights=base, minlength=len(demand)).astype(np.int64)
    if missing.any():
        ranked = np.argsort(dense + 0.5 * (1.0 - (fill - base)))  # largest remainder first
        rank = np.arange(len(ranked)) - np.repeat(*_run_starts(dense[ranked]))
        add = ranked[rank < missing[dense[ranked]]]
        base[add] += 1
        over = missing < 0
        if over.any():  # float rounding only
            cut = ranked[::-1]
            rank = np.arange(len(cut)) - np.repeat(*_run_starts(dense[cut]))
            take = cut[(rank < -missing[dense[cut]]) & (base[cut] > 0)]
            base[take] -= 1
    return base


def _unit(values: F64) -> F64:
    """``values`` mapped increasingly into ``[0, 0.5]``.

    Added to a group number, they sort by group first, then by value.
    """
    low, high = float(values.min()), float(values.max())
    return (values - low) * (0.5 / (high - low)) if high > low else np.zeros(len(values))


def _run_starts(ids: I64) -> tuple[I64, I64]:
    """For contiguous runs of equal ``ids``: (start index of each run, run lengths)."""
    starts = _segment_starts(ids)
    return starts, np.diff(np.append(starts, len(ids)))
