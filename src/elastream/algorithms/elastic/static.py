r"""The static strategy: one executor per core, a fixed key partitioning, never any change.

Elasticutor §2.2 and Table 1: "the static approach implements each operator with a fixed number
of executors and uses static operator-level key partitioning ... Each executor consists of a
single data processing thread bound to an assigned CPU core" — default Storm. §5: "we create
enough executors for the operators in the static approach to fully utilize all CPU cores in the
cluster", assigned to the nodes round robin. Here: ``K = Σ c_i`` executors, executor ``t`` owns
the contiguous shards ``[⌈tZ/K⌉, ⌈(t+1)Z/K⌉)`` and runs on the ``t``-th node of a round robin
over the nodes' cores. The first schedule is kept for ever: with a previous schedule only the
latency and status are re-evaluated for the new workload, and nothing moves.

Latency: every executor an M/M/1 queue fed by its shards (eq. 1); it is infinite as soon as one
executor's shards bring more than ``μ`` tuples/s, which is what skew does to the static approach.

References:
    L. Wang et al. Elasticutor, §2.2, Table 1, §5.

>>> import numpy as np
>>> w = Workload(shard_rate=np.array([90.0, 10, 50, 50]), shard_state=np.ones(4),
...              shard_bytes=np.ones(4), service_rate=150.0, executors=1, node_cores=(1, 1),
...              latency_target=0.05)
>>> s = schedule(w, None)
>>> s.shard_task, s.task_node, round(s.expected_latency, 3), s.status.value
((0, 0, 1, 1), (0, 1), 0.02, 'feasible')
>>> schedule(Workload(np.array([140.0, 20, 50, 50]), np.ones(4), np.ones(4), 150.0, 1, (1, 1),
...                   0.05), s).status.value  # 160 tuples/s on a core of 150
'infeasible'
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from elastream.algorithms.elastic.latency import network_latency
from elastream.algorithms.elastic.strategy import (
    Schedule,
    Workload,
    executor_of_shards,
    round_robin_nodes,
    status_of,
)
from elastream.core.plan import PlanStatus


def schedule(workload: Workload, previous: Schedule | None) -> Schedule:
    """The static schedule: the first one, re-evaluated on ``workload`` (module docstring)."""
    w = workload
    if previous is None:
        cores = w.total_cores
        nodes = tuple(round_robin_nodes(w.node_cores, [0] * len(w.node_cores), cores))
        shard_task = tuple(int(t) for t in executor_of_shards(w.shards, min(cores, w.shards)))
        tasks = max(shard_task) + 1
        previous = Schedule(PlanStatus.FEASIBLE, tuple(range(tasks)), nodes[:tasks], shard_task,
                            nodes[:tasks], 0.0, 0.0)
    load = np.bincount(np.asarray(previous.shard_task), weights=w.shard_rate,
                       minlength=len(previous.task_node))
    latency = one_core_latency(load.tolist(), w.service_rate)
    return replace(previous, status=status_of(latency, w.latency_target), expected_latency=latency,
                   migration_cost=0.0)


def one_core_latency(task_rates: list[float], service_rate: float) -> float:
    """Eq. (1) for executors of one core each (static and RC)."""
    return network_latency(task_rates, [service_rate] * len(task_rates), [1] * len(task_rates))
