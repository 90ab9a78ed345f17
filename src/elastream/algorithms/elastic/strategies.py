"""The elasticity strategies by name, each ``schedule(workload, previous) -> Schedule``.

========  =======================  ============================================================
name      module                   paradigm (Elasticutor Table 1, §5)
========  =======================  ============================================================
static    :mod:`.static`           static keys, one executor per core, never changes
rc        :mod:`.resource_centric` keys re-partitioned over one-core executors
ec        :mod:`.executor_centric` Elasticutor: static keys, cores moved between executors
naive_ec  :mod:`.naive_ec`         ec with migration- and locality-blind core placement
========  =======================  ============================================================

>>> import numpy as np
>>> from elastream.algorithms.elastic.strategy import Workload
>>> w = Workload(np.full(16, 40.0), np.full(16, 32e3), np.full(16, 1e4), 100.0, 4, (4, 4), 0.05)
>>> {name: len(s(w, None).task_node) for name, s in STRATEGIES.items()}
{'static': 8, 'rc': 8, 'ec': 8, 'naive_ec': 8}
"""

from __future__ import annotations

from typing import Final

from elastream.algorithms.elastic import executor_centric, naive_ec, resource_centric, static
from elastream.algorithms.elastic.strategy import Strategy

STRATEGIES: Final[dict[str, Strategy]] = {
    "static": static.schedule,
    "rc": resource_centric.schedule,
    "ec": executor_centric.schedule,
    "naive_ec": naive_ec.schedule,
}
