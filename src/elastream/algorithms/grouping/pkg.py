"""Partial key grouping (PKG): two hash choices per key, the less loaded by local counts.

PKG (Nasir, De Francisci Morales, García-Soriano, Kourtellis & Serafini, *The power of both
choices*, ICDE 2015, §IV) — FISH (Huang, §2.2): "This scheme can be treated as a bounded FG. A
given key for the PKG is allowed to be processed by two workers at most." Each key ``k`` has
the candidates ``H1(k), H2(k)`` (two independent seeded hashes mod ``n``, :mod:`.hashing`;
they may coincide); a tuple goes to the candidate to which this source has sent fewer tuples
so far (*local load estimation*, PKG §IV-B; ties: ``H1``), and that count grows by one — the
rule of the authors' simulator (``selectMinChoice`` over ``localworkload``).

Blocks: see :mod:`.waterfill` for exactly how a block of ``block`` tuples differs from the
per-tuple rule (``block = 1`` is the per-tuple rule). Either way a key only ever reaches its two
candidates. A worker added later starts at the smallest surviving count. Parameters: ``seed``
(0), ``block`` (16384 tuples). Cost: O(b log b) per block of ``b`` tuples, O(n) memory.

>>> pkg = PartialKeyGrouping(range(8), seed=2, block=1)
>>> w = pkg.route(np.zeros(6, dtype=np.int64), np.zeros(6))
>>> len(set(w.tolist())), sorted(np.bincount(w).tolist())[-1]
(2, 3)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.blocked import BlockedScheme, Candidates

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


class PartialKeyGrouping(BlockedScheme):
    """PKG (see the module docstring)."""

    name = "pkg"

    def _plan(self, unique: I64, inverse: I64, times: F64) -> Candidates:
        ptr, cand = self._pairs(unique)
        return Candidates(np.arange(len(unique), dtype=np.int64), ptr, cand)
