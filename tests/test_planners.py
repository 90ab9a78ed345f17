"""Planner conformance suite (every registered planner) plus oracle tests for Flux.

The conformance part iterates the registry (:data:`elastream.control.planners.PLANNERS`), so a
newly registered planner runs it too, and builds every planner the way a job does, by flat
settings through the registry: plans are :class:`Plan` objects with a :class:`PlanStatus`,
feasible for the routing table they were made for, within the move budget of every planner that
takes ``max_moves``, no-ops on an already balanced assignment, deterministic under a seed, and
``RoutingTable.apply_plan`` accepts them; every flat setting reaches the options, and a setting
the planner does not take is refused. The Flux part checks hand-solved micro-cases, a
line-by-line reference implementation, and the invariants its docstring promises.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.algorithms.balance import flux
from elastream.algorithms.balance.flux import FluxOptions
from elastream.control.planners import PLANNERS, planner
from elastream.core import registry
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable

# --------------------------------------------------------------------------------------------
# The planners under test: every registered one, built by the registry
# --------------------------------------------------------------------------------------------

EXACT = {"max_nodes": 50, "time_limit": 60.0}
"""Shared settings: a node limit, not the clock, bounds each HiGHS run, so plans repeat."""

planners = pytest.mark.parametrize("name", list(PLANNERS))


def takes(name: str, setting: str) -> bool:
    return setting in registry.setting_names(PLANNERS[name].options_type)


def run(name: str, snapshot: LoadSnapshot, current: RoutingTable, budget: int = 4,
        **shared: Any) -> Plan:
    """A fresh planner ``name`` as a job builds it, with a move budget, called once."""
    plan_fn, options = planner(name, shared={"max_moves": budget, **EXACT, **shared})
    return plan_fn(snapshot, current, options=options)


# --------------------------------------------------------------------------------------------
# Random inputs
# --------------------------------------------------------------------------------------------

CAPACITIES = (0.5, 1.0, 2.0, 3.0)


@st.composite
def scenarios(
    draw: st.DrawFn, *, float_loads: bool = False
) -> tuple[LoadSnapshot, RoutingTable]:
    """A snapshot and a routing table: 1–8 slots, 1–48 key groups, skewed loads, capacities."""
    num_slots = draw(st.integers(1, 8))
    num_kgs = draw(st.integers(1, 48))
    if float_loads:
        load = st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
    else:  # integers keep every sum exact, so boundary cases (p == gap) are decided exactly
        load = st.integers(0, 20) | st.integers(0, 1000) | st.just(0)
    loads = draw(st.lists(load, min_size=num_kgs, max_size=num_kgs))
    slot_of = draw(st.lists(st.integers(0, num_slots - 1), min_size=num_kgs, max_size=num_kgs))
    capacity = draw(
        st.none()
        | st.lists(st.sampled_from(CAPACITIES), min_size=num_slots, max_size=num_slots)
    )
    snapshot = LoadSnapshot(
        batch_id=draw(st.integers(0, 10)),
        key_group_load=np.array(loads, dtype=float),
        capacity=None if capacity is None else np.array(capacity),
    )
    return snapshot, RoutingTable(draw(st.integers(0, 5)), tuple(slot_of), num_slots)


@st.composite
def balanced_scenarios(draw: st.DrawFn) -> tuple[LoadSnapshot, RoutingTable]:
    """Every slot holds the same loads scaled by its capacity: utilisations are all equal."""
    num_slots = draw(st.integers(1, 6))
    base = draw(st.lists(st.integers(0, 100), min_size=1, max_size=6))
    capacity = draw(st.lists(st.sampled_from((1, 2, 3)), min_size=num_slots, max_size=num_slots))
    loads = [b * c for c in capacity for b in base]
    slot_of = [s for s in range(num_slots) for _ in base]
    snapshot = LoadSnapshot(0, np.array(loads, dtype=float), capacity=np.array(capacity, float))
    return snapshot, RoutingTable(0, tuple(slot_of), num_slots)


def utilisation(snapshot: LoadSnapshot, table: RoutingTable) -> np.ndarray:
    return np.asarray(snapshot.slot_load(table) / snapshot.slot_capacity(table.num_slots))


def distance(snapshot: LoadSnapshot, table: RoutingTable) -> float:
    return load_distance(snapshot.slot_load(table), snapshot.slot_capacity(table.num_slots))


def as_tuples(plan: Plan) -> list[tuple[int, int, int]]:
    return [(m.key_group, m.source, m.target) for m in plan.moves]


# --------------------------------------------------------------------------------------------
# Conformance: every planner
# --------------------------------------------------------------------------------------------


@planners
@given(scenario=scenarios(), budget=st.integers(0, 6))
@settings(deadline=None)  # the milp planner runs a MILP solver
def test_plan_is_feasible_and_within_budget(
    name: str, scenario: tuple[LoadSnapshot, RoutingTable], budget: int
) -> None:
    snapshot, current = scenario
    plan = run(name, snapshot, current, budget)

    assert isinstance(plan, Plan) and isinstance(plan.status, PlanStatus)
    if takes(name, "max_moves"):
        assert len(plan.moves) <= budget
    moved = [m.key_group for m in plan.moves]
    assert len(moved) == len(set(moved)), "a key group moved twice in one plan"
    for move in plan.moves:
        assert 0 <= move.key_group < current.num_key_groups
        assert move.source == current.slot_of[move.key_group]
        assert 0 <= move.target < (plan.num_slots or current.num_slots)
        assert move.target != move.source
    if plan.changes_routing:
        assert plan.status in (PlanStatus.FEASIBLE, PlanStatus.OPTIMAL)
    else:
        assert plan.status in (PlanStatus.UNCHANGED, PlanStatus.OPTIMAL)

    after = current.apply_plan(plan)
    assert after.version == current.version + (1 if plan.changes_routing else 0)
    assert plan.objective == pytest.approx(distance(snapshot, after), rel=1e-9, abs=1e-9)


@planners
@given(scenario=balanced_scenarios(), budget=st.integers(0, 6))
@settings(deadline=None)  # the milp planner runs a MILP solver
def test_no_op_when_already_balanced(
    name: str, scenario: tuple[LoadSnapshot, RoutingTable], budget: int
) -> None:
    snapshot, current = scenario
    plan = run(name, snapshot, current, budget)
    assert plan.status is PlanStatus.UNCHANGED
    assert plan.moves == ()
    assert current.apply_plan(plan) is current
    assert plan.objective == 0.0


@planners
@given(scenario=scenarios(float_loads=True), budget=st.integers(0, 6), seed=st.integers(0, 3))
# Each example solves twice; determinism is a property of the code path, not of the input, so
# fewer examples than the feasibility tests (the MILP planners took 20 s of the suite with 100).
@settings(deadline=None, max_examples=examples(30))
def test_deterministic_under_a_seed_and_inputs_untouched(
    name: str, scenario: tuple[LoadSnapshot, RoutingTable], budget: int, seed: int
) -> None:
    snapshot, current = scenario
    loads_before = snapshot.key_group_load.copy()
    assert run(name, snapshot, current, budget, seed=seed) == \
        run(name, snapshot, current, budget, seed=seed)
    np.testing.assert_array_equal(snapshot.key_group_load, loads_before)


@planners
def test_a_subnormal_load_plans_like_no_load(name: str) -> None:
    """5e-324 rescaled to ALBIC's percent underflowed to a zero divisor (a NaN gap)."""
    snapshot, current = LoadSnapshot(0, np.array([5e-324])), RoutingTable.hashed(1, 1)
    plan = run(name, snapshot, current, 0)
    assert plan == run(name, snapshot, current, 0)
    assert all(not (isinstance(v, float) and np.isnan(v)) for v in plan.details.values())


