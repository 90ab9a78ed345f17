"""Write the live-stream benchmark as CSV and JSON, and draw its plots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from measure import weighted_quantiles

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import write_csv, write_json

STYLE = {"hash": ("tab:orange", "s"), "flux": ("tab:green", "^"), "fish": ("tab:blue", "o"),
         "scale": ("tab:purple", "D"), "replay": ("tab:grey", "x")}
BATCH_COLUMNS = ("run", "batch", "t_start", "t_end", "batch_ms", "input_rows", "data_rows",
                 "watermark",
                 "file_latency_max_s", "step", "max_mean_slot_load", "active_slots",
                 "step_moves", "routing_version")
DELAY_PERCENTILES = tuple(range(0, 101, 5))


def delay_table(delays: pd.DataFrame) -> list[dict[str, Any]]:
    """Per live run, the window delay at every 5th percentile (each window counted once)."""
    out = []
    for run, mine in delays.groupby("run", sort=False):
        values = weighted_quantiles(mine["delay_s"].to_numpy(), mine["windows"].to_numpy(),
                                    [max(q, 0.001) / 100 for q in DELAY_PERCENTILES])
        out.append({"run": run, "windows": int(mine["windows"].sum()),
                    **{f"p{q}": round(v, 3) for q, v in zip(DELAY_PERCENTILES, values,
                                                             strict=True)}})
    return out


def write(summary: list[dict[str, Any]], batches: pd.DataFrame, delays: pd.DataFrame,
          meta: dict[str, Any], folder: Path) -> None:
    """``results.csv`` (a row per run), ``batches.csv`` and ``results.json`` (all of it)."""
    flat = [{k: v for k, v in row.items() if not isinstance(v, list)} for row in summary]
    write_csv(flat, folder / "results.csv", columns=list(dict.fromkeys(
        k for row in flat for k in row)))
    table = batches.loc[:, list(BATCH_COLUMNS)].round(3)
    rows = [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
            for r in table.to_dict("records")]
    write_csv(rows, folder / "batches.csv", columns=BATCH_COLUMNS)
    write_json(folder / "results.json", meta, indent=1, summary=summary,
               window_delay_percentiles=delay_table(delays), batches=rows)


def plot_batches(batches: pd.DataFrame, summary: list[dict[str, Any]], path: Path) -> None:
    """Over the time since the stream began: batch durations, file latency, balance, moves."""
    panels = (("batch_ms", "batch duration (s)", 1 / 1000),
              ("file_latency_max_s", "file latency (s):\narrival → its batch ended", 1),
              ("max_mean_slot_load", "max / mean slot load\n(per control step)", 1),
              ("moved", "key groups moved\n(cumulative)", 1))
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 12), sharex=True)
    for run, mine in batches.groupby("run", sort=False):
        color, marker = STYLE.get(str(run), ("black", "."))
        mine = mine.assign(moved=mine["step_moves"].cumsum())
        for ax, (column, label, scale) in zip(axes, panels, strict=True):
            ax.plot(mine["t_end"], mine[column] * scale, color=color, marker=marker,
                    markersize=3, linewidth=1, label=str(run),
                    linestyle="--" if run == "replay" else "-")
            ax.set_ylabel(label, fontsize=9)
    for row in summary:
        for event in row.get("scale_requests", []):
            for ax in axes:
                ax.axvline(event["at_s"], color=STYLE["scale"][0], linestyle=":", linewidth=1)
            axes[0].annotate(f"scale → {event['slots']}", (event["at_s"], 0),
                             fontsize=8, color=STYLE["scale"][0], xytext=(3, 3),
                             textcoords="offset points")
    axes[0].set_ylim(bottom=0)
    axes[1].set_ylim(bottom=0)
    axes[0].legend(ncol=5, fontsize=8)
    axes[0].set_title("Live stream: micro-batches over time (replay: all chunks at once)")
    axes[-1].set_xlabel("seconds since the first file arrived (replay: its first batch)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_delays(delays: pd.DataFrame, path: Path) -> None:
    """Window delay: its distribution per run, and over the time the closing file arrived."""
    fig, (cdf, over) = plt.subplots(1, 2, figsize=(13, 5))
    for run, mine in delays.groupby("run", sort=False):
        color, marker = STYLE.get(str(run), ("black", "."))
        order = np.argsort(mine["delay_s"].to_numpy(), kind="stable")
        values = mine["delay_s"].to_numpy()[order]
        weights = mine["windows"].to_numpy()[order]
        cdf.step(values, np.cumsum(weights) / weights.sum(), where="post", color=color,
                 label=str(run))
        over.scatter(mine["closed_at_s"], mine["delay_s"], s=6, color=color, marker=marker,
                     label=str(run), alpha=0.6)
    cdf.set_xlabel("window delay (s): closing file arrived → window written")
    cdf.set_ylabel("fraction of windows")
    cdf.set_xlim(left=0)
    cdf.grid(alpha=0.3)
    cdf.legend()
    over.set_xlabel("seconds since the first file arrived (when the closing file arrived)")
    over.set_ylabel("window delay (s)")
    over.set_ylim(bottom=0)
    over.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
