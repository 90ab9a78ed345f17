"""Small output folders written by hand for the report's tests: the files a run leaves."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def step(batch: int, **fields: Any) -> dict[str, Any]:
    """A metrics record of one micro-batch with the fields every run writes."""
    record = {"batch_id": batch, "first_batch_id": batch, "batches": 1, "input_rows": 100,
              "valid_rows": 100, "dead_letter_rows": 0, "late_rows": 0, "batch_ms": 500,
              "batch_ms_each": [500], "routing_version": 0, "moves": 0,
              "slot_load": [60, 40], "active_slots": 2, "max_mean_slot_load": 1.2,
              "hot_keys": 0, "split_slots": 0, "wall_seconds": 1.0,
              "state_rows_by_operator": {"transformWithStateInPandasExec": 8}}
    record.update(fields)
    return record


def busy_steps() -> list[dict[str, Any]]:
    """Three steps that use every feature the report plots."""
    decision = {"choice": "combine", "ran": ["split"], "split_cpu": 2.0, "combine_cpu": 1.0,
                "combine_latency": 0.01, "reason": "combine costs less", "terms": {"E": 1e-5}}
    costs = {"compute_seconds": 0.1, "consolidate_seconds": 0.3, "handoff_seconds": 0.0}
    return [
        step(0, stage_costs=costs, execution="split", scale_to=3, key_groups_to_move=2,
             in_flight=0),
        step(1, routing_version=1, moves=2, hot_keys=1, split_slots=2, in_flight=2,
             hot_key_names=["user-42"],
             stage_costs=costs, execution="split", execution_decision=decision,
             slot_load=[30, 30, 40], active_slots=3, slots_used=3, executors_target=2,
             executors=1),
        step(2, routing_version=2, batch_ms_each=[700], stage_costs=costs,
             execution="combine", slot_load=[35, 35, 30], active_slots=3, executors=2),
    ]


def write_run(path: Path, records: list[dict[str, Any]], *,
              summary: dict[str, Any] | None = None,
              reasons: list[str] | None = None, ledger: str = "",
              job: dict[str, Any] | None = None) -> Path:
    """An output folder: metrics, and where given the summary, the dead letter (one row per
    reason, ``None``: no folder), the hand-off ledger and the job's options (``job.json``)."""
    path.mkdir(parents=True, exist_ok=True)
    if job is not None:
        (path / "job.json").write_text(json.dumps(job))
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if summary is not None:
        (path / "summary.json").write_text(json.dumps(summary, indent=2))
    if reasons is not None:
        (path / "dead_letter").mkdir()
        if reasons:
            table = pa.table({"ts": [f"t{i}" for i in range(len(reasons))], "reason": reasons})
            pq.write_table(table, path / "dead_letter" / "part-00000000.parquet")
    if ledger:
        (path / "_migration").mkdir()
        (path / "_migration" / "acknowledged.txt").write_text(ledger)
    return path


def drawn_and_skipped(html: str) -> tuple[set[str], set[str]]:
    """The plot ids a page draws (``data-plot``) and those it skips (``data-skipped``)."""
    return (set(re.findall(r'data-plot="([^"]+)"', html)),
            set(re.findall(r'data-skipped="([^"]+)"', html)))