@planners
def test_rejects_snapshot_of_another_table(name: str) -> None:
    snapshot = LoadSnapshot(0, np.ones(3))
    with pytest.raises(OptionError, match="key_group_load"):
        run(name, snapshot, RoutingTable.hashed(num_key_groups=4, num_slots=2))
    with pytest.raises(OptionError, match="capacity"):
        run(name, LoadSnapshot(0, np.ones(4), capacity=np.ones(3)),
            RoutingTable.hashed(num_key_groups=4, num_slots=2))


@planners
def test_rejects_options_of_another_planner(name: str) -> None:
    other = next(p for p in PLANNERS if p != name)
    plan_fn, _ = planner(name)
    with pytest.raises(OptionError, match="options"):
        plan_fn(LoadSnapshot(0, np.ones(4)), RoutingTable.hashed(4, 2),
                options=registry.build(PLANNERS, other, {}))


@planners
def test_every_setting_reaches_the_options(name: str) -> None:
    """Settings are flat: each one, composed options' included, lands where it belongs."""
    _, defaults = planner(name)
    for setting, value in registry.values(defaults).items():
        _, options = planner(name, **{setting: value})
        assert options == defaults, setting
    if takes(name, "seed"):
        _, seeded = planner(name, seed=7)
        assert registry.values(seeded)["seed"] == 7


