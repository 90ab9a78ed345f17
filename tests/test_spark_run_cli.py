"""``elastream run`` as a user runs it: stdout is the JSON summary alone, Spark's console goes
to ``OUTPUT/logs/spark.log``, and a failing query ends with one line naming its cause and the
full log, exit status 1, no traceback.

The failure is real and deterministic: a checkpoint file corrupted between two runs (Spark
checks each checkpoint file against its checksum when the query resumes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.spark_jobs import random_stream

pytestmark = pytest.mark.spark


def run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "elastream.cli.main", "run",
               "--input", str(tmp_path / "in.parquet"), "--time-col", "ts", "--key-col", "key",
               "--agg", "sum:v", "--window", "2h", "--slots", "2", "--key-groups", "8",
               "--rows-per-batch", "200", "--output", "out", "--quiet", *extra]
    return subprocess.run(command, cwd=tmp_path, env={**os.environ,
                                                      "PYSPARK_PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=900, check=False)


def test_stdout_is_the_summary_and_a_failure_is_one_line(tmp_path: Path) -> None:
    random_stream(seed=3, rows=600).to_parquet(tmp_path / "in.parquet")
    first = run(tmp_path, "--max-batches", "1")
    assert first.returncode == 0, first.stderr[-3000:]
    summary = json.loads(first.stdout)  # the whole stdout
    assert summary["nothing_lost"] and summary["input_rows"] > 0
    assert first.stderr == ""  # --quiet: Spark's warnings and logs are in the log file
    spark_log = tmp_path / "out" / "logs" / "spark.log"
    assert "WARN" in spark_log.read_text()

    offsets = tmp_path / "out" / "_checkpoints" / "results" / "offsets"
    latest = max((p for p in offsets.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    latest.write_text("v1\n{not json")
    second = run(tmp_path)
    assert second.returncode == 1
    assert second.stdout == ""
    lines = second.stderr.splitlines()
    assert len(lines) == 1, second.stderr
    assert lines[0].startswith("elastream run: error: ChecksumException: Checksum error: file:")
    assert f"/out/_checkpoints/results/offsets/{latest.name} at 0" in lines[0]
    assert lines[0].endswith(" (full log: out/logs/error.log)")
    assert "Traceback" not in second.stderr and "at org.apache" not in second.stderr
    log = (tmp_path / "out" / "logs" / "error.log").read_text()
    assert "Traceback" in log and "at org.apache" in log and "ChecksumException" in log
