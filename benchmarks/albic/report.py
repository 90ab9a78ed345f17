"""Results of the ALBIC benchmark: CSV and JSON, the goals, a markdown summary and plots."""

from __future__ import annotations

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
from matplotlib.ticker import MaxNLocator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import READ_BACK_DIGITS, read_csv_rows, write_csv, write_json

COLUMNS = (
    "figure", "nodes_initial", "key_groups", "operators", "max_migrations", "varies", "drift",
    "collocation", "seed", "variant", "time_limit", "algo", "round", "status", "load_distance",
    "load_distance_before", "collocation_factor", "load_index", "migrations", "migration_cost",
    "solve_seconds", "nodes", "removing", "on_removed", "added", "terminated",
)
TYPES = {
    **dict.fromkeys(("nodes_initial", "key_groups", "operators", "max_migrations", "seed",
                     "round", "migrations", "nodes", "removing", "on_removed", "added",
                     "terminated"), int),
    **dict.fromkeys(("varies", "drift", "collocation", "time_limit", "load_distance",
                     "load_distance_before", "collocation_factor", "load_index",
                     "migration_cost", "solve_seconds"), float),
}
"""How :func:`main` reads ``results.csv`` back; the other columns are strings."""

PAPER = {
    "figs2_4": "§5.1: \"our MILP approach consistently outperforms Flux, even after just a few "
               "seconds of optimization by the solver. The MILP approach quickly converges "
               "towards a pretty good solution (within a few seconds), which can be improved "
               "only slightly by further solving. It is only for the largest cluster ... that it "
               "could be beneficial to solve for more than a few seconds.\" (CPLEX 12.6.1, "
               "Core i7-2600K)",
    "fig7": "§5.2.1 (Real Job 1, 20 workers, maxMigrations 13): \"The MILP approach achieves "
            "a stable load distance consistently below 1%, while Flux exhibits significant "
            "fluctuations up to 7%.\"",
    "fig5": "§5.1 (60 nodes, maxMigrations 20, ten nodes marked, 1OL / 5OL): \"the integrated "
            "approach obtains a good load distance much faster than the non-integrated approach "
            "for both cases, while being able to complete scaling-in within a similar time "
            "period.\"",
    "fig10_11": "§5.3: \"ALBIC achieves a smaller, hence better, load distance than COLA. ALBIC "
                "also outperforms COLA in terms of collocation by up to ten percent.\" Fig. 11: "
                "\"ALBIC significantly and consistently outperforms COLA in both load distance "
                "and collocation for various system sizes.\" §5.4 (Real Job 2): \"COLA migrates "
                "close to 200 key groups per SPL, while ALBIC only migrates 10 key groups.\"",
}
FLOOR = 1e-2
"""Load distances below this are drawn at it (log axes)."""
FIG10_TRACE = 50.0
"""Fig. 10's max collocation whose collocation factor is drawn round by round."""
GOOD_LOAD_DISTANCE = 10.0
"""Fig. 5: a round's load distance counts as good at or below this (percent)."""


def write(rows: list[dict[str, Any]], meta: dict[str, Any], folder: Path) -> None:
    """``results.csv`` (one row per round) and ``results.json`` (set-up, summary; no rows)."""
    write_csv(rows, folder / "results.csv", COLUMNS, READ_BACK_DIGITS)
    write_json(folder / "results.json", meta)


def write_summaries(rows: list[dict[str, Any]], result: dict[str, Any], folder: Path) -> None:
    """``summary.md`` and ``summary.json``."""
    (folder / "summary.md").write_text(markdown(rows, result))
    (folder / "summary.json").write_text(json.dumps(result, indent=1) + "\n")


def _frame(rows: list[dict[str, Any]], figure: str) -> pd.DataFrame:
    return pd.DataFrame([r for r in rows if r["figure"] == figure], columns=list(COLUMNS))


def _collocation_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([r for r in rows if r["figure"] in ("10", "11")], columns=list(COLUMNS))


def _clean(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) else round(float(value), 4)
    if isinstance(value, np.integer | np.bool_):
        return value.item()
    return value


# ---------------------------------------------------------------------------------- summary


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Every figure's numbers and goals (a goal is ``None`` when its figure did not run)."""
    out: dict[str, Any] = {"paper": PAPER}
    out["figs2_4"] = _figs2_4(_frame(rows, "2-4"))
    out["time"] = _time(_frame(rows, "time"))
    out["fig5"] = _fig5(_frame(rows, "5"))
    out["fig10_11"] = _fig10_11(_collocation_frame(rows))
    return out


