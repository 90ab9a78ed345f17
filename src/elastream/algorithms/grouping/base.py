"""The interface every grouping scheme implements, vectorised over chunks of a stream.

A scheme sits at a source and decides, for each tuple in arrival order, which worker gets it.
Schemes with memory (PKG's local loads, FISH's epoch counters and inferred queues) keep it
between calls, so a stream may be routed in chunks of any size; a scheme documents how the
chunk size bounds any approximation it makes (e.g. loads refreshed once per block of tuples).

Schemes with memory route in *blocks* of ``block`` tuples aligned to the stream (tuple ``i``
is in block ``i // block``); their routing is the same however the stream is cut into chunks
as long as every cut falls on a multiple of ``block`` (always, for ``block = 1``). Stateless
schemes (SG, FG, CH) route identically under any chunking. :func:`check_workers` and
:func:`check_batch` are the input checks every scheme shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from elastream.core.errors import OptionError


class GroupingScheme(Protocol):
    """Routes tuples to workers; see the module docstring."""

    name: str
    """Short name used by the CLI: sg, fg, pkg, dc, wc, ch, fish."""

    def route(self, keys: np.ndarray, times: np.ndarray) -> np.ndarray:
        """Worker id (int64) of each tuple; ``keys`` int64 and ``times`` float seconds, in order."""
        ...

    def set_workers(self, workers: Sequence[int]) -> None:
        """Change the set of live worker ids (a worker added or removed mid-run)."""
        ...


def check_workers(workers: Sequence[int] | npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The live worker ids as an int64 array, if they are distinct non-negative integers.

    >>> check_workers([0, 1, 3]).tolist()
    [0, 1, 3]
    """
    array = np.asarray(workers)
    if array.ndim != 1 or len(array) == 0:
        raise OptionError("workers", "must be a non-empty list of worker ids", workers)
    if not np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_:
        raise OptionError("workers", "must be integer ids", workers)
    ids = array.astype(np.int64)
    if int(ids.min()) < 0:
        raise OptionError("workers", "must be non-negative ids", int(ids.min()))
    if len(np.unique(ids)) != len(ids):
        raise OptionError("workers", "must not repeat an id", ids.tolist())
    return ids


def check_batch(
    keys: npt.ArrayLike, times: npt.ArrayLike
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """``keys`` as int64 and ``times`` as float64, both 1-D and of equal length.

    >>> k, t = check_batch([3, 4], [0.0, 1.0])
    >>> k.dtype.name, t.dtype.name
    ('int64', 'float64')
    """
    key_array = np.asarray(keys)
    if key_array.ndim != 1 or not (
        np.issubdtype(key_array.dtype, np.integer) or len(key_array) == 0
    ):
        raise OptionError("keys", "must be a 1-D array of integer keys", key_array.dtype)
    time_array = np.asarray(times, dtype=np.float64)
    if time_array.shape != key_array.shape:
        raise OptionError("times", f"must have one time per key ({len(key_array)})",
                          time_array.shape)
    return key_array.astype(np.int64, copy=False), time_array
