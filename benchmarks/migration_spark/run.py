"""Scaling the real Spark pipeline: live progressive migration against stop-the-world.

The flights (key ``origin``, windows 1h, 6h/1h, 24h/1h; sum, count, average delay) replayed in
micro-batches; after batch ``--out-at`` the job scales out from ``--slots`` to ``--to`` slots and
after batch ``--in-at`` back in. Which key groups move is SSM's choice (Ding et al. §4.3,
``--migration``, τ = ``--tau``) on the recent key-group loads; the two runs differ only in how
they move:

* **live** — the query keeps running; each micro-batch moves at most ``--max-moves`` key groups
  (a mini-migration): their consolidate state is handed over through the migration store while
  their new partials wait at the new slot; no other key group pauses.
* **stop** — stop-the-world: the query stops, every key group moves in one routing version, the
  query restarts from its checkpoint and the first batch hands everything over. (Spark's own
  alternative, an offline repartition of the stopped query's state, can only re-spread whole
  grouping keys over a new number of partitions; elastream's consolidate state is grouped by
  slot, so it cannot move key groups between slots — and the state partitions were sized for the
  largest slot count at the start, so no repartition is needed.)

Per micro-batch the runtime's metrics give the batch duration, the controller step's wall time
(the latency a tuple of that batch sees, restart included), rows, moves and the key groups still
to move. Both runs are checked against the pandas oracle. Writes results/batches.csv,
results/summary.csv, results/results.json and results/migration_spark.png; scratch in work/.

    .venv/bin/python benchmarks/migration_spark/run.py [--rows N] [--rows-per-batch N]
        [--slots S] [--to S] [--out-at B] [--in-at B] [--key-groups G] [--max-moves M]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyspark
import report

from elastream.control.controller import Controller
from elastream.control.planners import job_planner
from elastream.core.aggregates import AggSpec
from elastream.core.spec import RunSpec, ScaleEvent
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.file_run import FileRun
from elastream.runtimes.spark.session import get_spark

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the pandas oracle lives beside the tests
sys.path.insert(0, str(HERE.parent))
from common import first_flights, positive, run_meta, spark_job_outputs  # noqa: E402
from oracle import compare_results, window_oracle  # noqa: E402

WORK = HERE / "work"
AGGS = ("sum:delay", "count", "avg:delay")
WINDOWS = ("1h", "6h/1h", "24h/1h")
MODES = ("live", "stop")


def run_one(spark: Any, mode: str, args: argparse.Namespace, source: Path, folder: Path
            ) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """One job; its per-batch metrics (as written by the runtime) and its results."""
    spec = RunSpec.of(input=source, output=folder, time_col="date", key_col="origin",
                      aggs=tuple(AggSpec.parse(a) for a in AGGS),
                      windows=tuple(WindowSpec.parse(w) for w in WINDOWS),
                      slots=args.slots, key_groups=args.key_groups, planner="hash",
                      rows_per_batch=args.rows_per_batch, max_moves=args.max_moves,
                      scale_at=(ScaleEvent(args.out_at, args.to),
                                ScaleEvent(args.in_at, args.slots)),
                      migration=args.migration, tau=args.tau, scale_mode=mode)
    plan, options = job_planner(spec)
    FileRun(spark, spec, Controller(plan, options)).run()
    return spark_job_outputs(folder)


def batch_rows(mode: str, metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per micro-batch that carried records."""
    rows = []
    for m in metrics:
        if m["batch_id"] < 0 or not m["valid_rows"]:
            continue
        rows.append({
            "mode": mode, "batch": m["batch_id"], "rows": m["valid_rows"],
            "batch_ms": m["batch_ms"], "step_seconds": m["wall_seconds"],
            "restart_seconds": m.get("restart_seconds", 0.0),
            "moves": m["moves"], "key_groups_to_move": m.get("key_groups_to_move", 0),
            "in_flight": m.get("in_flight", 0), "active_slots": m["active_slots"],
            "max_mean_slot_load": m["max_mean_slot_load"],
            "scale_to": m.get("scale_to"), "scale_cost": m.get("scale_cost"),
            "scale_max_load_ratio": m.get("scale_max_load_ratio"),
        })
    return rows


