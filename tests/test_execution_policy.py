"""The controller's split-or-combine policy (control/execution.py) over measured periods."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from elastream.control.execution import CostModel, Fixed
from elastream.control.runtime import BatchObservation
from elastream.core.routing import RoutingTable

HOUR = 3_600_000
SPLIT = RoutingTable.hashed(8, 2)
COMBINED = replace(SPLIT, execution="combine")


def observed(hour: int, rows: int, **costs: float) -> BatchObservation:
    record = {"batch_id": hour, "valid_rows": rows,
              "max_event_time": f"2001-01-01T{hour:02d}:00:00Z"}
    return BatchObservation(record, np.zeros(8), np.zeros(2), costs=costs)


def period(policy: CostModel, hour: int, routing: RoutingTable, **costs: float
           ) -> tuple[str, dict[str, Any] | None]:
    """One observation that ends the period begun an hour before."""
    return policy(observed(hour, 100_000, **costs), routing, 0)


def model() -> CostModel:
    policy = CostModel(windows=2, panes_per_window=10, period_ms=HOUR,
                       latency_threshold=math.inf)
    assert policy(observed(0, 0), SPLIT, 0) == ("split", None)  # the first period begins
    return policy


def test_a_window_partials_cost_carries_over_as_a_ratio_to_the_pane_partials() -> None:
    policy = model()
    # Few keys, split: 1,000 partials in 2 s (2 ms each, mostly the batches' fixed cost).
    few = dict(compute_seconds=1.0, executions=100_000, consolidate_seconds=2.0,
               partials=1_000, pane_partials=1_000, window_partials=2_000)
    choice, decision = period(policy, 1, SPLIT, **few)
    assert choice == "combine" and decision is not None  # the paper's model: no consolidation
    assert decision["terms"]["combine_consolidation"] == 0
    # Combined: 2,000 window partials in 0.5 s, 0.25 ms each: an eighth of a pane partial's.
    combined = dict(few, compute_seconds=2.0, executions=200_000, consolidate_seconds=0.5,
                    partials=2_000)
    choice, decision = period(policy, 2, COMBINED, **combined)
    assert decision is not None
    assert decision["terms"]["K_1"] == pytest.approx(0.002)  # 0.25 ms over the ratio 1/8
    assert decision["terms"]["combine_consolidation"] == pytest.approx(0.5)
    assert (choice, decision["split_cpu"], decision["combine_cpu"]) == ("combine", 3.0, 2.5)
    # Many keys, still combined: 20 window partials per pane partial, 0.05 ms each. Split's
    # K_1 is the ratio's 0.4 ms, not the 2 ms measured over few keys (which would make split
    # cost 1 + 100 s and keep the job combined).
    many = dict(combined, consolidate_seconds=50.0, partials=1_000_000, pane_partials=50_000,
                window_partials=1_000_000)
    choice, decision = period(policy, 3, COMBINED, **many)
    assert decision is not None and decision["terms"]["K_1"] == pytest.approx(0.0004)
    assert (choice, decision["split_cpu"], decision["combine_cpu"]) == ("split", 21.0, 52.0)


def test_a_period_run_both_ways_decides_nothing_and_measures_no_ratio() -> None:
    policy = model()
    costs = dict(compute_seconds=1.0, executions=100_000, consolidate_seconds=2.0,
                 partials=1_000, pane_partials=1_000, window_partials=2_000)
    assert policy(observed(0, 100, **costs), COMBINED, 0) == ("combine", None)  # mid-period
    assert period(policy, 1, SPLIT, **costs) == ("split", None)  # ran both ways: no decision
    choice, decision = period(policy, 2, SPLIT, **costs)
    assert choice == "combine" and decision is not None
    assert decision["terms"]["combine_consolidation"] == 0  # no combined period measured


def test_fixed_never_changes() -> None:
    assert Fixed("combine")(observed(5, 10), SPLIT, 3) == ("combine", None)
