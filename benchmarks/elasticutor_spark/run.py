"""Elasticutor on a Spark standalone cluster: Spark executors that follow the input rate.

The flights arrive as files in a watched folder at a rate that doubles and then halves
(``--pace``, default 60 s at 2,000 rows/s, 60 s at 4,000, 60 s at 2,000, after a ``--warm-up``
of 30 s at 1,000 that is not reported; the first flights in time order, as many as the pace
takes), while one elastream
job (``elastream.windowed``: key ``origin``, windows 1h, 6h/1h, 24h/1h, ``sum:delay`` and
``count``) aggregates them on a standalone cluster started from the installed pyspark:
``--workers`` workers of one core each, one executor core per executor (the machine's cores
are shared by all). Each run is a driver process and application of its own, on fresh folders
and the same files at the same pace:

* ``static`` — planner ``hash`` on ``--slots`` slots, every executor the cluster grants held
  all along (Spark's own behaviour);
* ``rc`` — planner ``elasticutor`` with one elastic executor: every key group may move to any
  slot, the model sizes the slots of the whole operator (the resource-centric approach);
* ``ec`` — planner ``elasticutor`` with ``--elastic-executors`` fixed key-group ranges, each
  given the slots its load needs (Elasticutor's executor-centric approach).

``rc`` and ``ec`` hold ``⌈slots in use / 1⌉`` executors between 1 and ``--workers``
(``spark_executors``), released once a smaller demand lasted ``--release-after`` seconds; the
model keeps batches within ``--latency-target`` seconds with service rates the job measures.

Per run (``measure.py`` of live_stream defines batch duration and file latency): the
executors alive at each control step and the executor-seconds held, batch durations against
the target per phase of the pace, file latency per phase, moves, throughput, and whether the
results equal the pandas oracle (tests/oracle.py). Writes ``results/runs.csv``,
``results/phases.csv``, ``results/steps.csv``, ``results/results.json`` and
``results/executors.png``; scratch (the cluster, each run's folders) goes to ``work/``.

    nice -n 5 .venv/bin/python benchmarks/elasticutor_spark/run.py [--warm-up 30:1000]
        [--pace 60:2000,60:4000,60:2000] [--runs static rc ec] [--workers W] [--slots S]
        [--elastic-executors E] [--latency-target S] [--release-after S] [--out DIR]
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

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "live_stream"))
sys.path.insert(0, str(ROOT / "tests"))  # the pandas oracle lives beside the tests
sys.path.insert(0, str(HERE))  # this report, not live_stream's
import report  # noqa: E402
from measure import (  # noqa: E402
    batches,
    equals_oracle,
    file_latencies,
    sink_results,
    summary,
    window_delays,
)
from stream import LiveSettings, Pace, RunSettings, run_live, stream_files  # noqa: E402

from common import first_flights, positive, run_meta, write_csv, write_json  # noqa: E402
from elastream.core.aggregates import AggSpec  # noqa: E402
from elastream.core.windows import WindowSpec  # noqa: E402
from elastream.runtimes.spark import standalone  # noqa: E402
from oracle import window_oracle  # noqa: E402

WORK = HERE / "work"
AGGS = ("sum:delay", "count")
WINDOWS = ("1h", "6h/1h", "24h/1h")
RUNS = ("static", "rc", "ec")
RECENT_PROGRESS = 5000
"""Progress reports a query keeps (Spark's default, 100, is fewer than a run's batches)."""


def parse_pace(text: str) -> Pace:
    """``SECONDS:ROWS_PER_S,...`` as phases."""
    phases = []
    for part in text.split(","):
        seconds, _, rate = part.partition(":")
        phases.append((float(seconds), float(rate)))
    if not phases or any(s <= 0 or r <= 0 for s, r in phases):
        raise argparse.ArgumentTypeError(f"--pace must be SECONDS:ROWS_PER_S,..., got {text!r}")
    return tuple(phases)


def run_settings(name: str, args: argparse.Namespace) -> RunSettings:
    """What each run passes to ``elastream.windowed``."""
    if name == "static":
        return RunSettings(name, "hash", args.slots)
    executors = 1 if name == "rc" else args.elastic_executors
    return RunSettings(name, "elasticutor", args.slots,
                       planner_options=(("executors", executors),
                                        ("latency_target", args.latency_target)),
                       spark_executors=(1, args.workers), release_after=args.release_after)


def drive(args: argparse.Namespace) -> None:
    """One run, in this process: its driver on the cluster (``--one NAME``)."""
    from elastream.runtimes.spark.executors import executor_ids
    from elastream.runtimes.spark.session import get_spark

    folder = Path(args.work) / args.one
    spark = get_spark(args.master, f"elasticutor-spark-{args.one}", conf={
        "spark.cores.max": str(args.workers), "spark.executor.cores": "1",
        "spark.executor.memory": "1g",
        "spark.sql.streaming.numRecentProgressUpdates": str(RECENT_PROGRESS)},
        partitions=args.slots)
    # Start every executor's Python workers before the stream does (one task per executor).
    deadline = time.monotonic() + 120
    while len(executor_ids(spark)) < args.workers and time.monotonic() < deadline:
        time.sleep(0.5)
    spark.range(0, args.workers * 8, numPartitions=args.workers * 2).mapInArrow(
        lambda batches: batches, "id long").count()
    files = stream_files(Path(args.source), folder / "staging", args.rows_per_file,
                         punct_after_ms=25 * 3600 * 1000)
    settings = LiveSettings(rate=(args.warm_up, *args.pace),
                            max_files_per_trigger=args.max_files_per_trigger,
                            key_groups=args.key_groups, max_moves=args.max_moves,
                            windows=WINDOWS, aggs=AGGS, timeout=args.timeout)
    done = run_live(spark, files, run_settings(args.one, args), settings, folder,
                    args.expected_rows)
    (folder / "run.json").write_text(json.dumps({
        "metrics": done.metrics, "progress": done.progress, "arrivals": done.arrivals,
        "complete": done.complete, "writer_late_seconds": done.writer_late_seconds,
        "files": [{"rows": f.rows, "data_rows": f.data_rows, "max_time_ms": f.max_time_ms}
                  for f in files]}))
    spark.stop()


def phase_of(t: pd.Series, pace: Pace) -> pd.Series:
    """The phase (0, 1, …) of the pace each time (seconds from its start) falls in; −1 before."""
    bounds = pd.Series([0.0, *[s for s, _ in pace]]).cumsum().to_numpy()[:-1]
    return pd.Series(bounds.searchsorted(t.to_numpy(), side="right") - 1, index=t.index)


def measure(name: str, args: argparse.Namespace, expected: pd.DataFrame
            ) -> tuple[dict[str, Any], list[dict[str, Any]], pd.DataFrame]:
    """A finished run's summary, its figures per phase, and its control steps."""
    folder = WORK / name
    saved = json.loads((folder / "run.json").read_text())
    files, arrivals = saved["files"], saved["arrivals"]
    origin = min(arrivals) + args.warm_up[0]  # the warm-up phase is not reported
    frame = batches(saved["metrics"], saved["progress"], origin, [f["rows"] for f in files],
                    [f["data_rows"] for f in files])
    lat = file_latencies(frame, [f["rows"] for f in files], arrivals)
    delays = window_delays(folder / "results", [f["max_time_ms"] for f in files], arrivals)
    results = sink_results(folder / "results")
    exact = equals_oracle(name, results, expected)
    reported = sum(f["data_rows"] for f, at in zip(files, arrivals, strict=True)
                   if at >= origin)
    row = summary(name, frame[frame["t_start"] >= 0], lat[lat["arrival"] >= origin], delays,
                  reported, exact=exact, output_rows=len(results), metrics=saved["metrics"])
    # The reported window: the pace's phases (not the warm-up, not the stream's last files
    # after the pace ended, whose batches emit every window left).
    end = sum(seconds for seconds, _ in args.pace)
    steps = step_frame(saved["metrics"], saved["progress"], origin, args)
    steps = steps[(steps["t"] >= 0) & (steps["t"] <= end)]
    row.update(complete=saved["complete"],
               writer_late_max_s=round(saved["writer_late_seconds"], 3),
               executor_seconds=round(executor_seconds(steps, end), 1),
               executors_max=int(steps["executors"].max()),
               executors_min=int(steps["executors"].min()))
    frame["phase"] = phase_of(frame["t_start"], args.pace)
    lat["phase"] = phase_of(lat["arrival"] - origin, args.pace)
    phases = []
    for phase, (seconds, rate) in enumerate(args.pace):
        here = frame[(frame["phase"] == phase) & (frame["data_rows"] > 0)]
        files_here = lat[lat["phase"] == phase]
        held = steps[steps["phase"] == phase]
        phases.append({
            "run": name, "phase": phase, "rate": rate, "seconds": seconds,
            "batches": len(here),
            "batch_s_mean": round(float(here["batch_ms"].mean()) / 1000, 2),
            "batch_s_p95": round(float(here["batch_ms"].quantile(0.95)) / 1000, 2),
            "within_target": round(float((here["batch_ms"] <= args.latency_target * 1000)
                                         .mean()), 3),
            "file_latency_p50_s": round(float(files_here["latency_s"].median()), 2),
            "file_latency_p95_s": round(float(files_here["latency_s"].quantile(0.95)), 2),
            "executors_mean": round(float(held["executors"].mean()), 2),
            "slots_used_mean": round(float(held["slots_used"].mean()), 2),
            "moves": int(here["step_moves"].sum()),
        })
    return row, phases, steps.assign(run=name)


