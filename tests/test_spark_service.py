"""``elastream run --mode watch`` as a service: started on an empty folder, it waits for the
first file, takes in the files as they arrive, and stops gracefully at Ctrl-C."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from tests.live import FolderWriter, read_folder, split
from tests.oracle import compare_results, window_oracle
from tests.spark_jobs import random_stream

from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec

pytestmark = pytest.mark.spark


def _lines(stream: object) -> queue.Queue[str]:
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            found.put(line)

    threading.Thread(target=read, daemon=True).start()
    return found


def test_watch_starts_on_an_empty_folder_and_stops_gracefully_at_ctrl_c(
        tmp_path: Path) -> None:
    df = random_stream(seed=51, rows=600)
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    command = [sys.executable, "-m", "elastream.cli.main", "run", "--mode", "watch",
               "--input", str(folder), "--time-col", "ts", "--key-col", "key",
               "--agg", "sum:v", "--agg", "count", "--window", "2h", "--slots", "2",
               "--key-groups", "8", "--planner", "flux", "--output", str(out)]
    service = subprocess.Popen(command, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        errors = _lines(service.stderr)
        waiting = ""
        while "waiting for the first" not in waiting:
            waiting = errors.get(timeout=300)
        FolderWriter(folder, split(df, 6), 0.5).run()
        expected = window_oracle(df, time_col="ts", key_col="key",
                                 aggs=[AggSpec.parse("sum:v"), AggSpec.parse("count")],
                                 windows=[WindowSpec.parse("2h")])
        expected = expected[expected["window_end"] <= pd.Timestamp(df["ts"].max())]
        deadline = time.monotonic() + 600
        while len(read_folder(out / "results")) < len(expected):
            assert service.poll() is None, "the service ended by itself"
            assert time.monotonic() < deadline, "the windows never all came out"
            time.sleep(0.5)
        service.send_signal(signal.SIGINT)
        stdout, _ = service.communicate(timeout=300)
    finally:
        if service.poll() is None:
            service.kill()
    assert service.returncode == 130
    summary = json.loads(stdout)
    assert summary["input_rows"] == len(df) and summary["nothing_lost"]
    compare_results(read_folder(out / "results"), expected)
