r"""The resource-centric strategy (RC): executors of one core, the key space re-partitioned.

Elasticutor §2.2: "the resource-centric approach resolves the limitation of the static approach
by supporting dynamic operator-level key partitioning, while following the same implementation
of the executors as in the static approach" — one core each — "it can migrate some keys with
their corresponding workload from overloaded executors to the lighter-loaded executors ... or
from existing executors to a newly created executor to scale out". §5: "RC uses the same
performance model, load balancing algorithm and intra-process state sharing mechanism as
Elasticutor", at the same granularity (shards).

Here, every interval: the number of executors ``N`` is the least, from ``⌊Λ/μ⌋ + 1`` (``Λ``
the operator's rate) up to the cluster's cores, for which the shards balanced over ``N``
executors (§3.1's algorithm over the *whole* key space, from the previous partitioning; shards
of removed executors placed again) meet the latency target under eq. (1) with M/M/1 executors;
if none does, ``N`` is every core (status ``INFEASIBLE``). Values of ``N`` whose perfectly even
split ``1/(μ − Λ/N)`` already misses the target are skipped. Executors keep their node; removed
executors are the highest ids; new ones go round robin to nodes with idle cores, continuing
after the last node used. Every executor is at home, so there is no remote transfer; a shard
moved to an executor on another node moves its state (global migration, with the
synchronisation the paper charges RC for, which a simulator models, not this planner).

References:
    L. Wang et al. Elasticutor, §2.2, Table 1, §5.

>>> import numpy as np
>>> w = Workload(shard_rate=np.array([120.0, 60, 60, 30, 30]), shard_state=np.full(5, 1e3),
...              shard_bytes=np.ones(5), service_rate=150.0, executors=1, node_cores=(2, 2),
...              latency_target=0.05)
>>> s = schedule(w, None)  # 300 tuples/s: 3 executors (120 | 60 + 30 | 60 + 30)
>>> s.task_node, s.shard_task, round(s.expected_latency, 4), s.status.value
((0, 1, 0), (0, 1, 2, 1, 2), 0.0233, 'feasible')
"""

from __future__ import annotations

import math

import numpy as np

from elastream.algorithms.elastic.shard_balance import balance_shards
from elastream.algorithms.elastic.static import one_core_latency
from elastream.algorithms.elastic.strategy import (
    Schedule,
    Workload,
    moved_state,
    round_robin_nodes,
    status_of,
)


def schedule(workload: Workload, previous: Schedule | None) -> Schedule:
    """The RC schedule for ``workload`` from ``previous`` (module docstring)."""
    w = workload
    total, mu = float(w.shard_rate.sum()), w.service_rate
    start = np.asarray(previous.shard_task, np.int64) if previous is not None \
        else np.full(w.shards, w.total_cores, np.int64)
    best: tuple[float, int, tuple[int, ...]] | None = None
    for n in range(min(math.floor(total / mu) + 1, w.total_cores), w.total_cores + 1):
        even = total / n
        if n < w.total_cores and (even >= mu or 1.0 / (mu - even) > w.latency_target):
            continue  # not even a perfect split meets the target
        plan = balance_shards(w.shard_rate, start, n, theta=w.theta)
        load = np.bincount(np.asarray(plan.assignment), weights=w.shard_rate, minlength=n)
        latency = one_core_latency(load.tolist(), mu)
        best = (latency, n, plan.assignment)
        if latency <= w.latency_target:
            break
    assert best is not None  # n = total cores always runs
    latency, n, shard_task = best
    nodes = _nodes(w, previous, n)
    node_of = np.asarray(nodes, np.int64)[np.asarray(shard_task, np.int64)]
    return Schedule(status_of(latency, w.latency_target), tuple(range(n)), nodes, shard_task,
                    nodes, latency, moved_state(previous, node_of, w.shard_state))


def _nodes(w: Workload, previous: Schedule | None, n: int) -> tuple[int, ...]:
    """Nodes of executors ``0 … n−1``: kept ones stay, new ones round robin."""
    kept = list(previous.task_node[:n]) if previous is not None else []
    used = np.bincount(np.asarray(kept, np.int64), minlength=len(w.node_cores)).tolist()
    after = (kept[-1] + 1) if kept else 0
    return tuple(kept + round_robin_nodes(w.node_cores, used, n - len(kept), after))
