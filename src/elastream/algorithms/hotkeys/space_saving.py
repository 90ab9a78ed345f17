"""SpaceSaving top-k counting of a key stream, updated a batch of tuples at a time.

SpaceSaving (Metwally, Agrawal & El Abbadi, *Efficient computation of frequent and top-k
elements in data streams*, ICDT 2005, §3) keeps at most ``capacity`` monitored keys with a
counter each. Per tuple of key ``k``: if ``k`` is monitored its counter grows by one; else if
fewer than ``capacity`` keys are monitored ``k`` joins with counter 1; else ``k`` replaces the
key with the smallest counter and takes that counter plus one. D-Choices and W-Choices
(Nasir et al., *When two choices are not enough*, ICDE 2016) run it at every source over the
whole stream to find the hot keys; FISH's Algorithm 1 (Huang, §4.1.1, "ReplaceMin") is the
same replacement rule with counters decayed every epoch (:mod:`.epoch_counter`).

**Batches.** :meth:`SpaceSaving.add` takes the exact (possibly weighted) counts of a batch of
tuples at once. Monitored keys add their batch count. Unmonitored keys get the estimate
``base + count`` with ``base`` the smallest counter after that (0 while the summary has never
been full, when nothing has been evicted yet), and the ``capacity`` keys with the largest
counters stay; equal counters drop the smaller key first. For a batch of one tuple this *is*
the per-tuple rule (ties between smallest counters: the smaller key is evicted). For larger
batches the replacement decisions are made once per batch instead of once per tuple, and the
guarantees of SpaceSaving still hold, with ``N`` the (weighted) number of tuples seen:

* every monitored counter over-estimates its key's true count: ``true ≤ c``;
* the over-estimate is at most ``N / capacity``, and the counters sum to at most ``N``
  (exactly ``N`` while nothing was evicted);
* a key that is not monitored has true count ≤ the smallest counter ≤ ``N / capacity``, so
  every key with true count above ``N / capacity`` is monitored.

(Proof sketch: a key entering with ``base + count`` had true count ≤ ``base`` before the
batch; each entering key displaces a counter ≥ ``base``, so the kept counters sum to at most
the old sum plus the batch; scaling all counters and ``N`` by one factor, as the epoch decay
does, preserves all three.)

Parameters: ``capacity`` (default 1000 keys, the "maximum set of keys" FISH §2.3 settles on
for D-C and W-C). Cost: O(capacity + b log b) time per batch of ``b`` distinct keys,
O(capacity) memory. Keys are int64; counters float64 so that weighted and decayed counts fit.

>>> ss = SpaceSaving(capacity=2)
>>> ss.update(np.array([7, 7, 7, 1, 2, 2]))
>>> ss.keys.tolist(), ss.counts.tolist(), ss.total
([2, 7], [2.0, 3.0], 6.0)
>>> ss.estimate(np.array([7, 1])).tolist()
[3.0, 0.0]
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from elastream.core import rules

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

DEFAULT_CAPACITY: Final = 1000


class SpaceSaving:
    """The monitored keys (sorted), their counters and the stream's total; see the module doc."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = rules.integer("capacity", capacity)
        self._keys: I64 = np.empty(0, dtype=np.int64)
        self._counts: F64 = np.empty(0, dtype=np.float64)
        self._total = 0.0

    @property
    def keys(self) -> I64:
        """Monitored keys, ascending (a copy)."""
        return self._keys.copy()

    @property
    def counts(self) -> F64:
        """Counter of each monitored key, aligned with :attr:`keys` (a copy)."""
        return self._counts.copy()

    @property
    def total(self) -> float:
        """``N``: the (weighted, decayed) number of tuples counted so far."""
        return self._total

    @property
    def min_count(self) -> float:
        """Smallest counter while the summary is full, else 0 (the bound on unmonitored keys)."""
        return float(self._counts.min()) if len(self._keys) >= self.capacity else 0.0

    @property
    def max_count(self) -> float:
        """Largest counter (0 when empty)."""
        return float(self._counts.max()) if len(self._counts) else 0.0

    def update(self, keys: npt.ArrayLike) -> None:
        """Count a batch of tuples, given as their keys."""
        unique, counts = np.unique(np.asarray(keys, dtype=np.int64), return_counts=True)
        self.add(unique, counts.astype(np.float64))

    def add(self, unique_keys: I64, weights: F64) -> None:
        """Count a batch given as distinct keys (ascending) and their exact (weighted) counts."""
        self._total += float(weights.sum())
        keys, counts = self._keys, self._counts.copy()
        at = np.searchsorted(keys, unique_keys)
        hit = at < len(keys)
        hit[hit] = keys[at[hit]] == unique_keys[hit]
        counts[at[hit]] += weights[hit]
        fresh, fresh_w = unique_keys[~hit], weights[~hit]
        if len(fresh) == 0:
            self._counts = counts
            return
        base = float(counts.min()) if len(keys) >= self.capacity else 0.0
        where = np.searchsorted(keys, fresh)
        keys = np.insert(keys, where, fresh)
        counts = np.insert(counts, where, base + fresh_w)
        drop = len(keys) - self.capacity
        if drop > 0:
            keep = _keep_largest(counts, drop)
            keys, counts = keys[keep], counts[keep]
        self._keys, self._counts = keys, counts

    def add_unseen(self, weight: float) -> None:
        """Count ``weight`` tuples of keys the caller did not see one by one: only the total."""
        self._total += float(weight)

    def estimate(self, keys: I64) -> F64:
        """Counter of each key, 0 for keys that are not monitored."""
        at = np.searchsorted(self._keys, keys)
        at = np.minimum(at, max(len(self._keys) - 1, 0))
        out = np.zeros(len(keys), dtype=np.float64)
        if len(self._keys):
            hit = self._keys[at] == keys
            out[hit] = self._counts[at[hit]]
        return out

    def scale(self, factor: float) -> None:
        """Multiply every counter and the total by ``factor`` (the epoch decay of FISH)."""
        self._counts = self._counts * factor
        self._total *= factor


def _keep_largest(counts: F64, drop: int) -> npt.NDArray[np.bool_]:
    """Mask keeping all but the ``drop`` smallest counters; ties drop the lower index first."""
    threshold = np.partition(counts, drop - 1)[drop - 1]
    keep = counts > threshold
    tied = np.flatnonzero(counts == threshold)
    below = int(np.count_nonzero(counts < threshold))
    keep[tied[drop - below :]] = True
    kept: npt.NDArray[np.bool_] = keep
    return kept
