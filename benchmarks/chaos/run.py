"""SIGKILL at a random moment of a scaling run, then a rerun: is every trial exact?

Each trial runs ``elastream run`` on the first ``--rows`` flights (key ``origin``, windows
``1h`` and ``6h/1h``, count and sum of the delay) while it scales 2 → 4 → 2 slots with live
migration (``--scale-at``; ``--planner``, repeatable: trials take the planners in turn), kills
the whole process group (driver and JVM) with SIGKILL at a moment drawn uniformly from a
reference run's streaming (from its first committed micro-batch to its end; ``--kill-in run``:
from its start, so start-up too), reruns the same command to the end, and checks what four
readers see in the results folder — pandas, pyarrow, DuckDB and Spark — against the pandas
oracle: windows missing, extra, duplicated or wrong, rows lost or doubled (over the tumbling
``1h`` window's counts) and the run's own account (input rows = aggregated + dead-letter rows).
A kill that comes after the run ended counts as a trial without a kill.

Writes results/trials.csv, results/chaos.json and results/chaos.png; scratch in work/.

    nice -n 5 .venv/bin/python benchmarks/chaos/run.py [--trials 20] [--seed 0] [--rows N]
        [--planner hash|flux|fish|milp|albic|cola|potc]...
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
from pathlib import Path
from random import Random
from typing import Any

import numpy as np
import pandas as pd
import report

from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # common.py
sys.path.insert(0, str(ROOT / "tests"))  # the pandas oracle lives beside the tests
from common import first_flights, positive, run_meta, write_csv, write_json  # noqa: E402
from live import read_by_every_reader  # noqa: E402
from oracle import SORT_COLUMNS, compare_results, window_oracle  # noqa: E402

WORK = HERE / "work"
AGGS = ("count", "sum:delay")
WINDOWS = ("1h", "6h/1h")
READERS = ("pandas", "pyarrow", "duckdb", "spark")


def command(source: Path, output: Path, args: argparse.Namespace, planner: str) -> list[str]:
    """The scaling run every trial kills and reruns, balanced and scaled by ``planner``."""
    flags = [flag for agg in AGGS for flag in ("--agg", agg)]
    flags += [flag for window in WINDOWS for flag in ("--window", window)]
    return [sys.executable, "-m", "elastream.cli.main", "run", "--input", str(source),
            "--time-col", "date", "--key-col", "origin", *flags,
            "--slots", "2", "--key-groups", str(args.key_groups),
            "--scale-at", f"{args.scale_out}:4", "--scale-at", f"{args.scale_in}:2",
            "--max-moves", str(args.max_moves), "--rows-per-batch", str(args.rows_per_batch),
            "--planner", planner, "--output", str(output), "--quiet"]


def first_commit(output: Path) -> bool:
    """Whether the run in ``output`` committed a micro-batch of its results query."""
    commits = output / "_checkpoints" / "results" / "commits"
    return commits.exists() and any(p.name.isdigit() for p in commits.iterdir())


def run_to_end(argv: list[str], output: Path) -> tuple[int, float, float | None, str]:
    """Exit status, seconds, seconds to the first commit and stderr tail of a finished run."""
    start = time.monotonic()
    run = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    committed = None
    while run.poll() is None and committed is None:
        if first_commit(output):
            committed = time.monotonic() - start
        time.sleep(0.2)
    _, stderr = run.communicate(timeout=1800)
    return run.returncode, time.monotonic() - start, committed, stderr[-2000:]


def run_and_kill(argv: list[str], output: Path, at: float, streaming: bool) -> bool:
    """Start a run in a process group of its own and SIGKILL the group ``at`` s in.

    ``streaming``: ``at`` s after its first micro-batch committed instead of after its start.
    Whether the kill came before the run ended.
    """
    run = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    while streaming and run.poll() is None and not first_commit(output):
        time.sleep(0.2)
    try:
        run.wait(timeout=at)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        return True


def state_at_kill(output: Path) -> dict[str, Any]:
    """What the killed run had done: batches committed, hand-offs written and taken over."""
    commits = output / "_checkpoints" / "results" / "commits"
    migration = output / "_migration"
    ledger = migration / "acknowledged.txt"
    collected = ledger.read_text().splitlines() if ledger.exists() else []
    metrics = output / "metrics.jsonl"
    last = json.loads(metrics.read_text().splitlines()[-1]) \
        if metrics.exists() and metrics.read_text().strip() else {}
    return {
        "batches_committed": sum(p.name.isdigit() for p in commits.iterdir())
        if commits.exists() else 0,
        # Slots a scale-in still drained at the last control step before the kill (a job that
        # scales by moves), or key groups a range migration still had to move (hash).
        "leaving_at_kill": len(last.get("slots_leaving", [])),
        "to_move_at_kill": last.get("key_groups_to_move", 0),
        "handoffs_in_store": len(list(migration.glob("v*/kg*.arrow"))),
        "handoffs_taken_over": len(list((migration / "receipts").glob("v*")))
        + len(collected),
    }


def account(actual: pd.DataFrame, expected: pd.DataFrame) -> dict[str, int]:
    """Windows missing, extra, duplicated and wrong; rows lost and doubled (1h counts)."""
    keys = [*SORT_COLUMNS]
    copies = actual.groupby(keys).size()
    merged = (actual.groupby(keys)["count"].sum().rename("got").to_frame()
              .join(expected.set_index(keys)["count"].rename("want"), how="outer"))
    tumbling = merged.index.get_level_values("window_length") == 3600
    got = merged["got"].fillna(0).to_numpy()[tumbling]
    want = merged["want"].fillna(0).to_numpy()[tumbling]
    try:
        compare_results(actual.drop_duplicates(keys), expected)
        wrong = 0
    except AssertionError:
        wrong = 1
    return {
        "missing": int(merged["got"].isna().sum()),
        "extra": int(merged["want"].isna().sum()),
        "duplicated": int((copies > 1).sum()),
        "differs": wrong,
        "rows_lost": int(np.clip(want - got, 0, None).sum()),
        "rows_doubled": int(np.clip(got - want, 0, None).sum()),
    }


def trial(index: int, planner: str, argv_of: Any, expected: pd.DataFrame,
          span: tuple[float, float], args: argparse.Namespace, spark: Any) -> dict[str, Any]:
    """One kill and rerun; what each reader then sees."""
    rng = Random(args.seed * 1000 + index)
    output = WORK / f"trial-{index:02d}"
    shutil.rmtree(output, ignore_errors=True)
    argv = argv_of(output, planner)
    at = rng.uniform(*span)
    killed = run_and_kill(argv, output, at, args.kill_in == "stream")
    row: dict[str, Any] = {"trial": index, "planner": planner, "kill_at_s": round(at, 2),
                           "killed": killed, **state_at_kill(output)}
    status, seconds, _, stderr = run_to_end(argv, output)
    summary = json.loads((output / "summary.json").read_text()) if status == 0 else {}
    row.update(rerun_status=status, rerun_s=round(seconds, 1),
               nothing_lost=bool(summary.get("nothing_lost")),
               input_rows=summary.get("input_rows"), output_rows=summary.get("output_rows"))
    if status != 0:
        print(f"trial {index}: rerun failed ({status}): {stderr}", file=sys.stderr)
        return {**row, "exact": False}
    exact = row["nothing_lost"]
    for reader, frame in read_by_every_reader(output / "results", spark).items():
        counts = account(frame, expected)
        row.update({f"{reader}_{k}": v for k, v in counts.items()})
        exact = exact and not any(counts.values())
    row["exact"] = exact
    shutil.rmtree(output, ignore_errors=True)
    return row


def main(argv: list[str] | None = None) -> int:
    """Run the trials; 0 when every one was exact."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=positive, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", type=positive, default=40_000)
    parser.add_argument("--rows-per-batch", type=positive, default=1_000)
    parser.add_argument("--key-groups", type=positive, default=16)
    parser.add_argument("--max-moves", type=positive, default=2)
    parser.add_argument("--scale-out", type=positive, default=5, help="batch of 2 -> 4 slots")
    parser.add_argument("--scale-in", type=positive, default=20, help="batch of 4 -> 2 slots")
    parser.add_argument("--kill-in", choices=("run", "stream"), default="stream",
                        help="draw the kill moment over the whole run, or over its streaming "
                             "(from its first committed micro-batch on; default)")
    parser.add_argument("--planner", action="append", default=None,
                        help="the planner that balances and scales, repeatable: trials take "
                             "them in turn (default hash)")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    planners = args.planner or ["hash"]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from elastream.runtimes.spark.session import get_spark

    WORK.mkdir(parents=True, exist_ok=True)
    flights = first_flights(args.rows)
    source = WORK / "input.parquet"
    flights.to_parquet(source)
    expected = window_oracle(flights, time_col="date", key_col="origin",
                             aggs=[AggSpec.parse(a) for a in AGGS],
                             windows=[WindowSpec.parse(w) for w in WINDOWS])

    def argv_of(output: Path, planner: str) -> list[str]:
        return command(source, output, args, planner)

    spans: dict[str, tuple[float, float]] = {}
    references: dict[str, tuple[float, float]] = {}
    for planner in planners:
        reference = WORK / f"reference-{planner}"
        shutil.rmtree(reference, ignore_errors=True)
        status, seconds, committed, stderr = run_to_end(argv_of(reference, planner), reference)
        if status != 0 or committed is None:
            print(f"the reference run of {planner} failed ({status}): {stderr}",
                  file=sys.stderr)
            return 1
        references[planner] = (round(seconds, 1), round(committed, 1))
        spans[planner] = (1.0, seconds) if args.kill_in == "run" else \
            (0.0, seconds - committed)
        print(f"reference run of {planner}: {seconds:.1f} s, first commit at {committed:.1f} "
              f"s; kills drawn from {spans[planner][0]:.1f}-{spans[planner][1]:.1f} s after "
              f"the {'start' if args.kill_in == 'run' else 'first commit'}", flush=True)
    spark = get_spark()
    rows = []
    for index in range(args.trials):
        planner = planners[index % len(planners)]
        rows.append(trial(index, planner, argv_of, expected, spans[planner], args, spark))
        r = rows[-1]
        print(f"trial {index:2d} ({planner}): kill at {r['kill_at_s']:5.1f} s "
              f"({'killed' if r['killed'] else 'ended before'}, "
              f"{r['batches_committed']} batches committed, {r['handoffs_in_store']} hand-offs "
              f"in the store, {r['leaving_at_kill']} slots leaving) -> "
              f"{'exact' if r['exact'] else 'NOT EXACT'}", flush=True)
    spark.stop()
    totals = {
        "trials": len(rows), "kills": sum(r["killed"] for r in rows),
        "exact": sum(r["exact"] for r in rows),
        "rows_lost": sum(r.get(f"{x}_rows_lost", 0) for r in rows for x in READERS),
        "rows_doubled": sum(r.get(f"{x}_rows_doubled", 0) for r in rows for x in READERS),
        "planners": planners,
        "reference_run_s": {p: r[0] for p, r in references.items()},
        "reference_first_commit_s": {p: r[1] for p, r in references.items()},
        "kill_in": args.kill_in, "expected_windows": len(expected),
        "input_rows": args.rows,
    }
    print(json.dumps(totals))
    write_csv(rows, args.results / "trials.csv")
    write_json(args.results / "chaos.json", run_meta("chaos/run.py", argv, args),
               totals=totals, trials=rows)
    report.plot(rows, totals, args.results / "chaos.png")
    return 0 if totals["exact"] == totals["trials"] else 1


if __name__ == "__main__":
    sys.exit(main())
