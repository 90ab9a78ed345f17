"""elastream on a real Spark standalone cluster: a master and two workers of one core each on
this machine (the ``cluster`` fixture), every job in a driver process of its own, as users
launch it, against the pandas oracle."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from tests.cluster_jobs import (
    TIMEOUT_S,
    app_id,
    env,
    oracle,
    spark_submit,
    stateful_tasks,
)
from tests.live import read_folder
from tests.on_cluster import SERVICE_RATE
from tests.oracle import compare_results

from elastream.core.options import OPTIONS
from elastream.runtimes.spark.pins import pins_for
from elastream.runtimes.spark.standalone import launched_executors
from elastream.stores.migration_store import MigrationStore

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

REPO = Path(__file__).resolve().parents[1]

def test_default_job_on_100k_flights_submitted_to_the_cluster_equals_the_oracle(
        cluster: Any, tmp_path: Path) -> None:
    from elastream.workloads.flights import fetch_flights

    flights = (pd.read_parquet(fetch_flights(quiet=True)).sort_values("date", kind="stable")
               .head(100_000).reset_index(drop=True))
    flights.to_parquet(tmp_path / "flights.parquet")
    out, events = tmp_path / "out", tmp_path / "events"
    done = spark_submit(cluster, "test-default-job", events, [
        "--input", str(tmp_path / "flights.parquet"), "--time-col", "date", "--key-col",
        "origin", "--output", str(out)])
    assert done.returncode == 0, done.stdout[-4000:]  # the program's stderr comes here too
    summary = json.loads((out / "summary.json").read_text())
    assert summary["input_rows"] == 100_000 and summary["nothing_lost"]
    expected = oracle(flights, OPTIONS["aggs"].cli_default, OPTIONS["windows"].cli_default,
                      "date", "origin")
    compare_results(read_folder(out / "results"), expected)
    assert summary["output_rows"] == len(expected)
    # spark-submit's master took: the cluster's two executors ran every state partition.
    assert launched_executors(cluster, app_id(cluster, "test-default-job")) == ["0", "1"]
    tasks = stateful_tasks(events)
    assert set(tasks["partition"]) == {0, 1, 2, 3}
    assert set(tasks["executor"]) <= {"0", "1"}


@pytest.fixture(scope="module")
def on_cluster(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The outputs of tests/on_cluster.py: placement, then a live scale-out from 2 to 4."""
    folder = tmp_path_factory.mktemp("on_cluster")
    done = subprocess.run([sys.executable, "-m", "tests.on_cluster", cluster.master_url,
                           str(folder)], cwd=REPO, env=env(), capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-4000:]
    return folder


def test_each_slots_pin_lands_in_its_partition_on_the_cluster(on_cluster: Path) -> None:
    """The compute stage aggregates each pane partial in its routed slot's partition, in the
    cluster's executors (the local placement test's stream)."""
    out = pd.read_parquet(on_cluster / "placement.parquet")
    slot_of = np.array(json.loads((on_cluster / "routing.json").read_text())["slot_of"])
    assert len(out) > 20
    expected = slot_of[out["kg"].to_numpy()]
    assert (out["part"].to_numpy() == expected).all()
    assert (out["pin"].to_numpy() == pins_for(4)[expected]).all()
    assert set(out["part"]) == {0, 1, 2, 3}
    assert set(out["executor"]) <= {"0", "1"}  # executors of the cluster, never the driver


def test_live_scale_out_from_2_to_4_hands_state_over_between_executors(
        on_cluster: Path) -> None:
    out = on_cluster / "out"
    df = pd.read_parquet(on_cluster / "in.parquet")
    compare_results(read_folder(out / "results"), oracle(df))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["nothing_lost"] and summary["input_rows"] == len(df)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    loaded = [m for m in metrics if m["valid_rows"]]
    assert [m["scale_to"] for m in loaded if m.get("scale_to")] == [4]
    assert loaded[-1]["active_slots"] == 4 and loaded[-1]["key_groups_to_move"] == 0
    # Every moved key group's state was handed over, from its old slot to its new one.
    hand_offs = MigrationStore(out / "_migration").hand_offs()
    moved = {(m["routing_version"], kg) for m in metrics for kg in m["moved_key_groups"]}
    assert {(h.version, h.kg) for h in hand_offs} == moved
    assert all(h.source != h.target and h.taken > h.sent >= 0 for h in hand_offs)
    # Which executor ran the sending and the receiving slot's task, per Spark's event log.
    # The moves of a 2 -> 4 scale-out link all four slots (0 -> 1 -> 2, 1 -> 3), so while
    # both executors hold state partitions some hand-off must cross between them.
    ran = stateful_tasks(on_cluster / "events").set_index(["batch", "partition"])["executor"]
    ends = [(ran[(h.sent, h.source)], ran[(h.taken, h.target)]) for h in hand_offs]
    assert set(ran) == {"0", "1"}
    assert any(sender != receiver for sender, receiver in ends), ends


def test_albic_scales_out_and_in_by_moves_between_executors(on_cluster: Path) -> None:
    out = on_cluster / "albic"
    df = pd.read_parquet(on_cluster / "in.parquet")
    compare_results(read_folder(out / "results"), oracle(df))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["nothing_lost"] and summary["input_rows"] == len(df)
    assert [e["slots"] for e in summary["scale_events"]] == [4, 2]
    assert all(e["done"] for e in summary["scale_events"])
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    marked = next(m["slots_marked"] for m in metrics if m.get("scale_to") == 2)
    gone = [s for m in metrics for s in m.get("slots_gone", [])]
    assert len(marked) == 2 and sorted(gone) == sorted(marked)
    last = [m for m in metrics if "slots_active" in m][-1]
    assert last["slots_active"] == sorted(set(range(4)) - set(marked))
    hand_offs = MigrationStore(out / "_migration").hand_offs()
    moved = {(m["routing_version"], kg) for m in metrics for kg in m["moved_key_groups"]}
    assert moved and {(h.version, h.kg) for h in hand_offs} == moved


def test_executors_follow_the_slots_the_model_asks_for(on_cluster: Path) -> None:
    """The elasticutor job of tests/on_cluster.py: each step's rows decide its slots, the job
    holds an executor per slot in use (asked of the master at once, released at once), and
    the results stay exact; a pool of the same application then releases and regains one."""
    out = on_cluster / "elastic"
    df = pd.read_parquet(on_cluster / "elastic-in.parquet")
    expected = oracle(df)
    expected = expected[expected["window_end"] <= df["ts"].max()]  # what the watermark closed
    compare_results(read_folder(out / "results"), expected)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["nothing_lost"] and summary["input_rows"] == len(df)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if m["valid_rows"]]
    for step in steps:  # λ = the step's rows per second, μ = 100: ⌊λ/μ⌋ + 1 slots, 2 at most
        wanted = min(2, step["valid_rows"] // int(SERVICE_RATE) + 1)
        assert step["slots_used"] == step["executors_wanted"] == wanted, step
        assert step["executors_target"] == wanted  # released at once (release_after 0)
        assert 1 <= step["executors"] <= 2
    assert any(s["slots_used"] == 2 for s in steps)  # a 150-row file alone wants 2
    pool = json.loads((on_cluster / "pool.json").read_text())
    assert len(pool["released"]) == 1 and len(pool["regained"]) == 2
    assert set(pool["regained"]) - set(pool["before"])  # a new executor was launched
