"""Shuffle grouping (SG): round-robin over the live workers, ignoring keys.

FISH (Huang, §2.2) describes Storm's SG as the load-balance ideal: "This scheme sends each
tuple from the source to a round-robin selected worker, ensuring that each worker can evenly
have the tuples." Round-robin, not random: tuple ``i`` of the source goes to live worker
``(offset + i) mod n``; the seed only picks the starting ``offset`` (``seed mod n``), so two
sources with different seeds do not start on the same worker. After :meth:`set_workers` the
count continues over the new list. Stateless apart from the tuple count, so any chunking
routes identically. Cost: O(b) per chunk of ``b`` tuples, O(n) memory.

>>> sg = ShuffleGrouping(range(3), seed=1)
>>> sg.route(np.arange(5), np.zeros(5)).tolist()
[1, 2, 0, 1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.base import check_batch, check_workers

I64 = npt.NDArray[np.int64]


class ShuffleGrouping:
    """SG: round-robin (see the module docstring)."""

    name = "sg"

    def __init__(self, workers: Sequence[int], *, seed: int = 0) -> None:
        self._workers = check_workers(workers)
        self._next = seed % len(self._workers)

    def route(self, keys: npt.ArrayLike, times: npt.ArrayLike) -> I64:
        """Worker of each tuple: the next ones in round-robin order."""
        key_array, _ = check_batch(keys, times)
        n = len(self._workers)
        slots = (self._next + np.arange(len(key_array), dtype=np.int64)) % n
        self._next = (self._next + len(key_array)) % n
        return self._workers[slots]

    def set_workers(self, workers: Sequence[int]) -> None:
        """Continue round-robin over the new live workers."""
        self._workers = check_workers(workers)
        self._next %= len(self._workers)