@planners
def test_an_unknown_setting_is_refused(name: str) -> None:
    with pytest.raises(OptionError) as error:
        planner(name, max_move=3)  # misspelt
    assert error.value.option == "max_move" and error.value.value == 3
    assert f"is not a setting of planner {name!r} (it takes" in error.value.rule
    with pytest.raises(OptionError, match="max_movez is not a setting of any planner"):
        planner(name, shared={"max_movez": 3})


@planners
def test_shared_settings_go_where_they_are_taken(name: str) -> None:
    _, options = planner(name, shared={"max_moves": 3, "serialisation": 0.5, "seed": 2})
    taken = registry.values(options)
    for setting, value in {"max_moves": 3, "serialisation": 0.5, "seed": 2}.items():
        assert taken.get(setting, value) == value
    _, own = planner(name, shared={"max_moves": 3}, **({"max_moves": 1} if takes(
        name, "max_moves") else {}))
    assert registry.values(own).get("max_moves", 1) == 1  # the planner's own setting wins


# --------------------------------------------------------------------------------------------
# Flux: hand-solved micro-cases
# --------------------------------------------------------------------------------------------


def table(*slot_of: int, num_slots: int) -> RoutingTable:
    return RoutingTable(0, tuple(slot_of), num_slots)


def snap(*loads: float, capacity: tuple[float, ...] | None = None) -> LoadSnapshot:
    return LoadSnapshot(0, np.array(loads, dtype=float),
                        capacity=None if capacity is None else np.array(capacity, dtype=float))


def test_flux_two_slots_moves_biggest_suitable() -> None:
    # kg loads 5, 3, 2 on slot 0 (10) and 1 on slot 1 (1): gap 9, all three fit (< 9), the
    # biggest (kg0, 5) moves → 5 vs 6. Pass 2: slot 1 is heavier by 1; its only unmoved key
    # group (kg3, 1) is not < 1 → stop. Distance: |10 - 5.5| / 5.5 = 81.8% → 0.5 / 5.5 = 9.1%.
    plan = flux.plan(snap(5, 3, 2, 1), table(0, 0, 0, 1, num_slots=2))
    assert plan.status is PlanStatus.FEASIBLE
    assert as_tuples(plan) == [(0, 0, 1)]
    assert plan.details["load_distance_before"] == pytest.approx(4.5 / 5.5 * 100)
    assert plan.objective == pytest.approx(0.5 / 5.5 * 100)
    assert plan.details["passes"] == 2


def test_flux_skips_a_key_group_that_would_reverse_the_imbalance() -> None:
    # Slot 0: kg0 = 8, kg1 = 3 (11); slot 1: kg2 = 4. Gap 7: kg0 (8) would leave 3 vs 12, so it
    # is not suitable; kg1 (3) is → 8 vs 7. Pass 2: gap 1, nothing < 1 on slot 0 → stop.
    plan = flux.plan(snap(8, 3, 4), table(0, 0, 1, num_slots=2))
    assert as_tuples(plan) == [(1, 0, 1)]


def test_flux_a_move_equal_to_the_gap_is_not_suitable() -> None:
    # Slot 0 holds kg0 = 4 and kg2 = 4 (8), slot 1 holds kg1 = 4 (4). Gap 4: a move of 4 would
    # only swap the slots' loads (4 vs 8), so no key group is suitable (the rule is strict).
    plan = flux.plan(snap(4, 4, 4), table(0, 1, 0, num_slots=2))
    assert plan.status is PlanStatus.UNCHANGED
    assert plan.moves == ()


