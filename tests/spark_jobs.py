"""Run real elastream jobs on small data for the Spark tests, and read their outputs back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from elastream.control.controller import Controller
from elastream.control.execution import ExecutionPolicy
from elastream.control.planners import job_planner
from elastream.core.aggregates import AggSpec
from elastream.core.plan import Move, Plan, PlanStatus
from elastream.core.spec import RunSpec
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.file_run import FileRun


@dataclass
class JobRun:
    spec: RunSpec
    summary: dict[str, Any]
    results: pd.DataFrame
    dead_letter: pd.DataFrame
    metrics: list[dict[str, Any]]


def make_spec(input_path: Path, output: Path, *, aggs: Sequence[str], windows: Sequence[str],
              **overrides: Any) -> RunSpec:
    base = dict(time_col="ts", key_col="key", slots=2, key_groups=8, rows_per_batch=100,
                planner="hash")
    base.update(overrides)
    return RunSpec.of(input=input_path, output=output,
                      aggs=tuple(AggSpec.parse(a) for a in aggs),
                      windows=tuple(WindowSpec.parse(w) for w in windows), **base)


def rotate_every_batch(snapshot: Any, current: Any, *, options: Any) -> Plan:
    """Force a routing change every batch: move a different key group to the next slot."""
    moves = []
    for g in range(0, current.num_key_groups, 3):
        kg = (g + snapshot.batch_id) % current.num_key_groups
        source = current.slot_of[kg]
        moves.append(Move(kg, source, (source + 1) % current.num_slots))
    unique = {m.key_group: m for m in moves}
    return Plan(PlanStatus.FEASIBLE, tuple(unique.values()))


def run_job(spark: Any, spec: RunSpec, *, force_moves: bool = False,
            execution: ExecutionPolicy | None = None) -> JobRun:
    """Run ``spec`` to its end; ``force_moves``: a routing change every batch; ``execution``:
    instead of the spec's split-or-combine policy."""
    if force_moves:
        controller = Controller(rotate_every_batch, None, execution)
    else:
        plan, options = job_planner(spec)
        controller = Controller(plan, options, execution)
    summary = FileRun(spark, spec, controller).run()
    return read_run(spec, summary)


def read_run(spec: RunSpec, summary: dict[str, Any]) -> JobRun:
    import json

    out = spec.files.output
    results = _read(out / "results")
    for column in ("window_start", "window_end"):
        if column in results:
            results[column] = pd.to_datetime(results[column], utc=True)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return JobRun(spec, summary, results, _read(out / "dead_letter"), metrics)


def results_by_batch(output: Path) -> pd.DataFrame:
    """The job's results with the micro-batch that emitted each row (column ``batch``), read
    off the sink's file names (``part-<batch>.parquet``)."""
    from elastream.runtimes.spark.sink import batch_of

    frames = [pd.read_parquet(path).assign(batch=batch_of(path))
              for path in sorted((output / "results").glob("part-*.parquet"))]
    out = pd.concat(frames, ignore_index=True)
    for column in ("window_start", "window_end"):
        out[column] = pd.to_datetime(out[column], utc=True)
    return out


def _read(folder: Path) -> pd.DataFrame:
    if not folder.exists() or not any(folder.glob("*.parquet")):
        return pd.DataFrame()
    return pd.read_parquet(folder)


def random_stream(seed: int, rows: int, keys: int = 12, hours: float = 60.0) -> pd.DataFrame:
    """Rows over ``hours`` of event time, skewed keys, values with some nulls."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2001-03-01", tz="UTC")
    seconds = np.sort(rng.integers(0, int(hours * 3600), rows))
    weights = 1.0 / np.arange(1, keys + 1)
    key = rng.choice([f"k{i}" for i in range(keys)], rows, p=weights / weights.sum())
    value = rng.normal(10.0, 5.0, rows).round(3)
    value[rng.random(rows) < 0.05] = np.nan
    return pd.DataFrame({"ts": start + pd.to_timedelta(seconds, unit="s"), "key": key,
                         "v": value})


__all__ = ["JobRun", "make_spec", "random_stream", "read_run", "replace", "results_by_batch",
           "run_job"]
