"""What the collocation-aware planners (``albic``, ``cola``, ``potc``) share.

Traffic rows ``(kg_from, kg_to, rate)`` and what they cost are defined in
:mod:`elastream.core.traffic`; here are the few steps every planner takes on top of it:

* :func:`pairs` — the traffic with duplicate rows summed, self-loops and zero rates dropped.
* :func:`distance` — ALBIC's load distance d (§4.3.1) of node loads, in percent of the mean:
  the mean over the slots *not* marked for removal, upward deviations over all slots and
  downward ones over the others; :func:`~elastream.core.load.load_distance` when none is marked.
* :func:`after` — the details every plan reports on traffic: ``collocation_factor`` (%) and
  ``cross_traffic`` after the plan.
* :class:`ClusterOptions` — the settings of the cluster the re-placing baselines (cola, potc)
  plan for, composed into their options; :func:`instance` reads a snapshot with them.

>>> traffic = pairs(np.array([[0, 1, 2.0], [0, 1, 1.0], [2, 2, 5.0]]), 3)
>>> traffic.tolist()
[[0.0, 1.0, 3.0]]
>>> round(distance(np.array([3.0, 1.0, 2.0]), np.ones(3), np.array([False, False, True])), 1)
66.7
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.routing import RoutingTable
from elastream.core.traffic import check_traffic, collocation_factor, cross_traffic, slot_loads

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


def pairs(traffic: npt.ArrayLike | None, num_key_groups: int) -> F64:
    """Validated traffic, one row per ordered pair ``(a, b)``, ``a != b``, ``rate > 0``."""
    rows = check_traffic(traffic, num_key_groups)
    a = rows[:, 0].astype(np.int64)
    b = rows[:, 1].astype(np.int64)
    keep = (a != b) & (rows[:, 2] > 0)
    if not keep.any():
        return np.empty((0, 3))
    key, inverse = np.unique(a[keep] * num_key_groups + b[keep], return_inverse=True)
    rate = np.bincount(inverse, weights=rows[keep, 2], minlength=key.size)
    return np.column_stack([key // num_key_groups, key % num_key_groups, rate]).astype(float)


def distance(node_loads: F64, capacity: F64, removed: Mask) -> float:
    """ALBIC's d in percent (module docstring)."""
    if not removed.any():
        return load_distance(node_loads, capacity)
    total = float(node_loads.sum())
    mean = total / float(capacity[~removed].sum())
    if mean <= 0:
        return 0.0
    util = node_loads / capacity
    up = float(np.max(util - mean))
    low = float(np.max(mean - util[~removed]))
    return max(up, low, 0.0) / mean * 100.0


def removed_slots(remove: Iterable[int], num_slots: int) -> Mask:
    """``remove`` as a mask over the slots; it must name slots that exist and leave one."""
    ids = sorted(remove)
    bad = [s for s in ids if s >= num_slots]
    if bad:
        raise OptionError("remove", f"must name slots in [0, {num_slots})", bad[0])
    mask = np.zeros(num_slots, dtype=bool)
    mask[ids] = True
    if mask.all():
        raise OptionError("remove", "must leave at least one slot", ids)
    return mask


def after(slot_of: I64, traffic: npt.ArrayLike | None) -> dict[str, float]:
    """``collocation_factor`` (%) and ``cross_traffic`` under ``slot_of`` (none: no traffic).

    ``traffic`` is the snapshot's, as :mod:`elastream.core.traffic` measures it.
    """
    if traffic is None or np.asarray(traffic).size == 0:
        return {}
    return {"collocation_factor": collocation_factor(slot_of, traffic),
            "cross_traffic": cross_traffic(slot_of, traffic)}


def check_remove(remove: object) -> None:
    """``remove`` must be a frozenset of slot ids ≥ 0 (the milp planner's rule)."""
    if not isinstance(remove, frozenset) or not all(
            rules.is_count(s) and s >= 0 for s in remove):
        raise OptionError("remove", "must be a frozenset of slot ids >= 0", remove)


@dataclass(frozen=True)
class ClusterOptions:
    """The cluster cola and potc plan for (settings of both, flat in the registry).

    ``serialisation`` (default 0.0): the load a unit of cross-slot traffic costs at each end,
    in the load distance. ``remove`` (slot ids, default none): slots marked for removal, which
    get no key group.
    """

    serialisation: float = 0.0
    remove: frozenset[int] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        rules.number("serialisation", self.serialisation)
        check_remove(self.remove)


@dataclass(frozen=True)
class Instance:
    """What a collocation-aware planner reads off a snapshot (cola, potc).

    ``loads`` and ``capacity`` validated, ``removed`` slots as a mask, ``traffic`` as pair rows,
    ``origin`` the current assignment; :meth:`distance` is the load distance of an assignment
    with each key group's cross-slot serialisation counted at both ends.
    """

    loads: F64
    capacity: F64
    removed: Mask
    traffic: F64
    origin: I64
    serialisation: float

    def distance(self, assign: I64) -> float:
        """Load distance (%) of ``assign``, slots in ``removed`` counted as ALBIC's d does."""
        node = slot_loads(assign, self.loads, self.traffic, serialisation=self.serialisation,
                          num_slots=self.capacity.size)
        return distance(node, self.capacity, self.removed)


def instance(snapshot: LoadSnapshot, current: RoutingTable, cluster: ClusterOptions) -> Instance:
    """The :class:`Instance` of ``snapshot`` planned against ``current`` in ``cluster``."""
    loads, capacity = snapshot.validated_for(current)
    return Instance(loads, capacity, removed_slots(cluster.remove, current.num_slots),
                    pairs(snapshot.traffic, current.num_key_groups), current.as_array(),
                    cluster.serialisation)
