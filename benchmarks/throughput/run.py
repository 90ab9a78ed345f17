"""Throughput of the default flights job and of the route-keyed job, side by side in one run.

Engines, each a process of its own on the same local Spark (``local[2]``, 4 slots):

* ``baseline`` — elastream at commit 6baf7b0, run from a git worktree under ``work/`` (its
  ``elastream run`` with the same options);
* ``now`` — this checkout's ``elastream run``;
* ``native`` — Spark's own ``groupBy(window(...))`` per window spec, unioned into one query;
* ``builtin`` — Spark's single tumbling ``1h`` aggregation (the ceiling).

Jobs: ``default`` (key ``origin``, ~300 keys) and ``route`` (key ``origin-destination``, 3,399
keys); windows ``1h``, ``6h/1h``, ``24h/1h``; aggregates sum, count and avg of ``delay``; 100,000
rows per micro-batch. Per run: rows/s over the summed batch durations (Spark's
``triggerExecution``, the first batch included), batch p50/p95, the mean batch of the first and
the last third, the process's wall time, and the peak resident memory of the JVM, of the
Python driver and of the Python workers (sampled from ``/proc`` every 0.2 s; each the largest
sum over the processes of its kind). Writes ``results/throughput.csv``, ``.json`` and
``throughput.png``.

    python benchmarks/throughput/run.py [--rows N] [--engines now,baseline,...] [--jobs ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from common import first_flights, run_meta, write_csv, write_json  # noqa: E402
from elastream.workloads.replay import ROW_GROUPS  # noqa: E402

BASELINE = "6baf7b0"
ENGINES = ("baseline", "now", "native", "builtin")
JOBS = {"default": "origin", "route": "route"}
ROWS_PER_BATCH = 100_000


def prepared_inputs(rows: int, work: Path) -> dict[str, Path]:
    """Per job, the first ``rows`` flights in time order as one file (``route`` added)."""
    path = work / f"flights-{rows}.parquet"
    if not path.exists():
        flights = first_flights(rows)
        flights["route"] = flights["origin"] + "-" + flights["destination"]
        work.mkdir(parents=True, exist_ok=True)
        flights.to_parquet(path, index=False, coerce_timestamps="us")
    return {job: path for job in JOBS}


def chunks(source: Path, work: Path) -> Path:
    """``source`` cut into files of ``ROWS_PER_BATCH`` rows, oldest first by mtime.

    Each in ``ROW_GROUPS`` row groups, as ``elastream run`` writes its replay chunks.
    """
    folder = work / f"chunks-{source.stem}-rg{ROW_GROUPS}"
    if folder.exists():
        return folder
    table = pq.read_table(source)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for index, start in enumerate(range(0, table.num_rows, ROWS_PER_BATCH)):
        path = tmp / f"chunk-{index:05d}.parquet"
        pq.write_table(table.slice(start, ROWS_PER_BATCH), path,
                       row_group_size=-(-ROWS_PER_BATCH // ROW_GROUPS))
        os.utime(path, (1e9 + index, 1e9 + index))
    tmp.rename(folder)
    return folder


def baseline_tree(work: Path) -> Path:
    """A git worktree of the baseline commit (made once)."""
    tree = work / "baseline"
    if not (tree / "src").exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force",
                        str(tree), BASELINE], check=True, capture_output=True)
    return tree


class MemoryPeaks:
    """Peak resident memory of a process tree by kind, sampled from /proc."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peaks = {"jvm": 0, "python_driver": 0, "python_workers": 0, "total": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        return {f"peak_{k}_mib": round(v / 2**20, 1) for k, v in self.peaks.items()}

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            sums = dict.fromkeys(self.peaks, 0)
            kinds: dict[int, str | None] = {}
            for pid, parent in _tree(self.pid):
                kind, rss = _kind_and_rss(pid)
                kinds[pid] = kind
                if kind == "jvm" and kinds.get(parent) == "jvm":
                    # A child the JVM is spawning (vfork, before its exec) shows the JVM's
                    # own pages: counting it would double the JVM for one sample.
                    continue
                if kind:
                    sums[kind] += rss
                    sums["total"] += rss
            for k, v in sums.items():
                self.peaks[k] = max(self.peaks[k], v)


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            out.setdefault(parent, []).append(int(entry))
    return out


def _tree(root: int) -> list[tuple[int, int]]:
    """The processes under ``root`` (itself included), parents first, with their parents."""
    children, found, todo = _children(), [], [(root, 0)]
    while todo:
        pid, parent = todo.pop()
        found.append((pid, parent))
        todo.extend((child, pid) for child in children.get(pid, []))
    return found


