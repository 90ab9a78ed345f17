"""Time-evolving Zipf key stream, the synthetic ZF data set of FISH §6.1.

FISH (Yu Huang, *Efficient Time-Evolving Stream Processing at Scale*, §6.1 "Datasets", Table 2)
evaluates its grouping on 50M tuples over 10^5 keys with skew ``z ∈ {1.0, 1.1, …, 2.0}``:

    "1) For the first 0.8 × N tuples, the occurrence probability of a given key i obeys
    Pr[i] ∝ i^-z; 2) For the last (1-0.8) × N tuples, the occurrence probability of a given key
    i obeys Pr[i] ∝ i^-z; and N is 5M. [...] the algorithms have been run 10 times with a
    different seed for the pseudo-random number generator."

The paper writes the same law for both parts, so what evolves must be *which* key holds rank
``i``: we read ``i`` as a rank and give each part its own ranking, a fresh uniformly random
permutation rank → key drawn from the seeded generator. The stream is cut into periods of ``N``
tuples (50M / 5M = 10 periods, one per seeded run in the paper); inside each period the first
``switch × N`` tuples follow one ranking and the rest another, so the hot keys change at every
part boundary while the skew inside every part stays exactly Zipf(z) over ``num_keys`` keys.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from elastream.core import rules
from elastream.core.errors import OptionError

PAPER_NUM_KEYS = 100_000
PAPER_NUM_TUPLES = 50_000_000
PAPER_PERIOD = 5_000_000
PAPER_SWITCH = 0.8
PAPER_PERIODS = PAPER_NUM_TUPLES // PAPER_PERIOD
DEFAULT_START = "2001-01-01T00:00:00Z"
VALUE_RANGE = (1, 100)


def zipf_probabilities(z: float, num_keys: int) -> npt.NDArray[np.float64]:
    """Probability of each rank 1..num_keys under Zipf(z): ``p[r-1] = r^-z / Σ_j j^-z``.

    >>> [round(float(p), 4) for p in zipf_probabilities(1.0, 3)]
    [0.5455, 0.2727, 0.1818]
    """
    rules.number("z", z)
    rules.integer("num_keys", num_keys)
    weights = np.arange(1, num_keys + 1, dtype=np.float64) ** -float(z)
    probabilities: npt.NDArray[np.float64] = weights / float(weights.sum())
    return probabilities


def time_evolving_zipf(
    num_tuples: int,
    *,
    z: float = 1.0,
    num_keys: int = PAPER_NUM_KEYS,
    seed: int = 0,
    period: int | None = None,
    switch: float = PAPER_SWITCH,
) -> npt.NDArray[np.int64]:
    """Keys ``0 .. num_keys-1`` of a time-evolving Zipf stream (FISH §6.1), one per tuple.

    Tuple ``t`` lies in period ``t // period``; within its period the first
    ``round(switch * period)`` tuples form one part and the remaining tuples a second part.
    Every part draws a fresh random ranking (a permutation rank → key), then draws each of its
    tuples' ranks independently with ``Pr[rank i] ∝ i^-z``. A last, shorter period is cut
    from the same pattern. ``period=num_tuples, switch=1.0`` gives a static Zipf stream.

    Args:
        num_tuples: stream length (≥ 0); the paper uses 50M.
        z: Zipf exponent (≥ 0, 0 is uniform); the paper sweeps 1.0, 1.1, …, 2.0.
        num_keys: number of distinct keys (≥ 1); the paper uses 10^5.
        seed: seed (≥ 0) of numpy's PCG64 generator; equal arguments give equal streams.
        period: tuples per period ``N`` (≥ 1); default ``ceil(num_tuples / 10)``, which is the
            paper's N = 5M for its 50M tuples.
        switch: fraction of each period before the ranking changes, in (0, 1]; paper: 0.8.

    Returns:
        ``int64`` array of ``num_tuples`` keys.

    Complexity: O(num_tuples · log num_keys) time for inverse-CDF sampling plus
    O(parts · num_keys) for the rankings, with ``parts ≈ 2 · num_tuples / period``; memory
    O(num_tuples + num_keys). 50M tuples over 10^5 keys take a few seconds.

    >>> keys = time_evolving_zipf(10, z=1.0, num_keys=5, seed=7, period=10)
    >>> keys.tolist()
    [4, 2, 2, 1, 2, 1, 4, 0, 3, 4]
    >>> bool((time_evolving_zipf(10, z=1.0, num_keys=5, seed=7, period=10) == keys).all())
    True
    """
    rules.integer("num_tuples", num_tuples, low=0)
    cdf = np.cumsum(zipf_probabilities(z, num_keys))
    cdf[-1] = 1.0  # rounding must not leave a uniform draw above the last rank
    period = _resolve_period(period, num_tuples)
    rules.number("switch", switch, above=0, high=1)
    rng = np.random.default_rng(rules.integer("seed", seed, low=0))
    keys = np.empty(num_tuples, dtype=np.int64)
    for start, stop in _parts(num_tuples, period, switch):
        ranking = rng.permutation(num_keys)
        ranks = np.searchsorted(cdf, rng.random(stop - start), side="right")
        keys[start:stop] = ranking[ranks]
    return keys


def zipf_frame(
    num_tuples: int,
    *,
    z: float = 1.0,
    num_keys: int = PAPER_NUM_KEYS,
    seed: int = 0,
    period: int | None = None,
    switch: float = PAPER_SWITCH,
    rate: float = 1000.0,
    start: str | pd.Timestamp = DEFAULT_START,
) -> pd.DataFrame:
    """Build the time-evolving Zipf stream as a table ``ts, key, value`` for streaming runs.

    ``key`` is the string ``"k<id>"`` of :func:`time_evolving_zipf` with the same arguments;
    ``ts`` is event time in ``datetime64[us, UTC]``, tuple ``t`` at ``start + floor(t · 10^6 /
    rate)`` microseconds (``rate`` in tuples per second, default 1000, from 2001-01-01 UTC);
    ``value`` is an ``int64`` drawn uniformly from 1..100 by a generator seeded from ``seed``
    but separate from the keys'. Builds the columns in O(num_tuples) vectorised steps.

    >>> frame = zipf_frame(3, num_keys=5, seed=7, rate=2.0)
    >>> frame["ts"].dt.strftime("%H:%M:%S.%f").tolist()
    ['00:00:00.000000', '00:00:00.500000', '00:00:01.000000']
    >>> frame["key"].tolist() == [f"k{k}" for k in time_evolving_zipf(3, num_keys=5, seed=7)]
    True
    """
    keys = time_evolving_zipf(
        num_tuples, z=z, num_keys=num_keys, seed=seed, period=period, switch=switch
    )
    rules.number("rate", rate, above=0, unit="tuples per second")
    origin = _utc_microseconds(start)
    offsets = np.floor(np.arange(num_tuples, dtype=np.float64) * (1e6 / rate)).astype(np.int64)
    ts = pd.Series((origin + offsets).astype("datetime64[us]")).dt.tz_localize("UTC")
    names = np.array([f"k{k}" for k in range(num_keys)], dtype=object)
    low, high = VALUE_RANGE
    values = np.random.default_rng([seed, 1]).integers(low, high + 1, size=num_tuples)
    return pd.DataFrame({"ts": ts, "key": names[keys], "value": values.astype(np.int64)})


def _parts(num_tuples: int, period: int, switch: float) -> list[tuple[int, int]]:
    """Half-open ``[start, stop)`` ranges of the non-empty parts, in stream order."""
    head = round(switch * period)
    parts: list[tuple[int, int]] = []
    for begin in range(0, num_tuples, period):
        end = min(begin + period, num_tuples)
        cut = min(begin + head, end)
        parts.extend(span for span in ((begin, cut), (cut, end)) if span[0] < span[1])
    return parts


def _resolve_period(period: int | None, num_tuples: int) -> int:
    if period is None:
        return max(1, -(-num_tuples // PAPER_PERIODS))
    return rules.integer("period", period)


def _utc_microseconds(start: str | pd.Timestamp) -> int:
    try:
        stamp = pd.Timestamp(start)
    except (TypeError, ValueError) as error:
        raise OptionError("start", "must be a timestamp", start) from error
    if pd.isna(stamp):
        raise OptionError("start", "must be a timestamp", start)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return int(stamp.value) // 1000  # Timestamp.value is in nanoseconds whatever the unit
