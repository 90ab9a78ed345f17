"""Enorm's fusion (Madsen, Zhou, Su, DEBS 2016, §4.4.1 and §7.6): operators into components.

Pure, engine-free modules, one each:

====================  ========================================================================
module                what (paper section)
====================  ========================================================================
:mod:`.graph`         the operator DAG with partition attributes and rates (§4.3), validated
:mod:`.convex`        convexity (no path leaves a set and re-enters it), acyclic merges
:mod:`.result`        ``Fusion``, inter-component traffic (Fig. 15's measure), the rules
:mod:`.algorithm1`    Algorithm 1, score COMM (rates) or PA (shared attributes) (§4.4.1)
:mod:`.baseline`      §7.6's baseline: one component at a time from a seed operator
:mod:`.exhaustive`    the optimum of a small job (≤ 12 operators), the greedy's oracle
:mod:`.large_job`     §7's random "Large Job" generator
:mod:`.fuse`          ``fuse(graph, *, score, seed) -> Fusion``, every method by name
====================  ========================================================================

``elastream plan fuse --graph FILE.json`` runs :func:`.fuse.fuse` on a job;
``benchmarks/enorm/fusion.py`` reproduces Figs. 14–15.
"""
