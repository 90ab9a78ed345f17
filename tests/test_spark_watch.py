"""Watch mode: a folder of files streamed as they are, windows closed by the data's watermark."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.oracle import compare_results, window_oracle
from tests.spark_jobs import make_spec, random_stream, run_job

pytestmark = pytest.mark.spark


def test_watched_folder_emits_every_window_the_watermark_closed(spark: Any,
                                                                tmp_path: Path) -> None:
    df = random_stream(seed=5, rows=450, keys=6, hours=30)
    folder = tmp_path / "in"
    folder.mkdir()
    for i, part in enumerate((df.iloc[:150], df.iloc[150:300], df.iloc[300:])):
        part.to_parquet(folder / f"part-{i}.parquet", coerce_timestamps="us")
    spec = make_spec(folder, tmp_path / "out", aggs=["sum:v", "count"], windows=["2h", "6h/2h"],
                     mode="watch", max_batches=3)
    run = run_job(spark, spec, force_moves=True)
    watermark = pd.Timestamp(df["ts"].max())
    expected = window_oracle(df, time_col="ts", key_col="key", aggs=spec.windowing.aggs,
                             windows=spec.windowing.windows)
    expected = expected[expected["window_end"] <= watermark]
    compare_results(run.results, expected)
    assert run.summary["input_rows"] == len(df)
    assert run.summary["nothing_lost"]
    # A watched folder hands no state over, so nothing holds a key group back from moving again.
    moved = [kg for m in run.metrics for kg in m["moved_key_groups"]]
    assert len(moved) > len(set(moved))


def test_the_api_reads_a_watched_folder_with_bad_files_and_counts_what_it_took(
        spark: Any, tmp_path: Path) -> None:
    import elastream as es
    from elastream.runtimes.spark.sink import ParquetBatchSink

    df = random_stream(seed=6, rows=600, keys=6, hours=30)
    folder = tmp_path / "in"
    folder.mkdir()
    first, second, third = df.iloc[:200], df.iloc[200:400], df.iloc[400:]
    first.to_parquet(folder / "a.parquet")  # pandas' default: nanosecond timestamps
    (folder / "b.parquet").write_bytes(b"")  # an empty file: no Parquet at all
    second.to_parquet(folder / "c.parquet", coerce_timestamps="us")
    third.to_parquet(folder / "d.parquet")
    for age, name in enumerate(("d", "c", "b", "a")):  # oldest first: a, b, c, d
        os.utime(folder / f"{name}.parquet", (1_700_000_000 - age, 1_700_000_000 - age))
    es.configure(spark, 2)
    watched = es.watch_folder(spark, folder, work_dir=tmp_path / "intake",
                              schema="ts timestamp, key string, v double")
    job = es.windowed(watched.stream, key="key", time="ts", windows=["2h"],
                      aggs=["sum:v", "count"], slots=2, key_groups=8,
                      state_dir=tmp_path / "state")
    query = (job.results.writeStream.foreachBatch(ParquetBatchSink(tmp_path / "results"))
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
        job.stop()  # reads the stopped query's last reports
        watched.stop()
    assert [(q.file, q.reason.split(" (")[0]) for q in watched.quarantined] == [
        ("b.parquet", "not a readable Parquet file")]
    assert (tmp_path / "intake" / "quarantine.jsonl").is_file()
    expected = window_oracle(df, time_col="ts", key_col="key", aggs=job.spec.windowing.aggs,
                             windows=job.spec.windowing.windows)
    expected = expected[expected["window_end"] <= pd.Timestamp(df["ts"].max())]
    compare_results(pd.read_parquet(tmp_path / "results"), expected)
    # Every micro-batch that ran is in the metrics once, no record without a batch.
    assert sum(r["input_rows"] for r in job.metrics) == len(df)
    assert all(r["batch_id"] >= 0 for r in job.metrics)
