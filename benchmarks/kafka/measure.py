"""What one run of ``elastream run`` on a Kafka topic did, read from its output folder and /proc.

Times are wall-clock Unix seconds throughout: the generator stamps each row with the wall clock
when it leaves (event time = produce time), so a window's end is a wall-clock instant too.

* **Commits** (:func:`commit_points`): for each micro-batch ``N`` the query committed, the
  mtime of ``_checkpoints/results/commits/N`` and the offsets it read up to — the last line of
  ``_checkpoints/results/offsets/N``, ``{"TOPIC": {"0": off, …}}`` — summed over partitions.
  On a fresh topic an offset is a row count, so this is the rows committed by that instant.
* **Sustained rows/s** (:func:`sustained`): rows committed between the first commit at or after
  the steady window's start and the last commit at or before its end, over the time between
  them: whole micro-batches only.
* **Backlog** (:func:`committed_at`): rows in the topic (the generator's count, or the topic's
  end offsets) minus the rows committed by the same instant.
* **Latency** (:func:`window_latencies`): of each window (one key's), the mtime of the results
  file that holds it (``results/part-<batch>.parquet``, written just before the batch commits)
  minus its ``window_end``: the produce time of the last record the window could hold until
  the window is visible in the sink, the ``--lateness`` wait and the trigger included.
* **CPU** (:class:`CpuSample`): utime + stime of processes from ``/proc/<pid>/stat`` and the
  machine's busy time from ``/proc/stat``, as differences between two samples.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Commit:
    """One committed micro-batch: its id, when it committed, the rows committed by then."""

    batch: int
    unix: float
    rows: int


def commit_points(job: Path, topic: str) -> list[Commit]:
    """Every micro-batch of the job's results query that committed, in order."""
    checkpoint = job / "_checkpoints" / "results"
    commits = checkpoint / "commits"
    if not commits.is_dir():
        return []
    points = []
    for path in sorted((p for p in commits.iterdir() if p.name.isdigit()),
                       key=lambda p: int(p.name)):
        offsets = json.loads((checkpoint / "offsets" / path.name).read_text()
                             .strip().splitlines()[-1])
        points.append(Commit(int(path.name), path.stat().st_mtime,
                             sum(int(v) for v in offsets.get(topic, {}).values())))
    return points


def committed_at(points: list[Commit], unix: float) -> int:
    """Rows committed by ``unix`` (0 before the first commit)."""
    return max((c.rows for c in points if c.unix <= unix), default=0)


def sustained(points: list[Commit], start: float, end: float) -> float | None:
    """Rows/s committed over the whole micro-batches that committed within [start, end]."""
    inside = [c for c in points if start <= c.unix <= end]
    if len(inside) < 2 or inside[-1].unix <= inside[0].unix:
        return None
    return (inside[-1].rows - inside[0].rows) / (inside[-1].unix - inside[0].unix)


def sent_at(timeline: list[list[float]], unix: float) -> float:
    """Rows the generator had sent by ``unix`` (linear between its timeline's marks)."""
    times, rows = zip(*timeline, strict=True)
    return float(np.interp(unix, times, rows))


def result_files(job: Path) -> list[tuple[Path, float]]:
    """The results files with their mtimes, oldest first."""
    folder = job / "results"
    if not folder.is_dir():
        return []
    files = [(p, p.stat().st_mtime) for p in folder.glob("part-*.parquet")]
    return sorted(files, key=lambda f: f[1])


def window_ends(path: Path) -> np.ndarray:
    """The ``window_end`` of each window in a results file, as Unix seconds."""
    column = pq.read_table(path, columns=["window_end"]).column("window_end")
    ends: np.ndarray = column.cast("int64").to_numpy().astype(np.float64)
    return ends / _per_second(column.type)


def _per_second(kind: Any) -> float:
    return {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}[kind.unit]


@dataclass(frozen=True)
class Latency:
    """End-to-end latency of the windows whose end is in a range, in seconds."""

    p50: float | None
    p95: float | None
    windows: int
    """Windows (key, window) seen in the sink with their end in the range."""
    closings: int
    """Distinct window ends in the range (every ``slide`` seconds)."""
    unseen: int
    """Window ends in the range that no results file held when the job was stopped: they count
    with the latency they had reached then (a lower bound), so p50/p95 are lower bounds."""


