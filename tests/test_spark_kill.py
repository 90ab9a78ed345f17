"""``elastream run`` killed with SIGKILL (its whole process group: driver and JVM) at random
moments, twice, then run again: it finishes cleanly, a pandas reader sees every window exactly
once, and the summary counts every input row once. The job scales out and in with ``albic``
(ALBIC's integrated scale-in: key groups leave the marked slots one per micro-batch), so a kill
may land in a hand-off; planner ``hash``'s range migrations are crashed in
tests/test_spark_scaling.py and in the chaos benchmark."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.live import every_reader_sees
from tests.oracle import window_oracle
from tests.spark_jobs import random_stream

from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec

pytestmark = pytest.mark.spark

KILLS = 2


def test_killed_runs_rerun_to_exact_results_for_every_reader(tmp_path: Path) -> None:
    df = random_stream(seed=41, rows=1500)
    df.to_parquet(tmp_path / "in.parquet")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "elastream.cli.main", "run",
               "--input", str(tmp_path / "in.parquet"), "--time-col", "ts", "--key-col", "key",
               "--agg", "sum:v", "--agg", "count", "--window", "2h", "--window", "6h/2h",
               "--slots", "2", "--key-groups", "8", "--rows-per-batch", "100",
               "--scale-at", "2:4", "--scale-at", "6:2", "--max-moves", "1", "--planner", "albic",
               "--output", str(out), "--quiet"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    rng = random.Random(41)
    killed = 0
    for _ in range(KILLS):
        run = subprocess.Popen(command, env=env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            run.wait(timeout=rng.uniform(6.0, 20.0))
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
            killed += 1
    assert killed >= 1, "every run ended before its kill"
    final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert final.returncode == 0, final.stderr[-3000:]
    assert "Traceback" not in final.stderr
    summary = json.loads(final.stdout)
    expected = window_oracle(df, time_col="ts", key_col="key",
                             aggs=[AggSpec.parse("sum:v"), AggSpec.parse("count")],
                             windows=[WindowSpec.parse("2h"), WindowSpec.parse("6h/2h")])
    assert summary["output_rows"] == len(expected)
    # The counts of every run, killed ones too, come from what each batch committed.
    assert summary["input_rows"] == summary["aggregated_rows"] == len(df)
    assert summary["nothing_lost"] and summary["batches"] > 0
    assert summary["scale_events"][-1]["slots"] == 2  # a kill may lose an event's record
    assert not [p for p in (out / "results").iterdir() if p.stat().st_size == 0]
    every_reader_sees(out / "results", expected)

