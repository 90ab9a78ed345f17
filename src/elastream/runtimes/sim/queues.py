"""Exact FIFO queues of many workers at once: the Lindley recursion without a loop per tuple.

A worker serves its tuples one at a time, in the order they reach it. Tuple ``i`` of one
worker, arriving at ``A_i`` and needing ``s_i`` of service, departs at (Lindley)::

    D_i = max(A_i, D_{i-1}) + s_i

Unrolled, with ``C_i = s_1 + … + s_i`` (``C_0 = 0``) and ``D_0`` the departure carried over
from earlier chunks (:data:`IDLE` if none)::

    D_i = C_i + max(D_0, max_{1≤j≤i} (A_j − C_{j−1}))

which is a cumulative sum and a cumulative maximum (``np.maximum.accumulate``). The tuples of
a chunk are grouped by worker with one stable sort, and a single cumulative maximum runs over
all workers at once: each worker's values are lifted by a per-worker offset larger than the
range of the values, so a maximum never leaks from one worker into the next.

Time is integer nanoseconds ("ticks") throughout. Integer sums have no rounding, so the
unrolled form gives exactly the numbers the per-tuple recursion gives — the oracle tests
compare them for equality — and a float64 clock would not (its sums depend on their order).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]

TICKS_PER_SECOND = 1_000_000_000
"""Ticks are nanoseconds."""

IDLE = np.iinfo(np.int64).min // 4
"""Departure carry of a worker that has served nothing yet (far below any arrival, and far
enough from the int64 limit that adding service times cannot overflow)."""

_MAX_LIFT = 1 << 62


def to_ticks(seconds: npt.ArrayLike) -> I64:
    """Seconds → integer nanoseconds, rounded to the nearest (ties to even).

    Exact to the nanosecond for times below about 10⁶ s (float64 keeps 53 bits).

    >>> to_ticks([0.0, 1.5e-9, 2.5e-9, 1.0]).tolist()
    [0, 2, 2, 1000000000]
    """
    ticks: I64 = np.rint(np.asarray(seconds, dtype=np.float64) * TICKS_PER_SECOND).astype(np.int64)
    return ticks


def fifo_departures(arrivals: I64, services: I64, workers: I64, carry: I64) -> tuple[I64, I64]:
    """Departure tick of each tuple of a chunk, and each worker's last departure after it.

    Args:
        arrivals: arrival tick of each tuple, in the order the tuples reach their workers.
        services: service ticks of each tuple (≥ 0).
        workers: worker id of each tuple, in ``[0, len(carry))``.
        carry: last departure tick of each worker before this chunk (:data:`IDLE` if none).

    Returns:
        ``(departures, carry_after)``: departures in the input order, and ``carry`` with the
        last departure of every worker that got a tuple in this chunk (a new array).

    >>> d, c = fifo_departures(np.array([0, 0, 5, 1]), np.array([3, 3, 3, 2]),
    ...                        np.array([0, 0, 0, 1]), np.array([IDLE, 4]))
    >>> d.tolist(), c.tolist()
    ([3, 6, 9, 6], [9, 6])
    """
    carry_after = carry.copy()
    if len(arrivals) == 0:
        return np.empty(0, dtype=np.int64), carry_after
    order = _group_by_worker(workers, len(carry))
    w = workers[order]
    a = arrivals[order]
    s = services[order]
    counts = np.bincount(workers, minlength=len(carry))
    used = np.flatnonzero(counts)
    lengths = counts[used]
    first = np.cumsum(lengths) - lengths  # sorted position of each used worker's first tuple
    before = np.cumsum(s) - s  # service of all earlier tuples in sorted order
    served_before = before - np.repeat(before[first], lengths)  # C_{j-1}, per worker
    peak = _segmented_max_accumulate(a - served_before, lengths)
    d_sorted = served_before + s + np.maximum(peak, carry[w])
    departures = np.empty_like(d_sorted)
    departures[order] = d_sorted
    carry_after[used] = d_sorted[first + lengths - 1]
    return departures, carry_after


def _group_by_worker(workers: I64, num_workers: int) -> npt.NDArray[np.intp]:
    """Stable order grouping the tuples by worker (a radix sort for up to 32767 workers)."""
    if num_workers <= np.iinfo(np.int16).max:
        return np.argsort(workers.astype(np.int16), kind="stable")
    return np.argsort(workers, kind="stable")


def _segmented_max_accumulate(values: I64, lengths: I64) -> I64:
    """Running maximum restarted at each segment; segments are consecutive, of ``lengths``."""
    low = int(values.min())
    span = int(values.max()) - low + 1
    if span * len(lengths) >= _MAX_LIFT:  # the lift would overflow int64: one segment at a time
        return _segmented_max_accumulate_loop(values, lengths)
    lift = np.repeat(np.arange(len(lengths), dtype=np.int64) * span, lengths)
    lifted = values - low + lift
    np.maximum.accumulate(lifted, out=lifted)
    lifted -= lift
    lifted += low
    return lifted


def _segmented_max_accumulate_loop(values: I64, lengths: I64) -> I64:
    out = np.empty_like(values)
    stops = np.cumsum(lengths)
    for start, stop in zip(stops - lengths, stops, strict=True):
        np.maximum.accumulate(values[start:stop], out=out[start:stop])
    return out
