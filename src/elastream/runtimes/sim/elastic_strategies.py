"""The four ways of running one keyed operator that the Elasticutor simulator compares (§2.2, §5).

Each strategy is a controller: :meth:`~Strategy.start` places the operator on the cluster and
:meth:`~Strategy.control` is called every scheduling interval with what the system measured; it
answers with a :class:`Decision` (new core owners, ordered shard moves per coordination group).
The simulator (:mod:`.elastic`) is the same for all of them; only the controller changes.

* ``static`` (§2.2, "the default Storm"): one single-core executor per core, shards (a static
  hash partition of the keys) never move, cores never move.
* ``rc`` (resource-centric): the same single-core executors, but every interval the operator's
  8192 shards are re-balanced across them with the same algorithm as EC's executors
  (``balance_shards``, θ = 1.2, §5: "RC uses the same ... load balancing algorithm"); every
  move is an operator-level repartitioning (global synchronisation, one move at a time).
* ``ec`` (Elasticutor): ``executors`` elastic executors with fixed key ranges; every interval
  the model allocates cores (``allocate_cores``, §4.1), Algorithm 1 places them
  (``assign_cores``, §4.2) and each executor re-balances its shards over its cores
  (``balance_shards``, §3.1); moves are local to the executor.
* ``naive-ec`` (§5.4): ``ec`` with the scheduler's migration-cost and locality optimisation
  disabled (``assign_cores(..., cost_aware=False, phi=inf)``).
* ``fixed``: elastic executors on given cores that never change, each re-balancing its shards
  (the single-executor scalability runs, §5.2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from elastream.algorithms.elastic.allocation import allocate_cores
from elastream.algorithms.elastic.assignment import assign_cores
from elastream.algorithms.elastic.shard_balance import balance_shards
from elastream.core.errors import OptionError
from elastream.runtimes.sim.elastic_cluster import Coordination, ElasticConfig, Layout

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class View:
    """What a controller sees at a scheduling point (copies; changing them changes nothing).

    ``shard_rates`` are measured: tuples/s that entered each shard over the last interval
    (after back-pressure), not the workload's true frequencies.
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
    (the executor for EC, 0 for RC); it replaces that group's moves not yet started.
    """

    core_owner: I64 | None = None
    moves: dict[int, list[tuple[int, int]]] | None = None


class Strategy(Protocol):
    """A controller of one operator (module docstring)."""

    name: str
    coordination: Coordination

    def layout(self, config: ElasticConfig, num_keys: int) -> Layout:
        """Executors and shards this strategy runs."""
        ...

    def start(self, config: ElasticConfig, layout: Layout) -> tuple[I64, I64]:
        """``(core_owner, shard_core)`` at time 0."""
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


def single_core_start(config: ElasticConfig, layout: Layout) -> tuple[I64, I64]:
    """Executor ``j`` on node ``j mod nodes`` (round robin), on that node's next free core."""
    j = np.arange(config.cores, dtype=np.int64)
    core_of_executor = (j % config.nodes) * config.cores_per_node + j // config.nodes
    owner = np.empty(config.cores, dtype=np.int64)
    owner[core_of_executor] = j
    return owner, core_of_executor[layout.shard_executor]


class Static:
    """The static approach: nothing ever moves."""

    name = "static"
    coordination: Coordination = "operator"

    def layout(self, config: ElasticConfig, num_keys: int) -> Layout:
        """One single-core executor per core."""
        return single_core_layout(config, num_keys)

    def start(self, config: ElasticConfig, layout: Layout) -> tuple[I64, I64]:
        """Round-robin executors, each with its static shards."""
        return single_core_start(config, layout)

    def control(self, view: View) -> Decision:
        """No decision: static executors have no elasticity."""
        return Decision()


class ResourceCentric:
    """RC: operator-level shard re-balancing across single-core executors."""

    name = "rc"
    coordination: Coordination = "operator"

    def __init__(self, config: ElasticConfig) -> None:
        self.config = config

    def layout(self, config: ElasticConfig, num_keys: int) -> Layout:
        """One single-core executor per core."""
        return single_core_layout(config, num_keys)

    def start(self, config: ElasticConfig, layout: Layout) -> tuple[I64, I64]:
        """As static at first."""
        return single_core_start(config, layout)

    def control(self, view: View) -> Decision:
        """Balance all shards over all cores; the moves run one at a time (global sync)."""
        cores = np.flatnonzero(view.core_owner >= 0)
        return Decision(moves={0: _balance(view, np.arange(len(view.shard_core)), cores,
                                           self.config.theta)})


