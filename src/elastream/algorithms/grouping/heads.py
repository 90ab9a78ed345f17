"""Hot ("head") keys as D-Choices and W-Choices find them: SpaceSaving over the whole stream.

Nasir, De Francisci Morales, Kourtellis & Serafini, *When two choices are not enough:
balancing at scale in distributed stream processing*, ICDE 2016 (§IV–V), as FISH §2.2 uses
them: every source runs SpaceSaving (:mod:`elastream.algorithms.hotkeys.space_saving`) over
all the tuples it has seen; a key is in the *head* when its estimated frequency (counter /
tuples seen) exceeds ``θ``; every other key (the *tail*) uses PKG's two choices. The
estimate is read after counting the tuple itself, as in the authors' simulator (``offer``,
then ``getTopK``); in blocks, after counting the whole block.

Parameters: ``capacity`` = 1000 counters (FISH §2.3 "we set the maximum set of keys by 1000",
after comparing top-100 and top-1000), ``theta`` = 1/(5n) with ``n`` the live workers (the
value of the D-C/W-C paper, FISH §6.3: below 1/5n PKG's imbalance is bounded). A head key
must be above ``1/capacity`` to be seen at all, so ``theta ≥ 1/capacity`` is advisable.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.blocked import DEFAULT_BLOCK, BlockedScheme
from elastream.algorithms.hotkeys.space_saving import DEFAULT_CAPACITY, SpaceSaving
from elastream.core import rules

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


class HeadTailScheme(BlockedScheme):
    """Base of D-C and W-C: the SpaceSaving summary and the head test."""

    name = "heads"

    def __init__(
        self, workers: Sequence[int], *, seed: int = 0, block: int = DEFAULT_BLOCK,
        capacity: int = DEFAULT_CAPACITY, theta: float | None = None,
    ) -> None:
        super().__init__(workers, seed=seed, block=block)
        self.summary = SpaceSaving(capacity)
        self._theta = None if theta is None else rules.number("theta", theta, above=0, high=1)

    @property
    def theta(self) -> float:
        """The head threshold in force: as given, or 1/(5n) for the live workers."""
        return self._theta if self._theta is not None else 1.0 / (5 * len(self._workers))

    def _count(self, unique: I64, inverse: I64) -> npt.NDArray[np.bool_]:
        """Count the block, then say which of its distinct keys are in the head."""
        self.summary.add(unique, np.bincount(inverse, minlength=len(unique)).astype(np.float64))
        return self.summary.estimate(unique) / self.summary.total > self.theta

    def head_frequencies(self) -> F64:
        """Estimated frequency of every head key in the summary, descending."""
        freq = self.summary.counts / max(self.summary.total, 1.0)
        return np.sort(freq[freq > self.theta])[::-1]
