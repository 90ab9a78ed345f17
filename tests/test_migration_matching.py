"""Cheapest node assignment for fixed intervals, and the enumeration of partitionings.

``match`` and the vectorised ``pair_gains`` must equal the best of every permutation of nodes;
``feasible_partitionings`` must list exactly the distinct partitionings that meet the bound.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples
from tests.test_migration_oracles import all_bounds, best_gain, loads_fit

from elastream.algorithms.migration.intervals import (
    balanced_bounds,
    fewest_intervals,
    runs,
)
from elastream.algorithms.migration.matching import assign_nodes, match, pair_gains
from elastream.algorithms.migration.partitions import canonical, feasible_partitionings
from elastream.core.errors import OptionError


@st.composite
def two_partitionings(draw: st.DrawFn) -> tuple[list[float], list[int], list[int]]:
    m = draw(st.integers(1, 8))
    state = draw(st.lists(st.integers(0, 5), min_size=m, max_size=m))
    a = sorted(draw(st.lists(st.integers(0, m), min_size=0, max_size=3)))
    b = sorted(draw(st.lists(st.integers(0, m), min_size=0, max_size=3)))
    return [float(s) for s in state], [0, *a, m], [0, *b, m]


@settings(max_examples=examples(300), deadline=None, derandomize=True, database=None)
@given(two_partitionings())
def test_match_equals_every_permutation(case: tuple) -> None:
    state, a, b = case
    prefix = np.r_[0.0, np.cumsum(state)]
    gain, pairs = match(np.array(a), np.array(b), prefix)
    assert gain == pytest.approx(best_gain(state, a, b))
    # the pairs are a matching and earn exactly that gain
    assert len(set(pairs.values())) == len(pairs)
    earned = sum(sum(state[max(a[i], b[k]):min(a[i + 1], b[k + 1])]) for k, i in pairs.items())
    assert earned == pytest.approx(gain)
    vector = pair_gains(np.array([a]), np.array([b]), prefix)
    assert vector[0] == pytest.approx(gain)


def test_pair_gains_on_many_rows_with_padding() -> None:
    rng = np.random.default_rng(0)
    m = 9
    state = rng.integers(0, 5, m).astype(float)
    prefix = np.r_[0.0, np.cumsum(state)]
    rows_a = np.array([canonical(np.r_[0, np.sort(rng.integers(0, m + 1, 3)), m], m)
                       for _ in range(50)])
    rows_b = np.array([canonical(np.r_[0, np.sort(rng.integers(0, m + 1, 4)), m], m)
                       for _ in range(50)])
    got = pair_gains(rows_a, rows_b, prefix)
    want = [best_gain(state.tolist(), a.tolist(), b.tolist())
            for a, b in zip(rows_a, rows_b, strict=True)]
    assert got == pytest.approx(want)


@pytest.mark.parametrize(("current", "intervals", "pairs", "nodes"), [
    (2, 3, {0: 0, 2: 1}, (0, 2, 1)),   # scale-out: the new node takes the unmatched interval
    (3, 2, {1: 2}, (0, 2)),            # scale-in: lowest unmatched node first, node 1 removed
    (2, 2, {}, (0, 1)),                # nothing kept
    (1, 3, {1: 0}, (1, 0, 2)),         # new ids in task order
])
def test_assign_nodes(current: int, intervals: int, pairs: dict[int, int],
                      nodes: tuple[int, ...]) -> None:
    assert assign_nodes(current, intervals, pairs) == nodes


@settings(max_examples=examples(150), deadline=None, derandomize=True, database=None)
@given(st.integers(1, 7), st.integers(1, 4),
       st.lists(st.integers(0, 4), min_size=7, max_size=7), st.sampled_from([0.0, 0.3, 1.0]))
def test_feasible_partitionings_lists_each_distinct_one(m: int, nodes: int, raw: list[int],
                                                        tau: float) -> None:
    work = [float(w) for w in raw[:m]]
    if sum(work) == 0:
        work[0] = 1.0
    cap = (1 + tau) * sum(work) / nodes
    got = feasible_partitionings(np.array(work), nodes, capacity=cap)
    want = {tuple(canonical(np.array(b), m).tolist()) for b in all_bounds(m, nodes)
            if loads_fit(work, b, tau, nodes)}
    assert [tuple(r) for r in got.tolist()] == sorted(want)
    assert (len(want) > 0) == (fewest_intervals(np.array(work), cap) <= nodes)


def test_feasible_partitionings_stops_at_the_limit() -> None:
    with pytest.raises(OptionError, match="more than 10 partitionings"):
        feasible_partitionings(np.ones(12), 4, capacity=12.0, limit=10)


def test_runs_and_balanced_bounds() -> None:
    assert runs(np.array([1, 1, 0, 0, 1])) == (((0, 2), (2, 4), (4, 5)), (1, 0, 1))
    bounds = balanced_bounds(np.ones(10), 3)
    assert bounds.tolist() == [0, 3, 7, 10] or bounds.tolist() == [0, 3, 6, 10]
    for n in range(1, 6):
        b = balanced_bounds(np.arange(1.0, 13.0), n)
        assert b[0] == 0 and b[-1] == 12 and list(b) == sorted(b) and len(b) == n + 1


def test_all_bounds_and_pairwise_agree() -> None:
    assert sum(1 for _ in itertools.islice(all_bounds(3, 2), 10)) == 4
