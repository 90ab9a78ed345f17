"""The one planner contract: ``plan(snapshot, current, *, options) -> Plan``."""

from __future__ import annotations

from typing import Any, Protocol

from elastream.core.load import LoadSnapshot
from elastream.core.plan import Plan
from elastream.core.routing import RoutingTable


class Planner(Protocol):
    """A balancing planner: ``plan(snapshot, current, *, options) -> Plan`` (STYLE.md).

    Pure functions (``flux.plan``) and planners that learn across batches (an instance of
    :class:`~elastream.algorithms.balance.fish_split.FishSplitPlanner`) alike; the control loop,
    the simulator and the Spark runtime call it the same way. ``options`` is the planner's own
    options type (``None``: its defaults); :mod:`elastream.control.planners` builds them.
    """

    def __call__(self, snapshot: LoadSnapshot, current: RoutingTable, *, options: Any) -> Plan:
        """Plan on ``snapshot`` for the routing table in force, ``current``."""
        ...
