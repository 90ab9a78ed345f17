"""What each ALBIC figure runs on the round simulator (``elastream.runtimes.sim.rounds``).

* **2-4** (Figs. 2–4): the three §5.1 clusters, maxMigrations 10–40, varies 10/20/40; Flux and
  the MILP each plan ``rounds`` rounds from the same instance with the same drift (§5.3's ±2%
  on 20% of the nodes per round); one row per round.
* **time** (Figs. 2–4's solving time): round 1 only, varies 40, the MILP at several time limits.
* **5** (Fig. 5): the largest cluster, maxMigrations 20, ten nodes marked for removal, one (1OL)
  or five (5OL) other nodes at 100% load; integrated scale-in (the MILP with B) against separate
  (drain B evenly first, then the MILP balances the rest).
* **10-11** (Figs. 10–11): ALBIC against COLA with traffic (x% of the key groups One-To-One);
  only when planners ``albic`` and ``cola`` are registered.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from elastream.control.planners import PLANNERS
from elastream.runtimes.sim.rounds import RoundsResult, run_rounds
from elastream.runtimes.sim.rounds_instance import Instance, albic_instance, overload

CLUSTERS = ((20, 400, 10), (40, 800, 20), (60, 1200, 30))
"""§5.1: (nodes, key groups, operators) of Figs. 2, 3 and 4."""
BUDGETS = (10, 20, 30, 40)
VARIES = (10.0, 20.0, 40.0)
DRIFT = 2.0
"""§5.3: "for each iteration of solving, the load of 20% of the nodes is adjusted by a
percentage, randomly chosen from the range [−2%, 2%]"."""
TIME_LIMITS = (0.1, 0.3, 1.2, 5.0)
FIG5_BUDGET, FIG5_REMOVED, FIG5_OVERLOADED = 20, 10, (1, 5)
FIG10_CLUSTER, FIG10_BUDGET = (40, 800, 20), 20
COLLOCATIONS = (0.0, 25.0, 50.0, 75.0, 100.0)
FIG11_COLLOCATION = 50.0
SERIALISATION = 0.1
"""Load per unit of cross-node traffic at each end (Figs. 10–11; the paper gives none)."""
COLLOCATION_VARIES = 10.0

Emit = Callable[[str, list[dict[str, Any]], float], None]


@dataclass(frozen=True)
class Grid:
    """The sizes of one benchmark run (``run.py``'s options)."""

    rounds: int
    seeds: tuple[int, ...]
    varies: tuple[float, ...]
    budgets: tuple[int, ...]
    clusters: tuple[tuple[int, int, int], ...]
    time_limit: float
    time_limits: tuple[float, ...]
    fig5_rounds: int
    fig10_rounds: int
    fig10_seeds: tuple[int, ...]
    collocations: tuple[float, ...]


def rows_of(result: RoundsResult, **labels: Any) -> list[dict[str, Any]]:
    """One row per round: the labels, then every field of the round's record."""
    out = []
    for record in result.records:
        row = dict(labels)
        row.update(vars(record))
        out.append(row)
    return out


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def fig2_4(grid: Grid, emit: Emit) -> None:
    """MILP vs Flux over rounds, per cluster, budget, varies and seed."""
    for nodes, kgs, ops in grid.clusters:
        began, rows = time.perf_counter(), []
        for varies in grid.varies:
            for seed in grid.seeds:
                inst = albic_instance(nodes=nodes, key_groups=kgs, operators=ops,
                                      varies=varies, seed=seed)
                for budget in grid.budgets:
                    for algo in ("flux", "milp"):
                        settings = {"max_moves": budget, "time_limit": grid.time_limit,
                                    "seed": seed}
                        result = run_rounds(inst, algo, settings=settings, rounds=grid.rounds,
                                            drift=DRIFT, seed=seed)
                        rows += rows_of(result, figure="2-4", nodes_initial=nodes,
                                        key_groups=kgs, operators=ops, max_migrations=budget,
                                        varies=varies, drift=DRIFT, collocation=None,
                                        seed=seed, variant="", time_limit=grid.time_limit)
            _progress(f"  figs 2-4: {nodes} nodes, varies {varies:g} done")
        emit(f"2-4/{nodes}", rows, time.perf_counter() - began)


