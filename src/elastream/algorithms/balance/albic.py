r"""The ``albic`` planner: ALBIC's Algorithm 2, collocation on top of the MILP (§4.3.2).

Madsen, Zhou and Cao run a heuristic around the MILP of §4.3.1
(:mod:`~elastream.algorithms.balance.milp`) that keeps communicating key groups together and
collocates one more pair each round, while the MILP keeps the load balanced within the budget:

1. **Scores.** For each key group ``g`` that sends traffic, ``avg(g) = out(g) / #downstream key
   groups`` — its output spread evenly over the key groups of its operator's downstream
   operators. A pair ``(g, h)`` with ``out(g, h) > sF · avg(g)`` is worth collocating: it goes
   to *colGrps* when both sit on one slot now, else to *toBeColGrps*.
2. **Maintain collocation.** colGrps pairs are merged into sets (connected components). A set
   ``S`` is cut into ``max(p1, p2)`` partitions, ``p1 = ⌈Σ_S mc / maxMigrCost⌉`` (so that
   a partition can move within one round's budget) and ``p2 = ⌈Σ_S gLoad / maxPL⌉``, by
   balanced graph partitioning (METIS, :mod:`~elastream.algorithms.balance.graph_partition`)
   of the traffic among its key groups; vertex weights are the migration costs when
   ``Pmc / maxMigrCost > PL / maxPL`` and the loads when it is the other way round (a tie is
   broken at random), and a partition still over either limit is cut again. Each partition
   is one unit for the MILP (``together``).
3. **Improve collocation.** The toBeColGrps pair with the most traffic (ties at random) is
   placed on one slot (``pin``): case 1, neither key group is in a partition — the less
   utilised of their two slots; case 2, one is — the slot of that partition; case 3, both
   are — both partitions onto the less utilised slot.
4. **Solve** the constrained MILP. If the load distance exceeds ``maxLD``, start again with
   ``maxPL − stepPL``: smaller partitions, more freedom to balance. At ``maxPL = 0`` every key
   group is its own partition and the plain MILP decides, collocation ignored (as the paper
   says), and its plan is returned whatever its load distance. (A smaller ``maxPL`` that
   leaves the units and the placed pair as they were is not solved again: the MILP would give
   the same answer.)

ALBIC keeps no state between rounds: which pairs are collocated is read off the current
assignment, so the planner is a pure function like every other.

**Where this differs from the paper, and why.**

- *Operators.* Step 1 needs each key group's operator and its downstream operators; a
  snapshot only has key-group traffic. ``operators`` gives one operator id per key group. Without
  it, operators are derived from the traffic: a key group's depth in the traffic graph (the
  longest chain of key groups sending to it) is its operator. That is exact for a pipeline
  whose every key group receives traffic from the operator before it (a key group that gets
  nothing counts with the sources); a cyclic traffic graph needs ``operators``. Each
  operator's key groups, as counted for the ``#downstream key groups``, are those at its depth.
- *Units.* ``maxPL`` and ``maxLD`` are percent of the mean slot load (ALBIC: percent of a node's
  capacity, a node being loaded to some level under 100%), because our loads are tuple counts;
  with nodes at ``u``% load, ALBIC's absolute 10 points of maxLD are ``1000 / u``% here.
- *Budget.* ALBIC states ``p1`` with ``maxMigrCost``; with ``max_moves`` (its §5 variant,
  maxMigrations) ``mc = 1`` per key group; with both set, the tighter one counts.
- *Infeasible collocation.* The paper does not say what to do when the chosen pair's placement
  does not fit the budget or lands on a node marked for removal. Here the pair's other slot is
  tried, then the next pair by traffic; a pair is placed only where it fits the budget, a slot
  not in ``remove``, and ``max_state_per_slot``.
- *Node load.* The MILP balances each key group's load as measured now: its own load plus
  ``serialisation`` × its cross-slot traffic (:func:`~elastream.core.traffic.key_group_loads`), the
  location-independent ``gLoad`` of §4.3.1. The load distance checked against ``maxLD`` and
  reported is that of the node loads after the plan, cross-slot serialisation included
  (:func:`~elastream.core.traffic.slot_loads`).

**Status.** ``UNCHANGED`` when nothing moves; ``FALLBACK`` when the last MILP solve fell back
to Flux (a solver error); ``FEASIBLE`` otherwise — ALBIC is a heuristic, even when the
constrained MILP was solved to optimality. ``objective`` is the load distance after the plan
(%, ALBIC's d when slots are marked for removal). ``details``: ``load_distance_before``,
``collocation_factor`` and ``cross_traffic`` after and ``collocation_factor_before`` (when there
is traffic), ``max_partition_load`` (the maxPL of the returned solve), ``retries``,
``collocated_sets``, ``units`` (partitions of two or more), ``collocated_pairs`` and
``candidate_pairs`` (|colGrps|, |toBeColGrps|), ``collocation_case`` (0: no pair placed, else
1–3) and ``new_collocation_rate``, and the MILP's ``migration_cost`` and ``gap``.

Complexity per solve: O(E log E) for E traffic rows (scores, sets), METIS on the sets, and one
MILP solve bounded by ``time_limit`` (:mod:`~elastream.algorithms.balance.milp`); at most
``1 + ⌈maxPL / stepPL⌉`` solves (the paper: "it is very rare that any recalculation of ALBIC is
needed").

References:
    K. G. S. Madsen, Y. Zhou, J. Cao. Integrative Dynamic Reconfiguration in a Parallel Stream
    Processing Engine. 2016, §4.3.2, Algorithm 2, §5.3.
    G. Karypis, V. Kumar. Multilevel algorithms for multi-constraint graph partitioning. SC 1998.

Two operators of four key groups each on two slots; key group ``i`` sends only to ``4 + i``,
which sits on the other slot. One round places the pair with the most traffic (``3 → 7``, case
1, equal loads: on key group 3's slot) and the MILP restores the balance with the second
migration of its budget — key group 2, which so joins key group 6:

>>> traffic = np.array([[0, 4, 4.0], [1, 5, 5.0], [2, 6, 6.0], [3, 7, 7.0]])
>>> snap = LoadSnapshot(0, np.ones(8), traffic=traffic)
>>> current = RoutingTable(0, (0, 0, 1, 1, 1, 1, 0, 0), 2)
>>> p = plan(snap, current, options=AlbicOptions(milp=MilpOptions(max_moves=2, max_nodes=100)))
>>> [(m.key_group, m.source, m.target) for m in p.moves]
[(2, 1, 0), (7, 0, 1)]
>>> p.details["collocation_case"], round(p.details["collocation_factor"], 1), p.objective
(1.0, 59.1, 0.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Final

import numpy as np

from elastream.algorithms.balance import collocation, graph_partition, milp
from elastream.algorithms.balance.collocation import F64, I64, Mask
from elastream.algorithms.balance.milp import MilpOptions
from elastream.core import registry, rules
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot
from elastream.core.plan import Capability, Plan, PlanStatus
from elastream.core.routing import RoutingTable
from elastream.core.traffic import key_group_loads, slot_loads

NAME: Final = "albic"
CAN: Final[frozenset[Capability]] = frozenset({Capability.TAKE_SCALE_IN_MARK})
"""What it can do beyond moving key groups (:class:`~elastream.core.plan.Capability`)."""

CEIL_TOLERANCE: Final = 1e-9
"""``⌈x⌉`` is taken of ``x − CEIL_TOLERANCE``: a set exactly at a limit is not cut."""


@dataclass(frozen=True)
class AlbicOptions:
    """Parameters of :func:`plan` (module docstring).

    Algorithm 2's: ``max_load_distance`` (maxLD, default 10, % of the mean slot load),
    ``max_partition_load`` (maxPL, default 25, % of the mean slot load; 0: the plain MILP),
    ``step_partition_load`` (stepPL, default 5, > 0), ``score_factor`` (sF, default 1.5).
    ``serialisation`` (default 0.0): the load a unit of cross-slot traffic costs at each end
    (:func:`~elastream.core.traffic.slot_loads`). ``operators`` (default ``None``: derived from
    the traffic): one operator id ≥ 0 per key group, as a tuple.

    ``milp``: the MILP's :class:`~elastream.algorithms.balance.milp.MilpOptions` —
    ``max_moves`` (ALBIC's maxMigrations), ``max_migration_cost`` (maxMigrCost) with
    ``alpha``, ``remove`` (B), ``max_state_per_slot``, ``time_limit`` (per MILP solve),
    ``max_nodes``, ``mip_gap``, ``seed`` (also METIS's seed and the random tie-breaks). Its
    ``together`` and ``pin`` are ALBIC's to set (steps 2 and 3), so they must stay empty and
    are no settings. As settings of the registry they are flat: ``planner("albic",
    time_limit=0.5)``.
    """

    max_load_distance: float = 10.0
    max_partition_load: float = 25.0
    step_partition_load: float = 5.0
    score_factor: float = 1.5
    serialisation: float = 0.0
    operators: tuple[int, ...] | None = None
    milp: MilpOptions = field(default_factory=MilpOptions,
                              metadata=registry.hiding("together", "pin"))

    def __post_init__(self) -> None:
        rules.number("max_load_distance", self.max_load_distance)
        rules.number("max_partition_load", self.max_partition_load)
        rules.number("step_partition_load", self.step_partition_load, above=0)
        rules.number("score_factor", self.score_factor)
        rules.number("serialisation", self.serialisation)
        if self.operators is not None and (
            not isinstance(self.operators, tuple)
            or not all(rules.is_count(o) and o >= 0 for o in self.operators)
        ):
            raise OptionError("operators", "must be None or a tuple of operator ids >= 0",
                              self.operators)
        if not isinstance(self.milp, MilpOptions):
            raise OptionError("milp", "must be MilpOptions", self.milp)
        for name in ("together", "pin"):
            if getattr(self.milp, name):
                raise OptionError(name, "is set by ALBIC itself (steps 2 and 3), not a setting",
                                  getattr(self.milp, name))


def plan(
    snapshot: LoadSnapshot, current: RoutingTable, *, options: AlbicOptions | None = None
) -> Plan:
    """One round of ALBIC (module docstring); never returns nothing.

    Args:
        snapshot: ``key_group_load``, optionally ``capacity``, ``state_size`` (required by
            ``max_migration_cost`` and ``max_state_per_slot``) and ``traffic`` (without it
            ALBIC is the MILP).
        current: the routing table in force.
        options: :class:`AlbicOptions`; ``AlbicOptions()`` when omitted.
    """
    opts = AlbicOptions() if options is None else options
    if not isinstance(opts, AlbicOptions):
        raise OptionError("options", "must be AlbicOptions for the albic planner", opts)
    job = _Job.build(snapshot, current, opts)
    max_pl, retries, solved = opts.max_partition_load, 0, None
    while True:
        units: list[I64] = []
        pins: tuple[tuple[int, int], ...] = ()
        case, rate = 0, 0.0
        if max_pl > 0:
            rng = np.random.default_rng(opts.milp.seed)
            units = [u for s in job.sets for u in job.partitions(s, max_pl, rng) if u.size > 1]
            pins, case, rate = job.new_collocation(units, rng)
        together = tuple(tuple(int(k) for k in u) for u in units)
        if (together, pins) != solved:  # the same constraints again: the same solution
            solved = (together, pins)
            result = milp.plan(job.milp_snapshot, current,
                               options=replace(opts.milp, together=together, pin=pins))
            assign = current.apply_plan(result).as_array()
            distance = job.distance(assign)
        if distance <= opts.max_load_distance or max_pl <= 0:
            break
        max_pl = max(0.0, max_pl - opts.step_partition_load)
        retries += 1

    if not result.moves:
        status = PlanStatus.UNCHANGED
    elif result.status is PlanStatus.FALLBACK:
        status = PlanStatus.FALLBACK
    else:
        status = PlanStatus.FEASIBLE
    before = collocation.after(job.origin, snapshot.traffic)
    details = {
        "load_distance_before": job.distance(job.origin),
        **({"collocation_factor_before": before["collocation_factor"]} if before else {}),
        **collocation.after(assign, snapshot.traffic),
        "max_partition_load": max_pl,
        "retries": float(retries),
        "collocated_sets": float(len(job.sets)),
        "units": float(len(units)),
        "collocated_pairs": float(job.collocated.sum()),
        "candidate_pairs": float((~job.collocated).sum()),
        "collocation_case": float(case),
        "new_collocation_rate": rate,
        "migration_cost": result.details.get("migration_cost", 0.0),
        "gap": result.details.get("gap", 0.0),
    }
    return Plan(status=status, moves=result.moves, objective=distance, details=details)


@dataclass(frozen=True)
class _Job:
    """One round's inputs, validated, and what steps 1 and 2 read off them."""

    opts: AlbicOptions
    loads: F64
    measured: F64
    capacity: F64
    removed: Mask
    origin: I64
    traffic: F64
    share: F64
    """Each key group's measured load in percent of the mean slot load (maxPL's unit)."""
    budgets: tuple[tuple[F64, float], ...]
    """``(mc per key group, budget)`` for each budget set: maxMigrations, maxMigrCost."""
    state: F64 | None
    pairs: F64
    """Step 1's pairs worth collocating: rows ``(g, h, out(g, h))``."""
    collocated: Mask
    """Per row of ``pairs``: both on one slot now (colGrps), else toBeColGrps."""
    sets: tuple[I64, ...]
    milp_snapshot: LoadSnapshot

    @classmethod
    def build(cls, snapshot: LoadSnapshot, current: RoutingTable, opts: AlbicOptions) -> _Job:
        loads, capacity = snapshot.validated_for(current)
        num_kgs = current.num_key_groups
        removed = collocation.removed_slots(opts.milp.remove, current.num_slots)
        state = _state(snapshot, num_kgs, opts)
        traffic = collocation.pairs(snapshot.traffic, num_kgs)
        origin = current.as_array()
        measured = key_group_loads(origin, loads, traffic, serialisation=opts.serialisation)
        mean = float(measured.sum()) / float(capacity[~removed].sum())
        share = measured / mean * 100.0 if mean > 0 else np.zeros(num_kgs)
        budgets: list[tuple[F64, float]] = []
        if opts.milp.max_moves is not None:
            budgets.append((np.ones(num_kgs), float(opts.milp.max_moves)))
        if opts.milp.max_migration_cost is not None and state is not None:
            budgets.append((opts.milp.alpha * state, opts.milp.max_migration_cost))
        pairs = worth_collocating(traffic, num_kgs, opts.score_factor, opts.operators)
        a, b = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
        collocated = origin[a] == origin[b]
        return cls(
            opts=opts, loads=loads, measured=measured, capacity=capacity, removed=removed,
            origin=origin, traffic=traffic, share=share, budgets=tuple(budgets), state=state,
            pairs=pairs, collocated=collocated,
            sets=collocated_sets(num_kgs, a[collocated], b[collocated]),
            milp_snapshot=LoadSnapshot(snapshot.batch_id, measured, state_size=state,
                                       capacity=snapshot.capacity),
        )

    def distance(self, assign: I64) -> float:
        """Load distance of the node loads, serialisation included (module docstring)."""
        node = slot_loads(assign, self.loads, self.traffic,
                          serialisation=self.opts.serialisation, num_slots=self.capacity.size)
        return collocation.distance(node, self.capacity, self.removed)

    def partitions(self, members: I64, max_pl: float, rng: np.random.Generator) -> list[I64]:
        """Step 2: ``members`` (one set) cut until every part is within maxPL and the budget."""
        done: list[I64] = []
        todo = [members]
        while todo:
            part = todo.pop()
            load_ratio = float(self.share[part].sum()) / max_pl
            cost_ratio, cost = 0.0, self.share
            for mc, budget in self.budgets:
                if budget > 0 and float(mc[part].sum()) / budget > cost_ratio:
                    cost_ratio, cost = float(mc[part].sum()) / budget, mc
            parts = max(_ceil(load_ratio), _ceil(cost_ratio), 1)
            if parts <= 1 or part.size == 1:
                done.append(part)
                continue
            by_cost = cost_ratio > load_ratio or (cost_ratio == load_ratio
                                                  and rng.random() < 0.5)
            weight = (cost if by_cost else self.share)[part]
            todo.extend(graph_partition.split(part, parts, weight, self.traffic,
                                              seed=self.opts.milp.seed))
        return sorted(done, key=lambda p: int(p[0]))

    def new_collocation(
        self, units: list[I64], rng: np.random.Generator
    ) -> tuple[tuple[tuple[int, int], ...], int, float]:
        """Step 3: the pins for the pair placed this round, its case (1–3) and its traffic.

        ``((), 0, 0.0)`` when no pair is left to collocate or none fits (module docstring).
        """
        todo = np.flatnonzero(~self.collocated)
        if todo.size == 0:
            return (), 0, 0.0
        order = todo[np.lexsort((rng.random(todo.size), -self.pairs[todo, 2]))]
        unit_of = np.full(self.origin.size, -1, dtype=np.int64)
        for i, unit in enumerate(units):
            unit_of[unit] = i
        node = slot_loads(self.origin, self.loads, self.traffic,
                          serialisation=self.opts.serialisation, num_slots=self.capacity.size)
        util = node / self.capacity
        for row in order:
            g, h = int(self.pairs[row, 0]), int(self.pairs[row, 1])
            ng, nh = int(self.origin[g]), int(self.origin[h])
            in_g, in_h = unit_of[g] >= 0, unit_of[h] >= 0
            if in_g != in_h:
                case, slots = 2, ([ng, nh] if in_g else [nh, ng])
            else:
                case, slots = (3 if in_g else 1), ([nh, ng] if util[nh] < util[ng]
                                                   else [ng, nh])
            group = np.concatenate([units[unit_of[k]] if unit_of[k] >= 0 else np.array([k])
                                    for k in (g, h)])
            for slot in slots:
                if self._fits(group, slot):
                    return ((g, slot), (h, slot)), case, float(self.pairs[row, 2])
        return (), 0, 0.0

    def _fits(self, group: I64, slot: int) -> bool:
        """Whether moving ``group`` to ``slot`` respects B, the budgets and the state limit."""
        if self.removed[slot]:
            return False
        arriving = group[self.origin[group] != slot]
        for mc, budget in self.budgets:
            if float(mc[arriving].sum()) > budget * (1 + 1e-12):
                return False
        limit = self.opts.milp.max_state_per_slot
        if limit is not None and self.state is not None and arriving.size:
            held = float(self.state[self.origin == slot].sum())
            if held + float(self.state[arriving].sum()) > max(held, limit) * (1 + 1e-12):
                return False
        return True


def _state(snapshot: LoadSnapshot, num_kgs: int, opts: AlbicOptions) -> F64 | None:
    """``snapshot.state_size`` as floats (the MILP checks it again, with the same rules)."""
    if snapshot.state_size is None:
        if opts.milp.max_migration_cost is not None or opts.milp.max_state_per_slot is not None:
            raise OptionError("snapshot.state_size", "must be given with max_migration_cost "
                              "or max_state_per_slot", None)
        return None
    state = np.asarray(snapshot.state_size, dtype=float)
    if state.shape != (num_kgs,):
        raise OptionError("snapshot.state_size", f"must hold one size per key group "
                          f"(G={num_kgs})", state.shape)
    return state


def operators_of(traffic: F64, num_key_groups: int, operators: tuple[int, ...] | None) -> I64:
    """Each key group's operator: ``operators``, or its depth in the traffic graph.

    >>> traffic = np.array([[0, 2, 1.0], [1, 3, 1.0], [2, 4, 1.0], [0, 4, 1.0]])
    >>> operators_of(traffic, 6, None).tolist()
    [0, 0, 1, 1, 2, 0]
    """
    if operators is not None:
        if len(operators) != num_key_groups:
            raise OptionError("operators", f"must give one operator per key group "
                              f"(G={num_key_groups})", len(operators))
        return np.asarray(operators, dtype=np.int64)
    depth = np.zeros(num_key_groups, dtype=np.int64)
    a, b = traffic[:, 0].astype(np.int64), traffic[:, 1].astype(np.int64)
    for _ in range(num_key_groups + 1):
        deeper = depth.copy()
        np.maximum.at(deeper, b, depth[a] + 1)
        if np.array_equal(deeper, depth):
            return depth
        depth = deeper
    raise OptionError("snapshot.traffic", "must not form a cycle between key groups unless "
                      "operators are given", "a cycle")


def worth_collocating(traffic: F64, num_kgs: int, score_factor: float,
                      operators: tuple[int, ...] | None = None) -> F64:
    """Step 1: the rows ``(g, h, out(g, h))`` of ``traffic`` with ``out(g, h) > sF · avg(g)``.

    ``traffic`` as :func:`~.collocation.pairs` gives it; ``avg(g)`` is ``out(g)`` over the
    key groups of the operators downstream of ``g``'s (:func:`operators_of`).

    >>> traffic = np.array([[0, 2, 9.0], [0, 3, 1.0], [1, 2, 5.0], [1, 3, 5.0]])
    >>> worth_collocating(traffic, 4, 1.5).tolist()
    [[0.0, 2.0, 9.0]]
    """
    if traffic.size == 0:
        return np.empty((0, 3))
    op = operators_of(traffic, num_kgs, operators)
    a, b, rate = traffic[:, 0].astype(np.int64), traffic[:, 1].astype(np.int64), traffic[:, 2]
    num_ops = int(op.max()) + 1
    size = np.bincount(op, minlength=num_ops).astype(float)
    link = np.unique(op[a] * num_ops + op[b])  # operator → downstream operator
    downstream = np.bincount(link // num_ops, weights=size[link % num_ops], minlength=num_ops)
    out = np.bincount(a, weights=rate, minlength=num_kgs)
    avg = out[a] / downstream[op[a]]
    return traffic[rate > score_factor * avg]


def collocated_sets(num_kgs: int, a: I64, b: I64) -> tuple[I64, ...]:
    """Step 2's sets: the components, by lowest id, that the pairs ``(a[i], b[i])`` connect.

    Each set holds two or more key groups.

    >>> [s.tolist() for s in collocated_sets(6, np.array([4, 0, 2]), np.array([5, 2, 5]))]
    [[0, 2, 4, 5]]
    """
    parent = list(range(num_kgs))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        rx, ry = root(x), root(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    members = np.unique(np.concatenate([a, b])) if a.size else np.empty(0, dtype=np.int64)
    roots = np.array([root(int(k)) for k in members], dtype=np.int64)
    sets = (members[roots == r] for r in np.unique(roots))
    return tuple(s for s in sets if s.size > 1)


def _ceil(x: float) -> int:
    return math.ceil(x - CEIL_TOLERANCE)
