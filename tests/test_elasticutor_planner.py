"""The ``elasticutor`` planner: executors' key-group ranges, their slot sets, and the model."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.algorithms.balance.elasticutor import ElasticutorOptions, plan
from elastream.algorithms.elastic.core_allocation import allocate_cores
from elastream.algorithms.elastic.shard_balance import imbalance
from elastream.algorithms.elastic.strategy import executor_of_shards
from elastream.control.planners import planner
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, ServiceTimes
from elastream.core.plan import Plan, PlanStatus
from elastream.core.routing import RoutingTable

G, S, E = 64, 16, 4


def snapshot(seed: int, total: float = 2000.0) -> LoadSnapshot:
    rng = np.random.default_rng(seed)
    weights = rng.pareto(1.5, G) + 0.2
    return LoadSnapshot(0, total * weights / weights.sum())


OPTS = ElasticutorOptions(executors=E, latency_target=0.05, service_rate=250.0)


def slot_sets(p: Plan, slots: int) -> list[set[int]]:
    owner = [int(p.details[f"executor_of_slot_{s}"]) for s in range(slots)]
    return [{s for s in range(slots) if owner[s] == j} for j in range(E)]


def check_valid(p: Plan, before: RoutingTable, snap: LoadSnapshot) -> RoutingTable:
    after = before.apply_plan(p)
    sets = slot_sets(p, after.num_slots)
    owner = executor_of_shards(G, E)
    for j, owned in enumerate(sets):
        assert len(owned) == p.details[f"cores_{j}"]
        assert {after.slot_of[k] for k in np.flatnonzero(owner == j)} <= owned
        for other in sets[j + 1:]:
            assert not owned & other  # disjoint
    assert sum(len(o) for o in sets) == p.slots_used <= after.num_slots
    return after


@pytest.mark.parametrize("seed", range(5))
def test_plans_are_valid_and_deterministic(seed: int) -> None:
    snap = snapshot(seed)
    current = RoutingTable.hashed(G, S)
    p = plan(snap, current, options=OPTS)
    after = check_valid(p, current, snap)
    assert plan(snap, current, options=OPTS) == p
    assert p.status is PlanStatus.FEASIBLE and p.details["expected_latency"] <= 0.05
    assert p.details["latency_met"] == 1.0
    # Slots per executor are the model's: the greedy allocation of the executors' rates.
    rates = np.bincount(executor_of_shards(G, E), weights=snap.key_group_load)
    expected = allocate_cores(rates.tolist(), [250.0] * E, 0.05, S)
    assert [p.details[f"cores_{j}"] for j in range(E)] == list(expected.cores)
    assert p.details["expected_latency"] == pytest.approx(expected.expected_latency)
    # Inside each executor, the key groups are within §3.1's bound.
    loads = np.asarray(snap.key_group_load)
    for j, owned in enumerate(slot_sets(p, S)):
        mine = np.flatnonzero(executor_of_shards(G, E) == j)
        local = [sorted(owned).index(after.slot_of[k]) for k in mine]
        avg = loads[mine].sum() / len(owned)
        assert imbalance(loads[mine], local, len(owned)) \
            <= max(1.2, 1 + loads[mine].max() / avg) + 1e-9


def test_a_move_budget_converges_to_a_valid_layout() -> None:
    snap = snapshot(1)
    current = RoutingTable.hashed(G, S)
    opts = ElasticutorOptions(executors=E, latency_target=0.05, service_rate=250.0, max_moves=4)
    for _ in range(40):
        p = plan(snap, current, options=opts)
        assert len(p.moves) <= 4
        if p.status is PlanStatus.UNCHANGED:
            break
        assert p.status is PlanStatus.FEASIBLE
        current = current.apply_plan(p)
    else:
        pytest.fail("the plans did not converge")
    unbudgeted = plan(snap, current, options=OPTS)
    assert unbudgeted.moves == () and unbudgeted.status is PlanStatus.UNCHANGED
    assert unbudgeted.details["pending_moves"] == 0
    check_valid(unbudgeted, current, snap)


def test_stable_loads_give_no_moves_and_slots_stay_with_their_executor() -> None:
    snap = snapshot(2)
    first = RoutingTable.hashed(G, S).apply_plan(plan(snap, RoutingTable.hashed(G, S),
                                                      options=OPTS))
    assert plan(snap, first, options=OPTS).status is PlanStatus.UNCHANGED
    # Executor 0's load doubles: only its key groups and the slots it takes change hands.
    loads = np.asarray(snap.key_group_load).copy()
    owner = executor_of_shards(G, E)
    loads[owner == 0] *= 2
    p = plan(LoadSnapshot(1, loads), first, options=OPTS)
    assert p.details["cores_0"] > plan(snap, first, options=OPTS).details["cores_0"]
    moved_owner = {int(owner[m.key_group]) for m in p.moves}
    assert 0 in moved_owner


def test_more_slots_than_the_table_has_grow_num_slots() -> None:
    opts = ElasticutorOptions(executors=E, latency_target=0.02, service_rate=250.0, max_slots=32)
    p = plan(snapshot(0, total=4000.0), RoutingTable.hashed(G, S), options=opts)
    assert p.num_slots == 32 and p.slots_used > S
    check_valid(p, RoutingTable.hashed(G, S), snapshot(0))


def test_too_few_slots_miss_the_target_but_still_plan() -> None:
    p = plan(snapshot(0, total=20_000.0), RoutingTable.hashed(G, S), options=OPTS)
    assert p.status is PlanStatus.FEASIBLE and p.details["latency_met"] == 0.0
    assert p.slots_used == S
    check_valid(p, RoutingTable.hashed(G, S), snapshot(0))


def test_registered_and_options_validated() -> None:
    fn, options = planner("elasticutor", executors=2, service_rate=100.0,
                          shared={"max_moves": 3, "seed": 1})  # a job's budget; seed unused
    assert isinstance(options, ElasticutorOptions) and options.max_moves == 3
    assert fn(snapshot(0, total=300.0), RoutingTable.hashed(G, 4), options=options).moves
    # Without a service rate: one executor per slot, each slot one key-group range, then still.
    static = plan(snapshot(0), RoutingTable.hashed(G, S), options=ElasticutorOptions())
    ranges = RoutingTable.hashed(G, S).apply_plan(static)
    assert "expected_latency" not in static.details
    assert [len(set(ranges.slot_of[k * 4:(k + 1) * 4])) for k in range(S)] == [1] * S
    assert plan(snapshot(0), ranges).status is PlanStatus.UNCHANGED
    with pytest.raises(OptionError) as error:
        plan(snapshot(0), RoutingTable.hashed(G, 2), options=OPTS)
    assert error.value.option == "executors"
    for field, value in [("executors", 0), ("latency_target", -1.0), ("service_rate", 0.0),
                         ("interval_seconds", 0.0), ("max_slots", 0), ("max_moves", -1),
                         ("theta", 0.9)]:
        with pytest.raises(OptionError) as error:
            ElasticutorOptions(**{field: value})  # type: ignore[arg-type]
        assert error.value.option == field


def test_doctest() -> None:
    import doctest

    from elastream.algorithms.balance import elasticutor

    result = doctest.testmod(elasticutor)
    assert result.failed == 0 and result.attempted > 0


def measured(busy: list[float], overhead: float, interval: float = 1.0,
             rows: float | None = None) -> ServiceTimes:
    """Busy seconds of slots whose rows were ``rows`` (default: 2000 per busy second)."""
    return ServiceTimes(interval, np.array(busy), rows=2000 * sum(busy) if rows is None
                        else rows, overhead_seconds=overhead)


def test_a_measured_service_rate_sizes_the_slots_for_batches_within_the_target() -> None:
    # Two executors of 4 key groups, one per slot of 8. The slots processed 4000 rows in 2 busy
    # seconds: μ = 2000 rows/s. A batch spends O = 1 s on fixed work: for a 2 s target a slot
    # keeps up at μ(1 − 1/2) = 1000 rows/s. λ = (3500, 500) rows/s over 1 s: ⌊3.5⌋ + 1 = 4
    # slots and ⌊0.5⌋ + 1 = 1 (the M/M/k wait at a row per ms is far below 2 s).
    loads = np.array([1000.0, 1000, 1000, 500, 125, 125, 125, 125])
    busy = [0.5, 0.5, 0.5, 0.25, 0.0625, 0.0625, 0.0625, 0.0625]
    options = ElasticutorOptions(executors=2, latency_target=2.0)
    p = plan(LoadSnapshot(0, loads, service=measured(busy, 1.0)), RoutingTable.hashed(8, 8),
             options=options)
    assert p.slots_used == 5
    assert (p.details["cores_0"], p.details["cores_1"]) == (4.0, 1.0)
    assert p.details["service_rate"] == pytest.approx(1000.0)
    assert p.details["latency_met"] == 1.0
    # The same rows in half the time: (8, 2) slots for stability, more than the 8 there are;
    # the largest demand is cut and the target is missed.
    fast = plan(LoadSnapshot(0, loads, service=measured(busy, 1.0, interval=0.5)),
                RoutingTable.hashed(8, 8), options=options)
    assert fast.slots_used == 8 and fast.details["latency_met"] == 0.0
    assert (fast.details["cores_0"], fast.details["cores_1"]) == (6.0, 2.0)


def test_fixed_work_beyond_the_target_takes_every_slot() -> None:
    loads = np.array([10.0, 10, 10, 10])
    snap = LoadSnapshot(0, loads, service=measured([0.01, 0.01, 0.01, 0.01], 3.0))
    p = plan(snap, RoutingTable.hashed(4, 4), options=ElasticutorOptions(
        executors=1, latency_target=2.0))
    assert p.slots_used == 4 and p.details["latency_met"] == 0.0


def test_without_a_rate_given_or_measured_the_model_does_not_run() -> None:
    loads = np.array([10.0, 10, 10, 10])
    idle = LoadSnapshot(0, loads, service=measured([0.0, 0.0, 0.0, 0.0], 0.5, rows=0.0))
    for snap in (LoadSnapshot(0, loads), idle):
        p = plan(snap, RoutingTable.hashed(4, 2), options=ElasticutorOptions(executors=2))
        assert "service_rate" not in p.details and p.slots_used == 2


def test_the_loads_span_is_measured_unless_given() -> None:
    loads = np.array([300.0, 300.0])
    snap = LoadSnapshot(0, loads, service=measured([0.3, 0.3], 0.0, interval=2.0, rows=600.0))
    per_second = ElasticutorOptions(executors=1, latency_target=1.0, max_slots=8)
    assert plan(snap, RoutingTable.hashed(2, 2), options=per_second).slots_used == 1  # 300/s
    given = ElasticutorOptions(executors=1, latency_target=1.0, max_slots=8,
                               interval_seconds=0.25)  # 2400 rows/s at μ = 1000
    assert plan(snap, RoutingTable.hashed(2, 2), options=given).slots_used == 3


@pytest.mark.parametrize(("field", "value"), [
    ("interval_seconds", 0.0), ("busy_seconds", np.array([-1.0])), ("rows", -1.0),
    ("batches", 0), ("overhead_seconds", float("nan"))])
def test_service_times_are_validated(field: str, value: object) -> None:
    fields: dict[str, object] = {"interval_seconds": 1.0, "busy_seconds": np.array([0.5]),
                                 "rows": 10.0, "batches": 1, "overhead_seconds": 0.0,
                                 field: value}
    with pytest.raises(OptionError, match=f"service.{field}"):
        ServiceTimes(**fields)  # type: ignore[arg-type]
