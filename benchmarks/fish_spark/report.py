"""Write the hash/flux/fish Spark benchmark as CSV and JSON, and draw its plot."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import write_csv, write_json

STYLE = {"hash": ("tab:orange", "s"), "flux": ("tab:green", "^"), "fish": ("tab:blue", "o")}
PANELS = (("max_mean_slot_load", "max / mean slot load"), ("batch_ms", "batch duration (ms)"),
          ("partial_rows", "pane partials per batch"))





def write(batches: list[dict[str, Any]], summary: list[dict[str, Any]], meta: dict[str, Any],
          folder: Path) -> None:
    """``batches.csv``, ``summary.csv`` and ``results.json`` (both, plus the run's settings)."""
    write_csv(batches, folder / "batches.csv")
    write_csv(summary, folder / "summary.csv")
    write_json(folder / "results.json", meta, indent=2, summary=summary, batches=batches)


def plot(batches: list[dict[str, Any]], path: Path) -> None:
    """One column per stream; rows: slot imbalance, batch duration, pane partials, per batch."""
    datasets = list(dict.fromkeys(b["dataset"] for b in batches))
    fig, axes = plt.subplots(len(PANELS), len(datasets), figsize=(6 * len(datasets), 10),
                             squeeze=False)
    for col, dataset in enumerate(datasets):
        for row, (column, label) in enumerate(PANELS):
            ax = axes[row][col]
            for name, (color, marker) in STYLE.items():
                mine = [b for b in batches if b["dataset"] == dataset and b["planner"] == name]
                ax.plot([b["batch"] for b in mine], [b[column] for b in mine], marker=marker,
                        color=color, label=name, markersize=3)
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
            if row == 0:
                ax.set_title(dataset)
                ax.legend()
            if row == len(PANELS) - 1:
                ax.set_xlabel("micro-batch")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
