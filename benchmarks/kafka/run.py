"""End-to-end latency and sustained rows/s of ``elastream run`` on a Kafka topic, hash vs fish.

The program starts its own one-node broker in ``work/broker`` and, for each planner
(``--planners``, default ``hash`` and ``fish``) and each offered rate (``--rates``), runs on a
fresh topic of 3 partitions:

* the job — ``elastream run --input kafka://…/TOPIC --format json --starting-offsets earliest``
  as a service in a process group of its own (key ``key``, one tumbling ``--window``,
  ``count`` and ``sum:v``, ``--lateness``, ``--slots``, Spark's default ``local[2]`` and
  trigger: the next micro-batch starts when the last one ends and takes what arrived, up to
  ``--rows-per-batch``);
* once the job's query has started (its checkpoint holds the source's starting offsets), the
  generator (``generator.py``, a process of its own): a skewed stream, keys Zipf(1.5) over
  1,000 keys (seeded), event time = produce time; first a warm-up at ``--warm-rate`` rows/s
  until the job has committed ``--warm-batches`` micro-batches with rows (a cold job's empty
  first batch and first two with rows take ~30 s here), then ``--seconds`` at the offered rate;
* then it waits up to ``--grace`` seconds for the windows of the measured range to appear in
  the sink (not at all when the backlog is more than that many seconds of rows), sends SIGTERM
  to the job's main process and reads its ``summary.json``.

Measured per run over the **steady window**: the offered-rate part less its first
``--warm-up`` share (default 20 %: the step from the warm-up rate), to the generator's last
row. Definitions in ``measure.py``: ``sustained`` rows/s (rows committed over whole
micro-batches), the latency p50/p95 of the windows whose end falls in the steady window and at
least ``--lateness`` before the generator's end (sink file's mtime − ``window_end``: the
``--lateness`` wait and the trigger included), the backlog (rows in the topic not yet
committed) at the start and the end of the steady window and its growth per second, the CPU
(in cores) of the generator, the job's process tree, the broker, and of other work on the
machine, and the control steps' slot balance. A run is ``saturated`` when its backlog grew by
more than 10 % of the offered rows.

Writes ``results/kafka.csv``, ``results/kafka.json`` (with the run's command and settings) and
``results/kafka.png``; each run's folder stays in ``work/runs/PLANNER-RATE``.

    python benchmarks/kafka/run.py [--rates 2000,5000,...] [--planners hash,fish]
        [--seconds 60] [--warm-up 0.2] [--warm-rate 1000] [--warm-batches 2] [--window 2s]
        [--lateness 2s] [--slots 4] [--rows-per-batch N] [--grace 20] [--results DIR]
    python benchmarks/kafka/run.py --replot      # redraw results/kafka.png from kafka.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from measure import (
    CpuSample,
    batch_metrics,
    commit_points,
    committed_at,
    process_tree,
    result_files,
    sent_at,
    sustained,
    window_ends,
    window_latencies,
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from common import positive, run_meta, write_csv, write_json  # noqa: E402
from elastream.core.options import default  # noqa: E402
from elastream.core.windows import WindowSpec, parse_duration  # noqa: E402
from elastream.kafka import broker  # noqa: E402

PLANNERS = ("hash", "fish")
RATES = (2000, 5000, 10000, 20000, 40000)
PARTITIONS = 3
SCHEMA = "ts timestamp, key string, v double"
KEYS, Z, SEED = 1000, 1.5, 0
SATURATED = 0.1
"""A run is saturated when its backlog grew by more than this share of the offered rows."""
QUERY_START_SECONDS = 300.0
"""Bounds the wait for the job's query to start; a healthy job starts in ~15 s."""
STOP_SECONDS = 300.0
GENERATOR = HERE / "generator.py"


@dataclass(frozen=True)
class Settings:
    """What every run shares."""

    seconds: float
    warm_up: float
    window: str
    lateness: str
    slots: int
    rows_per_batch: int
    grace: float
    burst_ms: float
    warm_rate: float
    warm_batches: int

    @property
    def lateness_s(self) -> float:
        return parse_duration(self.lateness, option="lateness", allow_zero=True) / 1000

    @property
    def slide_s(self) -> float:
        return WindowSpec.parse(self.window).slide_ms / 1000


