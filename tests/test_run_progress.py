"""``elastream run``'s progress display (cli/run_progress.py) on a terminal and off one."""

from __future__ import annotations

import io
from typing import Any

from elastream.cli.run_progress import RunProgress

SUMMARY = {"input_rows": 300, "output_rows": 42, "dead_letter_rows": 3, "moves": 5,
           "wall_seconds": 12.5, "rows_per_second": 24.0, "interrupted": False}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def record(rows: int, **extra: Any) -> dict[str, Any]:
    return {"input_rows": rows, "wall_seconds": 1.0, "batch_ms": 900, "routing_version": 2,
            "moves": 1, "dead_letter_rows": 0, "max_event_time": "2001-01-01T00:00:00Z",
            **extra}


def test_off_a_terminal_each_batch_is_one_line_with_its_share_of_the_replay() -> None:
    out = io.StringIO()
    progress = RunProgress(out, lambda: 400, done_before=100)
    progress(record(100))
    progress(record(200))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[1] 200 rows (50 %)  100 rows/s  batch 0.9s  routing v2")
    assert lines[1].startswith("[2] 400 rows (100 %)  150 rows/s")
    assert "1 moved" in lines[1] and "lag" not in lines[1]


def test_on_a_terminal_a_replay_is_one_bar_to_100_percent_then_a_summary_line() -> None:
    out = Terminal()
    progress = RunProgress(out, lambda: 300)
    for rows in (100, 100, 100):
        progress(record(rows))
    progress.close(SUMMARY, "output")
    text = out.getvalue()
    assert "\r" in text and "100%" in text and "300/300" in text
    assert text.rstrip().splitlines()[-1] == (
        "elastream run: done, 300 rows in 12.5 s (24 rows/s): 42 windows, 3 rows to the dead "
        "letter, 5 key-group moves; see them: elastream report output")


def test_a_watched_folder_has_no_total_and_shows_the_event_time_lag() -> None:
    out = io.StringIO()
    asked: list[bool] = []
    progress = RunProgress(out, lambda: asked.append(True) or 10, live=True)
    progress(record(7))
    assert not asked  # no end to count towards
    line = out.getvalue()
    assert line.startswith("[1] 7 rows  7 rows/s") and "%" not in line and " lag " in line


def test_a_stopped_run_ends_the_bar_on_its_own_line_and_says_no_more() -> None:
    out = Terminal()
    progress = RunProgress(out, lambda: 300)
    progress(record(100))
    progress.close({**SUMMARY, "interrupted": True}, "output")
    text = out.getvalue()
    assert text.endswith("\n") and "done" not in text  # the caller's stop notice comes next
