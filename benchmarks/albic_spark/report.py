"""Write the two-operator Spark benchmark as CSV and JSON, and draw its plot."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import write_csv, write_json

STYLE = {"hash": "tab:orange", "flux": "tab:green", "milp": "tab:purple", "albic": "tab:blue",
         "cola": "tab:red"}
PANELS = (("collocation_factor", "collocation factor (%)"),
          ("load_distance", "load distance (% of mean slot rows)"),
          ("load_index", "modelled load index"), ("moves", "key groups moved"))





def write(batches: list[dict[str, Any]], summary: list[dict[str, Any]], meta: dict[str, Any],
          folder: Path) -> None:
    """``batches.csv``, ``summary.csv`` and ``results.json`` (both, plus the run's settings)."""
    write_csv(batches, folder / "batches.csv")
    write_csv(summary, folder / "summary.csv")
    write_json(folder / "results.json", meta, indent=2, summary=summary, batches=batches)


def plot(batches: list[dict[str, Any]], path: Path) -> None:
    """One column per job; rows: collocation, load distance, load index, moves, per batch."""
    jobs = list(dict.fromkeys(b["job"] for b in batches))
    fig, axes = plt.subplots(len(PANELS), len(jobs), figsize=(6.5 * len(jobs), 12),
                             squeeze=False, sharex="col")
    for col, job in enumerate(jobs):
        mine = [b for b in batches if b["job"] == job]
        for name in dict.fromkeys(b["planner"] for b in mine):
            runs = [b for b in mine if b["planner"] == name]
            for row, (field, label) in enumerate(PANELS):
                ax = axes[row][col]
                ax.plot([b["batch"] for b in runs], [b[field] for b in runs], label=name,
                        color=STYLE.get(name), linewidth=1.2)
                ax.set_ylabel(label)
        axes[0][col].set_title(job)
        axes[-1][col].set_xlabel("micro-batch")
        axes[0][col].legend(fontsize=8)
    fig.suptitle("Two-operator flights job on Spark: collocation and balance per micro-batch")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
