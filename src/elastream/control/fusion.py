"""A graph job's fusion: the source's component as Enorm's Algorithm 1 plans it (§4.4.1).

The spec (:mod:`elastream.core.chain`) fuses the first ``fused`` operators listed; when the
user gives no ``fused``, the entry points (``elastream.windowed``, ``elastream run``) list the
operators of the source's Algorithm 1 component first and fuse as many of them as can run so
(:func:`planned`). A chain needs no reordering: its source component is a prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from elastream.algorithms.fusion.fuse import fuse
from elastream.algorithms.fusion.graph import operator_graph
from elastream.core.chain import SOURCE, ChainOperator, is_linear, most_fused
from elastream.core.spec import PipelineSpec

Spec = TypeVar("Spec", bound=PipelineSpec)


def planned(spec: Spec) -> Spec:
    """``spec`` with its graph's operators in Algorithm 1's order, its component fused."""
    ops = spec.chaining.chain
    if not ops or is_linear(ops):
        return spec
    pa = spec.source.partition_by or spec.source_keys
    ordered, most = source_component(pa, ops)
    fused = most_fused(spec.source_keys, pa, spec.windowing.aggs, spec.windowing.windows,
                       ordered, most)
    return spec.with_(chain=ordered, fused=fused)


def source_component(source_pa: Sequence[str], chain: Sequence[ChainOperator]
                     ) -> tuple[tuple[ChainOperator, ...], int]:
    """Algorithm 1's component of the source (score COMM by the inputs' rates).

    Returns ``chain`` (linked, in a topological order) reordered with the component's
    operators first — a topological order still, the component being convex and every
    operator reachable from the source — and their count.

    >>> from elastream.core.aggregates import AggSpec
    >>> from elastream.core.chain import linked
    >>> ops = linked((ChainOperator("a", ("z",), (AggSpec("sum", "v"),)),
    ...               ChainOperator("b", ("k",), (AggSpec("sum", "v"),), inputs=("source",))))
    >>> [op.id for op in source_component(("k",), ops)[0]], source_component(("k",), ops)[1]
    (['b', 'a'], 1)
    """
    graph = operator_graph([(SOURCE, source_pa), *((op.id, op.partition_by) for op in chain)],
                           [(name, op.id, op.rates[i] if op.rates else 1.0)
                            for op in chain for i, name in enumerate(op.inputs)])
    component = next(set(c) for c in fuse(graph, score="comm").components if SOURCE in c)
    inside = tuple(op for op in chain if op.id in component)
    return inside + tuple(op for op in chain if op.id not in component), len(inside)
