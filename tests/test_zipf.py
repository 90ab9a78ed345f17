"""Time-evolving Zipf stream (FISH §6.1): seeded, in range, Zipf(z) per part, hot keys move."""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.core.errors import OptionError
from elastream.workloads.zipf import (
    _parts,
    time_evolving_zipf,
    zipf_frame,
    zipf_probabilities,
)


def exact_zipf(z: float, num_keys: int, ranks: int) -> list[float]:
    """Oracle independent of the module: Pr[rank r] = r^-z / sum_j j^-z, plain Python."""
    total = math.fsum(j**-z for j in range(1, num_keys + 1))
    return [r**-z / total for r in range(1, ranks + 1)]


def top_share(keys: npt.NDArray[np.int64], num_keys: int, k: int = 1) -> npt.NDArray[np.float64]:
    """Shares of the k most frequent keys, largest first."""
    counts = np.bincount(keys, minlength=num_keys)
    return np.sort(counts)[::-1][:k] / len(keys)


def top_key(keys: npt.NDArray[np.int64]) -> int:
    return int(np.bincount(keys).argmax())


def within_binomial(share: float, p: float, n: int, sigmas: float = 5.0) -> bool:
    return abs(share - p) <= sigmas * math.sqrt(p * (1 - p) / n)


# ---- the law itself -------------------------------------------------------------------------


def test_probabilities_follow_the_power_law() -> None:
    p = zipf_probabilities(1.5, 1000)
    assert p.shape == (1000,)
    assert math.isclose(p.sum(), 1.0)
    assert math.isclose(p[0] / p[1], 2**1.5)
    assert math.isclose(p[9] / p[99], 10**1.5)
    # z = 1, three keys: weights 1, 1/2, 1/3 over H_3 = 11/6
    assert np.allclose(zipf_probabilities(1.0, 3), [6 / 11, 3 / 11, 2 / 11])
    assert np.allclose(zipf_probabilities(0.0, 4), 0.25)


@pytest.mark.parametrize("z", [1.0, 1.5, 2.0])
def test_static_stream_matches_zipf(z: float) -> None:
    n, num_keys = 400_000, 1000
    keys = time_evolving_zipf(n, z=z, num_keys=num_keys, seed=3, period=n, switch=1.0)
    expected = exact_zipf(z, num_keys, 5)
    observed = top_share(keys, num_keys, k=5)
    for share, p in zip(observed, expected, strict=True):
        assert within_binomial(float(share), p, n), (z, observed, expected)


@pytest.mark.parametrize("z", [1.0, 2.0])
def test_every_part_of_the_paper_stream_is_zipf(z: float) -> None:
    # paper scale of keys (10^5), 1M tuples: 10 periods of 100k, parts of 80k and 20k
    n, num_keys = 1_000_000, 100_000
    keys = time_evolving_zipf(n, z=z, seed=11)
    p1 = exact_zipf(z, num_keys, 1)[0]
    for start, stop in _parts(n, 100_000, 0.8):
        share = float(top_share(keys[start:stop], num_keys)[0])
        assert within_binomial(share, p1, stop - start), (start, share, p1)


# ---- the evolution --------------------------------------------------------------------------


def test_hot_key_changes_at_every_part_boundary() -> None:
    n, num_keys = 1_000_000, 100_000
    keys = time_evolving_zipf(n, z=1.0, num_keys=num_keys, seed=5)
    p1 = exact_zipf(1.0, num_keys, 1)[0]
    parts = _parts(n, 100_000, 0.8)
    assert len(parts) == 20
    for (a, b), (c, d) in itertools.pairwise(parts):
        hot = top_key(keys[a:b])
        assert top_key(keys[c:d]) != hot
        # the old hot key is ordinary right after the switch: far below the top share
        assert np.mean(keys[c:d] == hot) < p1 / 10


def test_switch_happens_at_eighty_percent_of_each_period() -> None:
    n, period, num_keys = 200_000, 100_000, 1000
    keys = time_evolving_zipf(n, z=1.5, num_keys=num_keys, seed=2, period=period)
    for begin in (0, period):
        cut = begin + 80_000
        hot = top_key(keys[begin:cut])
        just_before = keys[cut - 10_000 : cut]
        just_after = keys[cut : cut + 10_000]
        assert np.mean(just_before == hot) > 0.3  # p1 ≈ 0.38 for z = 1.5, 1000 keys
        assert np.mean(just_after == hot) < 0.05


def test_whole_stream_is_flatter_than_any_part() -> None:
    # a static stream would keep the top share near p1; rotating hot keys spreads it out
    n, num_keys = 1_000_000, 100_000
    keys = time_evolving_zipf(n, z=2.0, num_keys=num_keys, seed=1)
    p1 = exact_zipf(2.0, num_keys, 1)[0]
    assert float(top_share(keys, num_keys)[0]) < 0.5 * p1


