"""The policies the Elasticutor simulator runs: the package's four strategies, and fixed cores.

A policy places the operator on the cluster (:meth:`~ElasticPolicy.start`) and is called every
scheduling interval with what the system measured (:meth:`~ElasticPolicy.control`); it answers with
a :class:`Decision`: new core owners and ordered shard moves per coordination group. The
simulator (:mod:`.elastic`) is the same for all of them; only the policy changes.

* :class:`Scheduled` runs one of ``elastream.algorithms.elastic.strategies.STRATEGIES`` —
  ``static`` (default Storm: one single-core executor per core, a static hash partition),
  ``rc`` (resource-centric: the key space re-partitioned over single-core executors),
  ``ec`` (Elasticutor: the allocation of §4.1, Algorithm 1 of §4.2, shard balancing of §3.1)
  and ``naive_ec`` (§5.4: EC without the migration-cost and locality optimisations) — and maps
  its schedules onto concrete cores. The simulator runs ``rc``'s moves (``static`` makes none)
  with operator-level synchronisation — by default one round per decision that pauses the
  whole operator (``ElasticConfig.rc_protocol``) — and ``ec``'s and ``naive_ec``'s with
  executor-level synchronisation, per shard.
* :class:`Fixed`: elastic executors on given cores that never change, each re-balancing its
  shards with ``balance_shards`` (the single-executor scalability runs, §5.2).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from elastream.algorithms.elastic import executor_centric, resource_centric
from elastream.algorithms.elastic.shard_balance import ShardPlan, balance_shards
from elastream.algorithms.elastic.strategies import STRATEGIES
from elastream.algorithms.elastic.strategy import Schedule, Workload
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.runtimes.sim.elastic_cluster import Coordination, ElasticConfig, Layout

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


_NO_ROUNDS = 1e300
"""A θ no assignment exceeds: ``balance_shards`` then only places orphans."""


@dataclass(frozen=True)
class View:
    """What a controller sees at a scheduling point (copies; changing them changes nothing).

    ``shard_rates`` are measured: tuples/s that entered each shard over the last interval
    (after back-pressure; over the seconds the operator was receiving when an RC round paused
    it), not the workload's true frequencies.
    """

    now: float
    core_owner: I64
    """Executor owning each core, −1 if free."""
    shard_core: I64
    """Core (task) each shard is routed to now (in-flight moves not yet applied)."""
    moving: frozenset[int]
    """Shards whose move has started and not finished (a controller must not move them)."""
    shard_rates: F64
    queue: F64


@dataclass(frozen=True)
class Decision:
    """A controller's answer: new core owners (None: unchanged) and moves per group.

    ``moves[g]`` is the ordered list ``(shard, destination core)`` of coordination group ``g``
    (the executor for EC, 0 for RC); it replaces that group's moves not yet started. Under
    RC's default protocol all the decision's moves form one round, which replaces the round
    not yet started.
    """

    core_owner: I64 | None = None
    core_home: I64 | None = None
    """Home node of the executor owning each core (−1 if free); with ``core_owner``."""
    moves: dict[int, list[tuple[int, int]]] | None = None


class ElasticPolicy(Protocol):
    """What controls one operator in the simulator (module docstring).

    An elasticity strategy of :mod:`elastream.algorithms.elastic.strategies` is one part of it.
    """

    name: str
    coordination: Coordination

    def layout(self, config: ElasticConfig, num_keys: int) -> Layout:
        """Executors and shards this policy runs."""
        ...

    def start(self, config: ElasticConfig, layout: Layout) -> tuple[I64, I64, I64]:
        """``(core_owner, shard_core, core_home)`` at time 0."""
        ...

    def control(self, view: View) -> Decision:
        """Re-plan from what was measured over the last interval."""
        ...


def single_core_layout(config: ElasticConfig, num_keys: int) -> Layout:
    """One executor per core, the operator's ``config.shards`` shards dealt among them."""
    if config.shards % config.cores:
        raise OptionError("shards_per_executor", f"× executors must be a multiple of the "
                          f"{config.cores} cores for static/RC", config.shards)
    return Layout.make(config, num_keys, executors=config.cores,
                       shards_per_executor=config.shards // config.cores)


class Scheduled:
    """One of ``algorithms.elastic``'s strategies (``static``, ``rc``, ``ec``, ``naive_ec``).

    Every interval the measured shard rates become a
    :class:`~elastream.algorithms.elastic.strategy.Workload` and the strategy's
    ``schedule(workload, previous)`` gives the next schedule (tasks per executor and node, a
    task per shard); this adapter maps its tasks onto concrete cores — a task kept from the
    previous schedule keeps its core, a new task takes a free core of its node — and turns the
    shards whose core changes into ordered moves (shards leaving a core their executor lost
    first). The first schedule is made from the offered rate spread evenly over the shards
    (nothing is measured yet).

    ``lpt_fallback=False`` (default) runs the strategies with §3.1's rounds only
    (:func:`paper_balance_shards`): the package's ``balance_shards`` replaces a round result
    above θ by a fresh LPT assignment whenever that is lower, and under the key-shuffle workload
    (a hottest shard above (θ − 1)× a single-core executor's mean) that re-deals ~8000 of RC's
    8192 shards every interval — moves the paper's algorithm never makes.
    """

    def __init__(self, name: str, config: ElasticConfig, *, lpt_fallback: bool = False) -> None:
        rules.choice("strategy", name, sorted(STRATEGIES))
        self.name = name.replace("_", "-")
        self.coordination: Coordination = "executor" if name in ("ec", "naive_ec") \
            else "operator"
        self.config = config
        self.schedule_fn = STRATEGIES[name]
        self.previous: Schedule | None = None
        self.task_core = np.empty(0, dtype=np.int64)
        self.last_status = ""
        self.lpt_fallback = lpt_fallback
        self._layout: Layout | None = None

    def layout(self, config: ElasticConfig, num_keys: int) -> Layout:
        """EC: ``config.executors`` executors; static and RC: one per core (same shards)."""
        if self.coordination == "operator":
            self._layout = single_core_layout(config, num_keys)
        else:
            self._layout = Layout.make(config, num_keys)
        return self._layout

    def start(self, config: ElasticConfig, layout: Layout) -> tuple[I64, I64, I64]:
        """The first schedule, from the offered rate spread evenly over the shards."""
        shards = len(layout.shard_executor)
        rates = np.full(shards, config.offered() / shards)
        return self._apply(rates, np.full(config.cores, -1, dtype=np.int64))[:3]

    def control(self, view: View) -> Decision:
        """The next schedule, mapped onto cores, and the moves towards it."""
        owner, shard_core, home, status = self._apply(view.shard_rates, view.core_owner)
        self.last_status = status
        moves: dict[int, list[tuple[int, int]]] = {}
        lost = view.core_owner[view.shard_core] != owner[view.shard_core]
        for shard in np.concatenate([np.flatnonzero(lost), np.flatnonzero(~lost)]).tolist():
            target = int(shard_core[shard])
            if target != int(view.shard_core[shard]) and shard not in view.moving:
                group = 0 if self.coordination == "operator" \
                    else int(self._ready().shard_executor[shard])
                moves.setdefault(group, []).append((shard, target))
        return Decision(core_owner=owner, core_home=home, moves=moves)

    def _apply(self, rates: F64, owner_before: I64) -> tuple[I64, I64, I64, str]:
        config = self.config
        layout = self._ready()
        workload = Workload(
            shard_rate=np.asarray(rates, dtype=np.float64),
            shard_state=np.full(len(rates), config.shard_state_bytes),
            shard_bytes=np.asarray(rates, dtype=np.float64) * 2 * config.tuple_bytes,
            service_rate=config.service_rate, executors=len(layout.home),
            node_cores=(config.cores_per_node,) * config.nodes,
            latency_target=config.latency_target, theta=config.theta, phi=config.phi)
        if self.lpt_fallback:
            schedule = self.schedule_fn(workload, self.previous)
        else:
            with _paper_rounds():
                schedule = self.schedule_fn(workload, self.previous)
        task_core = map_tasks(self.previous, self.task_core, schedule, layout.core_node)
        owner = np.full(config.cores, -1, dtype=np.int64)
        owner[task_core] = schedule.task_executor
        home = np.full(config.cores, -1, dtype=np.int64)
        home[task_core] = np.asarray(schedule.executor_home)[list(schedule.task_executor)]
        self.previous, self.task_core = schedule, task_core
        del owner_before
        return owner, task_core[list(schedule.shard_task)], home, str(schedule.status)

    def _ready(self) -> Layout:
        if self._layout is None:
            raise OptionError("strategy", "must be given its layout first", self.name)
        return self._layout


def map_tasks(previous: Schedule | None, previous_core: I64, schedule: Schedule,
              core_node: I64) -> I64:
    """The core of each task of ``schedule``: kept tasks keep theirs, new ones take free ones.

    Tasks of executor ``e`` on node ``n`` inherit, in order, the cores of ``e``'s tasks on
    ``n`` in ``previous`` (strategies keep a node's first tasks and drop its last ones); the
    remaining tasks take the lowest cores of node ``n`` that no kept task holds.
    """
    kept: dict[tuple[int, int], list[int]] = {}
    if previous is not None:
        for t, (e, n) in enumerate(zip(previous.task_executor, previous.task_node,
                                       strict=True)):
            kept.setdefault((e, n), []).append(int(previous_core[t]))
    cores = np.full(len(schedule.task_node), -1, dtype=np.int64)
    taken = np.zeros(len(core_node), dtype=bool)
    for t, (e, n) in enumerate(zip(schedule.task_executor, schedule.task_node, strict=True)):
        mine = kept.get((e, n))
        if mine:
            cores[t] = mine.pop(0)
            taken[cores[t]] = True
    for t in np.flatnonzero(cores < 0).tolist():
        node = schedule.task_node[t]
        free = np.flatnonzero(~taken & (core_node == node))
        if len(free) == 0:
            raise OptionError("schedule", f"puts more tasks on node {node} than it has cores",
                              schedule.task_node.count(node))
        cores[t] = free[0]
        taken[free[0]] = True
    return cores


class Fixed:
    """Elastic executors on fixed cores that only re-balance their shards (§5.2)."""

    name = "fixed"
    coordination: Coordination = "executor"

    def __init__(self, config: ElasticConfig, cores: Sequence[int]) -> None:
        self.config = config
        self.demand = np.asarray(cores, dtype=np.int64)
        self._layout: Layout | None = None

    def layout(self, config: ElasticConfig, num_keys: int) -> Layout:
        """``len(cores)`` executors of ``shards_per_executor`` shards."""
        self._layout = Layout.make(config, num_keys, executors=len(self.demand))
        return self._layout

    def start(self, config: ElasticConfig, layout: Layout) -> tuple[I64, I64, I64]:
        """``cores[j]`` cores for executor ``j``, home node first, then the next nodes."""
        owner, shard_core = even_start(config, layout, self.demand)
        home = np.where(owner >= 0, layout.home[np.maximum(owner, 0)], -1)
        return owner, shard_core, home

    def control(self, view: View) -> Decision:
        """Re-balance each executor's shards over its (unchanged) cores."""
        assert self._layout is not None
        return Decision(moves=executor_moves(view, self._layout, view.core_owner,
                                             self.config.theta))


def even_start(config: ElasticConfig, layout: Layout, demand: I64) -> tuple[I64, I64]:
    """Give executor ``j`` ``demand[j]`` cores (home node first, then nodes home+1, …)."""
    if int(demand.sum()) > config.cores or int(demand.min()) < 1:
        raise OptionError("cores", f"must be ≥ 1 per executor and ≤ {config.cores} in all",
                          demand.tolist())
    owner = np.full(config.cores, -1, dtype=np.int64)
    free = [list(range(n * config.cores_per_node, (n + 1) * config.cores_per_node))
            for n in range(config.nodes)]
    for j, want in enumerate(demand.tolist()):
        home = int(layout.home[j])
        for step in range(config.nodes):
            node = free[(home + step) % config.nodes]
            while want and node:
                owner[node.pop(0)] = j
                want -= 1
    shard_core = np.empty(len(layout.shard_executor), dtype=np.int64)
    for j in range(len(demand)):
        mine = np.flatnonzero(layout.shard_executor == j)
        cores = np.flatnonzero(owner == j)
        shard_core[mine] = cores[np.arange(len(mine)) % len(cores)]
    return owner, shard_core


def executor_moves(view: View, layout: Layout, owner: I64,
                   theta: float) -> dict[int, list[tuple[int, int]]]:
    """Each executor's shard moves onto its cores in ``owner`` (§3.1)."""
    moves: dict[int, list[tuple[int, int]]] = {}
    for j in range(len(layout.home)):
        cores = np.flatnonzero(owner == j)
        shards = np.flatnonzero(layout.shard_executor == j)
        if len(cores):
            planned = _balance(view, shards, cores, theta)
            if planned:
                moves[j] = planned
    return moves


def _balance(view: View, shards: I64, cores: I64, theta: float) -> list[tuple[int, int]]:
    """Moves putting ``shards`` on ``cores`` balanced: orphans first, then ``balance_shards``.

    A shard on a core outside ``cores`` (one its executor just lost) goes to the least loaded
    core, hottest shard first; then ``balance_shards`` refines. Shards in flight stay put.
    """
    loads = view.shard_rates[shards]
    index = np.full(int(max(view.shard_core.max(), cores.max())) + 1, -1, dtype=np.int64)
    index[cores] = np.arange(len(cores))
    task = index[view.shard_core[shards]]
    task_load = np.bincount(task[task >= 0], weights=loads[task >= 0], minlength=len(cores))
    for i in np.flatnonzero(task < 0)[np.argsort(-loads[task < 0], kind="stable")]:
        if int(shards[i]) in view.moving:
            continue
        target = int(np.argmin(task_load))
        task[i] = target
        task_load[target] += loads[i]
    placed = task >= 0
    plan = paper_balance_shards(loads[placed], task[placed], len(cores), theta=theta)
    final = task.copy()
    final[np.flatnonzero(placed)] = np.asarray(plan.assignment, dtype=np.int64)
    orphans_first = np.argsort(index[view.shard_core[shards]] >= 0, kind="stable")
    moves = []
    for i in orphans_first[final[orphans_first] >= 0]:
        s = int(shards[i])
        dest = int(cores[final[i]])
        if dest != int(view.shard_core[s]) and s not in view.moving:
            moves.append((s, dest))
    return moves


def paper_balance_shards(shard_loads: Sequence[float] | F64, assignment: Sequence[int] | I64,
                         num_tasks: int, *, theta: float = 1.2) -> ShardPlan:
    """§3.1's rounds alone: ``balance_shards`` without its LPT fallback.

    Orphans (tasks ``≥ num_tasks``) are placed by ``balance_shards`` itself (with a huge ``θ``
    it does nothing else); then, while ``δ > θ``, the shard of the most loaded task whose move to
    the least loaded task leaves the smaller maximum of the two moves there (ties: lowest
    shard), if one lowers that maximum.

    >>> paper_balance_shards([5.0, 4.0, 3.0, 3.0, 1.0], [0, 0, 0, 1, 1], 2).assignment
    (0, 1, 0, 1, 1)
    """
    placed = balance_shards(shard_loads, assignment, num_tasks, theta=_NO_ROUNDS)
    loads = np.asarray(shard_loads, dtype=np.float64)
    task = np.asarray(placed.assignment, dtype=np.int64)
    task_load = np.bincount(task, weights=loads, minlength=num_tasks).astype(np.float64)
    for _ in range(4 * len(loads)):
        if task_load.max() <= theta * task_load.mean() or task_load.sum() <= 0:
            break
        source, target = int(np.argmax(task_load)), int(np.argmin(task_load))
        mine = np.flatnonzero(task == source)
        after = np.maximum(task_load[source] - loads[mine], task_load[target] + loads[mine])
        after[(loads[mine] <= 0) | (after >= task_load[source] * (1 - 1e-12))] = math.inf
        if not np.isfinite(after).any():
            break
        s = int(mine[int(np.argmin(after))])
        task[s] = target
        task_load[source] -= loads[s]
        task_load[target] += loads[s]
    origin = np.asarray(assignment, dtype=np.int64)
    moves = tuple((int(s), int(origin[s]), int(task[s])) for s in np.flatnonzero(task != origin))
    mean = float(task_load.mean())
    return ShardPlan(tuple(int(t) for t in task), moves,
                     float(task_load.max()) / mean if mean > 0 else 1.0)


@contextmanager
def _paper_rounds() -> Iterator[None]:
    """Let the EC and RC strategies balance with :func:`paper_balance_shards` meanwhile."""
    modules = (executor_centric, resource_centric)
    saved = [m.balance_shards for m in modules]
    for m in modules:
        setattr(m, "balance_shards", paper_balance_shards)  # noqa: B010
    try:
        yield
    finally:
        for m, original in zip(modules, saved, strict=True):
            setattr(m, "balance_shards", original)  # noqa: B010
