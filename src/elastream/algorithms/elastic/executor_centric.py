r"""Elasticutor's executor-centric strategy (EC): the model, Algorithm 1 and shard balancing.

Every interval (§2.3, §4): the greedy allocation (§4.1,
:mod:`~elastream.algorithms.elastic.core_allocation`) decides each executor's cores ``k_j`` from its
arrival rate (the sum of its shards' rates) and the per-core service rate, within the cluster's
cores; Algorithm 1 (§4.2, :mod:`~elastream.algorithms.elastic.assignment`) places them on nodes
from the previous assignment, each executor's state being the sum of its shards' states and its
data intensity the sum of its shards' bytes/s; then each executor balances its shards over its
tasks (§3.1, :mod:`~elastream.algorithms.elastic.shard_balance`). The key space never moves
between executors.

Tasks: an executor keeps its previous tasks on a node up to its new core count there (in their
previous order); tasks it loses on a node are its last ones there, and their shards are placed
again (heaviest first); new tasks come after the kept ones, in node order. Task ids are
executor-major. The latency stated is eq. (1) with every executor's assigned cores ``X_j``
(at least ``k_j``); the status is the allocation's (``OPTIMAL`` when the target is met with the
fewest cores), or ``INFEASIBLE`` when the cores cannot meet it or cannot be placed.

``migration_aware=False`` is naive EC (§5.4): the same allocation and balancing, cores placed
by Algorithm 1 with its costs ignored and no locality (:mod:`.naive_ec`).

References:
    L. Wang et al. Elasticutor, §2.3, §3.1, §4.1, §4.2, §5.

>>> w = Workload(shard_rate=np.array([300.0, 100, 100, 100, 50, 50, 50, 50]),
...              shard_state=np.full(8, 32e3), shard_bytes=np.full(8, 1e4),
...              service_rate=250.0, executors=2, node_cores=(4, 4), latency_target=0.01)
>>> s = schedule(w, None)
>>> s.status.value, s.cores, s.task_node, round(s.expected_latency, 4)
('optimal', (3, 2), (0, 0, 0, 1, 1), 0.0074)
"""

from __future__ import annotations

import math

import numpy as np

from elastream.algorithms.elastic.assignment import assign_cores
from elastream.algorithms.elastic.core_allocation import allocate_cores
from elastream.algorithms.elastic.latency import network_latency
from elastream.algorithms.elastic.shard_balance import balance_shards
from elastream.algorithms.elastic.strategy import (
    I64,
    Schedule,
    Workload,
    executor_of_shards,
    moved_state,
)
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus


def schedule(workload: Workload, previous: Schedule | None, *,
             migration_aware: bool = True) -> Schedule:
    """The EC schedule for ``workload`` from ``previous`` (module docstring)."""
    w = workload
    if w.executors > w.total_cores:
        raise OptionError("executors", f"must be at most the cluster's cores ({w.total_cores}):"
                          " an elastic executor runs on one core at least", w.executors)
    owner = executor_of_shards(w.shards, w.executors)
    rates = w.executor_sums(w.shard_rate)
    mu = [w.service_rate] * w.executors
    before = _assignment(previous, w)
    alloc = allocate_cores(rates.tolist(), mu, w.latency_target, w.total_cores,
                           current=None if before is None else before.sum(axis=1).tolist())
    demand = list(alloc.cores)
    if sum(demand) > w.total_cores:  # even stability needs more cores than there are
        demand = _shrink(demand, w.total_cores)
    placed = assign_cores(demand, w.node_cores, None if before is None else before.tolist(),
                          state=w.executor_sums(w.shard_state).tolist(),
                          intensity=w.executor_sums(w.shard_bytes).tolist(), home=w.homes,
                          phi=w.phi if migration_aware else math.inf,
                          cost_aware=migration_aware)
    x = np.array(placed.assignment, np.int64)
    task_executor, task_node, shard_task = _tasks(w, owner, x, previous)
    latency = network_latency(rates.tolist(), mu, [max(int(v), 1) for v in x.sum(axis=1)])
    status = alloc.status if placed.status is not PlanStatus.INFEASIBLE \
        else PlanStatus.INFEASIBLE
    if latency > w.latency_target:
        status = PlanStatus.INFEASIBLE
    node_of = np.asarray(task_node, np.int64)[np.asarray(shard_task, np.int64)]
    return Schedule(status, task_executor, task_node, shard_task, w.homes, latency,
                    moved_state(previous, node_of, w.shard_state), placed.phi)


def _assignment(previous: Schedule | None, w: Workload) -> I64 | None:
    """``X̃``: the previous schedule's cores per executor and node."""
    if previous is None:
        return None
    x = np.zeros((w.executors, len(w.node_cores)), np.int64)
    np.add.at(x, (np.asarray(previous.task_executor), np.asarray(previous.task_node)), 1)
    return x


def _shrink(demand: list[int], cores: int) -> list[int]:
    """Demands cut to ``cores`` in total, largest first (each keeps one: E ≤ cores)."""
    out = list(demand)
    while sum(out) > cores:
        j = max(range(len(out)), key=lambda e: (out[e], -e))
        out[j] -= 1
    return out


def _tasks(w: Workload, owner: I64, x: I64, previous: Schedule | None
           ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Tasks (executor, node) from assignment ``x`` and every shard's task (balanced)."""
    task_executor: list[int] = []
    task_node: list[int] = []
    shard_task = np.zeros(w.shards, np.int64)
    prev_exec = np.asarray(previous.task_executor if previous else (), np.int64)
    prev_node = np.asarray(previous.task_node if previous else (), np.int64)
    prev_shard = np.asarray(previous.shard_task if previous else (), np.int64)
    for j in range(w.executors):
        local: dict[int, int] = {}  # previous task id → index among j's new tasks
        nodes: list[int] = []
        for t in np.flatnonzero(prev_exec == j):
            node = int(prev_node[t])
            if sum(1 for n in nodes if n == node) < x[j, node]:
                local[int(t)] = len(nodes)
                nodes.append(node)
        for node in range(x.shape[1]):
            nodes.extend([node] * int(x[j, node] - nodes.count(node)))
        mine = np.flatnonzero(owner == j)
        start = [local.get(int(t), len(nodes)) for t in prev_shard[mine]] if previous \
            else [len(nodes)] * mine.size
        plan = balance_shards(w.shard_rate[mine], start, len(nodes), theta=w.theta)
        shard_task[mine] = len(task_executor) + np.asarray(plan.assignment, np.int64)
        task_executor.extend([j] * len(nodes))
        task_node.extend(nodes)
    return tuple(task_executor), tuple(task_node), tuple(int(t) for t in shard_task)
