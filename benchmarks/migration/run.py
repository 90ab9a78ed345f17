"""Ding et al.'s evaluation of task assignment (§6: Figs. 12, 13, 15, 17) on the flights stream.

Single-step migration (SSM), MTM-aware migration, consistent hashing (CH), Storm's default
scheduler and Gedik's Redist replay the same 100 migrations — June 2001's hourly flight counts
mapped onto 8–16 nodes, the MTM estimated from May (workload.py) — over tasks made of flight
routes. See experiments.py for each strategy and README.md for the results beside the paper's.

Writes results/results.csv (one row per strategy and migration), results/results.json (set-up,
machine, summary; the rows are only in the CSV), results/summary.json, results/summary.md and
one PNG per figure. Everything runs in this one process (with ``--pmc-engine spark``, PMC's
per-block work runs as jobs on a local Spark session); run it niced on a shared machine:

    nice -n 10 .venv/bin/python benchmarks/migration/run.py [--figures F…] [--migrations K]
        [--taus T…] [--tasks M…] [--gammas G…] [--ch-seeds S] [--limit N]
        [--pmc-engine local|spark] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import experiments
import numpy as np
import report
import workload

from elastream.algorithms.migration import ssm
from elastream.algorithms.migration.intervals import MigrationInstance
from elastream.algorithms.migration.pmc import MapFn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import positive

HERE = Path(__file__).resolve().parent
ORDER = ("12-13", "15", "17", "timing")
TAUS = (0.2, 0.3, 0.4, 0.6, 0.8, 1.0, 1.2)
TASKS = (16, 32, 64, 128, 256, 512, 1024)
FIG15_TAUS = (0.2, 0.4)
GAMMAS = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95)
DEFAULT_M, DEFAULT_TAU, DEFAULT_GAMMA = 64, 0.2, 0.8
TIMING_REPEATS = 5


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--figures", nargs="+", choices=ORDER, default=list(ORDER),
                   help="which figures to run (default all; 'timing': SSM's solve time at "
                        "m = 64 and 1024 for 16 nodes, best of 5)")
    p.add_argument("--migrations", type=positive, default=100,
                   help="migrations replayed per run (default 100, the paper's)")
    p.add_argument("--taus", type=float, nargs="+", default=list(TAUS),
                   help="Fig. 12-13's tau (default 0.2 0.3 0.4 0.6 0.8 1.0 1.2)")
    p.add_argument("--tasks", type=positive, nargs="+", default=list(TASKS),
                   help="Fig. 15's m (default 16 … 1024)")
    p.add_argument("--gammas", type=float, nargs="+", default=list(GAMMAS),
                   help="Fig. 17's gamma (default 0 0.2 0.4 0.6 0.8 0.9 0.95)")
    p.add_argument("--ch-seeds", type=positive, default=100,
                   help="consistent-hashing runs averaged (default 100, the paper's)")
    p.add_argument("--limit", type=positive, default=3000,
                   help="most states of PMC's SSM-closure space (default 3000)")
    p.add_argument("--pmc-engine", choices=("local", "spark"), default="local",
                   help="where PMC's migration costs and sweeps run: local (this process, "
                        "default) or spark (a local Spark session, local[2])")
    p.add_argument("--data-dir", default=None,
                   help="folder of flights-3m.parquet (default $ELASTREAM_DATA_DIR, else the "
                        "repository's data/)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    with ExitStack() as stack:
        return _main(args, stack)


def _main(args: argparse.Namespace, stack: ExitStack) -> int:
    began = time.perf_counter()
    map_fn, spark_start = _pmc_map(args.pmc_engine, stack)
    stream = workload.load(args.data_dir)
    matrix = workload.transition_matrix(stream.nodes_train)
    start, targets = workload.migrations(stream.nodes_eval, args.migrations)
    rows: list[dict[str, Any]] = []
    meta: dict[str, Any] = {"pmc": [], "skipped": [], "timing": []}
    seconds: dict[str, float] = {}

    def case(m: int) -> experiments.Case:
        work, state = workload.tasks(stream, m)
        return experiments.Case(work, state, start, tuple(targets), matrix)

    def finished(name: str, tic: float) -> None:
        seconds[name] = round(time.perf_counter() - tic, 1)
        print(f"fig {name}: {seconds[name]:.0f} s", file=sys.stderr, flush=True)

    if "12-13" in args.figures:
        tic, c = time.perf_counter(), case(DEFAULT_M)
        for tau in args.taus:
            if not experiments.feasible(c, tau):
                meta["skipped"].append({"figure": "12", "m": c.m, "tau": tau})
                continue
            pre = experiments.precompute(c, tau, DEFAULT_GAMMA, args.limit, map_fn=map_fn)
            meta["pmc"].append(_pmc_meta("12", c.m, tau, pre))
            for fig_rows in (experiments.ssm_run(c, tau), experiments.mtm_run(c, tau, pre),
                             experiments.storm_run(c, tau), experiments.redist_run(c, tau),
                             experiments.ch_run(c, tau, args.ch_seeds)):
                rows.extend({"figure": "12", **r} for r in fig_rows)
            print(f"  tau {tau}: {len(pre.projected.space)} PMC states", file=sys.stderr)
        finished("12-13", tic)
    if "15" in args.figures:
        tic = time.perf_counter()
        for m in args.tasks:
            c = case(m)
            for tau in FIG15_TAUS:
                if not experiments.feasible(c, tau):
                    meta["skipped"].append({"figure": "15", "m": m, "tau": tau})
                    continue
                rows.extend({"figure": "15", **r} for r in experiments.ssm_run(c, tau))
                rows.extend({"figure": "15", **r} for r in experiments.storm_run(c, tau))
        finished("15", tic)
    if "17" in args.figures:
        tic, c = time.perf_counter(), case(DEFAULT_M)
        rows.extend({"figure": "17", **r} for r in experiments.ssm_run(c, DEFAULT_TAU))
        reuse = None
        for gamma in args.gammas:
            pre = experiments.precompute(c, DEFAULT_TAU, gamma, args.limit, reuse, map_fn)
            reuse = pre
            meta["pmc"].append(_pmc_meta("17", c.m, DEFAULT_TAU, pre))
            rows.extend({"figure": "17", **r} for r in experiments.mtm_run(c, DEFAULT_TAU, pre))
        finished("17", tic)
    if "timing" in args.figures:
        tic = time.perf_counter()
        for m in (64, 1024):
            meta["timing"].extend(_timing(case(m), DEFAULT_TAU))
        finished("timing", tic)
    elapsed = time.perf_counter() - began
    meta.update(_setup(args, stream, matrix, start, targets, seconds, elapsed))
    meta["spark_start_seconds"] = spark_start
    summary = report.write_all(rows, meta, args.out)
    print(report.markdown(summary))
    print(f"\n{len(rows)} rows, {elapsed / 60:.1f} min in all; results in {args.out}")
    for goal, verdict in summary["goals"].items():
        shown = "not run" if verdict["met"] is None else "met" if verdict["met"] else "NOT met"
        print(f"goal {goal}: {shown} ({verdict['measured']})")
    return 0


def _pmc_map(engine: str, stack: ExitStack) -> tuple[MapFn, float | None]:
    """PMC's map for ``engine`` and the seconds Spark took to start (None when local)."""
    if engine == "local":
        return map, None
    from elastream.runtimes.spark.pmc_map import spark_map

    tic = time.perf_counter()
    smap = stack.enter_context(spark_map())
    seconds = round(time.perf_counter() - tic, 1)
    print(f"spark: started in {seconds:.0f} s", file=sys.stderr, flush=True)
    return smap, seconds


