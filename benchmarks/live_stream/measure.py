"""What a run measured: its micro-batches, each file's latency, each window's delay, a summary.

Definitions (all wall-clock, ``time.time()`` seconds; the time axis of a run starts when its
first file arrived, a replay's when its first micro-batch started):

* **batch duration** — Spark's ``triggerExecution`` of a micro-batch, as the runtime's metrics
  record it (``batch_ms_each`` of the control step that observed batches ``first_batch_id`` …
  ``batch_id``); the batch *ends* at its progress report's start ``timestamp`` plus that.
* **file latency** — from a file's arrival (renamed into the folder) to the end of the
  micro-batch that read it. Files are read whole and oldest first, so batch ``N`` read the
  files whose rows, summed in order, make up the input rows of batches ``0 … N``.
* **window delay** — from the arrival of the file that *closed* a window to the time the
  window's row was written out (the modification time of the sink's ``part-<batch>.parquet``).
  The file that closed window ``[start, end)`` is the first whose latest event time is
  ``≥ end``: the watermark (the latest event time seen, lateness 0) reaches ``end`` once that
  file was read, and the window is emitted by the next micro-batch. The delay is thus what the
  system adds beyond waiting for the data that closes the window: the file's wait for a batch,
  that batch, and the next one (plus, for a key group that moved, its hand-off).
* **throughput** — data rows over the time from the first file's arrival to the end of the
  batch that read the last data file; **rows per batch second** — data rows over the summed
  durations of the batches that read data, and **busy fraction** — that sum over the same
  span: near 1, a new file was always there when a batch ended (batches run back to back and
  each takes what arrived meanwhile), so throughput is the input rate whenever latency stays
  flat.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from elastream.runtimes.spark.sink import batch_of

QUANTILES = (0.5, 0.95, 0.99, 1.0)


def batches(metrics: Sequence[dict[str, Any]], progress: Sequence[dict[str, Any]],
            origin: float, file_rows: Sequence[int], file_data_rows: Sequence[int]
            ) -> pd.DataFrame:
    """One row per micro-batch: timing and input from the reports, loads from the metrics.

    A control step may cover several batches; its slot loads, moves and routing version are
    given to each of them (``step`` numbers the steps). ``data_rows``: the flights among the
    batch's input rows (the stream's files, in order, have ``file_rows`` rows of which
    ``file_data_rows`` flights; files are read whole, oldest first).
    """
    # A query waiting for its first file reports batch 0 without running it (no addBatch).
    progress = [p for p in progress if "addBatch" in p["durationMs"]]
    reports = pd.DataFrame({
        "batch": [p["batchId"] for p in progress],
        "start": [pd.Timestamp(p["timestamp"]).timestamp() for p in progress],
        "input_rows": [int(p["numInputRows"]) for p in progress],
        "watermark": [p.get("eventTime", {}).get("watermark") for p in progress],
    })
    rows = []
    for step, record in enumerate(metrics):
        first, last = record["first_batch_id"], record["batch_id"]
        if record["batches"] == 0:
            continue
        for batch, ms in zip(range(first, last + 1), record["batch_ms_each"], strict=True):
            rows.append({
                "batch": batch, "step": step, "batch_ms": ms,
                "max_mean_slot_load": record["max_mean_slot_load"],
                "active_slots": record["active_slots"],
                "step_moves": record["moves"] if batch == last else 0,
                "routing_version": record["routing_version"],
            })
    frame = reports.merge(pd.DataFrame(rows), on="batch", how="inner", validate="1:1")
    frame = frame.sort_values("batch", ignore_index=True)
    frame["end"] = frame["start"] + frame["batch_ms"] / 1000
    frame["t_start"] = frame["start"] - origin
    frame["t_end"] = frame["end"] - origin
    frame["input_total"] = frame["input_rows"].cumsum()
    read = np.searchsorted(np.cumsum(file_rows), frame["input_total"], side="right")
    data_total = np.concatenate([[0], np.cumsum(file_data_rows)])[read]
    frame["data_rows"] = np.diff(data_total, prepend=0)
    return frame


def file_latencies(batch_frame: pd.DataFrame, file_rows: Sequence[int],
                   arrivals: Sequence[float]) -> pd.DataFrame:
    """Per file: arrival, the batch that read it, and its latency (seconds)."""
    cumulative = np.cumsum(file_rows)
    read_by = np.searchsorted(batch_frame["input_total"].to_numpy(), cumulative, side="left")
    if (read_by >= len(batch_frame)).any():
        raise ValueError("some files were not read by any micro-batch reported")
    ends = batch_frame["end"].to_numpy()[read_by]
    return pd.DataFrame({"file": np.arange(len(arrivals)), "arrival": arrivals,
                         "batch": batch_frame["batch"].to_numpy()[read_by],
                         "latency_s": ends - np.asarray(arrivals)})


def window_delays(results_dir: Path, file_max_ms: Sequence[int],
                  arrivals: Sequence[float]) -> pd.DataFrame:
    """Per (sink file, window end): windows written, the file that closed them, the delay."""
    closing = np.maximum.accumulate(np.asarray(file_max_ms))
    groups = []
    for path in sorted(results_dir.glob("part-*.parquet")):
        ends = pd.read_parquet(path, columns=["window_end"])["window_end"]
        ends_ms = pd.to_datetime(ends, utc=True).dt.as_unit("ms").astype("int64")
        counts = ends_ms.value_counts().sort_index()
        closer = np.searchsorted(closing, counts.index.to_numpy(), side="left")
        written = path.stat().st_mtime
        groups.append(pd.DataFrame({
            "batch": batch_of(path), "window_end_ms": counts.index.to_numpy(),
            "windows": counts.to_numpy(), "closed_by": closer,
            "delay_s": written - np.asarray(arrivals)[closer],
            "closed_at_s": np.asarray(arrivals)[closer] - min(arrivals),
        }))
    return pd.concat(groups, ignore_index=True)


def sink_results(folder: Path) -> pd.DataFrame:
    """A ``ParquetBatchSink`` folder's rows, window bounds in UTC."""
    results = pd.read_parquet(folder)
    for column in ("window_start", "window_end"):
        results[column] = pd.to_datetime(results[column], utc=True)
    return results


