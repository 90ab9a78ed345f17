"""Watch mode: a folder of files streamed as they are, windows closed by the data's watermark."""

from __future__ import annotations

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
    expected = window_oracle(df, time_col="ts", key_col="key", aggs=spec.aggs,
                             windows=spec.windows)
    expected = expected[expected["window_end"] <= watermark]
    compare_results(run.results, expected)
    assert run.summary["input_rows"] == len(df)
    assert run.summary["nothing_lost"]
    # A watched folder hands no state over, so nothing holds a key group back from moving again.
    moved = [kg for m in run.metrics for kg in m["moved_key_groups"]]
    assert len(moved) > len(set(moved))
