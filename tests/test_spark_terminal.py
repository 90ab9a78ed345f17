"""``elastream run`` in a real terminal (tmux): the progress bar runs to 100 % and a summary
line follows, Spark's console stays out of the terminal, and ``--quiet`` shows nothing."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.spark_jobs import random_stream

pytestmark = pytest.mark.spark


class Tmux:
    """A tmux server of the test's own (its socket in the test's folder), one 160×40 pane."""

    def __init__(self, folder: Path) -> None:
        self.socket = str(folder / "tmux.sock")
        self("new-session", "-d", "-x", "160", "-y", "40", "-c", str(folder))

    def __call__(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True,
                              text=True, timeout=900, check=True)
        return done.stdout

    def run(self, command: str, signal: str) -> str:
        """Type ``command`` into the pane's shell, wait until it ends; the pane's text."""
        self("send-keys", f"clear; {command}; tmux -S {self.socket} wait-for -S {signal}",
             "Enter")
        self("wait-for", signal)  # returns once the shell signals it: no timing involved
        return self("capture-pane", "-p", "-J")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    server = Tmux(tmp_path)
    yield server
    server("kill-server")


def test_progress_bar_and_summary_line_then_quiet_shows_nothing(tmp_path: Path,
                                                                 tmux: Tmux) -> None:
    random_stream(seed=5, rows=600).to_parquet(tmp_path / "in.parquet")
    command = (f"PYSPARK_PYTHON={shlex.quote(sys.executable)} {shlex.quote(sys.executable)} "
               "-m elastream.cli.main run --input in.parquet --time-col ts --key-col key "
               "--agg sum:v --window 2h --slots 2 --key-groups 8 --rows-per-batch 200 "
               "--output out")
    screen = tmux.run(f"{command} > summary.json", "first")
    summary = json.loads((tmp_path / "summary.json").read_text())  # stdout: the JSON alone
    assert summary["input_rows"] == 600 and summary["nothing_lost"]
    assert "100%" in screen and "600/600" in screen, screen
    assert (f"elastream run: done, 600 rows in {summary['wall_seconds']:,.1f} s" in screen
            and "see them: elastream report out" in screen), screen
    assert "WARN" not in screen and "Python worker" not in screen, screen  # in logs/spark.log

    quiet = tmux.run(f"{command} --quiet > again.json", "second")
    assert json.loads((tmp_path / "again.json").read_text())["nothing_lost"]
    assert "elastream run:" not in quiet and "rows" not in quiet.replace(command, ""), quiet
