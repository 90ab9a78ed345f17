"""The elastic-and-skewed benchmark's plot: Fig. 5's load distance, and slots against the rate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

LINES = {"integrated": "-", "separate": "--"}


def plot(steps: list[dict[str, Any]], batches: list[dict[str, Any]], path: Path) -> None:
    """Fig. 5 (a): load distance per control step after the scale-in is asked; the rate part:
    slots in use and batch seconds per micro-batch of each run."""
    panels = [p for p, rows in (("fig5", steps), ("slots", batches), ("seconds", batches))
              if rows]
    if not panels:
        return
    figure, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8),
                                squeeze=False)
    for axis, panel in zip(axes[0], panels, strict=True):
        if panel == "fig5":
            for (case, scale_in), rows in _groups(steps, "case", "scale_in").items():
                axis.plot([r["batch"] for r in rows], [r["load_distance"] for r in rows],
                          LINES[scale_in], marker=".", label=f"{case} {scale_in}")
            axis.set(xlabel="micro-batch", ylabel="load distance d (%)",
                     title="Fig. 5 on Spark: scale-in by 3 slots at batch 3")
        else:
            key = "slots" if panel == "slots" else "batch_s"
            for (run,), rows in _groups(batches, "run").items():
                axis.plot(range(len(rows)), [r[key] for r in rows], marker=".", label=run)
            axis.set(xlabel="micro-batch", ylabel="slots in use" if panel == "slots"
                     else "batch seconds", title="rate 1x, 6x, 1x; hot keys drifting")
        axis.legend(fontsize=7)
        axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _groups(rows: list[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], list[dict]]:
    groups: dict[tuple[Any, ...], list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    return groups
