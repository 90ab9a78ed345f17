"""elastream on a live stream: files arrive at a fixed rate while micro-batches run back to back.

The first ``--rows`` flights in event-time order, cut into files of about ``--rows-per-file``
rows (never inside one timestamp; two one-row punctuation files past the longest window end the
stream and close every window), are written by a writer thread into a watched folder at
``--rate`` rows/s — each under a hidden name, then renamed in — while the job's results query
runs on that folder with Spark's default trigger (the next micro-batch starts as soon as the
last one ended) and at most ``--max-files-per-trigger`` files per batch. The writer never waits
for the query; the control loop plans beside it (routing versions bind to micro-batch ids).

The job is ``elastream.windowed`` (key ``origin``, windows 1h, 6h/1h, 24h/1h, ``sum:delay``
and ``count``) with its results written by ``ParquetBatchSink``. Runs, one after another on
one local Spark session, each on a fresh folder and the same files at the same rate:

* ``hash``, ``flux``, ``fish`` — ``--slots`` slots, ``--key-groups`` key groups;
* ``scale`` — planner ``hash`` on half the slots, ``job.scale(slots)`` once a third of the
  files were written and ``job.scale(slots // 2)`` at two thirds: live progressive migration
  (SSM's plan, at most ``--max-moves`` key groups per control step) while the stream flows;
* ``replay`` — the same data through ``elastream run --mode replay`` (``FileRun``, planner
  ``hash``, ``--slots``): every chunk fed at once, one chunk per micro-batch.

Per run: batch durations, each file's latency and each window's delay (defined in
``measure.py``), max/mean slot load, moves, throughput, and whether the results equal the
pandas oracle of tests/oracle.py. A warm-up run (planner fish on the first ``--warm-up-files``
files, default all) comes first and is not reported: whichever run came first after a short
warm-up ran its batches 30–40 % slower all through. Writes results/results.csv (one row per run),
results/batches.csv (one row per micro-batch), results/results.json and the plots
results/batches.png and results/delays.png; scratch goes to work/ (emptied per run).

    nice -n 5 .venv/bin/python benchmarks/live_stream/run.py [--rows N] [--rows-per-file N]
        [--rate R] [--max-files-per-trigger F] [--slots S] [--key-groups G] [--max-moves M]
        [--warm-up-files N] [--runs hash flux fish scale replay] [--timeout S] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyspark
import report
from measure import (
    batches,
    equals_oracle,
    file_latencies,
    sink_results,
    summary,
    window_delays,
)
from stream import LiveSettings, RunSettings, StreamFile, run_live, stream_files

from elastream.api import spark_session
from elastream.core.aggregates import AggSpec
from elastream.core.spec import RunSpec
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.file_run import FileRun

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the pandas oracle lives beside the tests
sys.path.insert(0, str(HERE.parent))
from common import first_flights, positive, run_meta, spark_job_outputs  # noqa: E402
from oracle import window_oracle  # noqa: E402

WORK = HERE / "work"
AGGS = ("sum:delay", "count")
WINDOWS = ("1h", "6h/1h", "24h/1h")
RECENT_PROGRESS = 5000
"""Progress reports a query keeps (Spark's default, 100, is fewer than a run's batches)."""


RUNS = ("hash", "flux", "fish", "scale", "replay")


def live_run(name: str, args: argparse.Namespace) -> RunSettings:
    """A live run's settings: a planner on ``--slots``, or ``scale``."""
    if name != "scale":
        return RunSettings(name, name, args.slots)
    half = max(1, args.slots // 2)
    return RunSettings("scale", "hash", half, max_slots=args.slots,
                       scale_after=((1 / 3, args.slots), (2 / 3, half)))


def replay_spec(args: argparse.Namespace, source: Path, output: Path) -> RunSpec:
    """``elastream run --mode replay`` with the live runs' settings (planner hash)."""
    return RunSpec.of(input=source, output=output, time_col="date", key_col="origin",
                      aggs=tuple(AggSpec.parse(a) for a in AGGS),
                      windows=tuple(WindowSpec.parse(w) for w in WINDOWS),
                      slots=args.slots, key_groups=args.key_groups, planner="hash",
                      max_moves=args.max_moves, rows_per_batch=args.rows_per_file)


def live_settings(args: argparse.Namespace) -> LiveSettings:
    """The stream's pace and the job's settings, shared by every live run."""
    return LiveSettings(rate=args.rate, max_files_per_trigger=args.max_files_per_trigger,
                        key_groups=args.key_groups, max_moves=args.max_moves, windows=WINDOWS,
                        aggs=AGGS, timeout=args.timeout)


def live(spark: Any, run: RunSettings, files: list[StreamFile], settings: LiveSettings,
         expected: pd.DataFrame) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """One live run: its summary, its batches and its window delays."""
    done = run_live(spark, files, run, settings, WORK / run.name, len(expected))
    origin = min(done.arrivals)
    frame = batches(done.metrics, done.progress, origin, [f.rows for f in files],
                    [f.data_rows for f in files])
    lat = file_latencies(frame, [f.rows for f in files], done.arrivals)
    delays = window_delays(done.results_dir, [f.max_time_ms for f in files], done.arrivals)
    results = sink_results(done.results_dir)
    row = summary(run.name, frame, lat, delays, sum(f.data_rows for f in files),
                  exact=equals_oracle(run.name, results, expected), output_rows=len(results),
                  metrics=done.metrics)
    row.update(complete=done.complete,
               writer_late_max_s=round(done.writer_late_seconds, 3),
               scale_requests=[{"after_file": i, "slots": s, "at_s": round(t - origin, 2)}
                               for i, s, t in done.scale_requests])
    lat_by_batch = lat.groupby("batch")["latency_s"].max().rename("file_latency_max_s")
    frame = frame.merge(lat_by_batch, left_on="batch", right_index=True, how="left")
    return row, frame.assign(run=run.name), delays.assign(run=run.name)


def replay(spark: Any, source: Path, files: list[StreamFile], expected: pd.DataFrame,
           args: argparse.Namespace) -> tuple[dict[str, Any], pd.DataFrame]:
    """The replay run (all chunks at once; they are ``files``): its summary and its batches."""
    job = FileRun(spark, replay_spec(args, source, WORK / "replay"))
    job.run()
    manifest = json.loads((job.paths.staged / "manifest.json").read_text())
    if len(manifest["chunks"]) != len(files):
        raise RuntimeError(f"the replay cut {len(manifest['chunks'])} chunks, the live stream "
                           f"{len(files)} files")
    metrics, results = spark_job_outputs(WORK / "replay")
    progress = [json.loads(p.json) for p in job.queries["results"].recentProgress]
    origin = min(pd.Timestamp(p["timestamp"]).timestamp() for p in progress)
    frame = batches(metrics, progress, origin, [f.rows for f in files],
                    [f.data_rows for f in files])
    row = summary("replay", frame, None, None, sum(f.data_rows for f in files),
                  exact=equals_oracle("replay", results, expected), output_rows=len(results),
                  metrics=metrics)
    return row, frame.assign(run="replay")


def main(argv: list[str] | None = None) -> int:
    """Run every live run and the replay; write CSV, JSON and the plots."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=positive, default=480_000,
                   help="first N flights in time order (default 480000)")
    p.add_argument("--rows-per-file", type=positive, default=12_000)
    p.add_argument("--rate", type=float, default=10_000, help="rows per second (10000)")
    p.add_argument("--max-files-per-trigger", type=positive, default=4)
    p.add_argument("--slots", type=positive, default=4)
    p.add_argument("--key-groups", type=positive, default=64)
    p.add_argument("--max-moves", type=positive, default=4)
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds a run may take after its last file (300)")
    p.add_argument("--warm-up-files", type=positive, default=None,
                   help="files of the unreported warm-up run (default: all)")
    p.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS),
                   help="which runs, in this order (default: all, as listed)")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)

    started, began = time.perf_counter(), time.strftime("%Y-%m-%d %H:%M:%S")
    load_before = os.getloadavg()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    flights = first_flights(args.rows)
    source = WORK / "flights.parquet"
    flights.to_parquet(source, index=False)
    spec = replay_spec(args, source, WORK / "replay")
    files = stream_files(source, WORK / "files", args.rows_per_file,
                         spec.longest_ms + spec.pane_ms + spec.source.lateness_ms)
    expected = window_oracle(flights, time_col="date", key_col="origin", aggs=spec.windowing.aggs,
                             windows=spec.windowing.windows)
    spark = spark_session(args.slots)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(RECENT_PROGRESS))
    settings = live_settings(args)
    warm_up = RunSettings("warm-up", "fish", args.slots)
    warm_files = files[:-2][:args.warm_up_files] + files[-2:]
    run_live(spark, warm_files, warm_up, settings, WORK / "warm-up", expected_rows=0)
    rows, frames, delays = [], [], []
    for name in args.runs:
        if name == "replay":
            row, frame = replay(spark, source, files, expected, args)
        else:
            row, frame, delay = live(spark, live_run(name, args), files, settings, expected)
            delays.append(delay)
        rows.append(row)
        frames.append(frame)
        print(json.dumps(row), flush=True)
    meta = {
        **run_meta("live_stream/run.py", argv, args, pyspark=pyspark.__version__,
                   cpus=spark.sparkContext.defaultParallelism,
                   load_average_before=[round(x, 2) for x in load_before],
                   load_average_after=[round(x, 2) for x in os.getloadavg()]),
        "started": began,
        "files": len(files), "wall_seconds": round(time.perf_counter() - started, 1),
    }
    spark.stop()
    all_batches = pd.concat(frames, ignore_index=True)
    all_delays = pd.concat(delays, ignore_index=True) if delays else pd.DataFrame(
        columns=["run", "batch", "delay_s", "windows", "closed_at_s"])
    report.write(rows, all_batches, all_delays, meta, args.out)
    report.plot_batches(all_batches, rows, args.out / "batches.png")
    report.plot_delays(all_delays, args.out / "delays.png")
    return 0 if all(r["equal_to_oracle"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
