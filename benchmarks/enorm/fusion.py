"""Enorm's fusion heuristics on random Large Jobs (Madsen et al., §7.6: Figs. 14–15).

For each job size (default 50, 100, 150 operators) ``--jobs`` random jobs (default 500) from
§7's generator (``elastream.algorithms.fusion.large_job``), each fused by score COMM, score PA
and the §7.6 baseline: the average number of components (Fig. 14) and the average
inter-component traffic in percent (Fig. 15). Then the COMM greedy against the exhaustive
optimum on ``--gap-jobs`` small jobs (default 200 of 7 operators).

Writes results/fusion.csv (one row per size and score), results/fusion.json (the same, the
greedy's gap and the run's command, settings and time) and results/fusion_components.png,
results/fusion_traffic.png. Single process, pure Python; run it niced on a shared machine:

    nice -n 10 .venv/bin/python benchmarks/enorm/fusion.py [--jobs N] [--sizes N…]
        [--gap-jobs N] [--gap-operators N] [--seed S] [--out DIR]

``--replot`` redraws the two PNGs from ``DIR/fusion.csv`` without running anything.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from elastream.algorithms.fusion.exhaustive import MAX_OPERATORS, exhaustive
from elastream.algorithms.fusion.fuse import SCORES, fuse
from elastream.algorithms.fusion.large_job import large_job

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import positive, read_csv_rows, run_meta, write_csv, write_json

HERE = Path(__file__).resolve().parent
COLUMNS = ("operators", "score", "jobs", "components_mean", "components_std",
           "traffic_pct_mean", "traffic_pct_std", "solve_ms_mean")
LABELS = {"comm": "score = COMM", "pa": "score = PA", "baseline": "baseline"}
TYPES = {"operators": int, "jobs": int, **{c: float for c in COLUMNS[3:]}}
COLORS = {"comm": "tab:blue", "pa": "tab:orange", "baseline": "tab:gray"}
PAPER = {
    "fig14": "COMM 'actually employs the largest number of components'; PA is the score that "
             "'tries to minimize the number of components'",
    "fig15": "COMM obtains 'the lowest inter-component communication'; best approach overall",
    "values": "none: Figs. 14-15 are images our text copy of the paper does not hold",
}


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=positive, default=500, help="random jobs per size (500)")
    p.add_argument("--sizes", type=positive, nargs="+", default=[50, 100, 150],
                   help="operators per job (50 100 150)")
    p.add_argument("--gap-jobs", type=positive, default=200,
                   help="small jobs for the greedy-vs-exhaustive gap (200)")
    p.add_argument("--gap-operators", type=positive, default=7,
                   help=f"operators of those jobs (7; at most {MAX_OPERATORS})")
    p.add_argument("--seed", type=int, default=0, help="base seed (0)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    p.add_argument("--replot", action="store_true",
                   help="only redraw the plots from the folder's fusion.csv")
    args = p.parse_args(argv)
    if not 4 <= args.gap_operators <= MAX_OPERATORS or min(args.sizes) < 4:
        p.error(f"job sizes must be >= 4 operators, --gap-operators <= {MAX_OPERATORS}")
    return args


def job_seed(base: int, operators: int, k: int) -> int:
    """The seed of job ``k`` of a size: distinct across sizes and runs of different ``base``."""
    return base * 1_000_000 + operators * 1_000 + k


def figures_14_15(sizes: list[int], jobs: int, base: int) -> list[dict[str, Any]]:
    """Per size and score: mean and spread of #components and traffic, mean solve time."""
    rows = []
    for n in sizes:
        found: dict[str, list[tuple[int, float, float]]] = {s: [] for s in SCORES}
        began = time.perf_counter()
        for k in range(jobs):
            seed = job_seed(base, n, k)
            g = large_job(n, seed=seed)
            for score in SCORES:
                t0 = time.perf_counter()
                f = fuse(g, score=score, seed=seed)
                found[score].append((f.num_components, f.inter_component_traffic_pct,
                                     time.perf_counter() - t0))
        for score in SCORES:
            comps, traffic, secs = zip(*found[score], strict=True)
            rows.append({"operators": n, "score": score, "jobs": jobs,
                         "components_mean": statistics.fmean(comps),
                         "components_std": statistics.pstdev(comps),
                         "traffic_pct_mean": statistics.fmean(traffic),
                         "traffic_pct_std": statistics.pstdev(traffic),
                         "solve_ms_mean": 1000 * statistics.fmean(secs)})
        print(f"{n} operators: {jobs} jobs in {time.perf_counter() - began:.0f} s",
              file=sys.stderr, flush=True)
    return rows


