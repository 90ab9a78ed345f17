"""The ``potc`` planner: the power of two choices, for whole key groups.

ALBIC's PoTC baseline (§2.2, §5.2) is partial key grouping (Nasir et al., ICDE 2015): two hash
functions give every *key* two candidate instances, each tuple goes to the one its sender has
loaded less, and the key's state, split over the two, is merged periodically. This repository
has that scheme for tuples (:mod:`elastream.algorithms.grouping.pkg`, the simulator's ``pkg``).
A planner, though, assigns whole key groups — a :class:`~elastream.core.plan.Plan` can move a key
group, not split one (split hot keys are FISH's, :mod:`.fish_split`) — so this is the key-group
form of the same rule, the greedy two-choice allocation of Azar et al.:

* Key group ``k`` has the candidates ``H1(k)`` and ``H2(k)`` among the slots not in
  ``remove`` (PKG's seeded hashes, salts 1 and 2, :func:`~elastream.algorithms.grouping.
  hashing.choice`; they may coincide, as in PKG).
* Every plan re-assigns all key groups from scratch: heaviest first (ties: lowest id), each to
  whichever of its two candidates is less utilised so far (load / capacity; ties: the slot it is
  on now if that is a candidate, else ``H1``). Heaviest first is the offline order; PKG's
  arrival order could only balance worse.
* No migration budget: PKG never migrates state, so it has none to respect, and re-assigning a
  key group here is the nearest a key-group world comes to re-routing its keys.

What is *not* modelled: since no key group is split there is no merge step, and so none of the
merge overhead to which ALBIC §5.2 attributes PoTC's uneven load ("the amount of state to merge
varies over time and from node to node"). This planner is the best case of two choices at
key-group granularity; the tuple-level scheme with its split state is the ``pkg`` grouping.

It plans nothing while the load distance is at most ``min_load_distance`` and no key group sits
on a slot in ``remove`` (a balanced assignment is left alone). Status ``FEASIBLE`` with the
moves, or ``UNCHANGED``; ``objective`` is the load distance after the plan, node loads including
``serialisation`` × cross-slot traffic (ALBIC's d with slots in ``remove``); ``details``:
``load_distance_before``, ``on_second_choice`` (key groups placed on ``H2``), and
``collocation_factor`` and ``cross_traffic`` after the plan when there is traffic.
Complexity: O(G log G + G + E) for G key groups and E traffic rows.

References:
    M. A. U. Nasir, G. De Francisci Morales, D. García-Soriano, N. Kourtellis, M. Serafini.
    The power of both choices: Practical load balancing for distributed stream processing
    engines. ICDE 2015.
    Y. Azar, A. Z. Broder, A. R. Karlin, E. Upfal. Balanced allocations. STOC 1994.
    K. G. S. Madsen, Y. Zhou, J. Cao. Integrative Dynamic Reconfiguration in a Parallel Stream
    Processing Engine. 2016, §2.2, §5.2.

>>> load = np.random.default_rng(1).integers(1, 10, 16).astype(float)
>>> p = plan(LoadSnapshot(0, load), RoutingTable.hashed(num_key_groups=16, num_slots=4))
>>> round(p.details["load_distance_before"], 1), round(p.objective, 1), len(p.moves)
(41.5, 17.1, 8)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import numpy as np

from elastream.algorithms.balance import collocation
from elastream.algorithms.balance.collocation import I64, ClusterOptions
from elastream.algorithms.grouping.hashing import choice
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot
from elastream.core.plan import Capability, Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable

NAME: Final = "potc"
CAN: Final[frozenset[Capability]] = frozenset({Capability.TAKE_SCALE_IN_MARK})
"""What it can do beyond moving key groups (:class:`~elastream.core.plan.Capability`)."""

SALTS: Final = (1, 2)
"""The hash salts of the two choices, as in the ``pkg`` grouping."""


@dataclass(frozen=True)
class PotcOptions:
    """Parameters of :func:`plan`.

    ``min_load_distance`` (default 0.0, %): plan nothing while the load distance is at most
    this. ``cluster``: :class:`~.collocation.ClusterOptions` (``serialisation``, for the load
    distance reported; ``remove``: slots that are no candidate). ``seed`` (default 0): the hash
    functions' seed.
    """

    min_load_distance: float = 0.0
    cluster: ClusterOptions = field(default_factory=ClusterOptions)
    seed: int = 0

    def __post_init__(self) -> None:
        rules.number("min_load_distance", self.min_load_distance)
        if not isinstance(self.cluster, ClusterOptions):
            raise OptionError("cluster", "must be ClusterOptions", self.cluster)
        rules.integer("seed", self.seed, low=0)


def candidates(num_key_groups: int, active: I64, seed: int) -> tuple[I64, I64]:
    """``H1`` and ``H2`` of every key group: slots of ``active``, by PKG's two seeded hashes.

    >>> h1, h2 = candidates(4, np.array([0, 2, 3]), seed=0)
    >>> set(h1.tolist()) | set(h2.tolist()) <= {0, 2, 3}
    True
    """
    kgs = np.arange(num_key_groups, dtype=np.int64)
    first, second = (active[choice(kgs, active.size, seed, salt)] for salt in SALTS)
    return first, second


def plan(
    snapshot: LoadSnapshot, current: RoutingTable, *, options: PotcOptions | None = None
) -> Plan:
    """Put every key group on the less utilised of its two candidates (module docstring)."""
    opts = PotcOptions() if options is None else options
    if not isinstance(opts, PotcOptions):
        raise OptionError("options", "must be PotcOptions for the potc planner", opts)
    inst = collocation.instance(snapshot, current, opts.cluster)
    loads, capacity, removed, origin = inst.loads, inst.capacity, inst.removed, inst.origin
    distance = inst.distance

    before = distance(origin)
    if before <= opts.min_load_distance and not removed[origin].any():
        return Plan(status=PlanStatus.UNCHANGED, objective=before,
                    details={"load_distance_before": before, "on_second_choice": 0.0,
                             **collocation.after(origin, snapshot.traffic)})

    first, second = candidates(current.num_key_groups, np.flatnonzero(~removed), opts.seed)
    held = np.zeros(current.num_slots)
    assign = origin.copy()
    on_second = 0
    for k in np.lexsort((np.arange(loads.size), -loads)).tolist():
        h1, h2 = int(first[k]), int(second[k])
        u1, u2 = held[h1] / capacity[h1], held[h2] / capacity[h2]
        if u2 < u1 or (u2 == u1 and h2 == origin[k]):
            slot, on_second = h2, on_second + (h2 != h1)
        else:
            slot = h1
        assign[k] = slot
        held[slot] += loads[k]

    moved = np.flatnonzero(assign != origin)
    moves = tuple(Move(key_group=int(k), source=int(origin[k]), target=int(assign[k]))
                  for k in moved)
    return Plan(
        status=PlanStatus.FEASIBLE if moves else PlanStatus.UNCHANGED,
        moves=moves,
        objective=distance(assign),
        details={"load_distance_before": before, "on_second_choice": float(on_second),
                 **collocation.after(assign, snapshot.traffic)},
    )
