"""Oracle tests of the hot-key statistics: SpaceSaving, epoch counters (Alg. 1), CHK (Alg. 2).

Every streaming statistic is checked at every step against an exact computation: per-tuple
reference implementations (plain dicts) and exact (decayed) counts computed from the whole
prefix of the stream.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.algorithms.hotkeys.chk import ChoiceMemory, arithmetic_choices, classify
from elastream.algorithms.hotkeys.epoch_counter import EpochCounter
from elastream.algorithms.hotkeys.space_saving import SpaceSaving
from elastream.core.errors import OptionError

streams = st.lists(st.integers(0, 12), min_size=1, max_size=120)
TOL = 1e-9


def exact_decayed(keys: np.ndarray, epoch: int, alpha: float) -> tuple[dict[int, float], float]:
    """Decayed count of every key after the whole prefix ``keys`` (Algorithm 1's definition:
    a tuple at index j has been decayed ⌊i/N⌋ − ⌊j/N⌋ times when tuple i has been counted)."""
    last = len(keys) - 1
    age = last // epoch - np.arange(len(keys)) // epoch
    weight = np.power(alpha, age.astype(float))
    counts: dict[int, float] = {}
    for k, w in zip(keys.tolist(), weight.tolist(), strict=True):
        counts[k] = counts.get(k, 0.0) + w
    return counts, float(weight.sum())


def split(n: int, cuts: list[int]) -> list[tuple[int, int]]:
    bounds = sorted({0, n, *[c % (n + 1) for c in cuts]})
    return list(itertools.pairwise(bounds))


# ---------------------------------------------------------------- SpaceSaving


def reference_space_saving(keys: list[int], capacity: int) -> list[dict[int, float]]:
    """Metwally et al. per tuple (ties evict the smaller key); the state after each tuple."""
    count: dict[int, float] = {}
    states = []
    for k in keys:
        if k in count:
            count[k] += 1
        elif len(count) < capacity:
            count[k] = 1.0
        else:
            victim = min(count, key=lambda v: (count[v], v))
            count[k] = count.pop(victim) + 1
        states.append(dict(count))
    return states


@given(streams, st.integers(1, 6))
def test_space_saving_one_tuple_batches_are_the_per_tuple_algorithm(
    keys: list[int], capacity: int
) -> None:
    ss = SpaceSaving(capacity)
    for k, want in zip(keys, reference_space_saving(keys, capacity), strict=True):
        ss.update(np.array([k]))
        assert dict(zip(ss.keys.tolist(), ss.counts.tolist(), strict=True)) == want


@given(streams, st.integers(1, 6), st.lists(st.integers(0, 200), max_size=6))
def test_space_saving_batches_keep_the_error_bounds(
    keys: list[int], capacity: int, cuts: list[int]
) -> None:
    ss = SpaceSaving(capacity)
    array = np.array(keys)
    for start, stop in split(len(keys), cuts):
        ss.update(array[start:stop])
        seen = array[:stop]
        n = float(stop)
        assert ss.total == n
        true = {k: float((seen == k).sum()) for k in set(seen.tolist())}
        monitored = dict(zip(ss.keys.tolist(), ss.counts.tolist(), strict=True))
        assert len(monitored) <= capacity
        assert sum(monitored.values()) <= n + TOL
        for k, c in monitored.items():
            assert true[k] <= c + TOL  # over-estimate ...
            assert c - true[k] <= n / capacity + TOL  # ... by at most N / capacity
        for k, t in true.items():
            if k not in monitored:
                assert t <= ss.min_count + TOL <= n / capacity + 2 * TOL


def test_space_saving_is_exact_with_room_for_every_key() -> None:
    keys = np.random.default_rng(1).integers(0, 50, 5000)
    ss = SpaceSaving(capacity=50)
    for chunk in np.array_split(keys, 7):
        ss.update(chunk)
    assert ss.counts.tolist() == np.bincount(keys, minlength=50)[ss.keys].astype(float).tolist()


def test_space_saving_rejects_a_bad_capacity() -> None:
    with pytest.raises(OptionError, match="capacity"):
        SpaceSaving(0)


# ---------------------------------------------------------------- Algorithm 1


def reference_epoch_counter(
    keys: list[int], kmax: int, epoch: int, alpha: float
) -> list[tuple[dict[int, float], float]]:
    """Algorithm 1 verbatim, one tuple at a time; the state after each tuple."""
    count: dict[int, float] = {}
    total, counter, states = 0.0, 0, []
    for k in keys:
        if counter == epoch:  # lines 4-6
            count = {v: c * alpha for v, c in count.items()}
            total *= alpha
            counter = 0
        total += 1
        if k in count:  # lines 8-17
            count[k] += 1
        elif len(count) < kmax:
            count[k] = 1.0
        else:  # ReplaceMin
            victim = min(count, key=lambda v: (count[v], v))
            count[k] = count.pop(victim) + 1
        counter += 1
        states.append((dict(count), total))
    return states


@given(streams, st.integers(1, 5), st.integers(1, 7), st.sampled_from([0.0, 0.2, 0.5, 1.0]))
def test_epoch_counter_one_tuple_batches_are_algorithm_1(
    keys: list[int], kmax: int, epoch: int, alpha: float
) -> None:
    ec = EpochCounter(kmax=kmax, epoch=epoch, alpha=alpha)
    for k, (want, total) in zip(keys, reference_epoch_counter(keys, kmax, epoch, alpha),
                                strict=True):
        ec.update(np.array([k]))
        assert dict(zip(ec.keys.tolist(), ec.counts.tolist(), strict=True)) == want
        assert ec.total == total


@settings(max_examples=examples(60))
@given(streams, st.integers(1, 9), st.sampled_from([0.2, 0.5, 0.9]),
       st.lists(st.integers(0, 200), max_size=8))
def test_epoch_counters_equal_exact_decayed_counts_when_kmax_covers_all_keys(
    keys: list[int], epoch: int, alpha: float, cuts: list[int]
) -> None:
    ec = EpochCounter(kmax=13, epoch=epoch, alpha=alpha)  # keys are 0..12
    array = np.array(keys)
    for start, stop in split(len(keys), cuts):
        ec.update(array[start:stop])
        exact, total = exact_decayed(array[:stop], epoch, alpha)
        assert ec.total == pytest.approx(total, rel=1e-12)
        got = dict(zip(ec.keys.tolist(), ec.counts.tolist(), strict=True))
        assert got.keys() == exact.keys()
        for k, c in exact.items():
            assert got[k] == pytest.approx(c, rel=1e-12, abs=1e-300)


@settings(max_examples=examples(60))
@given(streams, st.integers(1, 4), st.integers(1, 9), st.sampled_from([0.2, 0.5]),
       st.lists(st.integers(0, 200), max_size=8))
def test_epoch_counters_keep_space_saving_bounds_with_a_small_kmax(
    keys: list[int], kmax: int, epoch: int, alpha: float, cuts: list[int]
) -> None:
    ec = EpochCounter(kmax=kmax, epoch=epoch, alpha=alpha)
    array = np.array(keys)
    for start, stop in split(len(keys), cuts):
        ec.update(array[start:stop])
        exact, total = exact_decayed(array[:stop], epoch, alpha)
        assert ec.total == pytest.approx(total, rel=1e-12)
        got = dict(zip(ec.keys.tolist(), ec.counts.tolist(), strict=True))
        slack = 1e-9 * (1 + total)
        for k, c in got.items():
            assert exact[k] <= c + slack
            assert c - exact[k] <= total / kmax + slack
        for k, c in exact.items():
            if k not in got:
                assert c <= ec.min_count + slack


def test_epoch_counter_decays_only_between_epochs() -> None:
    ec = EpochCounter(kmax=10, epoch=3, alpha=0.5)
    ec.update(np.array([1, 1, 1]))
    assert ec.estimate(np.array([1])).tolist() == [3.0]  # the decay waits for the next tuple
    ec.update(np.array([2]))
    assert ec.estimate(np.array([1, 2])).tolist() == [1.5, 1.0]
    assert ec.in_epoch == 1


@pytest.mark.parametrize(("option", "kwargs"), [
    ("kmax", {"kmax": 0}), ("epoch", {"epoch": -1}), ("alpha", {"alpha": 1.5}),
    ("alpha", {"alpha": float("nan")}),
])
def test_epoch_counter_rejects_bad_parameters(option: str, kwargs: dict[str, float]) -> None:
    with pytest.raises(OptionError) as error:
        EpochCounter(**kwargs)  # type: ignore[arg-type]
    assert error.value.option == option


# ---------------------------------------------------------------- Algorithm 2 (CHK)


@pytest.mark.parametrize(("index", "workers"), [(0, 128), (1, 64), (2, 32), (6, 2), (7, 2)])
def test_chk_halves_the_workers_for_every_halving_of_the_frequency(
    index: int, workers: int
) -> None:
    top = 0.3
    exactly = arithmetic_choices(np.array([top / 2**index]), top, 128, 2)
    just_above = arithmetic_choices(np.array([top / 2**index * 1.01]), top, 128, 2)
    assert exactly.tolist() == [workers]
    assert just_above.tolist() == [min(128, max(2, 128 >> max(index - 1, 0)))]


@given(st.lists(st.tuples(st.integers(0, 5), st.floats(1e-4, 1.0)), min_size=1, max_size=40),
       st.integers(1, 64), st.integers(1, 8))
def test_chk_follows_algorithm_2(
    events: list[tuple[int, float]], workers: int, d_min: int
) -> None:
    theta = 1 / (4 * workers)
    memory = ChoiceMemory()
    remembered: dict[int, int] = {}
    top = max(f for _, f in events)
    for key, f in events:
        got = int(classify(np.array([key]), np.array([f]), top, workers, theta=theta,
                           d_min=d_min, memory=memory)[0])
        if f > theta:
            ratio, index = top / f, 0
            while 2.0 ** (index + 1) <= ratio:  # the largest index with 2^index <= f_top / f_k
                index += 1
            d = max(workers // 2**index, d_min)
            remembered[key] = max(remembered.get(key, 0), d)
            assert got == min(remembered[key], workers)
        else:
            assert got == min(2, workers)
        assert 1 <= got <= workers


def test_chk_never_gives_a_hot_key_fewer_workers_than_before() -> None:
    memory = ChoiceMemory()
    keys = np.array([7])
    first = classify(keys, np.array([0.5]), 0.5, 64, theta=0.01, d_min=2, memory=memory)
    cooler = classify(keys, np.array([0.02]), 0.5, 64, theta=0.01, d_min=2, memory=memory)
    cold = classify(keys, np.array([0.001]), 0.5, 64, theta=0.01, d_min=2, memory=memory)
    assert (first.tolist(), cooler.tolist(), cold.tolist()) == ([64], [64], [2])
    assert memory.lookup(keys).tolist() == [64]
