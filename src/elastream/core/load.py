"""Load snapshots: what the controller observed over the last micro-batch(es)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.routing import RoutingTable


@dataclass(frozen=True)
class ServiceTimes:
    """How long a runtime's slots took to process the rows it observed (when it measures it).

    ``interval_seconds``: the wall-clock span the observation's rows arrived over (> 0).
    ``busy_seconds[s]``: seconds slot ``s`` spent processing; ``rows``: the rows processed in
    that time (≥ 0). ``batches``: the micro-batches measured (> 0; a weight once older
    measurements are folded in, :meth:`folded`); ``overhead_seconds``: their mean time beyond
    the busiest slot's work (≥ 0) — a micro-batch engine's scheduling, shuffles and commits,
    the part of a batch that more slots do not shorten (0 for a tuple-at-a-time engine).
    ``arrived``: the rows that arrived over ``interval_seconds`` (default: ``rows``); once older
    measurements are folded in, ``rows`` holds theirs too, ``arrived`` stays this observation's.

    >>> t = ServiceTimes(2.0, np.array([0.5, 0.25]), rows=1500.0, batches=2,
    ...                  overhead_seconds=0.4)
    >>> t.service_rate  # rows per busy second, pooled over the slots
    2000.0
    >>> later = ServiceTimes(1.0, np.array([0.5, 0.5]), rows=500.0, batches=1,
    ...                      overhead_seconds=1.0)
    >>> both = later.folded(t, decay=0.5)  # the older counts half
    >>> both.interval_seconds, round(both.service_rate, 1), round(both.overhead_seconds, 3)
    (1.0, 909.1, 0.7)
    >>> both.arrival_rate  # rows/s arriving now: this observation's 500 rows over its 1 s
    500.0
    """

    interval_seconds: float
    busy_seconds: np.ndarray
    rows: float
    batches: float = 1.0
    overhead_seconds: float = 0.0
    arrived: float | None = None

    def __post_init__(self) -> None:
        rules.number("service.interval_seconds", self.interval_seconds, above=0)
        busy = np.asarray(self.busy_seconds, dtype=float)
        if busy.ndim != 1 or not np.all(np.isfinite(busy)) or np.any(busy < 0):
            raise OptionError("service.busy_seconds", "must be finite seconds >= 0, one per "
                              "slot", self.busy_seconds)
        if self.arrived is None:
            object.__setattr__(self, "arrived", self.rows)
        rules.number("service.rows", self.rows)
        rules.number("service.batches", self.batches, above=0)
        rules.number("service.overhead_seconds", self.overhead_seconds)
        rules.number("service.arrived", self.arrived)
        object.__setattr__(self, "busy_seconds", busy)

    @property
    def service_rate(self) -> float | None:
        """Rows one slot processes per second of its busy time (``None``: none measured)."""
        busy = float(self.busy_seconds.sum())
        return self.rows / busy if busy > 0 and self.rows > 0 else None

    @property
    def arrival_rate(self) -> float:
        """Rows/s that arrived over this observation's interval (never folded)."""
        return float(self.arrived or 0.0) / self.interval_seconds

    def folded(self, older: ServiceTimes | None, decay: float) -> ServiceTimes:
        """These times with ``older`` folded in at weight ``decay`` (0 ≤ decay < 1).

        Busy seconds, rows and batches add up (the older ones decayed), so the service rate
        and the overhead per batch are measured over recent observations; the interval stays
        this observation's (the span its loads arrived over), and so do the rows that arrived
        over it (``arrived``: the arrival rate is measured now, not averaged).
        """
        if older is None or older.busy_seconds.shape != self.busy_seconds.shape:
            return self
        batches = decay * older.batches + self.batches
        overhead = (decay * older.batches * older.overhead_seconds
                    + self.batches * self.overhead_seconds) / batches
        return ServiceTimes(self.interval_seconds,
                            decay * older.busy_seconds + self.busy_seconds,
                            decay * older.rows + self.rows, batches, overhead, self.arrived)