def _figs2_4(frame: pd.DataFrame) -> dict[str, Any]:
    if frame.empty:
        return {}
    keys = ["nodes_initial", "key_groups", "max_migrations", "varies"]
    settings = []
    for key, group in frame.groupby(keys):
        flux, milp = group[group.algo == "flux"], group[group.algo == "milp"]
        paired = flux.merge(milp, on=["seed", "round"], suffixes=("_flux", "_milp"))
        settings.append({
            **dict(zip(keys, key, strict=True)),
            "flux_mean": flux.load_distance.mean(), "flux_max": flux.load_distance.max(),
            "milp_mean": milp.load_distance.mean(), "milp_max": milp.load_distance.max(),
            "milp_mean_after_round_1": milp[milp["round"] > 1].load_distance.mean(),
            "flux_mean_after_round_1": flux[flux["round"] > 1].load_distance.mean(),
            "rounds_milp_above_flux": int((paired.load_distance_milp
                                           > paired.load_distance_flux + 1e-9).sum()),
            "rounds": len(paired),
            "milp_solve_mean": milp.solve_seconds.mean(),
            "milp_solve_max": milp.solve_seconds.max(),
            "milp_migrations_mean": milp.migrations.mean(),
            "flux_migrations_mean": flux.migrations.mean(),
        })
    table = pd.DataFrame(settings)
    milp = frame[frame.algo == "milp"]
    largest = milp[milp.nodes_initial == 60]
    small = table[table.nodes_initial == 20]
    return {
        "settings": [{k: _clean(v) for k, v in s.items()} for s in settings],
        "goal_milp_below_flux_every_setting": bool((table.milp_mean < table.flux_mean).all()),
        "settings_milp_below_flux": int((table.milp_mean < table.flux_mean).sum()),
        "settings_total": len(table),
        "goal_20_nodes_mean_le_1pct": bool((small.milp_mean <= 1.0).all())
        if len(small) else None,
        "milp_20_nodes_mean_worst": _clean(small.milp_mean.max()) if len(small) else None,
        "milp_20_nodes_after_round_1_worst": _clean(small.milp_mean_after_round_1.max())
        if len(small) else None,
        "goal_60x1200_le_2s": bool(largest.solve_seconds.max() <= 2.0) if len(largest) else None,
        "milp_60x1200_solve_max": _clean(largest.solve_seconds.max()) if len(largest) else None,
        "milp_60x1200_solve_p95": _clean(largest.solve_seconds.quantile(0.95))
        if len(largest) else None,
        "milp_60x1200_solve_mean": _clean(largest.solve_seconds.mean())
        if len(largest) else None,
    }


def _time(frame: pd.DataFrame) -> dict[str, Any]:
    if frame.empty:
        return {}
    out = []
    for (nodes, budget), group in frame.groupby(["nodes_initial", "max_migrations"]):
        flux = group[group.algo == "flux"].load_distance.iloc[0]
        milp = group[group.algo == "milp"].sort_values("time_limit")
        out.append({"nodes": int(nodes), "max_migrations": int(budget), "flux": _clean(flux),
                    "milp": {f"{t:g}": _clean(d) for t, d in zip(milp.time_limit,
                                                                 milp.load_distance,
                                                                 strict=True)},
                    "milp_seconds": {f"{t:g}": _clean(s) for t, s in zip(
                        milp.time_limit, milp.solve_seconds, strict=True)}})
    return {"round_1": out}


def _first_round(group: pd.DataFrame, mask: pd.Series) -> float:
    hit = group[mask]["round"]
    return float(hit.min()) if len(hit) else math.nan


def _fig5(frame: pd.DataFrame) -> dict[str, Any]:
    if frame.empty:
        return {}
    cases: dict[str, dict[str, Any]] = {}
    for variant, group in frame.groupby("variant"):
        empties, goods, means = [], [], []
        for _, run in group.groupby("seed"):
            empty = _first_round(run, run.on_removed == 0)
            empties.append(empty)
            goods.append(_first_round(run, run.load_distance <= GOOD_LOAD_DISTANCE))
            until = run if math.isnan(empty) else run[run["round"] <= empty]
            means.append(until.load_distance.mean())
        # A run that never gets there counts as one round past the last.
        past = float(group["round"].max()) + 1
        cases[str(variant)] = {
            "rounds_to_empty_b": float(np.mean(np.nan_to_num(empties, nan=past))),
            "rounds_to_good_load_distance": float(np.mean(np.nan_to_num(goods, nan=past))),
            "mean_load_distance_while_scaling_in": float(np.mean(means)),
            "max_load_distance": float(group.load_distance.max()),
            "final_load_distance": float(group[group["round"] == group["round"].max()]
                                         .load_distance.mean()),
            "solve_max": float(group.solve_seconds.max()),
        }
    goals: dict[str, Any] = {}
    for ol in ("1OL", "5OL"):
        integrated, separate = cases.get(f"{ol} integrated"), cases.get(f"{ol} separate")
        if not (integrated and separate):
            continue
        goals[f"goal_{ol}_integrated_good_sooner"] = bool(
            integrated["rounds_to_good_load_distance"]
            < separate["rounds_to_good_load_distance"])
        goals[f"goal_{ol}_similar_scale_in_time"] = bool(
            integrated["rounds_to_empty_b"] <= separate["rounds_to_empty_b"] + 2)
    cleaned = {name: {k: _clean(v) for k, v in c.items()} for name, c in cases.items()}
    return {"good_load_distance": GOOD_LOAD_DISTANCE, "cases": cleaned, **goals}


