"""Pin values: one integer per Spark state partition, so routing decides where a slot runs.

A Spark stateful operator grouped by a single integer column ``g`` keeps group ``g`` in partition
``pmod(murmur3_32(g, seed=42), P)``. For each partition ``p`` the pin is the smallest non-negative
integer whose hash lands in ``p``; routing a key group to slot ``s`` means tagging its tuples
with ``pins[s]``. ``P`` is fixed at a query's first start, so pins depend on ``P`` only.
"""

from __future__ import annotations

import numpy as np

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur3_int(values: np.ndarray, seed: int = 42) -> np.ndarray:
    """Spark's ``hash()`` of 32-bit integers (Murmur3_x86_32.hashInt), vectorised.

    >>> int(murmur3_int(np.array([0]))[0])  # Spark: SELECT hash(0)
    933211791
    """
    with np.errstate(over="ignore"):
        k1 = np.asarray(values, dtype=np.int64).astype(np.uint32)
        k1 = _rotl(k1 * _C1, 15) * _C2
        h1 = np.uint32(seed) ^ k1
        h1 = _rotl(h1, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h1 ^= np.uint32(4)
        h1 ^= h1 >> np.uint32(16)
        h1 *= np.uint32(0x85EBCA6B)
        h1 ^= h1 >> np.uint32(13)
        h1 *= np.uint32(0xC2B2AE35)
        h1 ^= h1 >> np.uint32(16)
    return h1.astype(np.int32)


def partition_of(values: np.ndarray, num_partitions: int) -> np.ndarray:
    """Partition Spark's hash partitioning gives each integer: ``pmod(hash(v), P)``."""
    return np.mod(murmur3_int(values).astype(np.int64), num_partitions)


def pins_for(num_partitions: int) -> np.ndarray:
    """Smallest non-negative integer landing in each partition ``0..P-1``.

    >>> p = pins_for(4)
    >>> partition_of(p, 4).tolist()
    [0, 1, 2, 3]
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    pins = np.full(num_partitions, -1, dtype=np.int64)
    start = 0
    while (pins < 0).any():
        candidates = np.arange(start, start + 64 * num_partitions, dtype=np.int64)
        parts = partition_of(candidates, num_partitions)
        for p in np.flatnonzero(pins < 0):
            hits = candidates[parts == p]
            if hits.size:
                pins[p] = hits[0]
        start += 64 * num_partitions
    return pins
