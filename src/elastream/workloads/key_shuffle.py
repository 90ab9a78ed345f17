"""The key-shuffle workload of Elasticutor's micro-benchmarks (Wang et al., §5.1).

§5.1: "each tuple consists of an integer key and a 128-byte payload ... The key space contains
10K distinct values, whose frequencies follow a zipf distribution with a skew factor of 0.5.
... To emulate workload dynamics, we shuffle the frequencies of tuple keys by applying a random
permutation ω times per minute."

We read this as: the frequencies are the Zipf(0.5) probabilities of ranks ``1 .. num_keys``;
at time 0 a seeded random permutation gives each key its rank, and every ``60/ω`` seconds
(at ``60/ω, 120/ω, …``) a fresh permutation re-deals the same frequencies to the keys. Between
two shuffles (an *epoch*) the frequencies do not change, so every epoch's frequency vector is a
permutation of the Zipf(0.5) probabilities. ``ω = 0`` never shuffles (one epoch).

:class:`KeyShuffle` gives the epochs as arrays (what a fluid simulator needs);
:func:`key_shuffle_keys` draws one key per tuple for tuple-level simulators and tests.

>>> w = KeyShuffle(omega=2, duration=70.0, num_keys=4, seed=1)
>>> w.change_times.tolist()
[0.0, 30.0, 60.0]
>>> w.epoch_at([0.0, 29.9, 30.0, 69.0]).tolist()
[0, 0, 1, 2]
>>> sorted(w.frequencies[1].round(4).tolist()) == sorted(zipf_probabilities(0.5, 4).round(4))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.workloads.zipf import zipf_probabilities

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

PAPER_NUM_KEYS = 10_000
PAPER_SKEW = 0.5
PAPER_OMEGAS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0)
"""ω values this package sweeps for Fig. 6 (the paper's text names 2 and 16)."""


@dataclass(frozen=True)
class KeyShuffle:
    """Zipf key frequencies re-dealt to the keys ``omega`` times per minute, for ``duration`` s.

    Attributes:
        omega: shuffles per minute (≥ 0).
        duration: seconds the workload covers (> 0).
        num_keys: distinct keys ``0 .. num_keys-1`` (paper: 10K).
        skew: Zipf exponent (paper: 0.5).
        seed: seed of numpy's PCG64 generator; equal arguments give equal workloads.
        change_times: start second of each epoch (the first is 0).
        frequencies: ``frequencies[e, k]`` is key ``k``'s probability in epoch ``e``; each row
            is a permutation of ``zipf_probabilities(skew, num_keys)``.
        ranks: ``ranks[e, k]``: the Zipf rank (0-based) key ``k`` holds in epoch ``e``.
    """

    omega: float
    duration: float
    num_keys: int = PAPER_NUM_KEYS
    skew: float = PAPER_SKEW
    seed: int = 0
    change_times: F64 = field(init=False, repr=False)
    frequencies: F64 = field(init=False, repr=False)
    ranks: I64 = field(init=False, repr=False)

    def __post_init__(self) -> None:
        rules.number("omega", self.omega, unit="shuffles per minute")
        rules.number("duration", self.duration, above=0, unit="seconds")
        rules.integer("seed", self.seed, low=0)
        probabilities = zipf_probabilities(self.skew, self.num_keys)  # validates both
        period = math.inf if self.omega == 0 else 60.0 / self.omega
        epochs = 1 if self.omega == 0 else math.ceil(self.duration / period)
        times = np.arange(epochs, dtype=np.float64) * (0.0 if self.omega == 0 else period)
        rng = np.random.default_rng(self.seed)
        # One permutation per epoch, all drawn at once: argsort of uniform keys is a uniformly
        # random permutation per row.
        ranks = np.argsort(rng.random((epochs, self.num_keys)), axis=1).astype(np.int64)
        object.__setattr__(self, "change_times", _frozen(times))
        object.__setattr__(self, "ranks", _frozen(ranks))
        object.__setattr__(self, "frequencies", _frozen(probabilities[ranks]))

    @property
    def epochs(self) -> int:
        """Number of epochs (shuffles + 1) within the duration."""
        return len(self.change_times)

    def epoch_at(self, seconds: npt.ArrayLike) -> I64:
        """Index of the epoch each time (seconds, ≥ 0) lies in."""
        at = np.searchsorted(self.change_times, np.asarray(seconds, dtype=np.float64), "right")
        epochs: I64 = (at - 1).astype(np.int64)
        return epochs


def key_shuffle_keys(times: npt.ArrayLike, workload: KeyShuffle, *, seed: int = 0) -> I64:
    """One key per tuple arriving at ``times`` (seconds, non-decreasing), drawn from its epoch.

    Vectorised: one inverse-CDF draw over the ranks for all tuples, then each tuple's rank is
    mapped to the key holding it in the tuple's epoch.

    >>> w = KeyShuffle(omega=60, duration=2.0, num_keys=3, seed=0)
    >>> keys = key_shuffle_keys(np.linspace(0, 1.99, 6000), w, seed=5)
    >>> hot = [int(np.bincount(keys[i * 3000:(i + 1) * 3000]).argmax()) for i in range(2)]
    >>> hot == [int(np.argmin(w.ranks[e])) for e in range(2)]
    True
    """
    at = np.asarray(times, dtype=np.float64)
    if at.ndim != 1 or (len(at) and (at[0] < 0 or bool(np.any(np.diff(at) < 0)))):
        raise OptionError("times", "must be a 1-D array of non-decreasing seconds ≥ 0",
                          at.shape)
    cdf = np.cumsum(zipf_probabilities(workload.skew, workload.num_keys))
    cdf[-1] = 1.0
    rng = np.random.default_rng(seed)
    rank = np.searchsorted(cdf, rng.random(len(at)), side="right")
    # keys_by_rank[e, r] = the key holding rank r in epoch e (inverse permutation per epoch).
    keys_by_rank = np.argsort(workload.ranks, axis=1)
    keys: I64 = keys_by_rank[workload.epoch_at(at), rank].astype(np.int64)
    return keys


def _frozen(array: npt.NDArray[np.float64] | I64) -> npt.NDArray[np.float64] | I64:
    array.setflags(write=False)
    return array
