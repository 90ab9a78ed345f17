"""Hot keys in the real Spark pipeline: the ``hash``, ``flux`` and ``fish`` planners.

The same windowed job runs over the same replayed stream on one local Spark session, once per
planner. ``hash`` keeps every key whole on its key group's slot; ``flux`` moves whole key groups
(up to 4 per batch); ``fish`` does that too and splits the recent hot keys over several slots
(salted partial panes, merged by the consolidate stage). Per
micro-batch the runtime's own metrics give the slot loads (max/mean), the batch duration and the
pane partials sent to the consolidate stage (what a split costs: a split key makes one partial per
slot and pane). Both runs are checked against
the pandas oracle of tests/oracle.py. ``loop_seconds`` is the job's micro-batch loop (feed,
process, plan, publish); ``wall_seconds`` adds preparing the replay chunks, the dead-letter
catch-up and reading the results back.

Streams: FISH's time-evolving Zipf (``--z``, ``--keys``; 1000 tuples per second of event time)
twice — with hot sets that last ``--period`` tuples (several micro-batches), and with the
paper's period (a tenth of the stream, here only two micro-batches: the hot set changes at 80 %
and 100 % of every period, faster than a planner that sees whole batches can follow) — and the
real flights keyed by ``origin``. A small warm-up job runs first so that no planner pays
the session's JIT and Python worker start-up.

Writes results/batches.csv (one row per micro-batch), results/summary.csv and
results/results.json, and results/fish_spark.png; scratch goes to work/ (emptied per run).

    .venv/bin/python benchmarks/fish_spark/run.py [--zipf-rows N] [--z Z] [--keys K]
        [--period N] [--flights-rows N (0: skip)] [--slots S] [--rows-per-batch N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyspark
import report

from elastream.control.controller import Controller
from elastream.control.planners import planner
from elastream.core.aggregates import AggSpec
from elastream.core.spec import RunSpec
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.file_run import FileRun
from elastream.runtimes.spark.session import get_spark
from elastream.workloads.zipf import zipf_frame

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the pandas oracle lives beside the tests
from common import first_flights, positive, run_meta, spark_job_outputs  # noqa: E402
from oracle import compare_results, window_oracle  # noqa: E402

WORK = HERE / "work"
PLANNERS = ("hash", "flux", "fish")
"""Spark's name for the builtin aggregation's state operator (the pane partials)."""



def datasets(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The streams to compare on: name, frame, time and key columns, aggregates, windows."""
    out = [{
        "name": f"zipf z={args.z:g}, period {period or 0:,}", "time_col": "ts", "key_col": "key",
        "frame": zipf_frame(args.zipf_rows, z=args.z, num_keys=args.keys, seed=args.seed,
                            period=period),
        "aggs": ("sum:value", "count"), "windows": ("1m", "5m/1m"),
    } for period in (args.period, None)]
    out[1]["name"] = f"zipf z={args.z:g}, paper's period"
    if args.flights_rows != 0:
        out.append({"name": "flights by origin", "time_col": "date", "key_col": "origin",
                    "frame": first_flights(args.flights_rows),
                    "aggs": ("sum:delay", "count", "avg:delay"),
                    "windows": ("1h", "6h/1h", "24h/1h")})
    return out


def run_one(spark: Any, data: dict[str, Any], planner_name: str, args: argparse.Namespace,
            folder: Path, source: Path) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """One job; its per-batch metrics (as written by the runtime) and its results."""
    spec = RunSpec.of(input=source, output=folder, time_col=data["time_col"],
                      key_col=data["key_col"], aggs=tuple(AggSpec.parse(a) for a in data["aggs"]),
                      windows=tuple(WindowSpec.parse(w) for w in data["windows"]),
                      slots=args.slots, key_groups=args.key_groups, planner=planner_name,
                      rows_per_batch=args.rows_per_batch)
    plan, options = planner(planner_name)
    FileRun(spark, spec, Controller(plan, options)).run()
    return spark_job_outputs(folder)


def batch_rows(dataset: str, planner_name: str, metrics: list[dict[str, Any]]
               ) -> list[dict[str, Any]]:
    """One row per micro-batch that carried records."""
    rows = []
    for m in metrics:
        if not m["valid_rows"]:
            continue
        slots = np.asarray(m["slot_load"], dtype=float)
        rows.append({
            "dataset": dataset, "planner": planner_name, "batch": m["batch_id"],
            "rows": m["valid_rows"], "max_mean_slot_load": round(slots.max() / slots.mean(), 4),
            "batch_ms": m["batch_ms"],
            "partial_rows": m["partial_rows"],
            "hot_keys": m["hot_keys"], "split_slots": m["split_slots"],
        })
    return rows


