"""Enorm's Fast Job with 0–3 chained operators fused (Madsen et al., §7 and §7.7: Fig. 16).

The Fast Job is four consecutive windowed aggregations, keyed by ``origin`` here, each over the
windows of the one before: 1-minute sums of ``delay`` (the source operator), then 5-, 10- and
20-minute sums of those sums (``sum:sum_delay``, ``sum:sum_sum_delay``, ``sum:sum_sum_sum_delay``).
It runs over the first ``--rows`` real flights (time order, minute timestamps) with ``fused``
= 0, 1, 2 and 3 chained operators inside the source's component — the paper's 0, 2, 3 and 4
fused operators (its count includes the source). Every unfused operator is one of Spark's
chained window aggregations: one more shuffle (``Exchange``) and state store.

Every variant runs through ``FileRun`` (planner ``hash``, the same ``--slots`` and
``--rows-per-batch``) on hard links to one set of replay chunks, after an untimed warm-up of
every variant on ``--warmup-rows`` flights; the variants' order alternates between repeats.
*Completion time*: from the start of the results query's first micro-batch to the end of its
last (Spark's progress reports), so query start-up and the oracle are left out. Every variant's
windows are compared with ``tests/chain_oracle.chain_oracle``; a mismatch is printed, recorded
in the JSON, and the program exits 1.

``--job dag`` runs the same experiment on a DAG: the Fast Job plus a branch off the 5-minute
operator, 15-minute sums of its sums (``sum:sum_sum_delay``, composable, so fusable): operators
sum5m, sum10m, sum15m, sum20m (a topological order), edges source → sum5m → sum10m → sum20m and
sum5m → sum15m, sinks sum20m and sum15m (results with an ``operator`` column), ``fused`` = 0–4.
Every unfused operator then runs in the graph runtime's ``transformWithStateInPandas`` stage of
its depth (one ``Exchange`` per depth). Besides the completion time it reports latency: each
micro-batch's duration (median and p95 over a run's batches; a window is visible at the end of
the batch that closes it), and the plan's ``TransformWithState`` operators.

Writes results/fast_job.csv (one row per variant), results/fast_job.json (the same, every
repeat, the command and settings) and results/fig16.png — with ``--job dag``
results/fast_job_dag.csv, results/fast_job_dag.json and results/fig16_dag.png; scratch goes to
work/ (git-ignored), emptied at the start of each run:

    nice -n 5 .venv/bin/python benchmarks/enorm/fast_job.py [--job chain|dag]
        [--rows N | --quick] [--rows-per-batch N] [--slots N] [--repeat N] [--warmup-rows N]
        [--out DIR]

``--replot`` redraws the PNG from ``DIR/fast_job.csv`` (``fast_job_dag.csv``) without running
anything.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import pyspark

from elastream.control.controller import Controller
from elastream.control.planners import planner
from elastream.core.aggregates import AggSpec
from elastream.core.chain import ChainOperator, levels, sinks
from elastream.core.options import spec_values
from elastream.core.spec import RunSpec
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.file_run import FileRun, Paths
from elastream.runtimes.spark.session import get_spark
from elastream.workloads.replay import prepare_replay

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(ROOT)]  # benchmarks/common.py; tests/ (the oracles)
from tests.chain_oracle import chain_oracle  # noqa: E402
from tests.oracle import compare_results  # noqa: E402

from common import (  # noqa: E402
    first_flights,
    oracle_exit,
    positive,
    read_csv_rows,
    run_meta,
    spark_job_outputs,
    write_csv,
    write_json,
)

TIME_COL, KEY_COL = "date", "origin"
SOURCE_WINDOW = "1m"
CHAIN = ((5, "sum_delay"), (10, "sum_sum_delay"), (20, "sum_sum_sum_delay"))
"""Each chained operator's window (minutes) and the upstream output it sums."""
FUSED = (0, 1, 2, 3)
WORK = HERE / "work"
COLUMNS = ("fused", "paper_fused", "components", "exchanges", "rows", "micro_batches",
           "completion_seconds", "completion_seconds_min", "completion_seconds_max",
           "busy_seconds", "rows_per_second", "speedup_vs_unfused", "output_rows",
           "equal_to_oracle")