def _pmc_meta(figure: str, m: int, tau: float, pre: experiments.Pmc) -> dict[str, Any]:
    p = pre.projected
    return {"figure": figure, "m": m, "tau": tau, "gamma": p.gamma, "states": len(p.space),
            "closed": p.space.closed, "iterations": p.iterations, "residual": p.residual,
            "converged": p.converged, "space_seconds": round(pre.space_seconds, 3),
            "cost_seconds": round(pre.cost_seconds, 3),
            "iteration_seconds": round(pre.iteration_seconds, 3),
            "states_per_count": {int(c): int((p.space.counts == c).sum())
                                 for c in np.unique(p.space.counts)}}


def _timing(c: experiments.Case, tau: float) -> list[dict[str, Any]]:
    """SSM's best-of-5 and single-call time on every migration of the run that goes to 16."""
    out, current = [], experiments.start_intervals(c, tau)
    for step, target in enumerate(c.targets, start=1):
        inst = MigrationInstance(c.work, c.state, current, target, tau)
        times = []
        for _ in range(TIMING_REPEATS):
            tic = time.perf_counter()
            plan = ssm.plan(inst)
            times.append(time.perf_counter() - tic)
        if target == 16:
            out.append({"m": c.m, "tau": tau, "step": step, "nodes_from": inst.n,
                        "nodes_to": target, "first_seconds": times[0],
                        "best_seconds": min(times), "band": plan.details["band"]})
        current = plan.intervals
    return out


def _setup(args: argparse.Namespace, stream: workload.Stream, matrix: np.ndarray, start: int,
           targets: list[int], seconds: dict[str, float], elapsed: float) -> dict[str, Any]:
    return {
        "benchmark": "migration",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "config": {"figures": args.figures, "migrations": args.migrations, "taus": args.taus,
                   "tasks": args.tasks, "fig15_taus": list(FIG15_TAUS),
                   "gammas": args.gammas, "ch_seeds": args.ch_seeds, "limit": args.limit,
                   "pmc_engine": args.pmc_engine,
                   "default_m": DEFAULT_M, "default_tau": DEFAULT_TAU,
                   "default_gamma": DEFAULT_GAMMA},
        "workload": {"routes": stream.routes, "train_hours": stream.hours_train,
                     "start_nodes": start, "targets": targets,
                     "june_migrations": int((stream.nodes_eval[1:]
                                             != stream.nodes_eval[:-1]).sum()),
                     "mtm_8_16": np.round(matrix[7:16, 7:16], 4).tolist(),
                     "nodes_may": stream.nodes_train.tolist(),
                     "nodes_june": stream.nodes_eval.tolist()},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "nice": os.nice(0)},
        "figure_seconds": seconds,
        "elapsed_seconds": round(elapsed, 1),
    }


if __name__ == "__main__":
    sys.exit(main())