def summarize(dataset: str, planner_name: str, batches: list[dict[str, Any]], wall: float,
              loop: float, exact: bool, output_rows: int) -> dict[str, Any]:
    """Averages over the batches (the first batch of ``fish`` routes by the unsplit table)."""
    ratio = np.array([b["max_mean_slot_load"] for b in batches])
    ms = np.array([b["batch_ms"] for b in batches], dtype=float)
    partials = np.array([b["partial_rows"] for b in batches], dtype=float)
    return {
        "dataset": dataset, "planner": planner_name, "batches": len(batches),
        "rows": int(sum(b["rows"] for b in batches)),
        "max_mean_slot_load_mean": round(float(ratio.mean()), 3),
        "max_mean_slot_load_p95": round(float(np.percentile(ratio, 95)), 3),
        "batch_ms_mean": round(float(ms.mean()), 1),
        "batch_ms_median": round(float(np.median(ms)), 1),
        "batch_ms_total": int(ms.sum()),
        "partial_rows_mean": round(float(partials.mean()), 1),
        "partial_rows_max": int(partials.max()),
        "hot_keys_max": max(b["hot_keys"] for b in batches),
        "loop_seconds": round(loop, 2), "wall_seconds": round(wall, 2),
        "output_rows": output_rows, "equal_to_oracle": exact,
    }


def main(argv: list[str] | None = None) -> int:
    """Run every stream under both planners; write CSV, JSON and the plot."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--zipf-rows", type=positive, default=1_000_000)
    p.add_argument("--z", type=float, default=1.5)
    p.add_argument("--keys", type=positive, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--period", type=positive, default=500_000,
                   help="tuples per hot-set period of the first Zipf stream (default 500000)")
    p.add_argument("--flights-rows", type=int, default=None,
                   help="first N flights in time order (default all 3 M; 0 = skip)")
    p.add_argument("--slots", type=positive, default=8)
    p.add_argument("--key-groups", type=positive, default=128)
    p.add_argument("--rows-per-batch", type=positive, default=50_000)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)

    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    spark = get_spark()
    warm = {"name": "warm-up", "time_col": "ts", "key_col": "key",
            "frame": zipf_frame(20_000, z=args.z, num_keys=1000, seed=args.seed),
            "aggs": ("sum:value", "count"), "windows": ("1m",)}
    warm["frame"].to_parquet(WORK / "warm.parquet", index=False)
    for name in PLANNERS:
        run_one(spark, warm, name, args, WORK / f"warm-{name}", WORK / "warm.parquet")
    all_batches: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for data in datasets(args):
        source = WORK / f"data-{len(summary)}.parquet"
        data["frame"].to_parquet(source, index=False)
        expected = window_oracle(data["frame"], time_col=data["time_col"],
                                 key_col=data["key_col"],
                                 aggs=tuple(AggSpec.parse(a) for a in data["aggs"]),
                                 windows=tuple(WindowSpec.parse(w) for w in data["windows"]))
        for name in PLANNERS:
            started = time.perf_counter()
            metrics, results = run_one(spark, data, name, args, WORK / f"{source.stem}-{name}",
                                       source)
            wall = time.perf_counter() - started
            try:
                compare_results(results, expected)
                exact = True
            except AssertionError as problem:
                print(f"{data['name']} {name}: differs from the oracle: {problem}",
                      file=sys.stderr)
                exact = False
            batches = batch_rows(data["name"], name, metrics)
            all_batches += batches
            loop = sum(m["wall_seconds"] for m in metrics)
            summary.append(summarize(data["name"], name, batches, wall, loop, exact,
                                     len(results)))
            print(json.dumps(summary[-1]), flush=True)
    meta = run_meta("fish_spark/run.py", argv, args, pyspark=pyspark.__version__,
                   cpus=spark.sparkContext.defaultParallelism)
    spark.stop()
    report.write(all_batches, summary, meta, args.out)
    report.plot(all_batches, args.out / "fish_spark.png")
    return 0 if all(s["equal_to_oracle"] for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
