"""``elastream run --mode watch`` as a service, stopped and resumed twice: started on an empty
folder it waits for the first file; files arrive while it runs and while it is stopped, among
them a pandas file with nanosecond timestamps, a file that is no Parquet (fixed later in
place) and one whose column has another type; Ctrl-C and SIGTERM stop it gracefully. Each stop
writes a summary that counts exactly the rows of the files taken, and the final results are the
oracle's, read with pandas, pyarrow and DuckDB."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.live import every_reader_sees, read_folder, split, write_part
from tests.oracle import window_oracle
from tests.spark_jobs import random_stream

from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec
from elastream.stores.metrics_file import read_metrics

pytestmark = pytest.mark.spark

DEADLINE = 600
"""Seconds a step may take before the test calls the service stuck (it never waits on time)."""


def _lines(stream: Any) -> tuple[queue.Queue[str], threading.Thread]:
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:
            found.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return found, reader


class Service:
    """One run of the service, its stderr lines read as they come."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.errors, self.reader = _lines(self.process.stderr)
        self.said: list[str] = []

    def until(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while not done():
            assert self.process.poll() is None, f"the service ended by itself: {self.said}"
            assert time.monotonic() < deadline, f"{what} never happened: {self.said}"
            self.read()
            time.sleep(0.2)
        self.read()

    def read(self) -> None:
        while not self.errors.empty():
            self.said.append(self.errors.get())

    def stop(self, sig: int) -> dict[str, Any]:
        self.process.send_signal(sig)
        self.process.wait(timeout=DEADLINE)  # its stdout is the summary alone: no pipe fills
        assert self.process.stdout is not None
        stdout = self.process.stdout.read()
        self.reader.join(timeout=DEADLINE)  # to the end of its stderr
        self.read()
        assert self.process.returncode == 130, self.said
        summary: dict[str, Any] = json.loads(stdout)
        return summary


def counted(out: Path) -> int:
    """Rows the job's metrics (its progress reports) counted so far."""
    return sum(int(r["input_rows"]) for r in read_metrics(out / "metrics.jsonl"))


def test_a_watched_folder_resumed_twice_counts_every_file_and_quarantines_bad_ones(
        tmp_path: Path) -> None:
    df = random_stream(seed=51, rows=1400)
    parts = split(df, 7)
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    command = [sys.executable, "-m", "elastream.cli.main", "run", "--mode", "watch",
               "--input", str(folder), "--time-col", "ts", "--key-col", "key",
               "--agg", "sum:v", "--agg", "count", "--window", "2h", "--slots", "2",
               "--key-groups", "8", "--planner", "flux", "--output", str(out),
               # Idle progress reports come every 0.1 s instead of 10 s: a report under the
               # id of the batch a waiting query runs next must not stand in for that batch.
               "--conf", "spark.sql.streaming.noDataProgressEventInterval=100"]

    def rows(*numbers: int) -> int:
        return sum(len(parts[i]) for i in numbers)

    # Run 1 starts on an empty folder; two files, then one more once it idles.
    run = Service(command)
    run.until(lambda: any("waiting for the first" in line for line in run.said), "waiting")
    write_part(folder, 0, parts[0])
    write_part(folder, 1, parts[1])
    run.until(lambda: counted(out) == rows(0, 1), "files 0-1 counted")
    time.sleep(1)  # idle meanwhile (not needed for the counts to be right)
    write_part(folder, 2, parts[2])
    run.until(lambda: counted(out) == rows(0, 1, 2), "file 2 counted")
    summary = run.stop(signal.SIGINT)
    assert (summary["input_rows"], summary["interrupted"], summary["nothing_lost"]) == (
        rows(0, 1, 2), True, True)
    assert json.loads((out / "summary.json").read_text()) == summary

    # Stopped: a pandas file (nanosecond timestamps), a file that is no Parquet and one whose
    # value column is text arrive; the service takes the first and quarantines the others.
    parts[3].to_parquet(folder / "part-00003.parquet")
    (folder / "part-00004.parquet").write_bytes(b"PAR1 half a file")
    parts[0].assign(v=parts[0]["v"].astype(str)).to_parquet(folder / "part-00009.parquet",
                                                            coerce_timestamps="us")
    run = Service(command)
    run.until(lambda: counted(out) == rows(0, 1, 2, 3), "the nanosecond file counted")
    time.sleep(1)
    write_part(folder, 5, parts[4])
    run.until(lambda: counted(out) == rows(0, 1, 2, 3, 4), "file 5 counted")
    summary = run.stop(signal.SIGTERM)
    assert summary["input_rows"] == rows(0, 1, 2, 3, 4) and summary["nothing_lost"]
    assert summary["quarantined_files"] == 2
    quarantined = [line for line in run.said if line.startswith("elastream: quarantined")]
    assert len(quarantined) == 2 and "part-00009.parquet: column v is string" in "".join(
        quarantined)

    # Run 3: the broken file is fixed in place (it now holds the last rows), one more arrives.
    run = Service(command)
    write_part(folder, 6, parts[5])
    write_part(folder, 4, parts[6])
    expected = window_oracle(df, time_col="ts", key_col="key",
                             aggs=[AggSpec.parse("sum:v"), AggSpec.parse("count")],
                             windows=[WindowSpec.parse("2h")])
    expected = expected[expected["window_end"] <= pd.Timestamp(df["ts"].max())]
    run.until(lambda: len(read_folder(out / "results")) >= len(expected), "every window")
    summary = run.stop(signal.SIGINT)
    assert summary["input_rows"] == len(df) == counted(out)
    assert summary["aggregated_rows"] == len(df) and summary["late_rows"] == 0
    assert summary["nothing_lost"] and summary["quarantined_files"] == 1
    assert summary["output_rows"] == len(expected)
    every_reader_sees(out / "results", expected)