def _kind_and_rss(pid: int) -> tuple[str | None, int]:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return None, 0
    if "java" in cmd.split(" ", 1)[0]:
        return "jvm", rss
    if "pyspark.daemon" in cmd or "pyspark.worker" in cmd:
        return "python_workers", rss
    if "python" in cmd.split(" ", 1)[0] or "elastream" in cmd:
        return "python_driver", rss
    return None, 0


def command(engine: str, job: str, source: Path, out: Path, work: Path) -> tuple[list[str],
                                                                                  dict[str, str]]:
    """The command of one run, and its environment."""
    env = dict(os.environ)
    python = sys.executable
    if engine in ("native", "builtin"):
        return [python, str(HERE / "spark_native.py"), "--engine", engine, "--chunks",
                str(chunks(source, work)), "--key", JOBS[job], "--output", str(out)], env
    if engine == "baseline":
        env["PYTHONPATH"] = str(baseline_tree(work) / "src")
    return [python, "-c", "from elastream.cli.main import main; raise SystemExit(main())",
            "run", "--input", str(source), "--time-col", "date", "--key-col", JOBS[job],
            "--output", str(out),
            "--rows-per-batch", str(ROWS_PER_BATCH)], env


def measure(engine: str, job: str, source: Path, work: Path) -> dict[str, Any]:
    """Run one engine on one job; its figures."""
    out = work / "out" / f"{engine}-{job}"
    shutil.rmtree(out, ignore_errors=True)
    argv, env = command(engine, job, source, out, work)
    started = time.time()
    process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    memory = MemoryPeaks(process.pid)
    stdout, _ = process.communicate()
    wall = time.time() - started
    peaks = memory.stop()
    if process.returncode != 0:
        raise RuntimeError(f"{engine} on {job} failed ({process.returncode}): {argv}")
    if engine in ("native", "builtin"):
        report = json.loads(stdout.strip().splitlines()[-1])
        batches, rows = report["batch_ms_each"], report["input_rows"]
    else:
        records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()
                   if line.strip()]
        batches = [ms for r in records for ms in r.get("batch_ms_each", [r["batch_ms"]])
                   if r.get("input_rows", 0) > 0 or len(r.get("batch_ms_each", [])) > 1]
        rows = json.loads((out / "summary.json").read_text())["input_rows"]
    return {"job": job, "engine": engine, **figures(rows, batches),
            "process_wall_s": round(wall, 1), **peaks}


def figures(rows: int, batch_ms: list[int]) -> dict[str, Any]:
    """Rows/s over the summed batches; p50/p95; mean batch of the first and last third."""
    ms = np.array(batch_ms, dtype=float)
    third = max(1, len(ms) // 3)
    return {"rows": rows, "batches": len(ms), "batch_seconds": round(ms.sum() / 1000, 2),
            "rows_per_s": round(rows / (ms.sum() / 1000), 1),
            "first_batch_ms": int(ms[0]), "p50_ms": int(np.percentile(ms, 50)),
            "p95_ms": int(np.percentile(ms, 95)),
            "first_third_mean_ms": int(ms[1:third + 1].mean()),
            "last_third_mean_ms": int(ms[-third:].mean())}


def medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per job and engine, the median of each figure over the rounds."""
    out = []
    for key in dict.fromkeys((r["job"], r["engine"]) for r in rows):
        mine = [r for r in rows if (r["job"], r["engine"]) == key]
        figures_ = {f: float(np.median([r[f] for r in mine])) for f in mine[0]
                    if f not in ("job", "engine", "round")}
        out.append({"job": key[0], "engine": key[1], "rounds": len(mine), **figures_})
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = sorted({r["job"] for r in rows})
    engines = [e for e in ENGINES if any(r["engine"] == e for r in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, field, label in ((axes[0], "rows_per_s", "rows/s (summed batch time)"),
                             (axes[1], "peak_total_mib", "peak resident memory (MiB)")):
        width = 0.8 / len(engines)
        for i, engine in enumerate(engines):
            values = [next((r[field] for r in rows if r["job"] == j and r["engine"] == engine),
                           0) for j in jobs]
            ax.bar(np.arange(len(jobs)) + i * width, values, width, label=engine)
        ax.set_xticks(np.arange(len(jobs)) + width * (len(engines) - 1) / 2, jobs)
        ax.set_ylabel(label)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--jobs", default=",".join(JOBS))
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds; each round runs every engine once, in turn")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    work = HERE / "work"
    inputs = prepared_inputs(args.rows, work)
    rows = []
    for job in args.jobs.split(","):
        for round_ in range(args.repeat):
            for engine in args.engines.split(","):
                row = {"round": round_, **measure(engine, job, inputs[job], work)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    write_csv(rows, args.results / "throughput.csv")
    middle = medians(rows)
    write_json(args.results / "throughput.json", run_meta("throughput/run.py", argv, args),
               runs=rows, medians=middle)
    plot(middle, args.results / "throughput.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
