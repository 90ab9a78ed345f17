"""FISH's evaluation (Huang, §6, Figs. 9–13, 16, 17) on elastream's cluster simulator.

Every grouping scheme routes the same stream onto the same simulated workers, set up as
``elastream simulate`` does (1 µs per tuple, arrivals at 0.9 of the cluster's capacity); see
experiments.py for what each figure runs and README.md for the results beside the paper's.

Writes results/results.csv, results/results.json, results/summary.md and one PNG per figure;
Zipf key arrays are cached in work/ (git-ignored). Simulations run one at a time in this one
process; run it niced on a shared machine:

    nice -n 10 .venv/bin/python benchmarks/fish/run.py [--tuples N] [--headline-tuples N]
        [--paper-runs R] [--workers W…] [--z Z…] [--figures F…] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import experiments
import numpy as np
import report
from streams import Streams

from elastream.runtimes.sim.cluster import DEFAULT_SERVICE_TIME, DEFAULT_UTILISATION
from elastream.workloads.zipf import PAPER_NUM_KEYS, PAPER_PERIOD

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
DEFAULT_ZS = (1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
DEFAULT_WORKERS = (16, 32, 64, 128)
ORDER = ("9", "10", "12", "13", "16", "17", "runs")


def _positive(text: str) -> int:
    value = int(float(text))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _count(text: str) -> int:
    value = int(float(text))
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0, got {text!r}")
    return value


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tuples", type=_positive, default=5_000_000,
                   help="Zipf tuples of every sweep: Figs. 10–13, 16, 17 at every worker "
                        "count (default 5e6, one period N of the paper)")
    p.add_argument("--headline-tuples", type=_count, default=50_000_000,
                   help="Figs. 10/11 again at --headline-workers on this many tuples "
                        "(default 5e7, the paper's ZF; 0: skip)")
    p.add_argument("--headline-workers", type=_positive, default=128)
    p.add_argument("--paper-runs", type=_count, default=10,
                   help="Figs. 10/11 at --headline-workers on this many separate --tuples "
                        "streams, seeds 0… (default 10; 0 or 1: skip)")
    p.add_argument("--workers", type=_positive, nargs="+", default=list(DEFAULT_WORKERS),
                   help="worker counts (default 16 32 64 128)")
    p.add_argument("--z", type=float, nargs="+", default=list(DEFAULT_ZS),
                   help="Zipf skews (default 1.0 1.2 … 2.0, every other value of the "
                        "paper's 1.0, 1.1, …, 2.0)")
    p.add_argument("--figures", nargs="+", choices=ORDER, default=list(ORDER),
                   help="which figures to run (default all; 'runs' = the separate-runs "
                        "reading of Figs. 10/11)")
    p.add_argument("--seed", type=int, default=0, help="seed of the schemes' hashes")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    began = time.perf_counter()
    grid = experiments.Grid(
        zs=tuple(args.z), workers=tuple(sorted(set(args.workers))), tuples=args.tuples,
        headline_tuples=args.headline_tuples, headline_workers=args.headline_workers,
        paper_runs=args.paper_runs if args.paper_runs > 1 else 0)
    runner = experiments.Runner(Streams(WORK), seed=args.seed)
    figures = [f for f in ORDER if f in args.figures]
    rows: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}

    def finished(name: str, new_rows: list[dict[str, Any]], wall: float) -> None:
        rows.extend(new_rows)
        seconds[name] = round(wall, 1)
        print(f"figure {name}: {len(new_rows)} rows in {wall / 60:.1f} min "
              f"({runner.runs} simulations so far)", file=sys.stderr, flush=True)
        _write(rows, args, grid, seconds, time.perf_counter() - began, final=False)

    experiments.run_all(runner, grid, figures, finished)
    elapsed = time.perf_counter() - began
    summary = _write(rows, args, grid, seconds, elapsed, final=True)
    print(report.markdown(rows, grid.headline_workers))
    print(f"\n{runner.runs} simulations, {elapsed / 60:.1f} min in all; results in {args.out}")
    for figure, goals in summary.items():
        if isinstance(goals, dict):
            for goal, met in goals.items():
                if goal.startswith("goal_"):
                    print(f"fig {figure}: {goal[5:]}: {'met' if met else 'NOT met'}")
    return 0


def _write(rows: list[dict[str, Any]], args: argparse.Namespace, grid: experiments.Grid,
           seconds: dict[str, float], elapsed: float, *, final: bool) -> dict[str, Any]:
    """Write what is done so far (so a long run that dies keeps its finished figures)."""
    summary = report.summary(rows, grid.headline_workers)
    meta = {
        "benchmark": "fish",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "complete": final,
        "config": {
            "tuples": grid.tuples, "headline_tuples": grid.headline_tuples,
            "headline_workers": grid.headline_workers, "paper_runs": grid.paper_runs,
            "workers": list(grid.workers), "z": list(grid.zs), "figures": args.figures,
            "seed": args.seed, "alphas": list(experiments.ALPHAS),
            "thetas_times_n": [str(t) for t in experiments.THETAS],
            "service_time_s": DEFAULT_SERVICE_TIME, "utilisation": DEFAULT_UTILISATION,
            "zipf_keys": PAPER_NUM_KEYS, "zipf_period": PAPER_PERIOD,
        },
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "nice": os.nice(0)},
        "figure_seconds": seconds,
        "elapsed_seconds": round(elapsed, 1),
        "summary": summary,
    }
    report.write(rows, meta, args.out)
    (args.out / "summary.md").write_text(report.markdown(rows, grid.headline_workers))
    if final:
        report.plot_all(rows, args.out, grid.headline_workers)
    return summary


if __name__ == "__main__":
    sys.exit(main())
