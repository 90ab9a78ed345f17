"""Results of the FISH benchmark: CSV and JSON, one plot per figure, and the paper side by side."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import write_csv, write_json

COLUMNS = (
    "figure", "stream", "key", "z", "seed", "tuples", "workers", "capacity", "event", "scheme",
    "variant", "exec_time", "exec_vs_sg", "makespan_vs_sg", "memory", "memory_vs_fg",
    "latency_mean_us", "latency_p99_us", "sim_seconds",
)
STYLE = {"sg": ("tab:gray", "x"), "fg": ("black", "+"), "pkg": ("tab:orange", "s"),
         "dc": ("tab:green", "^"), "wc": ("tab:purple", "v"), "fish": ("tab:blue", "o")}
NAMES = {"sg": "SG", "fg": "FG", "pkg": "PKG", "dc": "D-C", "wc": "W-C", "fish": "FISH"}

PAPER = {
    "fig9_fish_worst": 1.07, "fig9_pkg_vs_fish": "1.19x–8.32x (MT), 1.12x–7.31x (AM)",
    "fig9_dc_wc_vs_fish": (7.44, 6.95), "fig10_fish_worst": 1.32,
    "fig10_dc_wc_vs_fish": (13.57, 12.05), "fig11_fish_memory": (1.11, 2.61),
    "fig11_sg_memory": (15.52, 88.32), "fig12_alpha1_vs_02_exec": 12.14,
    "fig12_alpha0_vs_02_memory_low_skew": 2.65, "fig16_count_vs_heuristic": 2.61,
    "fig17_hash_vs_ring_low_skew": 2.0, "storm_latency_reduction_vs_wc": (87.12, 76.34),
}


def write(rows: list[dict[str, Any]], meta: dict[str, Any], folder: Path) -> None:
    """``results.csv`` (one row per figure and run) and ``results.json`` (plus the set-up)."""
    write_csv(rows, folder / "results.csv", COLUMNS)
    write_json(folder / "results.json", meta, results=rows)





# ---------------------------------------------------------------- numbers beside the paper's


def _frame(rows: list[dict[str, Any]], figure: str) -> pd.DataFrame:
    frame = pd.DataFrame([r for r in rows if r["figure"] == figure], columns=list(COLUMNS))
    return frame


def _exec(frame: pd.DataFrame, scheme: str, variant: str | None = None) -> pd.Series:
    mine = frame[(frame.scheme == scheme) & ((frame.variant == variant) if variant else True)]
    index = ["key", "z", "seed", "tuples", "workers", "event"]
    return mine.set_index(index)["exec_time"]


def summary(rows: list[dict[str, Any]], headline_workers: int) -> dict[str, Any]:
    """The paper's claims, measured here; each goal says whether it is met."""
    out: dict[str, Any] = {"paper": PAPER}
    out.update(_fig9(_frame(rows, "9")))
    out.update(_fig10_11(_frame(rows, "10-11"), headline_workers))
    out.update(_runs(_frame(rows, "10-11-runs")))
    out.update(_fig12(_frame(rows, "12")))
    out.update(_fig16(_frame(rows, "16")))
    out.update(_fig17(_frame(rows, "17")))
    return out


def _ratio_max(frame: pd.DataFrame, num: str, den: str = "fish") -> float | None:
    ratio = (_exec(frame, num) / _exec(frame, den)).dropna()
    return float(ratio.max()) if len(ratio) else None


def _fig9(frame: pd.DataFrame) -> dict[str, Any]:
    if frame.empty:
        return {}
    fish = frame[frame.scheme == "fish"]
    worst = float(fish.exec_vs_sg.max())
    pkg = {}
    for key, part in frame.groupby("key"):
        ratio = (_exec(part, "pkg") / _exec(part, "fish")).droplevel(["z", "seed", "tuples",
                                                                        "event", "key"])
        pkg[str(key)] = {int(w): round(float(v), 3) for w, v in ratio.items()}
    return {"fig9": {
        "fish_worst_exec_vs_sg": worst, "goal_fish_at_most_1.07_sg": worst <= 1.07,
        "pkg_over_fish_by_workers": pkg, "dc_over_fish_max": _ratio_max(frame, "dc"),
        "wc_over_fish_max": _ratio_max(frame, "wc"),
    }}


