"""``elastream plan balance``: re-plan key groups over nodes, round by round, with any planner.

The cluster is either a snapshot file or ALBIC §5.1's synthetic instance. Each round the planner
(``--algo``, any registered planner: hash, flux, fish, milp, …) moves at most ``--max-migrations``
key groups (or ``--max-migration-cost`` of state), nodes in ``--remove`` are drained and
terminated once empty, and the round is measured on the new assignment.

Synthetic (``--nodes N --key-groups K``): O operators (default 1) of consecutive key groups, each
node at 50% load; round 1 is ALBIC §5.1's instance with ``varies = V`` (20% of the nodes ±V/2
percent, default V = 10), and every later round 20% of the nodes change by a percentage drawn
from [−V, V]. ``--collocation PCT``: PCT% of each operator's key groups send One-To-One to a key
group of the next operator, the others to all of them; a tuple crossing nodes costs 0.1 of a
tuple's processing at each end. Node ids are n0 … n{N−1}, key-group ids kg0 … kg{K−1}.

Snapshot (``--snapshot FILE.json``)::

    {"nodes": [{"id": "a", "capacity": 1.0, "remove": false}, ...],
     "key_groups": [{"id": "k1", "load": 12.5, "state_size": 3.0, "node": "a"}, ...],
     "traffic": [["k1", "k2", 4.0], ...]}

``capacity`` (default 1), ``remove`` (default false), ``state_size`` (default 1) and
``traffic`` (default none) may be left out. Loads are the observed ones and stay as given in
every round; traffic counts towards the collocation factor and adds no load.

Output: per round ``round, algo, status, load_distance, collocation_factor, load_index,
migrations, migration_cost, solve_seconds`` as a table, or with ``--json`` a JSON list of
objects; with ``--snapshot`` also the full new assignment ``{key group: node}`` (in ``--json``,
as every round's ``assignment``). Load distance and collocation factor are in percent; the load
index is the total load over round 1's before its plan; the migration cost is the moved key
groups' summed state size.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from elastream.cli import plan_cores, plan_fuse, plan_migrate
from elastream.cli.json_input import read_json
from elastream.cli.json_output import JsonAnswer
from elastream.core import rules
from elastream.core.errors import OptionError

SYNTHETIC_SERIALISATION = 0.1
"""Load per unit of cross-node traffic at each end, for ``--collocation`` jobs."""
DEFAULT_VARY = 10.0


def register(commands: Any) -> None:
    """Add the ``plan`` command and its ``balance`` sub-command."""
    p = commands.add_parser("plan", help="plan without running a job: key-group balance, a "
                            "migration, cores per executor, operator fusion",
                            description="Plan key-group allocations.")
    sub = p.add_subparsers(dest="plan_command", required=True, metavar="PLAN",
                           parser_class=type(p))
    b = sub.add_parser("balance", help="balance key groups over nodes, round by round",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("--algo", required=True, metavar="A",
                   help="a registered planner (hash, flux, fish, milp, …)")
    b.add_argument("--snapshot", type=Path, metavar="FILE.json",
                   help="the cluster as a snapshot file (instead of --nodes/--key-groups)")
    b.add_argument("--nodes", type=int, metavar="N", help="synthetic: number of nodes")
    b.add_argument("--key-groups", type=int, metavar="K", help="synthetic: number of key groups")
    b.add_argument("--operators", type=int, metavar="O", help="synthetic: operators (default 1)")
    b.add_argument("--vary", type=float, metavar="V",
                   help=f"synthetic: load fluctuation in percent (default {DEFAULT_VARY:g})")
    b.add_argument("--collocation", type=float, metavar="PCT",
                   help="synthetic: percent of key groups in One-To-One communication "
                        "(default: no traffic)")
    budget = b.add_mutually_exclusive_group()
    budget.add_argument("--max-migrations", type=int, metavar="M",
                        help="most key groups moved per round (default: the planner's)")
    budget.add_argument("--max-migration-cost", type=float, metavar="C",
                        help="most summed state size moved per round (planners with a cost "
                             "budget, e.g. milp)")
    b.add_argument("--remove", metavar="NODE,...", help="nodes to drain and terminate")
    b.add_argument("--rounds", type=int, default=1, metavar="R", help="rounds (default 1)")
    b.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the instance, the drift and the planner (default 0)")
    b.add_argument("--time-limit", type=float, metavar="SEC",
                   help="solver time per round for planners that take one (milp: default 1.2)")
    b.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    b.set_defaults(handler=balance_command)
    plan_migrate.register(sub)
    plan_cores.register(sub)
    plan_fuse.register(sub)


def balance_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream plan balance``."""
    from elastream.runtimes.sim.rounds import CONTRACT_COLUMNS, run_rounds

    settings = _settings(args)
    instance, serialisation, drift = _instance(args)
    if args.remove is not None:
        instance = instance.marked(_removal(args.remove, instance.node_ids))
    result = run_rounds(instance, args.algo, settings=settings, rounds=args.rounds, drift=drift,
                        serialisation=serialisation, seed=args.seed)
    rows = [r.contract() for r in result.records]
    if args.json:
        if args.snapshot is not None:
            for row, assigned in zip(rows, result.assignments, strict=True):
                row["assignment"] = dict(zip(instance.key_group_ids, assigned, strict=True))
        return JsonAnswer(rows)
    table = pd.DataFrame(rows, columns=list(CONTRACT_COLUMNS))
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if args.snapshot is not None:
        print(f"\n# assignment after round {args.rounds} (key group: node)")
        print(json.dumps(result.assignment, indent=1))
    return 0


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """Planner settings from the options, each checked.

    They are shared settings (:mod:`elastream.core.registry`): the planner takes those it has
    (``--seed`` also seeds the drift; cola and potc have no move budget).
    """
    from elastream.control.planners import PLANNERS
    from elastream.core import registry

    takes = registry.setting_names(registry.entry(PLANNERS, args.algo, option="--algo")
                                   .options_type)
    rules.integer("--rounds", args.rounds)
    rules.integer("--seed", args.seed, low=0)
    settings: dict[str, Any] = {"seed": args.seed}
    if args.max_migrations is not None:
        rules.integer("--max-migrations", args.max_migrations, low=0)
        settings["max_moves"] = args.max_migrations
    if args.max_migration_cost is not None:
        rules.number("--max-migration-cost", args.max_migration_cost)
        if "max_migration_cost" not in takes:
            raise OptionError("--max-migration-cost", "needs a planner with a cost budget "
                              "(e.g. milp); use --max-migrations", args.algo)
        settings.update(max_migration_cost=args.max_migration_cost, max_moves=None)
    if args.time_limit is not None:
        settings["time_limit"] = rules.number("--time-limit", args.time_limit, above=0,
                                              unit="seconds")
    return settings


