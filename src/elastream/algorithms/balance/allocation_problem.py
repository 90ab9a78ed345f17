"""ALBIC's key-group allocation problem (§4.3.1): its data, its constraints, and its objective.

Shared by the ``milp`` planner (:mod:`elastream.algorithms.balance.milp`) and the swap search
that seeds it (:mod:`elastream.algorithms.balance.swap_search`): both decide a new slot for every
key group and judge an assignment the same way, by :meth:`Allocation.score`.

Units: loads are rescaled so that the mean utilisation of the slots *not* marked for removal is
100, i.e. ALBIC's ``mean`` = ``Σ_N load_i / |A|`` (per unit of capacity), and every deviation is
in percent of it, as the paper's load values are. With no slot removed this is exactly
:func:`elastream.core.load.load_distance`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

MEAN: float = 100.0
"""The mean utilisation of the active slots after rescaling (ALBIC: loads in percent)."""

# Objective weights (all on the rescaled units, d in percent of the mean). ALBIC asks for
# w1 >> w2 so that d is minimised first and du + dl maximised second. Its other objective,
# stated in words ("minimise ... and Σ_{n_i ∈ B} load_i") and left by its MILP to Lemma 2, is the
# drain term: a key group still on a removed slot counts its load plus DRAIN_FLOOR (per key group
# it stands for), so idle key groups leave too. While B holds key groups, the drain term comes
# *first* (drain-first scale-in): :meth:`Score.better_than` compares it before d, and the HiGHS
# program caps it at its optimum (:mod:`~elastream.algorithms.balance.milp`), so W_DRAIN only
# orders plans of equal drain. The last weight prefers fewer / cheaper migrations among plans
# that are otherwise equal.
W1: float = 1.0
W_DRAIN: float = 1e-4
W2: float = 1e-5
W_MOVE: float = 1e-7
DRAIN_FLOOR: float = 1e-2
D_TOLERANCE: float = 1e-9
"""Two assignments whose d differ by less than this (in percent) tie on d."""
DRAIN_TOLERANCE: float = 1e-6
"""Two assignments whose drain terms differ by less than this (rescaled load) tie on drain."""


@dataclass(frozen=True)
class Score:
    """How good one assignment is: ALBIC's d, du, dl, the drain term, and the budget it uses."""

    d: float
    """Largest deviation from the mean in percent: over all slots upwards, over A downwards."""
    du: float
    """``d - max_i (u_i - mean)``: how far the upper bound (constraint 3) is from tight."""
    dl: float
    """``d - max_{i in A} (mean - u_i)``: how far the lower bound (constraint 4) is from tight."""
    drain: float
    """``Σ (load_k + DRAIN_FLOOR · size_k)`` over entries still on a slot marked for removal."""
    moves: int
    cost: float

    def objective(self, cost_unit: float) -> float:
        """The MILP's objective value for this assignment (see the weights above)."""
        return (W1 * self.d - W2 * (self.du + self.dl) + W_DRAIN * self.drain
                + W_MOVE * self.cost / cost_unit)

    def better_than(self, other: Score, cost_unit: float) -> bool:
        """Lexicographically better: a smaller drain term, then a smaller d, then objective.

        With nothing on B both drain terms are 0 and this is d first: no accepted plan then has
        a larger d than the plan it replaces, whatever the weights of the lower-order terms.
        While B holds key groups, draining more wins even at a larger d (drain-first scale-in).
        """
        if self.drain < other.drain - DRAIN_TOLERANCE:
            return True
        if self.drain > other.drain + DRAIN_TOLERANCE:
            return False
        if self.d < other.d - D_TOLERANCE:
            return True
        if self.d > other.d + D_TOLERANCE:
            return False
        return self.objective(cost_unit) < other.objective(cost_unit) - 1e-12


