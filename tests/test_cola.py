"""The ``cola`` planner: splitting and LPT mapping against plain loops, collocation, options.

The conformance checks every planner passes are in ``test_planners.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.algorithms.balance import cola, collocation
from elastream.algorithms.balance.cola import ColaOptions
from elastream.control.planners import PLANNERS
from elastream.core import registry
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import PlanStatus
from elastream.core.routing import RoutingTable
from elastream.core.traffic import collocation_factor, slot_loads


def cola_options(**settings: Any) -> ColaOptions:
    """ColaOptions from flat settings, as the registry builds them."""
    options: ColaOptions = registry.build(PLANNERS, "cola", settings)
    return options


def one_to_one(pairs: int, slots: int, seed: int = 0) -> tuple[LoadSnapshot, RoutingTable]:
    """Two operators; ``i`` sends all its output to ``pairs + i``, on another slot."""
    rng = np.random.default_rng(seed)
    traffic = np.array([[i, pairs + i, 1.0 + rng.random()] for i in range(pairs)])
    slot_of = [i % slots for i in range(pairs)] + [(i + 1) % slots for i in range(pairs)]
    return (LoadSnapshot(0, 1.0 + 0.1 * rng.random(2 * pairs), traffic=traffic),
            RoutingTable(0, tuple(slot_of), slots))


def lpt_reference(weights: list[float], capacity: list[float]) -> list[int]:
    """Graham's LPT for uniform machines, one plain loop: heaviest first, earliest finish."""
    held = [0.0] * len(capacity)
    slot_of = [0] * len(weights)
    for k in sorted(range(len(weights)), key=lambda k: (-weights[k], k)):
        best = min(range(len(capacity)), key=lambda s: ((held[s] + weights[k]) / capacity[s], s))
        slot_of[k] = best
        held[best] += weights[k]
    return slot_of


@given(loads=st.lists(st.integers(1, 50), min_size=1, max_size=20),
       capacity=st.lists(st.sampled_from((1.0, 2.0, 3.0)), min_size=1, max_size=5))
@settings(max_examples=examples(80), deadline=None)
def test_without_traffic_and_an_unreachable_target_cola_is_lpt(
    loads: list[int], capacity: list[float]
) -> None:
    # With no traffic and target 0, COLA splits down to single key groups unless a coarser
    # mapping already balances perfectly; either way its load distance is at most LPT's.
    snapshot = LoadSnapshot(0, np.array(loads, float), capacity=np.array(capacity))
    current = RoutingTable(0, (0,) * len(loads), len(capacity))
    plan = cola.plan(snapshot, current, options=cola_options(max_load_distance=0.0))
    after = current.apply_plan(plan)
    lpt = lpt_reference([float(w) for w in loads], capacity)
    lpt_distance = load_distance(snapshot.slot_load(RoutingTable(0, tuple(lpt), len(capacity))),
                                 np.array(capacity))
    assert plan.objective == pytest.approx(load_distance(snapshot.slot_load(after),
                                                         np.array(capacity)))
    if plan.details["partitions"] == len(loads):
        assert after.slot_of == tuple(lpt)
    else:
        assert plan.objective <= lpt_distance + 1e-9


def test_keeps_one_to_one_pairs_together() -> None:
    snapshot, current = one_to_one(16, 4)
    plan = cola.plan(snapshot, current)
    after = current.apply_plan(plan).as_array()
    assert np.all(after[:16] == after[16:])  # every pair on one slot
    assert plan.details["collocation_factor"] == 100.0
    assert plan.details["cross_traffic"] == 0.0
    assert plan.objective <= 10.0
    assert plan.details["target_met"] == 1.0
    # Re-optimising from scratch migrates most key groups (ALBIC §5.4's point).
    assert len(plan.moves) >= 16


def test_stops_splitting_once_the_target_is_met() -> None:
    # A generous target accepts the first mapping that meets it: fewer partitions.
    snapshot, current = one_to_one(16, 4)
    tight = cola.plan(snapshot, current, options=cola_options(max_load_distance=1.0))
    loose = cola.plan(snapshot, current, options=cola_options(max_load_distance=60.0))
    assert loose.details["splits"] < tight.details["splits"]
    assert loose.objective <= 60.0
    assert tight.details["partitions"] == tight.details["splits"] + 1


def test_serialisation_counts_in_weights_and_distance() -> None:
    snapshot, current = one_to_one(12, 3)
    plan = cola.plan(snapshot, current, options=cola_options(serialisation=0.5))
    after = current.apply_plan(plan).as_array()
    node = slot_loads(after, snapshot.key_group_load, snapshot.traffic, serialisation=0.5,
                      num_slots=3)
    assert plan.objective == pytest.approx(load_distance(node))
    before = slot_loads(current.as_array(), snapshot.key_group_load, snapshot.traffic,
                        serialisation=0.5, num_slots=3)
    assert plan.details["load_distance_before"] == pytest.approx(load_distance(before))


