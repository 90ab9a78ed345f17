"""What the controller needs from a runtime (Spark or the simulator)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from elastream.core.load import LoadSnapshot
from elastream.core.plan import Plan
from elastream.core.routing import RoutingTable

Planner = Callable[..., Plan]
"""``plan(snapshot, current, *, options) -> Plan`` — the one planner signature (STYLE.md)."""


class Runtime(Protocol):
    """A running job the controller observes and re-routes between micro-batches."""

    def observe(self) -> LoadSnapshot | None:
        """Statistics of the batches completed since the last call (None if none)."""
        ...

    def publish(self, table: RoutingTable) -> None:
        """Make ``table`` the routing of the next micro-batch."""
        ...

    def describe(self) -> dict[str, Any]:
        """Runtime facts for reports (engine, slots, partitions)."""
        ...
