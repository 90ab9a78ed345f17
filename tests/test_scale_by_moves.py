"""Every balancing planner scales (control/slot_set.py, the loop's scaling by moves), no Spark.

The round simulator is the runtime: its key groups' loads are a job's, its nodes the job's slot
ids (``max_slots``), and the loop plans on each period as it does on Spark's micro-batches.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from elastream.algorithms.balance.scale_in import drain
from elastream.control.controller import Controller
from elastream.control.loop import ControlLoop
from elastream.control.planners import PLANNERS, check_planner, job_planner
from elastream.control.scale_events import scale_events
from elastream.control.scaling import ranges_table
from elastream.control.slot_set import SlotSet
from elastream.core import registry
from elastream.core.errors import OptionError
from elastream.core.plan import Capability
from elastream.core.routing import RoutingTable
from elastream.core.spec import ScaleEvent
from elastream.runtimes.sim.rounds_instance import albic_instance
from elastream.runtimes.sim.rounds_runtime import RoundsRuntime, round_spec

BALANCING = ("flux", "fish", "milp", "albic", "cola", "potc")
BUDGET = 3


def scaled(name: str, events: tuple[ScaleEvent, ...], batches: int,
           key_groups: int = 24, **options: Any) -> tuple[RoundsRuntime, list[dict]]:
    """A job of 4 of 6 slot ids run for ``batches`` periods with ``events``."""
    job = RoundsRuntime(albic_instance(nodes=6, key_groups=key_groups, varies=60, seed=1))
    job.publish(RoutingTable(1, tuple(kg % 4 for kg in range(key_groups)), 6))
    spec = round_spec(key_groups).with_(planner=name, slots=4, max_slots=6,
                                        max_moves=BUDGET, scale_at=events, **options)
    loop = ControlLoop(job, controller(spec), spec)
    records = []
    for batch in range(batches):
        job.period(batch)
        records.append(loop.step())
    return job, records


def controller(spec: Any) -> Controller:
    """The spec's planner; the MILP's solves cut to 0.3 s (small programs, many plans)."""
    quick = {"time_limit": 0.3} if spec.routing.planner in ("milp", "albic") else {}
    return Controller(*job_planner(spec, **quick))


def used(job: RoundsRuntime) -> set[int]:
    return set(job.routing().slot_of)


@pytest.mark.parametrize("name", BALANCING)
def test_every_balancing_planner_scales_out_then_in_within_its_budget(name: str) -> None:
    job, records = scaled(name, (ScaleEvent(1, 6), ScaleEvent(8, 3)), batches=24)
    if "max_moves" in registry.values(PLANNERS[name].options_type()):
        assert all(r["moves"] <= BUDGET for r in records)  # cola, potc: no budget of theirs
    grown = [r for r in records if r["batch_id"] < 8]
    assert grown[1]["scale_to"] == 6 and grown[1]["slots_added"] == [4, 5]
    # The planner fills the new slots by its own rule.
    assert any(r["active_slots"] == 6 for r in grown)
    shrink = next(r for r in records if r.get("scale_to") == 3)
    assert len(shrink["slots_marked"]) == 3
    # Every leaving slot is emptied, and is gone; the three that stay hold every key group.
    assert used(job) == set(range(6)) - set(shrink["slots_marked"])
    assert records[-1]["slots"] == 3 and records[-1]["slots_leaving"] == []
    assert sorted(s for r in records for s in r.get("slots_gone", [])) \
        == shrink["slots_marked"]
    events = scale_events(records, [(1, 6), (8, 3)])
    assert [(e["slots"], e["done"]) for e in events] == [(6, True), (3, True)]


@pytest.mark.parametrize("name", ["milp", "albic"])
def test_integrated_scale_in_empties_the_marked_slots_at_the_budget_s_pace(name: str) -> None:
    """ALBIC Lemmas 1-2 under a move budget: B receives nothing, and each plan takes
    min(budget, key groups left on B) off it, so B is empty after ⌈|on B| / budget⌉ plans."""
    job, records = scaled(name, (ScaleEvent(1, 2),), batches=16, key_groups=18)
    start = next(i for i, r in enumerate(records) if r.get("scale_to") == 2)
    leaving = set(records[start]["slots_marked"])
    assert records[start]["scale_plan"] == "remove"
    on_b = [sum(s in leaving for s in job.routing(r["routing_version"]).slot_of)
            for r in records[start:]]
    before = sum(s in leaving for s in job.routing(
        records[start]["observed_routing_version"]).slot_of)
    expected = [max(0, before - BUDGET * (i + 1)) for i in range(len(on_b))]
    assert on_b == expected
    for r in records[start:]:
        table, previous = job.routing(r["routing_version"]), \
            job.routing(r["observed_routing_version"])
        assert not any(s in leaving and p != s for s, p in zip(table.slot_of, previous.slot_of,
                                                              strict=True))


def test_a_separate_scale_in_drains_first_whatever_the_planner_takes() -> None:
    job, records = scaled("milp", (ScaleEvent(1, 2),), batches=10, key_groups=18,
                          scale_in="separate")
    start = next(r for r in records if r.get("scale_to") == 2)
    assert start["scale_plan"] == "drain" and start["moves"] == BUDGET
    assert used(job) == set(range(4)) - set(start["slots_marked"])


def test_a_scale_in_waits_for_none_leaving_and_a_scale_out_takes_leaving_slots_back() -> None:
    slots = SlotSet((0, 1, 2, 3)).resized(2, np.array([5.0, 1.0, 4.0, 2.0, 0.0, 0.0]))
    assert slots == SlotSet((0, 2), (1, 3))
    assert slots.resized(3, np.array([5.0, 1.0, 4.0, 2.0, 0.0, 0.0])) == SlotSet((0, 2, 3), (1,))
    assert slots.resized(5, np.zeros(6)) == SlotSet((0, 1, 2, 3, 4))


def test_drain_stays_within_the_budget_and_skips_hand_offs_in_flight() -> None:
    slot_of = np.array([2, 2, 2, 0, 1])
    removed = np.array([False, False, True])
    moves = drain(slot_of, removed, max_moves=2, skip={0})
    assert [(m.key_group, m.target) for m in moves] == [(1, 0), (2, 1)]
    with pytest.raises(OptionError, match="remove must leave at least one slot"):
        drain(slot_of, np.ones(3, dtype=bool))


def test_planners_declare_a_scale_in_mark_exactly_when_they_take_one() -> None:
    for name, entry in PLANNERS.items():
        takes = "remove" in registry.values(entry.options_type())
        assert takes == (Capability.TAKE_SCALE_IN_MARK in entry.can), name


def test_a_planner_that_sizes_its_slots_takes_no_scale_events() -> None:
    spec = round_spec(24).with_(planner="elasticutor", slots=4, max_slots=6)
    with pytest.raises(OptionError, match="scale_at is for planners that do not size"):
        check_planner(spec)
    with pytest.raises(OptionError, match="fish splits hot keys of one-operator jobs only"):
        check_planner(round_spec(24).with_(planner="fish", then=round_spec(24).with_(
            key_col="other").operators[:1]))


@pytest.mark.parametrize("name", ["hash", *BALANCING])
def test_autoscale_grows_under_a_rate_rise_and_shrinks_after_it(name: str) -> None:
    """λ = the load per one-second period; μ_eff = 0.8 μ (O = 1 s of T = 5 s): the base load
    needs ⌊1.5⌋ + 1 = 2 slots, three times it ⌊4.5⌋ + 1 = 5."""
    instance = albic_instance(nodes=8, key_groups=32, varies=60, seed=2)
    base = instance.load.astype(float)
    job = RoundsRuntime(instance, service_rate=float(base.sum()) / 1.2, overhead_seconds=1.0)
    table = ranges_table(32, 2, 8) if name == "hash" else \
        RoutingTable(0, tuple(kg % 2 for kg in range(32)), 8)
    job.publish(replace(table, version=1))
    spec = round_spec(32).with_(planner=name, slots=2, max_slots=8, autoscale=(1, 8),
                                max_moves=8, latency_target=5.0)
    loop = ControlLoop(job, controller(spec), spec)
    records = []
    for batch, rise in enumerate([1] * 3 + [3] * 8 + [1] * 10):
        job.load = base * rise
        job.period(batch)
        records.append(loop.step())
    decisions = [r["autoscale"] for r in records if "autoscale" in r]
    assert all({"needed", "rate", "service_rate", "reason"} <= set(d) for d in decisions)
    asked = [(r["batch_id"], r["scale_to"]) for r in records if r.get("scale_to")]
    # Out at the rise's first step; in after 3 steps in a row (patience) that needed 2.
    assert asked == [(3, 5), (13, 2)]
    assert len(set(job.routing().slot_of)) == 2
    assert max(len(set(job.routing(r["routing_version"]).slot_of)) for r in records) == 5
