r"""How many cores each elastic executor needs: the greedy allocation of Elasticutor §4.1.

Given each executor's arrival rate ``λ_j`` and per-core service rate ``μ_j``, find cores
``k = (k_1 … k_m)`` with the model's latency ``E[T](k) ≤ T_max``
(:func:`~elastream.algorithms.elastic.latency.network_latency`, eq. 1) using as few cores as
possible. §4.1: "each ``k_j`` is initialized to be ``⌊λ_j/μ_j⌋ + 1``, which is the minimal
requirement to make the system stable. We repeatedly add 1 to the value in the vector ``k``
that leads to the most significant decrease in ``E[T]``, until ``E[T] ≤ T_max`` or ``Σ k_j``
exceeds the number of available CPU resources."

**Why the result is optimal.** Each term ``λ_j·E[T_j](k_j)`` of eq. (1) is decreasing and convex
in ``k_j`` (the M/M/k sojourn time is discretely convex in the number of servers: Dyer and
Proll 1977), so the marginal gains of successive cores of one executor shrink and the greedy
choice of the largest gain gives, for every total ``K``, the least ``E[T]`` among allocations of
``K`` cores above the stable minimum (the separable convex resource allocation argument DRS
[15] uses). The first ``K`` at which ``E[T] ≤ T_max`` is therefore the fewest cores that meet the
target: the status is ``OPTIMAL``. ``tests/test_elastic_allocation.py`` checks this against
exhaustive search.

**Status.** ``OPTIMAL`` when the target is met (with the fewest cores, above). ``INFEASIBLE``
when ``budget`` cores cannot meet it; the allocation returned is then the greedy one at the
whole budget (the least ``E[T]`` any allocation of ``budget`` cores reaches) — or, when even the
stable minimum ``Σ (⌊λ_j/μ_j⌋ + 1)`` exceeds the budget, that stable minimum, over budget, so
that a caller sees how many cores stability takes. The greedy also stops when no further core
lowers ``E[T]`` in floating point (a target below ``Σ λ_j/μ_j / λ0``, the latency of infinitely
many cores, is never met).

**Ties.** Between executors whose next core gains the same (to 1e-12 relative), the one whose
``current`` core count is furthest above its allocation so far comes first — its cores stay
where they are instead of moving — then the lowest index.

Complexity: O(Σ k⁰_j + K·(m + log m)) for ``K`` cores added to the stable minimum ``k⁰``. The
first sojourn times cost O(k⁰_j) each (Erlang B's recursion); after that
:func:`~elastream.algorithms.elastic.latency.sojourn_times` carries each executor's recursion one
core further in O(1), and a heap of marginal gains picks the next core in O(log m). The O(m) is
eq. (1)'s sum, added up again after each core in executor order, as
:func:`~elastream.algorithms.elastic.latency.network_latency` adds it, so that the stopping test
``E[T] ≤ T_max`` and the ``expected_latency`` returned are that function's, bit for bit (a running
sum would drift by rounding and could stop one core early or late).

References:
    L. Wang et al. Elasticutor, §4.1.
    T. Z. J. Fu et al. DRS: Dynamic Resource Scheduling for Real-Time Analytics over Fast
    Streams. ICDCS 2015 (the paper's [15]).
    M. E. Dyer, L. G. Proll. On the validity of marginal analysis for allocating servers in
    M/M/c queues. Management Science 23(9), 1977.

>>> a = allocate_cores([4.0, 1.0], [1.0, 1.0], latency_target=1.2, budget=16)
>>> a.status.value, a.cores, round(a.expected_latency, 4)
('optimal', (6, 2), 1.1806)
>>> allocate_cores([4.0, 1.0], [1.0, 1.0], latency_target=1.2, budget=7).status.value
'infeasible'
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from elastream.algorithms.elastic.latency import sojourn_times, stable_cores
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

TIE_RTOL = 1e-12
"""Gains within this relative difference are ties (see the module docstring)."""


@dataclass(frozen=True)
class CoreAllocation:
    """Cores per executor and the model's mean latency ``E[T]`` (seconds) with them.

    ``status``: ``OPTIMAL`` (target met with the fewest cores) or ``INFEASIBLE`` (module
    docstring says which allocation comes back then).
    """

    status: PlanStatus
    cores: tuple[int, ...]
    expected_latency: float

    @property
    def total(self) -> int:
        """Σ k_j."""
        return sum(self.cores)


def allocate_cores(rates: Sequence[float], service_rates: Sequence[float],
                   latency_target: float, budget: int, *,
                   current: Sequence[int] | None = None) -> CoreAllocation:
    """The fewest cores per executor that bring eq. (1)'s ``E[T]`` to ``latency_target``.

    Args:
        rates: ``λ_j``, tuples/s arriving at executor ``j`` (finite, ≥ 0).
        service_rates: ``μ_j``, tuples/s one core of executor ``j`` processes (> 0).
        latency_target: ``T_max`` in seconds (> 0).
        budget: the cores available in the cluster (integer ≥ 1).
        current: the executors' core counts now (integers ≥ 0), for ties only.

    Raises:
        OptionError: naming the argument (``rates[2]``), the rule and the value.
    """
    lam, mu = _validated(rates, service_rates, latency_target, budget, current)
    cores = [stable_cores(r, m) for r, m in zip(lam, mu, strict=True)]
    # Each executor's sojourn times E[T_j](k) for k = k_j, k_j + 1, …: O(1) a step.
    times = [sojourn_times(r, m, k) for r, m, k in zip(lam, mu, cores, strict=True)]
    sojourn = [next(t) for t in times]  # E[T_j](k_j)
    following = [next(t) for t in times]  # E[T_j](k_j + 1)
    terms = [r * t if r > 0 else 0.0 for r, t in zip(lam, sojourn, strict=True)]
    lam0 = sum(lam)
    latency = _mean(terms, lam0)
    if sum(cores) > budget:
        return CoreAllocation(PlanStatus.INFEASIBLE, tuple(cores), latency)
    now = list(current) if current is not None else [0] * len(lam)
    heap = [_entry(j, lam[j], sojourn[j], following[j], cores[j], now[j], lam0)
            for j in range(len(lam))]
    heapq.heapify(heap)
    total = sum(cores)
    while latency > latency_target and total < budget and heap:
        neg_gain, _, j = heapq.heappop(heap)
        if -neg_gain <= 0:
            break  # no core lowers E[T] any more (in floating point)
        cores[j] += 1
        total += 1
        sojourn[j], following[j] = following[j], next(times[j])
        terms[j] = lam[j] * sojourn[j] if lam[j] > 0 else 0.0
        latency = _mean(terms, lam0)
        heapq.heappush(heap, _entry(j, lam[j], sojourn[j], following[j], cores[j], now[j],
                                    lam0))
    status = PlanStatus.OPTIMAL if latency <= latency_target else PlanStatus.INFEASIBLE
    return CoreAllocation(status, tuple(cores), latency)


def _mean(terms: list[float], lam0: float) -> float:
    """Eq. (1) from its terms ``λ_j·E[T_j](k_j)``, added as ``network_latency`` adds them.

    In executor order from 0.0, so that the result is that function's bit for bit.
    """
    total = 0.0
    for term in terms:
        total += term
    return 0.0 if lam0 == 0 else total / lam0


def _entry(j: int, lam: float, sojourn: float, following: float, cores: int, now: int,
           lam0: float) -> tuple[float, int, int]:
    """Heap entry of executor ``j``: −(gain of its next core), then the tie-breakers."""
    gain = 0.0 if lam == 0 or lam0 == 0 else lam * (sojourn - following) / lam0
    # Round the gain so that float noise does not decide a tie; surplus cores first.
    return -_tie_round(gain), -(now - cores), j


def _tie_round(gain: float) -> float:
    if gain <= 0 or not math.isfinite(gain):
        return gain
    digits = -math.floor(math.log10(gain)) + round(-math.log10(TIE_RTOL))
    return round(gain, digits)


def _validated(rates: Sequence[float], service_rates: Sequence[float], latency_target: float,
               budget: int, current: Sequence[int] | None) -> tuple[list[float], list[float]]:
    if len(rates) == 0:
        raise OptionError("rates", "must list at least one executor", list(rates))
    if len(service_rates) != len(rates):
        raise OptionError("service_rates", f"must have one entry per executor ({len(rates)})",
                          len(service_rates))
    lam, mu = [], []
    for j, (r, m) in enumerate(zip(rates, service_rates, strict=True)):
        lam.append(rules.number(f"rates[{j}]", r, unit="tuples/s"))
        mu.append(rules.number(f"service_rates[{j}]", m, above=0, unit="tuples/s per core"))
    rules.number("latency_target", latency_target, above=0, unit="seconds")
    rules.integer("budget", budget, unit="cores")
    if current is not None:
        if len(current) != len(lam):
            raise OptionError("current", f"must have one entry per executor ({len(lam)})",
                              len(current))
        for j, c in enumerate(current):
            rules.integer(f"current[{j}]", c, low=0)
    return lam, mu
