"""The ``milp`` planner (ALBIC §4.3.1): brute-force oracle, invariants, scale-in, limits, options.

The conformance checks every planner passes are in ``test_planners.py``. Here: on tiny instances
the MILP's d equals an exhaustive search over every assignment within the budget; every plan
respects the budgets, the state limit and B; B empties as the budget allows (Lemmas 1–2); the
time-out and solver-failure paths return a plan with the right status; options are validated.
"""

from __future__ import annotations

import itertools
import math

import highspy
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.algorithms.balance import flux, milp
from elastream.algorithms.balance.milp import MilpOptions
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Plan, PlanStatus
from elastream.core.routing import RoutingTable

# Reproducible runs: HiGHS bounded by nodes, not by the clock.
EXACT = {"max_nodes": 100_000, "time_limit": 60.0}


def paper_distance(load: np.ndarray, capacity: np.ndarray, assign: np.ndarray,
                   removed: np.ndarray) -> np.ndarray:
    """ALBIC's d (%) of each row of ``assign``: upwards over N, downwards over A, mean over A."""
    util = np.stack([np.bincount(a, weights=load, minlength=capacity.size) for a in assign])
    util = util / capacity
    mean = load.sum() / capacity[~removed].sum()
    if mean <= 0:
        return np.zeros(len(assign))
    up = np.max(util - mean, axis=1)
    low = np.max(mean - util[:, ~removed], axis=1)
    return np.maximum(np.maximum(up, low), 0.0) / mean * 100


def drain_first_distance(load: np.ndarray, capacity: np.ndarray, origin: np.ndarray,
                         removed: np.ndarray, assign: np.ndarray) -> float:
    """The least d among the rows of ``assign`` that leave the least on B (drain first).

    What stays on B counts ``Σ (load_k + 0.01)`` over its key groups, loads in percent of the
    mean of A (the planner's units); with nothing on B every row ties and this is the least d.
    """
    mean = load.sum() / capacity[~removed].sum()
    rescaled = load / (mean / 100) if mean > 0 else load
    stays = (assign == origin) & removed[origin]
    drain = (stays * (rescaled + 0.01)).sum(axis=1)
    best = assign[drain <= drain.min() + 1e-7]
    return float(paper_distance(load, capacity, best, removed).min())


def brute_force(load: np.ndarray, capacity: np.ndarray, origin: np.ndarray, removed: np.ndarray,
                *, max_moves: float, cost: np.ndarray, max_cost: float,
                state: np.ndarray, state_limit: np.ndarray | None) -> float:
    """The least d over all S^G assignments within the budgets, B and the state limits that
    drain B the most (:func:`drain_first_distance`)."""
    every = np.array(list(itertools.product(range(capacity.size), repeat=load.size)))
    moved = every != origin
    ok = (moved.sum(axis=1) <= max_moves) & ((moved * cost).sum(axis=1) <= max_cost + 1e-9)
    ok &= ~np.any(moved & removed[every], axis=1)
    if state_limit is not None:
        held = np.stack([np.bincount(a, weights=state, minlength=capacity.size) for a in every])
        ok &= np.all(held <= state_limit + 1e-9, axis=1)
    return drain_first_distance(load, capacity, origin, removed, every[ok])


def assignment(current: RoutingTable, plan: Plan) -> np.ndarray:
    return current.apply_plan(plan).as_array()


@st.composite
def tiny(draw: st.DrawFn) -> dict[str, object]:
    """2–3 slots, 1–6 key groups, integer loads, optional capacities, B, cost budget, memory."""
    num_slots = draw(st.integers(2, 3))
    num_kgs = draw(st.integers(1, 6))
    ints = st.lists(st.integers(0, 20), min_size=num_kgs, max_size=num_kgs)
    return {
        "load": np.array(draw(ints), dtype=float),
        "origin": np.array(draw(st.lists(st.integers(0, num_slots - 1), min_size=num_kgs,
                                         max_size=num_kgs))),
        "capacity": np.array(draw(st.lists(st.sampled_from((1.0, 2.0, 3.0)),
                                           min_size=num_slots, max_size=num_slots))),
        "state": np.array(draw(st.lists(st.integers(0, 5), min_size=num_kgs,
                                        max_size=num_kgs)), dtype=float),
        "remove": draw(st.sets(st.integers(0, num_slots - 1), max_size=1)),
        "max_moves": draw(st.integers(0, 3)),
        "max_cost": draw(st.none() | st.integers(0, 8).map(float)),
        "state_cap": draw(st.none() | st.integers(3, 12).map(float)),
    }