def _fig10_11(frame: pd.DataFrame, headline_workers: int) -> dict[str, Any]:
    if frame.empty:
        return {}
    if headline_workers not in set(frame.workers):
        headline_workers = int(frame.workers.max())
    top = frame[frame.workers == headline_workers]
    head = top[top.tuples == top.tuples.max()]
    fish = head[head.scheme == "fish"].set_index("z")
    faster = {}
    for other in ("pkg", "dc", "wc"):
        them = head[head.scheme == other].set_index("z")
        faster[other] = int((fish.exec_time < them.exec_time).sum())
    by_w = {}
    for (tuples, workers), part in frame.groupby(["tuples", "workers"]):
        f = part[part.scheme == "fish"]
        by_w[f"{int(workers)} workers, {int(tuples):,} tuples"] = {
            "fish_exec_vs_sg_max": float(f.exec_vs_sg.max()),
            "fish_memory_vs_fg": [float(f.memory_vs_fg.min()), float(f.memory_vs_fg.max())],
            "sg_memory_vs_fg": [float(part[part.scheme == "sg"].memory_vs_fg.min()),
                                float(part[part.scheme == "sg"].memory_vs_fg.max())],
            "dc_over_fish_max": _ratio_max(part, "dc"),
            "wc_over_fish_max": _ratio_max(part, "wc"),
            "pkg_over_fish_max": _ratio_max(part, "pkg"),
        }
    wc = head[head.scheme == "wc"].set_index("z")
    worst_exec, worst_mem = float(fish.exec_vs_sg.max()), float(fish.memory_vs_fg.max())
    return {"fig10_11": {
        "headline": f"{headline_workers} workers, {int(head.tuples.max()):,} tuples",
        "fish_exec_vs_sg_max": worst_exec, "goal_fish_at_most_1.32_sg": worst_exec <= 1.32,
        "fish_memory_vs_fg_max": worst_mem, "goal_fish_memory_at_most_2.61_fg": worst_mem <= 2.61,
        "skews": len(fish),
        "fish_faster_than_at_skews": faster,
        "goal_fish_faster_than_pkg_dc_wc": all(n == len(fish) for n in faster.values()),
        "latency_mean_reduction_vs_wc_pct": _reduction(fish.latency_mean_us, wc.latency_mean_us),
        "latency_p99_reduction_vs_wc_pct": _reduction(fish.latency_p99_us, wc.latency_p99_us),
        "by_workers": by_w,
    }}


def _reduction(fish: pd.Series, other: pd.Series) -> dict[str, float]:
    cut = 100 * (1 - fish / other)
    return {f"z={z:g}": round(float(v), 2) for z, v in cut.items()}


def _runs(frame: pd.DataFrame) -> dict[str, Any]:
    if frame.empty:
        return {}
    mean = frame.groupby(["scheme", "z"])[["exec_vs_sg", "memory_vs_fg"]].mean()
    fish = mean.loc["fish"]
    return {"paper_runs": {
        "runs": int(frame.seed.nunique()), "tuples_per_run": int(frame.tuples.iloc[0]),
        "workers": int(frame.workers.iloc[0]),
        "fish_exec_vs_sg_mean_max": float(fish.exec_vs_sg.max()),
        "fish_memory_vs_fg_mean": [float(fish.memory_vs_fg.min()),
                                   float(fish.memory_vs_fg.max())],
        "sg_memory_vs_fg_mean": [float(mean.loc["sg"].memory_vs_fg.min()),
                                 float(mean.loc["sg"].memory_vs_fg.max())],
    }}


def _fig12(frame: pd.DataFrame) -> dict[str, Any]:
    if frame.empty:
        return {}
    never = _exec(frame, "fish", "alpha=1") / _exec(frame, "fish", "alpha=0.2")
    low = frame[frame.z == frame.z.min()].set_index(["workers", "variant"]).memory
    memory = {int(w): round(float(low[(w, "alpha=0")] / low[(w, "alpha=0.2")]), 3)
              for w in sorted(frame.workers.unique())}
    return {"fig12": {"alpha1_over_alpha02_exec_max": float(never.max()),
                      "alpha0_over_alpha02_memory_lowest_skew": memory}}


