"""Key → key group, the unit that owns state and moves between slots.

A key's group is ``pmod(xxhash64(key), G)`` exactly as Spark SQL computes it (XXH64 of the UTF-8
bytes with seed 42, read as a signed 64-bit integer), so the Spark runtime can compute it in the
JVM while the controller, the simulator and the tests compute the same value here. ``G`` is the
fixed maximum number of key groups (like Flink's max parallelism): it bounds the number of slots
and never changes for a running job.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import xxhash

from elastream.core import rules

SPARK_HASH_SEED = 42
MAX_KEY_GROUPS = 32_768


def validate_key_groups(max_groups: int, *, option: str = "key_groups") -> int:
    """Return ``max_groups`` if it is a usable key-group count (1 ≤ G ≤ 32768), else raise.

    >>> validate_key_groups(128)
    128
    """
    return rules.integer(option, max_groups, high=MAX_KEY_GROUPS)


def key_group(key: str, max_groups: int) -> int:
    """Key group of one string key, equal to Spark's ``pmod(xxhash64(key), max_groups)``.

    >>> key_group("ORD", 128) == key_group("ORD", 128)
    True
    >>> 0 <= key_group("ORD", 128) < 128
    True
    """
    signed = xxhash.xxh64_intdigest(key.encode("utf-8"), seed=SPARK_HASH_SEED)
    if signed >= 1 << 63:
        signed -= 1 << 64
    return signed % max_groups


def key_groups(keys: Iterable[str], max_groups: int) -> np.ndarray:
    """Key groups of many keys (one hash per key; call it on distinct keys, not per tuple)."""
    return np.fromiter((key_group(k, max_groups) for k in keys), dtype=np.int64)