def solve_tiny(case: dict[str, object], **extra: object) -> tuple[Plan, RoutingTable]:
    origin = np.asarray(case["origin"])
    capacity = np.asarray(case["capacity"])
    snapshot = LoadSnapshot(0, np.asarray(case["load"]), capacity=capacity,
                            state_size=np.asarray(case["state"]))
    current = RoutingTable(0, tuple(int(s) for s in origin), capacity.size)
    options = MilpOptions(max_moves=case["max_moves"],  # type: ignore[arg-type]
                          max_migration_cost=case["max_cost"],  # type: ignore[arg-type]
                          remove=frozenset(case["remove"]),  # type: ignore[arg-type]
                          max_state_per_slot=case["state_cap"],  # type: ignore[arg-type]
                          **EXACT, **extra)  # type: ignore[arg-type]
    return milp.plan(snapshot, current, options=options), current


# --------------------------------------------------------------------------------------------
# Oracle: brute force
# --------------------------------------------------------------------------------------------


@given(case=tiny())
@example(case={  # Flux's start moves kgs 4, 5 off B; the optimum keeps 4 home and moves 2
    "load": np.array([0.0, 0, 2, 0, 1, 3]), "origin": np.zeros(6, dtype=int),
    "capacity": np.ones(2), "state": np.array([0.0, 0, 2, 0, 0, 0]), "remove": {0},
    "max_moves": 2, "max_cost": 2.0, "state_cap": None,
})
@settings(max_examples=examples(100), deadline=None)
def test_load_distance_equals_brute_force(case: dict[str, object]) -> None:
    plan, current = solve_tiny(case)
    load, capacity = np.asarray(case["load"]), np.asarray(case["capacity"])
    origin, state = np.asarray(case["origin"]), np.asarray(case["state"])
    removed = np.isin(np.arange(capacity.size), list(case["remove"]))  # type: ignore[call-overload]
    limit = None
    if case["state_cap"] is not None:
        held = np.bincount(origin, weights=state, minlength=capacity.size)
        limit = np.maximum(held, float(case["state_cap"]))  # type: ignore[arg-type]
    use_cost = case["max_cost"] is not None
    best = brute_force(
        load, capacity, origin, removed, max_moves=float(case["max_moves"]),  # type: ignore[arg-type]
        cost=state if use_cost else np.ones(load.size),
        max_cost=float(case["max_cost"]) if use_cost else math.inf,  # type: ignore[arg-type]
        state=state, state_limit=limit,
    )
    got = paper_distance(load, capacity, assignment(current, plan)[None, :], removed)[0]
    assert got == pytest.approx(best, abs=1e-6)
    assert plan.objective == pytest.approx(got, abs=1e-9)
    assert plan.details["bound"] <= best + 1e-6  # the lower bound is valid
    if plan.moves:
        assert plan.status is PlanStatus.OPTIMAL  # the whole program, proved optimal


def test_hand_solved_three_slots() -> None:
    # Slots hold 24 | 3 | 8 (mean 35/3 ≈ 11.67). Two moves: kg0 (9) 0→1 gives 15 | 12 | 8, and
    # kg3 (1) 1→2 gives 15 | 11 | 9: d = (15 − 11.67)/11.67 = 28.6% (brute force: the best).
    # Flux moves kg0 only — slot 0 then holds 8 and 7, neither below the gap 15 − 8 — and
    # stops at 15 | 12 | 8: d = (11.67 − 8)/11.67 = 31.4%.
    snapshot = LoadSnapshot(0, np.array([9.0, 8, 7, 1, 1, 1, 3, 3, 2]))
    current = RoutingTable(0, (0, 0, 0, 1, 1, 1, 2, 2, 2), 3)
    plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=2, **EXACT))
    assert plan.status is PlanStatus.OPTIMAL
    assert plan.objective == pytest.approx(10 / 35 * 100)
    assert plan.details["flux_load_distance"] == pytest.approx(
        flux.plan(snapshot, current, options=flux.FluxOptions(max_moves=2)).objective)
    assert plan.objective < plan.details["flux_load_distance"]
    assert plan.details["gap"] == pytest.approx(0.0, abs=1e-3)


