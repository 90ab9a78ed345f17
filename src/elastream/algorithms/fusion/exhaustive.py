"""The optimal fusion of a small job, by exhaustive search: the oracle for Algorithm 1.

Enorm §4.4.1 states fusion's objective — the least inter-component communication, every
operator in one component, every component's PA non-empty — and solves it greedily. This module
finds the true optimum under the same rules as the heuristics (:mod:`.result`: a component of
two or more operators shares a partition attribute, every component is convex, the component
graph is acyclic) so that the greedy's gap can be measured.

Method: every subset of operators (a bit mask) is checked once — allowed as a component or
not, and the rate on its internal edges — then a dynamic program over subsets gives the
partition with the most internal rate: ``best(S) = max over allowed B ⊆ S that no operator
of S − B feeds, of internal(B) + best(S − B)``: every partition whose component graph is
acyclic is reached (its blocks in a topological order), and no other. Least crossing rate =
total − ``best(all)``. Of equally good partitions it keeps the first the program finds
(blocks are tried from the whole set downwards), so the answer is deterministic.

Complexity: O(2^n · (n + |E|)) for the subsets and O(3^n) for the program; ``n`` is limited to
:data:`MAX_OPERATORS` (12: about half a second).

>>> from elastream.algorithms.fusion.graph import operator_graph
>>> g = operator_graph([("a", ["x"]), ("b", ["x", "y"]), ("c", ["y"]), ("d", ["x"])],
...                    [("a", "b", 5.0), ("b", "c", 6.0), ("b", "d", 5.0)])
>>> f = exhaustive(g)
>>> f.status.value, f.components, f.inter_component_traffic_pct
('optimal', (('a', 'b', 'd'), ('c',)), 37.5)
"""

from __future__ import annotations

from elastream.algorithms.fusion.convex import convex_positions
from elastream.algorithms.fusion.graph import OperatorGraph
from elastream.algorithms.fusion.result import Fusion, fusion_from_labels
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

MAX_OPERATORS = 12
"""The largest job :func:`exhaustive` takes (3^12 ≈ 531k steps)."""


def exhaustive(graph: OperatorGraph) -> Fusion:
    """The fusion of ``graph`` with the least inter-component traffic (status ``OPTIMAL``).

    Raises:
        OptionError: the graph has more than :data:`MAX_OPERATORS` operators.
    """
    n = len(graph.operators)
    if n > MAX_OPERATORS:
        raise OptionError("graph", f"must have at most {MAX_OPERATORS} operators for "
                          "exhaustive search", n)
    internal, allowed = _subsets(graph)
    into = [0] * n  # per operator, the mask of its upstream operators
    for i, j, _ in graph.edge_ends:
        into[j] |= 1 << i
    full = (1 << n) - 1
    best = [0.0] * (full + 1)
    choice = [0] * (full + 1)
    for mask in range(1, full + 1):
        value, block = -1.0, 0
        b = mask
        while b:  # every nonempty subset of mask: a block fed by none of mask's others
            if allowed[b] and internal[b] + best[mask ^ b] > value \
                    and not _upstream(into, b) & (mask ^ b):
                value, block = internal[b] + best[mask ^ b], b
            b = (b - 1) & mask
        best[mask], choice[mask] = value, block
    label = [0] * n
    mask, c = full, 0
    while mask:
        for i in range(n):
            if choice[mask] >> i & 1:
                label[i] = c
        mask ^= choice[mask]
        c += 1
    return fusion_from_labels(graph, label, "exhaustive", PlanStatus.OPTIMAL)


def _upstream(into: list[int], block: int) -> int:
    """The operators with an edge into ``block`` (a mask)."""
    mask = 0
    while block:
        low = block & -block
        mask |= into[low.bit_length() - 1]
        block ^= low
    return mask


def _subsets(graph: OperatorGraph) -> tuple[list[float], list[bool]]:
    """Per subset mask: the rate on its internal edges, and whether it may be a component."""
    n = len(graph.operators)
    size = 1 << n
    internal = [0.0] * size
    pa = [-1] * size
    allowed = [False] * size
    for mask in range(1, size):
        low = (mask & -mask).bit_length() - 1
        pa[mask] = pa[mask ^ (1 << low)] & graph.pa_masks[low]
    for i, j, rate in graph.edge_ends:
        both = (1 << i) | (1 << j)
        for mask in range(size):
            if mask & both == both:
                internal[mask] += rate
    for mask in range(1, size):
        members = [i for i in range(n) if mask >> i & 1]
        allowed[mask] = (len(members) == 1 or pa[mask] != 0) \
            and convex_positions(graph, set(members))
    return internal, allowed
