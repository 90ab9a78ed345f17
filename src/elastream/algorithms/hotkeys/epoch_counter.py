"""Epoch-based recent-key frequency counting: FISH Algorithm 1.

FISH (Huang, *Efficient Time-Evolving Stream Processing at Scale*, §4.1.1, Algorithm 1)
counts keys *within* an epoch of ``N_epoch`` consecutive tuples with at most ``K_max``
counters and the ReplaceMin rule ("its occurrence number is set to that of replaced ones
plus 1 rather than 1"), and decays *between* epochs: "After tuple statistics in each epoch is
completed, we multiply the counters of all the stored keys by α (0 < α < 1)". Precisely, the
decay runs before the first tuple of every epoch after the first (Algorithm 1 lines 4–6: when
``counter = N_epoch`` the next tuple first decays every counter, then is counted).

A counter thus estimates a key's *decayed count*: the sum over its tuples of ``α^e``, ``e`` the
number of decays since the tuple. :attr:`EpochCounter.total` is the exact decayed count of all
tuples, so ``counter / total`` is a key's recent frequency — the ``f_k`` of CHK
(:mod:`.chk`).

**Batches.** :meth:`EpochCounter.add` counts any number of tuples at once: each tuple is
weighted ``α^e`` (``e`` = decays between it and the batch's end), the counters are decayed
once by ``α^(decays in the batch)``, and the weighted counts are merged by SpaceSaving's
batch rule (:mod:`.space_saving`). A batch of one tuple is Algorithm 1 exactly (float for
float). A larger batch makes the replacement decisions once per batch; the SpaceSaving
guarantees then hold for decayed counts: every counter over-estimates its key's decayed count
by at most ``total / K_max``, and unmonitored keys have decayed count ≤ the smallest counter.
When ``K_max`` ≥ the number of distinct keys nothing is ever replaced and every counter *is*
the exact decayed count (up to float rounding).

Parameters (FISH defaults): ``kmax`` = 1000 counters (§2.3: "we set the maximum set of keys by
1000"), ``epoch`` = 1000 tuples (§4.1.1: "the empirical epoch size of 1000 by default"),
``alpha`` = 0.2 (§6.3: "α with 0.2 has the best effect"; 0 ≤ α ≤ 1 accepted, 1 = no decay).
Cost per batch of ``b`` tuples: O(b + u log u + K_max) time, ``u`` distinct keys in the batch;
O(K_max) memory.

>>> ec = EpochCounter(kmax=10, epoch=2, alpha=0.5)
>>> ec.update(np.array([4, 4, 9]))  # epoch 1: 4, 4; decay; epoch 2: 9
>>> ec.estimate(np.array([4, 9])).tolist(), ec.total
([1.0, 1.0], 2.0)
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from elastream.algorithms.hotkeys.space_saving import SpaceSaving
from elastream.core import rules

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

DEFAULT_KMAX: Final = 1000
DEFAULT_EPOCH: Final = 1000
DEFAULT_ALPHA: Final = 0.2


class EpochCounter:
    """Algorithm 1's state: ``K`` (≤ ``kmax`` counters) and the position in the epoch."""

    def __init__(
        self, kmax: int = DEFAULT_KMAX, epoch: int = DEFAULT_EPOCH, alpha: float = DEFAULT_ALPHA
    ) -> None:
        self._summary = SpaceSaving(rules.integer("kmax", kmax))
        self.epoch = rules.integer("epoch", epoch)
        self.alpha = rules.number("alpha", alpha, high=1)
        self._in_epoch = 0
        self._epochs_added = False

    @property
    def kmax(self) -> int:
        """Most keys counted at once (``K_max``)."""
        return self._summary.capacity

    @property
    def in_epoch(self) -> int:
        """Tuples counted in the current epoch, 0 … ``epoch`` (``counter`` of Algorithm 1)."""
        return self._in_epoch

    @property
    def total(self) -> float:
        """Exact decayed count of all tuples so far."""
        return self._summary.total

    @property
    def max_count(self) -> float:
        """Largest counter: ``f_top × total``."""
        return self._summary.max_count

    @property
    def min_count(self) -> float:
        """Smallest counter once ``K`` is full, else 0: a bound on every unmonitored key."""
        return self._summary.min_count

    @property
    def keys(self) -> I64:
        """Keys in ``K``, ascending."""
        return self._summary.keys

    @property
    def counts(self) -> F64:
        """Their counters."""
        return self._summary.counts

    def estimate(self, keys: I64) -> F64:
        """Counter of each key (0 for keys not in ``K``)."""
        return self._summary.estimate(keys)

    def update(self, keys: npt.ArrayLike) -> None:
        """Count a batch of tuples, given as their keys in stream order."""
        unique, inverse = np.unique(np.asarray(keys, dtype=np.int64), return_inverse=True)
        self.add(unique, inverse.reshape(-1))

    def add_epoch(self, unique_keys: I64, counts: F64, tuples: float) -> None:
        """Count one whole epoch of ``tuples`` tuples given as the counts of its heaviest keys.

        For engines that see a stream in micro-batches: the batch is one epoch, and only its
        heaviest keys (distinct, ascending) are counted one by one; the rest of its ``tuples``
        only raise the total. The counters decay by ``α`` first if an epoch was counted before
        (Algorithm 1's decay at the end of that epoch), then the batch is added.
        """
        weights = np.asarray(counts, dtype=np.float64)
        if self._epochs_added:
            self._summary.scale(self.alpha)
        self._summary.add(unique_keys, weights)
        self._summary.add_unseen(max(0.0, float(tuples) - float(weights.sum())))
        self._epochs_added = True

    def add(self, unique_keys: I64, inverse: I64) -> None:
        """Count a batch given as ``unique_keys[inverse]`` (``np.unique`` output), in order."""
        size = len(inverse)
        if size == 0:
            return
        position = self._in_epoch + np.arange(size)
        decays_before = position // self.epoch  # decays that run before each tuple
        decays = int(decays_before[-1])
        weights: F64
        if decays:
            self._summary.scale(self.alpha**decays)
            age = np.power(self.alpha, decays - decays_before)
            weights = np.bincount(inverse, weights=age, minlength=len(unique_keys)).astype(
                np.float64)
        else:
            weights = np.bincount(inverse, minlength=len(unique_keys)).astype(np.float64)
        self._summary.add(unique_keys, weights)
        self._in_epoch += size - decays * self.epoch
