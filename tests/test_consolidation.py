"""Tests of Enorm's consolidation planner (Madsen et al., DEBS 2016, §6.1, Figs. 7–8).

Fig. 7's numbers, a table of hand-derived recipes, and properties for random window sets: every
recipe tiles its window with parts that exist (panes, or instances of shorter requested windows
that start at that point), and has the fewest parts — checked against an exhaustive search.
"""

from __future__ import annotations

import functools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.algorithms.windows.consolidation import (
    ConsolidationPlan,
    Part,
    Recipe,
    naive_merges,
    plan_consolidation,
)
from elastream.core.windows import WindowSpec, pane_ms

M = 60_000
HOUR = 3_600_000


def specs(*texts: str) -> list[WindowSpec]:
    return [WindowSpec.parse(t) for t in texts]


# --------------------------------------------------------------------------------------------
# Fig. 7 and hand-derived recipes
# --------------------------------------------------------------------------------------------


def test_fig7_merges_per_hour() -> None:
    """Windows 5, 10, 15, 20 min over 1-min panes: 86 merges per hour instead of 240.

    Per hour: 12 five-minute windows × 5 panes = 60; 6 ten-minute windows × 2 five-minute
    windows = 12; 4 fifteen-minute windows × 2 parts (10 + 5, or 5 + 10) = 8; 3 twenty-minute
    windows × 2 ten-minute windows = 6. Total 86. Naive: 60 × (5 + 10 + 15 + 20) / 5... i.e.
    12·5 + 6·10 + 4·15 + 3·20 = 240.
    """
    fig7 = specs("5m", "10m", "15m", "20m")
    plan = plan_consolidation(fig7, pane=M)
    assert plan.merges(horizon_ms=HOUR) == 86
    assert naive_merges(fig7, HOUR, pane=M) == 240
    # With the default pane (the gcd, 5 minutes) the 5-minute windows are single panes.
    assert plan_consolidation(fig7).merges(HOUR) == 12 * 1 + 6 * 2 + 4 * 2 + 3 * 2
    assert naive_merges(fig7, HOUR) == 12 * 1 + 6 * 2 + 4 * 3 + 3 * 4


@pytest.mark.parametrize(
    ("window", "start_min", "parts_min"),
    [
        ("5m", 0, [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]),
        ("10m", 0, [(0, 5), (5, 5)]),
        ("10m", 10, [(0, 5), (5, 5)]),
        ("15m", 0, [(0, 10), (10, 5)]),  # a 10-minute window starts at 0
        ("15m", 15, [(0, 5), (5, 10)]),  # at 15 only a 5-minute one; at 20 a 10-minute one
        ("15m", 30, [(0, 10), (10, 5)]),
        ("20m", 0, [(0, 15), (15, 5)]),  # ties: longer parts first (15 + 5 before 10 + 10)
        ("20m", 20, [(0, 10), (10, 10)]),  # no 15-minute window starts at 20 (or 35)
        ("20m", 40, [(0, 10), (10, 10)]),
    ],
)
def test_fig7_recipes(window: str, start_min: int, parts_min: list[tuple[int, int]]) -> None:
    plan = plan_consolidation(specs("5m", "10m", "15m", "20m"), pane=M)
    recipe = plan.recipe_for(WindowSpec.parse(window), start_ms=start_min * M)
    assert recipe.parts == tuple(Part(o * M, n * M) for o, n in parts_min)


def test_fig7_plan_shape() -> None:
    plan = plan_consolidation(specs("20m", "5m", "15m", "10m", "5m"), pane=M)
    assert plan.specs == tuple(specs("5m", "10m", "15m", "20m"))
    assert plan.pane_ms == M
    assert plan.period_ms == 60 * M  # lcm(5, 10, 15, 20) minutes
    assert [len(plan.recipes_of(s)) for s in plan.specs] == [12, 6, 4, 3]


def test_hopping_window_reuses_tumbling_windows() -> None:
    # 6h/1h over 1h panes with a 2h tumbling window: 2h instances start at even hours.
    plan = plan_consolidation(specs("2h", "6h/1h"))
    hop = WindowSpec.parse("6h/1h")
    h = HOUR
    assert plan.recipe_for(hop, 0).parts == (Part(0, 2 * h), Part(2 * h, 2 * h), Part(4 * h, 2 * h))
    assert plan.recipe_for(hop, h).parts == (
        Part(0, h), Part(h, 2 * h), Part(3 * h, 2 * h), Part(5 * h, h))
    assert plan.recipe_for(hop, -h).parts == plan.recipe_for(hop, h).parts


def test_length_not_a_multiple_of_slide() -> None:
    # 5m/2m over 1m panes, with a 2m tumbling window: instances start at even minutes, and so do
    # the 2m windows, so every 5m/2m instance is 2 + 2 + 1.
    plan = plan_consolidation(specs("2m", "5m/2m"))
    assert plan.pane_ms == M and plan.period_ms == 2 * M
    (recipe,) = plan.recipes_of(WindowSpec.parse("5m/2m"))
    assert recipe.parts == (Part(0, 2 * M), Part(2 * M, 2 * M), Part(4 * M, M))


def test_recipes_use_only_strictly_shorter_specs() -> None:
    # Same length, different slides: neither builds the other.
    plan = plan_consolidation(specs("4m", "4m/2m"))
    for recipe in plan.recipes:
        assert all(p.length_ms == plan.pane_ms for p in recipe.parts)


