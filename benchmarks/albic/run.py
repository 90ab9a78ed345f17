"""ALBIC's evaluation (Madsen, Zhou, Cao, §5.1 and §5.3: Figs. 2–5, 10–11) on the round simulator.

Flux and the ``milp`` planner re-plan ALBIC §5.1's synthetic clusters round after round
(``elastream.runtimes.sim.rounds``); see experiments.py for what each figure runs and README.md
for the results beside the paper's. Figs. 10–11 run only when the planners ``albic`` and
``cola`` are registered.

Writes results/results.csv (the rows), results/results.json (set-up, machine, summary; no
rows), results/summary.json, results/summary.md and one PNG per figure.
Everything runs in this one process; run it niced on a shared machine:

    nice -n 10 .venv/bin/python benchmarks/albic/run.py [--figures F…] [--rounds R]
        [--seeds S…] [--varies V…] [--budgets M…] [--time-limit SEC] [--out DIR]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import experiments
import numpy as np
import report

from common import positive

HERE = Path(__file__).resolve().parent
ORDER = ("2-4", "time", "5", "10-11")



def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--figures", nargs="+", choices=ORDER, default=list(ORDER),
                   help="which figures to run (default all; 'time' = Figs. 2–4's solving-time "
                        "axis)")
    p.add_argument("--rounds", type=positive, default=10,
                   help="rounds per run of Figs. 2–4 (default 10)")
    p.add_argument("--fig5-rounds", type=positive, default=25)
    p.add_argument("--fig10-rounds", type=positive, default=100,
                   help="rounds of Figs. 10–11 (default 100: ALBIC collocates gradually)")
    p.add_argument("--fig10-seeds", type=int, nargs="+", default=[0],
                   help="seeds of Figs. 10–11 (default 0)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1],
                   help="instance, drift and solver seeds (default 0 1)")
    p.add_argument("--varies", type=float, nargs="+", default=list(experiments.VARIES),
                   help="§5.1's varies, percent (default 10 20 40)")
    p.add_argument("--budgets", type=positive, nargs="+", default=list(experiments.BUDGETS),
                   help="maxMigrations (default 10 20 30 40)")
    p.add_argument("--nodes", type=positive, nargs="+", default=[20, 40, 60],
                   help="which of the clusters 20×400×10, 40×800×20, 60×1200×30 (default all)")
    p.add_argument("--time-limit", type=float, default=1.2,
                   help="the MILP's time limit per round, seconds (default 1.2, the planner's)")
    p.add_argument("--time-limits", type=float, nargs="+",
                   default=list(experiments.TIME_LIMITS))
    p.add_argument("--collocations", type=float, nargs="+",
                   default=list(experiments.COLLOCATIONS))
    p.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    began = time.perf_counter()
    grid = experiments.Grid(
        rounds=args.rounds, seeds=tuple(args.seeds), varies=tuple(args.varies),
        budgets=tuple(args.budgets),
        clusters=tuple(c for c in experiments.CLUSTERS if c[0] in args.nodes),
        time_limit=args.time_limit, time_limits=tuple(args.time_limits),
        fig5_rounds=args.fig5_rounds, fig10_rounds=args.fig10_rounds,
        fig10_seeds=tuple(args.fig10_seeds),
        collocations=tuple(args.collocations))
    rows: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}

    def finished(name: str, new_rows: list[dict[str, Any]], wall: float) -> None:
        rows.extend(new_rows)
        seconds[name] = round(wall, 1)
        print(f"{name}: {len(new_rows)} rounds in {wall:.0f} s", file=sys.stderr, flush=True)
        _write(rows, args, grid, seconds, time.perf_counter() - began, final=False)

    for figure in ORDER:
        if figure in args.figures:
            experiments.FIGURES[figure](grid, finished)
    elapsed = time.perf_counter() - began
    summary = _write(rows, args, grid, seconds, elapsed, final=True)
    print(report.markdown(rows, summary))
    print(f"\n{len(rows)} rounds, {elapsed / 60:.1f} min in all; results in {args.out}")
    for figure, numbers in summary.items():
        if isinstance(numbers, dict):
            for goal, met in numbers.items():
                if goal.startswith("goal_"):
                    verdict = "not run" if met is None else "met" if met else "NOT met"
                    print(f"{figure}: {goal[5:]}: {verdict}")
    return 0


def _write(rows: list[dict[str, Any]], args: argparse.Namespace, grid: experiments.Grid,
           seconds: dict[str, float], elapsed: float, *, final: bool) -> dict[str, Any]:
    """Write what is done so far (so a long run that dies keeps its finished figures)."""
    summary = report.summary(rows)
    meta = {
        "benchmark": "albic",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "complete": final,
        "config": {
            "figures": args.figures, "rounds": grid.rounds, "seeds": list(grid.seeds),
            "varies": list(grid.varies), "budgets": list(grid.budgets),
            "clusters": [list(c) for c in grid.clusters], "time_limit": grid.time_limit,
            "time_limits": list(grid.time_limits), "fig5_rounds": grid.fig5_rounds,
            "fig10_rounds": grid.fig10_rounds, "fig10_seeds": list(grid.fig10_seeds),
            "collocations": list(grid.collocations),
            "drift": experiments.DRIFT, "serialisation": experiments.SERIALISATION,
        },
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "highspy": importlib.metadata.version("highspy"),
                    "nice": os.nice(0)},
        "figure_seconds": seconds,
        "elapsed_seconds": round(elapsed, 1),
        "summary": summary,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    report.write(rows, meta, args.out)
    report.write_summaries(rows, summary, args.out)
    if final:
        report.plot_all(rows, args.out)
    return summary


if __name__ == "__main__":
    sys.exit(main())