TYPES = {"fused": int, "paper_fused": int, "components": int, "exchanges": int, "rows": int,
         "micro_batches": int, **{c: float for c in COLUMNS[6:12]}, "output_rows": int}
DAG: dict[str, Any] = {
    "operators": [
        {"id": "sum5m", "keys": [KEY_COL], "aggs": ["sum:sum_delay"], "window": "5m"},
        {"id": "sum10m", "keys": [KEY_COL], "aggs": ["sum:sum_sum_delay"], "window": "10m"},
        {"id": "sum15m", "keys": [KEY_COL], "aggs": ["sum:sum_sum_delay"], "window": "15m"},
        {"id": "sum20m", "keys": [KEY_COL], "aggs": ["sum:sum_sum_sum_delay"], "window": "20m"},
    ],
    "edges": [{"from": "source", "to": "sum5m"}, {"from": "sum5m", "to": "sum10m"},
              {"from": "sum10m", "to": "sum20m"}, {"from": "sum5m", "to": "sum15m"}],
}
"""The DAG job's operators after the source: the Fast Job and a 15-minute branch off sum5m."""
DAG_COLUMNS = ("fused", "fused_operators", "components", "exchanges", "tws_stages",
               "unfused_depths", "rows", "micro_batches", "completion_seconds",
               "completion_seconds_min", "completion_seconds_max", "busy_seconds",
               "rows_per_second", "speedup_vs_unfused", "batch_p50_seconds",
               "batch_p95_seconds", "batch_max_seconds", "output_rows", "equal_to_oracle")
DAG_TYPES = {"fused": int, "components": int, "exchanges": int, "tws_stages": int,
             "unfused_depths": int, "rows": int, "micro_batches": int,
             **{c: float for c in DAG_COLUMNS[8:17]}, "output_rows": int}


@dataclass(frozen=True)
class Job:
    """One of the two jobs: its operators after the source, variants and result files."""

    name: str
    operators: int
    variants: tuple[int, ...]
    stem: str
    figure: str
    columns: tuple[str, ...]
    types: dict[str, Any]


JOBS = {"chain": Job("chain", len(CHAIN), FUSED, "fast_job", "fig16.png", COLUMNS, TYPES),
        "dag": Job("dag", len(DAG["operators"]), tuple(range(len(DAG["operators"]) + 1)),
                   "fast_job_dag", "fig16_dag.png", DAG_COLUMNS, DAG_TYPES)}
PAPER = {
    "fig16": "completion time with 0, 2, 3 and 4 of the Fast Job's 4 operators fused; "
             "automatic fusion 'can improve the performance by more than a factor of three'",
    "simple_job": "18 M tuples: one component 456 s, two components 512 s (> 10 %)",
    "values": "Fig. 16's bars are an image our text copy of the paper does not hold",
    "setting": "Storm on 6 EC2 m1.medium workers, synthetic uniform keys, tuple at a time",
}
PAPER_DAG = {
    "job": "the paper runs Fig. 16 on the (linear) Fast Job only; no DAG job",
    "latency": "§7.7 reports completion time (throughput) only; no latency for the Fast Job",
}


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--job", choices=tuple(JOBS), default="chain",
                   help="chain: the Fast Job, fused 0-3; dag: with a 15-min branch off the "
                        "5-min operator, fused 0-4 (chain)")
    p.add_argument("--rows", type=positive, default=500_000,
                   help="first N flights in time order (500000)")
    p.add_argument("--quick", action="store_true",
                   help="100000 flights and a 20000-flight warm-up (unless given)")
    p.add_argument("--rows-per-batch", type=positive, default=25_000,
                   help="flights per replay chunk = micro-batch, every variant (25000)")
    p.add_argument("--slots", type=positive, default=4, help="slots of every variant (4)")
    p.add_argument("--repeat", type=positive, default=2,
                   help="timed runs per variant, order alternating; the median is kept (2)")
    p.add_argument("--warmup-rows", type=int, default=None,
                   help="untimed run of every variant first (50000; --quick 20000; 0: none)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    p.add_argument("--replot", action="store_true",
                   help="only redraw fig16.png (fig16_dag.png) from the folder's "
                        "fast_job.csv (fast_job_dag.csv)")
    args = p.parse_args(argv)
    if args.quick and "--rows" not in (argv if argv is not None else sys.argv[1:]):
        args.rows = 100_000
    if args.warmup_rows is None:
        args.warmup_rows = 20_000 if args.quick else 50_000
    return args


