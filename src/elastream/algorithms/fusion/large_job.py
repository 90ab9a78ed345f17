"""Enorm's "Large Job": a random operator DAG with partition attributes and rates (§7).

§7: "an operator simply gets a random subset of 30 partition attributes, whose size is initially
half of the partition attributes. The size of the subset is changed by a random value for each
new operator and the actual partition attributes chosen with the given size, is always completely
random. [...] we first randomly choose the number of levels in the topology, i.e. the longest
path in the DAG, as a random value between three and 0.75 · #operators. The operators are then
divided into the needed levels, from the first to the last operator. Each operator sends X
tuples to operators in the immediate downstream level. [...] the tuples to the first operator
[are] a random between 0 and X, multiplied by a random between 0 and 1. This gives the amount of
tuples, Y, to send to the first operator and X is updated to be X = X − Y, and the calculation
is done similarly for the next operator in the downstream level."

What the paper leaves open, and our choices:

- the random change of the PA size: an integer drawn uniformly from ``[−size_step, size_step]``
  (default 3) after each operator, the size kept within ``[1, attributes]`` (an operator with no
  PA could never be fused and is not what §7 describes);
- the split into levels: ``np.array_split`` of the operators in order, so level sizes differ
  by at most one; levels are drawn from ``[3, ⌊0.75 · operators⌋]`` inclusive;
- X: ``rate`` (default 1000) for every operator; what is left of X after the last downstream
  operator is not sent (the recipe stops there). Every operator of a level sends to every
  operator of the next level; the last level sends nothing.

Operators are ``o0 … o{n−1}``, attributes ``a0 … a{attributes−1}``. Everything is drawn from
one ``numpy.random.Generator`` seeded with ``seed``: same arguments, same job.

Complexity: O(|O| · attributes + |E|) with |E| = Σ over adjacent levels of their sizes'
product.

References:
    K. G. S. Madsen, Y. Zhou, L. Su. Enorm. DEBS 2016, §7 ("Large Job"), used by §7.6.

>>> g = large_job(12, seed=1)
>>> len(g.operators), len(g.edges) > 0, all(0 < len(o.pa) <= 30 for o in g.operators)
(12, True, True)
>>> sorted(g.operators[0].pa) == sorted(large_job(12, seed=1).operators[0].pa)
True
>>> len(g.operators[0].pa)
15
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from elastream.algorithms.fusion.graph import Edge, Operator, OperatorGraph, operator_graph
from elastream.core import rules

ATTRIBUTES = 30
"""Partition attributes of §7's large jobs."""
SIZE_STEP = 3
"""Largest change of the PA size from one operator to the next (our choice)."""
RATE = 1000.0
"""X: tuples an operator sends to its downstream level, before the recipe's losses."""


def large_job(operators: int, *, seed: int = 0, attributes: int = ATTRIBUTES,
              size_step: int = SIZE_STEP, rate: float = RATE) -> OperatorGraph:
    """A random job of ``operators`` operators by §7's recipe (module docstring).

    Args:
        operators: operators in the job (integer ≥ 4, so that 0.75 · operators ≥ 3 levels).
        seed: seeds the one generator every draw comes from.
        attributes: partition attributes to draw from (integer ≥ 1; the paper's 30).
        size_step: largest change of the PA size between consecutive operators (integer ≥ 0).
        rate: X, tuples each operator sends downstream (finite, > 0).

    Raises:
        OptionError: naming the argument, the rule and the value.
    """
    rules.integer("operators", operators, low=4)
    rules.integer("attributes", attributes)
    rules.integer("size_step", size_step, low=0)
    rules.number("rate", rate, above=0)
    rng = np.random.default_rng(seed)
    names = [f"a{b}" for b in range(attributes)]
    ops: list[Operator] = []
    size = attributes // 2 if attributes > 1 else 1
    for i in range(operators):
        chosen = rng.choice(attributes, size=size, replace=False)
        ops.append(Operator(f"o{i}", frozenset(names[b] for b in chosen)))
        size = int(np.clip(size + rng.integers(-size_step, size_step + 1), 1, attributes))
    levels = int(rng.integers(3, math.floor(0.75 * operators) + 1))
    split = np.array_split(np.arange(operators), levels)
    edges: list[Edge] = []
    for upper, lower in itertools.pairwise(split):
        for i in upper:
            x = rate
            for j in lower:
                y = rng.uniform(0.0, x) * rng.uniform(0.0, 1.0)
                edges.append(Edge(f"o{i}", f"o{j}", float(y)))
                x -= y
    return operator_graph(ops, edges)