def _fig16(frame: pd.DataFrame) -> dict[str, Any]:
    if frame.empty:
        return {}
    ratio = _exec(frame, "fish", "count") / _exec(frame, "fish", "heuristic")
    return {"fig16": {"count_over_heuristic_exec": [float(ratio.min()), float(ratio.max())]}}


def _fig17(frame: pd.DataFrame) -> dict[str, Any]:
    if frame.empty:
        return {}
    out = {}
    for event, part in frame.groupby("event"):
        mem = part.set_index(["z", "workers", "variant"]).memory
        ratio = {f"z={z:g}": [round(float(mem[(z, w, "hash")] / mem[(z, w, "ring")]), 3)
                              for w in sorted(part.workers.unique())]
                 for z in sorted(part.z.unique())}
        out[str(event)] = ratio
    return {"fig17": {"hash_over_ring_memory_by_workers": out}}


# ---------------------------------------------------------------- tables for the README


def markdown(rows: list[dict[str, Any]], headline_workers: int) -> str:
    """Tables of the headline numbers (paste into the README)."""
    parts = []
    f9 = _frame(rows, "9")
    if not f9.empty:
        parts.append("### Fig. 9 (flights): execution time ÷ SG; FISH memory ÷ FG\n")
        parts.append(_pivot(f9, ["key", "workers"], ("pkg", "dc", "wc", "fish"), "exec_vs_sg",
                            extra=("fish", "memory_vs_fg", "FISH mem")))
    f10 = _frame(rows, "10-11")
    if not f10.empty:
        for (tuples, workers), part in f10.groupby(["tuples", "workers"]):
            if workers != headline_workers and tuples != f10.tuples.min():
                continue
            parts.append(f"### Figs. 10/11: {int(workers)} workers, {int(tuples):,} tuples\n")
            parts.append(_both(part))
    runs = _frame(rows, "10-11-runs")
    if not runs.empty:
        parts.append(f"### Figs. 10/11 as {runs.seed.nunique()} separate runs of "
                     f"{int(runs.tuples.iloc[0]):,} tuples, {int(runs.workers.iloc[0])} "
                     "workers (mean over runs)\n")
        mean = runs.groupby(["z", "scheme"], as_index=False)[
            ["exec_vs_sg", "memory_vs_fg", "latency_mean_us"]].mean()
        parts.append(_both(mean))
    for figure, title in (("12", "Fig. 12: FISH vs α"), ("13", "Fig. 13: FISH vs θ")):
        frame = _frame(rows, figure)
        if not frame.empty:
            parts.append(f"### {title}: execution time ÷ SG / memory ÷ FG\n")
            parts.append(_sweep(frame))
    f16 = _frame(rows, "16")
    if not f16.empty:
        parts.append("### Fig. 16 (half the workers 2x): execution time ÷ SG on the same "
                     "cluster, heuristic / count\n")
        parts.append(_variants(f16[f16.scheme == "fish"], "exec_vs_sg", ("heuristic", "count")))
    f17 = _frame(rows, "17")
    if not f17.empty:
        for event, part in f17.groupby("event"):
            parts.append(f"### Fig. 17 ({event} a worker halfway): memory ÷ FG, ring / hash\n")
            parts.append(_variants(part, "memory_vs_fg", ("ring", "hash")))
    return "\n".join(parts)


def _fmt(value: float) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.3f}"


def _table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines) + "\n"


def _pivot(frame: pd.DataFrame, index: list[str], schemes: tuple[str, ...], column: str,
           extra: tuple[str, str, str] | None = None) -> str:
    body = []
    for keys, part in frame.groupby(index):
        by = part.set_index("scheme")
        cells = [str(k) for k in keys] + [_fmt(by.loc[s, column]) for s in schemes]
        if extra:
            cells.append(_fmt(by.loc[extra[0], extra[1]]))
        body.append(cells)
    header = index + [NAMES[s] for s in schemes] + ([extra[2]] if extra else [])
    return _table(header, body)


