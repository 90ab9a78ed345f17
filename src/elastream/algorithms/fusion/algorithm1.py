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

Complexity: at most ``|O| − 1`` fusions; each round scores the live edges, O(|E|) with PA masks
as integers, plus O(|O| + |E|) per acyclicity test. An edge whose components stop sharing a PA
never shares one again (PAs only shrink as components grow) and leaves the scan.

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

from typing import Literal

from elastream.algorithms.fusion.convex import merge_keeps_acyclic
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
    # Algorithm 1's scan order: source operator in graph order, then edge order.
    live = sorted(graph.edge_ends, key=lambda e: e[0])  # sorted() is stable
    while True:
        kept: list[tuple[int, int, float]] = []
        candidates: list[tuple[float, int, int, int]] = []  # (-score, scan rank, i, j)
        for i, j, rate in live:
            ci, cj = label[i], label[j]
            common = pa[ci] & pa[cj]
            if ci == cj or not common:
                continue  # for good: components only grow, their PAs only shrink
            value = rate if score == "comm" else common.bit_count()
            if value > 0:
                candidates.append((-value, len(kept), i, j))
            kept.append((i, j, rate))
        live = kept
        pair = _first_acyclic(graph, candidates, label)
        if pair is None:
            break
        keep, gone = sorted(pair, key=lambda c: -len(members[c]))
        for i in members[gone]:
            label[i] = keep
        members[keep] += members.pop(gone)
        pa[keep] &= pa[gone]
    return fusion_from_labels(graph, label, score, PlanStatus.FEASIBLE)


def _first_acyclic(graph: OperatorGraph, candidates: list[tuple[float, int, int, int]],
                   label: list[int]) -> tuple[int, int] | None:
    """The components of the best-scored candidate that may merge, if any.

    They may when their merge keeps the component graph acyclic.
    """
    if not candidates:
        return None

    def acyclic(candidate: tuple[float, int, int, int]) -> tuple[int, int] | None:
        ci, cj = label[candidate[2]], label[candidate[3]]
        return (ci, cj) if merge_keeps_acyclic(graph, label, ci, cj) else None

    first = acyclic(min(candidates))  # usually the best is fine: sort only when it is not
    if first is not None:
        return first
    return next(filter(None, map(acyclic, sorted(candidates)[1:])), None)
