"""Write the Spark scaling benchmark as CSV and JSON, and draw its plot."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import write_csv, write_json

STYLE = {"live": "tab:blue", "stop": "tab:red"}
PANELS = (("step_seconds", "step wall time (s): batch + plan + restart"),
          ("moves", "key groups moved"), ("key_groups_to_move", "key groups still to move"),
          ("active_slots", "active slots"))


def write(batches: list[dict[str, Any]], summary: list[dict[str, Any]], meta: dict[str, Any],
          folder: Path) -> None:
    """``batches.csv``, ``summary.csv`` and ``results.json`` (both, plus the run's settings)."""
    write_csv(batches, folder / "batches.csv")
    write_csv(summary, folder / "summary.csv")
    write_json(folder / "results.json", meta, indent=2, summary=summary, batches=batches)


def plot(batches: list[dict[str, Any]], args: Any, path: Path) -> None:
    """One panel per metric, both modes per panel, the scale events marked."""
    fig, axes = plt.subplots(len(PANELS), 1, figsize=(9, 11), sharex=True)
    for mode in dict.fromkeys(b["mode"] for b in batches):
        runs = [b for b in batches if b["mode"] == mode]
        for ax, (field, label) in zip(axes, PANELS, strict=True):
            ax.plot([b["batch"] for b in runs], [b[field] for b in runs], label=mode,
                    color=STYLE.get(mode), marker=".", linewidth=1.2)
            ax.set_ylabel(label, fontsize=8)
    for ax in axes:
        for at in (args.out_at, args.in_at):
            ax.axvline(at, color="grey", linestyle=":", linewidth=1)
    axes[0].legend()
    axes[0].set_title(f"Scaling {args.slots} → {args.to} → {args.slots} slots on the flights "
                      f"(dotted: scale events)")
    axes[-1].set_xlabel("micro-batch")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