def _instance(args: argparse.Namespace) -> tuple[Any, float, float]:
    """The instance, its serialisation cost and its per-round drift."""
    from elastream.runtimes.sim.rounds_instance import albic_instance

    synthetic = {"--nodes": args.nodes, "--key-groups": args.key_groups,
                 "--operators": args.operators, "--vary": args.vary,
                 "--collocation": args.collocation}
    given = [name for name, value in synthetic.items() if value is not None]
    if args.snapshot is not None:
        if given:
            raise OptionError(given[0], "cannot be combined with --snapshot", synthetic[given[0]])
        return read_snapshot(args.snapshot), 0.0, 0.0
    if args.nodes is None or args.key_groups is None:
        missing = "--nodes" if args.nodes is None else "--key-groups"
        raise OptionError(missing, "is required without --snapshot (or give --snapshot FILE)",
                          None)
    rules.integer("--nodes", args.nodes)
    rules.integer("--key-groups", args.key_groups, low=args.nodes)
    operators = 1 if args.operators is None else args.operators
    rules.integer("--operators", operators)
    if operators > args.key_groups:
        raise OptionError("--operators", f"must be at most --key-groups ({args.key_groups})",
                          operators)
    vary = DEFAULT_VARY if args.vary is None else args.vary
    rules.number("--vary", vary, high=100, unit="percent")
    if args.collocation is not None:
        rules.number("--collocation", args.collocation, high=100, unit="percent")
    instance = albic_instance(nodes=args.nodes, key_groups=args.key_groups, operators=operators,
                              varies=vary, collocation=args.collocation, seed=args.seed)
    serialisation = SYNTHETIC_SERIALISATION if args.collocation is not None else 0.0
    return instance, serialisation, vary


def _removal(text: str, node_ids: tuple[str, ...]) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise OptionError("--remove", "must list node ids separated by commas", text)
    for name in names:
        if name not in node_ids:
            shown = ", ".join(node_ids[:3]) + (", …" if len(node_ids) > 3 else "")
            raise OptionError("--remove", f"must name nodes of the cluster ({shown})", name)
    if len(set(names)) >= len(node_ids):
        raise OptionError("--remove", "must leave at least one node", text)
    return names


