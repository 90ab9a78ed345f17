"""Tests of Enorm's split/combine cost model and decision (Madsen et al., DEBS 2016, §5.1).

Hand-derived micro cases (the arithmetic in the comments), the boundaries of §5.1.2 (a latency
threshold met exactly, one window, no moves against many), the estimate from measured periods,
and invalid terms rejected with the parameter's name.
"""

from __future__ import annotations

import doctest
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import elastream.algorithms.windows.split_combine as split_combine
from elastream.algorithms.windows.split_combine import (
    CostTerms,
    Execution,
    PeriodObservation,
    decide,
    estimate_terms,
)
from elastream.core.errors import OptionError


def terms(**changes: float) -> CostTerms:
    """A small component: 1000 tuples per period, 1 ms each, 2 windows, 10 panes, 4 key groups,
    partials of 5 ms, disruptive moves of 0.5 s, no moves unless changed."""
    base: dict[str, float] = dict(T_p=1000, E=0.001, W=2, PW_p=10, MK_p=0, K_1=0.005, L=0.5,
                                  key_groups=4)
    return CostTerms(**{**base, **changes})  # type: ignore[arg-type]


def test_module_doctests() -> None:
    result = doctest.testmod(split_combine, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 10


# --------------------------------------------------------------------------------------------
# The formulas of §5.1.1, by hand
# --------------------------------------------------------------------------------------------


def test_costs_without_moves() -> None:
    t = terms()
    # split   = T_p·E + PW_p·K_1·#kg + MK_p·K_1 = 1000·0.001 + 10·0.005·4 + 0 = 1 + 0.2 = 1.2
    # combine = T_p·W·E + MK_p·K_1·PW_p        = 1000·2·0.001 + 0         = 2
    # latency = MK_p·L = 0
    assert t.split_cpu == pytest.approx(1.2)
    assert t.combine_cpu == pytest.approx(2.0)
    assert t.split_latency == 0.0
    assert t.combine_latency == 0.0


def test_costs_with_moves() -> None:
    t = terms(MK_p=3)
    # split   = 1 + 0.2 + 3·0.005          = 1.215  (each move leaves one extra partial: K_1)
    # combine = 2 + 3·0.005·10             = 2.15   (each move carries PW_p partials: K_PW_p)
    # latency = 3·0.5                      = 1.5 s per period
    assert t.split_cpu == pytest.approx(1.215)
    assert t.combine_cpu == pytest.approx(2.15)
    assert t.combine_latency == pytest.approx(1.5)


def test_split_cheaper_is_chosen() -> None:
    # split 1.2 < combine 2.0; combine's pause 0 is within any threshold → split.
    d = decide(terms(), latency_threshold=math.inf, current="combine")
    assert d.choice is Execution.SPLIT and d.switch
    assert (d.split_cpu, d.combine_cpu) == (pytest.approx(1.2), pytest.approx(2.0))
    assert "split costs 1.2" in d.reason


def test_combine_cheaper_is_chosen() -> None:
    # Many key groups make the partials dear: split = 1 + 10·0.005·40 = 3 > combine = 2.
    d = decide(terms(key_groups=40), latency_threshold=0.0, current="split")
    assert d.choice is Execution.COMBINE and d.switch
    assert d.split_cpu == pytest.approx(3.0) and d.combine_cpu == pytest.approx(2.0)


# --------------------------------------------------------------------------------------------
# Boundaries of §5.1.2
# --------------------------------------------------------------------------------------------


def test_threshold_met_exactly_allows_combine() -> None:
    # key_groups=40, MK_p=2: split = 1 + 2 + 2·0.005 = 3.01; combine = 2 + 2·0.005·10 = 2.1;
    # pause = 2·0.5 = 1.0 s. A threshold of exactly 1.0 s admits combine; just below does not.
    t = terms(key_groups=40, MK_p=2)
    assert t.combine_latency == 1.0
    assert decide(t, latency_threshold=1.0, current="split").choice is Execution.COMBINE
    below = decide(t, latency_threshold=0.999, current="combine")
    assert below.choice is Execution.SPLIT and below.switch
    assert "above the threshold" in below.reason


def test_one_window_combine_wins_without_moves() -> None:
    # W = 1: combine = T_p·E; split = T_p·E + PW_p·K_1·#kg, more by any K_1 > 0.
    for k_1 in (1e-9, 0.005, 1.0):
        t = terms(W=1, K_1=k_1)
        assert t.combine_cpu < t.split_cpu
        assert decide(t, latency_threshold=0.0, current="split").choice is Execution.COMBINE


def test_one_window_free_partials_tie_keeps_current() -> None:
    # W = 1, K_1 = 0: both cost T_p·E = 1.0 exactly; nothing to gain, so nothing changes.
    t = terms(W=1, K_1=0.0)
    for now in Execution:
        d = decide(t, latency_threshold=0.0, current=now)
        assert d.choice is now and not d.switch and "equal CPU cost" in d.reason


def test_no_moves_against_many_moves() -> None:
    # key_groups=40 makes combine cheaper on CPU (3.0 vs 2.0 with no moves). With MK_p moves:
    #   split = 3 + MK_p·0.005, combine = 2 + MK_p·0.05, pause = MK_p·0.5 s.
    # No moves: combine (pause 0). 10 moves with a 1 s bound: pause 5 s → split.
    # 100 moves, no bound: combine = 7 > split = 3.5 → split on CPU alone.
    assert decide(terms(key_groups=40), latency_threshold=1.0,
                  current="split").choice is Execution.COMBINE
    assert decide(terms(key_groups=40, MK_p=10), latency_threshold=1.0,
                  current="combine").choice is Execution.SPLIT
    many = decide(terms(key_groups=40, MK_p=100), latency_threshold=math.inf, current="combine")
    assert many.combine_cpu == pytest.approx(7.0) and many.split_cpu == pytest.approx(3.5)
    assert many.choice is Execution.SPLIT and "split costs" in many.reason


@given(st.floats(0, 1e6), st.floats(0, 1e-2), st.integers(1, 50), st.integers(1, 100),
       st.floats(0, 1e3), st.floats(0, 1.0), st.floats(0, 10.0), st.integers(1, 1024),
       st.floats(0, 1e4))
def test_decision_is_feasible_and_cheapest(t_p: float, e: float, w: int, pw: int, mk: float,
                                           k_1: float, lat: float, kg: int,
                                           threshold: float) -> None:
    t = CostTerms(T_p=t_p, E=e, W=w, PW_p=pw, MK_p=mk, K_1=k_1, L=lat, key_groups=kg)
    d = decide(t, latency_threshold=threshold, current="split")
    if d.choice is Execution.COMBINE:
        assert t.combine_latency <= threshold and t.combine_cpu < t.split_cpu
    elif t.combine_latency <= threshold:
        assert t.split_cpu <= t.combine_cpu


# --------------------------------------------------------------------------------------------
# Estimating the terms from measured periods
# --------------------------------------------------------------------------------------------


def observation(**changes: float) -> PeriodObservation:
    base: dict[str, float] = dict(rows=1000, seconds_per_row=0.001, windows=2,
                                  panes_per_window=10, moved_key_groups=0,
                                  seconds_per_partial=0.005)
    return PeriodObservation(**{**base, **changes})  # type: ignore[arg-type]


def test_estimate_averages_periods() -> None:
    obs = [observation(rows=1000, seconds_per_row=0.001, moved_key_groups=1, move_seconds=0.2),
           observation(rows=3000, seconds_per_row=0.002, moved_key_groups=3, move_seconds=0.6,
                       seconds_per_partial=0.015)]
    t = estimate_terms(obs, key_groups=8)
    # T_p = (1000 + 3000)/2 = 2000; E = (1000·0.001 + 3000·0.002)/4000 = 7/4000 = 0.00175;
    # MK_p = (1 + 3)/2 = 2; K_1 = (0.005 + 0.015)/2 = 0.01; L = (1·0.2 + 3·0.6)/4 = 0.5.
    assert (t.T_p, t.MK_p, t.W, t.PW_p, t.key_groups) == (2000.0, 2.0, 2, 10, 8)
    estimated = (t.E, t.K_1, t.L)
    assert estimated == pytest.approx((0.00175, 0.01, 0.5))


def test_estimate_without_moves_or_rows() -> None:
    # No period moved: L = 0 (its move_seconds say nothing). No rows: E is the plain mean.
    t = estimate_terms([observation(rows=0, seconds_per_row=0.001, move_seconds=9.0),
                        observation(rows=0, seconds_per_row=0.003)], key_groups=1)
    assert (t.T_p, t.MK_p, t.L, t.E) == pytest.approx((0.0, 0.0, 0.0, 0.002))


def test_estimate_then_decide() -> None:
    # One period of the default observation is terms() with L = 0 (nothing moved):
    # split 1.2 < combine 2.0 → split.
    t = estimate_terms([observation()], key_groups=4)
    assert t == terms(L=0.0)
    d = decide(t, latency_threshold=0.0, current="split")
    assert (d.choice, d.switch) == (Execution.SPLIT, False)
    assert (d.split_cpu, d.combine_cpu, d.combine_latency) == pytest.approx((1.2, 2.0, 0.0))


# --------------------------------------------------------------------------------------------
# Invalid input: the error names the parameter and carries the value
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("change", "message"), [
    ({"W": 0}, "W must be an integer >= 1, got 0"),
    ({"W": 2.5}, "W must be an integer >= 1, got 2.5"),
    ({"PW_p": 0}, "PW_p must be an integer >= 1, got 0"),
    ({"key_groups": True}, "key_groups must be an integer >= 1, got True"),
    ({"E": -1e-3}, "E must be a finite number >= 0, got -0.001"),
    ({"T_p": math.nan}, "T_p must be a finite number >= 0, got nan"),
    ({"K_1": math.inf}, "K_1 must be a finite number >= 0, got inf"),
    ({"MK_p": -1}, "MK_p must be a finite number >= 0, got -1"),
    ({"L": "0.5"}, "L must be a finite number >= 0, got '0.5'"),
])
def test_invalid_terms(change: dict[str, object], message: str) -> None:
    with pytest.raises(OptionError) as caught:
        terms(**change)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.parametrize("threshold", [-0.1, math.nan, "1"])