def test_period_of_whole_stream_and_switch_one_is_static() -> None:
    n = 100_000
    keys = time_evolving_zipf(n, z=1.0, num_keys=1000, seed=4, period=n, switch=1.0)
    assert top_key(keys[: n // 2]) == top_key(keys[n // 2 :])


@pytest.mark.parametrize(
    ("num_tuples", "period", "switch", "parts"),
    [
        (10, 10, 0.8, [(0, 8), (8, 10)]),
        (25, 10, 0.8, [(0, 8), (8, 10), (10, 18), (18, 20), (20, 25)]),
        (25, 10, 1.0, [(0, 10), (10, 20), (20, 25)]),
        (5, 10, 0.8, [(0, 5)]),
        (9, 10, 0.8, [(0, 8), (8, 9)]),
        (3, 1, 0.8, [(0, 1), (1, 2), (2, 3)]),  # round(0.8) = 1: a tail of 0 tuples is skipped
        (0, 10, 0.8, []),
    ],
)
def test_parts_table(
    num_tuples: int, period: int, switch: float, parts: list[tuple[int, int]]
) -> None:
    assert _parts(num_tuples, period, switch) == parts


def test_default_period_is_a_tenth_of_the_stream() -> None:
    # the paper: N = 5M for 50M tuples
    for n in (1000, 1001):
        assert np.array_equal(
            time_evolving_zipf(n, num_keys=50, seed=9),
            time_evolving_zipf(n, num_keys=50, seed=9, period=math.ceil(n / 10)),
        )


# ---- determinism, range, validation ---------------------------------------------------------


def test_same_seed_same_stream_other_seed_other_stream() -> None:
    a = time_evolving_zipf(50_000, z=1.2, num_keys=500, seed=8)
    b = time_evolving_zipf(50_000, z=1.2, num_keys=500, seed=8)
    c = time_evolving_zipf(50_000, z=1.2, num_keys=500, seed=9)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


@settings(max_examples=examples(60), deadline=None)
@given(
    num_tuples=st.integers(0, 3000),
    num_keys=st.integers(1, 300),
    z=st.floats(0.0, 3.0),
    seed=st.integers(0, 2**32),
    period=st.integers(1, 4000),
    switch=st.floats(0.01, 1.0),
)
def test_keys_are_in_range_and_reproducible(
    num_tuples: int, num_keys: int, z: float, seed: int, period: int, switch: float
) -> None:
    def draw() -> npt.NDArray[np.int64]:
        return time_evolving_zipf(
            num_tuples, z=z, num_keys=num_keys, seed=seed, period=period, switch=switch
        )

    keys = draw()
    assert keys.dtype == np.int64 and keys.shape == (num_tuples,)
    if num_tuples:
        assert keys.min() >= 0 and keys.max() < num_keys
    assert np.array_equal(keys, draw())


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"num_tuples": -1}, "num_tuples"),
        ({"num_tuples": 1.5}, "num_tuples"),
        ({"num_tuples": True}, "num_tuples"),
        ({"z": -0.1}, "z"),
        ({"z": math.nan}, "z"),
        ({"z": "1"}, "z"),
        ({"num_keys": 0}, "num_keys"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.0}, "seed"),
        ({"period": 0}, "period"),
        ({"switch": 0.0}, "switch"),
        ({"switch": 1.1}, "switch"),
        ({"rate": 0.0}, "rate"),
        ({"rate": math.inf}, "rate"),
        ({"start": "not a time"}, "start"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict[str, object], option: str) -> None:
    call = {"num_tuples": 10, **kwargs}
    with pytest.raises(OptionError) as caught:
        zipf_frame(**call)  # type: ignore[arg-type]
    assert caught.value.option == option
    assert str(caught.value).startswith(f"{option} ")


# ---- the frame for streaming runs ----------------------------------------------------------


def test_frame_columns_times_and_values() -> None:
    frame = zipf_frame(5000, z=1.0, num_keys=100, seed=6, rate=250.0)
    assert list(frame.columns) == ["ts", "key", "value"]
    assert str(frame["ts"].dtype) == "datetime64[us, UTC]"
    assert frame["ts"].iloc[0] == pd.Timestamp("2001-01-01", tz="UTC")
    steps = frame["ts"].diff().dropna().unique()
    assert list(steps) == [pd.Timedelta(milliseconds=4)]
    keys = time_evolving_zipf(5000, z=1.0, num_keys=100, seed=6)
    assert frame["key"].tolist() == [f"k{k}" for k in keys]
    assert frame["value"].dtype == np.int64
    assert frame["value"].between(1, 100).all()
    assert frame["value"].nunique() > 90
    assert frame.equals(zipf_frame(5000, z=1.0, num_keys=100, seed=6, rate=250.0))


def test_frame_rate_not_dividing_a_second_floors_to_microseconds() -> None:
    frame = zipf_frame(4, num_keys=3, rate=3.0, start="2020-05-01 12:00:00+02:00")
    offsets = (frame["ts"] - pd.Timestamp("2020-05-01 10:00:00", tz="UTC")).dt.total_seconds()
    assert offsets.tolist() == [0.0, 0.333333, 0.666666, 1.0]


def test_empty_frame_keeps_its_types() -> None:
    frame = zipf_frame(0)
    assert frame.empty
    assert [str(t) for t in frame.dtypes] == ["datetime64[us, UTC]", "object", "int64"]
