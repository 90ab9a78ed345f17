"""``ch``: consistent hashing of tasks to nodes, the baseline of Ding et al. (§2, §6, App. A).

"CH aims to have the same number of tasks on each node, and migrate the minimum number of tasks"
(§6). Tasks ``0 … m−1`` are keys on the ring of
:class:`~elastream.algorithms.grouping.consistent_hash.HashRing` (2^32 positions, ``virtual_nodes``
points per node, splitmix64 hashes under ``seed``); each task goes to the node owning its arc.
The live nodes are ``0 … n′−1``: scale-out adds ids ``n … n′−1``, scale-in removes the highest
ids (the most recently added), so between two CH plans only the tasks on arcs that change owner
move. Neither work nor state is looked at, so the plan may break τ (App. A's example), and a
node's tasks are scattered: the plan lists the runs of consecutive tasks on one node, a node
appearing once per run. Against current intervals that did not come from CH (e.g. in the CLI),
the first CH plan moves most tasks.

Status ``feasible`` when the plan meets τ, else ``infeasible`` with the plan kept. Random: the
paper averages 100 runs; ``benchmarks/migration`` does the same over seeds 0–99. Time
O(n′·V·log(n′·V) + m·log(n′·V)).

Options (:class:`ChOptions`): ``seed`` (default 0), ``virtual_nodes`` (default 100 a node, the
ring's default).

>>> from elastream.algorithms.migration.intervals import MigrationInstance
>>> inst = MigrationInstance([1.0] * 8, [1.0] * 8, [(0, 4), (4, 8)], 3, 1.0)
>>> p = plan(inst, options=ChOptions(seed=1))
>>> sorted(set(p.node_of_interval)) == [0, 1, 2], p.status.value
(True, 'feasible')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from elastream.algorithms.grouping.consistent_hash import DEFAULT_VIRTUAL_NODES, HashRing
from elastream.algorithms.migration.intervals import (
    I64,
    MigrationInstance,
    MigrationPlan,
    from_assignment,
)
from elastream.core import rules
from elastream.core.plan import PlanStatus

NAME: Final = "ch"


@dataclass(frozen=True)
class ChOptions:
    """Parameters of :func:`plan` (module docstring)."""

    seed: int = 0
    virtual_nodes: int = DEFAULT_VIRTUAL_NODES

    def __post_init__(self) -> None:
        rules.integer("seed", self.seed, low=0)
        rules.integer("virtual_nodes", self.virtual_nodes)


def assignment(tasks: int, nodes: int, *, seed: int = 0,
               virtual_nodes: int = DEFAULT_VIRTUAL_NODES) -> I64:
    """The node of every task on the ring of nodes ``0 … nodes−1``.

    >>> a = assignment(6, 2, seed=3); b = assignment(6, 3, seed=3)
    >>> bool(np.all((a == b) | (b == 2)))   # adding node 2 only moves tasks to it
    True
    """
    ring = HashRing(np.arange(nodes), virtual_nodes=virtual_nodes, seed=seed)
    return ring.owner(np.arange(tasks, dtype=np.int64))


def plan(instance: MigrationInstance, *, options: ChOptions | None = None) -> MigrationPlan:
    """Each task to its ring owner among nodes ``0 … n′−1``."""
    opts = options or ChOptions()
    owner = assignment(instance.m, instance.target_nodes, seed=opts.seed,
                       virtual_nodes=opts.virtual_nodes)
    return from_assignment(instance, NAME, owner, status=PlanStatus.FEASIBLE,
                           details={"seed": float(opts.seed)})
