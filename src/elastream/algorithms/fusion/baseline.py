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

Complexity: O(|O| · (|O| + |E|)) candidate scans plus an acyclicity test per join.

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

from elastream.algorithms.fusion.convex import merge_keeps_acyclic
from elastream.algorithms.fusion.graph import OperatorGraph
from elastream.algorithms.fusion.result import Fusion, fusion_from_labels
from elastream.core.plan import PlanStatus


def baseline(graph: OperatorGraph, *, seed: int = 0) -> Fusion:
    """§7.6's baseline fusion of ``graph``; ``seed`` picks the later seed operators."""
    rng = np.random.default_rng(seed)
    n = len(graph.operators)
    label = [-1] * n
    start = 0
    for c in range(n):
        component, pa = [start], graph.pa_masks[start]
        label[start] = c
        # Components so far, each operator in none yet a component of its own (n + i).
        alone = [label[i] if label[i] >= 0 else n + i for i in range(n)]
        while True:
            best, best_common = -1, 0
            for j in sorted({j for i in component for j in graph.successors[i]}):
                common = (pa & graph.pa_masks[j]).bit_count()
                if label[j] < 0 and common > best_common \
                        and merge_keeps_acyclic(graph, alone, c, alone[j]):
                    best, best_common = j, common
            if best < 0:
                break
            component.append(best)
            label[best] = alone[best] = c
            pa &= graph.pa_masks[best]
        free = [i for i in range(n) if label[i] < 0]
        if not free:
            break
        start = free[int(rng.integers(len(free)))]
    return fusion_from_labels(graph, label, "baseline", PlanStatus.FEASIBLE)
