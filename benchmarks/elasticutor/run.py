"""Elasticutor's evaluation (Wang et al., §5: Figs. 6–13, Tables 2–3) on the fluid simulator.

Static, RC, EC and naive-EC run the key-shuffle workload through the same simulator
(``elastream.runtimes.sim.elastic``), only the controller swapped; see experiments.py for what
each figure runs and README.md for the results beside the paper's.

Writes results/<table>.csv, results/summary.json, results/summary.md, results/meta.json and one
PNG per figure. Everything runs in this one process; run it niced on a shared machine:

    nice -n 5 .venv/bin/python benchmarks/elasticutor/run.py [--figures F…] [--duration S]
        [--warmup S] [--short S] [--seed N] [--repeats R] [--load F] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import experiments
import numpy as np
import report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import positive

HERE = Path(__file__).resolve().parent
ORDER = ("6", "9", "10-12", "13", "table3")


def _fraction(text: str) -> float:
    """An ``argparse`` type: a number > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--figures", nargs="+", choices=ORDER, default=list(ORDER),
                   help="which experiments to run (default all; 6 also gives Figs. 7, 8 and "
                        "Table 2)")
    p.add_argument("--duration", type=positive, default=150,
                   help="simulated seconds of the Fig. 6/7 runs (default 150)")
    p.add_argument("--warmup", type=float, default=30.0,
                   help="seconds of the Fig. 6/7 runs left out of their metrics (default 30)")
    p.add_argument("--short", type=positive, default=40,
                   help="simulated seconds of the Figs. 9–13 runs (default 40)")
    p.add_argument("--seed", type=int, default=0, help="workload and hash seed (default 0)")
    p.add_argument("--repeats", type=positive, default=60,
                   help="scheduling rounds timed per cluster size for Table 3 (default 60)")
    p.add_argument("--load", type=_fraction, default=0.7,
                   help="offered rate of Figs. 6-9 and 13 as a fraction of the cluster's "
                        "capacity (default 0.7; 1.0 saturates every strategy)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    began = time.perf_counter()
    grid = experiments.Grid(duration=float(args.duration), warmup=args.warmup,
                            short=float(args.short),
                            seed=args.seed, repeats=args.repeats, load=args.load)
    tables: dict[str, list[dict[str, Any]]] = {}
    seconds: dict[str, float] = {}

    def finished(name: str, rows: list[dict[str, Any]], wall: float) -> None:
        key = {"6": "fig6", "9": "fig8_9", "10-12": "fig10_12", "13": "fig13"}.get(name, name)
        tables.setdefault(key, []).extend(rows)
        seconds[name] = round(wall, 1)
        print(f"{name}: {len(rows)} rows in {wall:.0f} s", file=sys.stderr, flush=True)
        report.write(tables, args.out)

    if "6" in args.figures:
        at2, cores = experiments.fig6_7(grid, finished)
        tables["fig7"] = experiments.series_rows({k: v for k, v in at2.items()
                                                  if k != "naive-ec"})
        tables["cores"] = cores
        tables.setdefault("fig8_9", []).extend(experiments.move_rows(
            {k: v for k, v in at2.items() if k.startswith("rc") or k == "ec"}, figure="8",
            upstream_executors=32, state_kb=32.0))
    for figure, run in (("9", experiments.fig9), ("10-12", experiments.fig10_12),
                        ("13", experiments.fig13), ("table3", experiments.table3)):
        if figure in args.figures:
            run(grid, finished)
    elapsed = time.perf_counter() - began
    args.out.mkdir(parents=True, exist_ok=True)
    report.write(tables, args.out)
    frames = report.read(args.out)
    report.plot_all(frames, args.out)
    summary = report.summary(frames)
    meta = {"benchmark": "elasticutor",
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "numpy": np.__version__, "nice": os.nice(0)},
            "experiment_seconds": seconds, "elapsed_seconds": round(elapsed, 1)}
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (args.out / "summary.md").write_text(report.markdown(summary))
    print(report.markdown(summary))
    print(f"{elapsed / 60:.1f} min in all; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
