r"""The ``milp`` planner: ALBIC's MILP for key-group allocation (§4.3.1), solved with HiGHS.

Madsen, Zhou and Cao (ALBIC) allocate key groups to nodes by a mixed
integer program that minimises the load distance under a migration budget, and integrate
scale-in by marking nodes for removal. Here nodes are slots and the program is, with ALBIC's
symbols (Table 2) and the names they have in this code:

============================  ===============================================================
ALBIC                         here
============================  ===============================================================
N, G                          the slots ``0..S-1`` of ``current``; its key groups ``0..G-1``
B (kill_i = 1), A = N \ B     ``options.remove``; the other slots
q_{i,k}                       ``current.slot_of[k] == i`` (:attr:`Allocation.origin`)
x_{i,k}                       the binary column ``x[k, i]``; the plan's moves are the changes
gLoad_k                       ``snapshot.key_group_load[k]``, rescaled (below)
node capacity weight          ``snapshot.capacity[i]``: the load of ``i`` is ``Σ_k x·gLoad/c_i``
mean                          ``Σ_N load / Σ_A c_i``, rescaled to 100 (ALBIC: percent)
d, d_u, d_l                   the continuous columns ``d``, ``du``, ``dl`` (percent of mean)
mc_k = α·|σ_k|                ``options.alpha * snapshot.state_size[k]``
maxMigrCost                   ``options.max_migration_cost``
maxMigrations (§5.2)          ``options.max_moves`` (``mc_k = 1``)
============================  ===============================================================

::

    min  w1·d − w2·(du + dl)  [+ w_B·Σ_{k on B, staying} (gLoad_k + ε) + w_M·Σ moved mc_k]
    (1)  ∀k:            Σ_i x[k,i] = 1
    (2)                 Σ_k Σ_{i ≠ q_k} x[k,i]·mc_k ≤ maxMigrCost    (and/or ≤ maxMigrations)
    (3)  ∀i ∈ N:        Σ_k x[k,i]·gLoad_k / c_i ≤ mean + (d − du)
    (4)  ∀i ∈ A:        Σ_k x[k,i]·gLoad_k / c_i ≥ mean − (d − dl)
    (5)                 mean − d ≥ 0
         d ≥ 0, du ≥ 0, dl ≥ 0;  x[k,i] = 0 for i ∈ B, i ≠ q_k          (B receives nothing)
         Σ_k x[k,i]·|σ_k| ≤ max(max_state_per_slot, state on i now)    (optional, §4.3.1)

w1 = 1 ≫ w_B = 1e-4 ≫ w2 = 1e-5 ≫ w_M = 1e-7
(:mod:`~elastream.algorithms.balance.allocation_problem`), and while key groups sit on B the
drain term Σ_{k on B, staying} (gLoad_k + ε) comes first (below).
Where this differs from the paper, and why:

- *B receives nothing* is a constraint here. Lemma 1 proves the optimum never moves a key group
  from A to B; stating it lets the solver drop those columns and guarantees it for incumbents.
- *Draining B first*. ALBIC states the objective as "minimise max |load_i − mean| and Σ_B
  load_i" but its MILP leaves the second part to Lemma 2, which fails when key groups are coarse
  (keeping a small key group on B can tie on d and win on du + dl) and for idle key groups. Our
  reading of "minimise Σ_B load" and of Fig. 5 (integrated scale-in empties B as fast as a
  separate scale-in step) is *drain first*: while key groups sit on B, plans are ranked
  lexicographically — least drain term (load left on B, ε = 0.01 per key group so idle key
  groups leave too), then least d, then the weighted objective
  (:meth:`~elastream.algorithms.balance.allocation_problem.Score.better_than`). A d-first
  planner left the last key groups of B in place for rounds (a slot of B below the mean does
  not bound d).
  HiGHS gets it without a huge weight: a first run minimises the drain term alone (exactly),
  then the program proper runs with the row "drain term ≤ that optimum" (+ 5e-7), so it
  minimises d among the most draining plans; (5) is relaxed meanwhile, as draining may push a
  slot past twice the mean. With nothing on B the drain term is 0 and all this is inert: the
  planner is d-first as in the paper. w_M prefers fewer, cheaper migrations among otherwise
  equal plans.
- *(5)* makes the program infeasible when no plan within budget gets every slot under twice the
  mean (one key group bigger than that, or an overloaded slot the budget cannot relieve). Its
  bound is relaxed to the starting solution's d then: the paper's program has no solution there.
- *mean* is not rounded up: our loads are tuple counts, not integer percentages.
- *Units and pins* (for ALBIC, §4.3.2, :mod:`~elastream.algorithms.balance.albic`):
  ``together`` groups of key groups on one slot move as one unit and ``pin`` places key groups
  on a slot; both by contracting the program (:mod:`~elastream.algorithms.balance.units`): a
  unit is one entry whose move spends one migration per member, a pinned unit is moved first
  and then frozen. Flux's start does not know units and is filtered like its moves onto B.
- *Memory* ("it can be easily extended to add a constraint on the maximum usage of each
  non-bottleneck resource", §4.3.1, §5.2.1): a slot already above ``max_state_per_slot`` may
  not grow, so the current allocation always stays feasible.

**Solving.** A plan starts from the best of Flux's plan at the same budget
(:mod:`~elastream.algorithms.balance.flux`; its moves onto B, over a state limit or past the cost
budget dropped) and a swap search (:mod:`~elastream.algorithms.balance.swap_search`) from the
current assignment and from Flux's. Programs of at most ``FULL_MODEL_COLUMNS`` = 120 binary columns
go to HiGHS whole, with that start. Larger ones are solved by *fix-and-optimise* (MIP-based large
neighbourhood search): each round frees the key groups of up to 4 slots — the one that bounds d, the
most opposite one, the next worst, slots tied to the first by a migration, random ones from the 8
worst and 8 most opposite — within 120 columns, fixes all others at the incumbent, and solves the
same program over those slots (their largest deviation) with the incumbent as its start, for at most
25% of ``time_limit``; it stops when ``time_limit`` is spent or 4 rounds in a row end (not cut short
by the clock) with nothing better. Of identical key groups (same origin, load, cost, state) the
lower ids move first (symmetry-breaking rows), and idle key groups off B stay put. Every accepted
solution is lexicographically no worse than the one before (drain term, then d), so with nothing
on B — or at equal drain — a plan's d is never worse than Flux's; when the plan drains B more
than Flux's, its d may be larger.

HiGHS does not do the heavy lifting at scale: the whole program (72,000 binaries at 60 slots ×
1,200 key groups, 7,600 at 20 × 400) does not get past HiGHS's root node within seconds, because
fractional migrations balance perfectly and the LP bound is weak. On ALBIC's §5.1 instances (20–60
slots, budgets 10–40) the rounds improved the swap search's start in 12 of 108 plans, by up to a
third (1.78% → 1.20%); on small programs HiGHS proves optimality.

**Status.** ``OPTIMAL`` when HiGHS proved the whole program optimal (within ``mip_gap``);
``FEASIBLE`` otherwise, with ``details["gap"] = (d − bound) / d`` against the best proven lower
bound on d (:meth:`Allocation.transfer_bound`: the overload above ``mean + d`` on each slot must
leave it and the underload below ``mean − d`` must arrive, which takes at least so many
migrations of the heaviest key groups, or so much cost at the best load per unit of cost; and
HiGHS's dual bound when it saw the whole program). A gap of 0 proves d optimal — as when Flux's
plan is already as good as any within the budget. ``UNCHANGED`` when nothing moves;
``FALLBACK`` (Flux's plan) when HiGHS reports an error. ``objective`` is d in percent: the load
distance of the result (:func:`~elastream.core.load.load_distance`) when no slot is removed.

Plans repeat exactly when no HiGHS run stops at ``time_limit`` (bound runs by ``max_nodes``).
Complexity: per HiGHS run O(G + S + c) to build a program of ``c`` columns, then HiGHS
(exponential in the worst case, bounded by ``time_limit`` and ``max_nodes``); the swap search is
O(budget · (S·g + G)) for ``g`` key groups a slot.

References:
    K. G. S. Madsen, Y. Zhou, J. Cao. Integrative Dynamic Reconfiguration in a Parallel Stream
    Processing Engine. 2016, §4.3.1, §5.1, §5.2.
    Q. Huangfu, J. A. J. Hall. Parallelizing the dual revised simplex method. Mathematical
    Programming Computation 10, 2018 (the LP engine of HiGHS).

>>> snap = LoadSnapshot(0, np.array([9.0, 8, 7, 1, 1, 1, 3, 3, 2]))
>>> p = plan(snap, RoutingTable(0, (0, 0, 0, 1, 1, 1, 2, 2, 2), 3),
...          options=MilpOptions(max_moves=2))
>>> p.status.value, [(m.key_group, m.source, m.target) for m in p.moves]
('optimal', [(0, 0, 1), (3, 1, 2)])
>>> [round(p.details[k], 1) for k in ("load_distance_before", "flux_load_distance")]
[105.7, 31.4]
>>> round(p.objective, 1)
28.6
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

import highspy
import numpy as np

from elastream.algorithms.balance import collocation, flux, swap_search, units
from elastream.algorithms.balance.allocation_problem import (
    D_TOLERANCE,
    DRAIN_FLOOR,
    DRAIN_TOLERANCE,
    F64,
    I64,
    MEAN,
    W1,
    W_DRAIN,
    W_MOVE,
    Allocation,
    Score,
)
from elastream.algorithms.balance.highs_silent import silent_highs
from elastream.algorithms.balance.milp_program import Program, allowed, canonical
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Capability, Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable

NAME: Final = "milp"
CAN: Final[frozenset[Capability]] = frozenset({Capability.TAKE_SCALE_IN_MARK})
"""What it can do beyond moving key groups (:class:`~elastream.core.plan.Capability`)."""

FULL_MODEL_COLUMNS: Final = 120
"""Programs with at most this many binary columns are given to HiGHS whole."""
LNS_COLUMNS: Final = 120
"""Most binary columns in one round of the neighbourhood search."""
LNS_SLOTS: Final = 4
LNS_PATIENCE: Final = 4
"""Rounds in a row without improvement after which the neighbourhood search stops early."""
LNS_MAX_ROUNDS: Final = 200
LNS_ROUND_SHARE: Final = 0.25
"""Largest share of ``time_limit`` one round may take."""
SWAP_STEPS_PER_MOVE: Final = 4
ROUND_ABSOLUTE_GAP: Final = 1e-2
"""A neighbourhood round stops once within this of its bound (d in percentage points)."""


@dataclass(frozen=True)
class MilpOptions:
    """Parameters of :func:`plan`.

    ``max_moves`` (default 4, key groups; ``None``: no limit): ALBIC's ``maxMigrations``, the
    most key groups one plan moves — the same budget as :class:`~elastream.algorithms.balance.
    flux.FluxOptions` ``max_moves``. ``max_migration_cost`` (default ``None``: no limit):
    ``maxMigrCost``, the most ``Σ mc_k`` over moved key groups, with ``mc_k = alpha ·
    state_size[k]`` (``alpha`` default 1.0, > 0); needs ``snapshot.state_size``. Both may be set.
    ``remove`` (slot ids, default none): ALBIC's B, slots marked for removal — they receive no key
    group, and their key groups leave as the budget allows. ``max_state_per_slot`` (default
    ``None``, unit of ``state_size``): the most state a slot may hold after the plan (a slot
    already above it may not grow). ``time_limit`` (default 1.2 s): HiGHS's time over all its
    runs; the starting solution and building the programs come on top (up to ~0.5 s on ALBIC's
    §5.1 instances up to 60 slots × 1,200 key groups). ``max_nodes`` (default
    ``None``): most branch-and-bound nodes per HiGHS run — a limit that, unlike ``time_limit``,
    does not depend on the machine, so plans repeat exactly when the time limit does not bind.
    ``mip_gap`` (default 1e-4): HiGHS's relative gap at which a program counts as solved.
    ``seed`` (default 0): HiGHS's random seed and the neighbourhood search's choice of slots.
    ``together`` (default none): tuples of key groups, each on one slot now, that move as one
    unit; ``pin`` (default none): ``(key group, slot)`` pairs placing a key group — and its
    unit — on a slot not in ``remove``, paid from the budget first
    (:mod:`~elastream.algorithms.balance.units`).
    """

    max_moves: int | None = 4
    max_migration_cost: float | None = None
    alpha: float = 1.0
    remove: frozenset[int] = field(default_factory=frozenset)
    max_state_per_slot: float | None = None
    time_limit: float = 1.2
    max_nodes: int | None = None
    mip_gap: float = 1e-4
    seed: int = 0
    together: units.Together = ()
    pin: units.Pins = ()

    def __post_init__(self) -> None:
        if self.max_moves is not None:
            rules.integer("max_moves", self.max_moves, low=0)
        if self.max_migration_cost is not None:
            rules.number("max_migration_cost", self.max_migration_cost)
        rules.number("alpha", self.alpha, above=0)
        collocation.check_remove(self.remove)
        if self.max_state_per_slot is not None:
            rules.number("max_state_per_slot", self.max_state_per_slot)
        rules.number("time_limit", self.time_limit, above=0, unit="seconds")
        if self.max_nodes is not None:
            rules.integer("max_nodes", self.max_nodes)
        rules.number("mip_gap", self.mip_gap, below=1)
        rules.integer("seed", self.seed, low=0)
        units.check_together(self.together)
        units.check_pin(self.pin)


def plan(
    snapshot: LoadSnapshot, current: RoutingTable, *, options: MilpOptions | None = None
) -> Plan:
    """Re-allocate key groups by ALBIC's MILP (module docstring); never returns nothing.

    Args:
        snapshot: ``key_group_load`` (one per key group of ``current``), optionally
            ``capacity`` (one per slot) and ``state_size`` (one per key group; required by
            ``max_migration_cost`` and ``max_state_per_slot``).
        current: the routing table in force.
        options: :class:`MilpOptions`; ``MilpOptions()`` when omitted.

    Returns:
        A :class:`Plan` whose ``objective`` is d in percent after the moves, and whose
        ``details`` hold ``gap``, ``nodes`` (branch-and-bound nodes over all HiGHS runs),
        ``milp_objective``, ``bound`` (lower bound on d), ``load_distance_before``,
        ``flux_load_distance`` and ``start_load_distance`` (the starting solutions' d),
        ``rounds`` (HiGHS runs), ``timeouts`` (runs stopped by ``time_limit``),
        ``migration_cost`` (``Σ alpha·state_size``, or the move count without state sizes) and
        ``load_on_removed`` (raw load still on B). ``gap`` 0 on a ``FEASIBLE`` plan means its d
        is proved optimal (the lower-order terms are not).
    """
    opts = MilpOptions() if options is None else options
    if not isinstance(opts, MilpOptions):
        raise OptionError("options", "must be MilpOptions for the milp planner", opts)
    full = _problem(snapshot, current, opts)
    contracted = units.contract(full, together=opts.together, pin=opts.pin)
    problem = contracted.problem
    before = full.score(full.origin)
    unit = problem.cost_unit

    flux_snapshot, flux_current = snapshot, current
    if not contracted.identity:  # Flux plans the units, from where the pins put them
        flux_snapshot = LoadSnapshot(snapshot.batch_id, problem.load * problem.scale,
                                     capacity=problem.capacity)
        flux_current = RoutingTable(current.version, tuple(int(s) for s in problem.origin),
                                    current.num_slots)
    flux_plan = _flux_start(flux_snapshot, flux_current, problem)
    start = flux_plan
    solver = _Solver(problem, opts)
    if _nothing_to_do(problem, problem.score(problem.origin)):
        best, status = problem.origin, PlanStatus.UNCHANGED
    else:
        steps = int(min(problem.max_moves, problem.num_key_groups)) * SWAP_STEPS_PER_MOVE \
            + problem.num_key_groups
        for origin_or_flux in (problem.origin, flux_plan):
            searched = swap_search.improve(problem, origin_or_flux, max_steps=steps)
            if problem.score(searched).better_than(problem.score(start), unit):
                start = searched
        best, status = solver.solve(start)
    if status is PlanStatus.FALLBACK:
        best = flux_plan
    else:
        best = _prune(problem, best)
        best = _drain(problem, best)
    return _plan(snapshot, current, opts, full, contracted.expand(best), problem.score(best),
                 status, solver, before, problem.score(flux_plan), problem.score(start))


def _problem(snapshot: LoadSnapshot, current: RoutingTable, opts: MilpOptions) -> Allocation:
    """Validate the inputs against ``current`` and rescale them (ALBIC's percent)."""
    loads, capacity = snapshot.validated_for(current)
    num_slots, num_kgs = current.num_slots, current.num_key_groups
    bad = sorted(s for s in opts.remove if s >= num_slots)
    if bad:
        raise OptionError("remove", f"must name slots in [0, {num_slots})", bad[0])
    removed = np.zeros(num_slots, dtype=bool)
    removed[list(opts.remove)] = True
    if removed.all():
        raise OptionError("remove", "must leave at least one slot", sorted(opts.remove))
    state: F64 | None = None
    needs_state = opts.max_migration_cost is not None or opts.max_state_per_slot is not None
    if snapshot.state_size is not None:
        state = np.asarray(snapshot.state_size, dtype=float)
        if state.shape != (num_kgs,):
            raise OptionError("snapshot.state_size", f"must hold one size per key group "
                              f"(G={num_kgs})", state.shape)
        if not np.all(np.isfinite(state)) or np.any(state < 0):
            raise OptionError("snapshot.state_size", "must be finite and non-negative",
                              state[~(np.isfinite(state) & (state >= 0))][0])
    elif needs_state:
        raise OptionError("snapshot.state_size", "must be given with max_migration_cost or "
                          "max_state_per_slot", None)
    origin = current.as_array()
    total = float(loads.sum())
    mean = total / float(capacity[~removed].sum())
    scale = mean / MEAN
    if not scale > 0:  # no load, or so little (subnormal) that the rescaling underflows
        scale = 1.0
    limit: F64 | None = None
    if opts.max_state_per_slot is not None and state is not None:
        held = np.bincount(origin, weights=state, minlength=num_slots)
        limit = np.maximum(held, opts.max_state_per_slot)
    use_cost = opts.max_migration_cost is not None
    return Allocation(
        load=loads / scale,
        capacity=capacity,
        origin=origin,
        removed=removed,
        cost=opts.alpha * state if use_cost and state is not None else np.ones(num_kgs),
        max_moves=math.inf if opts.max_moves is None else float(opts.max_moves),
        max_cost=math.inf if opts.max_migration_cost is None else opts.max_migration_cost,
        state=state if limit is not None else None,
        state_limit=limit,
        scale=scale,
    )


def _nothing_to_do(problem: Allocation, before: Score) -> bool:
    """True when no plan can be better: perfectly balanced, or no budget or room to move."""
    no_budget = problem.max_moves == 0 or (problem.max_cost == 0
                                           and bool(np.all(problem.cost > 0)))
    if problem.num_key_groups == 0 or problem.num_slots == 1 or no_budget:
        return True
    return before.d <= 0 and before.drain == 0


def _flux_start(snapshot: LoadSnapshot, current: RoutingTable, problem: Allocation) -> I64:
    """Flux's plan at the same budget, keeping each of its moves that stays feasible.

    Flux knows neither B, state limits nor migration costs: a move onto a removed slot, over a
    state limit, or past the cost budget is skipped and Flux's sequence goes on.
    """
    budget = problem.num_key_groups if math.isinf(problem.max_moves) else int(problem.max_moves)
    moves = flux.plan(snapshot, current, options=flux.FluxOptions(max_moves=budget)).moves
    assign = problem.origin.copy()
    for move in moves:
        trial = assign.copy()
        trial[move.key_group] = move.target
        if problem.feasible(trial):
            assign = trial
    return assign


def _prune(problem: Allocation, assign: I64) -> I64:
    """Undo migrations that buy nothing (idle key groups, ties left by the solver's tolerance)."""
    unit = problem.cost_unit
    best = assign.copy()
    score = problem.score(best)
    for kg in np.flatnonzero(best != problem.origin):
        trial = best.copy()
        trial[kg] = problem.origin[kg]
        trial_score = problem.score(trial)
        if problem.feasible(trial) and not score.better_than(trial_score, unit):
            best, score = trial, trial_score
    return best


def _drain(problem: Allocation, assign: I64) -> I64:
    """Move what is left on B, lightest first, to the least utilised slot, while that helps."""
    unit = problem.cost_unit
    best = assign.copy()
    score = problem.score(best)
    active = np.flatnonzero(~problem.removed)
    left = np.flatnonzero(problem.removed[best])
    for kg in left[np.lexsort((left, problem.load[left]))]:
        u = problem.utilisation(best)
        target = int(active[np.argmin(u[active])])
        trial = best.copy()
        trial[kg] = target
        trial_score = problem.score(trial)
        if problem.feasible(trial) and trial_score.better_than(score, unit):
            best, score = trial, trial_score
    return best


@dataclass(frozen=True)
class _Run:
    """What one HiGHS run gave: a solution (``None`` if unusable) and how it ended."""

    assign: I64 | None
    optimal: bool = False
    dual_bound: float = -math.inf
    failed: bool = False
    timed_out: bool = False


class _Solver:
    """Runs HiGHS on the whole program or on neighbourhoods of it, and keeps the tallies."""

    def __init__(self, problem: Allocation, opts: MilpOptions) -> None:
        self.p = problem
        self.opts = opts
        self.nodes = 0
        self.rounds = 0
        self.timeouts = 0
        self.seconds = 0.0
        self.bound = problem.transfer_bound()

    def solve(self, start: I64) -> tuple[I64, PlanStatus]:
        """The best assignment found from ``start``, and OPTIMAL / FEASIBLE / FALLBACK."""
        p = self.p
        columns = int(allowed(p, np.arange(p.num_key_groups), np.arange(p.num_slots)).sum())
        if columns <= FULL_MODEL_COLUMNS:
            return self._whole(start)
        return self._neighbourhoods(start)

    def _whole(self, start: I64) -> tuple[I64, PlanStatus]:
        p = self.p
        run = self._run(np.arange(p.num_slots), start, self.opts.time_limit)
        if run.failed:
            return start, PlanStatus.FALLBACK
        # HiGHS bounds the weighted objective; d is at least that less the lower-order terms.
        on_b = p.removed[p.origin]
        slack = W_DRAIN * float(np.sum(p.load[on_b] + DRAIN_FLOOR * p.sizes[on_b])) \
            + W_MOVE * (p.max_cost if math.isfinite(p.max_cost) else float(p.cost.sum())) \
            / p.cost_unit
        self.bound = max(self.bound, (run.dual_bound - slack) / W1)
        best = start
        if run.assign is not None and p.score(run.assign).better_than(p.score(start),
                                                                       p.cost_unit):
            best = run.assign
        return best, PlanStatus.OPTIMAL if run.optimal else PlanStatus.FEASIBLE

    def _neighbourhoods(self, start: I64) -> tuple[I64, PlanStatus]:
        """Fix-and-optimise rounds from ``start``; each accepted round improves the assignment.

        Improves means: a smaller drain term, or the same drain term and a smaller d, or both
        the same and a smaller objective (:meth:`~Score.better_than`), or the same d and no
        larger drain term and a smaller :meth:`~Allocation.spread` (progress when several slots
        share d).
        """
        p, unit = self.p, self.p.cost_unit
        rng = np.random.default_rng(self.opts.seed)
        best, score = start, p.score(start)
        reference = max(score.d, 1e-9)
        spread = p.spread(best, reference)
        idle = 0
        while (self.rounds < LNS_MAX_ROUNDS and idle < LNS_PATIENCE
               and self.seconds < self.opts.time_limit and score.d > self.bound + 1e-9):
            limit = min(self.opts.time_limit - self.seconds,
                        LNS_ROUND_SHARE * self.opts.time_limit)
            run = self._run(_neighbourhood(p, best, rng), best, limit)
            if run.failed:
                return start, PlanStatus.FALLBACK
            idle += 0 if run.timed_out else 1  # a round cut short has not exhausted its slots
            if run.assign is None:
                continue
            trial_score = p.score(run.assign)
            trial_spread = p.spread(run.assign, reference)
            if trial_score.better_than(score, unit) or (
                    abs(trial_score.d - score.d) <= D_TOLERANCE
                    and trial_score.drain <= score.drain
                    and trial_spread < spread * (1 - 1e-9)):
                best, score, spread, idle = run.assign, trial_score, trial_spread, 0
        return best, PlanStatus.FEASIBLE

    def _run(self, slots: I64, incumbent: I64, time_limit: float) -> _Run:
        """Solve the program with the key groups on ``slots`` free and the rest fixed.

        Drain first: when free key groups sit on B, a first HiGHS run finds the least they can
        leave there (the drain term alone), and the program proper then minimises its weighted
        objective under the row "drain term ≤ that least" (+ ``DRAIN_TOLERANCE / 2``).
        """
        p = self.p
        incumbent = canonical(p, incumbent)
        program = Program.build(p, slots, incumbent)
        if not np.any(program.drain > 0):
            return self._highs(program, incumbent, time_limit, whole=slots.size == p.num_slots)
        seconds = self.seconds
        whole = slots.size == p.num_slots
        first = self._highs(program.drain_only(), incumbent, time_limit, whole=whole,
                            drain_stage=True)
        if first.failed:
            return first
        start, limit = incumbent, program.drain_of(incumbent)
        if first.assign is not None and program.drain_of(first.assign) < limit:
            start = canonical(p, first.assign)
            limit = program.drain_of(start)
        capped = Program.build(p, slots, start, drain_limit=limit + DRAIN_TOLERANCE / 2)
        second = self._highs(capped, start, max(time_limit - (self.seconds - seconds), 1e-3),
                             whole=whole)
        if second.failed:
            return second
        return _Run(second.assign if second.assign is not None else start,
                    optimal=first.optimal and second.optimal, dual_bound=second.dual_bound,
                    timed_out=first.timed_out or second.timed_out)

    def _highs(self, program: Program, incumbent: I64, time_limit: float, *, whole: bool,
               drain_stage: bool = False) -> _Run:
        """One HiGHS run of ``program`` from ``incumbent``.

        ``whole``: the program frees every slot; ``drain_stage``: it minimises the drain term
        alone, solved exactly.
        """
        p = self.p
        h = silent_highs()
        for name, value in (("threads", 1), ("time_limit", max(time_limit, 1e-3)),
                            ("mip_rel_gap", self.opts.mip_gap),
                            ("random_seed", self.opts.seed)):
            h.setOptionValue(name, value)
        if self.opts.max_nodes is not None:
            h.setOptionValue("mip_max_nodes", self.opts.max_nodes)
        if drain_stage:
            h.setOptionValue("mip_rel_gap", 0.0)
            h.setOptionValue("mip_abs_gap", DRAIN_TOLERANCE / 2)
        elif not whole:
            h.setOptionValue("mip_abs_gap", ROUND_ABSOLUTE_GAP)
        try:
            program.pass_to(h)
            h.setSolution(program.solution(incumbent))
            run_status = h.run()
        except RuntimeError:
            return _Run(None, failed=True)
        self.rounds += 1
        self.seconds += h.getRunTime()
        info = h.getInfo()
        self.nodes += int(info.mip_node_count)
        status = h.getModelStatus()
        timed_out = status == highspy.HighsModelStatus.kTimeLimit
        self.timeouts += int(timed_out)
        if run_status == highspy.HighsStatus.kError or status not in _USABLE:
            return _Run(None, failed=True)
        assign = None
        if info.primal_solution_status != 0:
            assign = program.assignment(np.asarray(h.getSolution().col_value), incumbent)
            if not p.feasible(assign):  # outside HiGHS's tolerances: keep the incumbent
                assign = None
        return _Run(assign, optimal=status == highspy.HighsModelStatus.kOptimal,
                    dual_bound=float(info.mip_dual_bound), timed_out=timed_out)


_USABLE = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit,
           highspy.HighsModelStatus.kSolutionLimit, highspy.HighsModelStatus.kIterationLimit,
           highspy.HighsModelStatus.kInterrupt)


def _neighbourhood(problem: Allocation, assign: I64, rng: np.random.Generator) -> I64:
    """The slots whose key groups one round frees: those that bound d and partners for them.

    The most deviating slot, the slot most opposite to it, the next most deviating, slots tied
    to the first by a migration (up to 4 slots so far), then slots drawn from the 8 most
    deviating and the 8 most opposite, while the program stays within ``LNS_COLUMNS`` columns
    and ``LNS_SLOTS`` slots.
    """
    u = problem.utilisation(assign)
    dev = np.where(problem.removed, np.maximum(u - MEAN, 0.0), np.abs(u - MEAN))
    order = np.argsort(-dev, kind="stable")
    first = int(order[0])
    active = np.flatnonzero(~problem.removed)
    opposite = active[np.argsort(u[active] if u[first] >= MEAN else -u[active], kind="stable")]
    pool = np.unique(np.concatenate([order[:8], opposite[:8]]))
    chosen = [first]
    linked = _linked_slots(problem, assign, first)
    for slot in (int(opposite[0]), int(order[min(1, order.size - 1)]), *linked):
        if slot not in chosen:
            chosen.append(slot)
        if len(chosen) >= 4:
            break
    rest = [int(s) for s in rng.permutation(pool) if int(s) not in chosen]
    counts = np.bincount(assign, minlength=problem.num_slots)
    for slot in rest:
        trial = [*chosen, slot]
        if len(trial) > LNS_SLOTS or int(counts[trial].sum()) * len(trial) > LNS_COLUMNS:
            break
        chosen = trial
    return np.array(sorted(chosen), dtype=np.int64)








def _linked_slots(problem: Allocation, assign: I64, slot: int) -> list[int]:
    """Slots tied to ``slot`` by a migration in ``assign``: freeing both lets a round undo it."""
    here = assign == slot
    came = problem.origin[here & (problem.origin != slot)]
    left = assign[(problem.origin == slot) & ~here]
    return [int(s) for s in np.unique(np.concatenate([came, left]))]




def _plan(
    snapshot: LoadSnapshot, current: RoutingTable, opts: MilpOptions, problem: Allocation,
    best: I64, score: Score, status: PlanStatus, solver: _Solver, before: Score,
    flux_score: Score, start_score: Score,
) -> Plan:
    """The :class:`Plan` for the key groups' assignment ``best`` (``score``: of its units)."""
    moved = np.flatnonzero(best != problem.origin)
    moves = tuple(Move(key_group=int(k), source=int(problem.origin[k]), target=int(best[k]))
                  for k in moved)
    if problem.removed.any():
        objective = score.d
    else:
        objective = load_distance(snapshot.slot_load(current.apply(moves)),
                                  snapshot.slot_capacity(current.num_slots))
    if not moves and status is not PlanStatus.FALLBACK:
        status = PlanStatus.UNCHANGED
    elif moves and status is PlanStatus.UNCHANGED:  # only the pins moved
        status = PlanStatus.FEASIBLE
    bound = min(solver.bound, score.d)
    # A d within D_TOLERANCE of 0 is a perfect balance up to float rounding: nothing to close.
    gap = (score.d - bound) / score.d if score.d > D_TOLERANCE else 0.0
    on_removed = problem.removed[best]
    return Plan(
        status=status,
        moves=moves,
        objective=objective,
        details={
            "gap": gap,
            "nodes": float(solver.nodes),
            "milp_objective": score.objective(problem.cost_unit),
            "bound": bound,
            "load_distance_before": before.d,
            "flux_load_distance": flux_score.d,
            "start_load_distance": start_score.d,
            "rounds": float(solver.rounds),
            "timeouts": float(solver.timeouts),
            "migration_cost": float(moved.size) if snapshot.state_size is None
            else float(opts.alpha * np.asarray(snapshot.state_size, dtype=float)[moved].sum()),
            "load_on_removed": float(problem.load[on_removed].sum() * problem.scale),
        },
    )