def window_latencies(job: Path, start: float, end: float, slide: float,
                     stopped: float) -> Latency:
    """Latency of every window whose end is in [start, end]; see :class:`Latency`."""
    latencies, seen = [], set()
    for path, mtime in result_files(job):
        ends = window_ends(path)
        ends = ends[(ends >= start) & (ends <= end)]
        latencies.append(mtime - ends)
        seen.update(np.round(ends, 3).tolist())
    expected = np.arange(np.ceil(start / slide) * slide, end + 1e-9, slide)
    unseen = [e for e in expected.tolist() if round(e, 3) not in seen]
    observed = np.concatenate(latencies) if latencies else np.empty(0)
    windows = len(observed)
    if unseen:  # as many windows per unseen end as the seen ends held on average
        each = max(1, round(windows / max(1, len(seen))))
        observed = np.concatenate([observed, np.repeat(stopped - np.array(unseen), each)])
    if not len(observed):
        return Latency(None, None, 0, len(expected), len(unseen))
    p50, p95 = np.percentile(observed, [50, 95]).tolist()
    return Latency(p50, p95, windows, len(expected), len(unseen))


def batch_metrics(job: Path, points: list[Commit], start: float, end: float) -> dict[str, Any]:
    """The control steps whose batch committed within [start, end]: batch time, slot balance.

    ``batch_ms_p50``, ``rows_per_batch`` (mean), ``max_mean_slot_load`` (the mean over steps of
    each step's busiest slot's load over the mean), ``slot_share`` (each slot's share of the
    rows over the steps, busiest first), ``hot_keys`` (most keys split at one step), ``moves``.
    """
    path = job / "metrics.jsonl"
    if not path.exists():
        return {}
    when = {c.batch: c.unix for c in points}
    steps = [m for m in map(json.loads, path.read_text().splitlines())
             if start <= when.get(m["batch_id"], -1.0) <= end]
    if not steps:
        return {}
    loads = np.sum([m["slot_load"] for m in steps], axis=0)
    ratios = [m["max_mean_slot_load"] for m in steps if m.get("max_mean_slot_load")]
    return {
        "steps": len(steps),
        "batch_ms_p50": float(np.median([b for m in steps for b in m["batch_ms_each"]])),
        "rows_per_batch": float(np.mean([m["input_rows"] / max(1, m["batches"])
                                         for m in steps])),
        "max_mean_slot_load": float(np.mean(ratios)) if ratios else None,
        "slot_share": sorted((round(x / max(1, loads.sum()), 3) for x in loads), reverse=True),
        "hot_keys": max(m.get("hot_keys", 0) for m in steps),
        "moves": sum(m.get("moves", 0) for m in steps),
        "late_rows": sum(m.get("late_rows", 0) for m in steps),
    }


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a live process, ``None`` if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after the command name, which may hold spaces
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def process_tree(root: int) -> list[int]:
    """``root`` and its live descendants."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = stat[0]
    tree, grew = {root}, True
    while grew:
        more = {p for p, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return sorted(tree)


def machine_busy() -> float:
    """Seconds all cores were busy since boot (``/proc/stat``: all but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / TICKS


@dataclass(frozen=True)
class CpuSample:
    """CPU seconds used so far by each process of each group, and by the whole machine."""

    unix: float
    groups: dict[str, dict[int, float]]
    machine: float

    @classmethod
    def take(cls, groups: dict[str, list[int]]) -> CpuSample:
        import time

        used = {name: {p: s[1] for p in pids if (s := _stat(p)) is not None}
                for name, pids in groups.items()}
        return cls(time.time(), used, machine_busy())

    def shares(self, later: CpuSample) -> dict[str, float]:
        """Cores each group kept busy between the samples (1.0 = one core), the machine's, and
        ``cpu_other``: the machine's less the groups' (other work on the machine).

        Per process: its CPU at ``later`` less its CPU here (0 if it started since); a process
        that ended in between is missed.
        """
        span = later.unix - self.unix
        out = {}
        for name, pids in later.groups.items():
            before = self.groups.get(name, {})
            out[f"cpu_{name}"] = round(sum(cpu - before.get(p, 0.0)
                                           for p, cpu in pids.items()) / span, 3)
        out["cpu_machine"] = round((later.machine - self.machine) / span, 3)
        out["cpu_other"] = round(out["cpu_machine"] - sum(
            out[f"cpu_{name}"] for name in later.groups), 3)
        return out
