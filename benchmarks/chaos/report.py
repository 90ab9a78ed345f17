"""Draw the chaos benchmark's trials: when each kill came, what the run had done, the outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def plot(rows: list[dict[str, Any]], totals: dict[str, Any], path: Path) -> None:
    """Kill moment against batches committed and hand-offs at the kill, marked by outcome."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    panels = (("batches_committed", "micro-batches committed at the kill"),
              ("handoffs_taken_over", "hand-offs taken over at the kill"))
    for ax, (field, label) in zip(axes, panels, strict=True):
        for outcome, colour, marker in ((True, "tab:green", "o"), (False, "tab:red", "x")):
            chosen = [r for r in rows if r["exact"] == outcome and r["killed"]]
            ax.scatter([r["kill_at_s"] for r in chosen], [r[field] for r in chosen],
                       color=colour, marker=marker, label="exact" if outcome else "not exact")
        ended = [r for r in rows if not r["killed"]]
        ax.scatter([r["kill_at_s"] for r in ended], [r[field] for r in ended], color="grey",
                   marker=".", label="run ended before the kill")
        since = "start" if totals.get("kill_in") == "run" else "first committed micro-batch"
        ax.set_xlabel(f"SIGKILL of the process group at (s after its {since})")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{totals['trials']} trials, {totals['kills']} kills, {totals['exact']} exact "
                 f"after the rerun; rows lost {totals['rows_lost']}, doubled "
                 f"{totals['rows_doubled']} (four readers)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