def fast_job(input_path: Path, output: Path, *, fused: int | None, slots: int,
             rows_per_batch: int, job: str = "chain") -> RunSpec:
    """The Fast Job (``dag``: with its branch) with the first ``fused`` operators fused.

    ``fused`` ``None``: Algorithm 1's component, as far as it can run.
    """
    chain: tuple[ChainOperator, ...]
    if job == "dag":
        chain = spec_values({"chain": DAG})["chain"]
    else:
        chain = tuple(ChainOperator(f"sum{minutes}m", (KEY_COL,), (AggSpec("sum", column),),
                                    WindowSpec.parse(f"{minutes}m"))
                      for minutes, column in CHAIN)
    return RunSpec.of(input=input_path, output=output, time_col=TIME_COL, key_col=KEY_COL,
                      aggs=(AggSpec("sum", "delay"),), windows=(WindowSpec.parse(SOURCE_WINDOW),),
                      chain=chain, fused=fused, slots=slots, planner="hash",
                      rows_per_batch=rows_per_batch)


def prepare(rows: int, rows_per_batch: int, folder: Path, job: str = "chain"
            ) -> tuple[pd.DataFrame, Path]:
    """The first ``rows`` flights as one Parquet file, cut once into replay chunks beside it."""
    frame = first_flights(rows)
    folder.mkdir(parents=True)
    source = folder / "input.parquet"
    frame.to_parquet(source, index=False)
    spec = fast_job(source, folder, fused=0, slots=1, rows_per_batch=rows_per_batch, job=job)
    prepare_replay(source, "parquet", TIME_COL, rows_per_batch, folder / "staged",
                   spec.longest_ms + spec.pane_ms + spec.source.lateness_ms)
    return frame, source


def _batch_span(progress: list[dict[str, Any]]) -> tuple[float, float]:
    """(first batch start → last batch end, summed batch durations) in seconds."""
    def start(p: dict[str, Any]) -> float:
        return datetime.fromisoformat(str(p["timestamp"]).replace("Z", "+00:00")).timestamp()

    def took(p: dict[str, Any]) -> float:
        return int(p["durationMs"].get("triggerExecution", 0)) / 1000

    return (start(progress[-1]) + took(progress[-1]) - start(progress[0]),
            sum(map(took, progress)))


def _batch_seconds(progress: list[Any]) -> list[float]:
    """Each micro-batch's duration (trigger start to end) in seconds."""
    return [int(p["durationMs"].get("triggerExecution", 0)) / 1000 for p in progress]


CUSTOM_METRICS = ("numRegisteredTimers", "numDeletedTimers", "numExpiredTimers",
                  "timerProcessingTimeMs", "rocksdbLoadLatencyMs", "rocksdbCommitFileSyncLatencyMs")


def _state_operators(progress: list[Any]) -> list[dict[str, Any]]:
    """Each stateful operator (plan order), its time and rows summed over the micro-batches.

    Spark's per-operator metrics: ``allUpdatesTimeMs`` (the operator's update work, its Python
    calls for ``transformWithStateInPandas``), ``commitTimeMs``, ``numRowsUpdated`` and the
    ``customMetrics`` of :data:`CUSTOM_METRICS`; ``numRowsTotal`` at the end.
    """
    out: list[dict[str, Any]] = []
    for p in progress:
        for i, op in enumerate(p.get("stateOperators", [])):
            if i == len(out):
                out.append({"operator": op.get("operatorName", str(i)), "numRowsTotal": 0})
            seen = out[i]
            seen["numRowsTotal"] = int(op.get("numRowsTotal", 0))
            for name in ("allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs",
                         "numRowsUpdated", "numRowsRemoved"):
                seen[name] = seen.get(name, 0) + int(op.get(name, 0) or 0)
            custom = op.get("customMetrics") or {}
            for name in CUSTOM_METRICS:
                seen[name] = seen.get(name, 0) + int(custom.get(name, 0) or 0)
    return out


