"""The round simulator as a Runtime, driven by the control loop the Spark runtime uses."""

from __future__ import annotations

import doctest
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from elastream.algorithms.balance import elasticutor, flux
from elastream.algorithms.migration.intervals import runs
from elastream.control.controller import Controller
from elastream.control.loop import ControlLoop
from elastream.control.planners import job_planner
from elastream.control.scaling import ranges_table
from elastream.core.aggregates import AggSpec
from elastream.core.errors import OptionError
from elastream.core.plan import Move
from elastream.core.spec import PipelineSpec, ScaleEvent
from elastream.core.traffic import key_group_loads, slot_loads
from elastream.core.windows import WindowSpec
from elastream.runtimes.sim import rounds_runtime
from elastream.runtimes.sim.rounds import ScalingPolicy, run_rounds
from elastream.runtimes.sim.rounds_instance import Instance, albic_instance, drift
from elastream.runtimes.sim.rounds_runtime import RoundsRuntime, round_spec


def ticking(step: float = 0.25) -> Callable[[], float]:
    counter = itertools.count()
    return lambda: step * next(counter)


def test_doctests() -> None:
    result = doctest.testmod(rounds_runtime)
    assert result.failed == 0 and result.attempted > 0


def test_a_period_is_observed_once_as_a_controller_measures_it() -> None:
    inst = albic_instance(nodes=4, key_groups=20, operators=2, varies=40, collocation=50, seed=3)
    job = RoundsRuntime(inst, serialisation=0.3)
    assert job.observe() is None
    job.load = job.load * 1.5  # a sender's traffic follows its load
    observed = job.period(7)
    assert job.observe() is observed and job.observe() is None
    traffic = inst.traffic.copy()
    traffic[:, 2] *= 1.5
    assert observed.traffic == pytest.approx(traffic)
    assert observed.key_group_load == pytest.approx(
        key_group_loads(inst.slot_of, inst.load * 1.5, traffic, serialisation=0.3))
    assert observed.slot_load == pytest.approx(
        slot_loads(inst.slot_of, inst.load * 1.5, traffic, serialisation=0.3, num_slots=4))
    assert observed.slot_load == pytest.approx(
        np.bincount(inst.slot_of, weights=observed.key_group_load, minlength=4))
    assert np.array_equal(observed.state_size, inst.state_size)
    assert np.array_equal(observed.capacity, inst.capacity)
    assert observed.record == {
        "batch_id": 7, "batches": 1, "first_batch_id": 7, "input_rows": 20, "valid_rows": 20,
        "dead_letter_rows": 0, "late_rows": 0, "batch_ms": 0, "watermark": None,
        "observed_routing_version": 0}
    snapshot = observed.snapshot(traffic=True)
    assert snapshot.batch_id == 7 and snapshot.traffic is observed.traffic


def test_routing_versions_state_and_the_rest_of_the_protocol() -> None:
    job = RoundsRuntime(albic_instance(nodes=3, key_groups=6, seed=0))
    first = job.routing()
    moved = first.apply([Move(0, first.slot_of[0], (first.slot_of[0] + 1) % 3)])
    job.publish(moved)
    job.publish(moved)  # the latest again: nothing changes
    assert job.routing() is moved and job.routing(0) is first
    assert job.slot_of.tolist() == list(moved.slot_of)
    assert job.period(1).record["observed_routing_version"] == 1
    with pytest.raises(ValueError, match="version 1 is already published"):
        job.publish(first.apply([]))
    with pytest.raises(ValueError, match="has 6 key groups and 4 slots; the job has 6 key "
                                         "groups on 3 nodes"):
        job.publish(moved.apply([], num_slots=4))
    assert job.in_flight() == set() and job.load_state() is None
    job.save_state({"events": 1})
    assert job.load_state() == {"events": 1}
    job.restart()
    with pytest.raises(OptionError, match="serialisation"):
        RoundsRuntime(albic_instance(nodes=3, key_groups=6, seed=0), serialisation=-1.0)