def fig2_4_time(grid: Grid, emit: Emit) -> None:
    """Round 1 at varies 40: load distance against the MILP's time limit (and Flux's)."""
    began, rows = time.perf_counter(), []
    varies = max(grid.varies)
    for nodes, kgs, ops in grid.clusters:
        inst = albic_instance(nodes=nodes, key_groups=kgs, operators=ops, varies=varies,
                              seed=grid.seeds[0])
        for budget in grid.budgets:
            labels = {"figure": "time", "nodes_initial": nodes, "key_groups": kgs,
                      "operators": ops, "max_migrations": budget, "varies": varies,
                      "drift": 0.0, "collocation": None, "seed": grid.seeds[0], "variant": ""}
            flux = run_rounds(inst, "flux", settings={"max_moves": budget})
            rows += rows_of(flux, **labels, time_limit=None)
            for limit in grid.time_limits:
                result = run_rounds(inst, "milp", settings={"max_moves": budget,
                                                            "time_limit": limit,
                                                            "seed": grid.seeds[0]})
                rows += rows_of(result, **labels, time_limit=limit)
    emit("time", rows, time.perf_counter() - began)


def fig5_instance(overloaded: int, seed: int) -> tuple[Instance, list[str]]:
    """60 × 1200 × 30 at 50% load; 10 random nodes in B, ``overloaded`` others at 100%."""
    nodes, kgs, ops = CLUSTERS[-1]
    inst = albic_instance(nodes=nodes, key_groups=kgs, operators=ops, varies=0.0, seed=seed)
    picked = np.random.default_rng(seed).choice(nodes, FIG5_REMOVED + overloaded,
                                                replace=False)
    removed = [inst.node_ids[i] for i in picked[:FIG5_REMOVED]]
    return overload(inst, picked[FIG5_REMOVED:].tolist(), level=100.0).marked(removed), removed


def fig5(grid: Grid, emit: Emit) -> None:
    """Integrated vs separate scale-in."""
    began, rows = time.perf_counter(), []
    nodes, kgs, ops = CLUSTERS[-1]
    for overloaded in FIG5_OVERLOADED:
        for seed in grid.seeds:
            inst, _ = fig5_instance(overloaded, seed)
            for mode in ("integrated", "separate"):
                settings = {"max_moves": FIG5_BUDGET, "time_limit": grid.time_limit,
                            "seed": seed}
                result = run_rounds(inst, "milp", settings=settings, rounds=grid.fig5_rounds,
                                    drift=DRIFT, seed=seed, scale_in=mode)
                rows += rows_of(result, figure="5", nodes_initial=nodes, key_groups=kgs,
                                operators=ops, max_migrations=FIG5_BUDGET, varies=0.0,
                                drift=DRIFT, collocation=None, seed=seed,
                                variant=f"{overloaded}OL {mode}", time_limit=grid.time_limit)
    emit("5", rows, time.perf_counter() - began)


def collocation_ready() -> list[str]:
    """The planners Figs. 10–11 need that are not registered."""
    return [name for name in ("albic", "cola") if name not in PLANNERS]


def fig10_11(grid: Grid, emit: Emit) -> None:
    """ALBIC vs COLA (and the MILP, which ignores traffic) with One-To-One traffic."""
    missing = collocation_ready()
    if missing:
        _progress(f"  figs 10-11 skipped: planner(s) {', '.join(missing)} not registered "
                  f"(elastream.control.planners has {', '.join(PLANNERS)})")
        return
    runs: list[tuple[str, tuple[int, int, int], Sequence[float]]] = [
        ("10", FIG10_CLUSTER, grid.collocations),
        *[("11", cluster, (FIG11_COLLOCATION,)) for cluster in grid.clusters]]
    for figure, (nodes, kgs, ops), collocations in runs:
        began, rows = time.perf_counter(), []
        for collocation in collocations:
            for seed in grid.fig10_seeds:
                inst = albic_instance(nodes=nodes, key_groups=kgs, operators=ops,
                                      varies=COLLOCATION_VARIES, collocation=collocation,
                                      seed=seed)
                for algo in ("albic", "cola", "milp"):
                    settings = {"max_moves": FIG10_BUDGET, "time_limit": grid.time_limit,
                                "seed": seed}
                    result = run_rounds(inst, algo, settings=settings,
                                        rounds=grid.fig10_rounds, drift=DRIFT,
                                        serialisation=SERIALISATION, seed=seed)
                    rows += rows_of(result, figure=figure, nodes_initial=nodes,
                                    key_groups=kgs, operators=ops,
                                    max_migrations=FIG10_BUDGET, varies=COLLOCATION_VARIES,
                                    drift=DRIFT, collocation=collocation, seed=seed,
                                    variant="", time_limit=grid.time_limit)
            _progress(f"  fig {figure}: {nodes} nodes, collocation {collocation:g} done")
        emit(f"{figure}/{nodes}", rows, time.perf_counter() - began)


FIGURES: dict[str, Callable[[Grid, Emit], None]] = {
    "2-4": fig2_4, "time": fig2_4_time, "5": fig5, "10-11": fig10_11}
