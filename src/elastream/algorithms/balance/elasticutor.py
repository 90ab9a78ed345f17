r"""The ``elasticutor`` planner: elastic executors over key groups and slots (Elasticutor §3–4).

Wang et al. statically partition an operator's key space among *elastic executors* and move
cores, not keys, between them (§2.2, :mod:`elastream.algorithms.elastic`). On this package's
runtimes an executor is a fixed, contiguous range of key groups, a core is a slot, and a shard
is a key group: executor ``j`` of ``E = options.executors`` (default: the table's slots, at
most its key groups) owns key groups
``[⌈jG/E⌉, ⌈(j+1)G/E⌉)`` (:func:`~elastream.algorithms.elastic.strategy.executor_of_shards`),
for ever. Each plan:

1. *How many slots* (§4.1): executor ``j``'s arrival rate is its key groups' load over the
   observation (``λ_j = Σ load / options.interval_seconds``, rows/s), every slot serves
   ``μ = options.service_rate`` rows/s, and the greedy allocation
   (:func:`~elastream.algorithms.elastic.allocation.allocate_cores`) gives ``k_j`` slots, the
   fewest that bring eq. (1)'s latency to ``options.latency_target``, within ``max_slots``.
   When even the stable minimum exceeds ``max_slots``, the largest demands are cut (at least
   one slot each).
2. *Which slots* (§4.2 on one node): a slot belongs to the executor that has the most of its
   key groups on it (ties: more load, then the lower executor); an executor keeps up to ``k_j``
   of its slots (those holding most of its key groups, then the lower id) and takes the lowest
   free slot ids for the rest. Slot sets are disjoint. They are **not contiguous**: keeping the
   slots an executor has means growing or shrinking one executor moves only that executor's
   key groups, while contiguous ranges would renumber the slots of every executor after it and
   move all their key groups (and state) with them.
3. *Which key group on which of its slots* (§3.1): the executor's key groups are balanced over
   its slots from where they are with
   :func:`~elastream.algorithms.elastic.shard_balance.balance_shards` (``theta``; key groups on
   a slot the executor does not have are placed again, heaviest first).

**Budget.** ``max_moves`` (default none) bounds the moves of one plan: those of key groups on a
slot outside their executor's set come first (key-group order), then the balancing ones; the
rest wait for the next plans (``details["pending_moves"]``). Plans converge: the slot sets are
stable from one plan to the next when the loads are.

**Slot count.** ``RoutingTable.num_slots`` is the number of slot ids the runtime has (Spark: the
state partitions, fixed at the query's start, :class:`~elastream.core.job.PipelineSpec`'s
``max_slots``), not the number in use. ``max_slots`` defaults to ``current.num_slots``, and the
plan's ``num_slots`` is ``None`` unless ``max_slots`` is larger (then it is ``max_slots``); the
slots in use are ``Σ k_j`` (``details["slots_used"]``); the others carry no key group.

**Without a service rate** (``service_rate=None``, the default until the runtime measures it
and passes it in with ``dataclasses.replace(options, service_rate=…)``) the model does not run:
every executor keeps the slots it holds (at least one), and only steps 2 and 3 happen. With
the default ``executors`` (one per slot of the table, or per key group if there are fewer)
such a plan makes every slot own one key-group range and then stays put: the static approach,
until a service rate makes it elastic.

**Status and objective** (the balancing planners' contract): ``FEASIBLE`` when the plan moves
key groups or grows the slot ids, else ``UNCHANGED``; ``objective`` is the load distance after
the moves (:func:`~elastream.core.load.load_distance`; capacities are shown, not planned for:
Elasticutor's cores are alike). ``details``: ``expected_latency`` (the model's E[T] with the
slots given, seconds), ``latency_target`` and ``latency_met`` (1.0 or 0.0: 0.0 when
``max_slots`` cannot meet the target — the plan still gives the allocation of least latency
within them) when there is a service rate; always ``slots_used``, ``pending_moves``,
``cores_<j>`` (slots of executor ``j``) and ``executor_of_slot_<s>`` (−1: unused).

Complexity: O(G log G + E·k̄ + S) plus the allocation's O(S·k̄ log E).

References:
    L. Wang, T. Z. J. Fu, R. T. B. Ma, M. Winslett, Z. Zhang. Elasticutor: Rapid Elasticity for
    Realtime Stateful Stream Processing (``/work/shared/papers/002``), §2.2, §3.1, §4.1, §4.2.

>>> snap = LoadSnapshot(0, np.array([400.0, 300, 100, 100, 50, 50, 50, 50]))
>>> opts = ElasticutorOptions(executors=2, latency_target=0.05, service_rate=200.0)
>>> p = plan(snap, RoutingTable.hashed(8, 8), options=opts)  # λ = 900 and 200 rows/s
>>> p.status.value, p.details["cores_0"], p.details["cores_1"]
('feasible', 5.0, 2.0)
>>> round(p.details["expected_latency"], 4), p.details["slots_used"]
(0.0115, 7.0)
>>> RoutingTable.hashed(8, 8).apply_plan(p).slot_of
(0, 1, 2, 3, 4, 5, 4, 5)
>>> # No service rate yet: one executor per slot, each slot given one key-group range.
>>> RoutingTable.hashed(8, 4).apply_plan(plan(snap, RoutingTable.hashed(8, 4))).slot_of
(0, 0, 2, 2, 1, 1, 3, 3)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from elastream.algorithms.elastic.allocation import allocate_cores
from elastream.algorithms.elastic.latency import network_latency
from elastream.algorithms.elastic.shard_balance import balance_shards
from elastream.algorithms.elastic.strategy import executor_of_shards
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable


@dataclass(frozen=True)
class ElasticutorOptions:
    """Parameters of :func:`plan`.

    ``executors``: E, the fixed key-group ranges (≤ G and ≤ the slots; default: as many as the
    table has slots, at most G).
    ``latency_target`` (default 1.0): T_max, seconds. ``service_rate``: rows/s one slot
    processes (μ); ``None`` (default): not measured yet, the model does not run (module doc).
    ``interval_seconds`` (default 1.0): the observation the loads were counted over.
    ``max_slots``: the slot budget (default the routing table's slots). ``max_moves``: most
    moves per plan (default none). ``theta`` (default 1.2): δ threshold inside an executor.
    """

    executors: int | None = None
    latency_target: float = 1.0
    service_rate: float | None = None
    interval_seconds: float = 1.0
    max_slots: int | None = None
    max_moves: int | None = None
    theta: float = 1.2

    def __post_init__(self) -> None:
        if self.executors is not None:
            _integer("executors", self.executors, 1)
        _positive("latency_target", self.latency_target)
        if self.service_rate is not None:
            _positive("service_rate", self.service_rate)
        _positive("interval_seconds", self.interval_seconds)
        if self.max_slots is not None:
            _integer("max_slots", self.max_slots, 1)
        if self.max_moves is not None:
            _integer("max_moves", self.max_moves, 0)
        if isinstance(self.theta, bool) or not isinstance(self.theta, int | float) \
                or not math.isfinite(self.theta) or self.theta < 1:
            raise OptionError("theta", "must be a finite number >= 1", self.theta)


def plan(snapshot: LoadSnapshot, current: RoutingTable, *,
         options: ElasticutorOptions | None = None) -> Plan:
    """Slots per executor by the queueing model, key groups balanced inside (module doc)."""
    opts = ElasticutorOptions() if options is None else options
    if not isinstance(opts, ElasticutorOptions):
        raise OptionError("options", "must be ElasticutorOptions for the elasticutor planner",
                          opts)
    loads, capacity = snapshot.validated_for(current)
    num_kg, budget = current.num_key_groups, opts.max_slots or current.num_slots
    executors = min(num_kg, budget) if opts.executors is None else opts.executors
    if executors > min(num_kg, budget):
        raise OptionError("executors", f"must be at most the key groups ({num_kg}) and the "
                          f"slots ({budget})", executors)
    owner = executor_of_shards(num_kg, executors)
    slot_of = current.as_array()
    held = _held_slots(slot_of, owner, loads, executors, budget)
    details: dict[str, float] = {}
    if opts.service_rate is None:  # no model: executors keep their slots (one at least)
        cores = _cut([max(len(h), 1) for h in held], budget)
    else:
        rates = np.bincount(owner, weights=loads, minlength=executors) / opts.interval_seconds
        mu = [opts.service_rate] * executors
        alloc = allocate_cores(rates.tolist(), mu, opts.latency_target, budget,
                               current=[len(h) for h in held])
        cores = _cut(list(alloc.cores), budget)
        latency = network_latency(rates.tolist(), mu, cores)
        details.update(expected_latency=latency, latency_target=opts.latency_target,
                       latency_met=float(latency <= opts.latency_target))
    slots = _slot_sets(held, cores, budget)
    target = _balanced(slot_of, owner, loads, slots, opts.theta)
    moves, pending = _moves(slot_of, target, owner, slots, opts.max_moves)
    grows = budget > current.num_slots
    after = current.apply(moves, budget if grows else None)
    executor_of_slot = np.full(after.num_slots, -1.0)
    for j, owned in enumerate(slots):
        executor_of_slot[owned] = j
    details.update({"slots_used": float(sum(cores)), "pending_moves": float(pending),
                    **{f"cores_{j}": float(k) for j, k in enumerate(cores)},
                    **{f"executor_of_slot_{s}": float(e) for s, e in enumerate(executor_of_slot)}})
    return Plan(status=PlanStatus.FEASIBLE if moves or grows else PlanStatus.UNCHANGED,
                moves=tuple(moves), num_slots=budget if grows else None,
                objective=load_distance(snapshot.slot_load(after), np.concatenate(
                    [capacity, np.ones(after.num_slots - capacity.size)])),
                details=details)


def _held_slots(slot_of: np.ndarray, owner: np.ndarray, loads: np.ndarray, executors: int,
                budget: int) -> list[list[int]]:
    """Each executor's slots now, best first: the slot's majority executor owns it."""
    held: list[list[tuple[int, float, int]]] = [[] for _ in range(executors)]
    for s in np.unique(slot_of[slot_of < budget]):
        here = slot_of == s
        count = np.bincount(owner[here], minlength=executors)
        load = np.bincount(owner[here], weights=loads[here], minlength=executors)
        j = int(np.lexsort((np.arange(executors), -load, -count))[0])
        held[j].append((-int(count[j]), -float(load[j]), int(s)))
    return [[s for _, _, s in sorted(h)] for h in held]


def _cut(cores: list[int], budget: int) -> list[int]:
    """Demands cut to ``budget`` slots in total, largest first, at least one each."""
    while sum(cores) > budget:
        j = max(range(len(cores)), key=lambda e: (cores[e], -e))
        cores[j] -= 1
    return cores


def _slot_sets(held: list[list[int]], cores: list[int], budget: int) -> list[list[int]]:
    """Disjoint slot sets of ``cores[j]`` slots: kept best-first, then the lowest free ids."""
    kept = [h[:k] for h, k in zip(held, cores, strict=True)]
    taken = {s for h in kept for s in h}
    free = iter(s for s in range(budget) if s not in taken)
    return [sorted(h + [next(free) for _ in range(k - len(h))])
            for h, k in zip(kept, cores, strict=True)]


def _balanced(slot_of: np.ndarray, owner: np.ndarray, loads: np.ndarray,
              slots: list[list[int]], theta: float) -> np.ndarray:
    """Every key group's slot: its executor's key groups balanced over its slots (§3.1)."""
    target = slot_of.copy()
    for j, owned in enumerate(slots):
        mine = np.flatnonzero(owner == j)
        index = {s: i for i, s in enumerate(owned)}
        start = [index.get(int(s), len(owned)) for s in slot_of[mine]]
        local = balance_shards(loads[mine], start, len(owned), theta=theta).assignment
        target[mine] = np.asarray(owned)[np.asarray(local, dtype=np.int64)]
    return target


def _moves(slot_of: np.ndarray, target: np.ndarray, owner: np.ndarray, slots: list[list[int]],
           max_moves: int | None) -> tuple[list[Move], int]:
    """Moves to ``target``, those leaving a foreign slot first; and how many wait."""
    changed = np.flatnonzero(slot_of != target)
    foreign = np.array([int(slot_of[k]) not in slots[int(owner[k])] for k in changed], bool)
    order = np.concatenate([changed[foreign], changed[~foreign]])
    limit = order.size if max_moves is None else min(max_moves, order.size)
    moves = [Move(int(k), int(slot_of[k]), int(target[k])) for k in order[:limit]]
    return moves, int(order.size - limit)


def _integer(name: str, value: int, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise OptionError(name, f"must be an integer >= {low}", value)


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value <= 0:
        raise OptionError(name, "must be a finite number > 0", value)
