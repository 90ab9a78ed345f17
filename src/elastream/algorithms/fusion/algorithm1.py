"""Enorm's automatic fusion: Algorithm 1 (§4.4.1), with the COMM or the PA score.

Every operator starts as its own component. Each round scans every edge ``i → j`` — operators
``i`` in graph order, each one's downstream operators in edge order — skips edges inside one
component and edges whose components' PAs do not intersect, scores the others and fuses the two
components of the edge with the largest score (strictly larger: the first in scan order wins a
tie). It stops when no edge scores above 0.

- ``score="comm"``: the edge's rate, ``getOutputRate(i, j)`` — minimise inter-component
  traffic directly. Edges of rate 0 are never fused (Algorithm 1's ``maxScore > 0``).
- ``score="pa"``: §4.4.1's *alternative score*, the number of partition attributes the two
  components have in common, ``|PA(C_i) ∩ PA(C_j)|`` — fuse the most compatible components,
  to leave the most room for later fusions and so the fewest components; it needs no rates.

**One addition to the paper**: a fusion that would make the component graph cyclic — a path
between the two components through a third one (:func:`.convex.merge_keeps_acyclic`; their
union is then convex too) — is skipped and the next best edge tried; Algorithm 1 as printed has
no such test, and without it the components can feed each other both ways, which no order of
stages runs. Skipping is only for this round: another fusion may allow the pair later.

Complexity: at most ``|O| − 1`` fusions, without rescanning every edge each round: the
candidate edges wait in a heap by (score, scan rank) and leave it for good once inside one
component or without a common PA (PAs only shrink as components grow); a PA score, which only
falls, is corrected when its edge comes out. A pair whose merge would close a cycle stays
blocked until a merge changes one of its two components (merging others keeps the path through
a third), so its edges wait aside until then. Each acyclicity test is a search of the
component graph, kept up to date merge by merge (:class:`.convex.ComponentGraph`): O(|E|) at
most, one per fusion and one per blocked pair each time it is freed. The heap costs
O(log |E|) per entry: one per edge, plus one each time its score falls or its pair is freed.

References:
    K. G. S. Madsen, Y. Zhou, L. Su. Enorm: Efficient Window-Based Computation in Large-Scale
    Distributed Stream Processing Systems. DEBS 2016, §4.4.1 and Algorithm 1; Figs. 1–2.

Fig. 1's job (op_1 on every input attribute, op_2 and op_3 on ``area``, the global op_4 and
op_5 on none) fuses as Fig. 2 shows:

>>> from elastream.algorithms.fusion.graph import operator_graph
>>> every = ["user", "area", "date", "approval", "amount", "return", "lendingTime", "income"]
>>> g = operator_graph([("op1", every), ("op2", ["area"]), ("op3", ["area"]), ("op4", []),
...                     ("op5", [])], [("op1", "op2", 10.0), ("op1", "op3", 10.0),
...                                    ("op2", "op4", 1.0), ("op3", "op5", 1.0)])
>>> f = algorithm1(g, score="comm")
>>> f.components, round(f.inter_component_traffic_pct, 2)
((('op1', 'op2', 'op3'), ('op4',), ('op5',)), 9.09)
"""

from __future__ import annotations

import heapq
from typing import Literal

from elastream.algorithms.fusion.convex import ComponentGraph
from elastream.algorithms.fusion.graph import OperatorGraph
from elastream.algorithms.fusion.result import Fusion, fusion_from_labels
from elastream.core import rules
from elastream.core.plan import PlanStatus

Score = Literal["comm", "pa"]
SCORES: tuple[Score, ...] = ("comm", "pa")


def algorithm1(graph: OperatorGraph, *, score: Score = "comm") -> Fusion:
    """Fuse ``graph``'s operators greedily by ``score`` (``comm`` or ``pa``; module docstring).

    Raises:
        OptionError: ``score`` is not ``comm`` or ``pa``.
    """
    rules.choice("score", score, SCORES)
    label = list(range(len(graph.operators)))
    members = {i: [i] for i in label}
    pa = list(graph.pa_masks)  # per component label
    links = ComponentGraph(graph, label)

    def value(i: int, j: int, rate: float) -> float:
        """Edge ``i → j``'s score now: 0 once it can never fuse.

        For good: components only grow, their PAs only shrink.
        """
        common = pa[label[i]] & pa[label[j]]
        if label[i] == label[j] or not common:
            return 0
        return rate if score == "comm" else common.bit_count()

    # The candidates, best first: (-score, rank in Algorithm 1's scan order — source operator
    # in graph order, then edge order — i, j, rate).
    scan = sorted(graph.edge_ends, key=lambda e: e[0])  # sorted() is stable
    heap = [(-now, rank, i, j, rate) for rank, (i, j, rate) in enumerate(scan)
            if (now := value(i, j, rate)) > 0]
    heapq.heapify(heap)
    # Edges of pairs whose merge would close a cycle, by pair: set aside until a merge changes
    # one of the two components (until then the cycle stays).
    blocked: dict[tuple[int, int], list[tuple[float, int, int, int, float]]] = {}
    while heap:
        entry = heapq.heappop(heap)
        _, rank, i, j, rate = entry
        now = value(i, j, rate)
        if now != -entry[0]:  # 0 for good, or a PA score that fell: back with the new one
            if now > 0:
                heapq.heappush(heap, (-now, rank, i, j, rate))
            continue
        pair = label[i], label[j]
        if pair in blocked or not links.may_merge(*pair):
            blocked.setdefault(pair, []).append(entry)
            continue
        keep, gone = sorted(pair, key=lambda c: -len(members[c]))
        for op in members[gone]:
            label[op] = keep
        members[keep] += members.pop(gone)
        pa[keep] &= pa[gone]
        links.merge(keep, gone)
        for stale in [p for p in blocked if keep in p or gone in p]:
            for again in blocked.pop(stale):
                heapq.heappush(heap, again)
    return fusion_from_labels(graph, label, score, PlanStatus.FEASIBLE)
