"""Write the benchmark's rows as CSV and JSON, draw the plot, print the table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import write_csv, write_json

COLUMNS = (
    "role", "engine", "windows", "n_windows", "rows", "chunks", "micro_batches", "queries",
    "wall_seconds", "first_step_seconds", "rows_per_second", "steady_rows_per_second",
    "throughput_ratio", "merges", "naive_merges",
    "native_row_copies", "row_copies_per_row", "output_rows", "equal_to_oracle",
)
ENGINE_STYLE = {"elastream": ("tab:blue", "o"), "native": ("tab:orange", "s"),
                "native-union": ("tab:green", "^")}


def write(rows: list[dict[str, Any]], meta: dict[str, Any], folder: Path) -> None:
    """``results.csv`` (one row per engine and window set) and ``results.json`` (plus config)."""
    write_csv(rows, folder / "results.csv", COLUMNS)
    write_json(folder / "results.json", meta, indent=2, results=rows)


def plot(rows: list[dict[str, Any]], sweep_rows: int, path: Path) -> None:
    """Throughput per engine vs overlapping windows; merges; row copies."""
    sweep = [r for r in rows if "sweep" in r["role"].split(",")]
    sets = sorted({(r["n_windows"], r["windows"]) for r in sweep})
    if not sets:
        return
    xs = list(range(len(sets)))
    labels = [f"{n}: {w}".replace(" ", "\n", 1) for n, w in sets]
    fig, (top, middle, bottom) = plt.subplots(3, 1, figsize=(8, 11))
    for engine, (color, marker) in ENGINE_STYLE.items():
        mine = {(r["n_windows"], r["windows"]): r for r in sweep if r["engine"] == engine}
        if not mine:
            continue
        for column, style, suffix in (("rows_per_second", "-", "all steps"),
                                      ("steady_rows_per_second", ":", "after the 1st step")):
            ys = [mine[s][column] if s in mine else float("nan") for s in sets]
            top.plot(xs, ys, linestyle=style, marker=marker, color=color,
                     label=f"{engine} ({suffix})")
    top.set_ylabel("rows / s (higher is better)")
    top.set_title(f"Throughput over {sweep_rows:,} flights, same chunks and session")
    top.set_ylim(bottom=0)
    top.legend(fontsize=8)

    per_set = {(r["n_windows"], r["windows"]): r for r in sweep}
    width = 0.38
    merges = [per_set[s]["merges"] for s in sets]
    naive = [per_set[s]["naive_merges"] for s in sets]
    middle.bar([x - width / 2 for x in xs], merges, width, label="elastream consolidation",
               color="tab:blue")
    middle.bar([x + width / 2 for x in xs], naive, width, label="naive (panes only)",
               color="tab:gray")
    middle.set_ylabel("merges per key per day")
    middle.set_title("Partials merged to build every window (Enorm §6.1)")
    middle.legend()

    copies = [per_set[s]["row_copies_per_row"] for s in sets]
    bottom.bar([x - width / 2 for x in xs], [1] * len(xs), width,
               label="elastream (one pane per row)", color="tab:blue")
    bottom.bar([x + width / 2 for x in xs], copies, width,
               label="native window(): Σ ceil(L/S)", color="tab:orange")
    bottom.set_ylabel("aggregation inputs per row")
    bottom.set_title("Copies of each input row fed to aggregation")
    bottom.legend()
    for axis in (top, middle, bottom):
        axis.set_xticks(xs, labels, fontsize=8)
        axis.grid(axis="y", alpha=0.3)
    bottom.set_xlabel("number of windows: window set")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def table(rows: list[dict[str, Any]]) -> str:
    """A fixed-width summary of every row."""
    head = (f"{'role':<10} {'engine':<12} {'windows':<26} {'rows':>9} {'wall s':>8} "
            f"{'rows/s':>9} {'steady/s':>9} {'el/nat':>6} {'batches':>7} {'merges':>7} "
            f"{'naive':>6} {'copies/row':>10} {'oracle':>6}")
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = r["throughput_ratio"]
        lines.append(
            f"{r['role']:<10} {r['engine']:<12} {r['windows']:<26} {r['rows']:>9,} "
            f"{r['wall_seconds']:>8.1f} {r['rows_per_second']:>9,.0f} "
            f"{r['steady_rows_per_second']:>9,.0f} "
            f"{'' if ratio is None else f'{ratio:.2f}':>6} {r['micro_batches']:>7} "
            f"{r['merges']:>7} {r['naive_merges']:>6} {r['row_copies_per_row']:>10} "
            f"{'yes' if r['equal_to_oracle'] else 'NO':>6}")
    return "\n".join(lines)
