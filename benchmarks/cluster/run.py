"""The same job on ``local[2]`` and on a standalone cluster of two 1-core workers, side by side.

The cluster — a master and two workers of one core and 2 GB each, on this machine — is started
from the installed pyspark (``elastream.runtimes.spark.standalone``) and stopped at the end.
Each run is ``elastream run`` in a process of its own on the first ``--rows`` flights (key
``origin``, the default job: ``sum:delay``, ``count``, ``avg:delay`` over ``1h``, ``6h/1h``,
``24h/1h``, planner ``flux``, 4 slots, 100,000 rows per micro-batch), ``--master local[2]`` or
``--master spark://…`` (``spark.cores.max=2``, 1 GB per executor); rounds alternate the two.

Per run: rows/s over the summed micro-batch durations (what ``summary.json`` reports) and over
the batches after the first (whose Python workers, JIT and state stores start cold), the first
batch's and the median batch's duration, the process's wall time (JVM start, executors,
input preparation included), the machine's load average before and after, and whether the
results equal the pandas oracle and, for the cluster, the local run's results row for row.
Writes ``results/runs.csv``, ``results/results.json`` and ``results/cluster.png``.

    .venv/bin/python benchmarks/cluster/run.py [--rows N] [--rounds R]
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
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(ROOT / "tests"))  # the pandas oracle lives beside the tests
from common import first_flights, positive, run_meta, spark_job_outputs, write_csv, write_json  # noqa: E402,I001
from oracle import compare_results, window_oracle  # noqa: E402

from elastream.core.aggregates import AggSpec  # noqa: E402
from elastream.core.options import OPTIONS  # noqa: E402
from elastream.core.windows import WindowSpec  # noqa: E402
from elastream.runtimes.spark import standalone  # noqa: E402

WORK = HERE / "work"
ENGINES = ("local", "cluster")


def master_options(engine: str, cluster: standalone.Cluster) -> list[str]:
    """The Spark options of an engine's run."""
    if engine == "local":
        return ["--master", "local[2]"]
    return ["--master", cluster.master_url, "--conf", "spark.cores.max=2",
            "--executor-memory", "1g"]


def measure(engine: str, round_: int, source: Path, cluster: standalone.Cluster
            ) -> tuple[dict[str, Any], pd.DataFrame]:
    """One run: its figures and its results."""
    out = WORK / "out" / f"{engine}-{round_}"
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "elastream", "run", "--input", str(source),
               "--time-col", "date", "--key-col", "origin", "--output", str(out), "--quiet",
               *master_options(engine, cluster)]
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    done = subprocess.run(command, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
                          capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{engine} failed ({done.returncode}): {done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    metrics, results = spark_job_outputs(out)
    loaded = [r for r in metrics if r["input_rows"] > 0]
    batch_ms = np.array([r["batch_ms"] for r in loaded], dtype=float)
    later_rows = sum(r["input_rows"] for r in loaded[1:])
    return {
        "engine": engine, "round": round_, "rows": summary["input_rows"],
        "rows_per_s": summary["rows_per_second"],
        "rows_per_s_after_first": round(later_rows / (batch_ms[1:].sum() / 1000), 1),
        "batches": len(batch_ms),
        "first_batch_ms": int(batch_ms[0]), "p50_batch_ms": int(np.median(batch_ms)),
        "process_wall_s": round(wall, 1), "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }, results


def check(results: pd.DataFrame, expected: pd.DataFrame, local: pd.DataFrame | None) -> dict[
        str, bool]:
    """Equal to the oracle; equal to the local run's results (same rows, same values)."""
    verdict = {"equal_to_oracle": _equal(results, expected)}
    if local is not None:
        verdict["equal_to_local"] = _equal(results, local)
    return verdict


def _equal(actual: pd.DataFrame, expected: pd.DataFrame) -> bool:
    try:
        compare_results(actual, expected)
    except AssertionError as problem:
        print(f"differs: {str(problem)[:2000]}", file=sys.stderr)
        return False
    return True


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    rounds = sorted({r["round"] for r in rows})
    width = 0.8 / len(ENGINES)
    for ax, field, label in ((axes[0], "rows_per_s", "rows/s (summed batch time)"),
                             (axes[1], "rows_per_s_after_first", "rows/s after the first batch"),
                             (axes[2], "process_wall_s", "process wall time (s)")):
        for i, engine in enumerate(ENGINES):
            values = [next(r[field] for r in rows if r["engine"] == engine and r["round"] == k)
                      for k in rounds]
            ax.bar(np.arange(len(rounds)) + i * width, values, width, label=engine)
        ax.set_xticks(np.arange(len(rounds)) + width / 2, [f"round {k + 1}" for k in rounds])
        ax.set_ylabel(label)
    axes[0].legend(title="master")
    fig.suptitle(f"default job, {rows[0]['rows']:,} flights: local[2] vs standalone 2 × 1 core")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=positive, default=600_000,
                        help="first N flights in time order (default 600000)")
    parser.add_argument("--rounds", type=positive, default=2,
                        help="rounds, each running local then cluster (default 2)")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    WORK.mkdir(parents=True, exist_ok=True)
    flights = first_flights(args.rows)
    source = WORK / f"flights-{args.rows}.parquet"
    flights.to_parquet(source, index=False)
    expected = window_oracle(flights, time_col="date", key_col="origin",
                             aggs=[AggSpec.parse(a) for a in OPTIONS["aggs"].cli_default],
                             windows=[WindowSpec.parse(w) for w in OPTIONS["windows"].cli_default])
    shutil.rmtree(WORK / "cluster", ignore_errors=True)
    cluster = standalone.start(WORK / "cluster", workers=2, cores=1, memory="2g")
    rows: list[dict[str, Any]] = []
    try:
        for round_ in range(args.rounds):
            local = None
            for engine in ENGINES:
                row, results = measure(engine, round_, source, cluster)
                row.update(check(results, expected, local if engine == "cluster" else None))
                local = results if engine == "local" else local
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        standalone.stop(cluster)
    write_csv(rows, args.results / "runs.csv", columns=[*rows[0], "equal_to_local"])
    medians = {engine: {f: float(np.median([r[f] for r in rows if r["engine"] == engine]))
                        for f in ("rows_per_s", "rows_per_s_after_first", "first_batch_ms",
                                  "p50_batch_ms", "process_wall_s")} for engine in ENGINES}
    write_json(args.results / "results.json",
               {**run_meta("cluster/run.py", argv, args, cpus=os.cpu_count()),
                "started": started, "finished": time.strftime("%Y-%m-%d %H:%M:%S")},
               runs=rows, medians=medians)
    plot(rows, args.results / "cluster.png")
    return 0 if all(r["equal_to_oracle"] and r.get("equal_to_local", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
