"""Convex components: no path leaves a component and comes back into it.

A component that is not convex would hand tuples out to another component and get tuples derived
from them back, so the components could not run as a pipeline of independent units. Enorm's
Algorithm 1 (§4.4.1) does not test for it; every fusion of this package does (each merge is
rejected when its union is not convex), and ``tests/test_fusion.py`` checks it on every result.

Convexity is a property of a set of operators in the graph alone, so a component accepted once
stays convex whatever else is fused later.

Note: convex components do not by themselves make the *component* graph acyclic (``a → b``,
``c → d``, ``a → d``, ``c → b`` with components ``{a, b}`` and ``{c, d}``: both convex, with
edges each way between them). Neither the paper nor this package rules that out.

Complexity: one search from the component's outside successors through outside operators,
O(|O| + |E|).

>>> from elastream.algorithms.fusion.graph import operator_graph
>>> g = operator_graph([("a", ["k"]), ("b", ["z"]), ("c", ["k"])],
...                    [("a", "b", 1.0), ("b", "c", 1.0)])
>>> is_convex(g, ["a", "c"]), is_convex(g, ["a", "b"]), is_convex(g, ["a", "b", "c"])
(False, True, True)
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from elastream.algorithms.fusion.graph import OperatorGraph
from elastream.core.errors import OptionError


def is_convex(graph: OperatorGraph, component: Iterable[str]) -> bool:
    """Whether no path of ``graph`` leaves the operators ``component`` (ids) and re-enters them.

    Raises:
        OptionError: ``component`` names an operator not in the graph.
    """
    members = set()
    for name in component:
        if name not in graph.index:
            raise OptionError("component", "must name operators of the graph", name)
        members.add(graph.index[name])
    return convex_positions(graph, members)


def convex_positions(graph: OperatorGraph, members: Collection[int]) -> bool:
    """:func:`is_convex` for operator positions (what the fusion algorithms call)."""
    succ = graph.successors
    frontier = [j for i in members for j in succ[i] if j not in members]
    seen = set(frontier)
    while frontier:
        i = frontier.pop()
        for j in succ[i]:
            if j in members:
                return False  # left the component at some point and came back at j
            if j not in seen:
                seen.add(j)
                frontier.append(j)
    return True
