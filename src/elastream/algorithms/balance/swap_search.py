"""Swap search: a greedy descent by single migrations and pairwise swaps of key groups.

It seeds the ``milp`` planner (:mod:`elastream.algorithms.balance.milp`) with a starting
solution better than Flux's, which a MILP solver given a few seconds on a large instance does not
find on its own (ALBIC §5.1 gives CPLEX "a few seconds"; HiGHS needs far longer to close the gap).

Each step looks at the ``T = 3`` slots that deviate most from the mean and evaluates, all at once
with numpy, every feasible

- *migration* of one of their key groups to any other slot, or of any key group onto them, and
- *swap* of one of their key groups with one on a complementary slot (the 16 slots whose
  deviation is most opposite), which moves the difference of two loads — the fine adjustment a
  single migration cannot make once every slot is within one key group of the mean.

The step taken lowers ``Φ = Σ_i dev_i^8`` most per unit of budget spent (a migration back to a
key group's original slot refunds its cost and is preferred). ``dev_i`` is ``|u_i - mean|`` for an
active slot, so Φ falls as the largest deviations fall — a smooth stand-in for ALBIC's ``max``;
for a slot marked for removal it is ``u_i`` itself, so every key group left on B is a reason to
move (drain-first scale-in, as
:meth:`~elastream.algorithms.balance.allocation_problem.Score.better_than` ranks plans; with
nothing on B, ``u_i = 0`` there and Φ is unchanged). Since Φ strictly decreases, the search
cannot cycle; it stops when no step lowers Φ within the budget, or after ``max_steps``.

Entries that stand for several key groups (``Allocation.size``) spend that many migrations;
frozen entries (``Allocation.frozen``) never move.

Complexity per step: O(T · (S·g + G + g·16·ḡ)) for ``g`` key groups on a critical slot and ``ḡ``
on a partner slot; steps ≤ the budget's worth of migrations plus refunds, capped by ``max_steps``.
"""

from __future__ import annotations

import numpy as np

from elastream.algorithms.balance.allocation_problem import F64, I64, MEAN, Allocation, Mask

POWER: float = 8.0
CRITICAL: int = 3
PARTNERS: int = 16
FREE_STEP: float = 1e-3
"""Budget fraction charged to a step that spends nothing (or refunds), so it ranks first."""


def improve(problem: Allocation, assign: I64, *, max_steps: int) -> I64:
    """Descend from ``assign`` (feasible for ``problem``); returns a new, feasible assignment.

    Two slots at 180 | 20 (rescaled: mean 100), two migrations: the heaviest key group crosses
    (80 | 120), then the 20 comes back the other way (100 | 100).

    >>> import numpy as np
    >>> p = Allocation(load=np.array([100.0, 50, 30, 20]), capacity=np.ones(2),
    ...                origin=np.array([0, 0, 0, 1]), removed=np.zeros(2, dtype=bool),
    ...                cost=np.ones(4), max_moves=2.0, max_cost=np.inf, state=None,
    ...                state_limit=None, scale=1.0)
    >>> a = improve(p, p.origin, max_steps=10)
    >>> a.tolist(), p.utilisation(a).tolist()
    ([1, 0, 0, 0], [100.0, 100.0])
    """
    a = assign.copy()
    search = _Search(problem, a)
    for _ in range(max_steps):
        if not search.step():
            break
    return a


