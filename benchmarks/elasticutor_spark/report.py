"""The plot of benchmarks/elasticutor_spark: executors held and batch durations over time.

    .venv/bin/python benchmarks/elasticutor_spark/report.py [FOLDER]   # redraw (results/)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import itertools

import matplotlib.pyplot as plt
import pandas as pd

HERE = Path(__file__).resolve().parent


def plot(steps: pd.DataFrame, phases: list[dict[str, Any]], target: float, path: Path) -> None:
    """Per run: executors alive (top) and batch duration against the target (bottom)."""
    runs = list(dict.fromkeys(steps["run"]))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    edges = [0.0]
    for phase in [p for p in phases if p["run"] == runs[0]]:
        edges.append(edges[-1] + phase["seconds"])
    for axis in (top, bottom):
        for (start, end), phase in zip(itertools.pairwise(edges),
                                       [p for p in phases if p["run"] == runs[0]], strict=True):
            axis.axvspan(start, end, color="0.9" if phase["phase"] % 2 else "white", zorder=0)
            if axis is top:
                axis.text((start + end) / 2, 0.2, f"{phase['rate']:,.0f} rows/s",
                          ha="center", fontsize=8, color="0.4")
    for run in runs:
        here = steps[steps["run"] == run]
        top.step(here["t"], here["executors"], where="post", label=run)
        bottom.plot(here["t"], here["batch_s"], marker=".", linewidth=0.8, label=run)
    bottom.axhline(target, color="black", linestyle="--", linewidth=0.8,
                   label=f"target {target:g} s")
    top.set_ylabel("Spark executors alive")
    top.set_ylim(bottom=0)
    bottom.set_ylabel("batch duration (s)")
    bottom.set_xlabel("seconds since the first file arrived")
    top.legend(loc="upper left", fontsize=8)
    bottom.legend(loc="upper left", fontsize=8)
    top.set_title("Elasticutor on a Spark standalone cluster: the input rate rises, then falls")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    results = Path(given[0]) if given else HERE / "results"
    saved = json.loads((results / "results.json").read_text())
    steps = pd.read_csv(results / "steps.csv")
    plot(steps, saved["phases"], float(saved["settings"]["latency_target"]),
         results / "executors.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
