"""The ``flux`` planner: pairwise greedy rebalancing of key groups between slots.

Flux (Shah et al., ICDE 2003) is the adaptation algorithm of Enorm (§3.2, §4.4.2) and a baseline
of ALBIC (§2.2, §5.2). Enorm §3.2: "It sorts nodes in descending order of their workloads. Then
it moves the biggest suitable data partition at the first node to the last one in the sorted
list, such that load variance is decreased. If necessary, it also moves the biggest suitable data
partition at the second node to the second last one in the list, and so on." Here nodes are slots
and data partitions are key groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Capability, Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable

NAME: Final = "flux"
CAN: Final[frozenset[Capability]] = frozenset()
"""What it can do beyond moving key groups (:class:`~elastream.core.plan.Capability`)."""


@dataclass(frozen=True)
class FluxOptions:
    """Parameters of :func:`plan`.

    ``max_moves`` (default 4, key groups): most moves in one plan — the migration budget ALBIC §5.2
    gives Flux as ``maxMigrations``. ``min_imbalance`` (default 0.0, a fraction): plan nothing,
    and stop moving, once the most utilised slot is less than this fraction above the mean
    utilisation (0.05: leave ``max/mean - 1 < 5%`` alone).
    """

    max_moves: int = 4
    min_imbalance: float = 0.0

    def __post_init__(self) -> None:
        rules.integer("max_moves", self.max_moves, low=0)
        rules.number("min_imbalance", self.min_imbalance)


def plan(
    snapshot: LoadSnapshot, current: RoutingTable, *, options: FluxOptions | None = None
) -> Plan:
    """Move the biggest suitable key group from the i-th most to the i-th least utilised slot.

    A *pass* sorts the slots by utilisation ``u = load / capacity`` (descending; ties: lower slot
    id first) and pairs the i-th most with the i-th least utilised slot, ``i = 0 .. S//2 - 1``
    (with an odd slot count the median slot sits out). For each pair (heavy ``h``, light ``l``),
    a key group of load ``p`` on ``h`` is *suitable* when ``p > 0``, it has not moved yet in this
    plan, and

        ``p < (u_h - u_l) * min(c_h, c_l)``,

    i.e. after the move both slots' utilisations lie strictly between ``u_l`` and ``u_h``. With
    equal capacities this is ``p < L_h - L_l``: exactly the moves that strictly shrink the pair's
    difference without reversing it, and exactly those that lower the load variance (the pair's
    sum of squares changes by ``2p(p - (L_h - L_l))``). With unequal capacities it is a subset of
    the variance-lowering moves, chosen so that no slot overshoots the pair's range. The biggest
    suitable key group moves (ties: lowest key-group id); a pair with none is skipped. Passes
    repeat on the re-sorted slots until a pass moves nothing, ``options.max_moves`` moves are
    planned, or ``max(u) / mean(u) - 1`` is below ``options.min_imbalance`` (``mean(u)`` = total
    load / total capacity).

    Because every move keeps both utilisations inside ``(u_l, u_h)``, no plan raises the largest
    utilisation, lowers the smallest, or increases the load distance; each key group moves at most
    once per plan, from the slot ``current`` gives it.

    Args:
        snapshot: ``key_group_load`` (one non-negative load per key group of ``current``) and
            optionally ``capacity`` (one positive relative speed per slot; default 1.0 each).
        current: the routing table in force.
        options: :class:`FluxOptions`; ``FluxOptions()`` when omitted.

    Returns:
        :attr:`PlanStatus.FEASIBLE` with the moves, or :attr:`PlanStatus.UNCHANGED`; ``objective``
        is the load distance (%, :func:`elastream.core.load.load_distance`) after the moves;
        ``details`` holds ``load_distance_before``, ``max_utilisation_before``/``_after`` and
        ``passes``. ``num_slots`` stays ``None``: Flux does not scale.

    Complexity: O(P · (G log G + S log S)) time and O(G + S) memory for G key groups, S slots and
    P ≤ ``max_moves`` + 1 passes.

    References:
        M. A. Shah, J. M. Hellerstein, S. Chandrasekaran, M. J. Franklin. Flux: An adaptive
        partitioning operator for continuous query systems. ICDE 2003. Restated in Enorm §3.2 and
        ALBIC §2.2.

    >>> rng = np.random.default_rng(2)
    >>> snap = LoadSnapshot(batch_id=0, key_group_load=rng.integers(1, 100, 16).astype(float))
    >>> p = plan(snap, RoutingTable.hashed(num_key_groups=16, num_slots=4),
    ...          options=FluxOptions(max_moves=4))
    >>> p.status.value, [(m.key_group, m.source, m.target) for m in p.moves]
    ('feasible', [(12, 0, 3), (2, 2, 1), (3, 3, 0)])
    >>> round(p.details["load_distance_before"], 1), round(p.objective, 1)
    (39.5, 8.8)
    """
    opts = FluxOptions() if options is None else options
    if not isinstance(opts, FluxOptions):
        raise OptionError("options", "must be FluxOptions for the flux planner", opts)
    loads, capacity = snapshot.validated_for(current)
    num_slots = current.num_slots
    slot_of = current.as_array()
    moved = np.zeros(loads.shape[0], dtype=bool)
    ids = np.arange(loads.shape[0])
    slot_ids = np.arange(num_slots)
    moves: list[Move] = []

    slot_load_before = np.bincount(slot_of, weights=loads, minlength=num_slots)
    util_before = slot_load_before / capacity
    passes = 0
    while len(moves) < opts.max_moves:
        util = np.bincount(slot_of, weights=loads, minlength=num_slots) / capacity
        if _imbalance(util, capacity) < opts.min_imbalance:
            break
        passes += 1
        by_util = np.lexsort((slot_ids, -util))
        # Key groups grouped by slot, heaviest first, ties by id: a slot's first suitable
        # entry is its biggest suitable key group.
        by_slot = np.lexsort((ids, -loads, slot_of))
        bounds = np.searchsorted(slot_of[by_slot], np.arange(num_slots + 1))
        moved_in_pass = False
        for i in range(num_slots // 2):
            if len(moves) >= opts.max_moves:
                break
            heavy, light = int(by_util[i]), int(by_util[num_slots - 1 - i])
            limit = (util[heavy] - util[light]) * min(capacity[heavy], capacity[light])
            own = by_slot[bounds[heavy] : bounds[heavy + 1]]
            suitable = ~moved[own] & (loads[own] > 0) & (loads[own] < limit)
            if not suitable.any():
                continue
            kg = int(own[np.argmax(suitable)])
            moves.append(Move(key_group=kg, source=heavy, target=light))
            slot_of[kg] = light
            moved[kg] = True
            moved_in_pass = True
        if not moved_in_pass:
            break

    slot_load_after = np.bincount(slot_of, weights=loads, minlength=num_slots)
    before = load_distance(slot_load_before, capacity)
    after = load_distance(slot_load_after, capacity)
    return Plan(
        status=PlanStatus.FEASIBLE if moves else PlanStatus.UNCHANGED,
        moves=tuple(moves),
        objective=after,
        details={
            "load_distance_before": before,
            "max_utilisation_before": float(util_before.max()),
            "max_utilisation_after": float((slot_load_after / capacity).max()),
            "passes": float(passes),
        },
    )


def _imbalance(util: np.ndarray, capacity: np.ndarray) -> float:
    """``max(u) / mean(u) - 1`` with the capacity-weighted mean; 0.0 when nothing is loaded."""
    mean = float(np.dot(util, capacity)) / float(capacity.sum())
    if mean <= 0:  # nothing loaded (or a load so small that the mean underflows)
        return 0.0
    return float(util.max()) / mean - 1.0
