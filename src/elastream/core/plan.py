"""Plans: what a planner decides, with an explicit status — never a bare ``None``.

Every balancing planner (:class:`~elastream.core.planner.Planner`) returns one.
Its status is a :class:`PlanStatus`, the one status type of every planner family (the migration
planners' :class:`~elastream.algorithms.migration.intervals.MigrationPlan` states it too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class PlanStatus(StrEnum):
    """How a planner ended."""

    OPTIMAL = "optimal"
    """Proved best for its objective."""
    FEASIBLE = "feasible"
    """A valid plan from a heuristic, or a solver's incumbent at its limit."""
    FALLBACK = "fallback"
    """The planner could not run as asked and returned its baseline's plan instead."""
    UNCHANGED = "unchanged"
    """Nothing worth moving: the current assignment stays."""
    INFEASIBLE = "infeasible"
    """No plan meets the planner's constraints (a migration's τ), or the baseline's plan breaks
    them: the plan says why."""


class Capability(StrEnum):
    """What a balancing planner can do beyond moving key groups, declared in its module.

    The control loop and the job's checks ask for these, never for a planner's name
    (:mod:`elastream.control.planners` collects them).
    """

    SCALE_BY_RANGES = "scale_by_ranges"
    """Its slots own key-group ranges, and a scale event is planned by Ding et al.'s migration
    planners (``hash``)."""
    SPLIT_HOT_KEYS = "split_hot_keys"
    """It spreads a hot key over several slots (``fish``): jobs of one operator only."""
    SIZE_SLOTS = "size_slots"
    """It decides how many slots the load needs (``elasticutor``, ``Plan.slots_used``)."""
    TAKE_SCALE_IN_MARK = "take_scale_in_mark"
    """It takes slots marked for removal (``remove``) and empties them while it balances the
    rest (ALBIC §4.3: ``milp``, ``albic``; ``cola`` and ``potc`` place nothing on them); the
    others get them drained first."""


@dataclass(frozen=True)
class Move:
    """Key group ``key_group`` leaves slot ``source`` for slot ``target``."""

    key_group: int
    source: int
    target: int


@dataclass(frozen=True)
class Plan:
    """A planner's decision: moves, the slot count afterwards, and how it was reached.

    ``objective`` is the planner's own measure of the result (for balancing planners: the load
    distance after the moves); ``solve_seconds`` is filled in by whoever timed the call.
    ``hot_keys`` is the new table of split hot keys (see
    :class:`~elastream.core.routing.RoutingTable`), or ``None`` to keep the current one.
    ``slots_used``: how many slots the plan keeps busy, from a planner that sizes them to the
    load (elasticutor); a runtime that can hold more or fewer cores (Spark executors on a
    cluster) holds that many slots' worth. ``None``: the planner does not size them.
    """

    status: PlanStatus
    moves: tuple[Move, ...] = ()
    num_slots: int | None = None
    hot_keys: tuple[tuple[int, tuple[int, ...]], ...] | None = None
    objective: float = 0.0
    solve_seconds: float = 0.0
    details: dict[str, float] = field(default_factory=dict)
    slots_used: int | None = None

    @property
    def changes_routing(self) -> bool:
        """True if applying the plan publishes a new routing version."""
        return bool(self.moves) or self.num_slots is not None or self.hot_keys is not None

