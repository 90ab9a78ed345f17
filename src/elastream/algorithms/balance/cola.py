"""The ``cola`` planner: static re-optimisation by balanced graph partitioning (COLA).

COLA (Khandekar et al., Middleware 2009) places the operators of a stream job by graph
partitioning; ALBIC (§2.1, §5.3, §5.4) uses it as the baseline that re-optimises from scratch:
"It first puts all operators into one partition, and then gradually splits the partitions until
a solution with a sufficient load balance is obtained. Splitting is done by a balanced graph
partitioning algorithm, which ensures the load of each partition is relatively even, while
minimizing the data sent across different partitions." Here the vertices are key groups, as in
ALBIC's comparison:

1. Start with one partition of all key groups.
2. *Map* the partitions to the slots not in ``remove``: heaviest partition first, each to the
   slot where it ends least utilised (``(held + w) / capacity``; ties: lowest slot) — Graham's
   LPT rule for machines of different speeds. A partition's weight ``w`` is its key groups'
   load plus ``serialisation`` × the traffic crossing its boundary (the most it can cost).
3. If the load distance of the resulting node loads (serialisation of cross-slot traffic
   included, :func:`~elastream.core.traffic.slot_loads`) is at most ``max_load_distance``,
   stop. Otherwise *split* the heaviest partition of two or more key groups in two with METIS
   (:mod:`~elastream.algorithms.balance.graph_partition`; vertex weight: load, edge weight:
   traffic) and go back to 2. When every partition is a single key group, the last mapping
   stands, whatever its load distance.

COLA ignores the current assignment, so it migrates most key groups — ALBIC §5.4: "COLA
migrates close to 200 key groups per SPL" (of 200) — and has no migration budget: that is the
point of the comparison. It plans nothing only when there is nothing to gain: the current
assignment is already within ``max_load_distance`` and no traffic crosses slots.

COLA itself fuses operators into processing elements under host-capacity constraints and picks
which element to split by its own cost; splitting the heaviest partition until the load distance
meets the target is ALBIC's restatement of it, which is what this planner follows.

Status ``FEASIBLE`` with the moves, or ``UNCHANGED``; ``objective`` is the load distance after
the plan (%, ALBIC's d with slots in ``remove``). ``details``: ``load_distance_before``,
``partitions``, ``splits``, ``target_met`` (1.0 or 0.0), and ``collocation_factor`` and
``cross_traffic`` after the plan when there is traffic. Complexity: P ≤ G mappings of
O(P log P + P·S + E) and P METIS bisections, for G key groups, S slots, E traffic rows.

References:
    R. Khandekar, K. Hildrum, S. Parekh, D. Rajan, J. Wolf, K.-L. Wu, H. Andrade, B. Gedik.
    COLA: Optimizing stream processing applications via graph partitioning. Middleware 2009.
    K. G. S. Madsen, Y. Zhou, J. Cao. Integrative Dynamic Reconfiguration in a Parallel Stream
    Processing Engine. 2016, §2.1, §5.3, §5.4.

Four pairs of communicating key groups (``i`` sends to ``4 + i``), all split across two slots:
COLA keeps every pair together and balances the pairs.

>>> traffic = np.array([[0, 4, 5.0], [1, 5, 5.0], [2, 6, 5.0], [3, 7, 5.0]])
>>> snap = LoadSnapshot(0, np.ones(8), traffic=traffic)
>>> p = plan(snap, RoutingTable(0, (0, 0, 0, 0, 1, 1, 1, 1), 2))
>>> len(p.moves), p.objective, p.details["collocation_factor"], p.details["splits"]
(4, 0.0, 100.0, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import numpy as np

from elastream.algorithms.balance import collocation, graph_partition
from elastream.algorithms.balance.collocation import F64, I64, ClusterOptions, Mask
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot
from elastream.core.plan import Capability, Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable

NAME: Final = "cola"
CAN: Final[frozenset[Capability]] = frozenset({Capability.TAKE_SCALE_IN_MARK})
"""What it can do beyond moving key groups (:class:`~elastream.core.plan.Capability`)."""


@dataclass(frozen=True)
class ColaOptions:
    """Parameters of :func:`plan`.

    ``max_load_distance`` (default 10, % of the mean slot load, as ALBIC's maxLD): split until
    the load distance is at most this. ``cluster``: :class:`~.collocation.ClusterOptions`
    (``serialisation``, ``remove``: slots that get no key group). ``seed`` (default 0): METIS's
    seed.
    """

    max_load_distance: float = 10.0
    cluster: ClusterOptions = field(default_factory=ClusterOptions)
    seed: int = 0

    def __post_init__(self) -> None:
        rules.number("max_load_distance", self.max_load_distance)
        if not isinstance(self.cluster, ClusterOptions):
            raise OptionError("cluster", "must be ClusterOptions", self.cluster)
        rules.integer("seed", self.seed, low=0)


def plan(
    snapshot: LoadSnapshot, current: RoutingTable, *, options: ColaOptions | None = None
) -> Plan:
    """Re-optimise the whole assignment by splitting partitions (module docstring)."""
    opts = ColaOptions() if options is None else options
    if not isinstance(opts, ColaOptions):
        raise OptionError("options", "must be ColaOptions for the cola planner", opts)
    inst = collocation.instance(snapshot, current, opts.cluster)
    loads, capacity, removed, traffic, origin = (inst.loads, inst.capacity, inst.removed,
                                                 inst.traffic, inst.origin)
    distance = inst.distance

    before = distance(origin)
    crossing = bool(traffic.size) and bool(np.any(origin[traffic[:, 0].astype(np.int64)]
                                            != origin[traffic[:, 1].astype(np.int64)]))
    on_removed = bool(removed[origin].any())
    if before <= opts.max_load_distance and not crossing and not on_removed:
        return Plan(status=PlanStatus.UNCHANGED, objective=before,
                    details={"load_distance_before": before, "partitions": 0.0,
                             "splits": 0.0, "target_met": 1.0,
                             **collocation.after(origin, snapshot.traffic)})

    weight = _Weights(loads, traffic, opts.cluster.serialisation)
    partitions = [np.arange(current.num_key_groups, dtype=np.int64)]
    splits = 0
    while True:
        assign = _map(partitions, weight, capacity, removed)
        after = distance(assign)
        splittable = [i for i, p in enumerate(partitions) if p.size > 1]
        if after <= opts.max_load_distance or not splittable:
            break
        heaviest = max(splittable, key=lambda i: (weight(partitions[i]), -partitions[i][0]))
        part = partitions.pop(heaviest)
        partitions.extend(graph_partition.split(part, 2, loads[part], traffic, seed=opts.seed))
        splits += 1

    moved = np.flatnonzero(assign != origin)
    moves = tuple(Move(key_group=int(k), source=int(origin[k]), target=int(assign[k]))
                  for k in moved)
    return Plan(
        status=PlanStatus.FEASIBLE if moves else PlanStatus.UNCHANGED,
        moves=moves,
        objective=after,
        details={"load_distance_before": before, "partitions": float(len(partitions)),
                 "splits": float(splits), "target_met": float(after <= opts.max_load_distance),
                 **collocation.after(assign, snapshot.traffic)},
    )


class _Weights:
    """A partition's weight: its load plus the serialisation of the traffic crossing its edge."""

    def __init__(self, loads: F64, traffic: F64, serialisation: float) -> None:
        self.loads = loads
        self.a = traffic[:, 0].astype(np.int64)
        self.b = traffic[:, 1].astype(np.int64)
        self.cost = traffic[:, 2] * serialisation
        self.inside = np.zeros(loads.size, dtype=bool)

    def __call__(self, part: I64) -> float:
        w = float(self.loads[part].sum())
        if self.cost.size and self.cost.any():
            self.inside[part] = True
            w += float(self.cost[self.inside[self.a] != self.inside[self.b]].sum())
            self.inside[part] = False
        return w


def _map(partitions: list[I64], weight: _Weights, capacity: F64, removed: Mask) -> I64:
    """LPT: heaviest partition first, each to the active slot where it ends least utilised."""
    active = np.flatnonzero(~removed)
    held = np.zeros(capacity.size)
    assign = np.zeros(sum(p.size for p in partitions), dtype=np.int64)
    weights = [weight(p) for p in partitions]
    for i in sorted(range(len(partitions)), key=lambda i: (-weights[i], int(partitions[i][0]))):
        util = (held[active] + weights[i]) / capacity[active]
        slot = int(active[np.argmin(util)])
        held[slot] += weights[i]
        assign[partitions[i]] = slot
    return assign
