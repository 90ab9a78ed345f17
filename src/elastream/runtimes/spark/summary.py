"""``summary.json``: what a job did over all its runs, from what it committed.

Counts come from the ledger (:mod:`.ledger`) over the committed micro-batches, and the rows of
``results/`` and ``dead_letter/`` are counted in the files of those batches. ``nothing_lost``
is computed, never assumed: every row read was valid or went to the dead letter, and both
folders hold what the ledger says was written to them. When a check fails, ``not_adding_up``
says which. The metrics log adds what it knows of the control (moves, routing versions, time);
a record lost to a kill takes nothing from the counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds

from elastream.control.scale_events import scale_events
from elastream.runtimes.spark.ledger import CountsLedger, last_commit
from elastream.runtimes.spark.sink import batch_of
from elastream.stores.filesystem import LocalFolder
from elastream.stores.metrics_file import read_metrics

SUMMARY = "summary.json"


def summarize(output: Path, metrics: Path, commits: Path, quarantined: int = 0,
              scheduled: Sequence[tuple[int, int]] = ()) -> dict[str, Any]:
    """The summary of the job in ``output`` whose query commits to ``commits``.

    ``quarantined``: files of a watched folder the job could not read (left out of every
    count, listed in ``quarantine.jsonl``). ``scheduled``: the job's scale events
    ``(batch, slots)``; with them, or with any event asked, ``scale_events`` says what each
    did (:func:`~elastream.control.scale_events.scale_events`).
    """
    last = last_commit(commits)
    counts = CountsLedger(LocalFolder(output)).committed(last)
    records = read_metrics(metrics)
    wall = sum(r["wall_seconds"] for r in records)
    results = parquet_rows(output / "results", through=last)
    dead = parquet_rows(output / "dead_letter", through=last)
    input_rows, valid = counts["input_rows"], counts["valid_rows"]
    checks = [
        (input_rows == valid + counts["dead_letter_rows"],
         f"{input_rows:,} rows read, {valid:,} valid and {counts['dead_letter_rows']:,} "
         "malformed"),
        (results == counts["output_rows"],
         f"results/ holds {results:,} rows, {counts['output_rows']:,} were written"),
        (dead == counts["dead_letter_rows"],
         f"dead_letter/ holds {dead:,} rows, {counts['dead_letter_rows']:,} were written"),
    ]
    summary: dict[str, Any] = {
        "input_rows": input_rows,
        "output_rows": results,
        "dead_letter_rows": dead,
        "aggregated_rows": valid - counts["late_rows"],
        "late_rows": counts["late_rows"],
        "batches": counts["batches"],
        "routing_versions": max((r["routing_version"] for r in records), default=0) + 1,
        "moves": sum(r["moves"] for r in records),
        "quarantined_files": quarantined,
        "wall_seconds": round(wall, 3),
        "rows_per_second": round(input_rows / wall, 1) if wall > 0 else 0.0,
        "nothing_lost": all(ok for ok, _ in checks),
    }
    events = scale_events(records, scheduled)
    if events:
        summary["scale_events"] = events
    if not summary["nothing_lost"]:
        summary["not_adding_up"] = [text for ok, text in checks if not ok]
    return summary


def parquet_rows(folder: Path, *, through: int | None = None) -> int:
    """Rows in a sink folder's Parquet files (of micro-batches up to ``through``, if given).

    Hidden temporary files are skipped; so are a batch's files written after the last commit
    (that batch runs again and writes them anew).
    """
    files = [str(p) for p in sorted(folder.glob("*.parquet"))
             if through is None or (batch_of(p) or 0) <= through] if folder.is_dir() else []
    return int(ds.dataset(files, format="parquet").count_rows()) if files else 0
