"""Throughput curves: elastream's rows/s against rows per batch, windows, slots and keys.

Each point is one ``elastream run`` (a process of its own, local Spark, RocksDB state) over the
first ``--rows`` rows of a data set, everything else at the default job's settings (4 slots,
500,000 rows per micro-batch, windows ``1h``, ``6h/1h``, ``24h/1h``, aggregates sum, count and
avg):

* ``rows_per_batch`` — the flights by origin, 10 k to 1 M rows per micro-batch, on elastream
  now and at the baseline commit (``run.py``'s ``baseline``): where the fixed cost of a
  micro-batch stops deciding throughput;
* ``windows`` — the flights by origin with the first 1 … 6 of ``1h``, ``6h/1h``, ``24h/1h``,
  ``2h``, ``12h/1h``, ``48h/1h``, on elastream and on Spark's native ``window()`` (one
  aggregation per window spec, unioned: ``spark_native.py``);
* ``slots`` — the flights by origin on 1, 2, 4 and 8 slots;
* ``keys`` — a Zipf stream (z = 1, FISH's time-evolving hot set) of 10², 10³, 10⁴ and 10⁵
  keys, 0.4 rows per second of event time (100,000 rows span about three days).

Per point: rows/s over the summed batch durations (first batch included, as ``run.py``), the
steady rows/s (first batch left out), batch p50, and peak resident memory. Writes
results/curves.csv, results/curves.json and results/curves.png.

    nice -n 5 .venv/bin/python benchmarks/throughput/curves.py [--rows N] [--curves a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.dataset as ds

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from run import (  # noqa: E402
    ROWS_PER_BATCH,
    MemoryPeaks,
    baseline_tree,
    batches_of,
    command,
    figures,
    prepared_inputs,
)

from common import run_meta, write_csv, write_json  # noqa: E402

WINDOWS = ("1h", "6h/1h", "24h/1h", "2h", "12h/1h", "48h/1h")
DEFAULT_WINDOWS = WINDOWS[:3]
BATCH_ROWS = (10_000, 25_000, 100_000, 250_000, 500_000, 1_000_000)
ZIPF_RATE = 0.4
"""Zipf rows per second of event time."""


def points(curves: list[str]) -> list[dict[str, Any]]:
    """Every run: its curve, x value, data set and options."""
    out: list[dict[str, Any]] = []
    for curve in curves:
        if curve == "rows_per_batch":
            out += [{"curve": curve, "x": n, "data": "flights", "rows_per_batch": n,
                     "engine": engine} for engine in ("now", "baseline") for n in BATCH_ROWS]
        elif curve == "windows":
            out += [{"curve": curve, "x": n, "data": "flights", "windows": WINDOWS[:n],
                     "engine": engine}
                    for n in range(1, len(WINDOWS) + 1) for engine in ("now", "native")]
        elif curve == "slots":
            out += [{"curve": curve, "x": n, "data": "flights", "slots": n} for n in (1, 2, 4, 8)]
        elif curve == "keys":
            out += [{"curve": curve, "x": k, "data": f"zipf-{k}"} for k in (100, 1000, 10_000,
                                                                           100_000)]
        else:
            raise SystemExit(f"--curves: unknown curve {curve!r} (rows_per_batch, windows, "
                             "slots, keys)")
    return out


def zipf_input(keys: int, rows: int, work: Path) -> Path:
    """The Zipf stream of ``keys`` keys as one Parquet file (made once)."""
    from elastream.workloads.zipf import zipf_frame

    path = work / f"zipf-{keys}-{rows}.parquet"
    if not path.exists():
        frame = zipf_frame(rows, num_keys=keys, rate=ZIPF_RATE, seed=1)
        work.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(path, index=False, coerce_timestamps="us")
    return path


def argv_of(point: dict[str, Any], source: Path, out: Path) -> list[str]:
    """The ``elastream run`` command of one point."""
    zipf = point["data"].startswith("zipf")
    argv = [sys.executable, "-c", "from elastream.cli.main import main; raise SystemExit(main())",
            "run", "--input", str(source), "--output", str(out),
            "--time-col", "ts" if zipf else "date", "--key-col", "key" if zipf else "origin",
            "--rows-per-batch", str(point.get("rows_per_batch", ROWS_PER_BATCH)),
            "--slots", str(point.get("slots", 4))]
    for window in point.get("windows", DEFAULT_WINDOWS):
        argv += ["--window", window]
    if zipf:
        argv += ["--agg", "sum:value", "--agg", "count", "--agg", "avg:value"]
    return argv


def native_argv(point: dict[str, Any], source: Path, out: Path, work: Path) -> list[str]:
    """The Spark-alone command of a ``native`` point (the flights by origin only)."""
    argv, _ = command("native", "default", source, out, work)
    for window in point.get("windows", DEFAULT_WINDOWS):
        argv += ["--window", window]
    return argv


def measure(point: dict[str, Any], source: Path, work: Path) -> dict[str, Any]:
    """Run one point; its figures."""
    engine = point.get("engine", "now")
    out = work / "out" / f"curve-{point['curve']}-{point['x']}-{engine}"
    shutil.rmtree(out, ignore_errors=True)
    started = time.time()
    argv = native_argv(point, source, out, work) if engine == "native" else argv_of(
        point, source, out)
    env = dict(os.environ)
    if engine == "baseline":
        env["PYTHONPATH"] = str(baseline_tree(work) / "src")
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    memory = MemoryPeaks(process.pid)
    stdout, _ = process.communicate()
    wall = time.time() - started
    peaks = memory.stop()
    if process.returncode != 0:
        raise RuntimeError(f"{point} failed ({process.returncode})")
    if engine == "native":
        report = json.loads(stdout.strip().splitlines()[-1])
        batches, rows = report["batch_ms_each"], report["input_rows"]
        summary = {"output_rows": int(ds.dataset(out / "results").count_rows()),
                   "nothing_lost": None}
    else:
        batches = batches_of(out)
        summary = json.loads((out / "summary.json").read_text())
        rows = summary["input_rows"]
    shown = {"engine": engine, **{k: v for k, v in point.items() if k not in ("windows",)}}
    later = np.array(batches[1:], dtype=float)
    return {**shown, **figures(rows, batches),
            "steady_rows_per_s": round(rows * len(later) / len(batches) / (later.sum() / 1000),
                                       1) if len(later) else None,
            "output_rows": summary["output_rows"], "nothing_lost": summary["nothing_lost"],
            "process_wall_s": round(wall, 1), **peaks}


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """One panel per curve: rows/s (all batches and steady) against its x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = list(dict.fromkeys(r["curve"] for r in rows))
    fig, axes = plt.subplots(1, len(curves), figsize=(4.5 * len(curves), 3.8), squeeze=False)
    for ax, curve in zip(axes[0], curves, strict=True):
        for engine in dict.fromkeys(r.get("engine", "now") for r in rows if r["curve"] == curve):
            mine = [r for r in rows if r["curve"] == curve and r.get("engine", "now") == engine]
            xs = [r["x"] for r in mine]
            name = {"now": "elastream", "baseline": "elastream at the baseline"}.get(
                engine, f"Spark {engine} window()")
            ax.plot(xs, [r["rows_per_s"] for r in mine], "o-", label=f"{name}, all batches")
            ax.plot(xs, [r["steady_rows_per_s"] for r in mine], "s--",
                    label=f"{name}, first batch left out")
        if curve in ("rows_per_batch", "keys"):
            ax.set_xscale("log")
            ax.minorticks_off()
        ax.set_xticks(xs, [f"{x:,}" if x < 10_000 else f"{x // 1000:,}k" for x in xs])
        ax.set_xlabel(curve.replace("_", " "))
        ax.set_ylabel("rows/s")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--curves", default="rows_per_batch,windows,slots,keys")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    work = HERE / "work"
    flights = prepared_inputs(args.rows, work)["default"]
    rows = []
    for point in points(args.curves.split(",")):
        data = point["data"]
        source = flights if data == "flights" else zipf_input(int(data.split("-")[1]),
                                                               args.rows, work)
        row = measure(point, source, work)
        print(json.dumps(row), flush=True)
        rows.append(row)
    write_csv(rows, args.results / "curves.csv")
    write_json(args.results / "curves.json", run_meta("throughput/curves.py", argv, args),
               runs=rows)
    plot(rows, args.results / "curves.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
