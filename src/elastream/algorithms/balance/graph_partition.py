"""Balanced graph partitioning of key groups by their traffic, with METIS (``pymetis``).

ALBIC (§4.3.2 step 2) and COLA (Khandekar et al., Middleware 2009) both cut a set of
communicating key groups into ``k`` parts of about equal weight while cutting as little traffic
as possible — "balanced graph partitioning [20]", Karypis and Kumar's multilevel METIS, which
ALBIC used (v5.1) and ``pymetis`` wraps.

:func:`split` takes key groups, their vertex weights (load or migration cost) and the traffic
rows ``(kg_from, kg_to, rate)``; the graph is the traffic among those key groups, undirected
(``out(a, b) + out(b, a)`` per pair). METIS takes integer weights: vertex weights are scaled to
at most ``WEIGHT_RESOLUTION`` (zero stays zero), edge weights to ``[1, WEIGHT_RESOLUTION]``.
Cost: METIS's O(V + E) per level of its multilevel scheme, with V key groups and E pairs.

>>> traffic = np.array([[0, 1, 9.0], [2, 3, 9.0], [1, 2, 1.0]])
>>> parts = split(np.arange(4), 2, np.ones(4), traffic, seed=0)
>>> sorted(sorted(p.tolist()) for p in parts)
[[0, 1], [2, 3]]
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt
import pymetis

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

WEIGHT_RESOLUTION: Final = 10_000
"""Largest integer weight handed to METIS."""


def split(members: I64, parts: int, weight: F64, traffic: F64, *, seed: int) -> list[I64]:
    """Cut ``members`` into at most ``parts`` non-empty groups (METIS k-way; module docstring).

    ``weight`` holds one vertex weight per member, ``traffic`` rows over any key groups (rows
    with an end outside ``members`` are ignored). Always splits a group of two or more when
    ``parts`` ≥ 2: should METIS leave every member in one part (it may, with zero weights), the
    members are dealt out heaviest first to the lightest part. Groups are returned in order of
    their lowest key group, each sorted.
    """
    members = np.asarray(members, dtype=np.int64)
    parts = min(parts, members.size)
    if parts <= 1:
        return [np.sort(members)]
    if parts == members.size:
        return [np.array([k]) for k in np.sort(members)]
    xadj, adjncy, eweights = _csr(members, traffic)
    top = float(np.max(weight)) if weight.size else 0.0
    vweights = np.rint(weight / top * WEIGHT_RESOLUTION) if top > 0 else np.ones(members.size)
    result = pymetis.part_graph(
        parts, pymetis.CSRAdjacency(xadj.tolist(), adjncy.tolist()),
        vweights=vweights.astype(np.int64).tolist(), eweights=eweights.tolist(),
        options=pymetis.Options(seed=seed),
    )
    label = np.asarray(result.vertex_part, dtype=np.int64)
    if np.unique(label).size < 2:
        label = _deal(weight, parts)
    groups = [np.sort(members[label == p]) for p in np.unique(label)]
    return sorted(groups, key=lambda g: int(g[0]))


def _csr(members: I64, traffic: F64) -> tuple[I64, I64, I64]:
    """The undirected traffic graph among ``members`` in METIS's CSR form, integer weights."""
    n = members.size
    local = np.full(int(members.max()) + 1, -1, dtype=np.int64)
    local[members] = np.arange(n)
    a = traffic[:, 0].astype(np.int64)
    b = traffic[:, 1].astype(np.int64)
    inside = (a <= members.max()) & (b <= members.max())
    a, b, rate = a[inside], b[inside], traffic[inside, 2]
    la, lb = local[a], local[b]
    keep = (la >= 0) & (lb >= 0) & (la != lb) & (rate > 0)
    la, lb, rate = la[keep], lb[keep], rate[keep]
    lo, hi = np.minimum(la, lb), np.maximum(la, lb)
    pair, inverse = np.unique(lo * n + hi, return_inverse=True)
    summed = np.bincount(inverse, weights=rate, minlength=pair.size)
    lo, hi = pair // n, pair % n
    src = np.concatenate([lo, hi])
    dst = np.concatenate([hi, lo])
    w = np.concatenate([summed, summed])
    order = np.lexsort((dst, src))
    src, dst, w = src[order], dst[order], w[order]
    xadj = np.searchsorted(src, np.arange(n + 1)).astype(np.int64)
    top = float(w.max()) if w.size else 1.0
    eweights = np.maximum(1, np.rint(w / top * WEIGHT_RESOLUTION)).astype(np.int64)
    return xadj, dst.astype(np.int64), eweights


def _deal(weight: F64, parts: int) -> I64:
    """Heaviest first, each to the part with the least weight so far (ties: lowest part)."""
    label = np.zeros(weight.size, dtype=np.int64)
    held = np.zeros(parts)
    count = np.zeros(parts, dtype=np.int64)
    for i in np.lexsort((np.arange(weight.size), -weight)):
        p = int(np.lexsort((np.arange(parts), count, held))[0])
        label[i] = p
        held[p] += weight[i]
        count[p] += 1
    return label