def test_heterogeneous_capacity_balances_utilisation() -> None:
    # Capacities 2 and 1; loads 4, 2, 2, 1, 1 all on slot 0: u = 5 | 0, mean 10/3. One move:
    # kg0 (4) → u = 3 | 4, d = 20%. Two moves: a 2 and a 1 → u = 3.5 | 3, d = 10%.
    load = np.array([4.0, 2, 2, 1, 1])
    capacity = np.array([2.0, 1.0])
    origin = np.zeros(5, dtype=int)
    current = RoutingTable(0, (0, 0, 0, 0, 0), 2)
    for budget, expected in ((1, 20.0), (2, 10.0)):
        plan = milp.plan(LoadSnapshot(0, load, capacity=capacity), current,
                         options=MilpOptions(max_moves=budget, **EXACT))
        best = brute_force(load, capacity, origin, np.zeros(2, bool), max_moves=budget,
                           cost=np.ones(5), max_cost=math.inf, state=np.zeros(5),
                           state_limit=None)
        assert plan.objective == pytest.approx(best) == pytest.approx(expected)
        after = current.apply_plan(plan)
        assert plan.objective == pytest.approx(load_distance(
            LoadSnapshot(0, load).slot_load(after), capacity))


# --------------------------------------------------------------------------------------------
# Invariants
# --------------------------------------------------------------------------------------------


@st.composite
def instances(draw: st.DrawFn) -> tuple[LoadSnapshot, RoutingTable, MilpOptions]:
    """Up to 6 slots and 30 key groups, with B, costs and state limits drawn at random."""
    num_slots = draw(st.integers(2, 6))
    num_kgs = draw(st.integers(1, 30))
    loads = draw(st.lists(st.integers(0, 100), min_size=num_kgs, max_size=num_kgs))
    state = draw(st.lists(st.integers(0, 9), min_size=num_kgs, max_size=num_kgs))
    slot_of = draw(st.lists(st.integers(0, num_slots - 1), min_size=num_kgs, max_size=num_kgs))
    options = MilpOptions(
        max_moves=draw(st.none() | st.integers(0, 6)),
        max_migration_cost=draw(st.none() | st.integers(0, 20).map(float)),
        alpha=draw(st.sampled_from((0.5, 1.0, 2.0))),
        remove=frozenset(draw(st.sets(st.integers(0, num_slots - 1), max_size=num_slots - 1))),
        max_state_per_slot=draw(st.none() | st.integers(5, 40).map(float)),
        max_nodes=20, time_limit=60.0,
    )
    snapshot = LoadSnapshot(0, np.array(loads, dtype=float), state_size=np.array(state, float),
                            capacity=np.array(draw(st.lists(st.sampled_from((1.0, 2.0)),
                                                            min_size=num_slots,
                                                            max_size=num_slots))))
    return snapshot, RoutingTable(0, tuple(slot_of), num_slots), options


@given(instance=instances())
@settings(max_examples=examples(40), deadline=None)
def test_plans_respect_budget_b_and_state_limit(
    instance: tuple[LoadSnapshot, RoutingTable, MilpOptions],
) -> None:
    snapshot, current, options = instance
    plan = milp.plan(snapshot, current, options=options)
    moved = [m.key_group for m in plan.moves]
    assert len(moved) == len(set(moved)), "a key group moved twice"
    assert all(m.source == current.slot_of[m.key_group] != m.target for m in plan.moves)
    after = current.apply_plan(plan).as_array()  # every key group on exactly one slot
    assert after.shape == (current.num_key_groups,)
    if options.max_moves is not None:
        assert len(plan.moves) <= options.max_moves
    state = np.asarray(snapshot.state_size)
    if options.max_migration_cost is not None:
        assert options.alpha * state[moved].sum() <= options.max_migration_cost + 1e-9
    assert not any(m.target in options.remove for m in plan.moves)
    if options.max_state_per_slot is not None:
        held = np.bincount(current.as_array(), weights=state, minlength=current.num_slots)
        now = np.bincount(after, weights=state, minlength=current.num_slots)
        assert np.all(now <= np.maximum(held, options.max_state_per_slot) + 1e-9)
    # With nothing on B, never worse than Flux's plan (at the same budget, its infeasible moves
    # dropped). Otherwise draining B comes first and may cost d.
    if not np.isin(current.as_array(), list(options.remove)).any():
        assert plan.objective <= plan.details["flux_load_distance"] + 1e-9
        assert plan.objective <= plan.details["load_distance_before"] + 1e-9


