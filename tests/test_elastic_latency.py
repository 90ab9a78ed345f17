"""The M/M/k model of Elasticutor §4.1 against a discrete-event simulation and Erlang's formula."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

from elastream.algorithms.elastic.latency import (
    erlang_c,
    mmk_sojourn,
    network_latency,
    sojourn_times,
    stable_cores,
)
from elastream.core.errors import OptionError


def erlang_c_direct(k: int, a: float) -> float:
    """The textbook formula with factorials (fine for small k)."""
    top = a**k / math.factorial(k) * k / (k - a)
    return top / (sum(a**n / math.factorial(n) for n in range(k)) + top)


def simulate_mmk(rate: float, service_rate: float, cores: int, customers: int,
                 seed: int) -> np.ndarray:
    """Sojourn times of FCFS M/M/k customers: each takes the server that frees first."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / rate, customers))
    services = rng.exponential(1 / service_rate, customers)
    free = [0.0] * cores
    sojourn = np.empty(customers)
    for n in range(customers):
        start = max(arrivals[n], heapq.heappop(free))
        done = start + services[n]
        heapq.heappush(free, done)
        sojourn[n] = done - arrivals[n]
    return sojourn


@pytest.mark.parametrize(("rate", "mu", "k", "seed"), [
    (0.7, 1.0, 1, 1), (3.0, 1.0, 4, 2), (7.5, 1.0, 10, 3), (40.0, 5.0, 9, 4)])
def test_model_matches_a_discrete_event_simulation(rate: float, mu: float, k: int,
                                                   seed: int) -> None:
    # 200k customers, the first 10% dropped as warm-up. Sojourn times are correlated, so the
    # standard error comes from 40 batch means (batches of 4,500 customers, many busy periods
    # long at these loads, hence close to independent); 4 standard errors leave the seeded
    # runs a margin that a wrong model (e.g. M/M/1 per core, or a C(k, a) off by a factor)
    # exceeds many times over.
    sojourn = simulate_mmk(rate, mu, k, 200_000, seed)[20_000:]
    batches = sojourn.reshape(40, -1).mean(axis=1)
    se = batches.std(ddof=1) / math.sqrt(batches.size)
    model = mmk_sojourn(rate, mu, k)
    print(f"M/M/{k} λ={rate} μ={mu}: DES {sojourn.mean():.4f} model {model:.4f} "
          f"({100 * (sojourn.mean() / model - 1):+.2f}%, se {se:.4f})")
    assert abs(sojourn.mean() - model) < 4 * se
    assert abs(sojourn.mean() - model) / model < 0.03  # and within 3% in absolute terms


@pytest.mark.parametrize("k", range(1, 13))
def test_erlang_c_equals_the_direct_formula(k: int) -> None:
    for a in np.linspace(0.05, k - 0.05, 9):
        assert erlang_c(k, float(a)) == pytest.approx(erlang_c_direct(k, float(a)), rel=1e-10)


def test_erlang_c_is_stable_for_a_thousand_cores() -> None:
    values = [erlang_c(1000, a) for a in (500.0, 900.0, 990.0, 999.0, 999.999)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values)  # more load, more waiting
    assert values[0] < 1e-30 and values[-1] > 0.99
    # Halfin–Whitt regime: a = k − β√k gives C → (1 + β Φ(β)/φ(β))^−1; β = 1 gives ≈ 0.2178.
    assert erlang_c(1000, 1000 - math.sqrt(1000)) == pytest.approx(0.2178, abs=0.01)


def test_edge_cases() -> None:
    assert erlang_c(3, 3.0) == 1.0 and erlang_c(3, 5.0) == 1.0 and erlang_c(3, 0.0) == 0.0
    assert mmk_sojourn(0.0, 4.0, 2) == 0.25
    assert mmk_sojourn(8.0, 4.0, 2) == math.inf
    assert mmk_sojourn(0.5, 1.0, 1) == pytest.approx(2.0)  # M/M/1: 1/(μ − λ)
    assert stable_cores(3.0, 1.0) == 4 and stable_cores(2.5, 1.0) == 3


@pytest.mark.parametrize(("rate", "mu"), [
    (0.0, 1.0), (0.7, 1.0), (3.0, 1.0), (7.5, 0.5), (2000.0, 250.0), (1e-300, 3.0),
    (float(np.nextafter(12.0, 0.0)), 1.0), (1.1 * 0.3, 0.3)])
def test_sojourn_times_are_mmk_sojourn_bit_for_bit(rate: float, mu: float) -> None:
    # The allocation's stopping test and tie rounding see these numbers: equal, not close.
    # The cases cover no load, integral loads (unstable at k = a), a load just below 12 and
    # one whose a = λ/μ rounds while kμ does not.
    for start in (1, stable_cores(rate, mu), 30):
        times = sojourn_times(rate, mu, start)
        assert [next(times) for _ in range(60)] == [mmk_sojourn(rate, mu, k)
                                                     for k in range(start, start + 60)]


def test_network_latency_weights_executors_by_rate() -> None:
    # Executor 0: M/M/1 at λ=0.5 → 2 s; executor 1: λ=1.5, k=2 → C(2,1.5)/(0.5) + 1.
    t1 = erlang_c(2, 1.5) / 0.5 + 1
    assert network_latency([0.5, 1.5], [1.0, 1.0], [1, 2]) == pytest.approx((0.5 * 2 + 1.5 * t1)
                                                                            / 2)
    # A source rate λ0 counts each visit (a tuple visiting both executors).
    assert network_latency([1.0, 1.0], [2.0, 2.0], [1, 1], arrival_rate=1.0) == pytest.approx(2)
    assert network_latency([0.0, 0.0], [1.0, 1.0], [1, 1]) == 0.0
    assert network_latency([3.0], [1.0], [3]) == math.inf


@pytest.mark.parametrize(("call", "name"), [
    (lambda: erlang_c(0, 1.0), "cores"),
    (lambda: erlang_c(2, -1.0), "offered_load"),
    (lambda: mmk_sojourn(1.0, 0.0, 1), "service_rate"),
    (lambda: mmk_sojourn(math.nan, 1.0, 1), "rate"),
    (lambda: network_latency([1.0], [1.0, 2.0], [1]), "service_rates"),
    (lambda: network_latency([1.0], [1.0], [1.5]), "cores[0]"),
    (lambda: network_latency([1.0], [1.0], [1], arrival_rate=0.0), "arrival_rate"),
    (lambda: sojourn_times(1.0, 1.0, 0), "cores"),
    (lambda: sojourn_times(-1.0, 1.0, 1), "rate"),
])
def test_bad_inputs_name_the_argument(call: object, name: str) -> None:
    with pytest.raises(OptionError) as error:
        call()  # type: ignore[operator]
    assert error.value.option == name
