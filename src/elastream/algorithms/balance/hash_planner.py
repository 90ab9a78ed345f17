"""The ``hash`` planner: the static baseline that never moves a key group.

Key groups stay where the initial table put them (``kg mod num_slots``, see
:meth:`elastream.core.routing.RoutingTable.hashed`), as with a plain hash partitioner. It is the
"no adaptation" point every balancing planner is compared against (ALBIC §5.2, Enorm §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Capability, Plan, PlanStatus
from elastream.core.routing import RoutingTable

NAME: Final = "hash"
CAN: Final[frozenset[Capability]] = frozenset({Capability.SCALE_BY_RANGES})
"""What it can do beyond moving key groups (:class:`~elastream.core.plan.Capability`)."""


@dataclass(frozen=True)
class HashOptions:
    """The hash planner has no parameters."""


def plan(
    snapshot: LoadSnapshot, current: RoutingTable, *, options: HashOptions | None = None
) -> Plan:
    """Keep the current routing: always :attr:`PlanStatus.UNCHANGED`, never a move.

    ``objective`` is the load distance of the current assignment, so a benchmark can report the
    baseline's imbalance through the same field as every other planner. O(G + S).

    >>> import numpy as np
    >>> snap = LoadSnapshot(batch_id=0, key_group_load=np.array([3.0, 1.0, 1.0, 1.0]))
    >>> p = plan(snap, RoutingTable.hashed(num_key_groups=4, num_slots=2))
    >>> p.status.value, p.moves, round(p.objective, 1)
    ('unchanged', (), 33.3)
    """
    if options is not None and not isinstance(options, HashOptions):
        raise OptionError("options", "must be HashOptions for the hash planner", options)
    _, capacity = snapshot.validated_for(current)
    distance = load_distance(snapshot.slot_load(current), capacity)
    return Plan(
        status=PlanStatus.UNCHANGED,
        objective=distance,
        details={"load_distance_before": distance},
    )