def test_flux_four_slots_pairs_first_with_last_and_second_with_third() -> None:
    # kg: 0=7, 1=5 on slot 0 (12); 2=6, 3=3 on slot 1 (9); 4=4 on slot 2 (4); 5=1 on slot 3 (1).
    # Pass 1, order 0,1,2,3: pair (0,3) gap 11 → kg0 (7) moves → 5 | 8;
    #                        pair (1,2) gap 5 → kg2 (6) too big, kg3 (3) moves → 6 | 7.
    # Loads 5, 6, 7, 8. Pass 2, order 3,2,1,0: pair (3,0) gap 3 → kg0 already moved, kg5 (1)
    #                        moves → 7 | 6; pair (2,1) gap 1 → kg4 (4) too big.
    # Loads 6, 6, 7, 7. Pass 3, order 2,3,0,1: pair (2,1) gap 1, pair (3,0) gap 1 → nothing.
    plan = flux.plan(snap(7, 5, 6, 3, 4, 1), table(0, 0, 1, 1, 2, 3, num_slots=4))
    assert as_tuples(plan) == [(0, 0, 3), (3, 1, 2), (5, 3, 0)]
    assert plan.details["passes"] == 3
    # Mean 6.5: distance 5.5/6.5 → 0.5/6.5.
    assert plan.details["load_distance_before"] == pytest.approx(5.5 / 6.5 * 100)
    assert plan.objective == pytest.approx(0.5 / 6.5 * 100)

    # The budget truncates the same sequence.
    capped = flux.plan(snap(7, 5, 6, 3, 4, 1), table(0, 0, 1, 1, 2, 3, num_slots=4),
                       options=FluxOptions(max_moves=2))
    assert as_tuples(capped) == [(0, 0, 3), (3, 1, 2)]


def test_flux_ties_broken_by_slot_id_and_key_group_id() -> None:
    # Slot 0: kg0 = 2, kg1 = 3 (5); slot 1: kg2 = 2, kg3 = 3 (5); slot 2: empty (0).
    # Pass 1: slots 0 and 1 tie at 5 → slot 0 first; pair (0,2) gap 5 → kg1 (3) → 2 | 5 | 3;
    #         slot 1 is the odd one out. Pass 2, order 1,2,0: pair (1,0) gap 3 → kg3 (3) not
    #         < 3, kg2 (2) moves → 4 | 3 | 3. Pass 3, order 0,1,2 (1 and 2 tie): pair (0,2)
    #         gap 1, slot 0 holds kg0 (2) and the moved kg2 → nothing.
    plan = flux.plan(snap(2, 3, 2, 3), table(0, 0, 1, 1, num_slots=3))
    assert as_tuples(plan) == [(1, 0, 2), (2, 1, 0)]
    # Equal loads on one slot: the lower key-group id moves. Slot 0: kg2 = 3, kg5 = 3; gap 6.
    plan = flux.plan(snap(0, 0, 3, 0, 0, 3), table(1, 1, 0, 1, 1, 0, num_slots=2))
    assert as_tuples(plan) == [(2, 0, 1)]


def test_flux_moves_a_key_group_at_most_once_per_plan() -> None:
    # kg0 = 3 on slot 0; kg4 = 1 on slot 1; kg1 = 5, kg2 = 4, kg3 = 8 on slot 2 → 3 | 1 | 17.
    # Pass 1, order 2,0,1: pair (2,1) gap 16 → kg3 (8) → 3 | 9 | 9.
    # Pass 2, order 1,2,0: pair (1,0) gap 6 → kg3 moved, kg4 (1) → 4 | 8 | 9.
    # Pass 3, order 2,1,0: pair (2,0) gap 5 → kg1 (5) not < 5, kg2 (4) → 8 | 8 | 5.
    # Pass 4, order 0,1,2: pair (0,2) gap 3 → kg0 (3) not < 3; kg4 (1) and kg2 would fit but
    #         already moved in this plan → stop. (Moving kg4 again would be a fourth move.)
    plan = flux.plan(snap(3, 5, 4, 8, 1), table(0, 2, 2, 2, 1, num_slots=3),
                     options=FluxOptions(max_moves=10))
    assert as_tuples(plan) == [(3, 2, 1), (4, 1, 0), (2, 2, 0)]


