"""``elastream plan migrate``: where an operator's tasks go when its node count changes.

Plans one migration of Ding et al.'s operator state migration problem with any registered
planner (``--algo``): ssm (optimal single step), oms (optimal for a known sequence of node
counts), mtm (MTM-aware), and the baselines ch (consistent hashing), storm (equal ranges) and
redist (Gedik's Redist).

Instance (``--instance FILE.json``)::

    {"work": [w_1, ..., w_m], "state": [s_1, ..., s_m],
     "intervals": [[0, 3], [3, 8], ...], "target_nodes": 4, "tau": 0.2,
     "mtm": [[...], ...], "gamma": 0.8}

``work``/``state``: per task, finite and >= 0 (work summing to more than 0); the migration cost
is the state moved. ``intervals``: the current nodes' task intervals [lb, ub), half-open, in task
order, from 0 to m (current node i holds intervals[i]). ``target_nodes``: n' >= 1 (for oms, a
list [n_1, n_2, ...] of the known sequence). ``tau``: every node's work must stay within
(1+tau)*W/n'. ``mtm`` (mtm only, required there): the migration transition matrix, row and
column i standing for i+1 nodes, mtm[i][j] the probability that the next migration goes from
i+1 to j+1 nodes; rows sum to 1 or are all 0 (a count never left); at least n' x n'. ``gamma``
(mtm only, default 0.8): discount of future migrations, in [0, 1).

Output: ``algo, status (optimal | feasible | infeasible), intervals (one per target node, in task
order; ch and redist scatter tasks and list one interval per run of tasks on a node),
node_of_interval (ids 0..n-1 are current nodes, ids >= n new nodes; current nodes not listed are
removed), cost (state moved), max_load_ratio (max node work / (W/n')), solve_seconds`` (the
wall time of the planner call; for mtm it includes pre-computing the projected costs); an
infeasible status adds ``reason`` (cost and max_load_ratio are null when no plan exists; a
baseline's plan over tau is kept). oms adds ``sequence``: every step's plan, each relative to
the one before. Without ``--json``, a short table.

``--pmc-engine`` (mtm only): where mtm pre-computes the projected migration costs — ``local``
(default: this process, builtins ``map``) or ``spark`` (the per-block work as Spark jobs on a
local session, as the paper ran PMC; the plan is the same). Spark is started before the planner
runs, so ``solve_seconds`` does not include its start. If it cannot start, the command fails
with a one-line error (exit 2) and does not fall back to local: a run asked to use Spark does
not silently measure something else. With another ``--algo``, ``--pmc-engine spark`` is rejected
(nothing is pre-computed).
"""

from __future__ import annotations

import argparse
import math
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from elastream.algorithms.migration import oms
from elastream.algorithms.migration.intervals import MigrationInstance, MigrationPlan
from elastream.algorithms.migration.pmc import MapFn
from elastream.algorithms.migration.registry import PLANNERS, run
from elastream.cli.json_input import read_instance_object
from elastream.cli.json_output import JsonAnswer
from elastream.core import rules
from elastream.core.errors import ElastreamError, OptionError

ENGINES = ("local", "spark")
FIELDS = ("work", "state", "intervals", "target_nodes", "tau", "mtm", "gamma")


def register(sub: Any) -> None:
    """Add ``migrate`` to the ``plan`` sub-commands."""
    p = sub.add_parser("migrate", help="plan a migration of task intervals to n' nodes",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algo", required=True, metavar="A",
                   help=f"a migration planner ({', '.join(PLANNERS)})")
    p.add_argument("--instance", required=True, type=Path, metavar="FILE.json",
                   help="the instance (see above)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--pmc-engine", choices=ENGINES, default="local",
                   help="where --algo mtm pre-computes projected costs: local (default) or "
                        "spark (a local Spark session; fails if Spark cannot start)")
    p.set_defaults(handler=migrate_command)


