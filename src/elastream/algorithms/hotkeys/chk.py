"""Classification of Hot Keys (CHK): how many candidate workers each key gets, FISH Algorithm 2.

FISH (Huang, *Efficient Time-Evolving Stream Processing at Scale*, §4.1.2, Algorithm 2)::

    if f_k > θ:                                  # a recent hot key
        index ← ⌊log2(f_top / f_k)⌋
        d ← W_num / 2^index
        if d < d_min: d ← d_min
        if M_k < d: M_k ← d   else: d ← M_k      # never fewer workers than before
    else:
        d ← 2                                    # PKG's two choices
    return d

``f_k`` and ``f_top`` are recent frequencies from Algorithm 1 (:mod:`.epoch_counter`):
counter / total decayed count; ``W_num`` the number of live workers; ``M_k`` the number of
workers key ``k`` was given before ("M_k saves the number of workers previously assigned to
key k"), remembered for as long as the scheme runs. ``W_num / 2^index`` is rounded down, so
``d`` halves for every halving of a key's frequency relative to the top key's.

Parameters and defaults: ``θ = 1/(4n)`` (§6.3: "We conservatively choose a threshold as
1/4n"), ``d_min`` = 2 — the paper gives no number (Table 1: "minimal number of workers for hot
key"; §4.1.2: "d_min is related to the sum of the frequency of all hot keys"), and 2 keeps a hot
key from ever getting fewer workers than a non-hot key. ``d`` is also capped at ``W_num`` (it
can exceed it only through ``d_min`` or an ``M_k`` remembered before workers were removed).
Cost: O(u log u + |M|) time for ``u`` keys, O(|M|) memory (one entry per key ever hot).

>>> memory = ChoiceMemory()
>>> keys = np.array([1, 2, 3])
>>> classify(keys, np.array([0.5, 0.2, 0.01]), 0.5, 16, theta=1 / 64, d_min=2,
...          memory=memory).tolist()
[16, 8, 2]
>>> classify(keys, np.array([0.1, 0.5, 0.01]), 0.5, 16, theta=1 / 64, d_min=2,
...          memory=memory).tolist()  # key 1 cooled down but remembers M_1 = 16
[16, 16, 2]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


class ChoiceMemory:
    """The ``M_k`` of Algorithm 2: most workers each key was ever given (0 = never hot)."""

    def __init__(self) -> None:
        self._keys: I64 = np.empty(0, dtype=np.int64)
        self._workers: I64 = np.empty(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._keys)

    def lookup(self, keys: I64) -> I64:
        """``M_k`` of each key (0 if never hot)."""
        out = np.zeros(len(keys), dtype=np.int64)
        if len(self._keys):
            at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
            hit = self._keys[at] == keys
            out[hit] = self._workers[at[hit]]
        return out

    def raise_to(self, keys: I64, workers: I64) -> None:
        """Set ``M_k ← max(M_k, d)`` for distinct ``keys``."""
        if len(keys) == 0:
            return
        at = np.searchsorted(self._keys, keys)
        hit = at < len(self._keys)
        hit[hit] = self._keys[at[hit]] == keys[hit]
        self._workers[at[hit]] = np.maximum(self._workers[at[hit]], workers[hit])
        fresh = ~hit
        if fresh.any():
            order = np.argsort(keys[fresh], kind="stable")
            new_keys, new_workers = keys[fresh][order], workers[fresh][order]
            where = np.searchsorted(self._keys, new_keys)
            self._keys = np.insert(self._keys, where, new_keys)
            self._workers = np.insert(self._workers, where, new_workers)


def arithmetic_choices(
    freq: F64, top_freq: float | F64, num_workers: int, d_min: int
) -> I64:
    """Lines 3–6 of Algorithm 2: ``max(⌊W_num / 2^⌊log2(f_top/f_k)⌋⌋, d_min)`` for ``f_k > 0``.

    The exponent is read exactly from the float ratio (``np.frexp``), so a key at exactly half
    the top frequency gets exactly half the workers.

    >>> arithmetic_choices(np.array([0.4, 0.2, 0.15, 0.05, 0.001]), 0.4, 128, 2).tolist()
    [128, 64, 64, 16, 2]
    """
    ratio = top_freq / freq
    index = np.frexp(ratio)[1].astype(np.int64) - 1  # ⌊log2 r⌋ for r ≥ 1
    index = np.minimum(np.maximum(index, 0), 62)
    d = np.right_shift(np.int64(num_workers), index)
    return np.maximum(d, d_min)


def remember(
    keys: I64, hot: npt.NDArray[np.bool_], wanted: I64, num_workers: int, memory: ChoiceMemory
) -> I64:
    """Lines 7–12 of Algorithm 2: ``d = max(M_k, wanted)`` for hot keys (raising ``M_k``), 2 else.

    The result is capped at ``num_workers``.

    >>> remember(np.array([4, 5]), np.array([True, False]), np.array([8, 8]), 16,
    ...          ChoiceMemory()).tolist()
    [8, 2]
    """
    d = np.full(len(keys), min(2, num_workers), dtype=np.int64)
    if hot.any():
        remembered = np.maximum(memory.lookup(keys[hot]), wanted[hot])
        memory.raise_to(keys[hot], remembered)
        d[hot] = np.minimum(remembered, num_workers)
    return d


def classify(
    keys: I64,
    freq: F64,
    top_freq: float,
    num_workers: int,
    *,
    theta: float,
    d_min: int,
    memory: ChoiceMemory,
) -> I64:
    """Algorithm 2 for distinct ``keys`` with recent frequencies ``freq``: ``d`` per key.

    Updates ``memory`` (``M_k``) for the hot keys. The result is capped at ``num_workers``.
    """
    hot = freq > theta
    wanted = np.zeros(len(keys), dtype=np.int64)
    if hot.any():
        wanted[hot] = arithmetic_choices(freq[hot], top_freq, num_workers, d_min)
    return remember(keys, hot, wanted, num_workers, memory)