# ---------------------------------------------------------------------------------- snapshot


def read_snapshot(path: Path) -> Any:
    """The :class:`~elastream.runtimes.sim.rounds_instance.Instance` a snapshot file describes.

    Every mistake raises :class:`OptionError` naming the field (``key_groups[3].node``), the
    rule and the value.
    """
    from elastream.runtimes.sim.rounds_instance import Instance

    data = read_json(path, "--snapshot")
    if not isinstance(data, dict):
        raise OptionError("snapshot", "must be a JSON object with nodes and key_groups",
                          type(data).__name__)
    nodes = _list(data, "nodes", required=True)
    groups = _list(data, "key_groups", required=True)
    if not nodes:
        raise OptionError("nodes", "must list at least one node", nodes)
    node_ids = [_text(n, f"nodes[{i}]", "id") for i, n in enumerate(nodes)]
    _unique("nodes", node_ids)
    capacity = [_number(n, f"nodes[{i}]", "capacity", 1.0, positive=True)
                for i, n in enumerate(nodes)]
    remove = [_flag(n, f"nodes[{i}]", "remove") for i, n in enumerate(nodes)]
    index = {name: i for i, name in enumerate(node_ids)}
    kg_ids = [_text(g, f"key_groups[{k}]", "id") for k, g in enumerate(groups)]
    _unique("key_groups", kg_ids)
    load = [_number(g, f"key_groups[{k}]", "load", None) for k, g in enumerate(groups)]
    state = [_number(g, f"key_groups[{k}]", "state_size", 1.0) for k, g in enumerate(groups)]
    slot_of = []
    for k, g in enumerate(groups):
        node = _text(g, f"key_groups[{k}]", "node")
        if node not in index:
            raise OptionError(f"key_groups[{k}].node", "must name a node in nodes", node)
        slot_of.append(index[node])
    removed = frozenset(n for n, r in zip(node_ids, remove, strict=True) if r)
    if len(removed) == len(node_ids):
        raise OptionError("nodes", "must keep at least one node with remove false",
                          sorted(removed))
    return Instance(
        node_ids=tuple(node_ids),
        capacity=np.array(capacity, dtype=np.float64),
        key_group_ids=tuple(kg_ids),
        load=np.array(load, dtype=np.float64),
        state_size=np.array(state, dtype=np.float64),
        slot_of=np.array(slot_of, dtype=np.int64),
        traffic=_traffic(_list(data, "traffic", required=False), kg_ids),
        remove=removed,
    )


def _list(data: dict[str, Any], name: str, *, required: bool) -> list[Any]:
    if name not in data:
        if required:
            raise OptionError(name, "is required in the snapshot", None)
        return []
    value = data[name]
    if not isinstance(value, list):
        raise OptionError(name, "must be a JSON list", type(value).__name__)
    return value


def _field(item: Any, where: str, name: str) -> Any:
    if not isinstance(item, dict):
        raise OptionError(where, "must be a JSON object", item)
    return item.get(name)


def _text(item: Any, where: str, name: str) -> str:
    value = _field(item, where, name)
    if not isinstance(value, str) or not value:
        raise OptionError(f"{where}.{name}", "must be a non-empty string", value)
    return value


def _number(item: Any, where: str, name: str, default: float | None, *,
            positive: bool = False) -> float:
    value = _field(item, where, name)
    if value is None and default is not None:
        return default
    return rules.number(f"{where}.{name}", value, above=0 if positive else None)


def _flag(item: Any, where: str, name: str) -> bool:
    value = _field(item, where, name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise OptionError(f"{where}.{name}", "must be true or false", value)
    return value


def _unique(name: str, ids: list[str]) -> None:
    seen: set[str] = set()
    for i, value in enumerate(ids):
        if value in seen:
            raise OptionError(f"{name}[{i}].id", "must be unique", value)
        seen.add(value)


def _traffic(rows: list[Any], kg_ids: list[str]) -> Any:
    index = {name: k for k, name in enumerate(kg_ids)}
    out = np.empty((len(rows), 3))
    for r, row in enumerate(rows):
        where = f"traffic[{r}]"
        if not isinstance(row, list) or len(row) != 3:
            raise OptionError(where, "must be [kg_from, kg_to, rate]", row)
        for end in (0, 1):
            if not isinstance(row[end], str) or row[end] not in index:
                raise OptionError(f"{where}[{end}]", "must name a key group in key_groups",
                                  row[end])
        out[r] = (index[row[0]], index[row[1]], rules.number(f"{where}[2]", row[2]))
    return out