def _both(frame: pd.DataFrame) -> str:
    body = []
    for z, part in frame.groupby("z"):
        by = part.set_index("scheme")
        body.append([f"{z:g}"] + [_fmt(by.loc[s, "exec_vs_sg"]) for s in
                                  ("fg", "pkg", "dc", "wc", "fish")]
                    + [_fmt(by.loc[s, "memory_vs_fg"]) for s in
                       ("sg", "pkg", "dc", "wc", "fish")]
                    + [_fmt(by.loc["wc", "latency_mean_us"]),
                       _fmt(by.loc["fish", "latency_mean_us"])])
    header = (["z"] + [f"exec {NAMES[s]}" for s in ("fg", "pkg", "dc", "wc", "fish")]
              + [f"mem {NAMES[s]}" for s in ("sg", "pkg", "dc", "wc", "fish")]
              + ["lat W-C µs", "lat FISH µs"])
    return _table(header, body)


def _sweep(frame: pd.DataFrame) -> str:
    zs = sorted(frame.z.unique())
    cols = [(w, z) for w in sorted(frame.workers.unique()) for z in (zs[0], zs[-1])]
    body = []
    for variant, part in frame.groupby("variant", sort=False):
        by = part.set_index(["workers", "z"])
        body.append([str(variant)] + [
            f"{by.loc[c, 'exec_vs_sg']:.3f} / {by.loc[c, 'memory_vs_fg']:.2f}" for c in cols])
    return _table(["variant"] + [f"{w} w, z={z:g}" for w, z in cols], body)


def _variants(frame: pd.DataFrame, column: str, variants: tuple[str, str]) -> str:
    zs = sorted(frame.z.unique())
    body = []
    for w, part in frame.groupby("workers"):
        by = part.set_index(["variant", "z"])[column]
        body.append([str(w)] + [f"{by[(variants[0], z)]:.3f} / {by[(variants[1], z)]:.3f}"
                                for z in zs])
    return _table(["workers"] + [f"z={z:g}" for z in zs], body)


# ---------------------------------------------------------------- plots


def plot_all(rows: list[dict[str, Any]], folder: Path, headline_workers: int) -> list[Path]:
    """One PNG per figure present in ``rows``; returns their paths."""
    drawn = []
    for name, draw in (("fig09.png", _plot9), ("fig10.png", _plot10), ("fig11.png", _plot11),
                       ("fig10_11_runs.png", _plot_runs), ("fig12.png", _plot12),
                       ("fig13.png", _plot13), ("fig16.png", _plot16),
                       ("fig17.png", _plot17)):
        fig = draw(rows, headline_workers)
        if fig is not None:
            fig.tight_layout()
            fig.savefig(folder / name, dpi=110)
            plt.close(fig)
            drawn.append(folder / name)
    return drawn


def _log_y(axis: Any) -> None:
    """Log scale with plain numbers (1, 2, 5, 10 …), if the data spans more than 1.5x."""
    low, high = axis.dataLim.y0, axis.dataLim.y1
    if not (low > 0 and high / low > 1.5):
        return  # a narrow range reads better on a linear axis
    axis.set_yscale("log")
    axis.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.yaxis.set_minor_formatter(NullFormatter())


def _workers_axis(axis: Any, workers: list[int]) -> None:
    axis.set_xscale("log", base=2)
    axis.set_xticks(workers, [str(w) for w in workers])
    axis.grid(alpha=0.3)


def _plot9(rows: list[dict[str, Any]], _: int) -> Any:
    frame = _frame(rows, "9")
    if frame.empty:
        return None
    keys = list(dict.fromkeys(frame.key))
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 4), squeeze=False)
    for axis, key in zip(axes[0], keys, strict=True):
        part = frame[frame.key == key]
        for scheme in ("pkg", "dc", "wc", "fish"):
            mine = part[part.scheme == scheme].sort_values("workers")
            color, marker = STYLE[scheme]
            axis.plot(mine.workers, mine.exec_vs_sg, marker=marker, color=color,
                      label=NAMES[scheme])
        _workers_axis(axis, sorted(part.workers.unique()))
        _log_y(axis)
        axis.set_title(f"flights, key {key}")
        axis.set_xlabel("workers")
        axis.set_ylabel("execution time ÷ SG")
        axis.legend()
    fig.suptitle("Fig. 9: execution time normalised to SG on real data (3 M flights)")
    return fig