class ExecutorCentric:
    """Elasticutor (``naive=False``) or naive-EC (``naive=True``)."""

    coordination: Coordination = "executor"

    def __init__(self, config: ElasticConfig, *, naive: bool = False) -> None:
        self.config = config
        self.naive = naive
        self.name = "naive-ec" if naive else "ec"
        self._layout: Layout | None = None
        self.last_status = ""

    def layout(self, config: ElasticConfig, num_keys: int) -> Layout:
        """``config.executors`` elastic executors of ``shards_per_executor`` shards."""
        self._layout = Layout.make(config, num_keys)
        return self._layout

    def start(self, config: ElasticConfig, layout: Layout) -> tuple[I64, I64]:
        """Cores dealt evenly, home node first; shards round robin over each executor's cores."""
        m = len(layout.home)
        demand = np.full(m, config.cores // m, dtype=np.int64)
        demand[: config.cores % m] += 1
        return even_start(config, layout, demand)

    def control(self, view: View) -> Decision:
        """Allocate (§4.1), assign (§4.2, Algorithm 1), then balance each executor (§3.1)."""
        config, layout = self.config, self._ready()
        m = len(layout.home)
        rates: F64 = np.bincount(layout.shard_executor, weights=view.shard_rates,
                                 minlength=m).astype(np.float64)
        current = core_matrix(view.core_owner, layout.core_node, m, config.nodes)
        have = current.sum(axis=1)
        allocation = allocate_cores(rates.tolist(), [config.service_rate] * m,
                                    config.latency_target, config.cores,
                                    current=have.tolist())
        demand = within_budget(np.array(allocation.cores, dtype=np.int64), rates,
                                config.service_rate, config.cores)
        self.last_status = str(allocation.status)
        state = np.bincount(layout.shard_executor, minlength=m) * config.shard_state_bytes
        intensity = rates * 2 * config.tuple_bytes  # input + output bytes/s (§4.2)
        node_cores = [config.cores_per_node] * config.nodes
        # naive-EC (§5.4): "optimizations for migration cost and computation locality are
        # disabled": no costs (cores by tie order) and no locality constraint (φ = ∞).
        result = assign_cores(demand.tolist(), node_cores, current.tolist(),
                              state=state.tolist(), intensity=intensity.tolist(),
                              home=layout.home.tolist(),
                              phi=math.inf if self.naive else config.phi,
                              cost_aware=not self.naive)
        target = np.asarray(result.assignment, dtype=np.int64)
        owner = concretise(view.core_owner, layout.core_node, target, view.queue)
        return Decision(core_owner=owner, moves=executor_moves(view, layout, owner, config.theta))

    def _ready(self) -> Layout:
        if self._layout is None:
            raise OptionError("strategy", "must be given its layout before control", self.name)
        return self._layout


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

    def start(self, config: ElasticConfig, layout: Layout) -> tuple[I64, I64]:
        """``cores[j]`` cores for executor ``j``, home node first, then the next nodes."""
        return even_start(config, layout, self.demand)

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


def core_matrix(owner: I64, core_node: I64, executors: int, nodes: int) -> I64:
    """``X[j, n]``: cores of executor ``j`` on node ``n`` (§4.2's assignment matrix)."""
    owned = owner >= 0
    cells = owner[owned] * nodes + core_node[owned]
    counts: I64 = np.bincount(cells, minlength=executors * nodes).reshape(executors, nodes)
    return counts


def concretise(owner: I64, core_node: I64, target: I64, queue: F64) -> I64:
    """Turn a target matrix ``X[j, n]`` into core owners, changing as few cores as possible.

    An executor losing cores on a node gives up the ones with the shortest queues; the freed
    and free cores of a node then go to the executors gaining cores there, lowest id first.
    """
    new = owner.copy()
    current = core_matrix(owner, core_node, target.shape[0], target.shape[1])
    for j, n in zip(*np.nonzero(current > target), strict=True):
        mine = np.flatnonzero((new == j) & (core_node == n))
        drop = mine[np.argsort(queue[mine], kind="stable")][: current[j, n] - target[j, n]]
        new[drop] = -1
    for j, n in zip(*np.nonzero(current < target), strict=True):
        free = np.flatnonzero((new < 0) & (core_node == n))
        need = target[j, n] - current[j, n]
        if len(free) < need:
            raise OptionError("assignment", f"needs {need} free cores on node {n}", len(free))
        new[free[:need]] = j
    return new


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
    plan = balance_shards(loads[placed].tolist(), task[placed].tolist(), len(cores), theta=theta)
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


def within_budget(demand: I64, rates: F64, service_rate: float, budget: int) -> I64:
    """Trim an allocation that exceeds the budget (stability needs more cores than exist).

    Cores go from the executors with the most cores beyond their load, never below one.
    """
    demand = np.maximum(demand, 1)
    while int(demand.sum()) > budget:
        slack = demand - rates / service_rate
        slack[demand <= 1] = -np.inf
        demand[int(np.argmax(slack))] -= 1
    return demand