def job_command(url: str, out: Path, planner: str, settings: Settings) -> list[str]:
    return [sys.executable, "-m", "elastream.cli.main", "run", "--input", url,
            "--format", "json", "--schema", SCHEMA, "--time-col", "ts", "--key-col", "key",
            "--starting-offsets", "earliest", "--window", settings.window, "--agg", "count",
            "--agg", "sum:v", "--lateness", settings.lateness,
            "--rows-per-batch", str(settings.rows_per_batch), "--planner", planner,
            "--slots", str(settings.slots), "--output", str(out), "--quiet"]


def await_query(job: subprocess.Popen[bytes], folder: Path) -> None:
    """Until the job's results query ran its first trigger (the source's starting offsets are
    in its checkpoint); fails if the job ends first."""
    marker = folder / "_checkpoints" / "results" / "sources" / "0" / "0"
    deadline = time.monotonic() + QUERY_START_SECONDS
    while not marker.exists():
        if job.poll() is not None:
            raise RuntimeError(f"the job ended ({job.returncode}) before its query started; "
                               f"see {folder.parent / 'job.stderr'}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no query started within {QUERY_START_SECONDS:.0f} s")
        time.sleep(0.2)


def await_warm(job: subprocess.Popen[bytes], folder: Path, topic: str, batches: int) -> None:
    """Until the job committed ``batches`` micro-batches that read rows; fails if it ends."""
    deadline = time.monotonic() + QUERY_START_SECONDS
    while True:
        rows = [c.rows for c in commit_points(folder, topic)]
        if sum(1 for a, b in zip([0, *rows], rows, strict=False) if b > a) >= batches:
            return
        if job.poll() is not None:
            raise RuntimeError(f"the job ended ({job.returncode}) while warming up; "
                               f"see {folder.parent / 'job.stderr'}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the job did not commit {batches} batches within "
                               f"{QUERY_START_SECONDS:.0f} s of warm-up")
        time.sleep(0.2)


def await_windows(job: subprocess.Popen[bytes], folder: Path, last_end: float,
                  grace: float) -> None:
    """Until the sink holds a window ending at ``last_end`` or later, for at most ``grace`` s."""
    deadline, read, latest = time.monotonic() + grace, set(), -np.inf
    while time.monotonic() < deadline and job.poll() is None:
        for path, _ in result_files(folder):
            if path not in read:
                read.add(path)
                ends = window_ends(path)
                latest = max(latest, float(ends.max()) if len(ends) else -np.inf)
        if latest >= last_end:
            return
        time.sleep(0.5)


