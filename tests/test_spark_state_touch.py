"""A micro-batch reads and writes only the consolidate state of key groups that changed.

Counted by Spark itself: the ``transformWithStateInPandas`` operator's updated state rows in
each batch's progress (the map entries of key groups, the slots' meta values and timers).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.live import folder_stream, read_folder
from tests.oracle import compare_results, window_oracle

import elastream as es
from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec

pytestmark = pytest.mark.spark

KEYS, HOURS = 64, 7
T0 = pd.Timestamp("2001-01-01", tz="UTC")


def _files(folder: Path) -> pd.DataFrame:
    """Hour 0: every key; hours 1 … HOURS: key k0 alone (one file per hour)."""
    folder.mkdir()
    frames = [pd.DataFrame({"ts": T0 + pd.Timedelta(minutes=20), "key": [f"k{i}" for i in
                                                                         range(KEYS)],
                            "v": 1.0})]
    frames += [pd.DataFrame({"ts": [T0 + pd.Timedelta(hours=h, minutes=20)], "key": ["k0"],
                             "v": [float(h)]}) for h in range(1, HOURS + 1)]
    for index, frame in enumerate(frames):
        path = folder / f"f{index:03d}.parquet"
        frame.to_parquet(path, coerce_timestamps="us")
        os.utime(path, (1e9 + index, 1e9 + index))
    return pd.concat(frames, ignore_index=True)


def test_a_batch_touches_only_the_key_groups_that_changed(spark: Any, tmp_path: Path) -> None:
    data = _files(tmp_path / "in")
    es.configure(spark, 2)
    job = es.windowed(folder_stream(spark, tmp_path / "in"), key="key", time="ts",
                      windows=["1h", "3h/1h"], aggs=["sum:v", "count"], planner="hash",
                      slots=2, key_groups=128, state_dir=tmp_path / "state",
                      start_controller=False)
    query = (job.results.writeStream.foreachBatch(es.ParquetBatchSink(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
             .start())
    query.awaitTermination()
    closed = T0 + pd.Timedelta(hours=HOURS - 1)  # whether or not a last no-data batch ran
    expected = window_oracle(data, time_col="ts", key_col="key",
                             aggs=[AggSpec.parse("sum:v"), AggSpec.parse("count")],
                             windows=[WindowSpec.parse("1h"), WindowSpec.parse("3h/1h")])
    actual = read_folder(tmp_path / "out")
    compare_results(actual[actual["window_end"] <= closed].reset_index(drop=True),
                    expected[expected["window_end"] <= closed].reset_index(drop=True))
    progress = [_consolidate(p) for p in query.recentProgress]
    updated = [p["numRowsUpdated"] for p in progress]
    removed = [p["numRowsRemoved"] for p in progress]
    # Batch i reads hour i; its watermark is hour i-1 plus 20 min. Hour 0's panes close in
    # batch 2: every key's key group (49 of 128) gets partials and keeps them for the 3 h
    # windows; batch 3 emits [-1 h, 2 h) from them, batch 4 [0, 3 h) and drops them.
    assert min(updated[2:4]) >= 40 and removed[4] >= 40, (updated, removed)
    # From then on only k0's key group changes: its entry, the two slots' meta and timers.
    assert max(updated[5:]) <= 6 and max(removed[5:]) <= 1, (updated, removed)


def _consolidate(progress: dict[str, Any]) -> dict[str, Any]:
    return next(op for op in progress["stateOperators"]
                if op["operatorName"].startswith("transformWithState"))