@st.composite
def jobs(draw: st.DrawFn) -> tuple[LoadSnapshot, RoutingTable, ColaOptions]:
    num_slots = draw(st.integers(2, 5))
    num_kgs = draw(st.integers(1, 24))
    loads = draw(st.lists(st.integers(0, 30), min_size=num_kgs, max_size=num_kgs))
    rows = draw(st.lists(st.tuples(st.integers(0, num_kgs - 1), st.integers(0, num_kgs - 1),
                                   st.integers(1, 9)), max_size=30))
    slot_of = draw(st.lists(st.integers(0, num_slots - 1), min_size=num_kgs, max_size=num_kgs))
    options = cola_options(
        max_load_distance=draw(st.sampled_from((0.0, 5.0, 10.0, 50.0))),
        serialisation=draw(st.sampled_from((0.0, 0.2))),
        remove=frozenset(draw(st.sets(st.integers(0, num_slots - 1), max_size=num_slots - 1))),
        seed=draw(st.integers(0, 3)),
    )
    snapshot = LoadSnapshot(0, np.array(loads, float),
                            traffic=np.array(rows, float).reshape(-1, 3))
    return snapshot, RoutingTable(0, tuple(slot_of), num_slots), options


@given(job=jobs())
@settings(max_examples=examples(80), deadline=None)
def test_every_key_group_once_nothing_on_removed_slots(
    job: tuple[LoadSnapshot, RoutingTable, ColaOptions],
) -> None:
    snapshot, current, options = job
    plan = cola.plan(snapshot, current, options=options)
    moved = [m.key_group for m in plan.moves]
    assert len(moved) == len(set(moved))
    after = current.apply_plan(plan).as_array()
    assert after.shape == (current.num_key_groups,)
    if plan.moves or current.as_array().tolist() != after.tolist():
        assert not np.isin(after, list(options.cluster.remove)).any()  # B is emptied at once
    removed = collocation.removed_slots(options.cluster.remove, current.num_slots)
    node = slot_loads(after, snapshot.key_group_load, snapshot.traffic,
                      serialisation=options.cluster.serialisation, num_slots=current.num_slots)
    assert plan.objective == pytest.approx(
        collocation.distance(node, np.ones(current.num_slots), removed), abs=1e-9)
    if plan.status is PlanStatus.UNCHANGED and not plan.moves:
        return
    assert plan.details["target_met"] == float(plan.objective <= options.max_load_distance)
    if not plan.details["target_met"]:  # it stopped only because nothing was left to split
        assert plan.details["partitions"] == current.num_key_groups
    if snapshot.traffic is not None and snapshot.traffic.size:
        assert plan.details["collocation_factor"] == pytest.approx(
            collocation_factor(after, snapshot.traffic))


def test_unchanged_only_when_nothing_to_gain() -> None:
    # Balanced and fully collocated: nothing to do.
    snapshot, _ = one_to_one(4, 2)
    collocated = RoutingTable(0, (0, 1, 0, 1, 0, 1, 0, 1), 2)
    plan = cola.plan(snapshot, collocated, options=cola_options(max_load_distance=20.0))
    assert plan.status is PlanStatus.UNCHANGED and plan.moves == ()
    # Balanced but with traffic across slots: COLA re-optimises.
    apart = RoutingTable(0, (0, 1, 0, 1, 1, 0, 1, 0), 2)
    plan = cola.plan(snapshot, apart, options=cola_options(max_load_distance=20.0))
    assert plan.details["collocation_factor"] == 100.0


def test_deterministic_under_a_seed() -> None:
    snapshot, current = one_to_one(20, 4, seed=3)
    for seed in (0, 1):
        options = cola_options(seed=seed)
        assert cola.plan(snapshot, current, options=options) == \
            cola.plan(snapshot, current, options=options)


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"max_load_distance": -1.0}, "max_load_distance"),
        ({"max_load_distance": float("inf")}, "max_load_distance"),
        ({"serialisation": float("nan")}, "serialisation"),
        ({"remove": {0}}, "remove"),
        ({"remove": frozenset({-2})}, "remove"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_options_validated(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(OptionError, match=option) as error:
        cola_options(**kwargs)  # type: ignore[arg-type]
    assert error.value.option == option


def test_inputs_validated() -> None:
    snapshot, current = one_to_one(3, 2)
    with pytest.raises(OptionError, match="remove"):
        cola.plan(snapshot, current, options=cola_options(remove=frozenset({0, 1})))
    with pytest.raises(OptionError, match="traffic"):
        cola.plan(LoadSnapshot(0, snapshot.key_group_load, traffic=np.array([[0, 1]])), current)
