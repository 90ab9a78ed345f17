"""Results of the Elasticutor benchmark: CSV files, the goals, a markdown summary and plots.

Run on its own to redraw the plots and summary from results/*.csv:

    .venv/bin/python benchmarks/elasticutor/report.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import write_csv

HERE = Path(__file__).resolve().parent
TABLES = ("fig6", "fig7", "cores", "fig8_9", "fig10_12", "fig13", "table3")
PAPER = {
    "table2": {"naive-ec": {"state_migration_mb_s": 13.9, "remote_data_mb_s": 235.3},
               "ec": {"state_migration_mb_s": 2.4, "remote_data_mb_s": 21.6}},
    "table3_ms": {8: 4.1, 16: 5.2, 32: 5.7},
}
COLORS = {"static": "tab:gray", "rc": "tab:red", "ec": "tab:blue", "naive-ec": "tab:orange",
          "rc-move-rounds": "darkred", "rc-shard": "lightcoral"}
VARIANTS = ("rc-move-rounds", "rc-shard")
"""RC under the simulator's other repartitioning protocols (sensitivity rows, dashed)."""
SHUFFLE_PERIOD_AT_2 = 30
"""Seconds between shuffles at ω = 2."""
DIP = 0.95
"""Fig. 7: a second is in a transient when its throughput is below this fraction of its 30 s
epoch's settled level, the median of the epoch's last ``SETTLED`` seconds. (Not the epoch's
best second: the catch-up burst after an RC round, when the held tuples are released, would
make every steady second count.)"""
SETTLED = 10
"""Seconds at the end of an epoch that give its settled level."""


def write(tables: dict[str, list[dict[str, Any]]], folder: Path) -> None:
    """One CSV per table."""
    for name, rows in tables.items():
        write_csv(rows, folder / f"{name}.csv")


def read(folder: Path) -> dict[str, pd.DataFrame]:
    """The CSV tables that exist in ``folder``."""
    return {n: pd.read_csv(folder / f"{n}.csv") for n in TABLES if (folder / f"{n}.csv").exists()}


def transients(fig7: pd.DataFrame, warmup: float) -> dict[str, float]:
    """Mean seconds per 30 s epoch below ``DIP`` × the epoch's settled level, per strategy."""
    out = {}
    for name, part in fig7.groupby("strategy"):
        series = part.sort_values("second")["throughput"].to_numpy()
        epochs = [series[s: s + SHUFFLE_PERIOD_AT_2]
                  for s in range(0, len(series) - SHUFFLE_PERIOD_AT_2 + 1, SHUFFLE_PERIOD_AT_2)]
        epochs = [e for i, e in enumerate(epochs) if i * SHUFFLE_PERIOD_AT_2 >= warmup]
        out[str(name)] = float(np.mean([(e < DIP * np.median(e[-SETTLED:])).sum()
                                        for e in epochs])) if epochs else math.nan
    return out


def summary(t: dict[str, pd.DataFrame], warmup: float = 5.0) -> dict[str, Any]:
    """The headline numbers and whether each goal was met."""
    out: dict[str, Any] = {}
    if "fig6" in t:
        f6 = t["fig6"]
        pivot = f6.pivot_table(index="omega", columns="strategy",
                               values=["throughput", "latency_mean_ms", "latency_p99_ms"])
        ratio = (pivot["throughput"]["ec"] / pivot["throughput"]["static"])
        lat = pivot["latency_mean_ms"]["rc"] / pivot["latency_mean_ms"]["ec"]
        out["fig6"] = {
            "ec_over_static_throughput": {f"{k:g}": round(v, 3) for k, v in ratio.items()},
            "rc_over_ec_mean_latency": {f"{k:g}": round(v, 2) for k, v in lat.items()},
            "goal_ec_throughput_2x_static_at_omega_ge_2":
                bool((ratio[ratio.index >= 2] >= 2).all()),
            "goal_ec_latency_10x_below_rc_at_omega_16": bool(lat.get(16.0, 0) >= 10),
        }
        rc = f6[f6.strategy == "rc"].set_index("omega")
        if "paused_share" in rc:
            out["fig6"]["rc_paused_share"] = {f"{k:g}": round(float(v), 3)
                                              for k, v in rc.paused_share.items()}
        for variant in VARIANTS:
            if variant in pivot["throughput"]:
                ratio_v = pivot["latency_mean_ms"][variant] / pivot["latency_mean_ms"]["ec"]
                out["fig6"][f"{variant}_over_ec_mean_latency"] = {
                    f"{k:g}": round(v, 2) for k, v in ratio_v.items()}
        at2 = f6[f6.omega == 2.0].set_index("strategy")
        if "naive-ec" in at2.index:
            out["table2"] = {s: {c: round(float(at2.loc[s, c]), 3)
                                 for c in ("state_migration_mb_s", "remote_data_mb_s")}
                             for s in ("naive-ec", "ec")}
    if "fig7" in t:
        out["fig7_transient_seconds_per_shuffle"] = {
            k: round(v, 1) for k, v in transients(t["fig7"], warmup).items()}
    if "table3" in t:
        t3 = t["table3"].set_index("nodes")
        out["table3"] = {int(n): round(float(t3.loc[n, "median_ms"]), 2) for n in t3.index}
        if 32 in t3.index:
            out["table3"]["goal_le_5ms_at_32_nodes"] = bool(t3.loc[32, "median_ms"] <= 5.0)
    return out


def markdown(s: dict[str, Any]) -> str:
    """The summary as a few markdown lines."""
    lines = ["# Elasticutor benchmark: summary", ""]
    for key, value in s.items():
        lines.append(f"- **{key}**: `{json.dumps(value)}`")
    return "\n".join(lines) + "\n"


