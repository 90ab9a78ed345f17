"""Collocation in the real Spark pipeline: a two-operator flights job under five planners.

The analogue of ALBIC's Real Jobs 2–3 (§5.4, Figs. 12–13) on the replayed flights: every
flight goes through a delay-per-origin operator and then a delay-per-route operator (windows
1h, 6h/1h, 24h/1h; sum, count and average delay). Each operator has G key groups; the runtime
observes, per micro-batch, the exact traffic between the two operators' key groups and reports
its collocation factor (percent of tuples whose two key groups share a slot) beside the slot
loads. Two jobs:

* **route by origin** (``--then origin,destination/origin``, Real Job 2): the route operator is
  partitioned by origin, so origin key group j sends only to route key group G + j and a
  perfect collocation exists. As in ALBIC, the job starts from the worst allocation (route key
  group G + j on the slot opposite to key group j), to see whether a planner collocates at run
  time.
* **route by route** (``--then origin,destination``, Real Job 3): routes hashed on their own, so
  an origin's traffic spreads over many route key groups and collocation is limited; starts
  from the initial hashed table.

Planners: ``hash`` (never moves), ``flux``, ``milp`` (ALBIC's MILP, balance only), ``albic``
(Algorithm 2 on the MILP: keeps collocated pairs together, adds one per batch) and ``cola``
(re-partitions everything each batch, no budget). ``max_moves`` key groups per batch
(``--max-moves``, ALBIC's maxMigrations) bind flux, milp and albic. The serialisation cost
(``--serialisation``, load per crossing tuple at each end) is what albic and cola trade
against balance; the *modelled* load index reports Σ rows + 2·s·crossing rows over the same
with every tuple crossing (the worst allocation's, ALBIC's round-1 reference).

Spark shuffles every row wherever its slot is, so on one machine collocation does not make a
batch faster: the collocation factor here measures what the plan would save on a cluster that
serialises only tuples crossing executors. A move is Enorm's instant migration (new panes go to
the new slot; the consolidate stage merges partials from both), so a move costs no state
transfer here — the number of moves is still reported, as ALBIC does.

Every run is checked against the pandas oracle, per operator. Writes results/batches.csv,
results/summary.csv, results/results.json and results/albic_spark.png; scratch in work/.

    .venv/bin/python benchmarks/albic_spark/run.py [--rows N] [--rows-per-batch N]
        [--slots S] [--key-groups G] [--max-moves M] [--serialisation S]
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
from elastream.control.planners import job_planner
from elastream.core.aggregates import AggSpec
from elastream.core.load import load_distance
from elastream.core.routing import RoutingTable
from elastream.core.spec import OperatorSpec, RunSpec
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.file_run import FileRun, Paths
from elastream.runtimes.spark.session import get_spark
from elastream.stores.routing_store import RoutingStore

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the pandas oracle lives beside the tests
from common import first_flights, positive, run_meta, spark_job_outputs  # noqa: E402
from oracle import compare_results, window_oracle  # noqa: E402

WORK = HERE / "work"
AGGS = ("sum:delay", "count", "avg:delay")
WINDOWS = ("1h", "6h/1h", "24h/1h")
JOBS = (
    {"name": "route by origin", "then": "origin,destination/origin", "start": "worst",
     "planners": ("hash", "flux", "milp", "albic", "cola")},
    {"name": "route by route", "then": "origin,destination", "start": "hashed",
     "planners": ("flux", "albic", "cola")},
)



def worst_table(key_groups: int, slots: int) -> RoutingTable:
    """Origin key group j on slot j mod S, route key group G + j on the slot S/2 further."""
    shift = max(1, slots // 2)
    return RoutingTable(0, tuple([j % slots for j in range(key_groups)]
                                 + [(j + shift) % slots for j in range(key_groups)]), slots)


def run_one(spark: Any, job: dict[str, Any], planner_name: str, args: argparse.Namespace,
            source: Path, folder: Path) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """One job; its per-batch metrics (as written by the runtime) and its results."""
    spec = RunSpec.of(input=source, output=folder, time_col="date", key_col="origin",
                      aggs=tuple(AggSpec.parse(a) for a in AGGS),
                      windows=tuple(WindowSpec.parse(w) for w in WINDOWS),
                      slots=args.slots, key_groups=args.key_groups, planner=planner_name,
                      rows_per_batch=args.rows_per_batch, max_moves=args.max_moves,
                      then=(OperatorSpec.parse(job["then"]),))
    if job["start"] == "worst":
        RoutingStore(Paths(folder).routing).publish(worst_table(args.key_groups, args.slots))
    plan, options = job_planner(spec, shared={"serialisation": args.serialisation,
                                              "seed": args.seed})
    FileRun(spark, spec, Controller(plan, options)).run()
    return spark_job_outputs(folder)


def check(results: pd.DataFrame, expected: dict[str, pd.DataFrame]) -> bool:
    """Each operator's results equal its oracle."""
    try:
        for operator, frame in expected.items():
            mine = results[results["operator"] == operator].drop(columns="operator")
            compare_results(mine.reset_index(drop=True), frame)
    except AssertionError as problem:
        print(f"differs from the oracle: {problem}", file=sys.stderr)
        return False
    return True