@pytest.mark.parametrize("pane", [0, -M, 7 * M, 2 * M])
def test_pane_must_divide_the_gcd(pane: int) -> None:
    with pytest.raises(ValueError, match=f"got {pane}"):
        plan_consolidation(specs("5m", "15m"), pane=pane)  # gcd 5 minutes
    with pytest.raises(ValueError, match=f"got {pane}"):
        naive_merges(specs("5m", "15m"), HOUR, pane=pane)


def test_single_spec_is_naive() -> None:
    only = specs("6h/1h")
    plan = plan_consolidation(only)
    assert plan.merges(24 * HOUR) == naive_merges(only, 24 * HOUR) == 24 * 6


# --------------------------------------------------------------------------------------------
# Properties on random window sets
# --------------------------------------------------------------------------------------------


@st.composite
def window_sets(draw: st.DrawFn) -> tuple[list[WindowSpec], int]:
    """1–4 specs whose lengths and slides are multiples of a unit, and a pane dividing the gcd.

    Slides come from a small set so the period (their lcm) and the number of phases stay small.
    Lengths need not be multiples of slides.
    """
    unit = draw(st.sampled_from([1, 1000, 60_000]))
    out = []
    for _ in range(draw(st.integers(1, 4))):
        slide = draw(st.sampled_from([1, 2, 3, 4, 6, 8]))
        length = draw(st.integers(slide, 12))
        out.append(WindowSpec(length * unit, slide * unit))
    gcd = pane_ms(out)
    divisors = [d for d in range(1, gcd // unit + 1) if (gcd // unit) % d == 0]
    pane = draw(st.sampled_from(divisors)) * unit
    return out, pane


def _fewest_parts_exhaustive(
    length: int, phase: int, pane: int, shorter: list[WindowSpec]
) -> int:
    """Minimum parts tiling [0, length): recursion over every choice of next part (memoised)."""

    @functools.cache
    def best(at: int) -> float:
        if at == length:
            return 0
        options = [pane] + [s.length_ms for s in shorter if (phase + at) % s.slide_ms == 0]
        return min((1 + best(at + n) for n in options if at + n <= length), default=math.inf)

    return int(best(0))


def _check_recipe(plan: ConsolidationPlan, recipe: Recipe) -> None:
    spec = recipe.spec
    shorter = [s for s in plan.specs if s.length_ms < spec.length_ms]
    # Tiling: contiguous from 0 to the length.
    at = 0
    for part in recipe.parts:
        assert part.offset_ms == at, recipe
        assert part.length_ms > 0
        at += part.length_ms
    assert at == spec.length_ms, recipe
    # Every part exists: a pane, or an instance of a shorter spec starting right there.
    for part in recipe.parts:
        if part.length_ms == plan.pane_ms:
            continue
        assert any(s.length_ms == part.length_ms and (recipe.phase_ms + part.offset_ms)
                   % s.slide_ms == 0 for s in shorter), (recipe, part)
    # Fewest parts.
    assert len(recipe.parts) == _fewest_parts_exhaustive(
        spec.length_ms, recipe.phase_ms, plan.pane_ms, shorter), recipe


@settings(max_examples=examples(150), deadline=None)
@given(window_sets())
def test_recipes_tile_with_existing_parts_and_are_minimal(
    case: tuple[list[WindowSpec], int],
) -> None:
    windows, pane = case
    plan = plan_consolidation(windows, pane=pane)
    assert plan.pane_ms == pane
    assert plan.specs == tuple(sorted(set(windows)))
    assert plan.period_ms == math.lcm(*(w.slide_ms for w in windows))
    for spec in plan.specs:
        phases = [r.phase_ms for r in plan.recipes_of(spec)]
        assert phases == list(range(0, plan.period_ms, spec.slide_ms))
    for recipe in plan.recipes:
        _check_recipe(plan, recipe)


@settings(max_examples=examples(100), deadline=None)
@given(window_sets(), st.integers(-50, 50))
def test_recipe_for_any_start_is_valid_at_that_start(
    case: tuple[list[WindowSpec], int], k: int
) -> None:
    windows, pane = case
    plan = plan_consolidation(windows, pane=pane)
    for spec in plan.specs:
        start = k * spec.slide_ms
        recipe = plan.recipe_for(spec, start)
        assert recipe.spec == spec
        for part in recipe.parts:
            if part.length_ms == plan.pane_ms:
                continue
            # An instance of some shorter spec starts at start + offset (absolute time).
            assert any(s.length_ms == part.length_ms and (start + part.offset_ms) % s.slide_ms == 0
                       for s in plan.specs if s.length_ms < spec.length_ms)


@settings(max_examples=examples(100), deadline=None)
@given(window_sets(), st.integers(1, 30))
def test_merges_never_exceed_naive(case: tuple[list[WindowSpec], int], periods: int) -> None:
    windows, pane = case
    plan = plan_consolidation(windows, pane=pane)
    horizon = periods * plan.period_ms
    merges = plan.merges(horizon)
    naive = naive_merges(windows, horizon, pane=pane)
    assert merges <= naive
    # Whole periods: each phase's recipe is used the same number of times.
    expected = sum(len(r.parts) * (horizon // plan.period_ms) for r in plan.recipes)
    assert merges == expected
    if len(plan.specs) == 1:
        assert merges == naive
