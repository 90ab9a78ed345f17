r"""Naive executor-centric strategy (naive EC): Elasticutor without the scheduler's optimisations.

§5.4: "a naive executor-centric (naive-EC) implementation, which is the same as Elasticutor
except that optimizations for migration cost and computation locality are disabled in the
scheduler". Here: the same allocation (§4.1) and intra-executor balancing (§3.1) as
:mod:`.executor_centric`, and Algorithm 1 with every cost ``C⁺``/``C⁻`` taken as 0 and
``φ = ∞`` (no executor is data-intensive), so an executor that needs a core takes the first
idle core in node order, else the first over-provisioned executor's core there, wherever its
home and state are. Table 2 compares the two by their state migration and remote data transfer
rates (:attr:`Schedule.migration_cost`, :meth:`Schedule.remote_rate`).

References:
    L. Wang et al. Elasticutor, §5.4, Table 2.

>>> import numpy as np
>>> w = Workload(shard_rate=np.full(8, 100.0), shard_state=np.full(8, 32e3),
...              shard_bytes=np.full(8, 1e4), service_rate=250.0, executors=2,
...              node_cores=(4, 4), latency_target=0.01)
>>> s = schedule(w, None)  # executor 1 (home node 1) gets node 0's cores, as does 0 at first
>>> s.cores, s.task_node, s.remote_rate(w.shard_bytes)
((3, 2), (0, 0, 1, 0, 0), 50000.0)
>>> executor_centric.schedule(w, None).remote_rate(w.shard_bytes)
0.0
"""

from __future__ import annotations

from elastream.algorithms.elastic import executor_centric
from elastream.algorithms.elastic.strategy import Schedule, Workload


def schedule(workload: Workload, previous: Schedule | None) -> Schedule:
    """The naive-EC schedule: EC's with migration- and locality-blind core placement."""
    return executor_centric.schedule(workload, previous, migration_aware=False)

