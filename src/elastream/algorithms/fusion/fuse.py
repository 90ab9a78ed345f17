"""One entry to every fusion method: ``fuse(graph, *, score, seed) -> Fusion``.

=============  =====================================================================
``score``      method
=============  =====================================================================
``comm``       Algorithm 1 by edge rate (:mod:`.algorithm1`, Enorm §4.4.1)
``pa``         Algorithm 1 by shared partition attributes (§4.4.1's alternative score)
``baseline``   §7.6's baseline: grow one component at a time (:mod:`.baseline`)
=============  =====================================================================

The exhaustive optimum of a small job is :func:`.exhaustive.exhaustive`. ``seed`` matters to the
baseline only (its later seed operators); the greedy scores are deterministic. No method reads
the clock: a caller that wants the solve time measures the call.

>>> from elastream.algorithms.fusion.large_job import large_job
>>> g = large_job(50, seed=3)
>>> [fuse(g, score=s).status.value for s in SCORES]
['feasible', 'feasible', 'feasible']
>>> fuse(g, score="fast")
Traceback (most recent call last):
...
elastream.core.errors.OptionError: score must be one of comm, pa, baseline, got 'fast'
"""

from __future__ import annotations

from elastream.algorithms.fusion.algorithm1 import algorithm1
from elastream.algorithms.fusion.baseline import baseline
from elastream.algorithms.fusion.graph import OperatorGraph
from elastream.algorithms.fusion.result import Fusion
from elastream.core import rules

SCORES = ("comm", "pa", "baseline")
"""The fusion methods by name, as ``elastream plan fuse --score`` takes them."""


def fuse(graph: OperatorGraph, *, score: str = "comm", seed: int = 0) -> Fusion:
    """Fuse ``graph``'s operators into components with the method ``score`` (table above).

    Raises:
        OptionError: ``score`` is not one of :data:`SCORES`.
    """
    rules.choice("score", score, SCORES)
    if score == "comm":
        return algorithm1(graph, score="comm")
    if score == "pa":
        return algorithm1(graph, score="pa")
    return baseline(graph, seed=seed)
