"""Enorm §5.1 live: split, combined, and chosen per period by the cost model, on one running job.

Madsen, Zhou, Su, *Enorm* (DEBS 2016), §5.1.1–5.1.2: after every period (the longest window)
the controller measures the model's terms on the running job and runs the component split or
combined, combined only while its migration pause stays within the user's latency threshold.
Here three elastream jobs per window set read the same replayed chunks on one local Spark
session:

* ``split``: every batch reduces records to panes and assembles windows from them;
* ``combine``: every batch adds each record to each window it falls in (window partials);
* ``auto``: starts split; :class:`elastream.control.execution.CostModel` decides after every
  period from the measured ``E``, ``K_1``, ``L``, ``MK_p``, ``T_p`` (``--latency-threshold``).

The input has two phases (seeded numpy, uniform event times over ``--span-minutes``): the first
half of the rows over ``--few-keys`` keys, the second over ``--many-keys``. With few keys a pane
partial stands for many records, so split's consolidation is cheap; with many keys nearly every
record makes its own partial, which the model prices at ``K_1`` each — where the paper's model
prefers combine. Two window sets run (``--window-sets``): Fig. 9's tumbling {5, 10} min
(``W`` = 2) and sliding {10 min, 20 min} every minute (``W`` = 30), where combined execution
sends the consolidate stage a partial per record and window. Aggregates ``sum:delay`` and
``count``, planner ``--planner`` (flux moves key groups, so ``MK_p`` > 0). Every run's results
are compared with the pandas oracle of ``tests/oracle.py``; a mismatch fails the program.

Writes ``results/live_switch.csv`` (one row per window set, run and batch: its execution,
duration, stage costs, the decision taken after it), ``results/live_switch.json`` (settings,
per-phase medians) and ``results/live_switch.png``. A split job over the same input runs first,
unmeasured: the JVM's first job is slower; and since later jobs of a session still run
somewhat faster, each set's three runs repeat in reverse order (``--repeats``). Scratch goes
to ``work/`` (git-ignored), emptied at the start.

    nice -n 5 .venv/bin/python benchmarks/enorm/live_switch.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pyspark

from elastream.control.controller import Controller
from elastream.control.planners import job_planner
from elastream.core.aggregates import AggSpec
from elastream.core.spec import RunSpec
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.file_run import FileRun, Paths
from elastream.runtimes.spark.session import get_spark
from elastream.workloads.replay import prepare_replay

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(ROOT)]  # benchmarks/common.py; tests/ (the oracles)
from tests.oracle import compare_results, window_oracle  # noqa: E402

from common import (  # noqa: E402
    oracle_exit,
    positive,
    run_meta,
    spark_job_outputs,
    write_csv,
    write_json,
)

EXECUTIONS = ("split", "combine", "auto")
AGGS = tuple(AggSpec.parse(a) for a in ("sum:delay", "count"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=positive, default=200_000, help="records (200000)")
    p.add_argument("--quick", action="store_true", help="60000 records (unless given)")
    p.add_argument("--rows-per-batch", type=positive, default=10_000,
                   help="records per replay chunk = micro-batch (10000)")
    p.add_argument("--span-minutes", type=positive, default=200,
                   help="event time the records spread over (200: ~ one period a batch)")
    p.add_argument("--few-keys", type=positive, default=64, help="keys of phase 1 (64)")
    p.add_argument("--many-keys", type=positive, default=20_000, help="keys of phase 2 (20000)")
    p.add_argument("--window-sets", nargs="+", default=["5m,10m", "10m/1m,20m/1m"],
                   help="window sets to run, each comma-separated (5m,10m 10m/1m,20m/1m)")
    p.add_argument("--planner", default="flux", help="balancing planner (flux)")
    p.add_argument("--latency-threshold", type=float, default=1.0,
                   help="auto: seconds of migration pause per period combine may cost (1.0)")
    p.add_argument("--repeats", type=int, choices=(1, 2), default=2,
                   help="2: each window set's runs again in reverse order (later runs of a "
                        "session run faster), medians over both (2)")
    p.add_argument("--slots", type=positive, default=4, help="slots (4)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    args = p.parse_args(argv)
    if args.quick and "--rows" not in (argv if argv is not None else sys.argv[1:]):
        args.rows = 60_000
    return args


def two_phases(args: argparse.Namespace) -> pd.DataFrame:
    """The records: event times uniform and sorted; few keys first, many keys after."""
    rng = np.random.default_rng(7)
    start = pd.Timestamp("2001-01-01", tz="UTC")
    seconds = np.sort(rng.integers(0, args.span_minutes * 60, args.rows))
    half = args.rows // 2
    keys = np.concatenate([rng.integers(0, args.few_keys, half),
                           rng.integers(0, args.many_keys, args.rows - half)])
    return pd.DataFrame({"date": start + pd.to_timedelta(seconds, unit="s"),
                         "origin": np.char.add("k", keys.astype(str)),
                         "delay": rng.integers(-10, 120, args.rows).astype(float)})


def job(source: Path, output: Path, execution: str, windows: str,
        args: argparse.Namespace) -> RunSpec:
    return RunSpec.of(input=source, output=output, time_col="date", key_col="origin", aggs=AGGS,
                      windows=tuple(WindowSpec.parse(w) for w in windows.split(",")),
                      slots=args.slots, planner=args.planner,
                      rows_per_batch=args.rows_per_batch, execution=execution,
                      latency_threshold=args.latency_threshold if execution == "auto" else None)


def run(spark: Any, source: Path, execution: str, windows: str, args: argparse.Namespace,
        folder: Path) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    spec = job(source, folder, execution, windows, args)
    shutil.copytree(source.parent / "staged", Paths(folder).staged, copy_function=os.link)
    FileRun(spark, spec, Controller(*job_planner(spec))).run()
    return spark_job_outputs(folder)


def batch_rows(windows: str, execution: str, metrics: list[dict[str, Any]], phase_at: int
               ) -> list[dict[str, Any]]:
    """One row per observation with records: its batches' execution, time, the decision."""
    rows = []
    seen = 0
    for m in metrics:
        if not m.get("valid_rows"):
            continue
        decision = m.get("execution_decision") or {}
        costs = m.get("stage_costs") or {}
        rows.append({
            "windows": windows, "run": execution, "batch_id": m["batch_id"],
            "batches": m.get("batches", 1), "phase": 1 if seen < phase_at else 2,
            "execution": m.get("execution"), "batch_ms": m.get("batch_ms"),
            "rows": m["valid_rows"], "moves": m.get("moves", 0),
            **{name: costs.get(name) for name in (
                "compute_seconds", "consolidate_seconds", "partials", "pane_partials",
                "window_partials")},
            "decided": decision.get("choice"), "split_cpu": decision.get("split_cpu"),
            "combine_cpu": decision.get("combine_cpu"),
            "combine_consolidation": (decision.get("terms") or {}).get("combine_consolidation"),
            "combine_latency": decision.get("combine_latency"),
            "reason": decision.get("reason")})
        seen += m["valid_rows"]
    return rows


