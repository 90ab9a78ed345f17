"""Elastic and skew-aware at once, on Spark: ALBIC's Fig. 5, and a rate that rises and falls.

**fig5** — ALBIC §5.1, Fig. 5 (integrated vs separate scale-in), on the real pipeline. A job of
``--slots`` slots over a synthetic stream whose keys are placed so that ``--overloaded`` slots
(1, then 3; the paper: 1 and 5 of 60 nodes) carry four times a key's load, scales in by
``--remove`` slots at batch 3 with the ``milp`` planner (ALBIC's MILP), ``--max-moves`` key
groups per micro-batch (the paper's maxMigrations). *Integrated*: the MILP gets the leaving
slots as its removal set and drains them while it balances; *separate*: they are drained first,
each key group to the slot that holds the fewest, then the MILP balances the rest. Per step:
ALBIC's load distance d (percent of the mean over the slots that stay; a leaving slot counts
only above it), and the micro-batches and seconds until every leaving slot is empty.

**rate** — a Zipf stream whose hot keys drift (``zipf_frame``'s time-evolving hot sets) arrives
in a watched folder, one file per ``--interval`` seconds, then six times as fast for
``--burst`` files, then as before: run static (``--slots`` fixed, ``flux``), and with
``--autoscale`` under ``hash``, ``fish`` and ``albic`` (``--latency-target``). Per run: batch
seconds p50/p95 against the target, slot-seconds used (slots in use × batch seconds), max/mean
slot load, moves, autoscale decisions.

Every run is checked against the pandas oracle. Writes results/steps.csv (fig5, one row per
control step), results/batches.csv (rate), results/summary.csv, results/elastic_skew.json and
results/elastic_skew.png; scratch in work/.

    nice -n 5 .venv/bin/python benchmarks/elastic_skew/run.py [--part fig5|rate|all]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyspark
import report

from elastream.control.controller import Controller
from elastream.control.planners import job_planner
from elastream.control.scale_events import scale_events
from elastream.core.aggregates import AggSpec
from elastream.core.keygroups import key_groups
from elastream.core.spec import RunSpec, ScaleEvent
from elastream.core.windows import WindowSpec
from elastream.runtimes.sim.rounds import removal_load_distance
from elastream.runtimes.spark.file_run import FileRun
from elastream.runtimes.spark.session import get_spark
from elastream.workloads.zipf import zipf_frame

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # common.py
sys.path.insert(0, str(ROOT / "tests"))  # the pandas oracle lives beside the tests
from common import positive, run_meta, spark_job_outputs, write_csv, write_json  # noqa: E402
from oracle import compare_results, window_oracle  # noqa: E402

WORK = HERE / "work"
AGGS = ("sum:value", "count")
WINDOWS = ("1m", "5m/1m")


def run_job(spark: Any, spec: RunSpec, feed: Any = None) -> tuple[list[dict[str, Any]],
                                                                   pd.DataFrame, float]:
    """Run ``spec`` (``feed``: a function writing its watched folder, in a thread)."""
    writer = None if feed is None else threading.Thread(target=feed, daemon=True)
    started = time.perf_counter()
    if writer is not None:
        writer.start()
    FileRun(spark, spec, Controller(*job_planner(spec))).run()
    if writer is not None:
        writer.join()
    metrics, results = spark_job_outputs(spec.files.output)
    return metrics, results, time.perf_counter() - started


def exact(results: pd.DataFrame, frame: pd.DataFrame, closed_only: bool = False) -> bool:
    expected = window_oracle(frame, time_col="ts", key_col="key",
                             aggs=[AggSpec.parse(a) for a in AGGS],
                             windows=[WindowSpec.parse(w) for w in WINDOWS])
    if closed_only:  # a watched folder emits the windows its watermark closed
        expected = expected[expected["window_end"] <= frame["ts"].max()]
    try:
        compare_results(results, expected)
        return True
    except AssertionError as problem:
        print(f"differs from the oracle: {problem}", file=sys.stderr)
        return False


# -- fig5 ------------------------------------------------------------------------------------
def fig5_stream(overloaded: int, args: argparse.Namespace) -> pd.DataFrame:
    """Keys spread over the key groups; those of slots ``0 … overloaded−1`` (kg mod slots,
    the job's first table) four times as frequent as the others."""
    rng = np.random.default_rng(args.seed + overloaded)
    keys = np.array([f"k{i}" for i in range(args.keys)])
    slot = key_groups(keys, args.key_groups) % args.slots
    weight = np.where(slot < overloaded, 4.0, 1.0)
    rows = args.fig5_rows
    picked = rng.choice(keys, size=rows, p=weight / weight.sum())
    ts = pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(np.arange(rows) * 50, "ms")
    return pd.DataFrame({"ts": ts, "key": picked, "value": rng.random(rows)})


def fig5_steps(case: str, scale_in: str, metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per control step: the load distance the batches ran with, and scaling."""
    rows, before = [], None
    for m in metrics:
        if before is not None and m["valid_rows"]:
            load = np.asarray(m["slot_load"], dtype=float)
            nodes = sorted({*before["slots_active"], *before["slots_leaving"]})
            removed = np.isin(nodes, before["slots_leaving"])
            rows.append({
                "case": case, "scale_in": scale_in, "batch": m["batch_id"],
                "load_distance": round(removal_load_distance(load[nodes], np.ones(len(nodes)),
                                                             removed), 2),
                "leaving": len(before["slots_leaving"]), "moves": m["moves"],
                "batch_ms": m["batch_ms"]})
        if "slots_active" in m:
            before = m
    return rows


def fig5(spark: Any, args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    steps, summary = [], []
    for overloaded in args.overloaded:
        frame = fig5_stream(overloaded, args)
        source = WORK / f"fig5-{overloaded}.parquet"
        frame.to_parquet(source, index=False)
        for scale_in in ("integrated", "separate"):
            case = f"{overloaded}OL"
            spec = RunSpec.of(input=source, output=WORK / f"fig5-{overloaded}-{scale_in}",
                              time_col="ts", key_col="key",
                              aggs=tuple(AggSpec.parse(a) for a in AGGS),
                              windows=tuple(WindowSpec.parse(w) for w in WINDOWS),
                              slots=args.slots, key_groups=args.key_groups, planner="milp",
                              max_moves=args.max_moves, rows_per_batch=args.rows_per_batch,
                              scale_at=(ScaleEvent(3, args.slots - args.remove),),
                              scale_in=scale_in)
            metrics, results, wall = run_job(spark, spec)
            rows = fig5_steps(case, scale_in, metrics)
            event = scale_events(metrics, [(3, args.slots - args.remove)])[0]
            after = [r for r in rows if r["batch"] > event["batch"]]
            done = event.get("done_batch")
            scaling = [r for r in after if done is None or r["batch"] <= done]
            summary.append({
                "part": "fig5", "case": case, "scale_in": scale_in,
                "scale_in_batches": None if done is None else done - event["batch"],
                "scale_in_seconds": round(sum(r["batch_ms"] for r in scaling) / 1000, 1),
                "moves": event["moves"],
                "load_distance_during": round(float(np.mean([r["load_distance"]
                                                             for r in scaling])), 2),
                "load_distance_end": after[-1]["load_distance"] if after else None,
                "wall_seconds": round(wall, 1), "equal_to_oracle": exact(results, frame)})
            steps += rows
            print(json.dumps(summary[-1]), flush=True)
    return steps, summary


# -- rate ------------------------------------------------------------------------------------
def rate_stream(args: argparse.Namespace) -> pd.DataFrame:
    files = 2 * args.calm + args.burst
    frame = zipf_frame(files * args.rows_per_file, z=args.z, num_keys=args.zipf_keys,
                       seed=args.seed, period=args.rows_per_file * 4)
    return frame


def feeder(frame: pd.DataFrame, folder: Path, args: argparse.Namespace) -> Any:
    """Writes the stream's files into ``folder``: calm, six times as fast, calm."""
    gaps = [args.interval] * args.calm + [args.interval / 6] * args.burst \
        + [args.interval] * args.calm

    def feed() -> None:
        for i, gap in enumerate(gaps):
            part = frame.iloc[i * args.rows_per_file:(i + 1) * args.rows_per_file]
            staged = folder.parent / f".{folder.name}-{i:03d}.parquet"
            part.to_parquet(staged, index=False, coerce_timestamps="us")
            staged.rename(folder / f"part-{i:03d}.parquet")
            time.sleep(gap)

    return feed


def rate(spark: Any, args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    frame = rate_stream(args)
    files = 2 * args.calm + args.burst
    batches, summary = [], []
    runs = [("static", "flux", None), ("hash+autoscale", "hash", tuple(args.autoscale)),
            ("fish+autoscale", "fish", tuple(args.autoscale)),
            ("albic+autoscale", "albic", tuple(args.autoscale))]
    for name, planner, autoscale in runs:
        folder = WORK / f"rate-{planner}-in"
        folder.mkdir(parents=True)
        spec = RunSpec.of(input=folder, output=WORK / f"rate-{planner}", mode="watch",
                          time_col="ts", key_col="key",
                          aggs=tuple(AggSpec.parse(a) for a in AGGS),
                          windows=tuple(WindowSpec.parse(w) for w in WINDOWS),
                          slots=args.slots_rate, key_groups=args.key_groups, planner=planner,
                          max_moves=args.max_moves, max_batches=files, autoscale=autoscale,
                          latency_target=args.latency_target if autoscale else None,
                          schema="ts timestamp, key string, value double")
        metrics, results, wall = run_job(spark, spec, feeder(frame, folder, args))
        rows = []
        for m in metrics:
            if not m["valid_rows"]:
                continue
            load = np.asarray(m["slot_load"], dtype=float)
            used = m.get("slots", m["active_slots"])
            rows.append({"run": name, "batch": m["batch_id"], "rows": m["valid_rows"],
                         "batch_s": m["batch_ms"] / 1000, "slots": used,
                         "max_mean_slot_load": round(load.max() / load[load > 0].mean(), 3)
                         if load.sum() else None, "moves": m["moves"],
                         "decision": (m.get("autoscale") or {}).get("decision"),
                         "needed": (m.get("autoscale") or {}).get("needed"),
                         "backlog_rows": (m.get("autoscale") or {}).get("backlog_rows")})
        seconds = np.array([r["batch_s"] for r in rows])
        ratio = [r["max_mean_slot_load"] for r in rows if r["max_mean_slot_load"]]
        summary.append({
            "part": "rate", "run": name, "batches": len(rows),
            "batch_s_p50": round(float(np.percentile(seconds, 50)), 2),
            "batch_s_p95": round(float(np.percentile(seconds, 95)), 2),
            "latency_target_s": args.latency_target,
            "slot_seconds": round(float(sum(r["slots"] * r["batch_s"] for r in rows)), 1),
            "slots_min": min(r["slots"] for r in rows), "slots_max": max(r["slots"] for r in rows),
            "max_mean_slot_load_mean": round(float(np.mean(ratio)), 3),
            "moves": sum(r["moves"] for r in rows),
            "scale_events": len([m for m in metrics if m.get("scale_to")]),
            "wall_seconds": round(wall, 1),
            "equal_to_oracle": exact(results, frame, closed_only=True)})
        batches += rows
        print(json.dumps(summary[-1]), flush=True)
    return batches, summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--part", choices=("fig5", "rate", "all"), default="all")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--key-groups", type=positive, default=64)
    p.add_argument("--max-moves", type=positive, default=4)
    p.add_argument("--slots", type=positive, default=8, help="fig5: slots before scale-in")
    p.add_argument("--remove", type=positive, default=3, help="fig5: slots marked (B)")
    p.add_argument("--overloaded", type=positive, nargs="+", default=[1, 5])
    p.add_argument("--keys", type=positive, default=1024, help="fig5: distinct keys")
    p.add_argument("--fig5-rows", type=positive, default=60_000)
    p.add_argument("--rows-per-batch", type=positive, default=2_000, help="fig5")
    p.add_argument("--slots-rate", type=positive, default=4, help="rate: slots at the start")
    p.add_argument("--autoscale", type=positive, nargs=2, default=[1, 8])
    p.add_argument("--latency-target", type=float, default=3.0)
    p.add_argument("--rows-per-file", type=positive, default=20_000)
    p.add_argument("--calm", type=positive, default=8, help="rate: files before and after")
    p.add_argument("--burst", type=positive, default=24, help="rate: files at six times")
    p.add_argument("--interval", type=float, default=4.0, help="rate: seconds between files")
    p.add_argument("--z", type=float, default=1.2)
    p.add_argument("--zipf-keys", type=positive, default=20_000)
    p.add_argument("--results", type=Path, default=HERE / "results")
    args = p.parse_args(argv)

    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    spark = get_spark()
    steps: list[dict] = []
    batches: list[dict] = []
    summary: list[dict] = []
    if args.part in ("fig5", "all"):
        steps, rows = fig5(spark, args)
        summary += rows
    if args.part in ("rate", "all"):
        batches, rows = rate(spark, args)
        summary += rows
    meta = run_meta("elastic_skew/run.py", argv, args, pyspark=pyspark.__version__,
                    cpus=spark.sparkContext.defaultParallelism)
    spark.stop()
    args.results.mkdir(parents=True, exist_ok=True)
    if steps:
        write_csv(steps, args.results / "steps.csv")
    if batches:
        write_csv(batches, args.results / "batches.csv")
    write_csv(summary, args.results / "summary.csv")
    write_json(args.results / "elastic_skew.json", meta, summary=summary)
    report.plot(steps, batches, args.results / "elastic_skew.png")
    shutil.rmtree(WORK, ignore_errors=True)
    return 0 if all(s["equal_to_oracle"] for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