def test_never_worse_than_flux_on_an_albic_instance() -> None:
    snapshot, current = albic_instance(nodes=20, key_groups=400, varies=20.0, seed=1)
    for budget in (10, 20):
        base = flux.plan(snapshot, current, options=flux.FluxOptions(max_moves=budget))
        plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=budget,
                                                                time_limit=0.3))
        assert len(plan.moves) <= budget
        assert plan.objective < base.objective
        assert plan.status is PlanStatus.FEASIBLE
        assert 0.0 <= plan.details["gap"] <= 1.0


def test_zero_gap_proves_a_tie_with_flux_optimal() -> None:
    # 40 slots, 8 of them ±20%: 10 migrations cannot relieve every overloaded slot, and the
    # migration-count bound shows that Flux's d is already the best any plan reaches.
    snapshot, current = albic_instance(nodes=40, key_groups=800, varies=40.0, seed=3)
    base = flux.plan(snapshot, current, options=flux.FluxOptions(max_moves=10))
    plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=10, time_limit=0.3))
    assert plan.objective == pytest.approx(base.objective)
    assert plan.details["gap"] == pytest.approx(0.0, abs=1e-9)


def albic_instance(*, nodes: int, key_groups: int, varies: float,
                   seed: int) -> tuple[LoadSnapshot, RoutingTable]:
    """ALBIC §5.1: even allocation, loads ±5% around the mean, 20% of nodes ±varies/2."""
    rng = np.random.default_rng(seed)
    current = RoutingTable.hashed(key_groups, nodes)
    slot_of = current.as_array()
    load = 100.0 * (1 + rng.uniform(-0.05, 0.05, key_groups))
    changed = rng.choice(nodes, size=max(2, round(0.2 * nodes)), replace=False)
    for i, node in enumerate(changed):
        own = np.flatnonzero(slot_of == node)
        pick = rng.choice(own, size=int(rng.integers(1, own.size + 1)), replace=False)
        share = rng.uniform(0.5, 1.5, pick.size)
        sign = -1 if i < changed.size // 2 else 1
        load[pick] += sign * 0.5 * varies / 100 * load[own].sum() * share / share.sum()
    return LoadSnapshot(0, np.maximum(load, 0.0)), current


# --------------------------------------------------------------------------------------------
# Scale-in: B (Lemmas 1–2)
# --------------------------------------------------------------------------------------------


def test_generous_budget_empties_b_including_idle_key_groups() -> None:
    rng = np.random.default_rng(3)
    load = rng.integers(1, 20, 24).astype(float)
    load[[4, 10]] = 0.0  # idle key groups on removed slot 4 (kg 4 and kg 10, hashed)
    current = RoutingTable.hashed(24, 6)
    remove = frozenset({0, 4})
    plan = milp.plan(LoadSnapshot(0, load), current,
                     options=MilpOptions(max_moves=None, remove=remove, **EXACT))
    after = current.apply_plan(plan).as_array()
    assert not np.isin(after, list(remove)).any()
    assert plan.details["load_on_removed"] == 0.0
    assert not any(m.target in remove for m in plan.moves)


def test_scale_in_within_the_rounds_the_budget_allows() -> None:
    # 8 key groups on the two removed slots, 3 migrations a round: ⌈8 / 3⌉ = 3 rounds.
    rng = np.random.default_rng(3)
    load = rng.integers(1, 20, 24).astype(float)
    load[[4, 10]] = 0.0
    table = RoutingTable.hashed(24, 6)
    remove = frozenset({0, 1})
    rounds = 0
    while np.isin(table.as_array(), list(remove)).any():
        plan = milp.plan(LoadSnapshot(0, load), table,
                         options=MilpOptions(max_moves=3, remove=remove, **EXACT))
        assert len(plan.moves) <= 3
        assert not any(m.target in remove for m in plan.moves)
        table = table.apply_plan(plan)
        rounds += 1
        assert rounds <= 3