def step_frame(metrics: list[dict[str, Any]], progress: list[dict[str, Any]], origin: float,
               args: argparse.Namespace) -> pd.DataFrame:
    """One row per control step that saw batches: time, executors, slots, batch duration."""
    ends = {p["batchId"]: pd.Timestamp(p["timestamp"]).timestamp()
            + p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress}
    rows = [{"t": ends[m["batch_id"]] - origin, "batch_s": m["batch_ms"] / 1000 / m["batches"],
             "executors": m.get("executors", args.workers),
             "slots_used": m.get("slots_used", m["active_slots"]),
             "moves": m["moves"], "rows": m["valid_rows"]}
            for m in metrics if m["batches"] and m["batch_id"] in ends]
    frame = pd.DataFrame(rows)
    frame["phase"] = phase_of(frame["t"], args.pace)
    return frame


def executor_seconds(steps: pd.DataFrame, end: float) -> float:
    """Executors alive, integrated over the run (each step's count until the next step)."""
    times = [*steps["t"].tolist(), end]
    return float(sum(n * max(0.0, b - a) for n, a, b in
                     zip(steps["executors"], times[:-1], times[1:], strict=True)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows-per-file", type=positive, default=2_000)
    parser.add_argument("--pace", type=parse_pace, default=parse_pace("60:2000,60:4000,60:2000"))
    parser.add_argument("--warm-up", type=lambda t: parse_pace(t)[0],
                        default=parse_pace("30:1000")[0])
    parser.add_argument("--max-files-per-trigger", type=positive, default=1000)
    parser.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS))
    parser.add_argument("--workers", type=positive, default=4)
    parser.add_argument("--slots", type=positive, default=4)
    parser.add_argument("--key-groups", type=positive, default=64)
    parser.add_argument("--max-moves", type=positive, default=4)
    parser.add_argument("--elastic-executors", type=positive, default=2)
    parser.add_argument("--latency-target", type=float, default=4.0)
    parser.add_argument("--release-after", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    # Internal: one run in this process.
    parser.add_argument("--one", choices=RUNS, help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--expected-rows", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        drive(args)
        return 0
    started = time.monotonic()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    flights = first_flights(round(sum(s * r for s, r in (args.warm_up, *args.pace))))
    source = WORK / "flights.parquet"
    flights.to_parquet(source)
    expected = window_oracle(flights, time_col="date", key_col="origin",
                             aggs=[AggSpec.parse(a) for a in AGGS],
                             windows=[WindowSpec.parse(w) for w in WINDOWS])
    cluster = standalone.start(WORK / "cluster", workers=args.workers, cores=1, memory="2g")
    rows, phases, steps = [], [], []
    try:
        for name in args.runs:
            shutil.rmtree(WORK / name, ignore_errors=True)
            load = os.getloadavg()[0]
            command = [sys.executable, str(Path(__file__).resolve()), *(argv or sys.argv[1:]),
                       "--one", name, "--master", cluster.master_url, "--work", str(WORK),
                       "--source", str(source), "--expected-rows", str(len(expected))]
            done = subprocess.run(command, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{name} failed: {done.stderr[-3000:]}")
            row, by_phase, by_step = measure(name, args, expected)
            row.update(load_before=round(load, 2), load_after=round(os.getloadavg()[0], 2))
            rows.append(row)
            phases.extend(by_phase)
            steps.append(by_step)
            print(json.dumps(row), flush=True)
    finally:
        standalone.stop(cluster)
    step_rows = pd.concat(steps, ignore_index=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "runs.csv")
    write_csv(phases, args.out / "phases.csv")
    write_csv(step_rows.to_dict("records"), args.out / "steps.csv")
    meta = run_meta("elasticutor_spark/run.py", argv, args, cores=os.cpu_count(),
                    wall_seconds=round(time.monotonic() - started, 1))
    meta["settings"]["pace"] = [list(p) for p in args.pace]
    meta["settings"]["warm_up"] = list(args.warm_up)
    write_json(args.out / "results.json", meta, runs=rows, phases=phases)
    report.plot(step_rows, phases, args.latency_target, args.out / "executors.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
