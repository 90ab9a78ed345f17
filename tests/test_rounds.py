"""Round simulator: ALBIC §5.1/§5.3 instances and drift, per-round metrics, Algorithm 1 scaling."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from elastream.control import planners
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Plan, PlanStatus
from elastream.core.planner import Planner
from elastream.core.routing import RoutingTable
from elastream.core.traffic import collocation_factor, load_index, slot_loads
from elastream.runtimes.sim.rounds import (
    CONTRACT_COLUMNS,
    RoundsResult,
    ScalingPolicy,
    removal_load_distance,
    run_rounds,
)
from elastream.runtimes.sim.rounds_instance import Instance, albic_instance, drift, overload

EXACT_MILP = {"time_limit": 30.0, "max_nodes": 20}  # plans repeat: nodes bind, not the clock


def ticking(step: float = 0.25) -> Callable[[], float]:
    counter = itertools.count()
    return lambda: step * next(counter)


def node_index(result: RoundsResult, instance: Instance, after: int) -> np.ndarray:
    """Initial node index of every key group after round ``after`` (1-based)."""
    index = {n: i for i, n in enumerate(instance.node_ids)}
    return np.array([index[n] for n in result.assignments[after - 1]])


# ------------------------------------------------------------------------------------ instances


def test_generator_is_deterministic_under_a_seed() -> None:
    a, b = (albic_instance(nodes=10, key_groups=100, operators=5, varies=30, collocation=40,
                           seed=7) for _ in range(2))
    c = albic_instance(nodes=10, key_groups=100, operators=5, varies=30, collocation=40, seed=8)
    for name in ("load", "state_size", "slot_of", "traffic", "operator"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.load, c.load)
    assert not np.array_equal(a.slot_of, c.slot_of)


@pytest.mark.parametrize(("nodes", "key_groups", "varies"), [(20, 400, 20.0), (10, 50, 40.0),
                                                              (5, 23, 10.0), (2, 8, 60.0)])
def test_varies_changes_20_percent_of_the_nodes_by_half_of_it(nodes: int, key_groups: int,
                                                              varies: float) -> None:
    base = albic_instance(nodes=nodes, key_groups=key_groups, varies=0.0, seed=3)
    varied = albic_instance(nodes=nodes, key_groups=key_groups, varies=varies, seed=3)
    counts = np.bincount(base.slot_of, minlength=nodes)
    assert counts.max() - counts.min() <= 1  # evenly allocated
    assert np.array_equal(base.slot_of, varied.slot_of)
    # Every key group starts at the mean ± 5%; the mean puts a node at 50%.
    mean = 50.0 * nodes / key_groups
    assert np.all(np.abs(base.load / mean - 1) <= 0.05 + 1e-12)
    ratio = varied.node_load() / base.node_load()
    changed = np.flatnonzero(np.abs(ratio - 1) > 1e-9)
    expected = min(nodes, max(2, round(0.2 * nodes)))
    assert changed.size == expected
    assert sorted(np.round(ratio[changed], 9)) == sorted(
        [round(1 - varies / 200, 9)] * (expected // 2)
        + [round(1 + varies / 200, 9)] * (expected - expected // 2))
    assert np.all(varied.load >= 0.5 * base.load - 1e-9)  # no key group loses over half


def test_drift_moves_20_percent_of_the_nodes_within_the_range() -> None:
    rng = np.random.default_rng(11)
    slot_of = np.arange(300) % 30
    load = rng.uniform(1, 2, 300)
    for percent in (2.0, 20.0, 100.0):
        after = drift(load, slot_of, percent, rng)
        ratio = np.bincount(slot_of, weights=after) / np.bincount(slot_of, weights=load)
        changed = np.abs(ratio - 1) > 1e-12
        assert changed.sum() == round(0.2 * 30)
        assert np.all(np.abs(ratio - 1) <= percent / 100 + 1e-12)
        assert np.all(after >= 0)
        assert np.array_equal(after[~changed[slot_of]], load[~changed[slot_of]])
    assert np.array_equal(drift(load, slot_of, 0.0, rng), load)


def test_drift_draws_do_not_depend_on_the_assignment() -> None:
    # Common random numbers: two planners' clusters drift by the same draws.
    load = np.random.default_rng(1).uniform(1, 2, 100)
    apart, together = np.arange(100) % 10, np.zeros(100, dtype=np.int64)
    rng_a, rng_b = np.random.default_rng(4), np.random.default_rng(4)
    a = drift(load, apart, 5.0, rng_a, num_nodes=10)
    b = drift(load, together, 5.0, rng_b, num_nodes=10)
    assert rng_a.bit_generator.state == rng_b.bit_generator.state
    picked = np.random.default_rng(4).choice(10, 2, replace=False)
    changed_nodes = np.unique(apart[a != load])
    assert set(changed_nodes) <= set(picked.tolist())
    # Nodes 1–9 hold nothing under "together": only node 0's key groups may change.
    assert bool((b != load).any()) == bool(0 in picked)


@pytest.mark.parametrize("collocation", [0.0, 30.0, 50.0, 100.0])
def test_traffic_has_the_one_to_one_share_asked_for(collocation: float) -> None:
    inst = albic_instance(nodes=8, key_groups=120, operators=4, collocation=collocation, seed=2)
    rows = inst.traffic
    src, dst = rows[:, 0].astype(int), rows[:, 1].astype(int)
    assert np.all(inst.operator[dst] == inst.operator[src] + 1)
    sent = np.bincount(src, weights=rows[:, 2], minlength=120)
    senders = inst.operator < 3
    assert sent[senders] == pytest.approx(inst.load[senders])  # selectivity 1
    assert np.all(sent[~senders] == 0)
    fanout = np.bincount(src, minlength=120)[senders]
    one_to_one = fanout == 1
    assert one_to_one.sum() == 3 * round(collocation / 100 * 30)
    # Collocating exactly the One-To-One pairs keeps their share of the traffic inside nodes.
    pair_src = np.flatnonzero(senders)[one_to_one]
    slot_of = np.arange(120) % 7 + 1
    partner = dst[np.isin(src, pair_src)]
    slot_of[partner] = 0
    slot_of[pair_src] = 0
    share = 100 * inst.load[pair_src].sum() / inst.load[senders].sum()
    assert collocation_factor(slot_of, rows) >= share - 1e-9


def test_overload_sets_node_loads() -> None:
    inst = overload(albic_instance(nodes=6, key_groups=60, seed=1), [2, 4], level=100.0)
    assert inst.node_load()[[2, 4]] == pytest.approx([100.0, 100.0])


@pytest.mark.parametrize(("kwargs", "field_name"), [
    ({"nodes": 0, "key_groups": 4}, "nodes"),
    ({"nodes": 4, "key_groups": 3}, "key_groups"),
    ({"nodes": 2, "key_groups": 4, "operators": 5}, "operators"),
    ({"nodes": 2, "key_groups": 4, "varies": -1.0}, "varies"),
    ({"nodes": 2, "key_groups": 4, "collocation": 101.0}, "collocation"),
])
def test_generator_rejects_bad_parameters(kwargs: dict[str, Any], field_name: str) -> None:
    with pytest.raises(OptionError) as error:
        albic_instance(**kwargs)
    assert error.value.option == field_name


def test_instance_validates_fields() -> None:
    good = albic_instance(nodes=2, key_groups=4, seed=0)
    with pytest.raises(OptionError, match="load must be finite and >= 0"):
        Instance(good.node_ids, good.capacity, good.key_group_ids, -good.load, good.state_size,
                 good.slot_of)
    with pytest.raises(OptionError, match="remove must name nodes"):
        good.marked(["zz"])
    with pytest.raises(OptionError, match="remove must leave at least one node"):
        good.marked(["n0", "n1"])


# ------------------------------------------------------------------------------------ metrics


def test_metrics_equal_direct_computations() -> None:
    inst = albic_instance(nodes=6, key_groups=60, operators=3, varies=30, collocation=60, seed=4)
    result = run_rounds(inst, "flux", settings={"max_moves": 5}, rounds=4, serialisation=0.2,
                        clock=ticking(0.25))
    assert [r.round for r in result.records] == [1, 2, 3, 4]
    reference = slot_loads(inst.slot_of, inst.load, inst.traffic, serialisation=0.2,
                           num_slots=6).sum()
    previous = inst.slot_of
    for number, record in enumerate(result.records, start=1):
        now = node_index(result, inst, number)
        loads = slot_loads(now, inst.load, inst.traffic, serialisation=0.2, num_slots=6)
        moved = now != previous
        assert record.algo == "flux"
        assert record.load_distance == pytest.approx(load_distance(loads))
        assert record.collocation_factor == pytest.approx(collocation_factor(now, inst.traffic))
        assert record.load_index == pytest.approx(load_index(loads, reference / 6))
        assert record.migrations == moved.sum() <= 5
        assert record.migration_cost == pytest.approx(inst.state_size[moved].sum())
        assert record.solve_seconds == 0.25  # one planner call, timed by the injected clock
        before = slot_loads(previous, inst.load, inst.traffic, serialisation=0.2, num_slots=6)
        assert record.load_distance_before == pytest.approx(load_distance(before))
        previous = now
    assert set(result.records[0].contract()) == set(CONTRACT_COLUMNS)


@dataclass(frozen=True)
class SpyOptions:
    remove: frozenset[int] = frozenset()
    max_moves: int | None = None


Seen = list[tuple[LoadSnapshot, RoutingTable, frozenset[int]]]


def spy(seen: Seen) -> Planner:
    """A planner that records what it was called with in ``seen``."""
    def plan(snapshot: LoadSnapshot, current: RoutingTable, *, options: SpyOptions) -> Plan:
        seen.append((snapshot, current, options.remove))
        return Plan(status=PlanStatus.UNCHANGED)
    return plan


def test_snapshot_loads_include_serialisation_and_b_is_passed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: Seen = []
    monkeypatch.setitem(planners.PLANNERS, "spy", planners.PlannerEntry(
        lambda options: spy(seen), SpyOptions))
    inst = albic_instance(nodes=4, key_groups=20, operators=2, collocation=50, seed=5)
    run_rounds(inst.marked(["n2"]), "spy", rounds=2, serialisation=0.5)
    assert len(seen) == 2
    snapshot, table, remove = seen[0]
    loads = slot_loads(table.as_array(), inst.load, inst.traffic, serialisation=0.5,
                       num_slots=4)
    assert snapshot.slot_load(table) == pytest.approx(loads)
    assert np.array_equal(snapshot.traffic, inst.traffic)
    assert np.array_equal(snapshot.state_size, inst.state_size)
    assert remove == frozenset({2})


def test_removal_load_distance() -> None:
    loads, cap = np.array([12.0, 8.0, 4.0]), np.array([1.0, 1.0, 2.0])
    assert removal_load_distance(loads, cap, np.zeros(3, bool)) == load_distance(loads, cap)
    # B = {2}: mean = 24 / 2 = 12; node 1 is 4 below, node 2's utilisation 2 does not count.
    assert removal_load_distance(loads, cap, np.array([0, 0, 1], bool)) == pytest.approx(
        100 * 4 / 12)


# ------------------------------------------------------------------------------------ scale-in


def assert_never_onto_b(result: RoundsResult, instance: Instance, b: set[str]) -> None:
    before = instance.node_ids
    previous = [before[s] for s in instance.slot_of]
    for assigned in result.assignments:
        for old, new in zip(previous, assigned, strict=True):
            assert not (new in b and old != new), f"{old} -> {new}"
        previous = list(assigned)


def test_milp_empties_b_within_the_rounds_the_budget_allows() -> None:
    # Lemmas 1–2: 8 key groups on the two removed nodes, 3 migrations a round: ⌈8 / 3⌉ = 3.
    inst = albic_instance(nodes=6, key_groups=24, seed=3).marked(["n0", "n1"])
    on_b = int(np.isin(inst.slot_of, [0, 1]).sum())
    result = run_rounds(inst, "milp", settings={"max_moves": 3, **EXACT_MILP}, rounds=5)
    allowed = math.ceil(on_b / 3)
    records = result.records
    assert all(r.migrations <= 3 for r in records)
    assert records[allowed - 1].on_removed == 0
    assert all(r.on_removed > 0 for r in records[: allowed - 1])
    assert_never_onto_b(result, inst, {"n0", "n1"})
    # Algorithm 1, lines 1–3: the next round terminates the empty nodes.
    assert records[allowed].terminated == 2 and records[allowed].nodes == 4
    assert result.node_ids == ("n2", "n3", "n4", "n5") and not result.removing
    assert set(result.assignment.values()) <= set(result.node_ids)
    assert records[-1].load_distance < 5.0


@pytest.mark.parametrize("algo", ["milp", "flux"])
def test_integrated_and_separate_both_end_with_b_empty(algo: str) -> None:
    inst = overload(albic_instance(nodes=6, key_groups=24, seed=6), [3], level=90.0)
    inst = inst.marked(["n0", "n5"])
    settings = {"max_moves": 4, **EXACT_MILP}
    modes = ("integrated", "separate") if algo == "milp" else ("auto",)
    for mode in modes:
        result = run_rounds(inst, algo, settings=settings, rounds=6, scale_in=mode)
        assert result.records[-1].on_removed == 0, mode
        assert result.records[-1].nodes == 4 and not result.removing
        assert_never_onto_b(result, inst, {"n0", "n5"})
        assert all(r.migrations <= 4 for r in result.records)
        if mode != "integrated":  # separate: the whole first budget drains B
            first = node_index(result, inst, 1)
            moved = np.flatnonzero(first != inst.slot_of)
            assert moved.size == 4 and np.isin(inst.slot_of[moved], [0, 5]).all()


def test_integrated_needs_a_planner_that_takes_b() -> None:
    inst = albic_instance(nodes=4, key_groups=8, seed=0).marked(["n1"])
    with pytest.raises(OptionError, match="scale_in integrated needs"):
        run_rounds(inst, "flux", scale_in="integrated")


# ------------------------------------------------------------------------------ scaling policy


def test_scale_out_adds_empty_nodes_that_fill_up() -> None:
    inst = albic_instance(nodes=4, key_groups=40, seed=2)  # 50% utilisation
    result = run_rounds(inst, "flux", settings={"max_moves": 6}, rounds=4,
                        scaling=ScalingPolicy(target=35.0, band=5.0))
    first = result.records[0]
    assert first.added == math.ceil(200 / 35) - 4 == 2
    assert first.nodes == 6
    assert len(result.node_ids) == 6 and result.node_ids[-2:] == ("new1", "new2")
    assert set(result.assignment.values()) == set(result.node_ids)  # the new nodes got work
    assert all(r.added == 0 for r in result.records[1:])


def test_scale_in_marks_nodes_and_terminates_them_once_empty() -> None:
    inst = albic_instance(nodes=5, key_groups=20, varies=40, seed=1)  # 50% utilisation
    result = run_rounds(inst, "milp", settings={"max_moves": 6, **EXACT_MILP}, rounds=4,
                        scaling=ScalingPolicy(target=90.0, band=10.0))
    first = result.records[0]
    assert first.removing == 2  # 250 / 90 = 2.8: 3 nodes are enough
    marked = set(inst.node_ids) - set(result.node_ids)
    assert len(marked) == 2 and result.records[-1].nodes == 3 and not result.removing
    assert_never_onto_b(result, inst, marked)
    assert sum(r.terminated for r in result.records) == 2
    assert result.records[-1].load_distance < 1.0


def test_options_are_validated() -> None:
    inst = albic_instance(nodes=2, key_groups=4, seed=0)
    with pytest.raises(OptionError, match="rounds"):
        run_rounds(inst, "flux", rounds=0)
    with pytest.raises(OptionError, match="scale_in"):
        run_rounds(inst, "flux", scale_in="later")
    with pytest.raises(OptionError, match="planner must be one of"):
        run_rounds(inst, "nope")
    with pytest.raises(OptionError, match="band"):
        ScalingPolicy(target=10.0, band=10.0)


@pytest.mark.parametrize("algo", ["hash", "flux", "fish", "milp"])
def test_every_planner_runs_the_loop_within_budget_and_off_b(algo: str) -> None:
    inst = albic_instance(nodes=5, key_groups=20, varies=30, seed=9).marked(["n4"])
    result = run_rounds(inst, algo, settings={"max_moves": 2, **EXACT_MILP}, rounds=3,
                        drift=2.0)
    assert all(r.migrations <= 2 for r in result.records)
    assert_never_onto_b(result, inst, {"n4"})
    on_b = int((inst.slot_of == 4).sum())
    assert result.records[-1].on_removed == max(0, on_b - 6)  # drained first, 2 a round