def migrate_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream plan migrate``."""
    rules.choice("--algo", args.algo, tuple(PLANNERS))
    if args.pmc_engine != "local" and args.algo != "mtm":
        raise OptionError("--pmc-engine", "must be local unless --algo mtm (only mtm "
                          "pre-computes projected costs)", args.pmc_engine)
    instance, settings = read_instance(args.instance, args.algo)
    sequence: list[dict[str, Any]] | None = None
    with ExitStack() as stack:
        if args.algo == "mtm" and args.pmc_engine == "spark":
            settings["map_fn"] = _spark_map(stack)
        started = time.perf_counter()
        if args.algo == "oms":  # the whole sequence, not just its first step
            seq = oms.plan_sequence(instance, settings.get("then", ()))
            plan = oms.first_step(seq)
            sequence = [{k: v for k, v in s.contract().items()
                         if k not in ("algo", "solve_seconds")} for s in seq.steps]
        else:
            plan = run(args.algo, instance, **settings)
        plan = replace(plan, solve_seconds=time.perf_counter() - started)
    out = plan.contract()
    if sequence:
        out["sequence"] = sequence
    if args.json:
        return JsonAnswer(out)
    print(_table(instance, plan, sequence))
    return 0


def _spark_map(stack: ExitStack) -> MapFn:
    """PMC's map on the local Spark session, released when ``stack`` closes."""
    from elastream.runtimes.spark.pmc_map import SparkStartError, spark_map

    try:
        return stack.enter_context(spark_map())
    except SparkStartError as error:
        raise ElastreamError(f"--pmc-engine spark: {error}; use --pmc-engine local") \
            from None


def read_instance(path: Path, algo: str) -> tuple[MigrationInstance, dict[str, Any]]:
    """The instance in ``path`` and the planner settings it carries.

    Every mistake is an :class:`OptionError` naming the field, the rule and the value.
    """
    data = read_instance_object(path, FIELDS, required=5)
    work, state = _numbers(data, "work"), _numbers(data, "state")
    targets = data["target_nodes"]
    settings: dict[str, Any] = {}
    if algo == "oms" and isinstance(targets, list):
        if not targets:
            raise OptionError("target_nodes", "must list at least one node count", targets)
        targets, settings["then"] = targets[0], tuple(targets[1:])
    elif isinstance(targets, list):
        raise OptionError("target_nodes", "must be an integer >= 1 (a list only with --algo "
                          "oms)", targets)
    instance = MigrationInstance(np.array(work), np.array(state), data["intervals"], targets,
                                 data["tau"])
    if algo == "mtm":
        if "mtm" not in data:
            raise OptionError("mtm", "is required in the instance for --algo mtm", None)
        settings["mtm"] = data["mtm"]
        if "gamma" in data:
            settings["gamma"] = data["gamma"]
    return instance, settings


def _numbers(data: dict[str, Any], name: str) -> list[float]:
    values = data[name]
    if not isinstance(values, list) or not values:
        raise OptionError(name, "must be a non-empty list of numbers", values)
    return [rules.number(f"{name}[{i}]", v, low=None) for i, v in enumerate(values)]


def _table(instance: MigrationInstance, plan: MigrationPlan,
           sequence: list[dict[str, Any]] | None) -> str:
    lines = [f"algo {plan.algo}   status {plan.status.value}   n {instance.n} -> n' "
             f"{instance.target_nodes}   tau {instance.tau:g}   "
             f"solve {plan.solve_seconds * 1000:.3g} ms"]
    if plan.reason:
        lines.append(f"reason: {plan.reason}")
    if not plan.intervals:
        return "\n".join(lines)
    share = 100 * plan.cost / instance.total_state if instance.total_state else 0.0
    lines.append(f"cost {plan.cost:.6g} ({share:.3g}% of all state)   max_load_ratio "
                 f"{plan.max_load_ratio:.4g} (1 + tau = {1 + instance.tau:.4g})")
    work = np.r_[0.0, np.cumsum(instance.work)]
    state = np.r_[0.0, np.cumsum(instance.state)]
    lines.append(f"{'interval':>14} {'node':>9} {'work':>10} {'state':>10}")
    for (lb, ub), node in zip(plan.intervals, plan.node_of_interval, strict=True):
        label = f"{node}{' new' if node >= instance.n else ''}"
        lines.append(f"{f'[{lb}, {ub})':>14} {label:>9} {work[ub] - work[lb]:>10.4g} "
                     f"{state[ub] - state[lb]:>10.4g}")
    if sequence:
        costs = [s["cost"] for s in sequence]
        total = sum(c for c in costs if c is not None and math.isfinite(c))
        lines.append(f"sequence: step costs {costs}, total {total:.6g}")
    return "\n".join(lines)
