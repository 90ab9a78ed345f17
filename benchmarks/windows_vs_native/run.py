"""Multi-window aggregation: elastream's panes + consolidation vs Spark's native sliding window().

The same job — key ``origin``; ``sum:delay``, ``count``, ``avg:delay``; several overlapping
windows — runs over the same replayed flight chunks on the same local Spark session, once per
engine (see engines.py for how each is driven and timed). Every result is checked against the
pandas oracle of tests/oracle.py. A sweep over the number of overlapping windows shows where
elastream's cost (one pane per row, fewest merges) overtakes Spark's (every row copied into
each of its ``ceil(L/S)`` windows per spec).

Writes results/results.csv, results/results.json and results/windows_vs_native.png; scratch
(chunks, checkpoints, outputs) goes to work/, which is emptied at the start of every run.

    .venv/bin/python benchmarks/windows_vs_native/run.py [--rows N] [--windows 1h 6h/1h 24h/1h]
        [--rows-per-batch N] [--slots N] [--out DIR] [--sweep-rows N] [--no-sweep]
        [--native-union] [--warmup-rows N]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pyspark

from elastream.algorithms.windows.consolidation import naive_merges, plan_consolidation
from elastream.core.aggregates import AggSpec
from elastream.core.errors import OptionError
from elastream.core.windows import WindowSpec, unique_specs
from elastream.runtimes.spark.session import get_spark

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# benchmarks/common.py (engines imports it too), and the pandas oracle beside the tests
sys.path[:0] = [str(HERE.parent), str(ROOT / "tests")]
import engines  # noqa: E402
import report  # noqa: E402

from common import flights_file, oracle_exit, positive  # noqa: E402
from oracle import window_oracle  # noqa: E402

AGGS = tuple(AggSpec.parse(a) for a in ("sum:delay", "count", "avg:delay"))
DEFAULT_WINDOWS = ("1h", "6h/1h", "24h/1h")
SWEEP = (("1h",), ("1h", "6h/1h"), ("1h", "6h/1h", "24h/1h"), ("1h", "6h/1h", "12h/1h", "24h/1h"))
DAY_MS = 86_400_000
WORK = HERE / "work"
ENGINES = ("elastream", "native", "native-union")



def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=positive, default=None,
                   help="first N flights in time order for the main comparison (default: all 3M)")
    p.add_argument("--windows", nargs="+", default=list(DEFAULT_WINDOWS), metavar="LEN[/SLIDE]",
                   help="window set of the main comparison (default: 1h 6h/1h 24h/1h)")
    p.add_argument("--rows-per-batch", type=positive, default=100_000,
                   help="rows per replayed chunk = micro-batch (default 100000)")
    p.add_argument("--slots", type=positive, default=4,
                   help="elastream slots = Spark shuffle partitions of both engines (default 4)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    p.add_argument("--sweep-rows", type=positive, default=300_000,
                   help="flights per sweep run, at most --rows (default 300000)")
    p.add_argument("--no-sweep", action="store_true", help="run the main comparison only")
    p.add_argument("--native-union", action="store_true",
                   help="also run native Spark as ONE query over a union of the window branches")
    p.add_argument("--repeat", type=positive, default=1,
                   help="run each engine this many times per window set; keep the fastest (1)")
    p.add_argument("--warmup-rows", type=int, default=100_000,
                   help="untimed warm-up of both engines on this many flights first (0: none)")
    args = p.parse_args(argv)
    try:
        args.windows = unique_specs([WindowSpec.parse(w) for w in args.windows])
    except OptionError as error:
        p.error(str(error))
    return args


def _label(windows: tuple[WindowSpec, ...]) -> str:
    return " ".join(map(str, windows))


def _window_metrics(windows: tuple[WindowSpec, ...], rows: int) -> dict[str, Any]:
    """Work each technique does for this window set, independent of the engine's speed."""
    copies = sum(math.ceil(w.length_ms / w.slide_ms) for w in windows)
    return {
        "merges": plan_consolidation(windows).merges(DAY_MS),
        "naive_merges": naive_merges(windows, DAY_MS),
        "row_copies_per_row": copies,
        "native_row_copies": rows * copies,
    }


def _measure(engine: str, spark: Any, replay: engines.Replay, windows: tuple[WindowSpec, ...],
             args: argparse.Namespace, folder: Path) -> engines.Measured:
    if engine == "elastream":
        return engines.run_elastream(spark, replay, windows, AGGS, args.slots,
                                     args.rows_per_batch, folder)
    return engines.run_native(spark, replay, windows, AGGS, args.slots, folder,
                              union=engine == "native-union")