def plot(rows: list[dict[str, Any]], window_sets: list[str], path: Path) -> None:
    fig, axes = plt.subplots(len(window_sets), 1, figsize=(8, 3.2 * len(window_sets)),
                             squeeze=False)
    colors = {"split": "tab:blue", "combine": "tab:orange", "auto": "tab:green"}
    for ax, windows in zip(axes[:, 0], window_sets, strict=True):
        for execution, repeat in itertools.product(EXECUTIONS, (1, 2)):
            mine = [r for r in rows if r["windows"] == windows and r["run"] == execution
                    and r["repeat"] == repeat]
            ax.plot([r["batch_id"] for r in mine], [r["batch_ms"] / 1000 for r in mine],
                    marker="o", ms=3, color=colors[execution], ls="-" if repeat == 1 else "--",
                    label=f"{execution} #{repeat}" if mine else None)
            if execution == "auto":
                combined = [r for r in mine if r["execution"] == "combine"]
                ax.scatter([r["batch_id"] for r in combined],
                           [r["batch_ms"] / 1000 for r in combined], s=60,
                           facecolors="none", edgecolors="black",
                           label="auto ran combined" if repeat == 1 else None)
        phase2 = min((r["batch_id"] for r in rows
                      if r["windows"] == windows and r["phase"] == 2), default=None)
        if phase2 is not None:
            ax.axvline(phase2 - 0.5, color="grey", ls=":", label="few keys → many keys")
        ax.set_ylabel("batch duration (s)")
        ax.set_title(f"windows {windows}", fontsize=10)
        ax.legend(fontsize=7)
    axes[-1, 0].set_xlabel("micro-batch")
    fig.suptitle("Split, combined, and chosen live by Enorm's cost model")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def phase_summary(rows: list[dict[str, Any]], windows: str) -> list[dict[str, Any]]:
    """Per run and phase: batch times (single-batch observations), batches run combined."""
    out = []
    for execution in EXECUTIONS:
        for phase in (1, 2):
            mine = [r for r in rows if r["windows"] == windows and r["run"] == execution
                    and r["phase"] == phase and r["batches"] == 1]
            times = [r["batch_ms"] for r in mine]
            out.append({"windows": windows, "run": execution, "phase": phase,
                        "observations": len(mine),
                        "median_batch_ms": statistics.median(times) if times else None,
                        "mean_batch_ms": statistics.fmean(times) if times else None,
                        "ran_combined": sum(r["execution"] == "combine" for r in mine),
                        "moves": sum(r["moves"] for r in mine)})
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = HERE / "work" / "live_switch"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    frame = two_phases(args)
    source = work / "input.parquet"
    frame.to_parquet(source, index=False)
    longest = max(job(source, work, "split", w, args).longest_ms for w in args.window_sets)
    spec = job(source, work, "split", args.window_sets[0], args)
    prepare_replay(source, "parquet", "date", args.rows_per_batch, work / "staged",
                   longest + spec.pane_ms + spec.source.lateness_ms)
    spark = get_spark(partitions=spec.partitions)
    run(spark, source, "split", args.window_sets[0], args, work / "warm-up")  # JVM's first job
    rows: list[dict[str, Any]] = []
    phases: list[dict[str, Any]] = []
    mismatches: dict[str, str] = {}
    for windows in args.window_sets:
        split = job(source, work, "split", windows, args)
        expected = window_oracle(frame, time_col="date", key_col="origin", aggs=AGGS,
                                 windows=split.windowing.windows)
        for repeat, execution in enumerate([*EXECUTIONS, *EXECUTIONS[::-1]]
                                           [:len(EXECUTIONS) * args.repeats]):
            name = f"{execution} {windows} #{repeat // len(EXECUTIONS) + 1}"
            metrics, results = run(spark, source, execution, windows, args,
                                   work / f"{execution}-{len(rows)}")
            try:
                compare_results(results, expected)
            except AssertionError as error:
                mismatches[name] = str(error)
                print(f"{name} differs from the oracle:\n{error}", file=sys.stderr)
            mine = batch_rows(windows, execution, metrics, args.rows // 2)
            rows += [dict(r, repeat=repeat // len(EXECUTIONS) + 1) for r in mine]
            print(f"{name}: {sum(r['rows'] for r in mine):,} rows, {len(mine)} observations, "
                  f"ran {sorted({r['execution'] for r in mine})}", file=sys.stderr, flush=True)
        phases += phase_summary(rows, windows)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "live_switch.csv")
    write_json(args.out / "live_switch.json",
               run_meta("enorm/live_switch.py", argv, args, pyspark=pyspark.__version__),
               phases=phases, mismatches=sorted(mismatches))
    plot(rows, args.window_sets, args.out / "live_switch.png")
    for row in phases:
        print(row)
    return oracle_exit(mismatches)


if __name__ == "__main__":
    sys.exit(main())
