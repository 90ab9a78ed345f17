"""An independent oracle for ``run.py``: every window the job must emit, from numpy alone.

Adapted from the peer benchmark's ``compare.py``, and on purpose not the project's
``tests/oracle.py``, so that a mistake shared by elastream and its own test oracle cannot hide.
Per window spec (length ``L``, slide ``S``) and per offset ``j < L/S``, a row at time ``t``
goes to the instance starting at ``(floor(t/S) - j)·S`` when ``t`` falls inside it;
``count(*)`` and ``sum(delay)`` are ``np.bincount`` over (key, instance), ``avg = sum /
count``; instances without rows are not output. The flights have no null time, key or delay
(checked): a null would need a separate non-null count.

:func:`check` compares an engine's windows with the oracle's, window by window: ``duplicated``
(key, start, end) in the output, ``missing`` (the oracle's, not output), ``extra`` (output, not
the oracle's), and windows whose ``count`` or ``sum`` differ (exactly) or whose ``avg`` differs
by more than 1e-12 relative. ``exact``: none of these. ``missing_open`` counts the missing
windows that end after the input's last event: those an engine that never closes its windows
at the end of the input (Spark's, whose watermark stops at the last event time) leaves open.

Readers, one frame (key, start, end in epoch ms, count, sum, avg) per engine's output:
:func:`read_parquet_results` (elastream's ``OUT/results``, and ``spark_native.py``'s, which
writes through elastream's sink) and :func:`read_flink` (``flink_job.py``'s CSV folders).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds

HOUR_MS = 3_600_000
SPECS_H = ((1, 1), (6, 1), (24, 1))
"""The job's window specs, (length, slide) in hours."""
AVG_RELATIVE = 1e-12
DIFFERENCES = ("duplicated", "missing", "extra", "mismatched_count", "mismatched_sum",
               "mismatched_avg")
"""What :func:`check` counts; a run is exact when all are 0."""
COUNTS = (*DIFFERENCES, "missing_open")
"""Every count :func:`check` returns."""


