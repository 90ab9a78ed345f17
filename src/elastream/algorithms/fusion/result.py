"""A fusion's result, its measure (inter-component traffic) and the rules every fusion keeps.

Enorm §4.4: fusion groups operators into *components*; ``PA(C) = ⋂_{O ∈ C} PA(O)`` and a
component is parallelised on it, so §4.4.1 asks that every operator be in exactly one component
and that ``PA(C) ≠ ∅``. A single operator whose own PA is empty (Fig. 1's op_4, op_5: global
aggregates, one instance) is its own component all the same — the paper's Fig. 2 keeps them
(``PA(C_3) = PA(C_4) = ∅``) — so the PA rule binds components of two or more operators. Every
component must also be convex, and the component graph acyclic (:mod:`.convex`).

The measure of §7.6 (Fig. 15) is the inter-component communication: the rate on edges whose
ends are in different components over the rate on all edges, in percent (0 when no edge
carries anything).

>>> from elastream.algorithms.fusion.graph import operator_graph
>>> g = operator_graph([("a", ["k"]), ("b", ["k"]), ("c", [])],
...                    [("a", "b", 3.0), ("b", "c", 1.0)])
>>> inter_component_traffic_pct(g, [["a", "b"], ["c"]])
25.0
>>> fusion_problems(g, [["a", "b", "c"]])
("component ['a', 'b', 'c'] has no partition attribute in common",)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from elastream.algorithms.fusion.convex import component_cycle, convex_positions
from elastream.algorithms.fusion.graph import OperatorGraph
from elastream.core.plan import PlanStatus


@dataclass(frozen=True)
class Fusion:
    """Components of a job and what they cost.

    ``score``: the method that fused (``comm``, ``pa``, ``baseline``, ``exhaustive``).
    ``status``: ``OPTIMAL`` (exhaustive search: least inter-component traffic) or ``FEASIBLE``
    (a heuristic's valid fusion). ``components``: operator ids, each component in graph order,
    components ordered by their first operator. ``inter_component_traffic_pct``: module
    docstring.
    """

    score: str
    status: PlanStatus
    components: tuple[tuple[str, ...], ...]
    inter_component_traffic_pct: float

    @property
    def num_components(self) -> int:
        """How many components."""
        return len(self.components)


def inter_component_traffic_pct(graph: OperatorGraph,
                                components: Sequence[Sequence[str]]) -> float:
    """Percent of the edges' rate that crosses components (0 when the total rate is 0)."""
    label = {name: c for c, comp in enumerate(components) for name in comp}
    return _traffic_pct(graph, [label[name] for name in graph.ids])


def fusion_problems(graph: OperatorGraph, components: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """What breaks the rules of a fusion (module docstring); empty when it keeps them all."""
    problems = []
    count = {name: 0 for name in graph.ids}
    for comp in components:
        for name in comp:
            if name not in count:
                problems.append(f"{name!r} is not an operator of the graph")
            else:
                count[name] += 1
        known = [graph.index[n] for n in comp if n in graph.index]
        if not comp:
            problems.append("a component is empty")
        elif len(comp) > 1 and not _common_pa(graph, known):
            problems.append(f"component {list(comp)} has no partition attribute in common")
        if known and not convex_positions(graph, set(known)):
            problems.append(f"component {list(comp)} is not convex")
    problems += [f"{name!r} is in {n} components" for name, n in count.items() if n != 1]
    if not problems:
        label = {name: c for c, comp in enumerate(components) for name in comp}
        cycle = component_cycle(graph, [label[name] for name in graph.ids])
        if cycle:
            problems.append("the components feed each other in a cycle: "
                            + " → ".join(str(list(components[c])) for c in cycle))
    return tuple(problems)


def fusion_from_labels(graph: OperatorGraph, labels: Sequence[int], score: str,
                       status: PlanStatus) -> Fusion:
    """The :class:`Fusion` in which operator ``i`` is in component ``labels[i]``."""
    groups: dict[int, list[str]] = {}
    for name, label in zip(graph.ids, labels, strict=True):
        groups.setdefault(label, []).append(name)  # graph order, by first operator
    return Fusion(score, status, tuple(tuple(g) for g in groups.values()),
                  _traffic_pct(graph, labels))


def _traffic_pct(graph: OperatorGraph, labels: Sequence[int]) -> float:
    total = graph.total_rate
    if total == 0:
        return 0.0
    crossing = math.fsum(r for i, j, r in graph.edge_ends if labels[i] != labels[j])
    return 100.0 * crossing / total


def _common_pa(graph: OperatorGraph, positions: Sequence[int]) -> int:
    mask = -1
    for i in positions:
        mask &= graph.pa_masks[i]
    return mask