def fused_operators(spec: RunSpec, fused: int | None) -> list[str]:
    """The ids of the operators in the source's component; checks the spec fused ``fused``."""
    chaining = spec.chaining
    if fused is not None and chaining.fused != fused:
        raise RuntimeError(f"asked for fused={fused}, the spec fused {chaining.fused}")
    return [op.id for op in chaining.chain[:chaining.fused or 0]]


def run_variant(spark: Any, source: Path, fused: int, args: argparse.Namespace,
                folder: Path) -> dict[str, Any]:
    """One FileRun of the Fast Job; its completion time, plan and results."""
    spec = fast_job(source, folder, fused=fused, slots=args.slots,
                    rows_per_batch=args.rows_per_batch, job=args.job)
    inside = fused_operators(spec, fused)
    shutil.copytree(source.parent / "staged", Paths(folder).staged, copy_function=os.link)
    job = FileRun(spark, spec, Controller(*planner("hash")))
    summary = job.run()
    progress = list(job.queries["results"].recentProgress)
    ids = [int(p["batchId"]) for p in progress]
    if not ids or ids != list(range(ids[0], ids[0] + len(ids))) or ids[0] != 0:
        raise RuntimeError(f"fused={fused}: progress reports of batches {ids[:3]}…{ids[-3:]} "
                           "do not cover every micro-batch (numRecentProgressUpdates?)")
    completion, busy = _batch_span(progress)
    assert job.job is not None
    plan = spark._jvm.PythonSQLUtils.explainString(job.job.results._jdf.queryExecution(),
                                                   "simple")
    _, results = spark_job_outputs(folder)
    run = {"completion_seconds": completion, "busy_seconds": busy,
           "micro_batches": len(progress), "exchanges": plan.count("Exchange "),
           "state_operators": len(progress[-1].get("stateOperators", [])),
           "rows": int(summary["input_rows"]), "results": results}
    if args.job == "dag":
        seconds = _batch_seconds(progress)
        run.update(fused_operators=inside, tws_stages=plan.count("TransformWithState"),
                   unfused_depths=max(levels(spec.chaining.chain, fused).values(), default=0),
                   batch_seconds=[round(t, 3) for t in seconds],
                   state_operators_summed=_state_operators(progress),
                   batch_p50_seconds=float(np.percentile(seconds, 50)),
                   batch_p95_seconds=float(np.percentile(seconds, 95)),
                   batch_max_seconds=max(seconds))
    return run


def _mismatch(results: pd.DataFrame, expected: pd.DataFrame) -> str | None:
    if results.empty:
        return f"no output rows (expected {len(expected)})"
    try:
        compare_results(results, expected)
    except AssertionError as error:
        return str(error)
    return None