def test_removed_slots_do_not_count_in_the_mean() -> None:
    # Slot 1 is removed and holds 6; slots 0 and 2 hold 6 each. mean = 18 / 2 = 9, so before
    # any move d = 3/9 = 33.3% (both active slots 3 below). Moving kg (6) off slot 1 is
    # impossible without overshooting; the two load-3 key groups go one to each: d = 0.
    load = np.array([6.0, 3, 3, 6])
    current = RoutingTable(0, (0, 1, 1, 2), 3)
    plan = milp.plan(LoadSnapshot(0, load), current,
                     options=MilpOptions(max_moves=2, remove=frozenset({1}), **EXACT))
    assert plan.details["load_distance_before"] == pytest.approx(100 / 3)
    assert plan.objective == pytest.approx(0.0, abs=1e-9)
    assert sorted((m.key_group, m.target) for m in plan.moves) in ([(1, 0), (2, 2)],
                                                                    [(1, 2), (2, 0)])


# --------------------------------------------------------------------------------------------
# Limits and failure
# --------------------------------------------------------------------------------------------


def hard_two_slot_instance(*, odd_total: bool = False) -> tuple[LoadSnapshot, RoutingTable]:
    """Number partitioning with a budget.

    With ``odd_total`` no perfect split exists, and HiGHS's LP relaxation cannot see it (its
    bound stays 0): proving the best split takes thousands of nodes in any HiGHS version.
    """
    rng = np.random.default_rng(7)
    load = rng.integers(0, 1001, 29).astype(float)
    if odd_total:
        load = 2 * np.floor(load / 2)
        load[0] += 1
    return LoadSnapshot(0, load), RoutingTable(0, tuple(int(s) for s in rng.integers(0, 2, 29)),
                                               2)


def test_a_run_stopped_at_its_limit_returns_the_incumbent_with_its_gap() -> None:
    # A node limit, not a time limit: where HiGHS stops does not depend on the machine.
    snapshot, current = hard_two_slot_instance(odd_total=True)
    options = MilpOptions(max_moves=6, max_nodes=50, time_limit=600)
    plan = milp.plan(snapshot, current, options=options)
    assert plan.status is PlanStatus.FEASIBLE
    assert plan.details["nodes"] == 50
    assert 0.0 < plan.details["gap"] <= 1.0
    assert plan.objective <= plan.details["flux_load_distance"] + 1e-9
    assert len(plan.moves) <= 6


def test_a_perfect_balance_has_no_gap() -> None:
    # 29 loads in [0, 1000] split perfectly within 6 moves; d is 0 up to float rounding, and a
    # rounding residue (1e-16 %) must not read as a gap of 100%.
    snapshot, current = hard_two_slot_instance()
    plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=6, time_limit=600))
    assert plan.objective == pytest.approx(0.0, abs=1e-9)
    assert plan.details["gap"] == 0.0


def test_large_instance_uses_neighbourhoods_and_reports_a_gap() -> None:
    snapshot, current = albic_instance(nodes=40, key_groups=800, varies=20.0, seed=2)
    plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=20, time_limit=0.2))
    assert plan.status is PlanStatus.FEASIBLE
    assert plan.details["rounds"] >= 1
    assert 0.0 <= plan.details["gap"] <= 1.0
    assert plan.details["bound"] <= plan.objective


def test_solver_failure_falls_back_to_flux(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: highspy.Highs) -> highspy.HighsStatus:
        return highspy.HighsStatus.kError

    monkeypatch.setattr(highspy.Highs, "run", broken)
    snapshot = LoadSnapshot(0, np.array([9.0, 8, 7, 1, 1, 1, 3, 3, 2]))
    current = RoutingTable(0, (0, 0, 0, 1, 1, 1, 2, 2, 2), 3)
    plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=2))
    base = flux.plan(snapshot, current, options=flux.FluxOptions(max_moves=2))
    assert plan.status is PlanStatus.FALLBACK
    assert plan.moves == base.moves
    assert plan.objective == pytest.approx(base.objective)