def _fig10_11(frame: pd.DataFrame) -> dict[str, Any]:
    if frame.empty:
        return {"skipped": "planners albic and cola not registered"}
    out = []
    for key, group in frame.groupby(["figure", "nodes_initial", "collocation", "algo"]):
        last = group[group["round"] == group["round"].max()]
        out.append({"figure": key[0], "nodes": int(key[1]), "collocation": float(key[2]),
                    "algo": key[3],
                    "collocation_factor_final": _clean(last.collocation_factor.mean()),
                    "load_distance_mean": _clean(group.load_distance.mean()),
                    "load_index_final": _clean(last.load_index.mean()),
                    "migrations_mean": _clean(group.migrations.mean()),
                    "solve_mean": _clean(group.solve_seconds.mean())})
    table = pd.DataFrame(out)
    goals = {}
    pivot = table.pivot_table(index=["figure", "nodes", "collocation"], columns="algo",
                              values=["collocation_factor_final", "load_distance_mean",
                                      "migrations_mean"])
    if {"albic", "cola"} <= set(table.algo):
        col, ld, mig = (pivot[m] for m in ("collocation_factor_final", "load_distance_mean",
                                           "migrations_mean"))
        goals["goal_albic_collocation_ge_cola"] = bool((col.albic >= col.cola - 1e-9).all())
        goals["goal_albic_load_distance_le_cola"] = bool((ld.albic <= ld.cola + 1e-9).all())
        goals["goal_albic_10x_fewer_migrations"] = bool(
            (mig.albic * 10 <= mig.cola + 1e-9).all())
    return {"rows": out, **goals}


# ---------------------------------------------------------------------------------- markdown


def markdown(rows: list[dict[str, Any]], result: dict[str, Any]) -> str:
    """The tables README.md quotes."""
    parts = []
    figs = result.get("figs2_4", {})
    if figs:
        parts.append("### Figs. 2–4: load distance (%) after each plan, mean (max) over rounds "
                     "and seeds\n")
        parts.append("| nodes × kgs | maxMigr. | varies | Flux | MILP | MILP after r1 | "
                     "rounds MILP > Flux | MILP s mean / max |")
        parts.append("|---|---|---|---|---|---|---|---|")
        for s in figs["settings"]:
            parts.append(
                f"| {s['nodes_initial']} × {s['key_groups']} | {s['max_migrations']} | "
                f"{s['varies']:g} | "
                f"{s['flux_mean']:.2f} ({s['flux_max']:.2f}) | "
                f"{s['milp_mean']:.2f} ({s['milp_max']:.2f}) | "
                f"{s['milp_mean_after_round_1']:.2f} | "
                f"{s['rounds_milp_above_flux']}/{s['rounds']} | "
                f"{s['milp_solve_mean']:.2f} / {s['milp_solve_max']:.2f} |")
        parts.append("")
    timing = result.get("time", {})
    if timing:
        limits = list(timing["round_1"][0]["milp"])
        parts.append("### Solving time: round 1, varies 40, load distance (%) by MILP time "
                     "limit (s)\n")
        parts.append("| nodes | maxMigr. | Flux | " + " | ".join(
            f"MILP {t} s" for t in limits) + " |")
        parts.append("|---|---|---|" + "---|" * len(limits))
        for r in timing["round_1"]:
            cells = " | ".join(f"{r['milp'][t]:.2f} ({r['milp_seconds'][t]:.2f} s)"
                               for t in limits)
            parts.append(f"| {r['nodes']} | {r['max_migrations']} | {r['flux']:.2f} | {cells} |")
        parts.append("")
    fig5 = result.get("fig5", {})
    if fig5:
        parts.append(f"### Fig. 5: scale-in (good = load distance ≤ "
                     f"{fig5['good_load_distance']:g}%)\n")
        parts.append("| case | rounds to empty B | rounds to good LD | mean LD while scaling in |"
                     " max LD | final LD |")
        parts.append("|---|---|---|---|---|---|")
        for name, c in fig5["cases"].items():
            parts.append(f"| {name} | {c['rounds_to_empty_b']} | "
                         f"{c['rounds_to_good_load_distance']} | "
                         f"{c['mean_load_distance_while_scaling_in']} | "
                         f"{c['max_load_distance']} | {c['final_load_distance']} |")
        parts.append("")
    coll = result.get("fig10_11", {})
    if coll.get("rows"):
        parts.append("### Figs. 10–11: collocation (final round), load distance and migrations "
                     "(means over rounds)\n")
        parts.append("| fig | nodes | max collocation % | algo | collocation % | LD % | "
                     "load index % | migrations/round |")
        parts.append("|---|---|---|---|---|---|---|---|")
        for r in coll["rows"]:
            parts.append(f"| {r['figure']} | {r['nodes']} | {r['collocation']:g} | "
                         f"{r['algo']} | {r['collocation_factor_final']} | "
                         f"{r['load_distance_mean']} | {r['load_index_final']} | "
                         f"{r['migrations_mean']} |")
        parts.append("")
    elif coll:
        parts.append(f"### Figs. 10–11: {coll.get('skipped')}\n")
    return "\n".join(parts)


