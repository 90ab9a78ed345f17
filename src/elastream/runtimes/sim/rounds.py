"""Round-based allocation simulator: ALBIC's adaptation loop (Algorithm 1) on a synthetic cluster.

Each round is one statistics period (ALBIC's SPL) followed by one adaptation:

1. from round 2 on, the loads drift (:func:`~elastream.runtimes.sim.rounds_instance.drift`);
2. nodes marked for removal (B) that hold no key group any more are terminated (Algorithm 1,
   lines 1–3; the remaining nodes keep their ids and are renumbered as slots);
3. the controller observes a :class:`~elastream.core.load.LoadSnapshot` — every key group's
   load *including* its share of serialisation: a key group pays ``serialisation`` × the traffic
   it sends to or receives from key groups on other nodes, so the key-group loads add up to the
   node loads of :func:`elastream.core.traffic.slot_loads` — with state sizes, capacities and the
   traffic rows;
4. the planner plans (line 4); a :class:`ScalingPolicy`, if any, decides from the planned node
   loads whether nodes must be added or removed (line 5) and, if so, the planner plans again on
   the new node set (line 7); the plan is applied to the routing table (line 8);
5. the round is recorded (:class:`RoundRecord`), measured on the loads of this period under the
   new assignment, i.e. "directly after applying migrations" (ALBIC §5.2.1).

Scale-in, two ways (ALBIC §5.1, Fig. 5). *Integrated*: the planner gets B as its ``remove``
setting (the ``milp`` planner: B receives nothing and is drained as the budget allows, Lemmas
1–2). *Separate*: a scale-in step first spends the migration budget moving key groups off B
regardless of balance — in key-group id order, each to the active node that holds the fewest key
groups ("to the other nodes evenly") — and the planner then balances the active nodes with what is
left of the budget (it never sees B). ``"auto"`` is integrated when the planner takes a ``remove``
setting, separate otherwise.

What it supports and what it does not: key groups, not keys (a planner's split hot keys are
ignored); one budget per round as the planner's ``max_moves`` / ``max_migration_cost``; the node
count changes only through B and the scaling policy (a planner's ``num_slots`` is ignored); time is
the wall clock around the planner calls (``clock``), the only impure input.

The job is a :class:`~elastream.runtimes.sim.rounds_runtime.RoundsRuntime`: a round's
statistics period is one micro-batch of it, and every routing change is published as a version.
Each round is one step of the :class:`~elastream.control.loop.ControlLoop` the Spark runtime runs
(observe, plan, publish, record): the planner the loop calls is Algorithm 1's lines 4–7 (plan;
with a scaling policy, add or mark nodes and plan again), timed by ``clock``, and its plan, of
as many slots as nodes when nodes were added, is the version the loop publishes. Terminating the
empty nodes of B (step 2) happens between steps, as a version of its own that renumbers the
nodes after them; the loop reads it as the latest routing. The loop needs a
:class:`~elastream.core.spec.PipelineSpec`, whose key groups number 1 to 32768, so an instance
without key groups or with more calls the same lines 4–7 without the loop, with the same result.

References:
    K. G. S. Madsen, Y. Zhou, J. Cao. Integrative Dynamic Reconfiguration in a Parallel Stream
    Processing Engine. 2016: Algorithm 1, §4.2, §4.3.1,
    §5.1, §5.3.

>>> from elastream.runtimes.sim.rounds_instance import albic_instance
>>> inst = albic_instance(nodes=8, key_groups=80, varies=40, seed=0)
>>> result = run_rounds(inst, "flux", settings={"max_moves": 4}, rounds=3, drift=2.0, seed=0)
>>> [(r.round, r.status, r.migrations, round(r.load_distance, 1)) for r in result.records]
[(1, 'feasible', 4, 5.7), (2, 'feasible', 1, 4.2), (3, 'unchanged', 0, 3.6)]
>>> round(result.records[0].load_distance_before, 1), result.assignment["kg0"]
(21.3, 'n4')
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from elastream.algorithms.balance.scale_in import drain
from elastream.control.controller import Controller
from elastream.control.loop import ControlLoop
from elastream.control.planners import planner
from elastream.control.runtime import BatchObservation, Planner
from elastream.core import registry, rules
from elastream.core.errors import OptionError
from elastream.core.keygroups import MAX_KEY_GROUPS
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable
from elastream.core.traffic import collocation_factor, load_index
from elastream.runtimes.sim.rounds_instance import Instance
from elastream.runtimes.sim.rounds_instance import drift as drift_loads
from elastream.runtimes.sim.rounds_runtime import RoundsRuntime, round_spec

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

CONTRACT_COLUMNS: Final = ("round", "algo", "status", "load_distance", "collocation_factor",
                           "load_index", "migrations", "migration_cost", "solve_seconds")
"""The per-round columns of ``elastream plan balance``."""
SCALE_IN: Final = ("auto", "integrated", "separate")


@dataclass(frozen=True)
class RoundRecord:
    """What one round did (the first nine fields are :data:`CONTRACT_COLUMNS`).

    ``load_distance`` (%): ALBIC's d after the plan, :func:`removal_load_distance`.
    ``collocation_factor`` (%): traffic inside a node. ``load_index`` (%): the total node load
    (serialisation included) over the total at round 1 before its plan — ALBIC's "current average
    system load divided by the average system load right after the initialization phase", with
    the average over a fixed node count. ``migrations``: key groups moved. ``migration_cost``:
    their ``Σ state_size`` (ALBIC's ``mc_k`` with α = 1). ``solve_seconds``: the clock around the
    planner calls and the scale-in step. Then: ``load_distance_before`` (d of the period's loads
    before the plan), ``nodes`` (live nodes after the round, B included), ``removing`` (|B|),
    ``on_removed`` (key groups still on B), ``added`` and ``terminated`` (nodes this round).
    """

    round: int
    algo: str
    status: str
    load_distance: float
    collocation_factor: float
    load_index: float
    migrations: int
    migration_cost: float
    solve_seconds: float
    load_distance_before: float
    nodes: int
    removing: int
    on_removed: int
    added: int
    terminated: int

    def contract(self) -> dict[str, Any]:
        """The :data:`CONTRACT_COLUMNS` of this record."""
        row = asdict(self)
        return {name: row[name] for name in CONTRACT_COLUMNS}


@dataclass(frozen=True)
class RoundsResult:
    """Every round's record, and the cluster after the last round."""

    records: tuple[RoundRecord, ...]
    node_ids: tuple[str, ...]
    """Live nodes at the end (terminated ones are gone), in slot order."""
    key_group_ids: tuple[str, ...]
    assignments: tuple[tuple[str, ...], ...]
    """After each round, the node id of every key group (in ``key_group_ids`` order)."""
    removing: frozenset[str]
    """Nodes still marked for removal (not yet empty at the start of a round)."""

    @property
    def assignment(self) -> dict[str, str]:
        """Key-group id → node id after the last round."""
        return dict(zip(self.key_group_ids, self.assignments[-1], strict=True))


@dataclass(frozen=True)
class ScalingPolicy:
    """Algorithm 1's ``Scaling(plan)``: nodes to add or remove so utilisation meets a target.

    ALBIC leaves the scaling decision to existing techniques (§4.2); this is the plainest one.
    With the planned node loads (serialisation included, so a plan that collocates can avoid a
    scale-out) summing to ``L`` and the active nodes (not in B) of capacity ``C``, utilisation is
    ``L / C`` in percent. Above ``target + band``: nodes marked for removal are taken back (most
    loaded first), then new empty nodes of capacity ``new_capacity`` are added until ``C ≥ L /
    target``. Below ``target − band``: the least loaded active nodes are marked for removal while
    the others keep ``C ≥ L / target`` (at least one stays). Defaults: target 70%, band 15%.

    >>> ScalingPolicy().needed_capacity(total_load=700.0)
    10.0
    """

    target: float = 70.0
    band: float = 15.0
    new_capacity: float = 1.0

    def __post_init__(self) -> None:
        rules.number("target", self.target, above=0, unit="percent")
        rules.number("band", self.band, below=self.target, unit="percent")
        rules.number("new_capacity", self.new_capacity, above=0)

    def needed_capacity(self, total_load: float) -> float:
        """The capacity that runs ``total_load`` at the target utilisation."""
        return total_load / self.target


def removal_load_distance(slot_load: F64, capacity: F64, removed: Mask) -> float:
    """ALBIC §4.3.1's d in percent: mean over the active nodes' capacity; B counts only above it.

    ``mean = Σ_N load / Σ_A capacity``; d is the largest ``u_i − mean`` over all nodes and
    ``mean − u_i`` over the active ones, over ``mean``. Without B it is
    :func:`elastream.core.load.load_distance`.

    >>> removal_load_distance(np.array([10.0, 10.0, 4.0]), np.ones(3), np.array([0, 0, 1], bool))
    16.666666666666664
    """
    if not removed.any():
        return load_distance(slot_load, capacity)
    active = ~removed
    mean = float(slot_load.sum()) / float(capacity[active].sum())
    if mean <= 0:
        return 0.0
    util = slot_load / capacity
    d = max(float(np.max(util - mean)), float(np.max(mean - util[active])), 0.0)
    return d / mean * 100.0


def run_rounds(
    instance: Instance,
    algo: str,
    *,
    settings: Mapping[str, Any] | None = None,
    rounds: int = 1,
    drift: float = 0.0,
    serialisation: float = 0.0,
    scale_in: str = "auto",
    scaling: ScalingPolicy | None = None,
    seed: int = 0,
    clock: Callable[[], float] = time.perf_counter,
) -> RoundsResult:
    """Plan ``instance`` for ``rounds`` rounds with the registered planner ``algo``.

    Args:
        instance: the cluster and job; its ``remove`` nodes start in B.
        algo: a planner name of :mod:`elastream.control.planners`.
        settings: settings shared by every planner (``max_moves``, ``max_migration_cost``,
            ``time_limit``, ``seed``, …; :mod:`elastream.core.registry`): each must be a
            setting of some planner, and ``algo`` takes those it has. ``remove`` is set here.
        rounds: ≥ 1.
        drift: percent in [0, 100]; each round from the second, 20% of the loaded nodes change
            by a percentage in ``[−drift, drift]``.
        serialisation: load per unit of cross-node traffic at each end, ≥ 0.
        scale_in: ``"auto"``, ``"integrated"`` or ``"separate"`` (module docstring).
        scaling: the horizontal scaling policy, or ``None`` (node count changes only by B).
        seed: seed of the drift.
        clock: seconds, for ``solve_seconds`` (default ``time.perf_counter``).
    """
    rules.integer("rounds", rounds)
    rules.choice("scale_in", scale_in, SCALE_IN)
    plan_fn, options = planner(algo, shared=settings)
    takes_remove = _has_field(options, "remove")
    if scale_in == "integrated" and not takes_remove:
        raise OptionError("scale_in", "integrated needs a planner that takes a removal set",
                          algo)
    loop = _Loop(instance, algo, plan_fn, options, settings or {},
                 separate=scale_in == "separate" or not takes_remove,
                 serialisation=serialisation, scaling=scaling, clock=clock)
    rng = np.random.default_rng(seed)
    records, assignments = [], []
    for number in range(1, rounds + 1):
        if number > 1 and drift > 0:
            loop.load = drift_loads(loop.load, loop.slot_of, drift, rng,
                                    num_nodes=len(loop.node_ids))
        records.append(loop.round(number))
        assignments.append(tuple(loop.node_ids[s] for s in loop.slot_of.tolist()))
    return RoundsResult(
        records=tuple(records),
        node_ids=tuple(loop.node_ids),
        key_group_ids=instance.key_group_ids,
        assignments=tuple(assignments),
        removing=frozenset(loop.removing),
    )


def _has_field(options: Any, name: str) -> bool:
    return name in registry.values(options)


def _with(options: Any, **values: Any) -> Any:
    """``options`` with the settings of ``values`` it has replaced (the rest ignored)."""
    return registry.replaced(options, values)


class _Loop(RoundsRuntime):
    """The job as it evolves (a :class:`RoundsRuntime`), and one adaptation round (module doc)."""

    def __init__(self, instance: Instance, algo: str, plan_fn: Planner, options: Any,
                 settings: Mapping[str, Any], *, separate: bool, serialisation: float,
                 scaling: ScalingPolicy | None, clock: Callable[[], float]) -> None:
        super().__init__(instance, serialisation=serialisation)
        self.algo, self.plan_fn, self.options = algo, plan_fn, options
        self.settings = dict(settings)
        self.separate = separate
        self.scaling, self.clock = scaling, clock
        self.removing = set(instance.remove)
        self.reference_total: float | None = None
        self.added_ids = 0
        self.control = ControlLoop(self, Controller(self._planner, options),
                                   round_spec(instance.num_key_groups)) \
            if 1 <= instance.num_key_groups <= MAX_KEY_GROUPS else None
        self._observed: BatchObservation | None = None
        self.planned: tuple[Plan, float, int] | None = None

    def removed(self) -> Mask:
        return np.array([n in self.removing for n in self.node_ids], dtype=bool)

    # ------------------------------------------------------------------ Algorithm 1

    def terminate_empty(self) -> int:
        """Lines 1–3: drop nodes of B that hold no key group; renumber the others."""
        held = np.bincount(self.slot_of, minlength=len(self.node_ids)) > 0
        keep = ~(self.removed() & ~held)
        if keep.all():
            return 0
        gone = {self.node_ids[i] for i in np.flatnonzero(~keep)}
        new_index = np.cumsum(keep) - 1
        self.node_ids = [n for n, k in zip(self.node_ids, keep, strict=True) if k]
        self.capacity = self.capacity[keep]
        self.removing -= gone
        self.publish(RoutingTable(self.routing().version + 1,
                                  tuple(new_index[self.slot_of].tolist()), len(self.node_ids)))
        return len(gone)

    def round(self, number: int) -> RoundRecord:
        terminated = self.terminate_empty()
        observed = self.period(number)
        traffic = observed.traffic
        if self.reference_total is None:
            self.reference_total = float(observed.slot_load.sum())
        before = removal_load_distance(observed.slot_load, self.capacity, self.removed())
        previous = self.slot_of
        if self.control is None:
            plan, seconds, added = self.adapt(observed)
            self.publish(self.routing().apply_plan(plan))
        else:
            self._observed, self.planned = observed, None
            self.control.step()
            assert self.planned is not None  # a period observes K >= 1 rows: the loop plans
            plan, seconds, added = self.planned
        moved = np.flatnonzero(self.slot_of != previous)
        after_loads = self.node_loads(self.slot_of, traffic)
        removed = self.removed()
        return RoundRecord(
            round=number,
            algo=self.algo,
            status=plan.status.value,
            load_distance=removal_load_distance(after_loads, self.capacity, removed),
            collocation_factor=collocation_factor(self.slot_of, traffic),
            load_index=load_index(after_loads, self.reference_total / len(after_loads))
            if self.reference_total > 0 else 100.0,
            migrations=int(moved.size),
            migration_cost=float(self.state[moved].sum()),
            solve_seconds=seconds,
            load_distance_before=before,
            nodes=len(self.node_ids),
            removing=len(self.removing),
            on_removed=int(removed[self.slot_of].sum()),
            added=added,
            terminated=terminated,
        )

    def adapt(self, observed: BatchObservation) -> tuple[Plan, float, int]:
        """Lines 4–7: plan; with a scaling policy, add or mark nodes and plan again if it did.

        Returns the plan (of as many slots as nodes, if nodes were added), the seconds its
        planner calls took and the nodes added.
        """
        traffic = observed.traffic
        with_traffic = traffic.size > 0
        table = self.routing()
        plan, seconds = self.plan(observed.snapshot(traffic=with_traffic), table)
        if self.scaling is None:
            return plan, seconds, 0
        planned = table.apply_plan(plan).as_array()
        added, changed = self.scale(self.node_loads(planned, traffic), self.scaling)
        if changed:
            snapshot = self.observation(observed.batch_id, traffic).snapshot(
                traffic=with_traffic)
            grown = table.apply([], num_slots=len(self.node_ids)) if added else table
            plan, more = self.plan(snapshot, grown)
            seconds += more
        return (replace(plan, num_slots=len(self.node_ids)) if added else plan), seconds, added

    def scale(self, planned_loads: F64, policy: ScalingPolicy) -> tuple[int, bool]:
        """Line 5: add or mark nodes; returns (nodes added, whether anything changed)."""
        removed = self.removed()
        total = float(planned_loads.sum())
        active_capacity = float(self.capacity[~removed].sum())
        need = policy.needed_capacity(total)
        utilisation = total / active_capacity
        changed, added = False, 0
        if utilisation > policy.target + policy.band:
            for i in np.argsort(-planned_loads, kind="stable"):
                if removed[i] and active_capacity < need:
                    self.removing.discard(self.node_ids[i])
                    active_capacity += float(self.capacity[i])
                    changed = True
            while active_capacity < need:
                self.node_ids.append(self._new_id())
                self.capacity = np.append(self.capacity, policy.new_capacity)
                active_capacity += policy.new_capacity
                added += 1
                changed = True
        elif utilisation < policy.target - policy.band:
            active = np.flatnonzero(~removed)
            for i in active[np.argsort(planned_loads[active], kind="stable")]:
                if active_capacity - self.capacity[i] >= need and \
                        len(self.node_ids) - len(self.removing) > 1:
                    self.removing.add(self.node_ids[i])
                    active_capacity -= float(self.capacity[i])
                    changed = True
        return added, changed

    def _new_id(self) -> str:
        while True:
            self.added_ids += 1
            name = f"new{self.added_ids}"
            if name not in self.node_ids:
                return name

    # ------------------------------------------------------------------ planning

    def plan(self, snapshot: LoadSnapshot, table: RoutingTable) -> tuple[Plan, float]:
        """Line 4: the planner's plan (with the scale-in step first when separate), timed.

        Without a new node count or split hot keys: the simulator ignores them.
        """
        removed = self.removed()
        start = self.clock()
        if removed.any() and self.separate:
            plan = self._separate(snapshot, table, removed)
        else:
            options = _with(self.options, remove=frozenset(int(s) for s in
                                                           np.flatnonzero(removed)))
            plan = self.plan_fn(snapshot, table, options=options)
        return replace(plan, num_slots=None, hot_keys=None), self.clock() - start

    def _planner(self, snapshot: LoadSnapshot, current: RoutingTable, *, options: Any) -> Plan:
        """Lines 4–7 as the control loop calls them: :meth:`adapt` on the round's observation.

        The loop's ``snapshot`` is that observation's; its plan, seconds and nodes added are
        kept in ``planned`` for the round's record. ``options`` are the simulator's own, which
        :meth:`plan` passes to the planner (with B as ``remove``).
        """
        assert self._observed is not None and snapshot.batch_id == self._observed.batch_id
        self.planned = self.adapt(self._observed)
        return self.planned[0]

    def _budget(self) -> tuple[float, float]:
        """The separate scale-in step's budget: the planner's, else the settings' (else none)."""
        taken = registry.values(self.options)
        moves, cost = (taken.get(name, self.settings.get(name))
                       for name in ("max_moves", "max_migration_cost"))
        return (math.inf if moves is None else float(moves),
                math.inf if cost is None else float(cost))

    def _separate(self, snapshot: LoadSnapshot, table: RoutingTable, removed: Mask) -> Plan:
        """Drain B evenly first, regardless of balance; balance A with what budget is left."""
        max_moves, max_cost = self._budget()
        slot_of = table.as_array()
        active = np.flatnonzero(~removed)
        moves = {m.key_group: m for m in drain(slot_of, removed, state=self.state,
                                                 max_moves=max_moves, max_cost=max_cost)}
        cost = float(sum(self.state[kg] for kg in moves))
        drained = slot_of.copy()
        for move in moves.values():
            drained[move.key_group] = move.target
        left_moves, left_cost = max_moves - len(moves), max_cost - cost
        status = PlanStatus.FEASIBLE if moves else PlanStatus.UNCHANGED
        if left_moves > 0 and left_cost > 0:
            balance = self._balance_active(snapshot, drained, active, left_moves, left_cost)
            for move in balance.moves:
                first = moves.get(move.key_group)
                source = first.source if first is not None else move.source
                moves[move.key_group] = Move(move.key_group, source, move.target)
            if balance.moves or not moves:
                status = balance.status
        return Plan(status=status, moves=tuple(m for m in moves.values()
                                               if m.source != m.target))

    def _balance_active(self, snapshot: LoadSnapshot, slot_of: I64, active: I64,
                        max_moves: float, max_cost: float) -> Plan:
        """The planner on the active nodes and their key groups only; moves in global ids."""
        new_index = np.full(len(self.node_ids), -1, dtype=np.int64)
        new_index[active] = np.arange(active.size)
        kgs = np.flatnonzero(new_index[slot_of] >= 0)
        kg_index = np.full(slot_of.size, -1, dtype=np.int64)
        kg_index[kgs] = np.arange(kgs.size)
        traffic = None
        if snapshot.traffic is not None:
            rows = snapshot.traffic
            ends = kg_index[rows[:, :2].astype(np.int64)]
            inside = (ends >= 0).all(axis=1)
            traffic = np.column_stack([ends[inside], rows[inside, 2]])
        sub = LoadSnapshot(batch_id=snapshot.batch_id,
                           key_group_load=np.asarray(snapshot.key_group_load)[kgs],
                           state_size=self.state[kgs], capacity=self.capacity[active],
                           traffic=traffic)
        table = RoutingTable(0, tuple(new_index[slot_of[kgs]].tolist()), int(active.size))
        budget: dict[str, Any] = {"remove": frozenset()}
        if math.isfinite(max_moves):
            budget["max_moves"] = int(max_moves)
        if math.isfinite(max_cost):
            budget["max_migration_cost"] = max_cost
        options = _with(self.options, **budget)
        try:
            plan = self.plan_fn(sub, table, options=options)
        except OptionError as error:
            if error.option != "options" or options is self.options:
                raise
            # A planner bound to the options it was built with (fish): its own budget, cut.
            plan = self.plan_fn(sub, table, options=self.options)
            plan = replace(plan, moves=_within(plan.moves, self.state[kgs], max_moves,
                                               max_cost))
        moves = tuple(Move(int(kgs[m.key_group]), int(active[m.source]), int(active[m.target]))
                      for m in plan.moves)
        return replace(plan, moves=moves)


def _within(moves: tuple[Move, ...], state: F64, max_moves: float,
            max_cost: float) -> tuple[Move, ...]:
    """The longest prefix of ``moves`` within both budgets."""
    kept: list[Move] = []
    cost = 0.0
    for move in moves:
        cost += float(state[move.key_group])
        if len(kept) + 1 > max_moves or cost > max_cost * (1 + 1e-12):
            break
        kept.append(move)
    return tuple(kept)