class _Search:
    """The state of one descent: the assignment and what it uses of each budget."""

    def __init__(self, problem: Allocation, assign: I64) -> None:
        self.p = problem
        self.a = assign
        moved = assign != problem.origin
        self.moves = float(problem.sizes[moved].sum())
        self.cost = float(problem.cost[moved].sum())
        self.state = problem.slot_state(assign)
        self.slot_ids = np.arange(problem.num_slots)

    def _dev(self, u: F64, slots: I64 | slice) -> F64:
        removed = self.p.removed[slots]
        return np.where(removed, u, np.abs(u - MEAN))

    def _delta(self, kgs: I64, targets: I64) -> tuple[F64, F64]:
        """Change in (moves, cost) of sending key groups ``kgs`` to ``targets`` (broadcast)."""
        origin = self.p.origin[kgs]
        was = (self.a[kgs] != origin).astype(float)
        moved = (targets != origin).astype(float) - was
        return moved * self.p.sizes[kgs], moved * self.p.cost[kgs]

    def _budget_use(self, dm: F64, dc: F64) -> tuple[F64, Mask]:
        """Fraction of the tighter budget a step spends, and whether it fits."""
        p = self.p
        fits = (self.moves + dm <= p.max_moves) & (self.cost + dc <= p.max_cost * (1 + 1e-12))
        use = np.zeros(np.broadcast(dm, dc).shape)
        if np.isfinite(p.max_moves) and p.max_moves > 0:
            use = np.maximum(use, dm / p.max_moves)
        if np.isfinite(p.max_cost) and p.max_cost > 0:
            use = np.maximum(use, dc / p.max_cost)
        return np.maximum(use, FREE_STEP), fits

    def _state_fits(self, kgs_in: I64, slots: I64, kgs_out: I64 | None = None) -> Mask:
        """Whether slots ``slots`` stay within their state limit after receiving ``kgs_in``."""
        p = self.p
        if self.state is None or p.state is None or p.state_limit is None:
            return np.ones(np.broadcast(kgs_in, slots).shape, dtype=bool)
        after = self.state[slots] + p.state[kgs_in]
        if kgs_out is not None:
            after = after - p.state[kgs_out]
        grows = after > self.state[slots]
        return ~grows | (after <= p.state_limit[slots] * (1 + 1e-12))

    def step(self) -> bool:
        """Take the best step; False when none lowers Φ within the budget."""
        p, a = self.p, self.a
        u = p.utilisation(a)
        dev = self._dev(u, slice(None))
        d = float(dev.max())
        if d <= 1e-12:
            return False
        phi = (dev / d) ** POWER
        best: tuple[float, tuple[int, int, int] | None] = (-1e-12, None)
        cap, load, movable = p.capacity, p.load, p.movable

        def phi_at(slots: I64, util: F64) -> F64:
            return (self._dev(util, slots) / d) ** POWER

        for i in np.argsort(-phi, kind="stable")[:CRITICAL]:
            i = int(i)
            own = np.flatnonzero(a == i)
            others = np.flatnonzero(a != i)
            # Migrations out of i, to every slot j (columns).
            if own.size:
                targets = self.slot_ids[None, :]
                dm, dc = self._delta(own[:, None], targets)
                use, fits = self._budget_use(dm, dc)
                home = p.origin[own][:, None] == targets  # back home, even onto B
                fits &= (~p.removed[targets] | home) & (targets != i) & movable[own][:, None]
                fits &= self._state_fits(own[:, None], targets)
                gain = (phi_at(np.array([i]), u[i] - load[own] / cap[i])[:, None]
                        + phi_at(targets, u[targets] + load[own][:, None] / cap[targets])
                        - phi[i] - phi[targets])
                best = _pick(best, np.where(fits, gain / use, 0.0), own[:, None], targets,
                             kind=0)
            # Migrations into i, from every other slot.
            if others.size and not p.removed[i]:
                src = a[others]
                dm, dc = self._delta(others, np.full(others.shape, i))
                use, fits = self._budget_use(dm, dc)
                fits &= movable[others]
                fits &= self._state_fits(others, np.full(others.shape, i))
                gain = (phi_at(np.array([i]), u[i] + load[others] / cap[i])
                        + phi_at(src, u[src] - load[others] / cap[src]) - phi[i] - phi[src])
                best = _pick(best, np.where(fits, gain / use, 0.0), others,
                             np.full(others.shape, i), kind=0)
            # Swaps of a key group on i with one on a complementary slot.
            if own.size and not p.removed[i]:
                order = np.argsort(u if u[i] > MEAN else -u, kind="stable")
                partners = order[(order != i) & ~p.removed[order]][:PARTNERS]
                mate = np.flatnonzero(np.isin(a, partners))
                if mate.size:
                    s = a[mate][None, :]
                    dm1, dc1 = self._delta(own[:, None], s)
                    dm2, dc2 = self._delta(mate[None, :], np.full(s.shape, i))
                    use, fits = self._budget_use(dm1 + dm2, dc1 + dc2)
                    fits &= movable[own][:, None] & movable[mate][None, :]
                    fits &= self._state_fits(own[:, None], s, mate[None, :])
                    fits &= self._state_fits(mate[None, :], np.full(s.shape, i), own[:, None])
                    net = load[own][:, None] - load[mate][None, :]  # load leaving i
                    gain = (phi_at(np.array([i]), u[i] - net / cap[i])
                            + phi_at(s, u[s] + net / cap[s]) - phi[i] - phi[s])
                    best = _pick(best, np.where(fits, gain / use, 0.0), own[:, None],
                                 mate[None, :], kind=1)
        if best[1] is None:
            return False
        self._apply(*best[1])
        return True

    def _apply(self, kind: int, x: int, y: int) -> None:
        """Kind 0: key group ``x`` migrates to slot ``y``; kind 1: key groups ``x``, ``y`` swap."""
        if kind == 0:
            self._move(x, y)
        else:
            sx, sy = int(self.a[x]), int(self.a[y])
            self._move(x, sy)
            self._move(y, sx)

    def _move(self, kg: int, target: int) -> None:
        p = self.p
        dm, dc = self._delta(np.array([kg]), np.array([target]))
        self.moves += float(dm[0])
        self.cost += float(dc[0])
        if self.state is not None and p.state is not None:
            self.state[self.a[kg]] -= p.state[kg]
            self.state[target] += p.state[kg]
        self.a[kg] = target


def _pick(
    best: tuple[float, tuple[int, int, int] | None], score: F64, rows: I64, cols: I64, *,
    kind: int,
) -> tuple[float, tuple[int, int, int] | None]:
    """Keep the lowest (most negative) score; ties go to the candidate seen first."""
    if score.size == 0:
        return best
    flat = int(np.argmin(score))
    value = float(score.flat[flat])
    if value >= best[0]:
        return best
    idx = np.unravel_index(flat, score.shape)
    r = np.broadcast_to(rows, score.shape)[idx]
    c = np.broadcast_to(cols, score.shape)[idx]
    return value, (kind, int(r), int(c))
