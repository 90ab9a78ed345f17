"""Load snapshots: what the controller observed over the last micro-batch(es)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elastream.core.routing import RoutingTable


@dataclass(frozen=True)
class LoadSnapshot:
    """Per key group load (tuples), state size, and slot capacities, at one batch.

    ``key_group_load[kg]`` is the work key group ``kg`` brought (tuples in the observation
    window); ``state_size[kg]`` its state (rows or bytes, the planner's migration cost unit);
    ``capacity[s]`` the relative speed of slot ``s`` (1.0 each by default).
    """

    batch_id: int
    key_group_load: np.ndarray
    state_size: np.ndarray | None = None
    capacity: np.ndarray | None = None

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


def load_distance(slot_load: np.ndarray, capacity: np.ndarray | None = None) -> float:
    """ALBIC's load distance: the largest deviation of a slot's utilisation from the mean, in %.

    >>> load_distance(np.array([10.0, 10.0]))
    0.0
    >>> load_distance(np.array([15.0, 5.0]))
    50.0
    """
    cap = np.ones_like(slot_load, dtype=float) if capacity is None else capacity
    total = float(slot_load.sum())
    if total <= 0:
        return 0.0
    util = slot_load / cap
    mean = total / float(cap.sum())
    return float(np.max(np.abs(util - mean)) / mean * 100.0)
