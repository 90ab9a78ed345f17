"""A job's defining options (core/identity.py): what a resumed job must keep, what may change."""

from __future__ import annotations

from typing import Any

import pytest

from elastream.core.aggregates import AggSpec
from elastream.core.errors import OptionError
from elastream.core.identity import Resume, check_resume, identity
from elastream.core.spec import PipelineSpec, ScaleEvent
from elastream.core.windows import WindowSpec


def spec(**options: Any) -> PipelineSpec:
    base: dict[str, Any] = dict(time_col="ts", key_col="user", aggs=(AggSpec.parse("count"),),
                                windows=(WindowSpec.parse("10m"),), slots=2, key_groups=16)
    base.update(options)
    return PipelineSpec.of(**base)


SCALING = spec(planner="hash", max_slots=6)


def test_what_may_change_between_runs_resumes_as_it_is() -> None:
    recorded = identity(spec())
    for changed in (spec(planner="milp"), spec(max_moves=9), spec(tau=0.5),
                    spec(planner_options={"min_imbalance": 0.2})):
        assert check_resume(recorded, changed) == Resume(2, None, False)


@pytest.mark.parametrize(("options", "named"), [
    ({"key_col": "user,item"}, "key was user, now user,item"),
    ({"windows": (WindowSpec.parse("5m"),)}, "windows was 10m, now 5m"),
    ({"aggs": (AggSpec.parse("max:amount"),)}, "aggs was count, now max:amount"),
    ({"lateness_ms": 60_000}, "lateness was 0s, now 1m"),
    ({"execution": "combine"}, "execution was split, now combine"),
    ({"key_groups": 32}, "key_groups was 16, now 32"),
])
def test_a_defining_option_that_differs_is_named_with_both_values(
        options: dict[str, Any], named: str) -> None:
    with pytest.raises(OptionError, match=named):
        check_resume(identity(spec()), spec(**options))


def test_a_job_started_to_scale_moves_to_another_slot_count_within_its_partitions() -> None:
    recorded = identity(SCALING, by_ranges=True)
    assert recorded["scales"] == "ranges"
    assert check_resume(recorded, SCALING.with_(slots=5), by_ranges=True) \
        == Resume(6, 5, True)
    # Fewer most-slots asked than the job has: it keeps its partitions, and keeps scaling.
    assert check_resume(recorded, spec(planner="hash", slots=3)) == Resume(6, 3, True)
    with pytest.raises(OptionError, match="max_slots must be at most 6"):
        check_resume(recorded, spec(planner="hash", slots=2, max_slots=8))
    # A balancing planner goes on from key-group ranges; ranges do not come back after moves.
    assert check_resume(recorded, spec(planner="flux", slots=4)) == Resume(6, 4, True)
    moved = identity(SCALING.with_(planner="flux"))
    assert moved["scales"] == "moves"
    with pytest.raises(OptionError, match="planner must move key groups, as the job in "
                                          "state_dir was started to scale with planner flux"):
        check_resume(moved, SCALING, by_ranges=True)


def test_a_job_started_not_to_scale_keeps_its_slots() -> None:
    recorded = identity(spec(slots=4))
    with pytest.raises(OptionError, match=r"slots must be 4, as the job in state_dir has"):
        check_resume(recorded, spec(slots=2))
    with pytest.raises(OptionError, match="cannot scale the job in state_dir"):
        check_resume(recorded, spec(slots=4, planner="hash", scale_at=(ScaleEvent(3, 2),)))


def test_a_job_of_another_layout_is_refused() -> None:
    with pytest.raises(OptionError, match="another elastream version"):
        check_resume({**identity(spec()), "version": 0}, spec())
