"""The greedy core allocation of Elasticutor §4.1 against exhaustive search."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from elastream.algorithms.elastic.core_allocation import _tie_round, allocate_cores
from elastream.algorithms.elastic.latency import mmk_sojourn, network_latency, stable_cores
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus


def fewest_cores(rates: list[float], mus: list[float], target: float, budget: int) -> int | None:
    """The least Σ k meeting the target by trying every allocation (None: none in budget)."""
    low = [stable_cores(r, m) for r, m in zip(rates, mus, strict=True)]
    best = None
    for extra in itertools.product(range(budget + 1), repeat=len(rates)):
        k = [a + b for a, b in zip(low, extra, strict=True)]
        total = sum(k)
        if total > budget or (best is not None and total >= best):
            continue
        if network_latency(rates, mus, k) <= target:
            best = total
    return best


def instances(count: int, seed: int) -> list[tuple[list[float], list[float], float, int]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        m = int(rng.integers(2, 4))
        mus = [float(v) for v in rng.uniform(0.5, 3.0, m)]
        rates = [float(r * mu) for r, mu in zip(rng.uniform(0.0, 4.0, m), mus, strict=True)]
        # Targets between the latency of infinitely many cores and five times it.
        floor = sum(r / mu for r, mu in zip(rates, mus, strict=True)) / max(sum(rates), 1e-9)
        out.append((rates, mus, float(floor * rng.uniform(1.01, 5.0)), int(rng.integers(4, 16))))
    return out


def test_greedy_uses_the_fewest_cores_exhaustive_search_finds() -> None:
    agree = infeasible = 0
    cases = instances(150, seed=7)
    for rates, mus, target, budget in cases:
        got = allocate_cores(rates, mus, target, budget)
        best = fewest_cores(rates, mus, target, budget)
        if best is None:
            assert got.status is PlanStatus.INFEASIBLE
            infeasible += 1
            continue
        assert got.status is PlanStatus.OPTIMAL
        assert got.expected_latency <= target
        assert got.total == best, (rates, mus, target, budget)
        agree += 1
    # Both kinds of instance occur: the check is not vacuous.
    print(f"greedy = exhaustive on {agree} feasible instances, {infeasible} infeasible")
    assert agree >= 40 and infeasible >= 20, (agree, infeasible)


def test_at_the_budget_greedy_has_the_least_latency_of_any_allocation() -> None:
    for rates, mus, _, budget in instances(60, seed=11):
        got = allocate_cores(rates, mus, 1e-9, budget)  # unreachable: spends the budget
        low = [stable_cores(r, m) for r, m in zip(rates, mus, strict=True)]
        if sum(low) > budget:
            assert got.cores == tuple(low) and got.status is PlanStatus.INFEASIBLE
            continue
        best = min(network_latency(rates, mus, [a + b for a, b in zip(low, e, strict=True)])
                   for e in itertools.product(range(budget + 1), repeat=len(rates))
                   if sum(low) + sum(e) <= budget)
        assert got.expected_latency == pytest.approx(best, rel=1e-9)


def greedy_from_scratch(rates: list[float], mus: list[float], target: float, budget: int,
                        current: list[int]) -> tuple[PlanStatus, tuple[int, ...], float]:
    """§4.1's greedy with eq. (1) and every gain computed afresh by network_latency and
    mmk_sojourn at each step, the same tie rule (rounded gain, surplus, index)."""
    cores = [stable_cores(r, m) for r, m in zip(rates, mus, strict=True)]
    latency, lam0 = network_latency(rates, mus, cores), sum(rates)
    if sum(cores) > budget:
        return PlanStatus.INFEASIBLE, tuple(cores), latency
    while latency > target and sum(cores) < budget:
        gains = [0.0 if r == 0 else _tie_round(r * (mmk_sojourn(r, mu, k)
                                                    - mmk_sojourn(r, mu, k + 1)) / lam0)
                 for r, mu, k in zip(rates, mus, cores, strict=True)]
        j = min(range(len(cores)), key=lambda e: (-gains[e], cores[e] - current[e], e))
        if gains[j] <= 0:
            break
        cores[j] += 1
        latency = network_latency(rates, mus, cores)
    status = PlanStatus.OPTIMAL if latency <= target else PlanStatus.INFEASIBLE
    return status, tuple(cores), latency


def test_incremental_greedy_is_the_greedy_from_scratch_bit_for_bit() -> None:
    # allocate_cores carries each executor's Erlang B recursion and eq. (1)'s terms from one
    # core to the next; its cores, status and latency (to the last bit: a drifting sum could
    # stop one core early or late) must be those of recomputing everything at every step.
    # Identical executors and integral loads make ties; targets near the floor use the budget.
    rng = np.random.default_rng(5)
    tied = 0
    for _ in range(250):
        m = int(rng.integers(1, 24))
        mus = [float(v) for v in rng.choice([1.0, 250.0, 0.3], m)]
        rates = [float(r * mu) for r, mu in zip(rng.uniform(0.0, 12.0, m), mus, strict=True)]
        if rng.random() < 0.3:  # identical executors with integral loads
            mus, rates = [mus[0]] * m, [float(int(rng.integers(0, 6)) * mus[0])] * m
            tied += m > 1
        target = float(rng.uniform(1.0, 3.0) / np.mean(mus))
        budget = int(rng.integers(1, 12 * m))
        current = [int(v) for v in rng.integers(0, 10, m)]
        got = allocate_cores(rates, mus, target, budget, current=current)
        want = greedy_from_scratch(rates, mus, target, budget, current)
        assert (got.status, got.cores, got.expected_latency) == want, (rates, mus, target)
    assert tied >= 40, tied


def test_stable_minimum_over_budget_is_returned_as_infeasible() -> None:
    got = allocate_cores([5.0, 5.0], [1.0, 1.0], latency_target=10.0, budget=8)
    assert got.status is PlanStatus.INFEASIBLE
    assert got.cores == (6, 6) and math.isfinite(got.expected_latency)


def test_unreachable_target_stops_when_cores_stop_helping() -> None:
    # With infinitely many cores E[T] → 1/μ = 1 s: a 0.5 s target is never met.
    got = allocate_cores([2.0], [1.0], latency_target=0.5, budget=10**9)
    assert got.status is PlanStatus.INFEASIBLE and got.total < 100


def test_idle_executors_keep_one_core() -> None:
    got = allocate_cores([0.0, 3.0], [1.0, 1.0], latency_target=2.0, budget=10)
    assert got.cores[0] == 1 and got.status is PlanStatus.OPTIMAL


def test_ties_go_to_the_executor_with_surplus_cores() -> None:
    # Identical executors: one more core is needed; it goes where cores already are.
    plain = allocate_cores([1.5, 1.5], [1.0, 1.0], latency_target=2.0, budget=10)
    assert plain.cores == (3, 2)
    tied = allocate_cores([1.5, 1.5], [1.0, 1.0], latency_target=2.0, budget=10, current=[2, 4])
    assert tied.cores == (2, 3) and tied.total == plain.total


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"rates": []}, "rates"),
    ({"rates": [1.0, -1.0]}, "rates[1]"),
    ({"service_rates": [1.0, 0.0]}, "service_rates[1]"),
    ({"service_rates": [1.0]}, "service_rates"),
    ({"latency_target": 0.0}, "latency_target"),
    ({"budget": 0}, "budget"),
    ({"current": [1]}, "current"),
    ({"current": [1, -2]}, "current[1]"),
])
def test_bad_inputs_name_the_argument(kwargs: dict[str, object], name: str) -> None:
    args: dict[str, object] = {"rates": [1.0, 2.0], "service_rates": [1.0, 1.0],
                               "latency_target": 2.0, "budget": 8, **kwargs}
    with pytest.raises(OptionError) as error:
        allocate_cores(**args)  # type: ignore[arg-type]
    assert error.value.option == name


def test_numpy_numbers_are_numbers() -> None:
    rates, mus = np.array([4.0, 1.0]), np.array([1.0, 1.0])
    got = allocate_cores(list(rates), list(mus), np.float64(1.2), np.int64(16),  # type: ignore[arg-type]
                         current=list(np.array([3, 3])))
    assert got.cores == (6, 2)
    assert network_latency(list(rates), list(mus), list(np.array(got.cores))) \
        == pytest.approx(got.expected_latency)
    with pytest.raises(OptionError):
        allocate_cores([1.0], [1.0], 1.0, True)
