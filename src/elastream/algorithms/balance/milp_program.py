"""ALBIC's MILP (§4.3.1) as a HiGHS program: columns, rows, a starting solution, symmetry.

:class:`Program` builds the program of :mod:`elastream.algorithms.balance.milp` for the key
groups on a set of slots (all slots: the whole program), the other key groups fixed where an
incumbent assignment has them. Columns: ``x[k, i]`` for every free key group ``k`` and every slot
``i`` of the set it may end on (not B, unless it started there), then ``d``, ``du``, ``dl``.
Rows: (1) one per free key group; (3) per slot of the set, (4) per active slot of the set; (2)
per budget; the state limit per slot; and symmetry-breaking rows for identical key groups (same
origin, load, cost, state, size and frozenness): of two such, the lower id leaves first
(:func:`canonical`). An entry may stand for a unit of key groups (``Allocation.size``) and may be
frozen on its slot (``Allocation.frozen``, :mod:`~elastream.algorithms.balance.units`).

Drain first: when free key groups sit on B, :meth:`Program.drain_only` is the same program
minimising only the drain term (what stays on B), and ``drain_limit`` adds the row "drain term ≤
its optimum", so that the weighted d-first objective is minimised among maximally draining plans.
Constraint (5) is relaxed then: draining B may push a slot past twice the mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import highspy
import numpy as np

from elastream.algorithms.balance.allocation_problem import (
    DRAIN_FLOOR,
    F64,
    I64,
    MEAN,
    W1,
    W2,
    W_DRAIN,
    W_MOVE,
    Allocation,
    Mask,
)


def allowed(problem: Allocation, kgs: I64, slots: I64) -> Mask:
    """``allowed[a, b]``: key group ``kgs[a]`` may end on slot ``slots[b]``.

    Any slot not in B; a slot in B only if the key group started there (it never left); a frozen
    entry only its origin.
    """
    home = problem.origin[kgs][:, None] == slots[None, :]
    free = ~problem.removed[slots][None, :] & problem.movable[kgs][:, None]
    return np.asarray(free | home, dtype=np.bool_)


def _identity(p: Allocation) -> list[np.ndarray]:
    """What makes two entries interchangeable: origin, load, cost, state, size, frozenness."""
    state = p.state if p.state is not None else np.zeros(p.num_key_groups)
    return [p.origin, p.load, p.cost, state, p.sizes, p.movable]


def _group_order(p: Allocation) -> I64:
    """Key groups sorted so that identical ones (see :func:`_identity`) are adjacent, by id."""
    ids = np.arange(p.num_key_groups)
    return np.lexsort((ids, *reversed(_identity(p))))


def _same_as_previous(p: Allocation, order: I64) -> np.ndarray:
    """``same[i]``: ``order[i]`` is identical to ``order[i - 1]`` (``same[0]`` is False)."""
    if order.size == 0:
        return np.zeros(0, dtype=bool)
    same = np.ones(order.size - 1, dtype=bool)
    for values in _identity(p):
        v = values[order]
        same &= v[1:] == v[:-1]
    return np.concatenate([[False], same])


def canonical(p: Allocation, assign: I64) -> I64:
    """``assign`` with identical key groups permuted so that the lower ids are the ones moved.

    Identical key groups are interchangeable, so this changes no load, cost or state; it makes
    an assignment satisfy the program's symmetry-breaking rows.
    """
    order = _group_order(p)
    group = np.cumsum(~_same_as_previous(p, order))
    stays = assign[order] == p.origin[order]
    perm = np.lexsort((np.arange(order.size), stays, group))
    out = assign.copy()
    out[order] = assign[order][perm]
    return out


def _identical_pairs(p: Allocation, kg: I64, slot: I64) -> I64:
    """Column pairs ``(stay of k1, stay of k2)`` for consecutive identical free key groups."""
    stay = np.flatnonzero(slot == p.origin[kg])  # columns x[k, origin]
    if stay.size < 2:
        return np.zeros((0, 2), dtype=np.int64)
    members = kg[stay]
    order = _group_order(p)
    rank = np.empty(p.num_key_groups, dtype=np.int64)
    rank[order] = np.arange(order.size)
    by_rank = np.argsort(rank[members])
    cols, members = stay[by_rank], members[by_rank]
    same = _same_as_previous(p, order)
    group = np.cumsum(~same)[rank[members]]
    consecutive = group[1:] == group[:-1]
    return np.stack([cols[:-1][consecutive], cols[1:][consecutive]], axis=1)


@dataclass(frozen=True)
class Program:
    """One program in HiGHS's column-wise form, and how its columns map to key groups."""

    kg: I64
    slot: I64
    num_rows: int
    cost: F64
    lower: F64
    upper: F64
    row_lower: F64
    row_upper: F64
    start: I64
    index: I64
    value: F64
    deviations: F64
    """The incumbent's d, du and dl (over the free slots)."""
    drain: F64
    """Per binary column: its share of the drain term (``load + DRAIN_FLOOR·size`` if it keeps
    a key group on B, else 0)."""

    @classmethod
    def build(cls, p: Allocation, slots: I64, incumbent: I64,
              drain_limit: float | None = None) -> Program:
        """The program with the key groups now on ``slots`` free and all others fixed.

        Idle key groups (no load, not on B, not moved, no state limit to make room for) stay
        fixed too: moving one changes nothing but the budget. ``drain_limit``: the most the
        free key groups may keep on B (their drain term; ``None``: no such row).
        """
        idle = (p.load == 0) & ~p.removed[p.origin] & (incumbent == p.origin) \
            & (p.state_limit is None)
        free = np.flatnonzero(np.isin(incumbent, slots) & ~idle)
        allowed_cols = allowed(p, free, slots)
        pos, col_slot = np.nonzero(allowed_cols)
        kg = free[pos]
        slot = slots[col_slot]
        n = kg.size
        in_q = np.zeros(p.num_slots, dtype=bool)
        in_q[slots] = True
        is_active = in_q & ~p.removed
        upper_row = np.full(p.num_slots, -1)
        upper_row[slots] = free.size + np.arange(slots.size)
        lower_row = np.full(p.num_slots, -1)
        lower_row[np.flatnonzero(is_active)] = free.size + slots.size + np.arange(
            int(is_active.sum()))
        next_row = free.size + slots.size + int(is_active.sum())

        rows: list[I64] = [pos]
        cols: list[I64] = [np.arange(n)]
        vals: list[F64] = [np.ones(n)]
        row_lower = [np.ones(free.size), np.full(slots.size, -np.inf),
                     np.full(int(is_active.sum()), MEAN)]
        row_upper = [np.ones(free.size), np.full(slots.size, MEAN),
                     np.full(int(is_active.sum()), np.inf)]
        util = p.load[kg] / p.capacity[slot]
        rows.append(upper_row[slot])
        cols.append(np.arange(n))
        vals.append(util)
        act = p.removed[slot] == 0
        rows.append(lower_row[slot[act]])
        cols.append(np.arange(n)[act])
        vals.append(util[act])

        fixed = ~np.isin(np.arange(p.num_key_groups), free)
        moved_fixed = fixed & (incumbent != p.origin)
        leaves = slot != p.origin[kg]
        for weight, budget in ((p.sizes, p.max_moves),
                               (p.cost, p.max_cost)):
            if math.isfinite(budget):
                rows.append(np.full(int(leaves.sum()), next_row))
                cols.append(np.flatnonzero(leaves))
                vals.append(weight[kg[leaves]])
                row_lower.append(np.array([-np.inf]))
                row_upper.append(np.array([budget - float(weight[moved_fixed].sum())]))
                next_row += 1
        if p.state is not None and p.state_limit is not None:
            state_row = np.full(p.num_slots, -1)
            state_row[slots] = next_row + np.arange(slots.size)
            rows.append(state_row[slot])
            cols.append(np.arange(n))
            vals.append(p.state[kg])
            held_fixed = np.bincount(incumbent[fixed], weights=p.state[fixed],
                                     minlength=p.num_slots)
            row_lower.append(np.full(slots.size, -np.inf))
            row_upper.append(p.state_limit[slots] - held_fixed[slots])
            next_row += slots.size

        stays_on_b = p.removed[p.origin[kg]] & ~leaves
        drain = (p.load[kg] + DRAIN_FLOOR * p.sizes[kg]) * stays_on_b
        if drain_limit is not None:
            on_b = np.flatnonzero(drain > 0)
            rows.append(np.full(on_b.size, next_row))
            cols.append(on_b)
            vals.append(drain[on_b])
            row_lower.append(np.array([-np.inf]))
            row_upper.append(np.array([drain_limit]))
            next_row += 1

        # Symmetry: of identical key groups (same origin, load, cost, state), the lower ids
        # leave first — x[k1, origin] <= x[k2, origin] for consecutive k1 < k2.
        pairs = _identical_pairs(p, kg, slot)
        if pairs.size:
            count = pairs.shape[0]
            rows += [next_row + np.arange(count), next_row + np.arange(count)]
            cols += [pairs[:, 0], pairs[:, 1]]
            vals += [np.ones(count), -np.ones(count)]
            row_lower.append(np.full(count, -np.inf))
            row_upper.append(np.zeros(count))
            next_row += count

        # d, du, dl: constraints (3) and (4), on the free slots only. Fixed slots keep their
        # loads, so a round minimises the largest deviation among the free slots; the caller
        # accepts the result only if the whole assignment improves.
        d_col, du_col, dl_col = n, n + 1, n + 2
        upper_rows = upper_row[slots]
        lower_rows = lower_row[is_active]
        rows += [upper_rows, upper_rows, lower_rows, lower_rows]
        cols += [np.full(slots.size, d_col), np.full(slots.size, du_col),
                 np.full(lower_rows.size, d_col), np.full(lower_rows.size, dl_col)]
        vals += [-np.ones(slots.size), np.ones(slots.size), np.ones(lower_rows.size),
                 -np.ones(lower_rows.size)]

        r = np.concatenate(rows)
        c = np.concatenate(cols)
        v = np.concatenate(vals)
        keep = v != 0
        r, c, v = r[keep], c[keep], v[keep]
        order = np.lexsort((r, c))
        r, c, v = r[order], c[order], v[order]
        start = np.searchsorted(c, np.arange(n + 4)).astype(np.int64)

        unit = p.cost_unit
        cost = np.concatenate([W_MOVE * p.cost[kg] * leaves / unit + W_DRAIN * drain,
                               [W1, -W2, -W2]])
        u = p.utilisation(incumbent)
        up = float(np.max(u[slots] - MEAN))
        low = float(np.max(MEAN - u[is_active])) if is_active.any() else -np.inf
        d_now = max(up, low, 0.0)
        # du, dl are bounded by rows (3) and (4); a finite bound keeps the LP bounded anyway.
        slack_upper = max(MEAN, d_now) + float(p.load.sum() / p.capacity.min())
        # Constraint (5), relaxed when even the incumbent breaks it, and while B is drained.
        d_upper = slack_upper if np.any(drain > 0) else max(MEAN, d_now)
        return cls(
            kg=kg, slot=slot, num_rows=next_row, cost=cost, lower=np.zeros(n + 3),
            upper=np.concatenate([np.ones(n), [d_upper, slack_upper, slack_upper]]),
            row_lower=np.concatenate(row_lower), row_upper=np.concatenate(row_upper),
            start=start, index=r.astype(np.int64), value=v.astype(float),
            deviations=np.array([d_now, d_now - up, d_now - low if is_active.any() else 0.0]),
            drain=drain,
        )

    def drain_only(self) -> Program:
        """The same program minimising only the drain term: the most B can be drained."""
        return replace(self, cost=np.concatenate([self.drain, np.zeros(3)]))

    def drain_of(self, assign: I64) -> float:
        """The drain term of the free key groups under ``assign``."""
        return float(self.drain[assign[self.kg] == self.slot].sum())

    def pass_to(self, h: highspy.Highs) -> None:
        """Load the program into ``h`` (column-wise, minimise)."""
        n = self.kg.size
        integrality = np.concatenate([np.ones(n, dtype=np.int32), np.zeros(3, dtype=np.int32)])
        status = h.passModel(n + 3, self.num_rows, int(self.index.size), 1, 1, 0.0,
                             self.cost, self.lower, self.upper, self.row_lower, self.row_upper,
                             self.start, self.index, self.value, integrality)
        if status == highspy.HighsStatus.kError:
            raise RuntimeError("HiGHS rejected the model")

    def solution(self, incumbent: I64) -> highspy.HighsSolution:
        """``incumbent`` as a full HiGHS solution: x, then d, du and dl at their best values."""
        sol = highspy.HighsSolution()
        sol.col_value = np.concatenate([(incumbent[self.kg] == self.slot).astype(float),
                                        self.deviations])
        sol.value_valid = True
        return sol

    def assignment(self, values: F64, incumbent: I64) -> I64:
        """The assignment the columns ``values`` describe; fixed key groups as ``incumbent``."""
        assign = incumbent.copy()
        chosen = values[: self.kg.size] > 0.5
        assign[self.kg[chosen]] = self.slot[chosen]
        return assign

