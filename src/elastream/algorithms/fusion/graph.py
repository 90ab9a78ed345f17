"""Enorm's operator model: a DAG of operators, each with its partition attributes.

Madsen, Zhou, Su, *Enorm* (DEBS 2016), §4.3. A job is a DAG ⟨O, E⟩; operator ``O_i`` is
parallelised on its *partition attributes* ``PA(O_i)``, a set of attribute names (empty: the
operator runs as one instance, as the global aggregates op_4 and op_5 of Fig. 1). An edge
``i → j`` carries ``rate`` tuples per unit of time (any unit, ≥ 0) from ``i`` to ``j``: Algorithm
1's ``getOutputRate(i, j)``.

:func:`operator_graph` validates and builds an :class:`OperatorGraph`. Every mistake is an
:class:`~elastream.core.errors.OptionError` naming the field (``operators[2].id``,
``edges[0].to``), the rule and the value: a blank or duplicate operator id, an edge naming an
unknown operator, a self loop, a repeated edge, a negative or non-finite rate, a cycle (the
message shows one).

The graph keeps its operators in the order given: that order is the ``for each i ∈ O`` of
Algorithm 1, and each operator's downstream operators follow the edges' order.

>>> g = operator_graph([("o1", ["user", "area"]), ("o2", ["area"]), ("o4", [])],
...                    [("o1", "o2", 10.0), ("o2", "o4", 2.0)])
>>> g.ids, g.successors, g.total_rate
(('o1', 'o2', 'o4'), ((1,), (2,), ()), 12.0)
>>> operator_graph([("a", ["k"]), ("b", ["k"])], [("a", "b", 1.0), ("b", "a", 1.0)])
Traceback (most recent call last):
...
elastream.core.errors.OptionError: edges must form no cycle, got 'a -> b -> a'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from elastream.core import rules
from elastream.core.errors import OptionError


@dataclass(frozen=True)
class Operator:
    """An operator ``id`` partitioned on the attributes ``pa`` (may be empty)."""

    id: str
    pa: frozenset[str]


@dataclass(frozen=True)
class Edge:
    """``rate`` tuples per unit of time flow from operator ``source`` to operator ``target``."""

    source: str
    target: str
    rate: float


@dataclass(frozen=True)
class OperatorGraph:
    """A validated operator DAG; build it with :func:`operator_graph`.

    Operators are addressed by their position in ``operators`` in the derived views
    (``successors``, ``edge_ends``, ``pa_masks``), which the fusion algorithms work on.
    """

    operators: tuple[Operator, ...]
    edges: tuple[Edge, ...]

    @cached_property
    def ids(self) -> tuple[str, ...]:
        """Operator ids in graph order."""
        return tuple(o.id for o in self.operators)

    @cached_property
    def index(self) -> dict[str, int]:
        """Operator id → position."""
        return {name: i for i, name in enumerate(self.ids)}

    @cached_property
    def edge_ends(self) -> tuple[tuple[int, int, float], ...]:
        """Each edge as ``(source position, target position, rate)``, in edge order."""
        return tuple((self.index[e.source], self.index[e.target], e.rate) for e in self.edges)

    @cached_property
    def successors(self) -> tuple[tuple[int, ...], ...]:
        """Each operator's downstream operators, in edge order."""
        out: list[list[int]] = [[] for _ in self.operators]
        for i, j, _ in self.edge_ends:
            out[i].append(j)
        return tuple(tuple(s) for s in out)

    @cached_property
    def attributes(self) -> tuple[str, ...]:
        """Every partition attribute of the job, sorted: bit ``b`` of a PA mask is ``[b]``."""
        return tuple(sorted(set().union(*(o.pa for o in self.operators))))

    @cached_property
    def pa_masks(self) -> tuple[int, ...]:
        """Each operator's PA as a bit mask over :attr:`attributes` (intersection is ``&``)."""
        bit = {name: 1 << b for b, name in enumerate(self.attributes)}
        return tuple(sum(bit[a] for a in o.pa) for o in self.operators)

    @cached_property
    def total_rate(self) -> float:
        """The rate summed over every edge."""
        return math.fsum(e.rate for e in self.edges)

    def pa_names(self, mask: int) -> tuple[str, ...]:
        """The attribute names of a PA mask, sorted."""
        return tuple(a for b, a in enumerate(self.attributes) if mask >> b & 1)


def operator_graph(operators: Iterable[tuple[str, Iterable[str]] | Operator],
                   edges: Iterable[tuple[str, str, float] | Edge]) -> OperatorGraph:
    """The validated DAG of ``operators`` (``(id, pa)``) and ``edges`` (``(from, to, rate)``).

    Raises:
        OptionError: naming the field (``operators[1].id``, ``edges[3].rate``), the rule and
            the value; see the module docstring for the rules.
    """
    ops = tuple(o if isinstance(o, Operator) else _operator(i, o)
                for i, o in enumerate(operators))
    seen: dict[str, int] = {}
    for i, o in enumerate(ops):
        if not isinstance(o.id, str) or not o.id:
            raise OptionError(f"operators[{i}].id", "must be a non-empty string", o.id)
        if o.id in seen:
            raise OptionError(f"operators[{i}].id", f"must be unique (operators[{seen[o.id]}] "
                              "has it too)", o.id)
        seen[o.id] = i
    es = tuple(e if isinstance(e, Edge) else Edge(e[0], e[1], e[2]) for e in edges)
    pairs: dict[tuple[str, str], int] = {}
    for k, e in enumerate(es):
        for field, end in (("from", e.source), ("to", e.target)):
            if end not in seen:
                raise OptionError(f"edges[{k}].{field}", "must name an operator in operators",
                                  end)
        if e.source == e.target:
            raise OptionError(f"edges[{k}]", "must join two different operators (no self loop)",
                              e.source)
        rules.number(f"edges[{k}].rate", e.rate)
        if (e.source, e.target) in pairs:
            raise OptionError(f"edges[{k}]", f"must not repeat edges[{pairs[e.source, e.target]}]",
                              f"{e.source} -> {e.target}")
        pairs[e.source, e.target] = k
    graph = OperatorGraph(ops, tuple(Edge(e.source, e.target, float(e.rate)) for e in es))
    cycle = a_cycle(dict(enumerate(graph.successors)))
    if cycle:
        raise OptionError("edges", "must form no cycle",
                          " -> ".join(graph.ids[i] for i in cycle))
    return graph


def _operator(i: int, item: tuple[str, Iterable[str]]) -> Operator:
    name, pa = item
    if isinstance(pa, str):  # "area" would otherwise be the attributes a, r, e
        raise OptionError(f"operators[{i}].pa", "must be a list of attribute names", pa)
    attributes = tuple(pa)
    for a in attributes:
        if not isinstance(a, str) or not a:
            raise OptionError(f"operators[{i}].pa", "must list non-empty attribute names", a)
    return Operator(name, frozenset(attributes))


def a_cycle(successors: Mapping[int, Iterable[int]]) -> list[int]:
    """One cycle of the graph ``node → its successors``, first node repeated at the end.

    Empty if there is none. A depth-first search, nodes and successors in the order given.
    """
    state: dict[int, int] = {}  # 1 on the current path, 2 done
    for root in successors:
        if root in state:
            continue
        path, stack = [root], [iter(successors[root])]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(successors[nxt]))
    return []
