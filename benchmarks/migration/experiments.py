"""The runs behind Figs. 12, 13, 15 and 17: each strategy replays the same migrations.

A *run* starts the operator at June's first node count and performs the next migrations of
June's hourly sequence, each with one strategy; a row per migration records its cost (state
moved, also in % of all state), the planner's wall time (``time.perf_counter`` around the call,
here and never inside the planners; SSM's calls are repeated 3 times and the least kept, the
first too), the load ratio and whether it meets τ.

- ``ssm``, ``mtm``, ``storm``: contiguous plans from the planners (:mod:`elastream.algorithms.
  migration`), each migration starting from the intervals the previous one left. The start is
  the work-balanced partitioning for the first count, made to meet τ by one SSM step.
- ``mtm``: PMC is pre-computed once per (m, τ) over the SSM closure of the start (at most
  ``limit`` states), with June's MTM estimated from May; each γ reuses the migration costs.
  Its per-block work runs through builtins ``map`` or, with ``--pmc-engine spark``, Spark.
- ``redist``: Gedik's Redist from its own previous assignment (:func:`redist.assign`), starting
  from Redist's function for the first count built over Storm's ranges.
- ``ch``: consistent hashing, nodes ``0 … n−1``; every seed 0–99 replays the sequence and the
  rows hold the mean over seeds (the paper's 100 runs).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from elastream.algorithms.migration import ch, mtm, pmc, redist, ssm, storm
from elastream.algorithms.migration.intervals import (
    MigrationInstance,
    MigrationPlan,
    balanced_bounds,
    intervals_of,
    load_ratio,
    migration_cost,
)
from elastream.core.plan import PlanStatus

Row = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One workload: tasks, the migrations to replay, the MTM."""

    work: np.ndarray
    state: np.ndarray
    start: int
    targets: tuple[int, ...]
    mtm: np.ndarray

    @property
    def m(self) -> int:
        return int(self.work.size)


def feasible(case: Case, tau: float) -> bool:
    """Whether every count of the run has a partitioning meeting τ."""
    total = case.work.sum()
    return not any(ssm.infeasibility(case.work, (1 + tau) * total / n, n, tau)
                   for n in {case.start, *case.targets})


def start_intervals(case: Case, tau: float) -> tuple[tuple[int, int], ...]:
    """The work-balanced partitioning for the first count, fixed by SSM to meet τ."""
    bounds = balanced_bounds(case.work, case.start)
    inst = MigrationInstance(case.work, case.state, intervals_of(bounds), case.start, tau)
    return ssm.plan(inst).intervals


def contiguous_run(case: Case, tau: float, name: str,
                   planner: Callable[[MigrationInstance], MigrationPlan],
                   first: tuple[tuple[int, int], ...], repeats: int = 1,
                   **labels: Any) -> list[Row]:
    """Replay the migrations with a planner that keeps intervals contiguous.

    Each call is timed ``repeats`` times: ``solve_seconds`` is the least (the machine is shared),
    ``first_call_seconds`` the first.
    """
    rows, current, before = [], first, case.start
    total_state = float(case.state.sum())
    for step, target in enumerate(case.targets, start=1):
        inst = MigrationInstance(case.work, case.state, current, target, tau)
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            plan = planner(inst)
            times.append(time.perf_counter() - began)
        seconds = min(times)
        if plan.status is PlanStatus.INFEASIBLE and not plan.intervals:
            raise RuntimeError(f"{name}: migration {step} has no plan: {plan.reason}")
        row = _row(name, case, tau, step, before, target, plan.cost, total_state, seconds,
                   plan.max_load_ratio, plan.meets_tau, **labels)
        row["first_call_seconds"] = times[0]
        if "cost_best_matching" in plan.details:  # storm: its intervals on the best nodes
            row["cost_best_matching_pct"] = 100 * plan.details["cost_best_matching"] \
                / total_state
        rows.append(row)
        current, before = plan.intervals, target
    return rows


def ssm_run(case: Case, tau: float, repeats: int = 3) -> list[Row]:
    return contiguous_run(case, tau, "ssm", ssm.plan, start_intervals(case, tau), repeats)


def storm_run(case: Case, tau: float) -> list[Row]:
    first = intervals_of(storm.storm_bounds(case.m, case.start))
    return contiguous_run(case, tau, "storm", storm.plan, first)


@dataclass(frozen=True)
class Pmc:
    """A pre-computed PMC and what it took."""

    projected: pmc.ProjectedCosts
    costs: np.ndarray
    space_seconds: float
    cost_seconds: float
    iteration_seconds: float


