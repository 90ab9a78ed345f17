"""``elastream run``'s progress display (cli/run_progress.py) on a terminal and off one."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

from elastream.cli.run_progress import RunProgress, outcome

SUMMARY = {"input_rows": 300, "output_rows": 42, "dead_letter_rows": 3, "moves": 5,
           "wall_seconds": 12.5, "rows_per_second": 24.0, "interrupted": False,
           "nothing_lost": True, "aggregated_rows": 290, "late_rows": 7}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def record(rows: int, batch: int = 0, **extra: Any) -> dict[str, Any]:
    return {"input_rows": rows, "batch_id": batch, "first_batch_id": batch,
            "wall_seconds": 1.0, "batch_ms": 900, "routing_version": 2,
            "moves": 1, "dead_letter_rows": 0, "max_event_time": "2001-01-01T00:00:00Z",
            **extra}


def test_off_a_terminal_each_batch_is_one_line_with_its_share_of_the_replay() -> None:
    out = io.StringIO()
    progress = RunProgress(out, lambda: 400, done_before=100)
    progress(record(100, batch=4))
    progress(record(200, batch=7, first_batch_id=5))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[batch 4] 200 rows (50 %)  100 rows/s  batch 0.9s  routing v2")
    assert lines[1].startswith("[batches 5-7] 400 rows (100 %)  150 rows/s")
    assert "1 moved" in lines[1] and "lag" not in lines[1]


def test_on_a_terminal_a_replay_is_one_bar_to_100_percent_then_a_summary_line() -> None:
    out = Terminal()
    progress = RunProgress(out, lambda: 300)
    for rows in (100, 100, 100):
        progress(record(rows))
    progress.close()
    text = out.getvalue()
    assert "\r" in text and "100%" in text and "300/300" in text and text.endswith("\n")


def test_the_outcome_says_done_or_stopped_and_whether_the_counts_add_up() -> None:
    assert outcome({**SUMMARY, "late_rows": 0}) == (
        "done, 300 rows in 12.5 s (24 rows/s): 42 windows, 3 rows to the dead letter, 5 "
        "key-group moves")
    late = outcome({**SUMMARY, "scale_events": [{"done": True}, {"done": False}]})
    assert late.endswith("moves, 7 late rows left out (behind the watermark; a longer "
                         "--lateness keeps them), 1 of 2 scale events done")
    stopped = outcome({**SUMMARY, "interrupted": True, "quarantined_files": 2,
                       "nothing_lost": False})
    assert stopped.startswith("stopped, 300 rows") and "2 files quarantined" in stopped
    assert stopped.endswith("the counts do not add up (300 rows read, 290 aggregated, 7 late, "
                            "3 to the dead letter)")


def test_a_watched_folder_has_no_total_and_shows_the_newest_event_and_a_live_lag() -> None:
    out = io.StringIO()
    asked: list[bool] = []
    progress = RunProgress(out, lambda: asked.append(True) or 10, live=True)
    progress(record(7))
    assert not asked  # no end to count towards
    line = out.getvalue()
    assert line.startswith("[batch 0] 7 rows  7 rows/s") and "%" not in line
    # Old data: the newest event time, no lag against the clock (years of it would mislead).
    assert "events to 2001-01-01 00:00:00" in line and "lag" not in line
    now = datetime.now(UTC) - timedelta(seconds=30)
    progress(record(7, max_event_time=now.strftime("%Y-%m-%dT%H:%M:%S.000Z")))
    assert " (lag 3" in out.getvalue().splitlines()[-1]