def summarize(mode: str, batches: list[dict[str, Any]], args: argparse.Namespace,
              exact: bool) -> dict[str, Any]:
    """Totals, and the batches around each scale event (the event's batch and the next 8)."""
    frame = pd.DataFrame(batches)
    # The step after batch b plans and publishes; a restart (stop) happens there, so the
    # latency it adds shows in that step's wall time.
    around = frame[(frame["batch"].between(args.out_at, args.out_at + 8))
                   | (frame["batch"].between(args.in_at, args.in_at + 8))]
    quiet = frame.drop(around.index)
    steady = quiet[quiet["batch"] > 1]
    return {
        "mode": mode, "batches": len(frame), "rows": int(frame["rows"].sum()),
        "steps_with_moves": int((frame["moves"] > 0).sum()),
        "moves_total": int(frame["moves"].sum()),
        "max_moves_in_a_step": int(frame["moves"].max()),
        "step_seconds_max_around_events": round(float(around["step_seconds"].max()), 2),
        "step_seconds_mean_around_events": round(float(around["step_seconds"].mean()), 2),
        "step_seconds_mean_elsewhere": round(float(steady["step_seconds"].mean()), 2),
        "restart_seconds_total": round(float(frame["restart_seconds"].sum()), 2),
        "loop_seconds": round(float(frame["step_seconds"].sum()), 1),
        "rows_per_second": round(float(frame["rows"].sum() / frame["step_seconds"].sum()), 1),
        "max_mean_slot_load_after_out": float(frame[frame["batch"].between(
            args.in_at - 2, args.in_at)]["max_mean_slot_load"].mean()),
        "equal_to_oracle": exact,
    }


def main(argv: list[str] | None = None) -> int:
    """Run both modes; write CSV, JSON and the plot."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=positive, default=600_000,
                   help="first N flights in time order (default 600000)")
    p.add_argument("--rows-per-batch", type=positive, default=20_000)
    p.add_argument("--slots", type=positive, default=4)
    p.add_argument("--to", type=positive, default=8, help="slots after scaling out (8)")
    p.add_argument("--out-at", type=int, default=6, help="scale out after this batch (6)")
    p.add_argument("--in-at", type=int, default=18, help="scale back in after this batch (18)")
    p.add_argument("--key-groups", type=positive, default=64)
    p.add_argument("--max-moves", type=positive, default=4, help="per mini-migration (4)")
    p.add_argument("--migration", default="ssm")
    p.add_argument("--tau", type=float, default=0.2)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)

    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    flights = first_flights(args.rows)
    source = WORK / "flights.parquet"
    flights.to_parquet(source, index=False)
    expected = window_oracle(flights, time_col="date", key_col="origin",
                             aggs=tuple(AggSpec.parse(a) for a in AGGS),
                             windows=tuple(WindowSpec.parse(w) for w in WINDOWS))
    spark = get_spark()
    warm = argparse.Namespace(**{**vars(args), "rows_per_batch": 2_000, "out_at": 1, "in_at": 3})
    flights.head(10_000).to_parquet(WORK / "warm.parquet", index=False)
    run_one(spark, "live", warm, WORK / "warm.parquet", WORK / "warm")
    all_batches: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for mode in MODES:
        metrics, results = run_one(spark, mode, args, source, WORK / mode)
        try:
            compare_results(results, expected)
            exact = True
        except AssertionError as problem:
            print(f"{mode}: differs from the oracle: {problem}", file=sys.stderr)
            exact = False
        batches = batch_rows(mode, metrics)
        all_batches += batches
        summary.append(summarize(mode, batches, args, exact))
        print(json.dumps(summary[-1]), flush=True)
    meta = {
        **run_meta("migration_spark/run.py", argv, args, pyspark=pyspark.__version__,
                   cpus=spark.sparkContext.defaultParallelism),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    spark.stop()
    report.write(all_batches, summary, meta, args.out)
    report.plot(all_batches, args, args.out / "migration_spark.png")
    return 0 if all(s["equal_to_oracle"] for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
