"""What each micro-batch of ``elastream run`` counted, written before the batch commits.

A summary built from progress reports can be wrong: Spark reports a micro-batch's progress
after it committed, so a process stopped or killed in between loses the report of a batch that
never runs again, and a batch reported before a kill runs (and is reported) again. The job's
one query therefore writes, inside each micro-batch (its ``foreachBatch`` function, before
Spark commits it), the batch's counts into ``counts.json``: rows read, rows valid, rows too
late, rows to the dead letter, and the window and dead-letter rows written. A batch that runs
again (after a kill before its commit) replaces its own entry; a batch that committed keeps it.

The file holds ``totals`` over every batch up to ``folded_through`` and one entry per later
batch. Batch ``N`` runs only once ``N - 1`` committed, so when ``N`` writes its entry every
earlier entry is folded into the totals; an entry beyond the last commit (written, then killed
before the commit) is left out of :meth:`CountsLedger.committed` and replaced when its batch
runs again.

>>> import tempfile
>>> from elastream.stores.filesystem import folder
>>> ledger = CountsLedger(folder(tempfile.mkdtemp()))
>>> ledger.record(0, {"input_rows": 10, "valid_rows": 9, "dead_letter_rows": 1})
>>> ledger.record(1, {"input_rows": 5, "valid_rows": 5})
>>> ledger.record(1, {"input_rows": 5, "valid_rows": 5})   # batch 1 ran again
>>> ledger.committed(last_commit=1)["input_rows"], ledger.committed(last_commit=0)["batches"]
(15, 1)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from elastream.stores.filesystem import Folder

LEDGER = "counts.json"
COUNTS = ("input_rows", "valid_rows", "late_rows", "dead_letter_rows", "output_rows")
"""What a batch counts: rows read (punctuations aside), rows that reached the keyed operators,
rows too late for every window, malformed rows, and window rows written."""


class CountsLedger:
    """The per-batch counts of one job in ``folder`` (its output folder)."""

    def __init__(self, folder: Folder) -> None:
        self.folder = folder

    def _read(self) -> dict[str, Any]:
        data = self.folder.latest(LEDGER)
        if data is None:
            return {"folded_through": -1, "totals": _zero(), "batches": {}}
        return dict(json.loads(data))

    def record(self, batch_id: int, counts: dict[str, int]) -> None:
        """Set batch ``batch_id``'s counts (it has not committed; every earlier batch has)."""
        ledger = self._read()
        totals = ledger["totals"]
        for key, entry in sorted(ledger["batches"].items(), key=lambda item: int(item[0])):
            if int(key) < batch_id:
                _add(totals, entry)
                ledger["folded_through"] = int(key)
        ledger["batches"] = {str(batch_id): {k: int(counts.get(k, 0)) for k in COUNTS}}
        self.folder.publish(LEDGER, json.dumps(ledger, sort_keys=True))

    def committed(self, last_commit: int) -> dict[str, int]:
        """Totals over the batches up to ``last_commit`` (the last committed), and ``batches``."""
        ledger = self._read()
        totals = dict(ledger["totals"])
        for key, entry in ledger["batches"].items():
            if int(key) <= last_commit:
                _add(totals, entry)
        return totals


def _zero() -> dict[str, int]:
    return {**{k: 0 for k in COUNTS}, "batches": 0}


def _add(totals: dict[str, int], entry: dict[str, int]) -> None:
    for key in COUNTS:
        totals[key] += int(entry.get(key, 0))
    totals["batches"] += 1


def last_commit(commits: Path) -> int:
    """The last micro-batch a query's commit log (``CHECKPOINT/commits``) holds; -1: none."""
    if not commits.is_dir():
        return -1
    return max((int(p.name) for p in commits.iterdir() if p.name.isdigit()), default=-1)