@dataclass(frozen=True)
class Allocation:
    """One instance of the allocation problem, rescaled (see the module docstring).

    ``origin[k]`` is ALBIC's ``q``: the slot key group ``k`` is on now. ``removed`` marks the
    slots of B. ``cost[k]`` is ``mc_k``; ``max_moves`` / ``max_cost`` the budgets (``inf`` when
    not set). ``state_limit[s]`` bounds the state a slot may hold (``None``: no such constraint).
    ``scale`` converts a rescaled load back: ``raw = load * scale``.

    An entry ``k`` may stand for several key groups that move as one unit
    (:mod:`~elastream.algorithms.balance.units`): ``size[k]`` is how many migrations moving it
    takes (``None``: one each), and ``frozen[k]`` marks an entry that may not leave ``origin[k]``
    (``None``: none is).
    """

    load: F64
    capacity: F64
    origin: I64
    removed: Mask
    cost: F64
    max_moves: float
    max_cost: float
    state: F64 | None
    state_limit: F64 | None
    scale: float
    size: F64 | None = None
    frozen: Mask | None = None

    @property
    def num_slots(self) -> int:
        """S = |N|."""
        return int(self.capacity.shape[0])

    @property
    def num_key_groups(self) -> int:
        """G = |G|."""
        return int(self.load.shape[0])

    @property
    def sizes(self) -> F64:
        """Migrations it takes to move each entry (1.0 for a plain key group)."""
        return np.ones(self.num_key_groups) if self.size is None else self.size

    @property
    def movable(self) -> Mask:
        """Entries that may leave their origin."""
        if self.frozen is None:
            return np.ones(self.num_key_groups, dtype=np.bool_)
        return np.asarray(~self.frozen, dtype=np.bool_)

    @property
    def cost_unit(self) -> float:
        """The mean migration cost, the unit of the objective's migration term."""
        positive = self.cost[self.cost > 0]
        return float(positive.mean()) if positive.size else 1.0

    def utilisation(self, assign: I64) -> F64:
        """``u_i = Σ_k x_ik · load_k / capacity_i`` for every slot."""
        return np.bincount(assign, weights=self.load, minlength=self.num_slots) / self.capacity

    def deviation(self, util: F64) -> F64:
        """``|u_i - mean|`` for an active slot, ``max(u_i - mean, 0)`` for one in B."""
        return np.where(self.removed, np.maximum(util - MEAN, 0.0), np.abs(util - MEAN))

    def spread(self, assign: I64, reference: float) -> float:
        """``Σ_i (dev_i / reference)^8``: falls as the largest deviations fall, not just the max.

        The tie-breaker of searches that must make progress while several slots share d.
        """
        if reference <= 0:
            return 0.0
        return float(np.sum((self.deviation(self.utilisation(assign)) / reference) ** 8))

    def score(self, assign: I64) -> Score:
        """ALBIC's d, du and dl at their best values for ``assign``, plus the other terms."""
        u = self.utilisation(assign)
        up = float(np.max(u - MEAN))
        active = ~self.removed
        low = float(np.max(MEAN - u[active]))
        d = max(up, low, 0.0) if self.load.sum() > 0 else 0.0
        moved = assign != self.origin
        stay_removed = ~moved & self.removed[self.origin]
        drain = self.load[stay_removed] + DRAIN_FLOOR * self.sizes[stay_removed]
        return Score(
            d=d,
            du=d - up,
            dl=d - low,
            drain=float(np.sum(drain)),
            moves=round(float(self.sizes[moved].sum())),
            cost=float(self.cost[moved].sum()),
        )

    def within_budget(self, assign: I64) -> bool:
        """Constraint (2) for both budgets, with a little slack for float sums."""
        moved = assign != self.origin
        return bool(self.sizes[moved].sum() <= self.max_moves + 1e-9
                    and self.cost[moved].sum() <= self.max_cost * (1 + 1e-12) + 1e-12)

    def slot_state(self, assign: I64) -> F64 | None:
        """State held by each slot under ``assign`` (``None`` when state is not constrained)."""
        if self.state is None:
            return None
        return np.asarray(np.bincount(assign, weights=self.state, minlength=self.num_slots),
                          dtype=np.float64)

    def feasible(self, assign: I64) -> bool:
        """Every key group on a slot, within budget, nothing new on B, state within its limit.

        Frozen entries stay where they are.
        """
        if assign.shape != self.origin.shape or np.any(assign < 0) \
                or np.any(assign >= self.num_slots):
            return False
        arrived = assign != self.origin
        if np.any(self.removed[assign[arrived]]) or np.any(arrived & ~self.movable):
            return False
        state = self.slot_state(assign)
        if state is not None and self.state_limit is not None \
                and np.any(state > self.state_limit * (1 + 1e-12) + 1e-12):
            return False
        return self.within_budget(assign)

    def transfer_bound(self) -> float:
        """A lower bound on d from what the budget can carry.

        For a candidate d, the load above ``mean + d`` on each slot must leave it, carried by
        key groups that start there, and the load missing below ``mean − d`` on each active slot
        must arrive, each migration carrying one key group. With ``max_moves``, a slot needs at
        least as many migrations as its heaviest key groups take to cover its overload (and an
        underloaded slot as many as the heaviest key groups anywhere take to fill its gap); with
        ``max_migration_cost``, at least its overload times the least cost per unit of load.
        Returned: the smallest d whose needs fit every budget (bisection), and at least what the
        heaviest key group forces wherever it goes.
        """
        u = self.utilisation(self.origin)
        if not np.any(self.load > 0):
            return 0.0
        bound = max(0.0, float(np.max(self.load)) / float(np.max(self.capacity)) - MEAN)
        needs = []
        if math.isfinite(self.max_moves):
            needs.append((self._moves_needed(), self.max_moves))
        if math.isfinite(self.max_cost):
            needs.append((self._cost_needed(), self.max_cost))
        if not needs:
            return bound

        def fits(d: float) -> bool:
            over = np.maximum(u - MEAN - d, 0.0) * self.capacity
            under = np.where(self.removed, 0.0, np.maximum(MEAN - d - u, 0.0)) * self.capacity
            return all(max(need(over, under)) <= budget * (1 + 1e-9) for need, budget in needs)

        low, high = bound, max(bound, self.score(self.origin).d)
        if fits(low):
            return low
        for _ in range(60):
            mid = 0.5 * (low + high)
            low, high = (low, mid) if fits(mid) else (mid, high)
        return low

    def _moves_needed(self) -> Callable[[F64, F64], tuple[float, float]]:
        """Fewest migrations out of overloaded slots, and into underloaded ones.

        An entry that stands for several key groups (``size`` > 1) or may not move at all is
        counted as one migration that may move: fewer than it takes, so the bound stays valid.
        """
        tops = []  # per slot: cumulative loads of its key groups, heaviest first
        for slot in range(self.num_slots):
            tops.append(np.cumsum(np.sort(self.load[self.origin == slot])[::-1]))
        anywhere = np.cumsum(np.sort(self.load)[::-1])

        def count(cumulative: F64, amount: float) -> float:
            if amount <= 0:
                return 0.0
            k = int(np.searchsorted(cumulative, amount * (1 - 1e-12)))
            return float(k + 1) if k < cumulative.size else math.inf

        def need(over: F64, under: F64) -> tuple[float, float]:
            out = sum(count(tops[s], float(over[s])) for s in np.flatnonzero(over > 0))
            into = sum(count(anywhere, float(under[s])) for s in np.flatnonzero(under > 0))
            return out, into

        return need

    def _cost_needed(self) -> Callable[[F64, F64], tuple[float, float]]:
        """Least cost out of overloaded slots and into underloaded ones, at the best rates."""
        loaded = self.load > 0
        with np.errstate(divide="ignore", over="ignore"):
            rate = np.where(loaded, self.cost / np.where(loaded, self.load, 1.0), np.inf)
        per_slot = np.full(self.num_slots, np.inf)
        np.minimum.at(per_slot, self.origin, rate)
        cheapest = float(np.min(rate))

        def need(over: F64, under: F64) -> tuple[float, float]:
            heavy = over > 0
            return float(np.sum(over[heavy] * per_slot[heavy])), float(np.sum(under)) * cheapest

        return need
