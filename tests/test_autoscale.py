"""Autoscaling's inputs and decisions without Spark: the model, its hysteresis, the backlog."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from elastream.control.autoscale import AutoscaleOptions, Autoscaler
from elastream.core.errors import OptionError
from elastream.core.load import ServiceTimes
from elastream.runtimes.spark.backlog import Backlog
from elastream.runtimes.spark.ledger import CountsLedger
from elastream.stores.filesystem import LocalFolder


def busy(rows: float, slots: int = 2, overhead: float = 1.0) -> ServiceTimes:
    """One second of ``rows`` at μ = 1,000 rows per busy slot-second."""
    return ServiceTimes(1.0, np.full(slots, rows / 1000 / slots), rows=rows,
                        overhead_seconds=overhead)


def test_the_model_needs_the_stable_minimum_at_the_effective_rate() -> None:
    scaler = Autoscaler(AutoscaleOptions(1, 16, latency_target=2.0))
    # μ_eff = 1000 · (1 − 1/2) = 500 rows/s: ⌊λ/500⌋ + 1 slots.
    for rows, slots in ((100, 1), (499, 1), (500, 2), (2600, 6)):
        assert scaler.needed(busy(rows))[0] == slots
    # A backlog adds backlog / (10 · T) rows/s: 10,000 rows over 20 s, 500 rows/s more.
    assert scaler.needed(busy(100), backlog=10_000)[0] == 2
    assert scaler.needed(None) == (None, {"backlog_rows": 0})
    assert scaler.needed(busy(100, overhead=2.0))[0] == 16  # O >= T: the most


def test_the_rate_is_what_arrives_now_not_the_folded_history() -> None:
    """The runtime folds older measurements into μ (rows and busy seconds add up, decayed);
    λ is this observation's rows over its interval, never the folded rows."""
    scaler = Autoscaler(AutoscaleOptions(1, 16, latency_target=2.0))
    history = busy(400)
    for _ in range(10):
        history = busy(400).folded(history, decay=0.7)
    assert history.rows > 1300 and history.arrival_rate == 400.0
    assert scaler.needed(history)[0] == scaler.needed(busy(400))[0] == 1


def test_slots_beyond_the_cores_a_job_runs_on_are_never_asked_for() -> None:
    scaler = Autoscaler(AutoscaleOptions(1, 16, latency_target=2.0))
    assert scaler.needed(busy(2600), cores=2) == (2, {**scaler.needed(busy(2600))[1],
                                                      "cores": 2})
    assert scaler.needed(busy(2600, overhead=2.0), cores=3)[0] == 3  # O >= T: the cores
    assert "cores" not in scaler.needed(busy(100), cores=2)[1]  # 1 slot: not capped
    assert Autoscaler(AutoscaleOptions(4, 8)).needed(busy(9000), cores=2)[0] == 4  # fewest
    decision = scaler.decide(1, busy(2600), cores=2)
    assert (decision["decision"], decision["slots"], decision["reason"]) == (
        "out", 2, "2 slots, one per core the job runs on: more add no parallelism")


def test_it_never_flaps_a_load_that_wavers_keeps_the_slots() -> None:
    scaler = Autoscaler(AutoscaleOptions(1, 8, latency_target=2.0, patience=3, cool_down=2))
    decisions = [scaler.decide(4, busy(rows))["decision"]
                 for rows in (1200, 1600, 1200, 1600, 1200, 1600)]  # needs 3, 4, 3, 4, ...
    assert decisions == ["hold"] * 6
    assert scaler.decide(4, busy(2600))["slots"] == 6
    assert [scaler.decide(6, busy(100))["reason"] for _ in range(2)] == [
        "cooling down (2 more steps)", "cooling down (1 more step)"]


@pytest.mark.parametrize(("bounds", "target", "named"), [
    ((3, 2), 5.0, "autoscale"), ((0, 2), 5.0, "fewest"), ((1, 2), 0.0, "latency_target")])
def test_bad_bounds_or_targets_name_the_option(bounds: tuple[int, int], target: float,
                                               named: str) -> None:
    with pytest.raises(OptionError, match=f"^{named} must"):
        AutoscaleOptions(*bounds, latency_target=target)


def test_the_backlog_is_the_rows_arrived_less_those_committed(tmp_path: Path) -> None:
    folder, commits = tmp_path / "in", tmp_path / "commits"
    folder.mkdir()
    commits.mkdir()
    pd.DataFrame({"v": range(300)}).to_parquet(folder / "a.parquet")
    (folder / "b.csv").write_text("v\n" + "\n".join(map(str, range(50))) + "\n")
    parquet = Backlog(lambda: sorted(folder.glob("*.parquet")), "parquet", tmp_path, commits)
    assert parquet() == 300
    CountsLedger(LocalFolder(tmp_path)).record(0, {"input_rows": 120, "valid_rows": 120})
    assert parquet() == 300  # written, not committed
    (commits / "0").touch()
    assert parquet() == 180
    csv = Backlog(lambda: [folder / "b.csv", folder / "gone.csv"], "csv", tmp_path, commits)
    assert csv() == 0  # 50 rows arrived, 120 committed
    CountsLedger(LocalFolder(tmp_path)).record(0, {"input_rows": 20, "valid_rows": 20})
    assert csv() == 30
