"""``elastream run``'s progress on the terminal, and the short summary at its end.

On a terminal a replay shows one progress bar (tqdm): rows, %, rate and ETA, with the last
micro-batch's time, routing version, moves and dead-letter rows beside it; a watched folder
(``--mode watch``: no end to count towards) shows rows and rate, plus the newest event time
seen and, when that is within a day of the clock (live data), how far it is behind the clock.
When standard error is not a terminal (a log, a pipe, CI) each record prints one line instead,
headed by its micro-batch ids. ``--quiet`` shows neither; stdout holds only the JSON summary
either way.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from tqdm import tqdm

from elastream.control.runtime import event_millis

LIVE_LAG_SECONDS = 86_400
"""Newest events further behind the clock than this are old data: no lag is shown for them."""


class RunProgress:
    """The ``on_batch`` callback of a job run from the command line.

    ``total_rows``: the replay's rows, asked at the first micro-batch (the replay is staged by
    then), ``None`` on a watched folder; ``done_before``: rows a resumed job had processed.
    """

    def __init__(self, stream: TextIO, total_rows: Callable[[], int | None],
                 done_before: int = 0, live: bool = False) -> None:
        self.stream = stream
        self.total_rows = total_rows
        self.rows = done_before
        self.live = live
        self.started = False
        self.wall = 0.0
        self.run_rows = 0
        self.bar: tqdm[Any] | None = None
        self.total: int | None = None

    def __call__(self, record: dict[str, Any]) -> None:
        """Show micro-batch ``record``'s progress."""
        if not self.started:
            self.total = None if self.live else self.total_rows()
            self.started = True
        self.rows += record["input_rows"]
        self.run_rows += record["input_rows"]
        self.wall += record["wall_seconds"]
        about = self._about(record)
        if not self.stream.isatty():
            rate = self.run_rows / self.wall if self.wall else 0.0
            done = f" ({100 * self.rows / self.total:.0f} %)" if self.total else ""
            print(f"[{_batches(record)}] {self.rows:,} rows{done}  {rate:,.0f} rows/s  {about}",
                  file=self.stream, flush=True)
            return
        if self.bar is None:
            self.bar = tqdm(total=self.total, initial=self.rows - record["input_rows"],
                            unit=" rows", unit_scale=True, file=self.stream,
                            dynamic_ncols=True, smoothing=0.1, leave=True)
        self.bar.set_postfix_str(about, refresh=False)
        self.bar.update(record["input_rows"])

    def _about(self, record: dict[str, Any]) -> str:
        moves = f"  {record['moves']} moved" if record.get("moves") else ""
        text = (f"batch {record['batch_ms'] / 1000:.1f}s  routing v{record['routing_version']}"
                f"{moves}  dead {record['dead_letter_rows']}{_scaling(record)}")
        newest = event_millis(record.get("max_event_time"))
        if self.live and newest is not None:
            text += f"  events to {datetime.fromtimestamp(newest / 1000, UTC):%Y-%m-%d %H:%M:%S}"
            lag = datetime.now(UTC).timestamp() - newest / 1000
            text += f" (lag {lag:,.0f}s)" if lag < LIVE_LAG_SECONDS else ""
        return text

    def close(self) -> None:
        """End the bar (on its own line)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def outcome(summary: dict[str, Any]) -> str:
    """The summary in words: done or stopped, the counts, and whether they add up."""
    said = "stopped" if summary["interrupted"] else "done"
    text = (f"{said}, {summary['input_rows']:,} rows in {summary['wall_seconds']:,.1f} s "
            f"({summary['rows_per_second']:,.0f} rows/s): {summary['output_rows']:,} windows, "
            f"{summary['dead_letter_rows']:,} rows to the dead letter, "
            f"{summary['moves']:,} key-group moves")
    quarantined = summary.get("quarantined_files", 0)
    if quarantined:
        text += f", {quarantined:,} file{'s' if quarantined != 1 else ''} quarantined"
    if summary["late_rows"]:
        text += (f", {summary['late_rows']:,} late rows left out (behind the watermark; a "
                 "longer --lateness keeps them)")
    events = summary.get("scale_events", [])
    if events:
        done = sum(e["done"] for e in events)
        text += f", {done} of {len(events)} scale events done"
    if not summary["nothing_lost"]:
        text += (f"; the counts do not add up ({summary['input_rows']:,} rows read, "
                 f"{summary['aggregated_rows']:,} aggregated, {summary['late_rows']:,} late, "
                 f"{summary['dead_letter_rows']:,} to the dead letter)")
    return text


def _scaling(record: dict[str, Any]) -> str:
    """What a record's scale event did: asked, slots added or leaving, slots gone."""
    text = ""
    if record.get("scale_to"):
        text += f"  scale to {record['scale_to']}"
        if record.get("slots_added"):
            text += f" (slots {_ids(record['slots_added'])} added)"
        if record.get("slots_marked"):
            text += f" (slots {_ids(record['slots_marked'])} leaving)"
    if record.get("slots_gone"):
        text += f"  slots {_ids(record['slots_gone'])} gone"
    return text


def _ids(slots: list[int]) -> str:
    return ",".join(str(s) for s in slots)


def _batches(record: dict[str, Any]) -> str:
    """``batch 7`` or ``batches 7-9``: the micro-batches a record covers."""
    first, last = record.get("first_batch_id", record["batch_id"]), record["batch_id"]
    return f"batch {last}" if first == last else f"batches {first}-{last}"