def end_offsets(bootstrap: str, topic: str) -> int:
    """Rows in ``topic``: the sum of its partitions' end offsets."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**broker.client_config(bootstrap), "group.id": "kafka-benchmark"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                   for p in range(PARTITIONS))
    finally:
        consumer.close()


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_config(bootstrap))  # held until the deletion is done
    admin.delete_topics([topic])[topic].result(30)


def sleep_until(unix: float) -> None:
    time.sleep(max(0.0, unix - time.time()))


def run_one(kafka: broker.Broker, planner: str, rate: int, settings: Settings,
            work: Path) -> dict[str, Any]:
    """One planner at one offered rate on a fresh topic: the row of ``results/kafka.csv``."""
    name = f"{planner}-{rate}"
    folder = work / "runs" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    out = folder / "job"
    topic = f"skew-{name}-{int(time.time())}"
    broker.create_topic(kafka.bootstrap, topic, PARTITIONS)
    with (folder / "job.stdout").open("wb") as stdout, (folder / "job.stderr").open("wb") as err:
        job = subprocess.Popen(
            job_command(f"kafka://{kafka.bootstrap}/{topic}", out, planner, settings),
            env={**os.environ, "PYSPARK_PYTHON": sys.executable}, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=err)
    generator: subprocess.Popen[str] | None = None
    launched = time.time()
    try:
        await_query(job, out)
        started = time.time()
        with (folder / "generator.stderr").open("w") as generator_err:
            generator = subprocess.Popen(
                [sys.executable, str(GENERATOR), kafka.bootstrap, topic, "--rate", str(rate),
                 "--seconds", str(settings.seconds), "--warm-rate", str(settings.warm_rate),
                 "--keys", str(KEYS), "--z", str(Z), "--seed", str(SEED),
                 "--burst-ms", str(settings.burst_ms)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=generator_err, text=True)
        await_warm(job, out, topic, settings.warm_batches)
        assert generator.stdin is not None
        generator.stdin.write("go\n")
        generator.stdin.flush()
        warmed = time.time()
        warm = warmed + settings.warm_up * settings.seconds

        def groups() -> dict[str, list[int]]:
            assert generator is not None
            return {"generator": [generator.pid], "job": process_tree(job.pid),
                    "broker": process_tree(kafka.pid)}

        sleep_until(warm)
        first = CpuSample.take(groups())
        sleep_until(warm + (1 - settings.warm_up) * settings.seconds - 0.5)
        last = CpuSample.take(groups())
        report_text, _ = generator.communicate(timeout=settings.seconds + 120)
        if generator.returncode != 0:
            raise RuntimeError(f"the generator failed ({generator.returncode}): see "
                               f"{folder / 'generator.stderr'}")
        report = json.loads(report_text)
        rows_in_topic = end_offsets(kafka.bootstrap, topic)
        last_end = steady_window(report, settings)[1] - settings.lateness_s - 0.5
        last_end = np.floor(last_end / settings.slide_s) * settings.slide_s
        if rows_in_topic - committed_at(commit_points(out, topic), time.time()) < (
                report["rate"] * settings.grace):  # else it cannot catch up within the grace
            await_windows(job, out, last_end, settings.grace)
        stopped = time.time()
        job.send_signal(signal.SIGTERM)  # the main process only: it stops the query cleanly
        job.wait(timeout=STOP_SECONDS)
    finally:
        for process in (generator, job):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL) if process is job else process.kill()
                process.wait()
    delete_topic(kafka.bootstrap, topic)
    return {"planner": planner, "offered": rate, "achieved": report["rate"],
            **measured(out, topic, report, rows_in_topic, stopped, settings),
            "job_exit": job.returncode, "query_start_s": started - launched,
            "warm_s": warmed - started, "warm_rows": report["warm_rows"],
            "generator_cpu_share": report["cpu_share"],
            "generator_late_bursts": report["late_bursts"], **first.shares(last)}


def steady_window(report: dict[str, Any], settings: Settings) -> tuple[float, float]:
    """The offered-rate part of a run less its first ``warm_up`` share, in Unix seconds."""
    return (report["start_unix"] + settings.warm_up * settings.seconds, report["end_unix"])


def measured(out: Path, topic: str, report: dict[str, Any], rows_in_topic: int,
             stopped: float, settings: Settings) -> dict[str, Any]:
    """What the job did over the steady window (``measure.py``), and its summary's verdict."""
    summary = json.loads((out / "summary.json").read_text()) if (
        out / "summary.json").exists() else {}
    start, end = steady_window(report, settings)
    points = commit_points(out, topic)
    backlog_start = (report["warm_rows"] + sent_at(report["timeline"], start)
                     - committed_at(points, start))
    backlog_end = rows_in_topic - committed_at(points, end)
    growth = (backlog_end - backlog_start) / (end - start)
    rate = sustained(points, start, end)
    latency = window_latencies(out, start, end - settings.lateness_s - 0.5, settings.slide_s,
                               stopped)
    steps = batch_metrics(out, points, start, end)
    return {
        "sustained": rate,
        "sustained_over_achieved": rate / report["rate"] if rate is not None else None,
        "latency_p50_s": latency.p50, "latency_p95_s": latency.p95,
        "latency_lower_bound": latency.unseen > 0, "windows": latency.windows,
        "closings": latency.closings, "closings_unseen": latency.unseen,
        "backlog_start": round(backlog_start), "backlog_end": backlog_end,
        "backlog_growth_per_s": growth, "saturated": growth > SATURATED * report["rate"],
        "nothing_lost": summary.get("nothing_lost"), "input_rows": summary.get("input_rows"),
        "rows_in_topic": rows_in_topic, "late_rows": summary.get("late_rows"),
        "batches": summary.get("batches"), "steady_s": end - start,
        **{k: steps.get(k) for k in ("steps", "batch_ms_p50", "rows_per_batch",
                                     "max_mean_slot_load", "hot_keys", "moves")},
        "slot_share": " ".join(map(str, steps.get("slot_share", []))),
    }


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.3))
    top = max(max(r["achieved"], r["sustained"] or 0) for r in rows) * 1.1
    left.plot([0, top], [0, top], color="grey", linestyle=":", label="y = x")
    planners = list(dict.fromkeys(r["planner"] for r in rows))
    for planner, colour in zip(planners, ("C0", "C1", "C2", "C3"), strict=False):
        mine = sorted((r for r in rows if r["planner"] == planner), key=lambda r: r["offered"])
        offered = [r["achieved"] for r in mine]
        left.plot(offered, [r["sustained"] or np.nan for r in mine], "o-", color=colour,
                  label=planner)
        saturated = [r for r in mine if r["saturated"]]
        left.plot([r["achieved"] for r in saturated], [r["sustained"] for r in saturated], "o",
                  color="white", markersize=4)
        for field, style in (("latency_p50_s", "o-"), ("latency_p95_s", "s--")):
            right.plot(offered, [r[field] or np.nan for r in mine], style, color=colour,
                       label=f"{planner} {field.split('_')[1]}")
        bounds = [r for r in mine if r["latency_lower_bound"]]
        if bounds:
            right.plot([r["achieved"] for r in bounds], [r["latency_p95_s"] for r in bounds],
                       "^", color=colour, markersize=12, fillstyle="none",
                       label=f"{planner}: lower bound (windows unseen at the stop)")
    left.plot([], [], "o", color="grey", fillstyle="none", label="saturated (backlog grows)")
    left.set_xlabel("offered rows/s (achieved by the generator)")
    left.set_ylabel("sustained rows/s (committed, steady window)")
    left.set_title("throughput")
    left.legend()
    right.set_yscale("log")
    right.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    right.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    right.set_yticks([2, 5, 10, 20, 50])
    right.set_xlabel("offered rows/s (achieved by the generator)")
    right.set_ylabel("produce → visible in the sink (s)")
    right.set_title("window latency p50 / p95")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default=",".join(map(str, RATES)),
                        help="offered rows/s, comma-separated")
    parser.add_argument("--planners", default=",".join(PLANNERS))
    parser.add_argument("--seconds", type=float, default=60.0, help="generator seconds per run")
    parser.add_argument("--warm-up", type=float, default=0.2,
                        help="share of each run left out of the measurements")
    parser.add_argument("--window", default="2s", help="the job's window LENGTH[/SLIDE]")
    parser.add_argument("--lateness", default="2s")
    parser.add_argument("--slots", type=positive, default=4)
    parser.add_argument("--rows-per-batch", type=positive, default=default("rows_per_batch"),
                        help="most records a micro-batch takes (Spark's maxOffsetsPerTrigger)")
    parser.add_argument("--grace", type=float, default=20.0,
                        help="most seconds to wait after the generator for the last windows")
    parser.add_argument("--burst-ms", type=float, default=10.0)
    parser.add_argument("--warm-rate", type=float, default=1000.0,
                        help="rows/s the generator sends until the job is warm")
    parser.add_argument("--warm-batches", type=positive, default=2,
                        help="micro-batches with rows the job commits before the measured run")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--replot", action="store_true",
                        help="only redraw RESULTS/kafka.png from RESULTS/kafka.json")
    args = parser.parse_args(argv)
    if args.replot:
        plot(json.loads((args.results / "kafka.json").read_text())["runs"],
             args.results / "kafka.png")
        return 0
    settings = Settings(args.seconds, args.warm_up, args.window, args.lateness, args.slots,
                        args.rows_per_batch, args.grace, args.burst_ms, args.warm_rate,
                        args.warm_batches)
    work = HERE / "work"
    directory = work / "broker"
    if broker.running(directory):
        broker.stop(directory)
    shutil.rmtree(directory, ignore_errors=True)
    kafka = broker.start(directory)
    rows = []
    try:
        for rate in (int(r) for r in args.rates.split(",")):
            for planner in args.planners.split(","):
                row = run_one(kafka, planner, rate, settings, work)
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        broker.stop(directory)
    write_csv(rows, args.results / "kafka.csv")
    write_json(args.results / "kafka.json",
               run_meta("kafka/run.py", argv, args, cores=os.cpu_count()), runs=rows)
    plot(rows, args.results / "kafka.png")
    for r in rows:
        def shown(value: float | None, form: str) -> str:
            return "-" if value is None else format(value, form)

        print(f"{r['planner']:5} offered {r['offered']:>6,} achieved {r['achieved']:>9,.0f} "
              f"sustained {shown(r['sustained'], ',.0f'):>9}  "
              f"p50 {shown(r['latency_p50_s'], '.2f'):>6} s "
              f"p95 {shown(r['latency_p95_s'], '.2f'):>6} s  backlog {r['backlog_end']:>9,}  "
              f"nothing_lost {r['nothing_lost']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