def test_nothing_to_do() -> None:
    current = RoutingTable(0, (0, 1, 0, 1), 2)
    balanced = milp.plan(LoadSnapshot(0, np.array([1.0, 2, 1, 0])), current)
    assert balanced.status is PlanStatus.UNCHANGED and balanced.objective == 0.0
    no_budget = milp.plan(LoadSnapshot(0, np.array([5.0, 0, 1, 0])), current,
                          options=MilpOptions(max_moves=0))
    assert no_budget.status is PlanStatus.UNCHANGED
    assert no_budget.objective == pytest.approx(100 * 3 / 3)
    idle = milp.plan(LoadSnapshot(0, np.zeros(4)), current)
    assert idle.status is PlanStatus.UNCHANGED and idle.objective == 0.0


def test_migration_cost_budget_uses_state_size() -> None:
    # Slot 0: kg0 (load 4, state 10), kg1 (load 4, state 1); slot 1 empty. Moving either
    # balances; with max_migration_cost 5 only kg1 fits (mc = α · state = 1 · 1).
    snapshot = LoadSnapshot(0, np.array([4.0, 4.0]), state_size=np.array([10.0, 1.0]))
    current = RoutingTable(0, (0, 0), 2)
    plan = milp.plan(snapshot, current, options=MilpOptions(
        max_moves=None, max_migration_cost=5.0, **EXACT))
    assert [(m.key_group, m.target) for m in plan.moves] == [(1, 1)]
    assert plan.details["migration_cost"] == 1.0
    # α = 10 prices kg1 at 10: nothing fits.
    plan = milp.plan(snapshot, current, options=MilpOptions(
        max_moves=None, max_migration_cost=5.0, alpha=10.0, **EXACT))
    assert plan.status is PlanStatus.UNCHANGED


def test_state_limit_blocks_a_balancing_move() -> None:
    # Same loads; slot 1 may hold 5 units of state: kg1 (state 6) cannot go, kg0 (state 2) can.
    snapshot = LoadSnapshot(0, np.array([4.0, 4.0]), state_size=np.array([2.0, 6.0]))
    current = RoutingTable(0, (0, 0), 2)
    plan = milp.plan(snapshot, current, options=MilpOptions(max_state_per_slot=5.0, **EXACT))
    assert [(m.key_group, m.target) for m in plan.moves] == [(0, 1)]


def test_identical_key_groups_lower_ids_move() -> None:
    # Four identical key groups on slot 0: which two move is arbitrary; the canonical form
    # (symmetry breaking in the program) moves the lowest ids.
    plan = milp.plan(LoadSnapshot(0, np.full(4, 5.0)), RoutingTable(0, (0, 0, 0, 0), 2),
                     options=MilpOptions(**EXACT))
    assert sorted(m.key_group for m in plan.moves) == [0, 1]


