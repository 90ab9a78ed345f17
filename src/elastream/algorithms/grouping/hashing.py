"""Seeded, vectorised hashing of int64 keys for the grouping schemes.

Every scheme that hashes (FG, PKG, D-C, W-C, the consistent-hash ring, FISH) uses
:func:`hash64`: the splitmix64 finaliser (Steele, Lea & Flood, *Fast splittable pseudorandom
number generators*, OOPSLA 2014) applied to ``key + c`` where the constant ``c`` is itself
mixed from the seed and a *salt*. Different salts give the independent hash functions that
PKG (two choices) and D-Choices (``d`` choices) need; different seeds give independent runs.
All arithmetic wraps modulo 2^64, so any int64 key is valid. Cost: a handful of numpy passes,
O(len(keys)) time and memory.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

_MASK: Final = (1 << 64) - 1
_GOLDEN: Final = 0x9E3779B97F4A7C15
_M1: Final = 0xBF58476D1CE4E5B9
_M2: Final = 0x94D049BB133111EB

RING_SALT: Final = 1 << 40
"""Salt of a key's position on the consistent-hash ring (choice hashes use salts 0, 1, 2, …)."""
VNODE_SALT: Final = 1 << 41
"""Salt of the virtual-node positions; replica ``r`` uses ``VNODE_SALT + r``."""


def _mix(value: int) -> int:
    """The splitmix64 finaliser on one Python integer (modulo 2^64)."""
    z = value & _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


@lru_cache(maxsize=4096)
def stream_constant(seed: int, salt: int) -> int:
    """The 64-bit constant added to every key by the hash function ``(seed, salt)``.

    >>> stream_constant(0, 1) != stream_constant(0, 2) != stream_constant(1, 1)
    True
    """
    return _mix(_mix(seed * _GOLDEN + 1) + salt * _GOLDEN)


def hash64(keys: npt.ArrayLike, seed: int = 0, salt: int = 0) -> U64:
    """Unsigned 64-bit hash of each int64 key; a bijection of the key for fixed seed and salt.

    >>> h = hash64([1, 2, 1], seed=7)
    >>> bool(h[0] == h[2]) and bool(h[0] != h[1])
    True
    """
    z = np.asarray(keys, dtype=np.int64).view(np.uint64) + np.uint64(stream_constant(seed, salt))
    z ^= z >> np.uint64(30)
    z *= np.uint64(_M1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_M2)
    z ^= z >> np.uint64(31)
    return z


def hash32(keys: npt.ArrayLike, seed: int = 0, salt: int = 0) -> I64:
    """A 32-bit hash in ``[0, 2^32)`` (the high half of :func:`hash64`), as int64.

    >>> int(hash32([5]).max()) < 2**32
    True
    """
    return (hash64(keys, seed, salt) >> np.uint64(32)).astype(np.int64)


def choices(keys: npt.ArrayLike, num: int, seed: int, salts: npt.ArrayLike) -> I64:
    """``choice(key, num, seed, salt)`` for every key (rows) and every salt (columns) at once.

    >>> bool(np.all(choices([4, 5], 9, 1, [1, 2])[:, 1] == choice([4, 5], 9, 1, 2)))
    True
    """
    consts = np.array([stream_constant(seed, int(s)) for s in np.asarray(salts).tolist()],
                      dtype=np.uint64)
    z = np.asarray(keys, dtype=np.int64).view(np.uint64)[:, None] + consts[None, :]
    z ^= z >> np.uint64(30)
    z *= np.uint64(_M1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_M2)
    z ^= z >> np.uint64(31)
    return (z % np.uint64(num)).astype(np.int64)


def choice(keys: npt.ArrayLike, num: int, seed: int = 0, salt: int = 0) -> I64:
    """``hash64(key) mod num``: the index of one of ``num`` workers for each key.

    >>> choice([10, 11, 12], 4, seed=1).tolist() == choice([10, 11, 12], 4, seed=1).tolist()
    True
    """
    return (hash64(keys, seed, salt) % np.uint64(num)).astype(np.int64)