def _compare(spark: Any, replay: engines.Replay, windows: tuple[WindowSpec, ...],
             order: list[str], args: argparse.Namespace, role: str, folder: Path,
             mismatches: dict[str, str]) -> list[dict[str, Any]]:
    """Run every engine on one window set (fastest of ``--repeat``); one result row each."""
    expected = window_oracle(replay.frame, time_col=engines.TIME_COL, key_col=engines.KEY_COL,
                             aggs=AGGS, windows=windows)
    best: dict[str, engines.Measured] = {}
    walls: dict[str, list[float]] = {e: [] for e in order}
    problems: dict[str, str | None] = dict.fromkeys(order)
    for attempt in range(args.repeat):
        for engine in order:
            m = _measure(engine, spark, replay, windows, args, folder / f"{engine}-{attempt}")
            walls[engine].append(m.wall_seconds)
            problems[engine] = problems[engine] or m.mismatch(expected)
            if engine not in best or m.wall_seconds < best[engine].wall_seconds:
                best[engine] = m
            print(f"{engine:<12} {_label(windows):<26} {m.input_rows:>9,} rows  "
                  f"{m.wall_seconds:7.1f} s  {m.input_rows / m.wall_seconds:9,.0f} rows/s",
                  file=sys.stderr, flush=True)
    rps = {e: m.input_rows / m.wall_seconds for e, m in best.items()}
    out = []
    for engine in sorted(order, key=ENGINES.index):
        m, problem = best[engine], problems[engine]
        if problem is not None:
            mismatches[f"{engine} {_label(windows)} {replay.rows}"] = problem
            print(f"{engine} {_label(windows)}: differs from the oracle:\n{problem}",
                  file=sys.stderr)
        # elastream rows/s ÷ native rows/s (> 1: elastream faster); on native rows, ÷ theirs.
        versus = "native" if engine == "elastream" else engine
        out.append({
            "role": role, "engine": engine, "windows": _label(windows),
            "n_windows": len(windows), "rows": m.input_rows,
            "chunks": len(replay.manifest.chunks), "micro_batches": m.micro_batches,
            "queries": m.queries, "wall_seconds": round(m.wall_seconds, 3),
            "all_wall_seconds": walls[engine], "step_seconds": list(m.step_seconds),
            "first_step_seconds": m.step_seconds[0], "rows_per_second": round(rps[engine], 1),
            "steady_rows_per_second": round(
                (m.input_rows - replay.first_chunk_rows)
                / max(m.wall_seconds - m.step_seconds[0], 1e-9), 1),
            "throughput_ratio": round(rps["elastream"] / rps[versus], 3),
            **_window_metrics(windows, m.input_rows),
            "output_rows": len(m.results), "equal_to_oracle": problem is None,
        })
    return out


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    began = time.perf_counter()
    main_windows = args.windows
    sweep_sets = [] if args.no_sweep else [
        unique_specs([WindowSpec.parse(w) for w in ws]) for ws in SWEEP]
    engine_names = list(ENGINES if args.native_union else ENGINES[:2])

    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    flights = flights_file()
    punct = engines.punct_after_ms([main_windows, *sweep_sets])
    replays: dict[int | None, engines.Replay] = {}

    def replay_of(rows: int | None) -> engines.Replay:
        if rows not in replays:
            name = f"replay-{rows or 'all'}"
            replays[rows] = engines.prepare(flights, rows, args.rows_per_batch, WORK / name,
                                            punct)
        return replays[rows]

    # (replay rows, window set) → roles; the main run doubles as a sweep point when they agree.
    plan: dict[tuple[int | None, tuple[WindowSpec, ...]], list[str]] = {}
    plan.setdefault((args.rows, main_windows), []).append("main")
    main_rows = replay_of(args.rows).rows
    sweep_rows = None if args.sweep_rows >= main_rows else args.sweep_rows
    for windows in sweep_sets:
        plan.setdefault((args.rows if sweep_rows is None else sweep_rows, windows),
                        []).append("sweep")

    spark = get_spark()
    if args.warmup_rows > 0:
        warm = engines.prepare(flights, args.warmup_rows, args.rows_per_batch, WORK / "warmup",
                               punct)
        for engine in engine_names:
            started = time.perf_counter()
            _measure(engine, spark, warm, main_windows, args, WORK / "warmup" / engine)
            print(f"warm-up {engine}: {time.perf_counter() - started:.1f} s", file=sys.stderr)

    rows_out: list[dict[str, Any]] = []
    mismatches: dict[str, str] = {}
    for index, ((rows, windows), roles) in enumerate(plan.items()):
        # Alternate which engine goes first, so neither always runs on a warmer JVM.
        order = engine_names if index % 2 == 0 else engine_names[::-1]
        rows_out += _compare(spark, replay_of(rows), windows, order, args, ",".join(roles),
                             WORK / f"set-{index}", mismatches)

    elapsed = time.perf_counter() - began
    meta = {
        "benchmark": "windows_vs_native",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "config": {
            "main_rows": main_rows, "sweep_rows": sweep_rows or main_rows,
            "main_windows": _label(main_windows),
            "sweep_sets": [_label(ws) for ws in sweep_sets],
            "aggregates": [a.output_name for a in AGGS], "key": engines.KEY_COL,
            "rows_per_batch": args.rows_per_batch, "slots": args.slots, "watermark": "0s",
            "warmup_rows": args.warmup_rows, "repeat": args.repeat, "engines": engine_names,
        },
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "spark": pyspark.__version__, "master": spark.sparkContext.master},
        "elapsed_seconds": round(elapsed, 1),
        "oracle_mismatches": mismatches,
    }
    report.write(rows_out, meta, args.out)
    report.plot(rows_out, sweep_rows or main_rows, args.out / "windows_vs_native.png")
    spark.stop()
    print(report.table(rows_out))
    print(f"\nthroughput_ratio = elastream rows/s ÷ engine rows/s (> 1: elastream faster); "
          f"merges per key per day; {elapsed / 60:.1f} min in all; results in {args.out}")
    return oracle_exit(mismatches)


if __name__ == "__main__":
    sys.exit(main())