def greedy_gap(jobs: int, operators: int, base: int) -> dict[str, Any]:
    """Every score against the exhaustive optimum on small jobs (percentage points of traffic)."""
    optimum, by_score = [], {s: [] for s in SCORES}
    for k in range(jobs):
        seed = job_seed(base, operators, k) + 500_000  # not the jobs of Figs. 14-15
        g = large_job(operators, seed=seed)
        best = exhaustive(g).inter_component_traffic_pct
        optimum.append(best)
        for score in SCORES:
            by_score[score].append(fuse(g, score=score, seed=seed).inter_component_traffic_pct
                                   - best)
    out: dict[str, Any] = {"jobs": jobs, "operators": operators,
                           "optimum_traffic_pct_mean": statistics.fmean(optimum)}
    for score, gaps in by_score.items():
        if min(gaps) < -1e-9:
            raise AssertionError(f"{score} beat the exhaustive optimum: {min(gaps)}")
        out[score] = {"gap_pp_mean": statistics.fmean(gaps), "gap_pp_max": max(gaps),
                      "optimal_share": sum(g < 1e-9 for g in gaps) / jobs}
    return out


def plot(rows: list[dict[str, Any]], column: str, ylabel: str, title: str, path: Path) -> None:
    """One line per score over the job sizes, ± one standard deviation as a band."""
    fig, ax = plt.subplots(figsize=(5.4, 3.6))
    for score in SCORES:
        part = [r for r in rows if r["score"] == score]
        x = [r["operators"] for r in part]
        mean = [r[f"{column}_mean"] for r in part]
        std = [r[f"{column}_std"] for r in part]
        ax.plot(x, mean, marker="o", color=COLORS[score], label=LABELS[score])
        ax.fill_between(x, [m - s for m, s in zip(mean, std, strict=True)],
                        [m + s for m, s in zip(mean, std, strict=True)],
                        color=COLORS[score], alpha=0.15)
    ax.set_xlabel("#operators")
    ax.set_ylabel(ylabel)
    ax.set_xticks(sorted({r["operators"] for r in rows}))
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_both(rows: list[dict[str, Any]], folder: Path) -> None:
    """Figs. 14 and 15 as PNGs in ``folder``."""
    runs = f"{rows[0]['jobs']} random jobs per size, band ±1 sd"
    plot(rows, "components", "avg. #components",
         f"Fig. 14: avg. #components\n({runs})", folder / "fusion_components.png")
    plot(rows, "traffic_pct", "avg. inter-component traffic (%)",
         f"Fig. 15: avg. inter-component communication\n({runs})",
         folder / "fusion_traffic.png")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.replot:
        plot_both(read_csv_rows(args.out / "fusion.csv", TYPES), args.out)
        return 0
    began = time.perf_counter()
    rows = figures_14_15(args.sizes, args.jobs, args.seed)
    gap = greedy_gap(args.gap_jobs, args.gap_operators, args.seed)
    elapsed = time.perf_counter() - began
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "fusion.csv", COLUMNS, digits=4)
    meta = run_meta("enorm/fusion.py", argv, args)
    write_json(args.out / "fusion.json", {**meta, "elapsed_seconds": round(elapsed, 1)},
               figures_14_15=[{k: round(v, 4) if isinstance(v, float) else v
                               for k, v in r.items()} for r in rows],
               greedy_vs_exhaustive=gap, paper=PAPER)
    plot_both(rows, args.out)
    for r in rows:
        print(f"{r['operators']:>4} {r['score']:<9} components {r['components_mean']:6.2f}  "
              f"traffic {r['traffic_pct_mean']:5.2f} %  solve {r['solve_ms_mean']:7.2f} ms")
    for score in SCORES:
        g = gap[score]
        print(f"gap vs exhaustive ({gap['jobs']} jobs of {gap['operators']}): {score:<9} "
              f"mean {g['gap_pp_mean']:.2f} pp, max {g['gap_pp_max']:.2f} pp, optimal in "
              f"{100 * g['optimal_share']:.0f} %")
    print(f"{elapsed:.0f} s in all; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