def _by_skew_panels(frame: pd.DataFrame, column: str, schemes: tuple[str, ...], title: str,
                    ylabel: str, headline_workers: int, log: bool) -> Any:
    zs = sorted(frame.z.unique())
    cols = min(3, len(zs))
    rows_n = math.ceil(len(zs) / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.6 * cols, 3.6 * rows_n), squeeze=False)
    grid = frame[frame.tuples == frame.tuples.min()]
    head = frame[(frame.tuples == frame.tuples.max()) & (frame.workers == headline_workers)]
    for axis, z in zip(axes.flat, zs, strict=False):
        for scheme in schemes:
            color, marker = STYLE[scheme]
            mine = grid[(grid.z == z) & (grid.scheme == scheme)].sort_values("workers")
            axis.plot(mine.workers, mine[column], marker=marker, color=color,
                      label=NAMES[scheme])
            if frame.tuples.max() != frame.tuples.min():
                star = head[(head.z == z) & (head.scheme == scheme)]
                axis.scatter(star.workers, star[column], marker="*", s=140, color=color,
                             edgecolor="black", linewidth=0.5, zorder=3)
        _workers_axis(axis, sorted(grid.workers.unique()))
        if log:
            _log_y(axis)
        axis.set_title(f"z = {z:g}")
        axis.set_xlabel("workers")
        axis.set_ylabel(ylabel)
    for axis in list(axes.flat)[len(zs):]:
        axis.axis("off")
    axes[0][0].legend(fontsize=8)
    stars = (f"; ★ = {int(frame.tuples.max()):,} tuples at {headline_workers} workers"
             if frame.tuples.max() != frame.tuples.min() else "")
    fig.suptitle(f"{title}\n(lines: {int(grid.tuples.min()):,} tuples{stars})")
    return fig


def _plot10(rows: list[dict[str, Any]], headline_workers: int) -> Any:
    frame = _frame(rows, "10-11")
    if frame.empty:
        return None
    return _by_skew_panels(frame, "exec_vs_sg", ("pkg", "dc", "wc", "fish"),
                           "Fig. 10: execution time ÷ SG, time-evolving Zipf",
                           "execution time ÷ SG", headline_workers, log=True)


def _plot11(rows: list[dict[str, Any]], headline_workers: int) -> Any:
    frame = _frame(rows, "10-11")
    if frame.empty:
        return None
    return _by_skew_panels(frame, "memory_vs_fg", ("sg", "pkg", "dc", "wc", "fish"),
                           "Fig. 11: memory ÷ FG, time-evolving Zipf", "memory ÷ FG",
                           headline_workers, log=True)


def _plot_runs(rows: list[dict[str, Any]], _: int) -> Any:
    frame = _frame(rows, "10-11-runs")
    if frame.empty:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for axis, column, schemes, label in (
            (left, "exec_vs_sg", ("pkg", "dc", "wc", "fish"), "execution time ÷ SG"),
            (right, "memory_vs_fg", ("sg", "pkg", "dc", "wc", "fish"), "memory ÷ FG")):
        for scheme in schemes:
            stats = frame[frame.scheme == scheme].groupby("z")[column].agg(["mean", "min",
                                                                            "max"])
            color, marker = STYLE[scheme]
            axis.errorbar(stats.index, stats["mean"],
                          yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                          marker=marker, color=color, capsize=3, label=NAMES[scheme])
        _log_y(axis)
        axis.set_xlabel("skew z")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle(f"Figs. 10/11 as {frame.seed.nunique()} separate runs of "
                 f"{int(frame.tuples.iloc[0]):,} tuples\n{int(frame.workers.iloc[0])} workers "
                 "(mean, min–max over runs)")
    return fig


