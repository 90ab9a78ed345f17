r"""The ``elasticutor`` planner: elastic executors over key groups and slots (Elasticutor §3–4).

Wang et al. statically partition an operator's key space among *elastic executors* and move
cores, not keys, between them (§2.2, :mod:`elastream.algorithms.elastic`). On this package's
runtimes an executor is a fixed, contiguous range of key groups, a core is a slot, and a shard
is a key group: executor ``j`` of ``E = options.executors`` (default: the table's slots, at
most its key groups) owns key groups
``[⌈jG/E⌉, ⌈(j+1)G/E⌉)`` (:func:`~elastream.algorithms.elastic.strategy.executor_of_shards`),
for ever. Each plan:

1. *How many slots* (§4.1): executor ``j``'s arrival rate is its key groups' load over the
   observation (``λ_j = Σ load / interval``, rows/s; ``interval``: ``options.interval_seconds``,
   else the snapshot's measured span, else 1 s), every slot serves ``μ`` rows/s
   (``options.service_rate``, else measured: below), and the greedy allocation
   (:func:`~elastream.algorithms.elastic.core_allocation.allocate_cores`) gives ``k_j`` slots, the
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
state partitions, fixed at the query's start, :class:`~elastream.core.spec.PipelineSpec`'s
``max_slots``), not the number in use. ``max_slots`` defaults to ``current.num_slots``, and the
plan's ``num_slots`` is ``None`` unless ``max_slots`` is larger (then it is ``max_slots``); the
slots in use are ``Σ k_j`` (``Plan.slots_used``); the others carry no key group.

**Measured service rates** (``service_rate=None``, the default). A runtime that times its slots
puts :class:`~elastream.core.load.ServiceTimes` on the snapshot: ``μ`` is then the rows the
slots processed per second of their busy time, pooled over the slots and over the runtime's
recent observations (§4.1: "μ_j ... measured by the system"). A *micro-batch* runtime (Spark)
also reports each batch's ``overhead_seconds`` ``O``, the part of a batch more slots do not
shorten (scheduling, shuffles, commits), and there a row's latency is its batch's, not a
queue's: a row waits for the batch it lands in and leaves when that batch ends. Slots keep up
with batches of ``T_max`` seconds when each processes its share within ``T_max − O``, so the
model runs with the effective rate ``μ·(1 − O/T_max)`` per slot: its stability condition ``λ_j
< k_j·μ_eff`` is then the batch-duration target, and its per-row waiting (microseconds at
Spark's row costs) stays far below any ``T_max`` — the greedy stops at the stable minimum
``⌊λ_j/μ_eff⌋ + 1``, the fewest slots whose batches end within the target. When ``O ≥ T_max``
no number of slots meets it: the plan takes the whole budget, ``latency_met`` 0. (``O = 0``, a
tuple-at-a-time runtime, is the paper's model unchanged.)

**Without a service rate** (none given, none measured: the first observations, or no rows)
the model does not run: every executor keeps the slots it holds (at least one), and only
steps 2 and 3 happen. With the default ``executors`` (one per slot of the table, or per key
group if there are fewer) such a plan makes every slot own one key-group range and then
stays put: the static approach, until a service rate makes it elastic.

**Status and objective** (the balancing planners' contract): ``FEASIBLE`` when the plan moves
key groups or grows the slot ids, else ``UNCHANGED``; ``objective`` is the load distance after
the moves (:func:`~elastream.core.load.load_distance`; capacities are shown, not planned for:
Elasticutor's cores are alike). ``details``: ``expected_latency`` (the model's E[T] with the
slots given, seconds), ``latency_target`` and ``latency_met`` (1.0 or 0.0: 0.0 when
``max_slots`` cannot meet the target — the plan still gives the allocation of least latency
within them) and ``service_rate`` (``μ_eff``, rows/s per slot) when there is a service
rate; always ``pending_moves``, ``cores_<j>`` (slots of executor ``j``) and
``executor_of_slot_<s>`` (−1: unused). ``Plan.slots_used`` = ``Σ k_j``: the slots a runtime
should hold cores for (Spark executors on a cluster).

Complexity: O(G log G + E·k̄ + S) plus the allocation's O(S·k̄ log E).

References:
    L. Wang, T. Z. J. Fu, R. T. B. Ma, M. Winslett, Z. Zhang. Elasticutor: Rapid Elasticity for
    Realtime Stateful Stream Processing, §2.2, §3.1, §4.1, §4.2.

>>> snap = LoadSnapshot(0, np.array([400.0, 300, 100, 100, 50, 50, 50, 50]))
>>> opts = ElasticutorOptions(executors=2, latency_target=0.05, service_rate=200.0)
>>> p = plan(snap, RoutingTable.hashed(8, 8), options=opts)  # λ = 900 and 200 rows/s
>>> p.status.value, p.details["cores_0"], p.details["cores_1"]
('feasible', 5.0, 2.0)
>>> round(p.details["expected_latency"], 4), p.slots_used
(0.0115, 7)
>>> RoutingTable.hashed(8, 8).apply_plan(p).slot_of
(0, 1, 2, 3, 4, 5, 4, 5)
>>> # No service rate yet: one executor per slot, each slot given one key-group range.
>>> RoutingTable.hashed(8, 4).apply_plan(plan(snap, RoutingTable.hashed(8, 4))).slot_of
(0, 0, 2, 2, 1, 1, 3, 3)
>>> # Measured on a micro-batch runtime: 1.1 busy s for 1100 rows (μ = 1000/s), 0.5 s of each
>>> # 1 s batch fixed: μ_eff = 500 rows/s for a 1 s target, so λ = 1100/s needs 3 slots.
>>> from elastream.core.load import ServiceTimes
>>> timed = ServiceTimes(1.0, np.array([1.1]), rows=1100.0, overhead_seconds=0.5)
>>> one = LoadSnapshot(0, np.array([600.0, 500]), service=timed)
>>> m = plan(one, RoutingTable.hashed(2, 1), options=ElasticutorOptions(
...     executors=1, max_slots=4))
>>> m.slots_used, round(m.details["service_rate"], 6)
(3, 500.0)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Final

import numpy as np

from elastream.algorithms.elastic.core_allocation import allocate_cores
from elastream.algorithms.elastic.latency import network_latency
from elastream.algorithms.elastic.shard_balance import balance_shards
from elastream.algorithms.elastic.strategy import executor_of_shards
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Capability, Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable

CAN: Final[frozenset[Capability]] = frozenset({Capability.SIZE_SLOTS})
"""What it can do beyond moving key groups (:class:`~elastream.core.plan.Capability`)."""


@dataclass(frozen=True)
class ElasticutorOptions:
    """Parameters of :func:`plan`.

    ``executors``: E, the fixed key-group ranges (≤ G and ≤ the slots; default: as many as the
    table has slots, at most G).
    ``latency_target`` (default 1.0): T_max, seconds. ``service_rate``: rows/s one slot
    processes (μ); ``None`` (default): the snapshot's measured one, if any (module doc).
    ``interval_seconds``: the observation the loads were counted over; ``None`` (default): the
    snapshot's measured span, else 1.0.
    ``max_slots``: the slot budget (default the routing table's slots). ``max_moves``: most
    moves per plan (default none). ``theta`` (default 1.2): δ threshold inside an executor.
    """

    executors: int | None = None
    latency_target: float = 1.0
    service_rate: float | None = None
    interval_seconds: float | None = None
    max_slots: int | None = None
    max_moves: int | None = None
    theta: float = 1.2

    def __post_init__(self) -> None:
        if self.executors is not None:
            rules.integer("executors", self.executors)
        rules.number("latency_target", self.latency_target, above=0)
        if self.service_rate is not None:
            rules.number("service_rate", self.service_rate, above=0)
        if self.interval_seconds is not None:
            rules.number("interval_seconds", self.interval_seconds, above=0)
        if self.max_slots is not None:
            rules.integer("max_slots", self.max_slots)
        if self.max_moves is not None:
            rules.integer("max_moves", self.max_moves, low=0)
        rules.number("theta", self.theta, low=1)


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
    mu = _service_rate(opts, snapshot)
    if mu is None:  # no model: executors keep their slots (one at least)
        cores = _cut([max(len(h), 1) for h in held], budget)
    else:
        cores, modelled = _allocation(_rates(opts, snapshot, owner, loads, executors), mu,
                                      opts.latency_target, budget, [len(h) for h in held])
        details.update(modelled)
    slots = _slot_sets(held, cores, budget)
    target = _balanced(slot_of, owner, loads, slots, opts.theta)
    moves, pending = _moves(slot_of, target, owner, slots, opts.max_moves)
    grows = budget > current.num_slots
    after = current.apply(moves, budget if grows else None)
    executor_of_slot = np.full(after.num_slots, -1.0)
    for j, owned in enumerate(slots):
        executor_of_slot[owned] = j
    details.update({"pending_moves": float(pending),
                    **{f"cores_{j}": float(k) for j, k in enumerate(cores)},
                    **{f"executor_of_slot_{s}": float(e) for s, e in enumerate(executor_of_slot)}})
    return Plan(status=PlanStatus.FEASIBLE if moves or grows else PlanStatus.UNCHANGED,
                moves=tuple(moves), num_slots=budget if grows else None,
                objective=load_distance(snapshot.slot_load(after), np.concatenate(
                    [capacity, np.ones(after.num_slots - capacity.size)])),
                details=details, slots_used=sum(cores))


def check_slots(options: ElasticutorOptions, most: int) -> None:
    """Raise unless ``options.executors`` fit a job of at most ``most`` slots (one each)."""
    if options.executors is not None and options.executors > most:
        raise OptionError("executors", f"must be at most the job's slots ({most}): each "
                          "elastic executor runs on one slot at least", options.executors)


def _service_rate(opts: ElasticutorOptions, snapshot: LoadSnapshot
                  ) -> tuple[float, float] | None:
    """``(μ, O)``: rows/s per busy slot and the batches' fixed seconds; ``None``: no rate."""
    if opts.service_rate is not None:
        return opts.service_rate, 0.0
    service = snapshot.service
    mu = None if service is None else service.service_rate
    return None if service is None or mu is None else (mu, service.overhead_seconds)


def _rates(opts: ElasticutorOptions, snapshot: LoadSnapshot, owner: np.ndarray,
           loads: np.ndarray, executors: int) -> list[float]:
    """``λ_j``: rows/s of each executor's key groups over the observation."""
    interval = opts.interval_seconds or (snapshot.service.interval_seconds
                                         if snapshot.service is not None else 1.0)
    rates: list[float] = (np.bincount(owner, weights=loads, minlength=executors)
                          / interval).tolist()
    return rates


def _allocation(rates: list[float], measured: tuple[float, float], target: float, budget: int,
                held: list[int]) -> tuple[list[int], dict[str, float]]:
    """Slots per executor (§4.1 at the effective rate ``μ(1 − O/T_max)``), model details.

    Details: ``expected_latency``, ``latency_target``, ``latency_met``, ``service_rate``.
    """
    mu, overhead = measured
    if overhead >= target:  # no number of slots brings a batch within the target
        spread = allocate_cores(rates, [mu] * len(rates), sys.float_info.min, budget,
                                current=held)
        cores, effective = _cut(list(spread.cores), budget), [mu] * len(rates)
        met = False
    else:
        effective = [mu * (1.0 - overhead / target)] * len(rates)
        alloc = allocate_cores(rates, effective, target, budget, current=held)
        cores = _cut(list(alloc.cores), budget)
        met = network_latency(rates, effective, cores) <= target
    latency = network_latency(rates, effective, cores)
    return cores, {"expected_latency": latency, "latency_target": target,
                   "latency_met": float(met), "service_rate": effective[0]}


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
