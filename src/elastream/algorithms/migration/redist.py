r"""``redist``: Gedik's *Redist* partitioning function, the baseline of Ding et al. (§2, §6).

Gedik (*Partitioning functions for stateful data parallelism in stream processing*, VLDB J. 23(4),
2014) builds a partitioning function as an explicit table for the most frequent keys plus
consistent hashing for the rest, and constructs the table greedily from the previous function so
that balance and migration are traded by a utility. *Redist* places one (item, channel) pair per
step: among all items not yet placed and all channels, the pair with the least utility per unit
of frequency, ``U(ρ, μ) / f``, where

- ``ρ = (max_l L_l − min_l L_l) / (θ · avg_l L_l)`` is the balance penalty of the loads ``L`` of
  the items placed so far with this item added (``θ`` the tolerated imbalance);
- ``μ = (moved + c·[l ≠ previous channel]) / (total cost / channels)`` the migration penalty,
  ``moved`` the cost of the items already placed off their previous channel;
- ``U(ρ, μ) = ρ + μ``, the additive utility.

What we implemented, and where it departs from Gedik:

- *Items are our m tasks, all of them in the explicit table* (frequency ``f_j = w_j``). Gedik
  tracks only the top keys and hashes the rest consistently; with m tasks a full table is small,
  so the consistent-hash fallback is never used.
- *One resource.* Gedik's ``ρ`` is the geometric mean of memory, computation and network
  penalties, each with its own ``θ`` and cost functions of the frequency; here balance is on work
  only (β_c = 1: load = frequency), as in Ding et al.'s load bound, with ``θ = max(τ, 10⁻³)``.
- *Identical state per task by default* (``c = 1``): Ding et al. compare against Redist "under the
  assumption that the size of operator states for each task is identical" (§2). With
  ``unit_state=False`` the migration penalty counts ``s_j`` instead.
- *Channels are nodes.* Channel ``l`` is node ``l``: ``0 … min(n, n′)−1`` stay, higher ids are
  new, and on scale-in nodes ``n′ … n−1`` are removed (their tasks count as moved wherever they
  go). The previous channel of a task is its current node.
- *Zero-work tasks* (``f = 0``) are scored with ``f = 10⁻¹²·W`` so they are placed last, where they
  cost least to migrate.

The result scatters tasks (Gedik's function is a hash table, not intervals): the plan lists the
runs of consecutive tasks on one node. ``ρ`` is a penalty, not a bound, so the plan may break τ:
status ``feasible`` when it meets τ, else ``infeasible`` with the plan kept. Time O(m²·n′)
(m steps, each scoring every remaining task on every node, vectorised).

>>> from elastream.algorithms.migration.intervals import MigrationInstance
>>> inst = MigrationInstance([4.0, 1, 1, 1, 1, 4], [1.0] * 6, [(0, 3), (3, 6)], 3, 0.5)
>>> p = plan(inst)
>>> p.cost, p.max_load_ratio, p.intervals, p.node_of_interval
(4.0, 1.0, ((0, 1), (1, 5), (5, 6)), (0, 2, 1))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from elastream.algorithms.migration.intervals import (
    F64,
    I64,
    MigrationInstance,
    MigrationPlan,
    from_assignment,
)
from elastream.core.plan import PlanStatus

NAME: Final = "redist"
MIN_THETA: Final = 1e-3
ZERO_WORK: Final = 1e-12


@dataclass(frozen=True)
class RedistOptions:
    """``unit_state`` (default True): migration penalty counts tasks, not their state."""

    unit_state: bool = True


def plan(instance: MigrationInstance, *, options: RedistOptions | None = None) -> MigrationPlan:
    """Gedik's Redist over the tasks (module docstring)."""
    opts = options or RedistOptions()
    theta = max(instance.tau, MIN_THETA)
    owner = assign(instance.work, instance.state, instance.node_of_task,
                   instance.target_nodes, theta=theta, unit_state=opts.unit_state)
    return from_assignment(instance, NAME, owner, status=PlanStatus.FEASIBLE,
                           details={"theta": theta})


def assign(work: F64, state: F64, previous: I64, nodes: int, *, theta: float,
           unit_state: bool = True) -> I64:
    """The node of every task: Redist's greedy from the ``previous`` node of each task.

    ``theta`` > 0 is Gedik's tolerated imbalance; nodes are ``0 … nodes−1`` (a previous node
    outside them is gone). Usable on scattered assignments, e.g. Redist's own previous plan.
    """
    m = work.size
    total = float(work.sum())
    freq = np.maximum(work, ZERO_WORK * total)
    move = np.ones(m) if unit_state else state.astype(float)
    ideal = max(float(move.sum()) / nodes, 1e-300)
    loads = np.zeros(nodes)
    moved = 0.0
    owner = np.full(m, -1, dtype=np.int64)
    left = np.arange(m)
    channels = np.arange(nodes)
    while left.size:
        f = freq[left][:, None]
        new = loads[None, :] + f                       # load of l if item j goes there
        others_max, others_min = _excluding(loads)
        high = np.maximum(others_max[None, :], new)
        low = np.minimum(others_min[None, :], new)
        avg = (loads.sum() + f) / nodes
        rho = (high - low) / (theta * avg)
        off = previous[left][:, None] != channels[None, :]
        mu = (moved + move[left][:, None] * off) / ideal
        score = (rho + mu) / f
        j, lane = divmod(int(np.argmin(score)), nodes)
        task = int(left[j])
        owner[task] = lane
        loads[lane] += work[task]
        moved += float(move[task] * (previous[task] != lane))
        left = np.delete(left, j)
    return owner


def _excluding(loads: F64) -> tuple[F64, F64]:
    """Max and min of the loads of every channel but ``l``, for each ``l`` (``∓inf`` if none)."""
    n = loads.size
    if n == 1:
        return np.array([-np.inf]), np.array([np.inf])
    order = np.argsort(loads)
    top, second = order[-1], order[-2]
    bottom, next_bottom = order[0], order[1]
    high = np.full(n, loads[top])
    high[top] = loads[second]
    low = np.full(n, loads[bottom])
    low[bottom] = loads[next_bottom]
    return high, low
