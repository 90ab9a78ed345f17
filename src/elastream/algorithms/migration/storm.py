"""``storm``: Storm's default scheduler as the baseline of Ding et al. (§6, Fig. 12).

"The Storm scheduler is rather ad hoc, which simply allocates the same number of consecutive
tasks to each node" (§6): interval ``k`` of ``n′`` is ``[⌊k·m/n′⌋, ⌊(k+1)·m/n′⌋)``, whatever the
work or the state. Storm identifies an executor by its position, so interval ``k`` goes to node
``k``: nodes ``0 … min(n, n′)−1`` stay, ids ``n … n′−1`` are new, and on scale-in the nodes
``n′ … n−1`` (the last in task order) are removed. ``details["cost_best_matching"]`` is the cost
of the same intervals given to nodes by the cheapest matching (:mod:`.matching`), for reference.

Work is ignored, so the plan may break τ: status ``feasible`` when it meets τ, else
``infeasible`` with the plan kept and ``max_load_ratio`` in the reason. Time O(m + n′). No
options.

>>> from elastream.algorithms.migration.intervals import MigrationInstance
>>> inst = MigrationInstance([1.0] * 6, [1.0] * 6, [(0, 3), (3, 6)], 3, 0.0)
>>> p = plan(inst)
>>> p.intervals, p.node_of_interval, p.cost, p.details["cost_best_matching"]
(((0, 2), (2, 4), (4, 6)), (0, 1, 2), 3.0, 2.0)
"""

from __future__ import annotations

from typing import Final

import numpy as np

from elastream.algorithms.migration.intervals import (
    I64,
    MigrationInstance,
    MigrationPlan,
    assemble,
)
from elastream.algorithms.migration.matching import match
from elastream.core.plan import PlanStatus

NAME: Final = "storm"


def storm_bounds(tasks: int, nodes: int) -> I64:
    """``⌊k·m/n′⌋`` for ``k = 0 … n′``.

    >>> storm_bounds(10, 4).tolist()
    [0, 2, 5, 7, 10]
    """
    return (np.arange(nodes + 1, dtype=np.int64) * tasks) // nodes


def plan(instance: MigrationInstance, *, options: None = None) -> MigrationPlan:
    """Equal consecutive ranges, interval ``k`` on node ``k``."""
    del options
    bounds = storm_bounds(instance.m, instance.target_nodes)
    prefix = np.r_[0.0, np.cumsum(instance.state)]
    gain, _ = match(instance.bounds, bounds, prefix)
    return assemble(instance, NAME, bounds=bounds, nodes=np.arange(instance.target_nodes),
                    status=PlanStatus.FEASIBLE,
                    details={"cost_best_matching": float(prefix[-1] - gain)})
