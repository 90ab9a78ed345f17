"""What a run left in its output folder, read without Spark (README: "Output folder").

``job.json`` (the job's options: :mod:`elastream.core.identity`), ``summary.json``
(``elastream run`` only), ``metrics.jsonl`` (one record per control step; a line torn by a
killed process is skipped), ``dead_letter/`` (Parquet, read with pyarrow) and
the hand-off ledger under ``_migration/``. A Python API job's ``state_dir`` holds the metrics
and the ledger; its results and dead letter are in the user's sinks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.dataset as ds

from elastream.core.errors import DataError
from elastream.core.identity import IDENTITY
from elastream.stores.metrics_file import read_metrics

METRICS, SUMMARY, DEAD_LETTER = "metrics.jsonl", "summary.json", "dead_letter"
LEDGER = Path("_migration") / "acknowledged.txt"
"""Collected hand-offs, ``version kg source sent target taken [rows]`` a line
(:mod:`elastream.stores.migration_store`)."""
RECEIPTS = Path("_migration") / "receipts"
"""Hand-offs taken over but not yet collected: ``v<version>-kg<kg>`` holding
``source sent target taken [rows]``."""
EXAMPLES_PER_REASON = 3
_QUOTED_VALUE = re.compile(r"\s*'.*'$")
_RECEIPT = re.compile(r"^v(\d+)-kg(\d+)$")
HAND_OFF_COLUMNS = ["version", "kg", "source", "sent", "target", "taken"]


@dataclass(frozen=True)
class RunFolder:
    """One run's outputs.

    ``job`` (``job.json``; ``None``: none written), ``summary`` (``None``: none written),
    metrics ``records``, ``dead_letter`` rows by reason
    (``reasons``: kind → count, ``None``: the run has no ``dead_letter/``; ``examples``: a few
    rows of each kind) and ``hand_offs`` (one row per completed hand-off,
    :data:`HAND_OFF_COLUMNS`).
    """

    path: Path
    summary: dict[str, Any] | None
    records: list[dict[str, Any]]
    job: dict[str, Any] | None = None
    reasons: dict[str, int] | None = None
    examples: pd.DataFrame = field(default_factory=pd.DataFrame)
    hand_offs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=HAND_OFF_COLUMNS))


def read_run_folder(path: Path) -> RunFolder:
    """Read a run's output folder.

    Raises:
        DataError: ``path`` holds neither ``metrics.jsonl`` nor ``summary.json``.
    """
    if not (path / METRICS).is_file() and not (path / SUMMARY).is_file():
        raise DataError(f"{path} is not a run's output folder: it holds neither {METRICS} "
                        f"nor {SUMMARY}")
    summary = json.loads((path / SUMMARY).read_text()) if (path / SUMMARY).is_file() else None
    reasons, examples = _dead_letter(path / DEAD_LETTER)
    job = json.loads((path / IDENTITY).read_text()) if (path / IDENTITY).is_file() else None
    return RunFolder(path, summary, read_metrics(path / METRICS), job, reasons, examples,
                     _hand_offs(path))


def reason_kind(reason: str) -> str:
    """A dead-letter reason without the value it quotes, so that like reasons count together.

    >>> reason_kind("ts: cannot parse time 'yesterday'")
    'ts: cannot parse time'
    >>> reason_kind("key: missing key")
    'key: missing key'
    """
    return _QUOTED_VALUE.sub("", reason)


def _dead_letter(folder: Path) -> tuple[dict[str, int] | None, pd.DataFrame]:
    """Counts by reason kind, most frequent first, and the first rows of each kind."""
    if not folder.is_dir():
        return None, pd.DataFrame()
    files = sorted(str(p) for p in folder.glob("*.parquet"))
    if not files:
        return {}, pd.DataFrame()
    if (folder / "_delta_log").is_dir():  # --sink delta: the table's committed rows only
        from deltalake import DeltaTable

        rows = DeltaTable(str(folder)).to_pandas()
    else:
        rows = ds.dataset(files, format="parquet").to_table().to_pandas()
    kinds = rows["reason"].astype(str).map(reason_kind)
    counts = kinds.value_counts()
    examples = rows.assign(_kind=kinds).groupby("_kind", sort=False).head(EXAMPLES_PER_REASON)
    order = {kind: i for i, kind in enumerate(counts.index)}
    examples = examples.sort_values("_kind", key=lambda k: k.map(order), kind="stable")
    return {str(k): int(v) for k, v in counts.items()}, examples.drop(columns="_kind")


def _hand_offs(path: Path) -> pd.DataFrame:
    """Completed hand-offs: the ledger's lines, then receipts not collected into it yet."""
    found: dict[tuple[int, int], list[int]] = {}
    ledger = path / LEDGER
    for line in ledger.read_text().splitlines() if ledger.is_file() else []:
        fields = [int(f) for f in line.split()]
        found[(fields[0], fields[1])] = _where(fields[2:])
    receipts = path / RECEIPTS
    for receipt in receipts.iterdir() if receipts.is_dir() else []:
        match = _RECEIPT.match(receipt.name)
        if match:
            where = [int(f) for f in receipt.read_text().split()]
            found.setdefault((int(match[1]), int(match[2])), _where(where))
    rows = [[*key, *where] for key, where in sorted(found.items())]
    return pd.DataFrame(rows, columns=HAND_OFF_COLUMNS)


def _where(fields: list[int]) -> list[int]:
    """``source sent target taken``, -1 where not recorded (a rows count after them dropped)."""
    return (fields + [-1] * 4)[:4]
