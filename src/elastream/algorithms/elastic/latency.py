r"""The queueing model of Elasticutor's scheduler: executors as M/M/k queues in a Jackson network.

Wang et al. (Elasticutor, §4.1, eq. 1) model each elastic executor ``j`` as an M/M/k_j queue —
Poisson arrivals at rate ``λ_j`` (tuples/s), exponential service at ``μ_j`` tuples/s per core,
``k_j`` cores — and the topology as a Jackson network, whose mean sojourn time is

    E[T](k) = (1/λ0) · Σ_j λ_j · E[T_j](k_j),                                              (1)

``λ0`` being the arrival rate of the input stream. One M/M/k queue (Tijms 1986, the paper's
[27]) with offered load ``a = λ/μ`` has

    E[T_j] = C(k, a) / (kμ − λ) + 1/μ       when λ < kμ   (infinite otherwise),

where ``C(k, a)`` is Erlang's C formula, the probability that an arrival waits. It is computed
from Erlang's B formula by the recursion ``B(0) = 1, B(n) = a·B(n−1) / (n + a·B(n−1))`` and
``C = k·B / (k − a·(1 − B))``: no factorial, no power of ``a``, stable for thousands of cores
(O(k) operations; :func:`sojourn_times` carries the recursion from k to k + 1 in O(1)).

**λ0.** For the operator this package schedules — one operator whose key space is split among
its executors, so every input tuple visits exactly one executor — the input rate is the sum of
the executors' rates, and that is the default: ``E[T]`` is then the rate-weighted mean sojourn,
the latency of an average tuple. A topology whose tuples visit several operators passes its
source rate as ``arrival_rate`` (eq. 1 as printed), and ``E[T]`` sums the visits. With no
arrivals at all (every ``λ_j = 0`` and no ``arrival_rate``) there is no tuple to wait and the
latency is 0.

References:
    L. Wang, T. Z. J. Fu, R. T. B. Ma, M. Winslett, Z. Zhang. Elasticutor: Rapid Elasticity for
    Realtime Stateful Stream Processing, §4.1, eq. (1).
    H. C. Tijms. Stochastic Modelling and Analysis: A Computational Approach. Wiley, 1986.

>>> round(erlang_c(2, 1.0), 6)  # two cores at half load: 1/3 of arrivals wait
0.333333
>>> round(mmk_sojourn(rate=1.0, service_rate=1.0, cores=2), 6)  # 1/3 / (2 - 1) + 1
1.333333
>>> round(network_latency([1.0, 3.0], [1.0, 1.0], [2, 4]), 4)  # (1·4/3 + 3·(C(4,3) + 1)) / 4
1.4654
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from elastream.core import rules
from elastream.core.errors import OptionError


def erlang_c(cores: int, offered_load: float) -> float:
    """Erlang C: the probability that an arrival waits in an M/M/k queue.

    ``cores`` = k ≥ 1; ``offered_load`` = a = λ/μ ≥ 0 (in Erlangs). 1.0 when a ≥ k (the queue
    is unstable: every arrival waits), 0.0 when a = 0. O(k), stable for large k.
    """
    rules.integer("cores", cores)
    rules.number("offered_load", offered_load)
    a = float(offered_load)
    b = 1.0
    if 0.0 < a < cores:  # else C is 1 (unstable) or 0 (no load), whatever B is
        for n in range(1, cores + 1):
            b = a * b / (n + a * b)
    return _erlang_c(cores, a, b)


def mmk_sojourn(rate: float, service_rate: float, cores: int) -> float:
    """Mean sojourn time E[T] (seconds) of an M/M/k queue: waiting plus service.

    ``rate`` λ ≥ 0 (arrivals/s), ``service_rate`` μ > 0 (per core, completions/s), ``cores``
    k ≥ 1. ``math.inf`` when λ ≥ kμ; ``1/μ`` when λ = 0.
    """
    rules.number("rate", rate)
    rules.number("service_rate", service_rate, above=0)
    rules.integer("cores", cores)
    capacity = cores * service_rate
    if rate >= capacity:
        return math.inf
    return _sojourn(rate, service_rate, cores, erlang_c(cores, rate / service_rate))


def sojourn_times(rate: float, service_rate: float, cores: int) -> Iterator[float]:
    """``mmk_sojourn(rate, service_rate, k)`` for k = ``cores``, ``cores`` + 1, … without end.

    The same values bit for bit, in O(1) each after an O(``cores``) first one: Erlang B's
    recursion carries B(k) to B(k + 1), where :func:`mmk_sojourn` starts again from B(0). The
    greedy allocation (§4.1) asks for the next core's sojourn of one executor at a time.

    >>> times = sojourn_times(rate=1.0, service_rate=1.0, cores=1)
    >>> [round(next(times), 6) for _ in range(3)]  # k = 1 is unstable; 4/3 as above
    [inf, 1.333333, 1.045455]
    """
    rules.number("rate", rate)
    rules.number("service_rate", service_rate, above=0)
    rules.integer("cores", cores)
    return _sojourn_times(float(rate), float(service_rate), cores)


def _sojourn_times(rate: float, service_rate: float, cores: int) -> Iterator[float]:
    a = rate / service_rate
    b = 1.0
    for n in range(1, cores):
        b = a * b / (n + a * b)
    k = cores
    while True:
        b = a * b / (k + a * b)  # B(k): the step erlang_c's loop takes last
        capacity = k * service_rate
        yield math.inf if rate >= capacity else _sojourn(rate, service_rate, k,
                                                          _erlang_c(k, a, b))
        k += 1


def _erlang_c(cores: int, a: float, b: float) -> float:
    """C(k, a) from B(k, a) = ``b`` (1 when a ≥ k, 0 when a = 0, whatever ``b``)."""
    if a >= cores:
        return 1.0
    if a == 0.0:
        return 0.0
    return cores * b / (cores - a * (1.0 - b))


def _sojourn(rate: float, service_rate: float, cores: int, wait: float) -> float:
    """E[T] of a stable M/M/k queue whose Erlang C is ``wait``."""
    return wait / (cores * service_rate - rate) + 1.0 / service_rate


def network_latency(rates: Sequence[float], service_rates: Sequence[float],
                    cores: Sequence[int], arrival_rate: float | None = None) -> float:
    """Eq. (1): the mean sojourn time of the Jackson network of executors, in seconds.

    ``rates[j]`` = λ_j, ``service_rates[j]`` = μ_j, ``cores[j]`` = k_j, one per executor;
    ``arrival_rate`` = λ0 > 0 (default Σ λ_j; module docstring). ``math.inf`` when an executor
    with arrivals is unstable.
    """
    _check_lengths(rates, service_rates, cores)
    total = 0.0
    for j, (lam, mu, k) in enumerate(zip(rates, service_rates, cores, strict=True)):
        rules.number(f"rates[{j}]", lam)
        rules.number(f"service_rates[{j}]", mu, above=0)
        rules.integer(f"cores[{j}]", k)
        if lam > 0:
            total += lam * mmk_sojourn(lam, mu, k)
    if arrival_rate is None:
        lam0 = float(sum(rates))
        return 0.0 if lam0 == 0 else total / lam0
    rules.number("arrival_rate", arrival_rate, above=0)
    return total / arrival_rate


def stable_cores(rate: float, service_rate: float) -> int:
    """⌊λ/μ⌋ + 1: the fewest cores that keep an M/M/k queue stable (§4.1's starting point)."""
    return math.floor(rate / service_rate) + 1


def _check_lengths(rates: Sequence[float], service_rates: Sequence[float],
                   cores: Sequence[int]) -> None:
    if len(rates) == 0:
        raise OptionError("rates", "must list at least one executor", list(rates))
    for name, values in (("service_rates", service_rates), ("cores", cores)):
        if len(values) != len(rates):
            raise OptionError(name, f"must have one entry per executor ({len(rates)})",
                              len(values))