def test_invalid_threshold(threshold: object) -> None:
    with pytest.raises(OptionError, match="latency_threshold must be a number of seconds"):
        decide(terms(), latency_threshold=threshold, current="split")  # type: ignore[arg-type]


def test_invalid_current() -> None:
    with pytest.raises(OptionError, match="current must be one of split, combine, got 'both'"):
        decide(terms(), latency_threshold=1.0, current="both")


@pytest.mark.parametrize(("obs", "message"), [
    ([], "observations must hold at least one period"),
    ([observation(windows=2), observation(windows=6)],
     r"windows must be the same in every observed period, got \[2, 6\]"),
    ([observation(panes_per_window=10), observation(panes_per_window=5)],
     r"panes_per_window must be the same in every observed period, got \[5, 10\]"),
])
def test_invalid_observations(obs: list[PeriodObservation], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        estimate_terms(obs, key_groups=4)


@pytest.mark.parametrize(("change", "message"), [
    ({"rows": -1}, "rows must be an integer >= 0, got -1"),
    ({"moved_key_groups": 1.5}, "moved_key_groups must be an integer >= 0, got 1.5"),
    ({"seconds_per_partial": -0.1}, "seconds_per_partial must be a finite number >= 0"),
    ({"windows": 0}, "windows must be an integer >= 1, got 0"),
])
def test_invalid_observation(change: dict[str, object], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        observation(**change)  # type: ignore[arg-type]
