"""``elastream plan cores``: Elasticutor's scheduler — cores per executor, and on which nodes.

The greedy allocation of Elasticutor §4.1 gives each elastic executor the fewest cores k_j
whose M/M/k Jackson network meets the latency target (eq. 1); Algorithm 1 of §4.2 then places
them on the nodes from the current assignment, moving little state and keeping data-intensive
executors on their home node.

Instance (``--instance FILE.json``)::

    {"executors": [{"rate": 900.0, "service_rate": 250.0, "state": 8e6,
                    "intensity": 1.2e6, "node": 0}, ...],
     "nodes": [8, 8, 8],
     "latency_target": 0.01,
     "current": [[2, 0, 0], ...],
     "phi": 512000}

``rate``: tuples/s arriving at the executor; ``service_rate``: tuples/s one core processes;
``state``: bytes of state; ``intensity``: its input plus output bytes/s; ``node``: its home
node (index into ``nodes``). ``nodes``: cores per node. ``latency_target``: seconds.
``current`` (optional, default no cores anywhere): cores of each node per executor, executors
× nodes. ``phi`` (optional, default 512000): the starting locality threshold, bytes/s per core
(doubled until a placement exists).

Output: ``status, cores (k_j per executor), expected_latency (seconds, the model's E[T] with
those cores), assignment (executors x nodes), migration_cost (bytes of state leaving nodes),
phi (the threshold the placement used), solve_seconds``. ``status``: ``infeasible`` when all
the nodes' cores cannot meet the target (``cores`` is then the best allocation within them, or
the stable minimum when even that exceeds them; the exit code is still 0, as for ``plan
migrate``), ``optimal`` when the target is met with the fewest cores and the placement moves
no state, ``feasible`` otherwise (Algorithm 1 is a heuristic). Without ``--json``, a table.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

from elastream.algorithms.elastic.assignment import DEFAULT_PHI, CoreAssignment, assign_cores
from elastream.algorithms.elastic.core_allocation import CoreAllocation, allocate_cores
from elastream.cli.json_input import read_instance_object
from elastream.cli.json_output import JsonAnswer
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

FIELDS = ("executors", "nodes", "latency_target", "current", "phi")
EXECUTOR_FIELDS = ("rate", "service_rate", "state", "intensity", "node")


def register(sub: Any) -> None:
    """Add ``cores`` to the ``plan`` sub-commands."""
    p = sub.add_parser("cores", help="cores per elastic executor and their nodes (Elasticutor)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--instance", required=True, type=Path, metavar="FILE.json",
                   help="the instance (see above)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=cores_command)


def cores_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream plan cores``."""
    inst = read_instance(args.instance)
    started = time.perf_counter()
    alloc = allocate_cores(inst["rates"], inst["service_rates"], inst["latency_target"],
                           sum(inst["nodes"]))
    placed = assign_cores(list(alloc.cores), inst["nodes"], inst["current"], state=inst["state"],
                          intensity=inst["intensity"], home=inst["home"], phi=inst["phi"])
    seconds = time.perf_counter() - started
    out = {"status": _status(alloc, placed).value, "cores": list(alloc.cores),
           "expected_latency": alloc.expected_latency
           if math.isfinite(alloc.expected_latency) else None,
           "assignment": [list(row) for row in placed.assignment],
           "migration_cost": placed.migration_cost, "phi": placed.phi,
           "solve_seconds": seconds}
    if args.json:
        return JsonAnswer(out)
    print(_table(inst, out))
    return 0


def _status(alloc: CoreAllocation, placed: CoreAssignment) -> PlanStatus:
    if PlanStatus.INFEASIBLE in (alloc.status, placed.status):
        return PlanStatus.INFEASIBLE
    if alloc.status is PlanStatus.OPTIMAL and placed.status is PlanStatus.OPTIMAL:
        return PlanStatus.OPTIMAL
    return PlanStatus.FEASIBLE


def read_instance(path: Path) -> dict[str, Any]:
    """The instance in ``path`` as the library's arguments.

    Every mistake is an :class:`OptionError` naming the field (``executors[2].rate``), the rule
    and the value; the library checks the rest (``current``'s shape, ``phi``).
    """
    data = read_instance_object(path, FIELDS, required=3)
    executors = data["executors"]
    if not isinstance(executors, list) or not executors:
        raise OptionError("executors", "must be a non-empty list of objects", executors)
    nodes = data["nodes"]
    if not isinstance(nodes, list) or not nodes:
        raise OptionError("nodes", "must be a non-empty list of core counts", nodes)
    for i, c in enumerate(nodes):
        rules.integer(f"nodes[{i}]", c, low=0, unit="cores")
    if sum(nodes) == 0:
        raise OptionError("nodes", "must have at least one core", nodes)
    columns: dict[str, list[Any]] = {name: [] for name in EXECUTOR_FIELDS}
    for j, e in enumerate(executors):
        if not isinstance(e, dict):
            raise OptionError(f"executors[{j}]", "must be a JSON object", e)
        for key in e:
            if key not in EXECUTOR_FIELDS:
                raise OptionError(f"executors[{j}].{key}", "is not an executor field (one of "
                                  f"{', '.join(EXECUTOR_FIELDS)})", e[key])
        for key in EXECUTOR_FIELDS:
            if key not in e:
                raise OptionError(f"executors[{j}].{key}", "is required", None)
            columns[key].append(_checked(f"executors[{j}].{key}", e[key], key, len(nodes)))
    current = data.get("current")
    if current is not None and (not isinstance(current, list)
                                or not all(isinstance(row, list) for row in current)):
        raise OptionError("current", "must be a list of lists (executors x nodes)", current)
    phi = rules.number("phi", data.get("phi", DEFAULT_PHI), above=0, unit="bytes/s per core")
    target = rules.number("latency_target", data["latency_target"], above=0, unit="seconds")
    return {"rates": columns["rate"], "service_rates": columns["service_rate"],
            "state": columns["state"], "intensity": columns["intensity"],
            "home": columns["node"], "nodes": nodes, "latency_target": target,
            "current": current, "phi": phi}


def _checked(where: str, value: Any, key: str, num_nodes: int) -> Any:
    if key == "node":
        return rules.integer(where, value, low=0, high=num_nodes - 1)
    return rules.number(where, value, above=0 if key == "service_rate" else None)


def _table(inst: dict[str, Any], out: dict[str, Any]) -> str:
    latency = out["expected_latency"]
    shown = "inf" if latency is None else f"{latency * 1000:.4g} ms"
    lines = [f"status {out['status']}   cores {sum(out['cores'])} of {sum(inst['nodes'])}   "
             f"E[T] {shown} (target {inst['latency_target'] * 1000:.4g} ms)   "
             f"migration {out['migration_cost']:.6g} B   phi {out['phi']:.6g} B/s   "
             f"solve {out['solve_seconds'] * 1000:.3g} ms",
             f"{'executor':>8} {'home':>5} {'rate':>10} {'cores':>6}  per node"]
    for j, (k, row) in enumerate(zip(out["cores"], out["assignment"], strict=True)):
        lines.append(f"{j:>8} {inst['home'][j]:>5} {inst['rates'][j]:>10.4g} {k:>6}  "
                     f"{' '.join(str(v) for v in row)}")
    return "\n".join(lines)
