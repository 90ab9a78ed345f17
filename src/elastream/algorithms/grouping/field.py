"""Field grouping (FG): every tuple of a key goes to the same worker, by hashing.

FISH (Huang, §2.2): "This scheme ensures that the same key is always sent to the same worker
via hashing", and §5: "F = HASH(k) mod n where k is the key and n is the number of workers".
Here worker ``workers[hash64(k) mod n]`` (:func:`.hashing.hash64`, seeded) over the live
workers in the order given to :meth:`set_workers`; so changing the worker set remaps almost
every key, the cost FISH §5 contrasts with consistent hashing (:mod:`.consistent_hash`).
Stateless: any chunking routes identically. Cost: O(b) per chunk of ``b`` tuples.

>>> fg = FieldGrouping(range(4), seed=3)
>>> w = fg.route(np.array([8, 9, 8, 8]), np.zeros(4))
>>> bool(w[0] == w[2] == w[3])
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.base import check_batch, check_workers
from elastream.algorithms.grouping.hashing import choice

I64 = npt.NDArray[np.int64]


class FieldGrouping:
    """FG: ``hash(key) mod n`` (see the module docstring)."""

    name = "fg"

    def __init__(self, workers: Sequence[int], *, seed: int = 0) -> None:
        self._workers = check_workers(workers)
        self.seed = seed

    def route(self, keys: npt.ArrayLike, times: npt.ArrayLike) -> I64:
        """Worker of each tuple: fixed per key for a fixed worker set."""
        key_array, _ = check_batch(keys, times)
        return self._workers[choice(key_array, len(self._workers), self.seed)]

    def set_workers(self, workers: Sequence[int]) -> None:
        """Hash over the new live workers from now on."""
        self._workers = check_workers(workers)