def test_flux_cannot_split_a_single_hot_key_group() -> None:
    # Slot 0: kg0 = 10 and an idle kg2 = 0; slot 1: nothing. Moving kg0 reverses the gap and
    # moving a zero load changes nothing → unchanged.
    plan = flux.plan(snap(10, 0, 0), table(0, 1, 0, num_slots=2), options=FluxOptions(9))
    assert plan.status is PlanStatus.UNCHANGED
    assert plan.objective == pytest.approx(100.0)


def test_flux_compares_utilisation_under_capacities() -> None:
    # Slot 0 (capacity 2): kg0 = 3, kg1 = 3, kg2 = 4 → u = 10/2 = 5; slot 1 (capacity 1):
    # kg3 = 1 → u = 1. Gap 4, limit 4 · min(2, 1) = 4: kg2 (4) would put slot 1 at u = 5, not
    # below 5, so only the 3s fit; kg0 (lower id) moves → u = 3.5 | 4. Pass 2: slot 1 is
    # heavier by 0.5, limit 0.5 · 1; kg3 (1) is too big → stop. Max utilisation 5 → 4.
    plan = flux.plan(snap(3, 3, 4, 1, capacity=(2, 1)), table(0, 0, 0, 1, num_slots=2))
    assert as_tuples(plan) == [(0, 0, 1)]
    assert plan.details["max_utilisation_before"] == 5.0
    assert plan.details["max_utilisation_after"] == 4.0
    # Raw loads (10 vs 1) would call for more; utilisation (5 vs 1) is what Flux compares:
    # with capacity (10, 1) slot 0 is at u = 1 and slot 1 at u = 1 → balanced.
    plan = flux.plan(snap(3, 3, 4, 1, capacity=(10, 1)), table(0, 0, 0, 1, num_slots=2))
    assert plan.status is PlanStatus.UNCHANGED


def test_flux_min_imbalance_threshold() -> None:
    # Slot 0: kg0 = 10, kg2 = 2.5 (12.5); slot 1: kg1 = 7.5, kg3 = 0 (7.5). Mean 10, so
    # max/mean - 1 = 0.25 exactly: a threshold above it plans nothing, one at or below it acts.
    scenario = (snap(10, 7.5, 2.5, 0), RoutingTable.hashed(num_key_groups=4, num_slots=2))
    assert flux.plan(*scenario, options=FluxOptions(min_imbalance=0.3)).moves == ()
    assert flux.plan(*scenario, options=FluxOptions(min_imbalance=0.25)).moves != ()
    # Gap 5: kg0 (10) does not fit, kg2 (2.5) does → 10 | 10.
    plan = flux.plan(*scenario, options=FluxOptions(min_imbalance=0.05))
    assert as_tuples(plan) == [(2, 0, 1)]
    assert plan.objective == 0.0