def measure(spark: Any, frame: pd.DataFrame, source: Path, args: argparse.Namespace,
            folder: Path, mismatches: dict[str, str]) -> list[dict[str, Any]]:
    """Every variant ``--repeat`` times, order alternating; one row per variant (median)."""
    job = JOBS[args.job]
    expected = chain_oracle(frame, fast_job(source, folder, fused=0, slots=1,
                                            rows_per_batch=args.rows_per_batch, job=args.job))
    runs: dict[int, list[dict[str, Any]]] = {f: [] for f in job.variants}
    for attempt in range(args.repeat):
        for fused in job.variants if attempt % 2 == 0 else job.variants[::-1]:
            run = run_variant(spark, source, fused, args, folder / f"fused{fused}-{attempt}")
            problem = _mismatch(run.pop("results"), expected)
            if problem is not None:
                mismatches[f"fused={fused} run {attempt}"] = problem
                print(f"fused={fused} run {attempt} differs from the oracle:\n{problem}",
                      file=sys.stderr)
            run["equal_to_oracle"] = problem is None
            runs[fused].append(run)
            latency = (f", batch p50 {run['batch_p50_seconds']:.2f} s p95 "
                       f"{run['batch_p95_seconds']:.2f} s" if "batch_p50_seconds" in run else "")
            print(f"fused={fused} run {attempt}: {run['rows']:,} flights, "
                  f"{run['micro_batches']} batches, {run['exchanges']} Exchange, "
                  f"{run['completion_seconds']:.1f} s{latency}", file=sys.stderr, flush=True)
    rows = []
    for fused in job.variants:
        done = runs[fused]
        times = [r["completion_seconds"] for r in done]
        completion = statistics.median(times)
        rows.append({
            "fused": fused, "paper_fused": fused + 1 if fused else 0,
            "components": 1 + job.operators - fused, "exchanges": done[0]["exchanges"],
            "state_operators": done[0]["state_operators"], "rows": done[0]["rows"],
            "micro_batches": done[0]["micro_batches"], "completion_seconds": completion,
            "completion_seconds_min": min(times), "completion_seconds_max": max(times),
            "all_completion_seconds": [round(t, 3) for t in times],
            "busy_seconds": statistics.median(r["busy_seconds"] for r in done),
            "rows_per_second": done[0]["rows"] / completion,
            "output_rows": len(expected),
            "equal_to_oracle": all(r["equal_to_oracle"] for r in done)})
        if args.job == "dag":
            rows[-1].update(
                fused_operators=" ".join(done[0]["fused_operators"]) or "-",
                tws_stages=done[0]["tws_stages"], unfused_depths=done[0]["unfused_depths"],
                **{k: statistics.median(r[k] for r in done) for k in
                   ("batch_p50_seconds", "batch_p95_seconds", "batch_max_seconds")},
                all_batch_seconds=[r["batch_seconds"] for r in done],
                all_state_operators_summed=[r["state_operators_summed"] for r in done])
    unfused = rows[0]["completion_seconds"]
    for row in rows:
        row["speedup_vs_unfused"] = unfused / row["completion_seconds"]
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Fig. 16: completion time per number of fused operators (paper's count), min–max bars."""
    fig, ax = plt.subplots(figsize=(5.4, 3.6))
    labels = [f"{r['paper_fused']}\n({r['exchanges']} Exchange)" for r in rows]
    heights = [r["completion_seconds"] for r in rows]
    errors = [[h - r["completion_seconds_min"] for h, r in zip(heights, rows, strict=True)],
              [r["completion_seconds_max"] - h for h, r in zip(heights, rows, strict=True)]]
    bars = ax.bar(labels, heights, yerr=errors, capsize=4, color="tab:blue")
    for bar, row in zip(bars, rows, strict=True):
        ax.annotate(f"{row['speedup_vs_unfused']:.2f}×", (bar.get_x() + bar.get_width() / 2,
                    bar.get_height()), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 3), textcoords="offset points")
    ax.set_xlabel("fused operators (of 4, source included)")
    ax.set_ylabel("completion time (s)")
    ax.set_title(f"Fig. 16 on Spark: Fast Job, {rows[0]['rows']:,} flights\n"
                 f"(median of runs, bars min–max; label: speed-up vs none fused)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_dag(rows: list[dict[str, Any]], path: Path) -> None:
    """Fig. 16 on the DAG job: completion time, and micro-batch duration p50 / p95."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.8))
    labels = [f"{r['fused']}\n({r['exchanges']} Exch.)" for r in rows]
    heights = [r["completion_seconds"] for r in rows]
    errors = [[h - r["completion_seconds_min"] for h, r in zip(heights, rows, strict=True)],
              [r["completion_seconds_max"] - h for h, r in zip(heights, rows, strict=True)]]
    bars = left.bar(labels, heights, yerr=errors, capsize=4, color="tab:blue")
    for bar, row in zip(bars, rows, strict=True):
        left.annotate(f"{row['speedup_vs_unfused']:.2f}×", (bar.get_x() + bar.get_width() / 2,
                      row["completion_seconds_max"]), ha="center", va="bottom", fontsize=8,
                      xytext=(0, 3), textcoords="offset points")
    left.set_xlabel("fused operators after the source (of 4)")
    left.set_ylabel("completion time (s)")
    left.set_title("completion (median, bars min–max;\nlabel: speed-up vs none fused)",
                   fontsize=9)
    x = np.arange(len(rows))
    right.bar(x - 0.2, [r["batch_p50_seconds"] for r in rows], 0.4, label="p50",
              color="tab:green")
    right.bar(x + 0.2, [r["batch_p95_seconds"] for r in rows], 0.4, label="p95",
              color="tab:orange")
    right.set_xticks(x, [str(r["fused"]) for r in rows])
    right.set_xlabel("fused operators after the source (of 4)")
    right.set_ylabel("micro-batch duration (s)")
    right.set_title("latency: a window is visible at the end of\nthe batch that closes it "
                    "(median of runs)", fontsize=9)
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Fig. 16 on Spark, DAG job (Fast Job + 15-min branch off 5-min), "
                 f"{rows[0]['rows']:,} flights", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def table_dag(rows: list[dict[str, Any]]) -> str:
    """The DAG job's results as the README's Markdown table."""
    lines = ["| fused | fused operators | components | Exchange | TWS stages | "
             "completion s (min–max) | flights/s | batch p50 s | batch p95 s | speed-up |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['fused']} | {r['fused_operators']} | {r['components']} | "
                     f"{r['exchanges']} | {r['tws_stages']} | {r['completion_seconds']:.1f} "
                     f"({r['completion_seconds_min']:.1f}–{r['completion_seconds_max']:.1f}) | "
                     f"{r['rows_per_second']:,.0f} | {r['batch_p50_seconds']:.2f} | "
                     f"{r['batch_p95_seconds']:.2f} | {r['speedup_vs_unfused']:.2f}× |")
    return "\n".join(lines)


def table(rows: list[dict[str, Any]]) -> str:
    """The results as the README's Markdown table."""
    lines = ["| fused (ours) | fused (paper) | components | Exchange | micro-batches | "
             "completion s (min–max) | flights/s | speed-up |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['fused']} | {r['paper_fused']} | {r['components']} | "
                     f"{r['exchanges']} | {r['micro_batches']} | {r['completion_seconds']:.1f} "
                     f"({r['completion_seconds_min']:.1f}–{r['completion_seconds_max']:.1f}) | "
                     f"{r['rows_per_second']:,.0f} | {r['speedup_vs_unfused']:.2f}× |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    job = JOBS[args.job]
    draw, summary = (plot_dag, table_dag) if args.job == "dag" else (plot, table)
    if args.replot:
        draw(read_csv_rows(args.out / f"{job.stem}.csv", job.types), args.out / job.figure)
        return 0
    began, load_before = time.perf_counter(), os.getloadavg()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    frame, source = prepare(args.rows, args.rows_per_batch, WORK / "input", args.job)
    spark = get_spark()
    # Every micro-batch's progress report must stay readable (the completion time spans them).
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    if args.warmup_rows > 0:
        _, warm = prepare(args.warmup_rows, args.rows_per_batch, WORK / "warmup-input",
                          args.job)
        for fused in job.variants:
            started = time.perf_counter()
            run_variant(spark, warm, fused, args, WORK / f"warmup-fused{fused}")
            print(f"warm-up fused={fused}: {time.perf_counter() - started:.1f} s",
                  file=sys.stderr, flush=True)
    mismatches: dict[str, str] = {}
    rows = measure(spark, frame, source, args, WORK / "runs", mismatches)
    elapsed = time.perf_counter() - began
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / f"{job.stem}.csv", job.columns, digits=3)
    meta = run_meta("enorm/fast_job.py", argv, args, cpus=os.cpu_count(),
                    spark=pyspark.__version__, master=spark.sparkContext.master,
                    load_average_before=[round(v, 2) for v in load_before],
                    load_average_after=[round(v, 2) for v in os.getloadavg()])
    results = [{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}
               for r in rows]
    if args.job == "dag":
        spec = fast_job(source, WORK / "default", fused=None, slots=args.slots,
                        rows_per_batch=args.rows_per_batch, job="dag")
        graph = {"graph": DAG, "sinks": [op.id for op in sinks(spec.chaining.chain)],
                 "default_fused": spec.chaining.fused,
                 "default_fused_operators": fused_operators(spec, None)}
        write_json(args.out / f"{job.stem}.json", {**meta, "elapsed_seconds": round(elapsed, 1)},
                   job=graph, fig16_dag=results, oracle_mismatches=mismatches,
                   paper={**PAPER, **PAPER_DAG})
    else:
        write_json(args.out / "fast_job.json", {**meta, "elapsed_seconds": round(elapsed, 1)},
                   fig16=results, oracle_mismatches=mismatches, paper=PAPER)
    draw(rows, args.out / job.figure)
    spark.stop()
    print(summary(rows))
    print(f"{elapsed:.0f} s in all; results in {args.out}")
    return oracle_exit(mismatches)


if __name__ == "__main__":
    sys.exit(main())