# ---------------------------------------------------------------------------------- plots


def plot_all(rows: list[dict[str, Any]], folder: Path) -> None:
    """One PNG per figure that ran."""
    frame = _frame(rows, "2-4")
    for number, (nodes, _, _) in zip((2, 3, 4), ((20, 0, 0), (40, 0, 0), (60, 0, 0)),
                                     strict=True):
        part = frame[frame.nodes_initial == nodes]
        if not part.empty:
            _plot_rounds(part, folder / f"fig{number:02d}.png", number)
    if not _frame(rows, "time").empty:
        _plot_time(_frame(rows, "time"), folder / "fig02_04_time.png")
    if not _frame(rows, "5").empty:
        _plot_fig5(_frame(rows, "5"), folder / "fig05.png")
    coll = _collocation_frame(rows)
    if not coll.empty:
        _plot_fig10_11(coll, folder / "fig10_11.png")


def _plot_rounds(frame: pd.DataFrame, path: Path, number: int) -> None:
    budgets = sorted(frame.max_migrations.unique())
    fig, axes = plt.subplots(1, len(budgets), figsize=(4 * len(budgets), 3.4), sharey=True,
                             squeeze=False)
    colours = dict(zip(sorted(frame.varies.unique()), ("tab:blue", "tab:orange", "tab:red",
                                                       "tab:green", "tab:purple"),
                       strict=False))
    for ax, budget in zip(axes[0], budgets, strict=True):
        part = frame[frame.max_migrations == budget]
        for (varies, algo), group in part.groupby(["varies", "algo"]):
            mean = group.groupby("round").load_distance.mean().clip(lower=FLOOR)
            ax.plot(mean.index, mean.values, color=colours[varies],
                    linestyle="-" if algo == "milp" else "--",
                    marker="o" if algo == "milp" else "x", markersize=3,
                    label=f"{'MILP' if algo == 'milp' else 'Flux'} varies={varies:g}")
        ax.set_title(f"MaxMigrations = {budget}")
        ax.set_xlabel("round")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("load distance after plan (%)")
    axes[0][-1].legend(fontsize=7)
    first = frame.iloc[0]
    fig.suptitle(f"Fig. {number}: {first.nodes_initial} nodes, {first.key_groups} key groups, "
                 f"{first.operators} operators (drift ±{first.drift:g}% per round)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_time(frame: pd.DataFrame, path: Path) -> None:
    clusters = sorted(frame.nodes_initial.unique())
    fig, axes = plt.subplots(1, len(clusters), figsize=(4.5 * len(clusters), 3.4),
                             squeeze=False)
    for ax, nodes in zip(axes[0], clusters, strict=True):
        part = frame[frame.nodes_initial == nodes]
        for i, (budget, group) in enumerate(part.groupby("max_migrations")):
            colour = f"C{i}"
            milp = group[group.algo == "milp"].sort_values("time_limit")
            ax.plot(milp.time_limit, milp.load_distance.clip(lower=FLOOR), marker="o",
                    color=colour, label=f"MILP M={budget}")
            flux = group[group.algo == "flux"].load_distance.iloc[0]
            ax.axhline(flux, color=colour, linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("MILP time limit (s); dashed: Flux")
        ax.set_title(f"{nodes} nodes, round 1, varies 40")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("load distance (%)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_fig5(frame: pd.DataFrame, path: Path) -> None:
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 3.8))
    styles = {"1OL integrated": ("tab:blue", "-"), "1OL separate": ("tab:blue", "--"),
              "5OL integrated": ("tab:red", "-"), "5OL separate": ("tab:red", "--")}
    last = int(frame["round"].max())
    names, empties, reached = [], [], []
    for variant, group in frame.groupby("variant"):
        colour, line = styles.get(str(variant), ("black", "-"))
        mean = group.groupby("round").load_distance.mean().clip(lower=FLOOR)
        left.plot(mean.index, mean.values, color=colour, linestyle=line, label=str(variant))
        held = group.groupby("round").on_removed.mean()
        middle.plot(held.index, held.values, color=colour, linestyle=line, label=str(variant))
        per_seed = [float(run[run.on_removed == 0]["round"].min())
                    for _, run in group.groupby("seed")]
        names.append(str(variant))
        reached.append(not any(math.isnan(r) for r in per_seed))
        empties.append(float(np.mean(np.nan_to_num(per_seed, nan=last + 1))))
    left.set_yscale("log")
    left.set_ylabel("load distance after plan (%)")
    left.set_title("(a) Load distance")
    middle.set_yscale("symlog", linthresh=1.0)
    middle.set_ylabel("key groups left on B")
    middle.set_title("(b) Draining B")
    for ax in (left, middle):
        ax.set_xlabel("round")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    bars = right.bar(names, empties, color=[styles.get(n, ("black", ""))[0] for n in names],
                     alpha=0.8)
    for bar, ok in zip(bars, reached, strict=True):
        if not ok:
            bar.set_hatch("//")
            right.annotate(f"> {last}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                           ha="center", va="bottom", fontsize=8)
    right.set_ylabel("rounds until B holds no key group")
    right.set_title("(c) Time to scale in (hatched: not by the last round)")
    right.tick_params(axis="x", labelsize=8)
    fig.suptitle("Fig. 5: 60 nodes × 1200 key groups, maxMigrations 20, 10 nodes removed")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_fig10_11(frame: pd.DataFrame, path: Path) -> None:
    fig, axes = plt.subplots(1, 4, figsize=(18, 3.8))
    fig10 = frame[frame.figure == "10"]
    for algo, group in fig10.groupby("algo"):
        last = group[group["round"] == group["round"].max()]
        col = last.groupby("collocation").collocation_factor.mean()
        ld = group.groupby("collocation").load_distance.mean()
        axes[0].plot(col.index, col.values, marker="o", label=str(algo))
        axes[1].plot(ld.index, ld.values, marker="o", label=str(algo))
        mid = group[group.collocation == FIG10_TRACE]
        trace = mid.groupby("round").collocation_factor.mean()
        axes[2].plot(trace.index, trace.values, label=str(algo))
    axes[0].set_xlabel("max collocation (%)")
    axes[0].set_ylabel("collocation factor, final round (%)")
    axes[0].set_title("Fig. 10: 40 nodes, 800 kgs, 20 ops")
    axes[1].set_xlabel("max collocation (%)")
    axes[1].set_ylabel("load distance, mean over rounds (%)")
    axes[2].set_xlabel("round")
    axes[2].set_ylabel("collocation factor (%)")
    axes[2].set_title(f"Fig. 10 at max collocation {FIG10_TRACE:g}%, by round")
    fig11 = frame[frame.figure == "11"]
    algos = sorted(fig11.algo.unique())
    clusters = sorted(fig11.nodes_initial.unique())
    width = 0.8 / max(1, len(algos))
    for i, algo in enumerate(algos):
        part = fig11[fig11.algo == algo]
        last = part[part["round"] == part["round"].max()]
        values = [last[last.nodes_initial == n].collocation_factor.mean() for n in clusters]
        axes[3].bar(np.arange(len(clusters)) + i * width, values, width, label=algo)
    axes[3].set_xticks(np.arange(len(clusters)) + width * (len(algos) - 1) / 2,
                       [f"{n} nodes" for n in clusters])
    axes[3].set_ylabel("collocation factor, final round (%)")
    axes[3].set_title("Fig. 11: max collocation 50%")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    """Redraw the plots, summary.md and summary.json from results/results.csv."""
    folder = Path(__file__).resolve().parent / "results"
    rows = read_csv_rows(folder / "results.csv", TYPES)
    plot_all(rows, folder)
    write_summaries(rows, summary(rows), folder)


if __name__ == "__main__":
    main()
