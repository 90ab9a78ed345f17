"""Scale events of a running job: which key groups move, and in which mini-migrations.

When a job scales from ``n`` to ``n′`` slots, Ding et al.'s planners (§4–5,
:mod:`elastream.algorithms.migration`) decide the new owner of every key group: the key groups
are the *tasks* (in key-group order), each slot owns one consecutive range of them (its *task
interval*), the work of a key group is its observed load and its state the migration cost unit.
The runtime then moves the key groups that change owner in *mini-migrations* of at most ``M``
key groups each (§3), one routing version at a time; a key group moves again only once its
previous hand-off has been written (the runtime's ``in_flight``).

Slot ids: the current slots keep theirs; a planner's new nodes take the lowest ids no slot uses,
so no key group that stays is ever re-pinned. Slot ids therefore stay below the largest slot
count the job ever has, which sizes its state partitions.

>>> table = ranges_table(num_key_groups=6, num_slots=2, capacity=3)
>>> table.slot_of
(0, 0, 0, 1, 1, 1)
>>> target, plan = scale_target(table, np.ones(6), np.ones(6), slots=3, algo="ssm", tau=0.0)
>>> target.tolist(), plan.cost
([0, 0, 2, 2, 1, 1], 2.0)
>>> [(m.key_group, m.source, m.target) for m in next_moves(table, target, set(), limit=1)]
[(2, 0, 2)]
"""

from __future__ import annotations

from collections.abc import Set

import numpy as np

from elastream.algorithms.migration import registry
from elastream.algorithms.migration.intervals import (
    MigrationInstance,
    MigrationPlan,
    bounds_of,
    node_of_task,
    runs,
)
from elastream.core.errors import OptionError
from elastream.core.plan import Move, PlanStatus
from elastream.core.routing import RoutingTable
from elastream.core.spec import PipelineSpec

FALLBACK = "storm"
"""Used when the chosen planner finds no plan within τ (a key group heavier than a slot may be)."""


def ranges_table(num_key_groups: int, num_slots: int, capacity: int) -> RoutingTable:
    """The initial table of a scaling job: slot ``s`` owns the ``s``-th equal key-group range.

    Storm's default; ``capacity`` slot ids exist (the most the job ever uses).
    """
    slot_of = (np.arange(num_key_groups) * num_slots) // num_key_groups
    return RoutingTable(0, tuple(int(s) for s in slot_of), capacity)


def initial_table(spec: PipelineSpec, *, by_ranges: bool) -> RoutingTable:
    """Version 0 of ``spec``'s routing (split execution; the caller sets combine).

    A job that does not scale hashes key group ``kg`` to slot ``kg mod slots``. A job that
    scales has ``max_slots`` slot ids: its first ``slots`` own equal key-group ranges when it
    scales by ranges (``by_ranges``), else key group ``kg`` is on slot ``kg mod slots``.
    """
    groups = spec.total_key_groups
    if not spec.scales:
        return RoutingTable.hashed(groups, spec.scaling.slots)
    if by_ranges:
        return ranges_table(groups, spec.scaling.slots, spec.scaling.max_slots)
    slots = spec.scaling.slots
    return RoutingTable(0, tuple(kg % slots for kg in range(groups)), spec.scaling.max_slots)


def scale_target(table: RoutingTable, work: np.ndarray, state: np.ndarray, *, slots: int,
                 algo: str, tau: float) -> tuple[np.ndarray, MigrationPlan]:
    """The owner of every key group after scaling to ``slots``, and the planner's plan.

    The table's slots must own consecutive key-group ranges. Falls back to ``storm`` when
    ``algo`` finds no plan within ``tau``.
    """
    intervals, current = runs(table.as_array())
    if len(set(current)) < len(current):
        raise OptionError("scale_at", "needs every slot to own one range of key groups "
                          "(a balancing planner moved them apart)", list(current))
    instance = MigrationInstance(np.maximum(work, 0.0), np.maximum(state, 0.0), intervals,
                                 slots, tau)
    plan = registry.run(algo, instance)
    if plan.status is PlanStatus.INFEASIBLE:
        plan = registry.run(FALLBACK, instance)
    nodes = node_of_task(bounds_of(plan.intervals), plan.node_of_interval)
    free = iter(sorted(set(range(table.num_slots + slots)) - set(current)))
    fresh = {node: next(free) for node in sorted(set(nodes.tolist()) - set(range(len(current))))}
    slot_of = np.array([current[n] if n < len(current) else fresh[n] for n in nodes.tolist()])
    return slot_of, plan


def next_moves(table: RoutingTable, target: np.ndarray, in_flight: Set[int],
               limit: int) -> list[Move]:
    """The next mini-migration: up to ``limit`` key groups not yet on their target slot.

    In key-group order, skipping those whose last hand-off is still in flight.
    """
    moves: list[Move] = []
    for kg in np.flatnonzero(table.as_array() != target):
        if len(moves) == limit:
            break
        if int(kg) not in in_flight:
            moves.append(Move(int(kg), table.slot_of[kg], int(target[kg])))
    return moves