def test_flux_zero_budget_and_zero_load() -> None:
    assert flux.plan(snap(5, 0), table(0, 0, num_slots=2),
                     options=FluxOptions(max_moves=0)).status is PlanStatus.UNCHANGED
    plan = flux.plan(snap(0, 0, 0), table(0, 1, 0, num_slots=2))
    assert plan.status is PlanStatus.UNCHANGED
    assert plan.objective == 0.0


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"max_moves": -1}, "max_moves"),
        ({"max_moves": 2.5}, "max_moves"),
        ({"max_moves": True}, "max_moves"),
        ({"min_imbalance": -0.1}, "min_imbalance"),
        ({"min_imbalance": float("nan")}, "min_imbalance"),
        ({"min_imbalance": float("inf")}, "min_imbalance"),
    ],
)
def test_flux_options_validated(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(OptionError, match=option):
        FluxOptions(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("snapshot", "message"),
    [
        (snap(1, -1), "non-negative"),
        (snap(1, float("nan")), "finite"),
        (snap(1, 1, capacity=(1, 0)), "positive"),
    ],
)
def test_flux_rejects_bad_snapshots(snapshot: LoadSnapshot, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        flux.plan(snapshot, table(0, 1, num_slots=2))


# --------------------------------------------------------------------------------------------
# Flux: reference implementation and invariants
# --------------------------------------------------------------------------------------------


def reference_flux(
    loads: list[float], slot_of: list[int], capacity: list[float], max_moves: int,
    min_imbalance: float,
) -> list[tuple[int, int, int]]:
    """Flux as the docstring states it, one plain loop at a time (no numpy)."""
    slots = range(len(capacity))
    slot_of = list(slot_of)
    moved: set[int] = set()
    moves: list[tuple[int, int, int]] = []
    while len(moves) < max_moves:
        load = [0.0 for _ in slots]
        for kg, s in enumerate(slot_of):
            load[s] += loads[kg]
        util = [load[s] / capacity[s] for s in slots]
        mean = sum(load) / sum(capacity)
        if (max(util) / mean - 1 if sum(load) > 0 else 0.0) < min_imbalance:
            break
        order = sorted(slots, key=lambda s: (-util[s], s))
        progress = False
        for i in range(len(order) // 2):
            if len(moves) == max_moves:
                break
            heavy, light = order[i], order[-1 - i]
            limit = (util[heavy] - util[light]) * min(capacity[heavy], capacity[light])
            fits = [kg for kg, s in enumerate(slot_of)
                    if s == heavy and kg not in moved and 0 < loads[kg] < limit]
            if fits:
                kg = max(fits, key=lambda k: (loads[k], -k))
                moves.append((kg, heavy, light))
                slot_of[kg] = light
                moved.add(kg)
                progress = True
        if not progress:
            break
    return moves


@given(scenario=scenarios(), budget=st.integers(0, 12),
       min_imbalance=st.sampled_from((0.0, 0.05, 0.2, 1.0)))
def test_flux_matches_reference(
    scenario: tuple[LoadSnapshot, RoutingTable], budget: int, min_imbalance: float
) -> None:
    snapshot, current = scenario
    options = FluxOptions(max_moves=budget, min_imbalance=min_imbalance)
    expected = reference_flux(
        snapshot.key_group_load.tolist(), list(current.slot_of),
        snapshot.slot_capacity(current.num_slots).tolist(), budget, min_imbalance,
    )
    assert as_tuples(flux.plan(snapshot, current, options=options)) == expected


@given(scenario=scenarios() | scenarios(float_loads=True), budget=st.integers(0, 12))
@settings(max_examples=examples(200))
def test_flux_never_worsens_max_utilisation_or_load_distance(
    scenario: tuple[LoadSnapshot, RoutingTable], budget: int
) -> None:
    snapshot, current = scenario
    after = current.apply_plan(flux.plan(snapshot, current, options=FluxOptions(budget)))
    before_u, after_u = utilisation(snapshot, current), utilisation(snapshot, after)
    tol = 1e-9 * max(1.0, float(before_u.max()))
    assert after_u.max() <= before_u.max() + tol
    assert after_u.min() >= before_u.min() - tol
    assert distance(snapshot, after) <= distance(snapshot, current) + 1e-9


@given(scenario=scenarios(), budget=st.integers(0, 8))
def test_flux_budget_truncates_the_unbounded_plan(
    scenario: tuple[LoadSnapshot, RoutingTable], budget: int
) -> None:
    snapshot, current = scenario
    full = flux.plan(snapshot, current, options=FluxOptions(max_moves=current.num_key_groups))
    capped = flux.plan(snapshot, current, options=FluxOptions(max_moves=budget))
    assert capped.moves == full.moves[:budget]


@given(scenario=scenarios())
def test_flux_unbounded_plan_is_a_fixpoint(scenario: tuple[LoadSnapshot, RoutingTable]) -> None:
    # With an unlimited budget Flux stops only when no pair has a suitable key group left; a
    # fresh plan on the result may only move key groups the first plan had already moved.
    snapshot, current = scenario
    full = flux.plan(snapshot, current, options=FluxOptions(max_moves=current.num_key_groups))
    again = flux.plan(snapshot, current.apply_plan(full),
                      options=FluxOptions(max_moves=current.num_key_groups))
    moved = {m.key_group for m in full.moves}
    assert all(m.key_group in moved for m in again.moves[:1])


def test_flux_moves_are_move_objects() -> None:
    plan = flux.plan(snap(5, 3, 2, 1), table(0, 0, 0, 1, num_slots=2))
    assert plan.moves == (Move(key_group=0, source=0, target=1),)
