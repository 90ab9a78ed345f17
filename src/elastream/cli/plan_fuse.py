"""``elastream plan fuse``: fuse a job's operators into components (Enorm §4.4.1, §7.6).

``--score comm`` (default) runs Algorithm 1 by edge rate, ``pa`` by the partition attributes two
components share, ``baseline`` §7.6's baseline (random later seeds: ``--seed``). Components
share a partition attribute (a lone operator may have none) and are convex: no path leaves a
component and comes back.

Graph (``--graph FILE.json``)::

    {"operators": [{"id": "op1", "pa": ["user", "area"]}, {"id": "op4", "pa": []}, ...],
     "edges": [{"from": "op1", "to": "op2", "rate": 10.0}, ...]}

``id``: a unique non-empty string; ``pa``: the operator's partition attribute names (may be
empty); ``rate``: tuples per unit of time on the edge (finite, ≥ 0). The edges must form no
cycle, join two different operators and not repeat.

The job file of ``elastream run --graph`` is read too: an operator without ``pa`` is partitioned
by its ``partition_by``, else its ``keys`` (its ``aggs`` and ``window`` are not needed here); an
edge without ``rate`` has rate 1; edges from ``source``, the job's own operator, need
``--source-pa`` (its partition attributes: ``elastream run``'s ``--partition-by``, else its key
columns); the file's ``fused`` is ignored.

Output: ``score, components (lists of operator ids), inter_component_traffic_pct (percent of
the edges' rate between components), solve_seconds``; with ``--json`` that JSON object, else a
summary and one line per component with its shared attributes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from elastream.algorithms.fusion.fuse import SCORES, fuse
from elastream.algorithms.fusion.graph import Edge, Operator, OperatorGraph, operator_graph
from elastream.cli.json_input import read_json
from elastream.cli.json_output import JsonAnswer
from elastream.core import rules
from elastream.core.errors import OptionError

FIELDS = ("operators", "edges")
OPERATOR_FIELDS = ("id", "pa")
EDGE_FIELDS = ("from", "to", "rate")
JOB_FIELDS = ("fused",)
"""Fields of ``elastream run --graph``'s file: read (``keys``, ``partition_by``) or ignored."""
JOB_OPERATOR_FIELDS = ("keys", "partition_by", "aggs", "window")
SOURCE = "source"


def register(sub: Any) -> None:
    """Add ``fuse`` to the ``plan`` sub-commands."""
    p = sub.add_parser("fuse", help="fuse operators into components (Enorm)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph", required=True, type=Path, metavar="FILE.json",
                   help="the operator graph (see above)")
    p.add_argument("--score", choices=SCORES, default="comm",
                   help="comm: by rate (default); pa: by shared attributes; baseline: §7.6's")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the baseline's random choices (default 0)")
    p.add_argument("--source-pa", metavar="C[,C...]",
                   help="partition attributes of the job's own operator, for a job file whose "
                   "edges start at 'source'")
    p.add_argument("--json", action="store_true", help="print JSON instead of a summary")
    p.set_defaults(handler=fuse_command)


def fuse_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream plan fuse``."""
    rules.integer("--seed", args.seed, low=0)
    graph = read_graph(args.graph, source_pa=args.source_pa)
    started = time.perf_counter()
    fusion = fuse(graph, score=args.score, seed=args.seed)
    seconds = time.perf_counter() - started
    out = {"score": fusion.score, "components": [list(c) for c in fusion.components],
           "inter_component_traffic_pct": fusion.inter_component_traffic_pct,
           "solve_seconds": seconds}
    if args.json:
        return JsonAnswer(out)
    print(_summary(graph, out))
    return 0


def read_graph(path: Path, *, source_pa: str | None = None) -> OperatorGraph:
    """The operator graph in ``path`` (a ``plan fuse`` graph or an ``elastream run`` job's).

    ``source_pa``: ``--source-pa``'s text, the partition attributes of ``source``. Every mistake
    is an :class:`OptionError` naming the field (``operators[2].pa``, ``edges[0].rate``), the
    rule and the value; the library checks ids, ends, rates and cycles.
    """
    data = read_json(path, "--graph")
    if not isinstance(data, dict):
        raise OptionError("graph", "must be a JSON object with operators and edges",
                          type(data).__name__)
    for key in data:
        if key not in FIELDS + JOB_FIELDS:
            raise OptionError(key, "is not a graph field (one of operators, edges)", data[key])
    for key in FIELDS:
        if key not in data:
            raise OptionError(key, "is required in the graph", None)
        if not isinstance(data[key], list):
            raise OptionError(key, "must be a JSON list", type(data[key]).__name__)
    if not data["operators"]:
        raise OptionError("operators", "must list at least one operator", data["operators"])
    operators = []
    for i, item in enumerate(data["operators"]):
        o = _object(item, f"operators[{i}]", ("id",), OPERATOR_FIELDS + JOB_OPERATOR_FIELDS)
        field = next((f for f in ("pa", "partition_by", "keys") if f in o), "pa")
        if field not in o:
            raise OptionError(f"operators[{i}].pa", "is required (or the job's keys)", None)
        pa = o[field]
        if not isinstance(pa, list) or not all(isinstance(a, str) and a for a in pa):
            raise OptionError(f"operators[{i}].{field}", "must be a list of attribute names", pa)
        operators.append(Operator(o["id"], frozenset(pa)))
    edges = []
    for k, item in enumerate(data["edges"]):
        e = _object(item, f"edges[{k}]", ("from", "to"), EDGE_FIELDS)
        for end in ("from", "to"):
            if not isinstance(e[end], str):
                raise OptionError(f"edges[{k}].{end}", "must be an operator id (a string)",
                                  e[end])
        edges.append(Edge(e["from"], e["to"], e.get("rate", 1.0)))
    if any(e.source == SOURCE for e in edges) and SOURCE not in {o.id for o in operators}:
        if not source_pa:
            raise OptionError("--source-pa", "is needed for edges from 'source' (the job's "
                              "operator): its partition attributes", source_pa)
        operators.insert(0, Operator(SOURCE, frozenset(c.strip() for c in source_pa.split(","))))
    return operator_graph(operators, edges)


def _object(item: Any, where: str, required: tuple[str, ...], fields: tuple[str, ...]
            ) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise OptionError(where, f"must be a JSON object with {', '.join(fields)}", item)
    for key in item:
        if key not in fields:
            raise OptionError(f"{where}.{key}", f"is not a field (one of {', '.join(fields)})",
                              item[key])
    for key in required:
        if key not in item:
            raise OptionError(f"{where}.{key}", "is required", None)
    return item


def _summary(graph: OperatorGraph, out: dict[str, Any]) -> str:
    comps = out["components"]
    lines = [f"score {out['score']}   components {len(comps)} of {len(graph.operators)} "
             f"operators   inter-component traffic {out['inter_component_traffic_pct']:.4g} %   "
             f"solve {out['solve_seconds'] * 1000:.3g} ms",
             f"{'component':>9}  {'PA':<24} operators"]
    for c, comp in enumerate(comps, start=1):
        mask = -1
        for name in comp:
            mask &= graph.pa_masks[graph.index[name]]
        shared = ",".join(graph.pa_names(mask)) or "-"
        lines.append(f"{c:>9}  {shared:<24} {' '.join(comp)}")
    return "\n".join(lines)