# --------------------------------------------------------------------------------------------
# Options and inputs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"max_moves": -1}, "max_moves"),
        ({"max_moves": 2.5}, "max_moves"),
        ({"max_moves": True}, "max_moves"),
        ({"max_migration_cost": -1.0}, "max_migration_cost"),
        ({"max_migration_cost": float("inf")}, "max_migration_cost"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"remove": {1}}, "remove"),
        ({"remove": frozenset({-1})}, "remove"),
        ({"max_state_per_slot": -2.0}, "max_state_per_slot"),
        ({"time_limit": 0.0}, "time_limit"),
        ({"time_limit": float("inf")}, "time_limit"),
        ({"max_nodes": 0}, "max_nodes"),
        ({"mip_gap": 1.0}, "mip_gap"),
        ({"seed": -1}, "seed"),
    ],
)
def test_options_validated(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(OptionError, match=option):
        MilpOptions(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("snapshot", "options", "field"),
    [
        (LoadSnapshot(0, np.ones(4)), MilpOptions(remove=frozenset({2})), "remove"),
        (LoadSnapshot(0, np.ones(4)), MilpOptions(remove=frozenset({0, 1})), "remove"),
        (LoadSnapshot(0, np.ones(4)), MilpOptions(max_migration_cost=3.0), "state_size"),
        (LoadSnapshot(0, np.ones(4)), MilpOptions(max_state_per_slot=3.0), "state_size"),
        (LoadSnapshot(0, np.ones(4), state_size=np.ones(3)), MilpOptions(), "state_size"),
        (LoadSnapshot(0, np.ones(4), state_size=-np.ones(4)), MilpOptions(), "state_size"),
    ],
)
def test_inputs_validated(snapshot: LoadSnapshot, options: MilpOptions, field: str) -> None:
    with pytest.raises(OptionError, match=field):
        milp.plan(snapshot, RoutingTable.hashed(4, 2), options=options)


# --------------------------------------------------------------------------------------------
# Units and pins (ALBIC §4.3.2's constraints): brute force and invariants
# --------------------------------------------------------------------------------------------


@st.composite
def tiny_with_units(draw: st.DrawFn) -> dict[str, object]:
    """A tiny case plus together groups of co-located key groups and pins off B."""
    case = draw(tiny())
    origin = np.asarray(case["origin"])
    num_slots = np.asarray(case["capacity"]).size
    groups: list[tuple[int, ...]] = []
    for slot in range(num_slots):
        here = [int(k) for k in np.flatnonzero(origin == slot)]
        if len(here) >= 2 and draw(st.booleans()):
            size = draw(st.integers(2, len(here)))
            groups.append(tuple(here[:size]))
    active = [s for s in range(num_slots) if s not in case["remove"]]  # type: ignore[operator]
    pins = draw(st.lists(st.tuples(st.integers(0, origin.size - 1), st.sampled_from(active)),
                         max_size=2, unique_by=lambda p: p[0]))
    # One slot per unit: the pins of a group agree with its first pin.
    unit_pin: dict[int, int] = {}
    kept: list[tuple[int, int]] = []
    for kg, slot in pins:
        group = next((g for g in groups if kg in g), (kg,))
        if unit_pin.setdefault(group[0], slot) == slot:
            kept.append((kg, slot))
    case["together"] = tuple(groups)
    case["pin"] = tuple(kept)
    return case


def brute_force_units(case: dict[str, object]) -> float | None:
    """The least d over assignments that keep groups together and pins in place and drain B
    the most (:func:`drain_first_distance`; None: no such assignment)."""
    load, capacity = np.asarray(case["load"]), np.asarray(case["capacity"])
    origin, state = np.asarray(case["origin"]), np.asarray(case["state"])
    removed = np.isin(np.arange(capacity.size), list(case["remove"]))  # type: ignore[call-overload]
    every = np.array(list(itertools.product(range(capacity.size), repeat=load.size)))
    moved = every != origin
    ok = moved.sum(axis=1) <= case["max_moves"]  # type: ignore[operator]
    if case["max_cost"] is not None:
        ok &= (moved * state).sum(axis=1) <= float(case["max_cost"]) + 1e-9  # type: ignore[arg-type]
    ok &= ~np.any(moved & removed[every], axis=1)
    if case["state_cap"] is not None:
        held = np.bincount(origin, weights=state, minlength=capacity.size)
        limit = np.maximum(held, float(case["state_cap"]))  # type: ignore[arg-type]
        now = np.stack([np.bincount(a, weights=state, minlength=capacity.size) for a in every])
        ok &= np.all(now <= limit + 1e-9, axis=1)
    for group in case["together"]:  # type: ignore[attr-defined]
        ok &= np.all(every[:, list(group)] == every[:, [group[0]]], axis=1)
    pinned = origin.copy()
    for kg, slot in case["pin"]:  # type: ignore[attr-defined]
        group = next((g for g in case["together"] if kg in g), (kg,))  # type: ignore[attr-defined]
        ok &= np.all(every[:, list(group)] == slot, axis=1)
        pinned[list(group)] = slot
    if case["state_cap"] is not None:
        # Pins are applied first, before anything else moves: they alone must fit the limits.
        alone = np.bincount(pinned, weights=state, minlength=capacity.size)
        if np.any(alone > limit + 1e-9):
            return None
    if not ok.any():
        return None
    return drain_first_distance(load, capacity, origin, removed, every[ok])


@given(case=tiny_with_units())
@settings(max_examples=examples(80), deadline=None)
def test_units_and_pins_equal_brute_force(case: dict[str, object]) -> None:
    best = brute_force_units(case)
    if best is None:  # the pins alone break a budget or a state limit
        with pytest.raises(OptionError, match="pin"):
            solve_tiny(case, together=case["together"], pin=case["pin"])
        return
    plan, current = solve_tiny(case, together=case["together"], pin=case["pin"])
    after = assignment(current, plan)
    for group in case["together"]:  # type: ignore[attr-defined]
        assert len(set(after[list(group)].tolist())) == 1
    for kg, slot in case["pin"]:  # type: ignore[attr-defined]
        assert after[kg] == slot
    assert len(plan.moves) <= case["max_moves"]  # type: ignore[operator]
    removed = np.isin(np.arange(np.asarray(case["capacity"]).size),
                      list(case["remove"]))  # type: ignore[call-overload]
    got = paper_distance(np.asarray(case["load"]), np.asarray(case["capacity"]), after[None, :],
                         removed)[0]
    assert got == pytest.approx(best, abs=1e-6)


def test_a_unit_spends_one_migration_per_key_group() -> None:
    # Slot 0 holds a unit {0, 1} (load 3 + 3) and kg 2 (load 2); slot 1 holds kg 3 (load 4).
    # Loads 8 | 4, mean 6. Moving the unit (2 migrations) gives 2 | 10; moving kg 2 gives
    # 6 | 6. With one migration only kg 2 may go; the unit cannot move at all.
    snapshot = LoadSnapshot(0, np.array([3.0, 3, 2, 4]))
    current = RoutingTable(0, (0, 0, 0, 1), 2)
    plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=1, together=((0, 1),),
                                                            **EXACT))
    assert [(m.key_group, m.target) for m in plan.moves] == [(2, 1)]
    # Loads 3 + 3 on slot 0 as a unit and 0 on slot 1: no single migration helps.
    snapshot = LoadSnapshot(0, np.array([3.0, 3, 0, 0]))
    plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=1, together=((0, 1),),
                                                            **EXACT))
    assert plan.status is PlanStatus.UNCHANGED