def precompute(case: Case, tau: float, gamma: float, limit: int,
               reuse: Pmc | None = None, map_fn: pmc.MapFn = map) -> Pmc:
    """PMC over the SSM closure of the start (or ``reuse``'s space and costs, for another γ).

    ``map_fn`` runs the migration costs and the value-iteration sweeps (builtins ``map``, or
    the Spark map of ``run.py --pmc-engine spark``); the closure is built here either way.
    """
    matrix = pmc.check_mtm(case.mtm)
    if reuse is None:
        began = time.perf_counter()
        bounds = np.array([0, *(ub for _, ub in start_intervals(case, tau))])
        space = pmc.closure_space(case.work, case.state, tau, matrix,
                                  [(case.start, bounds)], limit=limit)
        built = time.perf_counter()
        costs = pmc.migration_costs(space, case.state, map_fn=map_fn)
        priced = time.perf_counter()
        space_seconds, cost_seconds = built - began, priced - built
    else:
        space, costs = reuse.projected.space, reuse.costs
        space_seconds, cost_seconds = reuse.space_seconds, reuse.cost_seconds
        priced = time.perf_counter()
    projected = pmc.precompute_pmc(space, case.work, case.state, tau, matrix, gamma,
                                   map_fn=map_fn, costs=costs)
    return Pmc(projected, costs, space_seconds, cost_seconds, time.perf_counter() - priced)


def mtm_run(case: Case, tau: float, pre: Pmc) -> list[Row]:
    options = mtm.MtmOptions(mtm=pre.projected.mtm, gamma=pre.projected.gamma,
                             projected=pre.projected)
    rows = contiguous_run(case, tau, "mtm", lambda inst: mtm.plan(inst, options=options),
                          start_intervals(case, tau), gamma=pre.projected.gamma)
    return rows


def redist_run(case: Case, tau: float) -> list[Row]:
    theta = max(tau, redist.MIN_THETA)
    storm_start = np.repeat(np.arange(case.start),
                            np.diff(storm.storm_bounds(case.m, case.start)))
    current = redist.assign(case.work, case.state, storm_start, case.start, theta=theta)
    rows, before, total_state = [], case.start, float(case.state.sum())
    for step, target in enumerate(case.targets, start=1):
        began = time.perf_counter()
        nxt = redist.assign(case.work, case.state, current, target, theta=theta)
        seconds = time.perf_counter() - began
        ratio = load_ratio(nxt, case.work, target)
        rows.append(_row("redist", case, tau, step, before, target,
                         migration_cost(current, nxt, case.state), total_state, seconds, ratio,
                         ratio <= 1 + tau + 1e-9))
        current, before = nxt, target
    return rows


def ch_run(case: Case, tau: float, seeds: int) -> list[Row]:
    """Mean over seeds ``0 … seeds−1`` of every migration's cost; ``meets_tau`` is the share
    of seeds whose plan meets τ."""
    counts = sorted({case.start, *case.targets})
    total_state = float(case.state.sum())
    cost = np.zeros((seeds, len(case.targets)))
    ratio = np.zeros_like(cost)
    seconds = np.zeros_like(cost)
    for seed in range(seeds):
        owner = {n: ch.assignment(case.m, n, seed=seed) for n in counts}
        for k, (a, b) in enumerate(zip((case.start, *case.targets), case.targets,
                                       strict=False)):
            began = time.perf_counter()
            nxt = ch.assignment(case.m, b, seed=seed)
            seconds[seed, k] = time.perf_counter() - began
            cost[seed, k] = migration_cost(owner[a], nxt, case.state)
            ratio[seed, k] = load_ratio(nxt, case.work, b)
    rows = []
    for k, target in enumerate(case.targets):
        before = case.start if k == 0 else case.targets[k - 1]
        rows.append(_row("ch", case, tau, k + 1, before, target, float(cost[:, k].mean()),
                         total_state, float(seconds[:, k].mean()), float(ratio[:, k].mean()),
                         float((ratio[:, k] <= 1 + tau + 1e-9).mean()), seeds=seeds))
    return rows


def _row(strategy: str, case: Case, tau: float, step: int, before: int, target: int,
         cost: float, total_state: float, seconds: float, ratio: float, meets: float,
         **labels: Any) -> Row:
    return {"strategy": strategy, "m": case.m, "tau": tau, "gamma": labels.get("gamma", ""),
            "seeds": labels.get("seeds", ""), "step": step, "nodes_from": before,
            "nodes_to": target, "cost": cost, "cost_pct": 100 * cost / total_state,
            "solve_seconds": seconds, "max_load_ratio": ratio, "meets_tau": float(meets),
            "first_call_seconds": seconds, "cost_best_matching_pct": ""}
