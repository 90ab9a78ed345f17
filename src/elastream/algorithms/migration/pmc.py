"""PMC: projected migration costs by value iteration over partitionings (Ding et al., §5.2, Fig. 9).

The *migration transition matrix* (MTM) ``M`` gives, for the node count ``c`` now, the
probability ``M[c][c′]`` that the next migration goes to ``c′`` nodes (row and column ``i`` stand
for ``i + 1`` nodes; a row of zeros means the count is never left). For a partitioning ``P`` of
the tasks for ``c`` nodes, its *projected migration cost* ``C[P]`` is the expected discounted
cost of all future migrations (Definitions 5.2–5.3) when each one picks its target knowing only
the next node count:

    C[P] = Σ_{c′} M[c][c′] · min_{P′ for c′ nodes meeting τ} ( cost(P, P′) + γ · C[P′] )

with ``cost(P, P′)`` the cheapest migration between the two partitionings
(:func:`~.matching.pair_gains`; by Lemma 5.2 node labels do not matter). This is the Bellman
equation of the Markov decision process the paper invokes; Fig. 9 line 7 as printed sums over
every ``P′`` without the ``min`` — we read it as the MDP's update, which the text says it
computes. (Definition 5.3's expectation of *hindsight*-optimal sequence costs is a lower bound of
``C``; no planner that learns each count only when it happens can reach it.) ``0 ≤ γ < 1`` so
the infinite sum converges.

:func:`precompute_pmc` runs value iteration from ``C = 0``: each sweep maps a pure function over
blocks of states (:func:`backup_rows`; the migration costs between states are mapped the same
way first, :func:`cost_rows`), through ``map_fn`` — builtins ``map`` by default, or any
executor with ``map``'s contract (same order), e.g. the Spark map of
``elastream.runtimes.spark.pmc_map``, as the paper ran PMC on Spark. It stops when no value
changes by more than ``tol`` (state units; default 1e-9 of all state); the values are then
within ``γ/(1−γ)·tol`` of the fixed point. Time: O(N²·n) for the costs (``N`` states, ``n`` the
largest count) plus O(N²) a sweep, about ``log(tol)/log(γ)`` sweeps; memory O(N²).

**State spaces.** The paper pre-computes "every partitioning of the m tasks into up to n_max
task intervals". That is :func:`exhaustive_space` — exact, and feasible only for small ``m``
(``C(63, 15) ≈ 10¹⁴`` partitionings of 64 tasks for 16 nodes). For larger instances
:func:`closure_space` builds the partitionings single-step migration reaches: from seed
partitionings, SSM to every count the MTM can go to next, repeated until nothing new appears or
``limit`` states exist. When the space is *closed* (no limit hit), following SSM never leaves
it, so the MTM-aware policy over it costs no more, in expectation, than SSM (it minimises over a
set that contains SSM's choices); the state space is a restriction of the paper's, stated in
every result (``exhaustive``, ``closed``).

>>> work = np.array([1.0, 1.0, 1.0, 1.0]); state = np.array([1.0, 2.0, 2.0, 1.0])
>>> mtm = check_mtm([[0, 1], [1, 0]])                     # 1 ↔ 2 nodes, alternating
>>> space = exhaustive_space(work, 0.5, [1, 2])
>>> space.counts.tolist(), space.bounds.tolist()
([1, 2, 2, 2], [[0, 4, 4], [0, 1, 4], [0, 2, 4], [0, 3, 4]])
>>> pmc = precompute_pmc(space, work, state, 0.5, mtm, gamma=0.5)
>>> [round(v, 6) for v in pmc.values.tolist()]  # moving a light end task: 1/(1−γ) = 2
[2.0, 2.0, 4.0, 2.0]
>>> pmc.converged
True
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Final

import numpy as np

from elastream.algorithms.migration import ssm
from elastream.algorithms.migration.intervals import F64, I64
from elastream.algorithms.migration.matching import pair_gains
from elastream.algorithms.migration.partitions import canonical, feasible_partitionings
from elastream.core import rules
from elastream.core.errors import OptionError

MapFn = Callable[[Callable[[range], F64], Iterable[range]], Iterable[F64]]
"""``map_fn(f, blocks)``: ``f`` applied to every block, results in the same order."""

PAIRS_PER_TASK: Final = 1 << 16
"""About this many state pairs per mapped block (bounds the memory of one task)."""
DEFAULT_LIMIT: Final = 2000


def check_mtm(matrix: object) -> F64:
    """The MTM as a float matrix; raises :class:`OptionError` naming the bad row or cell.

    Square, entries finite and ``>= 0``, each row summing to 1 (within 1e-6) or all zero.
    """
    try:
        m = np.array(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        raise OptionError("mtm", "must be a square list of lists of numbers", matrix) from None
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise OptionError("mtm", "must be a square list of lists of numbers (row i: i+1 nodes)",
                          list(m.shape))
    bad = ~np.isfinite(m) | (m < 0)
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        raise OptionError(f"mtm[{r}][{c}]", "must be a finite probability >= 0", float(m[r, c]))
    sums = m.sum(axis=1)
    for r, total in enumerate(sums.tolist()):
        if total != 0 and abs(total - 1) > 1e-6:
            raise OptionError(f"mtm[{r}]", "must sum to 1 (or be all zero: never left)", total)
    m.setflags(write=False)
    return m


def reachable(mtm: F64, start: int) -> list[int]:
    """Node counts the MTM can reach from ``start`` in one or more migrations, ascending."""
    seen: set[int] = set()
    todo = [start]
    while todo:
        row = mtm[todo.pop() - 1]
        for c in (np.flatnonzero(row > 0) + 1).tolist():
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return sorted(seen)


@dataclass(frozen=True, eq=False)
class StateSpace:
    """Partitionings with their node counts, grouped by count (ascending).

    ``bounds[i]``: canonical boundaries (:mod:`.partitions`), padded with ``m`` to the widest
    count + 1; ``exhaustive``: every partitioning meeting τ of every count in it;
    ``closed``: SSM from any state to any count the MTM gives it lands in the space.
    """

    counts: I64
    bounds: I64
    exhaustive: bool
    closed: bool

    def __len__(self) -> int:
        return int(self.counts.size)

    def index(self, count: int, bounds: I64) -> int | None:
        """Position of the partitioning ``bounds`` for ``count`` nodes, if it is a state."""
        key = canonical(bounds, int(self.bounds[0, -1]), self.bounds.shape[1])
        rows = np.flatnonzero(self.counts == count)
        hit = rows[np.all(self.bounds[rows] == key, axis=1)]
        return int(hit[0]) if hit.size else None


def _space(entries: Sequence[tuple[int, I64]], m: int, *, exhaustive: bool,
           closed: bool) -> StateSpace:
    width = max(c for c, _ in entries) + 1
    order = sorted(range(len(entries)), key=lambda i: (entries[i][0],
                                                       entries[i][1].tolist()))
    counts = np.array([entries[i][0] for i in order], dtype=np.int64)
    bounds = np.stack([canonical(entries[i][1], m, width) for i in order])
    return StateSpace(counts=counts, bounds=bounds, exhaustive=exhaustive, closed=closed)


def exhaustive_space(work: F64, tau: float, counts: Iterable[int], *,
                     limit: int = DEFAULT_LIMIT) -> StateSpace:
    """Every partitioning meeting τ for each count (Fig. 9 line 3).

    Raises :class:`OptionError` past ``limit`` states in all, or when a count has none.
    """
    m, total = work.size, float(work.sum())
    entries: list[tuple[int, I64]] = []
    for c in sorted(set(counts)):
        found = feasible_partitionings(work, c, capacity=(1 + tau) * total / c,
                                       limit=max(limit - len(entries), 0))
        if not len(found):
            raise OptionError("mtm", f"reaches {c} nodes, where no partitioning meets tau "
                              f"= {tau:g}", c)
        entries.extend((c, row) for row in found)
    return _space(entries, m, exhaustive=True, closed=True)


def closure_space(work: F64, state: F64, tau: float, mtm: F64,
                  seeds: Sequence[tuple[int, I64]], *, limit: int = DEFAULT_LIMIT) -> StateSpace:
    """The partitionings SSM reaches from ``seeds``, breadth first, up to ``limit`` of them.

    ``seeds`` are ``(count, bounds)`` pairs meeting τ; from each state SSM migrates to every
    count ``c′`` with ``M[c][c′] > 0``.
    """
    m, total = work.size, float(work.sum())
    prefix = np.r_[0.0, np.cumsum(state)]
    found: dict[tuple[int, bytes], I64] = {}
    queue: deque[tuple[int, I64]] = deque()

    def add(count: int, bounds: I64) -> None:
        b = canonical(bounds, m, count + 1)
        key = (count, b.tobytes())
        if key not in found and len(found) < limit:
            found[key] = b
            queue.append((count, b))

    for count, bounds in seeds:
        add(count, np.asarray(bounds, dtype=np.int64))
    closed = True
    while queue:
        count, bounds = queue.popleft()
        for nxt in (np.flatnonzero(mtm[count - 1] > 0) + 1).tolist():
            solution = ssm.solve(work, prefix, bounds, nxt, (1 + tau) * total / nxt)
            if solution is None:
                raise OptionError("mtm", f"moves to {nxt} nodes, where no partitioning meets "
                                  f"tau = {tau:g}", nxt)
            b = canonical(solution.bounds, m, nxt + 1)
            if (nxt, b.tobytes()) not in found:
                if len(found) >= limit:
                    closed = False
                    continue
                add(nxt, b)
    return _space([(c, b) for (c, _), b in found.items()], m, exhaustive=False, closed=closed)


@dataclass(frozen=True, eq=False)
class ProjectedCosts:
    """PMC's result: ``values[i]`` = ``C`` of ``space`` state ``i`` (state units).

    With the inputs it was computed for and how the iteration ended.
    """

    space: StateSpace
    values: F64
    work: F64
    state: F64
    tau: float
    mtm: F64
    gamma: float
    iterations: int
    residual: float
    converged: bool

    def backup(self, bounds: I64, count: int) -> F64:
        """Projected cost of partitionings ``bounds`` (rows) of ``count`` nodes, one step.

        The right-hand side of the Bellman equation through the space, for any partitionings.
        """
        rows = np.atleast_2d(np.asarray(bounds, dtype=np.int64))
        prefix = np.r_[0.0, np.cumsum(self.state)]
        costs = np.stack([_costs_to_space(r, self.space.bounds, prefix) for r in rows])
        probs = _probabilities(np.full(len(rows), count), self.space, self.mtm)
        return _backup(costs, self.values, probs, _group_starts(self.space), self.gamma)


def precompute_pmc(space: StateSpace, work: F64, state: F64, tau: float, mtm: F64, gamma: float,
                   *, map_fn: MapFn = map, tol: float | None = None,
                   max_iterations: int = 10_000, costs: F64 | None = None) -> ProjectedCosts:
    """Value iteration for ``C`` over ``space`` (module docstring).

    The per-block work is :func:`cost_rows` (unless ``costs``, from :func:`migration_costs`, is
    given: the same space and state, e.g. for several γ) then :func:`backup_rows`, through
    ``map_fn``.
    """
    gamma = rules.number("gamma", gamma, below=1)
    rules.integer("max_iterations", max_iterations)
    prefix = np.r_[0.0, np.cumsum(state)]
    tol = 1e-9 * max(float(prefix[-1]), 1.0) if tol is None else rules.number("tol", tol, above=0)
    probs = _probabilities(space.counts, space, mtm)
    n = len(space)
    blocks = _blocks(n)
    if costs is None:
        costs = migration_costs(space, state, map_fn=map_fn)
    elif costs.shape != (n, n):
        raise OptionError("costs", f"must be the {n} x {n} migration costs of the space",
                          list(costs.shape))
    starts = _group_starts(space)
    values = np.zeros(n)
    residual, iterations = math.inf, 0
    while iterations < max_iterations and residual > tol:
        update = partial(backup_rows, costs=costs, values=values, probs=probs, starts=starts,
                         gamma=gamma)
        new = np.concatenate(list(map_fn(update, blocks)))
        residual = float(np.max(np.abs(new - values))) if n else 0.0
        values, iterations = new, iterations + 1
    values.setflags(write=False)
    return ProjectedCosts(space=space, values=values, work=work, state=state, tau=tau, mtm=mtm,
                          gamma=gamma, iterations=iterations, residual=residual,
                          converged=residual <= tol)


def migration_costs(space: StateSpace, state: F64, *, map_fn: MapFn = map) -> F64:
    """The cheapest migration cost between every two states (``N × N``, read-only).

    Computed by :func:`cost_rows` over blocks of states through ``map_fn``.
    """
    prefix = np.r_[0.0, np.cumsum(state)]
    n = len(space)
    parts = list(map_fn(partial(cost_rows, bounds=space.bounds, prefix=prefix), _blocks(n)))
    costs = np.concatenate(parts) if parts else np.empty((0, 0))
    costs.setflags(write=False)  # fixed for the space: an executor may ship it once (Spark)
    return costs


def _blocks(n: int) -> list[range]:
    step = max(1, PAIRS_PER_TASK // max(n, 1))
    return [range(lo, min(lo + step, n)) for lo in range(0, n, step)]


def cost_rows(rows: range, *, bounds: I64, prefix: F64) -> F64:
    """Migration cost from each state in ``rows`` to every state (one mapped task; pure)."""
    return np.stack([_costs_to_space(bounds[i], bounds, prefix) for i in rows]) if len(rows) \
        else np.empty((0, bounds.shape[0]))


def backup_rows(rows: range, *, costs: F64, values: F64, probs: F64, starts: I64,
                gamma: float) -> F64:
    """One value-iteration update of the states in ``rows`` (one mapped task; pure)."""
    return _backup(costs[rows.start:rows.stop], values, probs[rows.start:rows.stop], starts,
                   gamma)


def _costs_to_space(bounds: I64, space_bounds: I64, prefix: F64) -> F64:
    rows = np.broadcast_to(bounds, (space_bounds.shape[0], bounds.size))
    costs: F64 = prefix[-1] - pair_gains(rows, space_bounds, prefix)
    return costs


def _backup(costs: F64, values: F64, probs: F64, starts: I64, gamma: float) -> F64:
    if costs.shape[1] == 0:
        return np.zeros(costs.shape[0])
    best = np.minimum.reduceat(costs + gamma * values[None, :], starts, axis=1)
    out: F64 = (probs * best).sum(axis=1)
    return out


def _group_starts(space: StateSpace) -> I64:
    starts: I64 = np.flatnonzero(np.r_[True, space.counts[1:] != space.counts[:-1]])
    return starts


def _probabilities(counts: I64, space: StateSpace, mtm: F64) -> F64:
    """``probs[i, g]`` = M[count of row i][count of group g]; every move must have a group."""
    groups = space.counts[_group_starts(space)] if len(space) else np.empty(0, np.int64)
    size = mtm.shape[0]
    out = np.zeros((counts.size, groups.size))
    for c in np.unique(counts).tolist():
        if c > size:
            raise OptionError("mtm", f"must have a row for {c} nodes (it is {size} x {size})",
                              size)
        row = mtm[c - 1]
        moves = set((np.flatnonzero(row > 0) + 1).tolist())
        missing = moves - set(groups.tolist())
        if missing:
            raise OptionError("mtm", f"moves from {c} to {min(missing)} nodes, which the state "
                              "space does not cover", sorted(missing))
        out[counts == c] = row[groups - 1]
    return out