def plot_all(t: dict[str, pd.DataFrame], folder: Path) -> None:
    """One PNG per figure that has data."""
    for name, draw in (("fig6", _fig6), ("fig7", _fig7), ("fig8_9", _fig9),
                       ("fig10_12", _fig10_12), ("fig13", _fig13), ("cores", _cores)):
        if name in t:
            fig = draw(t[name])
            fig.tight_layout()
            fig.savefig(folder / f"{name}.png", dpi=90)
            plt.close(fig)


def _fig6(df: pd.DataFrame) -> Any:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for name, part in df[df.strategy != "naive-ec"].groupby("strategy"):
        part = part.sort_values("omega")
        x = part.omega.replace(0.0, 0.5)
        style = "o--" if name in VARIANTS else "o-"
        axes[0].plot(x, part.throughput / 1e3, style, color=COLORS[str(name)], label=name)
        axes[1].plot(x, part.latency_mean_ms, style, color=COLORS[str(name)], label=name)
    for ax, label in zip(axes, ("throughput (10³ tuples/s)", "mean latency (ms)"), strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xticks([0.5, 1, 2, 4, 8, 16], ["0", "1", "2", "4", "8", "16"])
        ax.set_xlabel("ω (shuffles per minute)")
        ax.set_ylabel(label)
        ax.legend()
    axes[1].set_yscale("log")
    fig.suptitle("Fig. 6: performance against workload dynamics")
    return fig


def _fig7(df: pd.DataFrame) -> Any:
    fig, ax = plt.subplots(figsize=(10, 3.4))
    for name, part in df.groupby("strategy"):
        ax.plot(part.second, part.throughput / 1e3, "--" if name in VARIANTS else "-",
                color=COLORS[str(name)], label=name, lw=1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("throughput (10³ tuples/s, 1 s window)")
    ax.set_title("Fig. 7: instantaneous throughput, ω = 2 (a shuffle every 30 s)")
    ax.legend()
    return fig


def _fig9(df: pd.DataFrame) -> Any:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    a = df[df.figure == "9a"].assign(weighted=lambda d: d.sync_ms * d.moves)
    a = a.groupby(["strategy", "upstream_executors"], as_index=False)[["weighted", "moves"]].sum()
    a["sync_ms"] = a.weighted / a.moves.where(a.moves > 0)  # mean over intra and inter moves
    for name, part in a.groupby("strategy"):
        axes[0].plot(part.upstream_executors, part.sync_ms, "o-", color=COLORS[str(name)],
                     label=name)
    axes[0].set(xscale="log", yscale="log", xlabel="upstream executors",
                ylabel="sync time per shard move (ms)", title="Fig. 9(a)")
    b = df[(df.figure == "9b") & (df.moves > 0)]
    for (name, kind), part in b.groupby(["strategy", "kind"]):
        axes[1].plot(part.state_kb, part.migration_ms, "o-" if kind == "inter" else "s--",
                     color=COLORS[str(name)], label=f"{name} {kind}-node")
    axes[1].set(xscale="log", yscale="symlog", xlabel="shard state (KB)",
                ylabel="migration time per move (ms)", title="Fig. 9(b)")
    for ax in axes:
        ax.legend(fontsize=8)
    return fig


def _fig10_12(df: pd.DataFrame) -> Any:
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    f10 = df[df.figure == "10-11"]
    for variant, part in f10.groupby("variant", sort=False):
        eff = part.throughput / part.offered
        axes[0].plot(part.cores, eff, "o-", label=variant, ms=3)
        axes[1].plot(part.cores, part.latency_p99_ms, "o-", label=variant, ms=3)
    f12 = df[df.figure == "12"]
    for (omega, variant), part in f12.groupby(["omega", "variant"], sort=False):
        ax = axes[2] if omega == 2.0 else axes[3]
        ax.plot(part.cores, part.throughput / 1e3, "o-", label=variant, ms=3)
    titles = ("Fig. 10: throughput / offered", "Fig. 11: p99 latency (ms)",
              "Fig. 12: ω = 2, 10³ tuples/s", "Fig. 12: ω = 16, 10³ tuples/s")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("cores of the one executor")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    axes[1].set_yscale("log")
    return fig


def _fig13(df: pd.DataFrame) -> Any:
    workloads = list(dict.fromkeys(df.workload))
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 3.6), sharey=True)
    for ax, label in zip(np.atleast_1d(axes), workloads, strict=True):
        part = df[df.workload == label]
        for y, sub in part[part.strategy == "ec"].groupby("y"):
            ax.plot(sub.z, sub.throughput / 1e3, "o-", label=f"EC y={y}")
        for name in ("static", "rc"):
            ref = part[part.strategy == name]
            if len(ref):
                ax.axhline(float(ref.throughput.iloc[0]) / 1e3, color=COLORS[name], ls="--",
                           label=name)
        ax.set(xscale="log", xlabel="shards per executor z", title=label)
        ax.legend(fontsize=7)
    np.atleast_1d(axes)[0].set_ylabel("throughput (10³ tuples/s)")
    fig.suptitle("Fig. 13: executors y and shards z")
    return fig


def _cores(df: pd.DataFrame) -> Any:
    fig, ax = plt.subplots(figsize=(10, 3.4))
    grid = df.pivot(index="time", columns="executor", values="cores")
    ax.stackplot(grid.index, grid.T.to_numpy(), step="post", lw=0)
    ax.set(xlabel="time (s)", ylabel="cores (stacked per executor)",
           title="EC at ω = 2: cores per executor over time")
    return fig


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    tables = read(args.out)
    plot_all(tables, args.out)
    s = summary(tables)
    (args.out / "summary.json").write_text(json.dumps(s, indent=1) + "\n")
    (args.out / "summary.md").write_text(markdown(s))
    print(markdown(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
