"""``elastream simulate``: grouping schemes side by side on the vectorised cluster simulator.

Every scheme routes the same stream onto the same simulated workers (FISH §6.1). Execution
time is the busiest worker's processing time (normalised to SG, the ideal balancer), memory the
number of distinct (key, worker) pairs, i.e. replicated state (normalised to FG, which never
replicates). Arrivals come at a fixed rate that would load the cluster to ``--utilisation`` if
it were perfectly balanced; ``--capacity heterogeneous`` makes half the workers twice as fast
(FISH §6.4).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from elastream.cli.json_output import JsonAnswer
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.spec import format_of

COLUMNS = ("scheme", "workers", "tuples", "exec_time", "exec_time_vs_sg", "memory",
           "memory_vs_fg", "latency_mean", "latency_p99", "throughput", "sim_seconds")
ZIPF_DEFAULTS = {"z": 1.0, "tuples": 1_000_000, "keys": 100_000, "seed": 0}


@dataclass(frozen=True)
class Dataset:
    """Keys of a stream as int64 codes, plus a label for reports."""

    label: str
    keys: np.ndarray


def parse_dataset(text: str) -> Dataset:
    """``zipf:z=Z,tuples=T,keys=K,seed=X`` or ``file:PATH:KEYCOL``.

    >>> parse_dataset("zipf:z=1.5,tuples=1000,keys=50").keys.shape
    (1000,)
    """
    kind, _, rest = text.partition(":")
    if kind == "zipf":
        from elastream.workloads.zipf import time_evolving_zipf

        params: dict[str, float] = dict(ZIPF_DEFAULTS)
        for item in filter(None, rest.split(",")):
            name, _, value = item.partition("=")
            if name not in ZIPF_DEFAULTS:
                raise OptionError("--dataset", f"zipf takes {', '.join(ZIPF_DEFAULTS)}", name)
            try:
                params[name] = float(value)
            except ValueError:
                raise OptionError("--dataset", f"zipf {name} must be a number", value) from None
        keys = time_evolving_zipf(int(params["tuples"]), z=params["z"],
                                  num_keys=int(params["keys"]), seed=int(params["seed"]))
        return Dataset(f"zipf z={params['z']:g}", keys.astype(np.int64))
    if kind == "file":
        path_text, _, column = rest.rpartition(":")
        if not path_text or not column:
            raise OptionError("--dataset", "must look like file:PATH:KEYCOL", text)
        from elastream.workloads.replay import read_static

        path = Path(path_text)
        table = read_static(path, format_of(path))
        if column not in table.column_names:
            raise OptionError("--dataset", f"key column must be one of {table.column_names}",
                              column)
        codes, _ = pd.factorize(table.column(column).to_pandas())
        return Dataset(f"{path.name}:{column}", codes.astype(np.int64))
    raise OptionError("--dataset", "must start with zipf: or file:", text)


def register(commands: Any) -> None:
    """Add the ``simulate`` sub-command."""
    p = commands.add_parser("simulate", help="compare grouping schemes on the simulator",
                            description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scheme", action="append", required=True, metavar="S",
                   help="sg, fg, pkg, dc, wc, ch or fish; repeatable")
    p.add_argument("--workers", type=int, required=True, help="number of workers")
    p.add_argument("--dataset", default="zipf:z=1.0,tuples=1000000",
                   help="zipf:z=Z,tuples=T,keys=K,seed=X or file:PATH:KEYCOL "
                        "(default zipf:z=1.0,tuples=1000000)")
    p.add_argument("--capacity", choices=("homogeneous", "heterogeneous"), default="homogeneous",
                   help="heterogeneous: half the workers twice as fast")
    p.add_argument("--service-time", type=float, default=1e-6,
                   help="seconds per tuple on a worker of capacity 1 (default 1e-6)")
    p.add_argument("--utilisation", type=float, default=0.9,
                   help="offered load relative to the cluster's capacity (default 0.9)")
    p.add_argument("--seed", type=int, default=0, help="seed of the schemes' hashes")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.set_defaults(handler=simulate_command)


def run_schemes(dataset: Dataset, schemes: list[str], workers: int, *, heterogeneous: bool,
                service_time: float, utilisation: float, seed: int) -> list[dict[str, Any]]:
    """Simulate each scheme (and SG and FG as baselines) on the same stream; one row each."""
    from elastream.runtimes.sim.cluster import MAX_UTILISATION, cluster_config, run_scheme

    rules.integer("--workers", workers)
    rules.number("--utilisation", utilisation, above=0, high=MAX_UTILISATION)
    config = cluster_config(workers, heterogeneous=heterogeneous, service_time=service_time,
                            utilisation=utilisation)
    results = {name: run_scheme(dataset.keys, name, config, seed=seed)
               for name in dict.fromkeys([*schemes, "sg", "fg"])}
    rows = []
    for name in dict.fromkeys(schemes):
        r = results[name]
        rows.append({
            "scheme": name, "workers": workers, "tuples": r.tuples,
            "exec_time": r.exec_time,
            "exec_time_vs_sg": r.exec_time / results["sg"].exec_time,
            "memory": r.memory, "memory_vs_fg": r.memory / results["fg"].memory,
            "latency_mean": r.latency.mean, "latency_p99": r.latency.p99,
            "throughput": r.throughput, "sim_seconds": r.sim_seconds,
        })
    return rows


def simulate_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream simulate``."""
    dataset = parse_dataset(args.dataset)
    rows = run_schemes(dataset, args.scheme, args.workers,
                       heterogeneous=args.capacity == "heterogeneous",
                       service_time=args.service_time, utilisation=args.utilisation,
                       seed=args.seed)
    if args.json:
        return JsonAnswer(rows)
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    print(f"# {dataset.label}, {args.workers} workers, {args.capacity} capacity")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0