def test_a_planners_moves_are_published_as_new_routing_versions() -> None:
    inst = albic_instance(nodes=5, key_groups=40, varies=80, seed=2)
    job = RoundsRuntime(inst)
    loop = ControlLoop(job, Controller(flux.plan, flux.FluxOptions(max_moves=2)),
                       round_spec(inst.num_key_groups))
    rng = np.random.default_rng(0)
    for batch in range(1, 9):
        job.load = drift(job.load, job.slot_of, 40.0, rng, num_nodes=5)
        job.period(batch)
        loop.step()
    assert [r["batch_id"] for r in loop.records] == list(range(1, 9))
    assert sum(r["moves"] > 0 for r in loop.records) > 4  # the drift keeps flux busy
    for record in loop.records:
        ran_with = job.routing(record["observed_routing_version"])
        now = job.routing(record["routing_version"])
        moved = np.flatnonzero(ran_with.as_array() != now.as_array()).tolist()
        assert moved == sorted(record["moved_key_groups"])
        assert record["moves"] == len(moved) <= 2
        assert record["routing_version"] == ran_with.version + (1 if moved else 0)
        assert record["plan_status"] is not None
    assert loop.records[-1]["routing_version"] == job.routing().version


class Holding(RoundsRuntime):
    """The round simulator, noting the slots the loop asks it to hold cores for."""

    held: list[int]

    def hold_slots(self, slots: int) -> dict[str, int]:
        self.held = [*getattr(self, "held", []), slots]
        return {"cores": slots}