@dataclass(frozen=True)
class LoadSnapshot:
    """Per key group load (tuples), state size, and slot capacities, at one batch.

    ``key_group_load[kg]`` is the work key group ``kg`` brought (tuples in the observation
    window); ``state_size[kg]`` its state (rows or bytes, the planner's migration cost unit);
    ``capacity[s]`` the relative speed of slot ``s`` (1.0 each by default).
    ``key_hashes`` / ``key_counts``: the batch's heaviest keys (their 64-bit hashes, the ones
    key groups are taken from) and their estimated tuple counts, for hot-key planners.
    ``traffic``: rows ``(kg_from, kg_to, rate)`` between key groups of communicating operators
    (:mod:`elastream.core.traffic`), for planners that collocate them.
    ``service``: how long the slots took (:class:`ServiceTimes`), from a runtime that measures
    it, for planners that size the slots to the load (elasticutor).
    """

    batch_id: int
    key_group_load: np.ndarray
    state_size: np.ndarray | None = None
    capacity: np.ndarray | None = None
    key_hashes: np.ndarray | None = None
    key_counts: np.ndarray | None = None
    traffic: np.ndarray | None = None
    service: ServiceTimes | None = None

    @property
    def num_key_groups(self) -> int:
        """G."""
        return int(self.key_group_load.shape[0])

    def slot_load(self, routing: RoutingTable) -> np.ndarray:
        """Load of each slot under ``routing`` (sum of its key groups' loads)."""
        return np.bincount(routing.as_array(), weights=self.key_group_load,
                           minlength=routing.num_slots)

    def slot_capacity(self, num_slots: int) -> np.ndarray:
        """Capacities, defaulting to 1.0 per slot."""
        if self.capacity is None:
            return np.ones(num_slots)
        return np.asarray(self.capacity, dtype=float)

    def validated_for(self, current: RoutingTable) -> tuple[np.ndarray, np.ndarray]:
        """Loads and capacities as float arrays, checked against the table's G and S.

        Every planner calls this first: a snapshot that does not fit the routing table it is
        planned against is a caller's mistake, reported with the field, the rule and the value.
        """
        loads = np.asarray(self.key_group_load, dtype=float)
        if loads.shape != (current.num_key_groups,):
            raise OptionError(
                "snapshot.key_group_load",
                "must hold one load per key group of the routing table "
                f"(G={current.num_key_groups})",
                loads.shape,
            )
        if not np.all(np.isfinite(loads)) or np.any(loads < 0):
            raise OptionError("snapshot.key_group_load", "must be finite and non-negative",
                              loads[~(np.isfinite(loads) & (loads >= 0))][0])
        capacity = self.slot_capacity(current.num_slots)
        if capacity.shape != (current.num_slots,):
            raise OptionError("snapshot.capacity",
                              f"must hold one capacity per slot (S={current.num_slots})",
                              capacity.shape)
        if not np.all(np.isfinite(capacity)) or np.any(capacity <= 0):
            raise OptionError("snapshot.capacity", "must be finite and positive",
                              capacity[~(np.isfinite(capacity) & (capacity > 0))][0])
        return loads, capacity


def load_distance(slot_load: np.ndarray, capacity: np.ndarray | None = None) -> float:
    """ALBIC's load distance: the largest deviation of a slot's utilisation from the mean, in %.

    >>> load_distance(np.array([10.0, 10.0]))
    0.0
    >>> load_distance(np.array([15.0, 5.0]))
    50.0
    """
    cap = np.ones_like(slot_load, dtype=float) if capacity is None else capacity
    if slot_load.size == 0:
        return 0.0
    mean = float(slot_load.sum()) / float(cap.sum())
    if mean <= 0:  # nothing loaded (or a load so small that the mean underflows)
        return 0.0
    util = slot_load / cap
    return float(np.max(np.abs(util - mean)) / mean * 100.0)
