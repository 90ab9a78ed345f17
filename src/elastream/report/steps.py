"""Metrics records as tables: one row per control step, and one per micro-batch.

A control step covers one or more micro-batches (``first_batch_id`` .. ``batch_id``); a step
that saw only the dead-letter query's batches (``batches`` 0) is left out of both. A field a
record lacks (an older run, a job without that feature) is NaN in its column.

>>> records = [{"batch_id": 0, "first_batch_id": 0, "batches": 1, "input_rows": 10,
...             "wall_seconds": 2.0, "batch_ms_each": [1500]},
...            {"batch_id": 2, "first_batch_id": 1, "batches": 2, "input_rows": 30,
...             "wall_seconds": 1.0, "batch_ms_each": [400, 600]}]
>>> steps_table(records)[["batch_id", "seconds", "input_rate"]].to_dict("list")
{'batch_id': [0, 2], 'seconds': [2.0, 3.0], 'input_rate': [5.0, 30.0]}
>>> batch_durations(records).to_dict()
{0: 1500, 1: 400, 2: 600}
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def steps_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per control step that ran micro-batches, in order, plus derived columns.

    ``seconds``: the run's wall time at the step's end (the sum of ``wall_seconds``);
    ``input_rate``: input rows per wall second of the step; ``throughput``: input rows per
    second of micro-batch time (``batch_ms``).
    """
    frame = pd.DataFrame.from_records(records)
    if frame.empty or "batches" not in frame:
        return pd.DataFrame()
    frame["seconds"] = frame.get("wall_seconds", pd.Series(0.0, index=frame.index)).cumsum()
    frame = frame[frame["batches"] > 0].reset_index(drop=True)
    if "wall_seconds" in frame and "input_rows" in frame:
        frame["input_rate"] = _per_second(frame["input_rows"], frame["wall_seconds"])
    if "batch_ms" in frame and "input_rows" in frame:
        frame["throughput"] = _per_second(frame["input_rows"], frame["batch_ms"] / 1000)
    return frame


def batch_durations(records: list[dict[str, Any]]) -> pd.Series:
    """Each micro-batch's duration in ms (``batch_ms_each``), indexed by batch id."""
    durations: dict[int, int] = {}
    for record in records:
        each = record.get("batch_ms_each") or []
        first = int(record.get("first_batch_id", record.get("batch_id", 0)))
        durations.update({first + i: int(ms) for i, ms in enumerate(each)})
    return pd.Series(durations, dtype="int64").sort_index()


def column(frame: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column, NaN where records lack it (all NaN when none has it)."""
    if name not in frame:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame[name], errors="coerce")


def records_of(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """A column of dicts (``stage_costs``, ``state_rows_by_operator``) as a frame of its keys.

    One row per step, empty where a step lacks it.
    """
    return pd.DataFrame.from_records(
        [value if isinstance(value, dict) else {} for value in frame[name]])


def has_any(frame: pd.DataFrame, name: str) -> bool:
    """Some step has a non-zero, non-missing ``name``."""
    values = column(frame, name)
    return bool((values.fillna(0) != 0).any())


def _per_second(rows: pd.Series, seconds: pd.Series) -> pd.Series:
    return (rows / seconds.where(seconds > 0)).astype(float)
