"""The ``potc`` planner: two choices per key group, against a plain loop; options.

The conformance checks every planner passes are in ``test_planners.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.algorithms.balance import collocation, potc
from elastream.algorithms.balance.potc import PotcOptions, candidates
from elastream.algorithms.grouping.hashing import choice
from elastream.control.planners import PLANNERS
from elastream.core import registry
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import PlanStatus
from elastream.core.routing import RoutingTable
from elastream.core.traffic import collocation_factor, slot_loads


def potc_options(**settings: Any) -> PotcOptions:
    """PotcOptions from flat settings, as the registry builds them."""
    options: PotcOptions = registry.build(PLANNERS, "potc", settings)
    return options


def greedy_reference(loads: list[float], capacity: list[float], origin: list[int],
                     first: list[int], second: list[int]) -> list[int]:
    """The docstring's rule, one plain loop: heaviest first, the less utilised candidate."""
    held = [0.0] * len(capacity)
    slot_of = list(origin)
    for k in sorted(range(len(loads)), key=lambda k: (-loads[k], k)):
        h1, h2 = first[k], second[k]
        u1, u2 = held[h1] / capacity[h1], held[h2] / capacity[h2]
        slot = h2 if u2 < u1 or (u2 == u1 and h2 == origin[k]) else h1
        slot_of[k] = slot
        held[slot] += loads[k]
    return slot_of


@st.composite
def jobs(draw: st.DrawFn) -> tuple[LoadSnapshot, RoutingTable, PotcOptions]:
    num_slots = draw(st.integers(1, 6))
    num_kgs = draw(st.integers(1, 40))
    loads = draw(st.lists(st.integers(0, 100), min_size=num_kgs, max_size=num_kgs))
    slot_of = draw(st.lists(st.integers(0, num_slots - 1), min_size=num_kgs, max_size=num_kgs))
    capacity = draw(st.lists(st.sampled_from((1.0, 2.0)), min_size=num_slots,
                             max_size=num_slots))
    options = potc_options(
        remove=frozenset(draw(st.sets(st.integers(0, num_slots - 1), max_size=num_slots - 1))),
        seed=draw(st.integers(0, 5)),
    )
    snapshot = LoadSnapshot(0, np.array(loads, float), capacity=np.array(capacity))
    return snapshot, RoutingTable(0, tuple(slot_of), num_slots), options


@given(job=jobs())
@settings(max_examples=examples(150), deadline=None)
def test_matches_the_reference_and_uses_only_the_two_choices(
    job: tuple[LoadSnapshot, RoutingTable, PotcOptions],
) -> None:
    snapshot, current, options = job
    plan = potc.plan(snapshot, current, options=options)
    after = current.apply_plan(plan).as_array()
    assert after.shape == (current.num_key_groups,)
    if plan.status is PlanStatus.UNCHANGED and not plan.moves:
        return
    active = np.flatnonzero(~collocation.removed_slots(options.cluster.remove, current.num_slots))
    first, second = candidates(current.num_key_groups, active, options.seed)
    assert np.all((after == first) | (after == second))
    assert not np.isin(after, list(options.cluster.remove)).any()
    expected = greedy_reference(snapshot.key_group_load.tolist(),
                                snapshot.slot_capacity(current.num_slots).tolist(),
                                list(current.slot_of), first.tolist(), second.tolist())
    assert after.tolist() == expected
    assert plan.objective == pytest.approx(load_distance(
        snapshot.slot_load(current.apply_plan(plan)), snapshot.slot_capacity(current.num_slots))
        if not options.cluster.remove else plan.objective)


def test_candidates_are_pkgs_two_hashes_over_the_active_slots() -> None:
    active = np.array([0, 2, 3, 5])
    first, second = candidates(50, active, seed=3)
    kgs = np.arange(50)
    assert first.tolist() == active[choice(kgs, 4, 3, 1)].tolist()
    assert second.tolist() == active[choice(kgs, 4, 3, 2)].tolist()
    other = candidates(50, active, seed=4)
    assert other[0].tolist() != first.tolist()


def test_leaves_a_balanced_assignment_alone() -> None:
    snapshot = LoadSnapshot(0, np.array([5.0, 5, 6, 6]))  # 11 | 11
    current = RoutingTable(0, (0, 1, 0, 1), 2)
    plan = potc.plan(snapshot, current)
    assert plan.status is PlanStatus.UNCHANGED and plan.objective == 0.0
    # A threshold: 12 | 8 is 20% off the mean, left alone below 25%.
    skewed = LoadSnapshot(0, np.array([6.0, 4, 6, 4]))
    assert potc.plan(skewed, current,
                     options=potc_options(min_load_distance=25.0)).status is PlanStatus.UNCHANGED
    # A key group on a removed slot always triggers a plan.
    plan = potc.plan(snapshot, current, options=potc_options(remove=frozenset({1})))
    assert all(m.target == 0 for m in plan.moves) and len(plan.moves) == 2


def test_traffic_details_and_serialisation() -> None:
    traffic = np.array([[0, 4, 3.0], [1, 5, 3.0], [2, 6, 3.0], [3, 7, 3.0]])
    load = np.random.default_rng(2).integers(1, 9, 8).astype(float)
    snapshot = LoadSnapshot(0, load, traffic=traffic)
    current = RoutingTable.hashed(8, 3)
    plan = potc.plan(snapshot, current, options=potc_options(serialisation=0.3))
    after = current.apply_plan(plan).as_array()
    node = slot_loads(after, load, traffic, serialisation=0.3, num_slots=3)
    assert plan.objective == pytest.approx(load_distance(node))
    assert plan.details["collocation_factor"] == pytest.approx(collocation_factor(after,
                                                                                  traffic))
    assert "cross_traffic" in plan.details


def test_deterministic_under_a_seed() -> None:
    load = np.random.default_rng(0).integers(1, 50, 64).astype(float)
    snapshot, current = LoadSnapshot(0, load), RoutingTable.hashed(64, 8)
    a = potc.plan(snapshot, current, options=potc_options(seed=1))
    assert a == potc.plan(snapshot, current, options=potc_options(seed=1))
    assert a.moves != potc.plan(snapshot, current, options=potc_options(seed=2)).moves


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"min_load_distance": -1.0}, "min_load_distance"),
        ({"serialisation": -0.5}, "serialisation"),
        ({"remove": [1]}, "remove"),
        ({"seed": -3}, "seed"),
        ({"seed": True}, "seed"),
    ],
)
def test_options_validated(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(OptionError, match=option) as error:
        potc_options(**kwargs)  # type: ignore[arg-type]
    assert error.value.option == option