def test_a_pin_moves_first_and_the_rest_balances_around_it() -> None:
    # kg 0 (load 4) is pinned from slot 0 to slot 1: 4 | 12 before any other move; one more
    # migration is left, and kg 3 (load 4) back to slot 0 gives 8 | 8.
    snapshot = LoadSnapshot(0, np.array([4.0, 4, 4, 4]))
    current = RoutingTable(0, (0, 0, 1, 1), 2)
    plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=2, pin=((0, 1),),
                                                            **EXACT))
    after = current.apply_plan(plan).as_array()
    assert after[0] == 1 and len(plan.moves) == 2
    assert plan.objective == pytest.approx(0.0)
    assert plan.status in (PlanStatus.FEASIBLE, PlanStatus.OPTIMAL)
    # Without budget for anything but the pin, the pin alone is the plan.
    plan = milp.plan(snapshot, current, options=MilpOptions(max_moves=1, pin=((0, 1),),
                                                            **EXACT))
    assert [(m.key_group, m.target) for m in plan.moves] == [(0, 1)]
    assert plan.status is PlanStatus.FEASIBLE


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"together": ((0, 2),)}, "share a slot"),
        ({"together": ((0, 9),)}, "together"),
        ({"pin": ((0, 5),)}, "pin"),
        ({"pin": ((0, 1),), "remove": frozenset({1})}, "removal"),
        ({"pin": ((0, 1), (1, 0)), "together": ((0, 1),)}, "one slot"),
        ({"pin": ((0, 1), (1, 1)), "max_moves": 1}, "budget"),
    ],
)
def test_units_and_pins_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        milp.plan(LoadSnapshot(0, np.ones(4)), RoutingTable(0, (0, 0, 1, 1), 2),
                  options=MilpOptions(**kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"together": [(0, 1)]}, "together"),
        ({"together": ((0, 0),)}, "together"),
        ({"together": ((0, 1), (1, 2))}, "together"),
        ({"together": ((-1, 2),)}, "together"),
        ({"pin": ((0,),)}, "pin"),
        ({"pin": ((0, 1), (0, 2))}, "pin"),
        ({"pin": ((True, 1),)}, "pin"),
    ],
)
def test_unit_options_validated(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(OptionError, match=option):
        MilpOptions(**kwargs)  # type: ignore[arg-type]
