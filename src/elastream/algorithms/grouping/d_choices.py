"""D-Choices (D-C): head keys get the ``d`` hash choices that keep the expected imbalance ≤ ε.

Nasir et al., *When two choices are not enough*, ICDE 2016 (§V-A) — FISH (Huang, §2.2):
"This scheme is an improved PKG, which allows that frequent keys can be processed by d workers
at most where d is determined by the distribution of key. Other keys continue using PKG."
Head keys are found by SpaceSaving over the whole stream (:mod:`.heads`). With ``h`` head keys
of estimated total frequency ``p_H``, top frequency ``p_1``, tail ``p_T = 1 − p_H`` and
``n`` workers, :func:`choose_d` returns the smallest ``d ≥ max(2, round(p_1·n))`` with

* ``p_H + p_T·(b_h/n)² ≤ b_h/n + ε`` where ``b_h/n = 1 − ((n−1)/n)^(h·d)`` (the head's
  workers can take the head and their share of the tail), and
* ``p_1 + (p_H − p_1)·(b_1/n)^d + p_T·(b_1/n)² ≤ b_1/n + ε`` where
  ``b_1/n = 1 − ((n−1)/n)^d`` (the same for the top key's workers),

or ``n`` when none does (the authors' simulator starts at ``round(p_1·n)`` and steps up; we also
start no lower than PKG's 2). A head tuple goes to the least loaded (local counts) of
``H_1(k) … H_d(k)`` (seeded hashes mod ``n``, the first two shared with the tail's PKG
choices), or of all workers when ``d ≥ n``; ``d`` is recomputed as the estimates change.

Blocks: ``d`` is computed once per block after counting it; head keys with ``d ≥ n`` share one
candidate list; see :mod:`.waterfill` (``block = 1`` is the per-tuple rule). Parameters:
``seed`` (0), ``block`` (16384), ``capacity`` (1000), ``theta`` (1/(5n)), ``epsilon`` (1e-4,
the imbalance tolerance; the FISH paper gives none). Cost: O(b log b + capacity + n·h) per
block; O(capacity + n) memory.

>>> choose_d(p_top=0.1, p_head=0.3, heads=5, n=32, epsilon=1e-4)
4
>>> choose_d(p_top=0.3, p_head=0.5, heads=5, n=32, epsilon=1e-4)
27
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.blocked import DEFAULT_BLOCK, Candidates, join_groups
from elastream.algorithms.grouping.hashing import choices
from elastream.algorithms.grouping.heads import HeadTailScheme
from elastream.algorithms.grouping.waterfill import dedupe
from elastream.algorithms.hotkeys.space_saving import DEFAULT_CAPACITY
from elastream.core import rules

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

DEFAULT_EPSILON: Final = 1e-4


def choose_d(*, p_top: float, p_head: float, heads: int, n: int, epsilon: float) -> int:
    """The number of choices for head keys (see the module docstring)."""
    start = max(2, round(p_top * n))
    if start >= n:
        return n
    d = np.arange(start, n + 1, dtype=np.float64)
    keep = (n - 1) / n
    p_tail = max(0.0, 1.0 - p_head)
    b_h = 1.0 - keep ** (heads * d)
    b_1 = 1.0 - keep**d
    ok = (p_head + p_tail * b_h**2 <= b_h + epsilon) & (
        p_top + (p_head - p_top) * b_1**d + p_tail * b_1**2 <= b_1 + epsilon
    )
    return int(d[np.argmax(ok)]) if ok.any() else n


class DChoices(HeadTailScheme):
    """D-C (see the module docstring)."""

    name = "dc"

    def __init__(
        self, workers: Sequence[int], *, seed: int = 0, block: int = DEFAULT_BLOCK,
        capacity: int = DEFAULT_CAPACITY, theta: float | None = None,
        epsilon: float = DEFAULT_EPSILON,
    ) -> None:
        super().__init__(workers, seed=seed, block=block, capacity=capacity, theta=theta)
        self.epsilon = rules.number("epsilon", epsilon, above=0, high=1)
        self.d = 2
        """The ``d`` of the last block."""

    def _plan(self, unique: I64, inverse: I64, times: F64) -> Candidates:
        head = self._count(unique, inverse)
        n = len(self._workers)
        freq = self.head_frequencies()
        if len(freq):
            self.d = choose_d(p_top=float(freq[0]), p_head=float(freq.sum()), heads=len(freq),
                              n=n, epsilon=self.epsilon)
        tail = np.flatnonzero(~head)
        heads = np.flatnonzero(head)
        parts = [(tail, *self._pairs(unique[tail]))]
        if self.d >= n:
            return join_groups(len(unique), parts, [(heads, np.arange(n, dtype=np.int64))])
        rows = choices(unique[heads], n, self.seed, np.arange(1, self.d + 1))
        return join_groups(len(unique), [*parts, (heads, *dedupe(rows))])