def _sweep_plot(frame: pd.DataFrame, title: str) -> Any:
    workers = sorted(frame.workers.unique())
    fig, axes = plt.subplots(2, len(workers), figsize=(4 * len(workers), 7), squeeze=False)
    variants = list(dict.fromkeys(frame.variant))
    colors = plt.get_cmap("viridis")([i / max(1, len(variants) - 1)
                                      for i in range(len(variants))])
    for col, w in enumerate(workers):
        for variant, color in zip(variants, colors, strict=True):
            mine = frame[(frame.workers == w) & (frame.variant == variant)].sort_values("z")
            axes[0][col].plot(mine.z, mine.exec_vs_sg, marker="o", color=color, label=variant)
            axes[1][col].plot(mine.z, mine.memory_vs_fg, marker="o", color=color,
                              label=variant)
        axes[0][col].set_title(f"{w} workers")
        for row, label in ((0, "execution time ÷ SG"), (1, "memory ÷ FG")):
            axes[row][col].set_xlabel("skew z")
            axes[row][col].set_ylabel(label)
            axes[row][col].grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{title} ({int(frame.tuples.iloc[0]):,} tuples)")
    return fig


def _plot12(rows: list[dict[str, Any]], _: int) -> Any:
    frame = _frame(rows, "12")
    return None if frame.empty else _sweep_plot(frame, "Fig. 12: FISH with decaying factor α")


def _plot13(rows: list[dict[str, Any]], _: int) -> Any:
    frame = _frame(rows, "13")
    return None if frame.empty else _sweep_plot(frame, "Fig. 13: FISH with hot-key threshold θ")


def _variant_panels(frame: pd.DataFrame, events: list[str], column: str,
                    variants: dict[str, str], ylabel: str) -> Any:
    workers = sorted(frame.workers.unique())
    fig, axes = plt.subplots(len(events), len(workers),
                             figsize=(4 * len(workers), 3.5 * len(events)), squeeze=False)
    for row, event in enumerate(events):
        for col, w in enumerate(workers):
            axis = axes[row][col]
            for (variant, label), color in zip(variants.items(), ("tab:blue", "tab:red"),
                                               strict=True):
                mine = frame[(frame.workers == w) & (frame.variant == variant)
                             & (frame.event == event)].sort_values("z")
                axis.plot(mine.z, mine[column], marker="o", color=color, label=label)
            axis.set_title(f"{w} workers" + (f", {event} a worker halfway" if event else ""))
            axis.set_xlabel("skew z")
            axis.set_ylabel(ylabel)
            axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    return fig


def _plot16(rows: list[dict[str, Any]], _: int) -> Any:
    frame = _frame(rows, "16")
    if frame.empty:
        return None
    fig = _variant_panels(frame, [""], "exec_vs_sg",
                          {"heuristic": "FISH (heuristic assignment)",
                           "count": "FISH, fewest tuples sent"},
                          "execution time ÷ SG (same cluster)")
    fig.suptitle("Fig. 16: FISH with / without heuristic worker assignment\nhalf the workers "
                 f"twice as fast ({int(frame.tuples.iloc[0]):,} tuples)")
    return fig


def _plot17(rows: list[dict[str, Any]], _: int) -> Any:
    frame = _frame(rows, "17")
    if frame.empty:
        return None
    fig = _variant_panels(frame, ["add", "remove"], "memory_vs_fg",
                          {"ring": "FISH with CH (ring)", "hash": "FISH without CH (mod n)"},
                          "memory ÷ FG (static)")
    fig.suptitle("Fig. 17: memory of FISH with / without consistent hashing\none worker "
                 f"added or removed halfway ({int(frame.tuples.iloc[0]):,} tuples)")
    return fig


def main() -> None:
    """Redraw the plots and summary.md of a finished run: ``report.py [results/results.json]``."""
    import sys

    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results" / (
        "results.json")
    data = json.loads(path.read_text())
    workers = int(data["config"]["headline_workers"])
    plot_all(data["results"], path.parent, workers)
    (path.parent / "summary.md").write_text(markdown(data["results"], workers))


if __name__ == "__main__":
    main()