def batch_rows(job: str, planner_name: str, metrics: list[dict[str, Any]],
               serialisation: float) -> list[dict[str, Any]]:
    """One row per micro-batch that carried records."""
    rows = []
    for m in metrics:
        if not m["valid_rows"]:
            continue
        slots = np.asarray(m["slot_load"], dtype=float)
        work = slots.sum()
        rows.append({
            "job": job, "planner": planner_name, "batch": m["batch_id"],
            "records": m["valid_rows"],
            "collocation_factor": m["collocation_factor"],
            "load_distance": round(load_distance(slots), 3),
            "max_mean_slot_load": round(float(slots.max() / slots.mean()), 4),
            "load_index": round(float((work + 2 * serialisation * m["cross_slot_rows"])
                                      / (work + 2 * serialisation * m["traffic_rows"])), 4),
            "moves": m["moves"], "plan_seconds": m["plan_seconds"],
            "plan_status": m["plan_status"], "batch_ms": m["batch_ms"],
        })
    return rows


def summarize(job: str, planner_name: str, batches: list[dict[str, Any]], loop: float,
              exact: bool) -> dict[str, Any]:
    """Means over the batches, and the last tenth of them (where collocation has grown)."""
    frame = pd.DataFrame(batches)
    tail = frame.tail(max(1, len(frame) // 10))
    return {
        "job": job, "planner": planner_name, "batches": len(frame),
        "records": int(frame["records"].sum()),
        "collocation_first": float(frame["collocation_factor"].iloc[0]),
        "collocation_last_tenth": round(float(tail["collocation_factor"].mean()), 2),
        "collocation_mean": round(float(frame["collocation_factor"].mean()), 2),
        "load_distance_mean": round(float(frame["load_distance"].mean()), 2),
        "load_distance_last_tenth": round(float(tail["load_distance"].mean()), 2),
        "load_index_last_tenth": round(float(tail["load_index"].mean()), 4),
        "moves_per_batch": round(float(frame["moves"].mean()), 2),
        "moves_total": int(frame["moves"].sum()),
        "plan_seconds_max": round(float(frame["plan_seconds"].max()), 3),
        "batch_ms_median": float(frame["batch_ms"].median()),
        "loop_seconds": round(loop, 1), "equal_to_oracle": exact,
    }


def main(argv: list[str] | None = None) -> int:
    """Run both jobs under their planners; write CSV, JSON and the plot."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=positive, default=1_200_000,
                   help="first N flights in time order (default 1200000)")
    p.add_argument("--rows-per-batch", type=positive, default=25_000)
    p.add_argument("--slots", type=positive, default=4)
    p.add_argument("--key-groups", type=positive, default=32, help="per operator (default 32)")
    p.add_argument("--max-moves", type=positive, default=4)
    p.add_argument("--serialisation", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)

    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    flights = first_flights(args.rows)
    source = WORK / "flights.parquet"
    flights.to_parquet(source, index=False)
    by_route = flights.assign(route=flights["origin"] + "," + flights["destination"])
    aggs = tuple(AggSpec.parse(a) for a in AGGS)
    windows = tuple(WindowSpec.parse(w) for w in WINDOWS)
    expected = {op: window_oracle(by_route, time_col="date", key_col=col, aggs=aggs,
                                  windows=windows)
                for op, col in (("origin", "origin"), ("origin,destination", "route"))}
    spark = get_spark()
    warm = argparse.Namespace(**{**vars(args), "rows_per_batch": 5_000})
    flights.head(10_000).to_parquet(WORK / "warm.parquet", index=False)
    run_one(spark, JOBS[0], "hash", warm, WORK / "warm.parquet", WORK / "warm")
    all_batches: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for job in JOBS:
        for name in job["planners"]:
            started = time.perf_counter()
            folder = WORK / f"{job['name'].replace(' ', '-')}-{name}"
            metrics, results = run_one(spark, job, name, args, source, folder)
            exact = check(results, expected)
            batches = batch_rows(job["name"], name, metrics, args.serialisation)
            all_batches += batches
            summary.append(summarize(job["name"], name, batches,
                                     time.perf_counter() - started, exact))
            print(json.dumps(summary[-1]), flush=True)
    meta = run_meta("albic_spark/run.py", argv, args, pyspark=pyspark.__version__,
                   cpus=spark.sparkContext.defaultParallelism)
    spark.stop()
    report.write(all_batches, summary, meta, args.out)
    report.plot(all_batches, args.out / "albic_spark.png")
    return 0 if all(s["equal_to_oracle"] for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