def expected(source: Path, key: str, lengths_h: tuple[int, ...] = (1, 6, 24)) -> pd.DataFrame:
    """The windows of the job's specs of these lengths over ``source``, keyed by ``key``."""
    windows = _all_windows(source, key)
    return windows[((windows["end"] - windows["start"]) // HOUR_MS).isin(lengths_h)]


@functools.cache
def _all_windows(source: Path, key: str) -> pd.DataFrame:
    """The windows of every spec over ``source`` (Parquet) keyed by column ``key``, ``open``
    when they end after its last event; computed once per process for each input and key."""
    frame = pd.read_parquet(source, columns=["date", "delay", key])
    if frame.isna().any().any():
        raise ValueError(f"{source}: nulls in date, delay or {key}; the oracle assumes none")
    t = frame["date"].to_numpy(dtype="datetime64[ms]").astype(np.int64)  # naive = UTC
    codes, keys = pd.factorize(frame[key])
    delay = frame["delay"].to_numpy(dtype=np.float64)  # integer sums below 2**53: exact
    out = []
    for length_h, slide_h in SPECS_H:
        length, slide = length_h * HOUR_MS, slide_h * HOUR_MS
        bucket = t // slide
        first = int(bucket.min()) - (length // slide - 1)
        span = int(bucket.max()) - first + 1
        size = len(keys) * span
        count, total = np.zeros(size, np.int64), np.zeros(size, np.float64)
        for j in range(-(-length // slide)):
            instance = bucket - j
            inside = t < instance * slide + length
            cell = codes[inside].astype(np.int64) * span + (instance[inside] - first)
            count += np.bincount(cell, minlength=size)
            total += np.bincount(cell, weights=delay[inside], minlength=size)
        held = np.nonzero(count)[0]
        start = (held % span + first) * slide
        out.append(pd.DataFrame({
            "key": np.asarray(keys, dtype=object)[held // span], "start": start,
            "end": start + length, "count": count[held], "sum": total[held],
            "avg": total[held] / count[held], "open": start + length > t.max()}))
    return pd.concat(out, ignore_index=True)


def check(actual: pd.DataFrame, oracle: pd.DataFrame) -> dict[str, int | bool]:
    """``actual``'s windows against ``oracle``'s: the counts described in the module's doc."""
    bounds = ["key", "start", "end"]
    duplicated = int(actual.duplicated(bounds).sum())
    both = actual.drop_duplicates(bounds).merge(oracle, on=bounds, how="outer",
                                                suffixes=("_a", "_e"), indicator=True)
    found = both[both["_merge"] == "both"]
    missing = both[both["_merge"] == "right_only"]
    relative = ((found["avg_a"] - found["avg_e"]).abs()
                / found["avg_e"].abs().clip(lower=1e-300))
    differences = {
        "duplicated": duplicated,
        "missing": len(missing),
        "extra": int((both["_merge"] == "left_only").sum()),
        "mismatched_count": int((found["count_a"] != found["count_e"]).sum()),
        "mismatched_sum": int((found["sum_a"] != found["sum_e"]).sum()),
        "mismatched_avg": int(((relative > AVG_RELATIVE)
                               & (found["avg_a"] != found["avg_e"])).sum()),
    }
    return {"windows": len(actual), "oracle_windows": len(oracle),
            "exact": not any(differences.values()), **differences,
            "missing_open": int(missing["open"].astype(bool).sum())}


def read_parquet_results(folder: Path) -> pd.DataFrame:
    """Windows that elastream's Parquet sink wrote (``key``, ``window_start``, ``window_end``,
    ``count``, ``sum_delay``, ``avg_delay``); none when the folder is missing."""
    if not folder.exists():
        return _no_windows()
    frame = ds.dataset(str(folder), format="parquet").to_table().to_pandas()
    return pd.DataFrame({
        "key": frame["key"].astype(str), "start": _epoch_ms(frame["window_start"]),
        "end": _epoch_ms(frame["window_end"]), "count": frame["count"].astype(np.int64),
        "sum": frame["sum_delay"].astype(np.float64),
        "avg": frame["avg_delay"].astype(np.float64)})


def read_flink(folder: Path) -> pd.DataFrame:
    """Windows of ``flink_job.py``'s CSV sinks ``folder/w1h``, ``w6h``, ``w24h``.

    Doubles parsed with ``float_precision="round_trip"``: pandas' default parser is off by an
    ulp on some of them.
    """
    files = [p for name in ("w1h", "w6h", "w24h") for p in sorted((folder / name).glob("part-*"))]
    frames = [pd.read_csv(p, header=None, names=["key", "ws", "we", "count", "sum", "avg"],
                          dtype={"key": str}, keep_default_na=False,
                          float_precision="round_trip") for p in files]
    if not frames:
        return _no_windows()
    frame = pd.concat(frames, ignore_index=True)
    return pd.DataFrame({
        "key": frame["key"], "start": _epoch_ms(frame["ws"]), "end": _epoch_ms(frame["we"]),
        "count": frame["count"].astype(np.int64), "sum": frame["sum"].astype(np.float64),
        "avg": frame["avg"].astype(np.float64)})


def _epoch_ms(column: pd.Series) -> np.ndarray:
    """Timestamps (zoned: converted to UTC; naive: read as UTC) as epoch milliseconds."""
    if isinstance(column.dtype, pd.DatetimeTZDtype):
        column = column.dt.tz_convert("UTC").dt.tz_localize(None)
    return pd.to_datetime(column).to_numpy(dtype="datetime64[ms]").astype(np.int64)


def _no_windows() -> pd.DataFrame:
    return pd.DataFrame({"key": pd.Series([], dtype=object), "start": np.zeros(0, np.int64),
                         "end": np.zeros(0, np.int64), "count": np.zeros(0, np.int64),
                         "sum": np.zeros(0), "avg": np.zeros(0)})
