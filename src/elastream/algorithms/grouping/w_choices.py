"""W-Choices (W-C): head keys may go to any worker, tail keys use PKG's two choices.

Nasir et al., *When two choices are not enough*, ICDE 2016 (§V-B) — FISH (Huang, §2.2): "This
scheme is similar to D-C, and the only difference is that it allows frequent keys can be
processed on the entire set of workers instead of d ones." Head keys are found by SpaceSaving
over the whole stream (:mod:`.heads`); a head tuple goes to the worker with the fewest tuples
from this source among *all* live workers (ties: the first live worker), a tail tuple to the
less loaded of its two hash choices (:mod:`.pkg`); both update the same local counts, as in
the authors' simulator.

Blocks: all head keys of a block share one candidate list (every worker), so they are placed
together by one water-fill — see :mod:`.waterfill`; ``block = 1`` is the per-tuple rule.
Parameters: ``seed`` (0), ``block`` (16384), ``capacity`` (1000), ``theta`` (1/(5n)).
Cost: O(b log b + capacity + n) per block of ``b`` tuples; O(capacity + n) memory.

>>> wc = WChoices(range(4), block=1)
>>> w = wc.route(np.zeros(8, dtype=np.int64), np.zeros(8))  # one key: the head
>>> np.bincount(w, minlength=4).tolist()
[2, 2, 2, 2]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.blocked import Candidates, join_groups
from elastream.algorithms.grouping.heads import HeadTailScheme

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


class WChoices(HeadTailScheme):
    """W-C (see the module docstring)."""

    name = "wc"

    def _plan(self, unique: I64, inverse: I64, times: F64) -> Candidates:
        head = self._count(unique, inverse)
        tail = np.flatnonzero(~head)
        everyone = np.arange(len(self._workers), dtype=np.int64)
        return join_groups(len(unique), [(tail, *self._pairs(unique[tail]))],
                           [(np.flatnonzero(head), everyone)])
