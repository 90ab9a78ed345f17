"""``summary.json``: what a job did over all its runs, from what it committed.

Counts come from the ledger (:mod:`.ledger`) over the committed micro-batches, and the rows of
the results and the dead letter are counted where they went, through those batches (Parquet
files, Delta table versions; a Kafka topic's, acknowledged by the broker when written, are
not read back). ``nothing_lost``
is computed, never assumed: every row read was valid or went to the dead letter, and both
folders hold what the ledger says was written to them. When a check fails, ``not_adding_up``
says which. The metrics log adds what it knows of the control (moves, routing versions, time);
a record lost to a kill takes nothing from the counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from elastream.control.scale_events import scale_events
from elastream.runtimes.spark.job_sink import BatchSink
from elastream.runtimes.spark.ledger import CountsLedger, last_commit
from elastream.stores.filesystem import LocalFolder
from elastream.stores.metrics_file import read_metrics

SUMMARY = "summary.json"


def summarize(output: Path, metrics: Path, commits: Path, sinks: tuple[BatchSink, BatchSink],
              quarantined: int = 0, scheduled: Sequence[tuple[int, int]] = ()
              ) -> dict[str, Any]:
    """The summary of the job in ``output`` whose query commits to ``commits``.

    ``sinks``: where its results and its dead letter went (:func:`.job_sink.sinks_of`).
    ``quarantined``: files of a watched folder the job could not read (left out of every
    count, listed in ``quarantine.jsonl``). ``scheduled``: the job's scale events
    ``(batch, slots)``; with them, or with any event asked, ``scale_events`` says what each
    did (:func:`~elastream.control.scale_events.scale_events`).
    """
    last = last_commit(commits)
    counts = CountsLedger(LocalFolder(output)).committed(last)
    records = read_metrics(metrics)
    wall = sum(r["wall_seconds"] for r in records)
    held = [sink.rows(through=last) for sink in sinks]
    # A Kafka topic may hold a batch twice: its rows were each acknowledged (checked then).
    results, dead = (counts[name] if rows is None else rows
                     for rows, name in zip(held, ("output_rows", "dead_letter_rows"),
                                           strict=True))
    input_rows, valid = counts["input_rows"], counts["valid_rows"]
    checks = [
        (input_rows == valid + counts["dead_letter_rows"],
         f"{input_rows:,} rows read, {valid:,} valid and {counts['dead_letter_rows']:,} "
         "malformed"),
        (results == counts["output_rows"],
         f"results hold {results:,} rows, {counts['output_rows']:,} were written"),
        (dead == counts["dead_letter_rows"],
         f"the dead letter holds {dead:,} rows, {counts['dead_letter_rows']:,} were written"),
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