def equals_oracle(name: str, results: pd.DataFrame, expected: pd.DataFrame) -> bool:
    """Whether ``results`` equal the oracle (tests/oracle.py, on the caller's ``sys.path``);
    the difference goes to stderr."""
    from oracle import compare_results

    try:
        compare_results(results, expected)
    except AssertionError as problem:
        print(f"{name}: differs from the oracle: {problem}", file=sys.stderr)
        return False
    return True


def weighted_quantiles(values: np.ndarray, weights: np.ndarray,
                       quantiles: Sequence[float] = QUANTILES) -> list[float]:
    """Quantiles of ``values`` each counted ``weights`` times (the inverse of the CDF)."""
    order = np.argsort(values, kind="stable")
    cdf = np.cumsum(weights[order]) / weights.sum()
    picks = np.searchsorted(cdf, np.asarray(quantiles) - 1e-12, side="left")
    return [float(values[order][min(p, len(values) - 1)]) for p in picks]


def summary(name: str, batch_frame: pd.DataFrame, files: pd.DataFrame | None,
            delays: pd.DataFrame | None, data_rows: int, *, exact: bool,
            output_rows: int, metrics: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One run's figures (``files``/``delays`` are ``None`` for the replay)."""
    data = batch_frame[batch_frame["data_rows"] > 0]
    ms = data["batch_ms"].to_numpy(dtype=float)
    steps = [m for m in metrics if m["valid_rows"] > 0 and m["max_mean_slot_load"] is not None]
    loads = np.array([m["max_mean_slot_load"] for m in steps], dtype=float)
    last_data = data["end"].max()
    first = files["arrival"].min() if files is not None else batch_frame["start"].min()
    out: dict[str, Any] = {
        "run": name, "rows": data_rows, "batches": len(batch_frame),
        "batches_with_data": len(data),
        "rows_per_batch_mean": round(float(data["data_rows"].mean())),
        "batch_ms_p50": round(float(np.percentile(ms, 50))),
        "batch_ms_p95": round(float(np.percentile(ms, 95))),
        "batch_ms_max": int(ms.max()),
        "rows_per_second": round(data_rows / (last_data - first)),
        "rows_per_batch_second": round(data_rows / (ms.sum() / 1000)),
        "max_mean_slot_load_mean": round(float(loads.mean()), 3),
        "max_mean_slot_load_p95": round(float(np.percentile(loads, 95)), 3),
        "moves": int(sum(m["moves"] for m in metrics)),
        "steps_with_moves": sum(1 for m in metrics if m["moves"]),
        "late_rows": int(sum(m["late_rows"] for m in metrics)),
        "output_rows": output_rows, "equal_to_oracle": exact,
    }
    if files is not None and delays is not None:
        data_files = files.iloc[:-2]  # the two punctuation files carry no data
        lat = data_files["latency_s"].to_numpy()
        half = len(lat) // 2
        q = weighted_quantiles(delays["delay_s"].to_numpy(), delays["windows"].to_numpy())
        out.update({
            "busy_fraction": round(float(ms.sum() / 1000 / (last_data - first)), 3),
            "file_latency_p50_s": round(float(np.median(lat)), 2),
            "file_latency_p95_s": round(float(np.percentile(lat, 95)), 2),
            "file_latency_max_s": round(float(lat.max()), 2),
            "file_latency_first_half_median_s": round(float(np.median(lat[:half])), 2),
            "file_latency_last_half_median_s": round(float(np.median(lat[half:])), 2),
            "window_delay_p50_s": round(q[0], 2), "window_delay_p95_s": round(q[1], 2),
            "window_delay_p99_s": round(q[2], 2), "window_delay_max_s": round(q[3], 2),
        })
    return out
