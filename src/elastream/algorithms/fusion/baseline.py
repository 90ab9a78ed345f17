"""The baseline fusion of Enorm §7.6: grow one component at a time from a seed operator.

§7.6: "taking the first operator in the job and trying to merge downstream operators, by
greedily fusing the operator whose intersection of partition attributes is the largest. This
fusion operation continues until no more operators can be fused. Then it selects a random
non-fused operator and retries the fusion operation."

Our reading: the component starts as the first operator (graph order). Its candidates are the
operators downstream of any of its operators that are in no component yet, share at least one
partition attribute with the component's PA and keep the component graph acyclic
(:func:`.convex.merge_keeps_acyclic`, each operator in no component yet one of its own); the
one with the largest ``|PA(C) ∩ PA(O)|`` joins (first in graph order on a tie) and the
component's PA becomes that intersection. When no candidate is left the component is closed,
and the next one starts from an operator drawn uniformly from those in no component yet
(``seed``). Rates play no part. Components never merge with each other, so a later component
cannot take an operator of an earlier one, even upstream.

Complexity: O(|O| · (|O| + |E|)) candidate scans; the candidates are tried best first until
one may join, each test a search of the component graph, which is kept up to date join by join
(:class:`.convex.ComponentGraph`): O(|E|) at most.

References:
    K. G. S. Madsen, Y. Zhou, L. Su. Enorm. DEBS 2016, §7.6.

>>> from elastream.algorithms.fusion.graph import operator_graph
>>> g = operator_graph([("a", ["x", "y"]), ("b", ["x"]), ("c", ["x", "y"]), ("d", ["z"])],
...                    [("a", "b", 5.0), ("a", "c", 1.0), ("c", "d", 1.0)])
>>> baseline(g, seed=0).components  # c shares two attributes with a, then b shares x
(('a', 'b', 'c'), ('d',))
"""

from __future__ import annotations

import numpy as np

from elastream.algorithms.fusion.convex import ComponentGraph
from elastream.algorithms.fusion.graph import OperatorGraph
from elastream.algorithms.fusion.result import Fusion, fusion_from_labels
from elastream.core.plan import PlanStatus


def baseline(graph: OperatorGraph, *, seed: int = 0) -> Fusion:
    """§7.6's baseline fusion of ``graph``; ``seed`` picks the later seed operators."""
    rng = np.random.default_rng(seed)
    n = len(graph.operators)
    label = [-1] * n
    # Components so far, each operator in none yet a component of its own, named by position:
    # a component by its seed operator.
    links = ComponentGraph(graph, range(n))
    start = 0
    for c in range(n):
        component, pa = [start], graph.pa_masks[start]
        label[start] = c
        while True:
            # Free downstream operators by most attributes shared, first in graph order: the
            # first whose join keeps the component graph acyclic joins.
            shared = {j: (pa & graph.pa_masks[j]).bit_count()
                      for i in component for j in graph.successors[i] if label[j] < 0}
            ranked = sorted((-common, j) for j, common in shared.items() if common)
            best = next((j for _, j in ranked if links.may_merge(start, j)), -1)
            if best < 0:
                break
            component.append(best)
            label[best] = c
            pa &= graph.pa_masks[best]
            links.merge(start, best)
        free = [i for i in range(n) if label[i] < 0]
        if not free:
            break
        start = free[int(rng.integers(len(free)))]
    return fusion_from_labels(graph, label, "baseline", PlanStatus.FEASIBLE)
