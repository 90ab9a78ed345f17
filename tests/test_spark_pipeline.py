"""End-to-end tests of the Spark pipeline against the pandas oracle (real local Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.oracle import compare_results, window_oracle
from tests.spark_jobs import make_spec, random_stream, run_job

from elastream.core.errors import OptionError
from elastream.stores.migration_store import MigrationStore
from elastream.stores.routing_store import RoutingStore

pytestmark = pytest.mark.spark


def oracle_for(df: pd.DataFrame, spec: Any) -> pd.DataFrame:
    return window_oracle(df, time_col=spec.source.time_col, key_col=spec.source.key_col,
                         aggs=spec.windowing.aggs, windows=spec.windowing.windows)


def test_several_windows_exact_with_a_routing_change_every_batch(spark: Any,
                                                                   tmp_path: Path) -> None:
    df = random_stream(seed=1, rows=600)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out",
                     aggs=["sum:v", "count", "count:v", "avg:v", "min:v", "max:v"],
                     windows=["1h", "6h/1h", "1d/1h", "90m/30m"], rows_per_batch=100)
    run = run_job(spark, spec, force_moves=True)
    compare_results(run.results, oracle_for(df, spec))
    assert run.summary["input_rows"] == len(df)
    assert run.summary["nothing_lost"]
    assert run.summary["dead_letter_rows"] == 0
    # The routing changed after every observation, and batches ran with the new versions:
    # each with one published before it (batches run freely, so a version published while the
    # next batch was already bound applies a batch later), never going back.
    records = [m for m in run.metrics if m["valid_rows"]]
    versions = [m["routing_version"] for m in records]
    assert versions == sorted(set(versions)) and len(versions) >= 4
    observed = [m["observed_routing_version"] for m in records]
    assert observed == sorted(observed)
    assert all(seen < version for seen, version in zip(observed, versions, strict=True))
    assert len(set(observed)) >= 2
    # A moved key group's records were split over both slots: more pane partials than keys.
    assert run.summary["moves"] > 0


def test_stopped_mid_stream_resumes_from_checkpoint(spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=2, rows=500, keys=6)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count"],
                     windows=["2h", "4h/2h"], rows_per_batch=100, max_batches=2, max_slots=4)
    first = run_job(spark, spec)
    assert first.summary["input_rows"] < len(df)
    # The rerun asks for 4 slots: the job (started to scale, within its 4 partitions) moves
    # to them live.
    resumed = run_job(spark, spec.with_(max_batches=None, slots=4))
    compare_results(resumed.results, oracle_for(df, spec))
    assert resumed.summary["input_rows"] == len(df)
    assert resumed.summary["nothing_lost"]
    assert [m["scale_to"] for m in resumed.metrics if "scale_to" in m] == [4]
    assert resumed.metrics[-1]["active_slots"] == 4
    assert json.loads((spec.files.output / "job.json").read_text())["slots"] == 4
    with pytest.raises(OptionError, match=r"holds a job started with other options: windows "
                                          r"was 2h, 4h/2h, now 2h; aggs was sum:v, count, now"):
        run_job(spark, spec.with_(windows=spec.windowing.windows[:1],
                                  aggs=spec.windowing.aggs[:1]))


def test_malformed_records_go_to_dead_letter_with_reasons(spark: Any, tmp_path: Path) -> None:
    df = random_stream(seed=3, rows=300, keys=5)
    text = df.assign(ts=df["ts"].dt.strftime("%Y-%m-%d %H:%M:%S"),
                     v=df["v"].map(lambda x: "" if pd.isna(x) else repr(float(x))))
    lines = [",".join(map(str, row)) for row in text.itertuples(index=False)]
    bad = ["yesterday,k1,3.0", "2001-03-01 05:00:00,,2.0", "2001-03-01 06:00:00,k2,abc",
           "2001-03-01 07:00:00,k3,1.0,extra"]
    path = tmp_path / "in.csv"
    path.write_text("ts,key,v\n" + "\n".join(lines[:100] + bad + lines[100:]) + "\n")
    spec = make_spec(path, tmp_path / "out", aggs=["sum:v", "count"], windows=["1h"],
                     format="csv", rows_per_batch=120)
    run = run_job(spark, spec)
    compare_results(run.results, oracle_for(df, spec))
    assert run.summary["dead_letter_rows"] == len(bad)
    assert run.summary["input_rows"] == len(df) + len(bad)
    assert run.summary["nothing_lost"]
    reasons = sorted(run.dead_letter["reason"])
    assert any(r.startswith("ts: cannot parse time 'yesterday'") for r in reasons)
    assert "key: missing key" in reasons
    assert any(r.startswith("v: not a number 'abc'") for r in reasons)
    assert any(r.startswith("malformed record: expected 3 fields, got 4") for r in reasons)


def test_fish_planner_splits_a_hot_key_over_slots_and_stays_exact(spark: Any,
                                                                  tmp_path: Path) -> None:
    df = random_stream(seed=5, rows=1200, keys=12)
    hot = df.sample(frac=0.5, random_state=5).index
    df.loc[hot, "key"] = "hot"  # half of all records: more than a slot's fair share (1/4)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count"],
                     windows=["2h", "6h/2h"], planner="fish", rows_per_batch=200, slots=4,
                     key_groups=16)
    run = run_job(spark, spec)
    compare_results(run.results, oracle_for(df, spec))
    assert run.summary["nothing_lost"]
    split = [m for m in run.metrics if m["hot_keys"]]
    assert split, "the hot key was never split"
    assert all(m["split_slots"] >= 2 for m in split)
    assert all("hot" in m["hot_key_names"] for m in split)  # named, not only counted
    # Batches routed by a split table spread the hot key: no slot carries half the batch.
    routed_split = [m for m in run.metrics[1:] if m["valid_rows"] and m["observed_routing_version"]]
    assert routed_split
    assert all(max(m["slot_load"]) < 0.45 * m["valid_rows"] for m in routed_split)


def test_exact_while_the_routing_history_is_compacted_and_old_versions_deleted(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from elastream.runtimes.spark import runtime
    from elastream.stores.routing_history import RoutingHistory

    monkeypatch.setattr(runtime, "KEEP_BINDINGS", 1)  # compact right behind the commits
    df = random_stream(seed=3, rows=700, keys=10)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count"],
                     windows=["1h", "6h/1h"], rows_per_batch=100)
    run = run_job(spark, spec, force_moves=True)
    compare_results(run.results, oracle_for(df, spec))
    assert run.summary["nothing_lost"] and run.summary["moves"] > 0
    routing = tmp_path / "out" / "_routing"
    snapshot = RoutingHistory.snapshot(RoutingStore(routing))
    assert snapshot is not None and snapshot.base > 0
    assert not (routing / "v00000000.json").exists()


def test_smooth_migration_is_exact_and_hands_over_no_window_state(spark: Any,
                                                                  tmp_path: Path) -> None:
    # Enorm §4.5: a moved key group's old slot finishes the windows begun before the move's
    # boundary, the new slot builds those from it on; both get its partials meanwhile.
    df = random_stream(seed=5, rows=600)
    df.to_parquet(tmp_path / "in.parquet")
    spec = make_spec(tmp_path / "in.parquet", tmp_path / "out", aggs=["sum:v", "count", "max:v"],
                     windows=["1h", "6h/1h", "90m/30m"], rows_per_batch=100, slots=3,
                     migration_kind="smooth")
    run = run_job(spark, spec, force_moves=True)
    compare_results(run.results, oracle_for(df, spec))
    assert run.summary["nothing_lost"] and run.summary["moves"] > 0
    assert max(m.get("smooth_in_transit", 0) for m in run.metrics) > 0
    # A smooth hand-off carries only the panes from the boundary on (of rows routed before the
    # move took effect); every one was taken over and acknowledged with its size.
    handed = MigrationStore(tmp_path / "out" / "_migration").hand_offs()
    assert handed and all(h.rows >= 0 for h in handed)
