"""Intra-executor shard balancing (Elasticutor §3.1): the δ ≤ θ bound and brute-force oracles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.algorithms.elastic.shard_balance import balance_shards, imbalance
from elastream.core.errors import OptionError

RTOL = 1e-9


@st.composite
def executors(draw: st.DrawFn) -> tuple[list[float], list[int], int, float]:
    """Shard loads, their current tasks (some on removed tasks) and the new task count."""
    shards = draw(st.integers(1, 60))
    loads = draw(st.lists(st.floats(0, 100, allow_nan=False), min_size=shards,
                          max_size=shards))
    old = draw(st.integers(1, 8))
    tasks = draw(st.lists(st.integers(0, old - 1), min_size=shards, max_size=shards))
    return loads, tasks, draw(st.integers(1, 8)), draw(st.sampled_from([1.0, 1.05, 1.2, 1.5]))


@settings(max_examples=examples(150), deadline=None)
@given(executors())
@example(([5e-324], [0], 2, 1.0))  # a subnormal load: its average underflows to 0
def test_delta_is_at_most_theta_when_no_shard_exceeds_theta_minus_one_times_avg(
        case: tuple[list[float], list[int], int, float]) -> None:
    loads, tasks, num_tasks, theta = case
    plan = balance_shards(loads, tasks, num_tasks, theta=theta)
    total = sum(loads)  # avg = total / num_tasks, kept out of the bounds: it underflows to 0
    if total > 0 and max(loads) * num_tasks <= (theta - 1) * total:  # for a subnormal total
        assert plan.imbalance <= theta * (1 + RTOL)
    # In general: δ ≤ max(θ, 1 + p_max/avg), the local-search (and LPT) bound.
    bound = 1.0 if total == 0 else max(theta, 1 + max(loads) * num_tasks / total)
    assert plan.imbalance <= bound * (1 + RTOL)


@settings(max_examples=examples(150), deadline=None)
@given(executors())
def test_a_plan_is_consistent(case: tuple[list[float], list[int], int, float]) -> None:
    loads, tasks, num_tasks, theta = case
    plan = balance_shards(loads, tasks, num_tasks, theta=theta)
    assert all(0 <= t < num_tasks for t in plan.assignment)
    moved = {s: (a, b) for s, a, b in plan.moves}
    assert len(moved) == len(plan.moves)
    for s, (before, after) in enumerate(zip(tasks, plan.assignment, strict=True)):
        assert (s in moved) == (before != after)
        if s in moved:
            assert moved[s] == (before, after)
    assert plan.imbalance == pytest.approx(imbalance(loads, plan.assignment, num_tasks))
    # Deterministic.
    assert balance_shards(loads, tasks, num_tasks, theta=theta) == plan


@settings(max_examples=examples(100), deadline=None)
@given(executors())
def test_nothing_moves_when_already_within_theta(
        case: tuple[list[float], list[int], int, float]) -> None:
    loads, tasks, _, theta = case
    num_tasks = max(tasks) + 1
    if imbalance(loads, tasks, num_tasks) <= theta:
        assert balance_shards(loads, tasks, num_tasks, theta=theta).moves == ()


def best_delta(loads: list[float], num_tasks: int) -> float:
    return min(imbalance(loads, list(t), num_tasks)
               for t in itertools.product(range(num_tasks), repeat=len(loads)))


def test_against_the_best_assignment_on_small_executors() -> None:
    rng = np.random.default_rng(5)
    exact = 0
    for _ in range(150):
        shards, num_tasks = int(rng.integers(2, 8)), int(rng.integers(2, 4))
        loads = [float(v) for v in rng.pareto(1.5, shards) + 0.1]
        tasks = [int(t) for t in rng.integers(0, num_tasks + 1, shards)]  # some orphans
        got = balance_shards(loads, tasks, num_tasks).imbalance
        best = best_delta(loads, num_tasks)
        # Within θ, or within LPT's 4/3 of the best maximum when θ is out of reach.
        assert got <= max(1.2, 4 / 3 * best) * (1 + RTOL)
        exact += got <= max(1.2, best) * (1 + RTOL)
    assert exact >= 120  # reaches θ (or the optimum) on most instances


def test_theta_times_avg_is_not_enough_for_any_assignment() -> None:
    # No shard exceeds θ·avg = 1.8, yet the best of all assignments has δ = 4/3 > 1.2.
    plan = balance_shards([1.0, 1.0, 1.0], [0, 0, 0], 2)
    assert plan.imbalance == pytest.approx(4 / 3) == best_delta([1.0, 1.0, 1.0], 2)


def test_shards_of_a_removed_task_move_heaviest_first() -> None:
    plan = balance_shards([4.0, 1.0, 2.0, 3.0], [2, 2, 0, 1], 2)
    assert plan.moves == ((0, 2, 0), (1, 2, 1))  # 4 → task 0 (2), 1 → task 1 (3)
    assert plan.imbalance == pytest.approx(6 / 5)


def test_fallback_to_lpt_when_the_rounds_get_stuck() -> None:
    # Rounds: task 0 holds 5+5 = 10, task 1 holds 4+3+3 = 10 … already equal. Make it stuck:
    # one task holds two shards of 6, the other 4+4+4: no single move helps, LPT finds 12|12.
    loads = [6.0, 6.0, 4.0, 4.0, 4.0, 1.0]
    plan = balance_shards(loads, [0, 0, 1, 1, 1, 1], 2, theta=1.0)
    assert plan.imbalance == pytest.approx(imbalance(loads, plan.assignment, 2))
    assert plan.imbalance <= 13 / 12.5 + 1e-9


@pytest.mark.parametrize(("args", "name"), [
    (([1.0, -1.0], [0, 0], 2), "shard_loads[1]"),
    (([1.0], [0, 0], 2), "assignment"),
    (([1.0], [-1], 2), "assignment"),
    (([1.0], [0], 0), "num_tasks"),
])
def test_bad_inputs_name_the_argument(args: tuple[object, ...], name: str) -> None:
    with pytest.raises(OptionError) as error:
        balance_shards(*args)  # type: ignore[arg-type]
    assert error.value.option == name
    with pytest.raises(OptionError) as error:
        balance_shards([1.0], [0], 1, theta=0.9)
    assert error.value.option == "theta"