def test_a_planner_that_sizes_the_slots_has_cores_held_for_them() -> None:
    inst = albic_instance(nodes=8, key_groups=32, varies=80, seed=4)
    job = Holding(inst)
    # One elastic executor whose node-slots each serve 1/2.2 of the first load: ⌊λ/μ⌋ + 1
    # slots (the M/M/k wait is far below the target), as many as the 8 nodes allow.
    mu = float(inst.load.sum()) / 2.2  # λ/μ = 3.3, 4.95, 7.4, 11.1: ⌊λ/μ⌋ + 1 = 4, 5, 8, 8
    options = elasticutor.ElasticutorOptions(executors=1, service_rate=mu,
                                             interval_seconds=1.0, latency_target=10.0)
    loop = ControlLoop(job, Controller(elasticutor.plan, options), round_spec(32))
    for batch in range(1, 5):
        job.load = job.load * 1.5
        job.period(batch)
        loop.step()
    expected = [min(8, int(sum(r["key_group_load"]) // mu) + 1) for r in loop.records]
    assert job.held == [r["slots_used"] for r in loop.records] == expected
    assert [r["cores"] for r in loop.records] == expected
    assert expected == sorted(expected) and expected[0] < expected[-1]  # the load grew


def scaling_job(key_groups: int, nodes: int) -> Instance:
    """``nodes`` nodes, the first two owning the key groups in two ranges, the rest idle."""
    table = ranges_table(key_groups, num_slots=2, capacity=nodes)
    return Instance(node_ids=tuple(f"n{i}" for i in range(nodes)), capacity=np.ones(nodes),
                    key_group_ids=tuple(f"kg{k}" for k in range(key_groups)),
                    load=np.ones(key_groups), state_size=np.ones(key_groups),
                    slot_of=table.as_array())


def test_a_scaling_spec_goes_2_4_2_slots_in_mini_migrations_of_one_key_group() -> None:
    spec = PipelineSpec.of(time_col="time", key_col="key", aggs=(AggSpec("count"),),
                           windows=(WindowSpec(1000, 1000),),
                           slots=2, key_groups=16, planner="hash", max_moves=1,
                           scale_at=(ScaleEvent(2, 4), ScaleEvent(20, 2)))
    job = RoundsRuntime(scaling_job(16, spec.scaling.max_slots))
    loop = ControlLoop(job, Controller(*job_planner(spec)), spec)
    slots_after: dict[int, int] = {}
    for batch in range(1, 41):
        job.period(batch)
        loop.step()
        slots_after[batch] = len(set(job.routing().slot_of))
    records: list[dict[str, Any]] = loop.records
    assert [r.get("scale_to") for r in records if "scale_to" in r] == [4, 2]
    assert [r["batch_id"] for r in records if "scale_to" in r] == [2, 20]
    for record in records:
        ran_with = job.routing(record["observed_routing_version"])
        now = job.routing(record["routing_version"])
        assert int((ran_with.as_array() != now.as_array()).sum()) == record["moves"] <= 1
        if record.get("key_groups_to_move"):
            assert record["moves"] == 1  # nothing is in flight in the simulator
    assert slots_after[1] == 2 and slots_after[19] == 4 and slots_after[40] == 2
    target = job.load_state()
    assert target is not None and target["events"] == 2
    assert job.routing().slot_of == tuple(target["slot_of"])
    assert records[-1]["key_groups_to_move"] == 0
    _, owners = runs(job.routing().as_array())
    assert len(owners) == len(set(owners)) == 2  # each slot owns one range of key groups
    loads = job.period(41).slot_load[list(owners)]
    assert loads.sum() == 16 and loads.max() <= (1 + spec.scaling.tau) * 8  # SSM's bound τ


def test_a_scale_requested_before_any_load_waits_for_load() -> None:
    spec = PipelineSpec.of(time_col="time", key_col="key", aggs=(AggSpec("count"),),
                           windows=(WindowSpec(1000, 1000),),
                           slots=2, key_groups=8, planner="hash", max_moves=1, max_slots=4)
    job = RoundsRuntime(scaling_job(8, spec.scaling.max_slots))
    loop = ControlLoop(job, Controller(*job_planner(spec)), spec)
    loop.request_scale(4)
    job.load = np.zeros(8)
    job.period(1)
    loop.step()  # nothing observed to balance yet: the request waits
    assert job.load_state() is None and job.routing().version == 0
    job.load = np.ones(8)
    job.period(2)
    assert loop.step()["scale_to"] == 4  # type: ignore[index]
    with pytest.raises(OptionError, match=r"^slots must be an integer in \[1, 4\]"):
        loop.request_scale(5)


def test_every_round_is_one_step_of_the_control_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    steps: list[dict[str, Any]] = []
    step = ControlLoop.step

    def counted(loop: ControlLoop) -> dict[str, Any] | None:
        record = step(loop)
        assert record is not None
        steps.append(record)
        return record

    monkeypatch.setattr(ControlLoop, "step", counted)
    inst = albic_instance(nodes=6, key_groups=60, operators=3, varies=30, collocation=60, seed=4)
    common: dict[str, Any] = {"settings": {"max_moves": 5}, "rounds": 4, "drift": 3.0,
                              "serialisation": 0.2, "seed": 1}
    plain = run_rounds(inst, "flux", clock=ticking(), **common)
    assert len(steps) == 4
    # A policy whose band holds every utilisation never scales: the same rounds.
    inert = run_rounds(inst, "flux", clock=ticking(), scaling=ScalingPolicy(70.0, 69.0),
                       **common)
    assert len(steps) == 8 and plain == inert
    assert sum(r.migrations for r in plain.records) > 0
    # Algorithm 1's node changes are steps too: nodes added are slots of the version published.
    grown = run_rounds(inst, "flux", clock=ticking(), scaling=ScalingPolicy(20.0, 5.0),
                       **common)
    added = [r.added for r in grown.records]
    assert len(steps) == 12 and added[0] > 0
    assert [len(r["slot_load"]) for r in steps[8:]] == \
        [6 + sum(added[:i]) for i in range(4)]
    # Nodes of B are drained through the loop and terminated between its steps.
    drained = run_rounds(inst.marked(["n0", "n1"]), "flux", clock=ticking(),
                         **{**common, "settings": {"max_moves": 12}})
    assert len(steps) == 16
    assert [(r.nodes, r.on_removed, r.terminated) for r in drained.records] == \
        [(6, 8, 0), (6, 0, 0), (4, 0, 2), (4, 0, 0)]
    assert drained.node_ids == ("n2", "n3", "n4", "n5")
    assert [len(r["slot_load"]) for r in steps[12:]] == [6, 6, 4, 4]


def test_an_instance_no_spec_can_hold_takes_algorithm_1s_path() -> None:
    empty = Instance(node_ids=("a", "b"), capacity=np.ones(2), key_group_ids=(),
                     load=np.empty(0), state_size=np.empty(0), slot_of=np.empty(0, np.int64))
    result = run_rounds(empty, "flux", rounds=2)
    assert [r.status for r in result.records] == ["unchanged", "unchanged"]
