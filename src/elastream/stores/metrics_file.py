"""Reading ``metrics.jsonl``, the control loop's record of every step (one JSON line each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_metrics(metrics_path: Path) -> list[dict[str, Any]]:
    """The records of a metrics file; a line torn by a killed process is skipped.

    No file (a job that has not recorded a step yet): no records.
    """
    if not metrics_path.is_file():
        return []
    records = []
    for line in metrics_path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records
