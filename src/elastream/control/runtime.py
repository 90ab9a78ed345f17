"""What the control loop needs from a runtime (Spark or the simulator), and what it observes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from elastream.core.load import LoadSnapshot, ServiceTimes
from elastream.core.planner import Planner as Planner  # the one planner signature, re-exported
from elastream.core.routing import RoutingTable


@dataclass(frozen=True)
class BatchObservation:
    """What a runtime observed over the micro-batches completed since its last observation.

    ``record``: totals for the metrics (``batch_id`` of the last batch, ``batches``,
    ``input_rows``, ``valid_rows``, ``dead_letter_rows``, ``late_rows``, ``batch_ms``,
    ``watermark``, ``observed_routing_version``: the version the batches were routed by, …).
    ``key_group_load`` (rows per key group) and ``slot_load`` (rows per slot id) are exact
    counts of where the records went; ``key_hashes`` / ``key_counts`` the batches' heaviest
    keys; ``traffic`` rows ``(kg_from, kg_to, tuples)`` between consecutive operators.
    ``state_size`` (per key group) and ``capacity`` (per slot): when the runtime knows them
    (the round simulator); ``None`` otherwise (Spark): planners then have no state sizes and
    give every slot capacity 1.0. ``service``: how long the slots took over the observation
    (:class:`~elastream.core.load.ServiceTimes`), when the runtime measures it (Spark).
    ``costs``: what its stages did and took over the observation (Spark:
    :data:`elastream.runtimes.spark.costs.COSTS`), the terms of the split-or-combine cost model.
    ``key_names``: the heaviest keys' text by hash, where the runtime sees it (Spark), to name
    the hot keys a planner splits.
    """

    record: dict[str, Any]
    key_group_load: np.ndarray
    slot_load: np.ndarray
    key_hashes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    key_counts: np.ndarray = field(default_factory=lambda: np.empty(0))
    traffic: np.ndarray = field(default_factory=lambda: np.empty((0, 3)))
    state_size: np.ndarray | None = None
    capacity: np.ndarray | None = None
    service: ServiceTimes | None = None
    costs: dict[str, float] | None = None
    key_names: dict[int, str] = field(default_factory=dict)

    @property
    def batch_id(self) -> int:
        """The last micro-batch observed."""
        return int(self.record["batch_id"])

    @property
    def valid_rows(self) -> int:
        """Records that reached the keyed operators."""
        return int(self.record["valid_rows"])

    def snapshot(self, *, traffic: bool) -> LoadSnapshot:
        """The :class:`LoadSnapshot` a planner plans on; with the traffic rows if ``traffic``."""
        return LoadSnapshot(batch_id=self.batch_id, key_group_load=self.key_group_load,
                            state_size=self.state_size, capacity=self.capacity,
                            key_hashes=self.key_hashes, key_counts=self.key_counts,
                            traffic=self.traffic if traffic else None, service=self.service)


def event_millis(text: str | None) -> int | None:
    """Epoch milliseconds of an observed event time (ISO 8601, as progress reports give it).

    >>> event_millis("2001-01-01T05:00:00.000Z"), event_millis(None)
    (978325200000, None)
    """
    if text is None:
        return None
    return int(np.datetime64(text.rstrip("Z"), "ms").astype(np.int64))


class Runtime(Protocol):
    """A running job the control loop observes and re-routes while its micro-batches run.

    Publishing never waits for the job: a version takes effect from the first micro-batch that
    has not been bound to a version yet (:meth:`elastream.stores.routing_store.RoutingStore.bind`).
    """

    def observe(self) -> BatchObservation | None:
        """Statistics of the batches completed since the last call (``None`` if none)."""
        ...

    def routing(self, version: int | None = None) -> RoutingTable:
        """A published routing version (default: the latest)."""
        ...

    def publish(self, table: RoutingTable) -> None:
        """Publish ``table``: it routes the next micro-batch not yet bound."""
        ...

    def in_flight(self) -> set[int]:
        """Key groups whose last move's state has not been handed off yet (may not move)."""
        ...

    def hold_slots(self, slots: int) -> dict[str, int]:
        """Hold cores for ``slots`` busy slots where the runtime can; say what it holds.

        Spark executors on a cluster; the returned fields go into the metrics (empty: nothing
        to hold).
        """
        ...

    def load_state(self) -> dict[str, Any] | None:
        """The control loop's durable state (a scaling target), kept across restarts."""
        ...

    def save_state(self, state: dict[str, Any]) -> None:
        """Replace the control loop's durable state atomically."""
        ...

    def restart(self) -> None:
        """Stop the job's queries and start them again (stop-the-world scaling)."""
        ...
