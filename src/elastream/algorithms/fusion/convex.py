"""Convex components: no path leaves a component and comes back into it.

A component that is not convex would hand tuples out to another component and get tuples derived
from them back, so the components could not run as a pipeline of independent units. Enorm's
Algorithm 1 (§4.4.1) does not test for it; every fusion of this package does (each merge is
rejected when its union is not convex), and ``tests/test_fusion.py`` checks it on every result.

Convexity is a property of a set of operators in the graph alone, so a component accepted once
stays convex whatever else is fused later.

Convex components do not by themselves make the *component* graph acyclic (``a → d``,
``c → b`` with components ``{a, b}`` and ``{c, d}``: both convex, with edges each way between
them, so no order of stages can run them). Every fusion of this package therefore also keeps
the component graph acyclic (:func:`merge_keeps_acyclic`): two components of an acyclic
component graph may merge only when no path between them passes through a third component —
which, the graph being acyclic before, also makes their union convex. Algorithm 1 and the
baseline ask it of a :class:`ComponentGraph`, which they keep up to date merge by merge rather
than build anew from every edge for each test.

Complexity: :func:`is_convex`, one search from the component's outside successors through
outside operators, O(|O| + |E|); :func:`merge_keeps_acyclic`, the same over the component graph
(:meth:`ComponentGraph.may_merge`), after building it (O(|O| + |E|)).

>>> from elastream.algorithms.fusion.graph import operator_graph
>>> g = operator_graph([("a", ["k"]), ("b", ["z"]), ("c", ["k"])],
...                    [("a", "b", 1.0), ("b", "c", 1.0)])
>>> is_convex(g, ["a", "c"]), is_convex(g, ["a", "b"]), is_convex(g, ["a", "b", "c"])
(False, True, True)
>>> crossed = operator_graph([("a", ["k"]), ("b", ["k"]), ("c", ["k"]), ("d", ["k"])],
...                          [("a", "d", 1.0), ("c", "b", 1.0)])
>>> merge_keeps_acyclic(crossed, [0, 0, 2, 3], 2, 3)  # {a, b} and {c, d}: a → d, c → b
False
>>> component_cycle(crossed, [0, 0, 1, 1])
[0, 1, 0]
>>> links = ComponentGraph(crossed, [0, 1, 2, 3])  # every operator alone
>>> links.may_merge(2, 3)
True
>>> links.merge(0, 1)  # {a, b}: now c → {a, b} → d
>>> links.may_merge(2, 3), links.successors
(False, {0: {3}, 2: {0}, 3: set()})
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from elastream.algorithms.fusion.graph import OperatorGraph, a_cycle
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


def component_successors(graph: OperatorGraph, label: Sequence[int]) -> dict[int, list[int]]:
    """Each component's successors, in increasing order: the component graph of ``label``.

    Operator ``i`` is in component ``label[i]``.
    """
    succ: dict[int, set[int]] = {c: set() for c in label}
    for i, j, _ in graph.edge_ends:
        if label[i] != label[j]:
            succ[label[i]].add(label[j])
    return {c: sorted(after) for c, after in succ.items()}


def merge_keeps_acyclic(graph: OperatorGraph, label: Sequence[int], a: int, b: int) -> bool:
    """Whether merging components ``a`` and ``b`` of an acyclic component graph keeps it so.

    It does unless a path leaves ``a`` or ``b`` and comes back to either through a third
    component. Builds the component graph first, O(|O| + |E|); a fusion that asks after every
    merge keeps a :class:`ComponentGraph` instead.
    """
    return ComponentGraph(graph, label).may_merge(a, b)


class ComponentGraph:
    """The component graph of a fusion in progress, kept up to date merge by merge.

    Built from ``label`` (operator ``i`` in component ``label[i]``) in O(|O| + |E|); a merge
    keeps one of the two labels. ``successors[c]`` and ``predecessors[c]`` are the components
    with an edge from and into component ``c``.
    """

    def __init__(self, graph: OperatorGraph, label: Sequence[int]) -> None:
        self.successors: dict[int, set[int]] = {c: set() for c in label}
        self.predecessors: dict[int, set[int]] = {c: set() for c in label}
        for i, j, _ in graph.edge_ends:
            if label[i] != label[j]:
                self.successors[label[i]].add(label[j])
                self.predecessors[label[j]].add(label[i])

    def may_merge(self, a: int, b: int) -> bool:
        """:func:`merge_keeps_acyclic` for components ``a`` and ``b``.

        True when no component downstream of either is upstream of either: a breadth-first
        search of the components downstream of them, stopped at the first upstream one;
        O(edges between components) at most.
        """
        succ, pred, merged = self.successors, self.predecessors, {a, b}
        behind = (pred[a] | pred[b]) - merged
        frontier = list((succ[a] | succ[b]) - merged)
        seen = set(frontier)
        for c in frontier:  # grows while it is read
            if c in behind:
                return False
            for d in succ[c] - seen:
                seen.add(d)
                frontier.append(d)
        return True

    def merge(self, keep: int, gone: int) -> None:
        """Component ``gone`` joins ``keep``: O(their neighbours)."""
        succ, pred = self.successors, self.predecessors
        for c in succ.pop(gone):
            pred[c].discard(gone)
            if c != keep:
                pred[c].add(keep)
                succ[keep].add(c)
        for c in pred.pop(gone):
            succ[c].discard(gone)
            if c != keep:
                succ[c].add(keep)
                pred[keep].add(c)


def component_cycle(graph: OperatorGraph, label: Sequence[int]) -> list[int]:
    """Components on a cycle of the component graph of ``label``, the first repeated at the end.

    Empty if it is acyclic.
    """
    return a_cycle(component_successors(graph, label))
