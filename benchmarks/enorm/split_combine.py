"""Enorm Fig. 9 on Spark: throughput of a split vs a combined windowed job against keys per partial.

Madsen, Zhou, Su, *Enorm* (DEBS 2016), §7.1: the *simple job* aggregates over windows {5, 10}
and {5, 10, 15, 20, 25, 30} minutes, run *split* (compute partials, consolidate downstream) or
*combined* (every tuple executed in every window), while the number of keys per partial grows.
Here, on the same local Spark session, over the same replayed chunks (see
``benchmarks/windows_vs_native/engines.py``, whose two engines this program drives):

* **split** = elastream: Spark's builtin aggregation into pane partials, then one
  ``transformWithStateInPandas`` consolidate assembling every window from panes;
* **combined** = Spark's native ``groupBy(window(date, L), origin)``: each row into every window.

Input: synthetic uniform keys, as in the paper (§7 "Input"): ``--rows`` rows with event times
spread uniformly over ``--span-minutes`` minutes (from 2001-01-01, sorted; a seeded numpy
generator), key ``origin`` uniform over ``K`` keys for each ``K`` of ``--keys``, value ``delay``
uniform integers. Aggregates: ``sum:delay`` and ``count``. Every output is compared with the
pandas oracle of ``tests/oracle.py``; a mismatch fails the program (exit 1).

The cost-model terms of Enorm §5.1.1 are estimated from each pair of runs (see
:func:`cost_terms`) and :func:`elastream.algorithms.windows.split_combine.decide` is asked what
it would choose for a few latency thresholds and move rates.

Writes ``results/split_combine.csv`` (one row per run), ``results/split_combine.json`` (runs,
terms, decisions, settings) and ``results/fig9.png``; scratch goes to ``work/`` (git-ignored),
emptied at the start.

    nice -n 5 .venv/bin/python benchmarks/enorm/split_combine.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pyspark

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter

from elastream.algorithms.windows.split_combine import (
    Execution,
    PeriodObservation,
    decide,
    estimate_terms,
)
from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec, pane_ms, unique_specs
from elastream.runtimes.spark.session import get_spark

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parent
# benchmarks/common.py, the two engines of windows_vs_native, and the pandas oracle of the tests
sys.path[:0] = [str(BENCHMARKS), str(BENCHMARKS / "windows_vs_native"),
                str(BENCHMARKS.parent / "tests")]
import engines  # noqa: E402

from common import oracle_exit, positive, write_csv, write_json  # noqa: E402
from oracle import window_oracle  # noqa: E402

AGGS = tuple(AggSpec.parse(a) for a in ("sum:delay", "count"))
WINDOW_SETS = (("5m", "10m"), ("5m", "10m", "15m", "20m", "25m", "30m"))
KEY_GROUPS = 128
"""elastream's key groups (RunSpec's default): #keygroups of the cost model."""
MOVE_SECONDS = 0.075
"""L: seconds of pause per key group moved disruptively, from benchmarks/migration_spark
(stop-the-world, 25 key groups: first batch after the restart 2.82 s against 1.20 s for a
normal batch, plus a 0.24 s restart: (2.82 - 1.20 + 0.24) / 25 ≈ 0.075 s)."""
THRESHOLDS = (0.1, 1.0, 10.0)
MOVES_PER_PERIOD = (0, 4, 32)
START = pd.Timestamp("2001-01-01")
WORK = HERE / "work"
ENGINES = ("split", "combined")
"""split: elastream's panes + consolidate (engines.run_elastream); combined: Spark's native
window() (engines.run_native)."""
COLUMNS = ("keys", "keys_per_partial", "keys_per_kg_partial", "windows", "n_windows", "engine",
           "rows", "wall_seconds", "rows_per_second", "first_step_seconds",
           "steady_rows_per_second", "micro_batches", "output_rows", "equal_to_oracle")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="a short run: 150000 rows, keys 200 and 5000 (overriding --rows and "
                        "--keys), into results/quick/")
    p.add_argument("--rows", type=positive, default=300_000, help="rows per run (300000)")
    p.add_argument("--keys", type=positive, nargs="+", default=[200, 2_000, 8_000, 20_000],
                   help="distinct keys of the uniform key column, one level each "
                        "(200 2000 8000 20000)")
    p.add_argument("--span-minutes", type=positive, default=60,
                   help="event time the rows spread over (60: six 10-min, two 30-min periods)")
    p.add_argument("--rows-per-batch", type=positive, default=50_000,
                   help="rows per replayed chunk = micro-batch (50000)")
    p.add_argument("--slots", type=positive, default=4,
                   help="elastream slots = shuffle partitions of both engines (4)")
    p.add_argument("--warmup-rows", type=int, default=20_000,
                   help="untimed warm-up of both engines first (0: none)")
    p.add_argument("--move-seconds", type=float, default=MOVE_SECONDS,
                   help=f"L, pause per key group moved disruptively ({MOVE_SECONDS})")
    p.add_argument("--repeat", type=positive, default=1,
                   help="run each engine this many times per point, keep the fastest (1)")
    p.add_argument("--seed", type=int, default=9)
    p.add_argument("--replot", action="store_true",
                   help="only redraw fig9.png from the results folder's split_combine.json")
    p.add_argument("--out", type=Path, default=None,
                   help="results folder (results/, with --quick results/quick/)")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.keys = 150_000, [200, 5_000]
    if args.rows <= args.rows_per_batch:
        p.error(f"--rows must exceed --rows-per-batch ({args.rows_per_batch}): the steady rate "
                f"is read after the first micro-batch, got {args.rows}")
    if args.out is None:
        args.out = HERE / "results" / ("quick" if args.quick else "")
    return args


def synthetic(rows: int, keys: int, span_minutes: int, seed: int) -> pd.DataFrame:
    """Uniform keys over ``keys`` values, uniform event times (whole seconds) over the span."""
    rng = np.random.default_rng(seed)
    seconds = np.sort(rng.integers(0, span_minutes * 60, rows))
    width = len(str(keys - 1))
    return pd.DataFrame({
        "date": (START + pd.to_timedelta(seconds, unit="s")).as_unit("us"),
        "delay": rng.integers(-30, 300, rows, dtype=np.int64),
        "origin": np.char.add("k", np.char.zfill(rng.integers(0, keys, rows).astype(str), width)
                              ).astype(object),
    })


def keys_per_partial(frame: pd.DataFrame, pane: int) -> float:
    """Mean distinct keys per pane (over the panes holding rows): the size of a partial."""
    millis = frame["date"].astype("int64") // 1000
    return float(frame.groupby(millis // pane)["origin"].nunique().mean())


def _run(engine: str, spark: Any, replay: engines.Replay, windows: tuple[WindowSpec, ...],
         args: argparse.Namespace, folder: Path) -> engines.Measured:
    if engine == "split":
        return engines.run_elastream(spark, replay, windows, AGGS, args.slots,
                                     args.rows_per_batch, folder)
    return engines.run_native(spark, replay, windows, AGGS, args.slots, folder)


def cost_terms(split: dict[str, Any], combined: dict[str, Any], span_ms: int,
               move_seconds: float, moved: int) -> dict[str, Any]:
    """Enorm §5.1.1's terms from one split and one combined run of the same input and windows.

    Both runs are read *after their first step* (``steady_rows_per_second``: the first
    micro-batch of fresh queries also plans them and creates their state stores, a fixed cost
    that small inputs would spread over too few rows). Per row: the combined run spends
    ``c = 1 / its steady rows/s`` seconds, the split run ``s = 1 / its steady rows/s``.

    * period ``p`` = the longest window; ``T_p = rows · p / span`` (rows arrive uniformly);
    * ``W`` = windows (tumbling: the combined run executes each row once per window);
    * ``E = c / W``: seconds per row per window, everything Spark does for it included;
    * ``PW_p = p / pane``, ``#keygroups`` = 128 (elastream's key groups);
    * ``K_1 = max(0, s - E) · T_p / (PW_p · #keygroups)``: the split run's time beyond executing
      every row once, per key-group partial it ships to the consolidate in a period;
    * ``MK_p = moved`` (a scenario: these runs move nothing), ``L = move_seconds``.
    """
    windows = unique_specs([WindowSpec.parse(w) for w in split["windows"].split()])
    longest = max(w.length_ms for w in windows)
    t_p = split["rows"] * longest / span_ms
    n_windows, panes = len(windows), longest // pane_ms(windows)
    e = 1 / combined["steady_rows_per_second"] / n_windows
    extra = 1 / split["steady_rows_per_second"] - e
    k_1 = max(0.0, extra) * t_p / (panes * KEY_GROUPS)
    observed = PeriodObservation(rows=round(t_p), seconds_per_row=e, windows=n_windows,
                                 panes_per_window=panes, moved_key_groups=moved,
                                 seconds_per_partial=k_1, move_seconds=move_seconds)
    terms = estimate_terms([observed], key_groups=KEY_GROUPS)
    at_1s = decide(terms, latency_threshold=1.0, current=Execution.SPLIT)
    return {"keys": split["keys"], "keys_per_partial": split["keys_per_partial"],
            "windows": split["windows"], "T_p": terms.T_p, "E": terms.E, "W": terms.W,
            "PW_p": terms.PW_p, "key_groups": terms.key_groups, "split_extra_per_row": extra,
            "K_1": terms.K_1, "MK_p": terms.MK_p, "L": terms.L, "split_cpu": terms.split_cpu,
            "combine_cpu": terms.combine_cpu, "combine_latency": terms.combine_latency,
            "decisions": {str(t): decide(terms, latency_threshold=t, current=Execution.SPLIT)
                          .choice.value for t in THRESHOLDS},
            "reason_at_1s": at_1s.reason}


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    """Fig. 9: steady rows/s against keys per partial, one line per engine and window set."""
    fig, axis = plt.subplots(figsize=(6.4, 4.2))
    styles = {"split": ("tab:blue", "o"), "combined": ("tab:orange", "s")}
    for engine, (color, marker) in styles.items():
        for windows, line in zip((" ".join(ws) for ws in WINDOW_SETS), ("-", "--"), strict=True):
            mine = sorted((r["keys_per_partial"], r["steady_rows_per_second"]) for r in runs
                          if r["engine"] == engine and r["windows"] == windows)
            if mine:
                label = f"{engine}, {len(windows.split())} windows"
                axis.plot(*zip(*mine, strict=True), line, color=color, marker=marker,
                          label=label)
    axis.set_xscale("log")
    ticks = sorted({r["keys_per_partial"] for r in runs})
    axis.xaxis.set_minor_formatter(NullFormatter())
    axis.set_xticks(ticks, [f"{t:,.0f}" for t in ticks])
    axis.set_ylim(bottom=0)
    axis.set_xlabel("keys per partial (distinct keys per pane)")
    axis.set_ylabel("rows / s after the first micro-batch")
    axis.set_title("Split vs combined (Enorm Fig. 9) on local Spark")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _row(m: engines.Measured, replay: engines.Replay, engine: str, keys: int, per_pane: float,
         label: str, n_windows: int, problem: str | None) -> dict[str, Any]:
    """One run's CSV/JSON row; ``steady``: rows after the first chunk over the later steps."""
    steady = round((m.input_rows - replay.first_chunk_rows)
                   / max(m.wall_seconds - m.step_seconds[0], 1e-9), 1)
    return {
        "keys": keys, "keys_per_partial": round(per_pane, 1),
        "keys_per_kg_partial": round(per_pane / KEY_GROUPS, 2), "windows": label,
        "n_windows": n_windows, "engine": engine, "rows": m.input_rows,
        "wall_seconds": round(m.wall_seconds, 3),
        "rows_per_second": round(m.input_rows / m.wall_seconds, 1),
        "first_step_seconds": m.step_seconds[0], "steady_rows_per_second": steady,
        "micro_batches": m.micro_batches,
        "output_rows": len(m.results), "equal_to_oracle": problem is None,
        "step_seconds": list(m.step_seconds),
    }


def _fastest(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The repeat with the highest steady rate, with every repeat's rate and oracle verdict."""
    best = max(rows, key=lambda r: r["steady_rows_per_second"])
    return {**best, "all_steady_rows_per_second": [r["steady_rows_per_second"] for r in rows],
            "equal_to_oracle": all(r["equal_to_oracle"] for r in rows)}


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.replot:
        plot(json.loads((args.out / "split_combine.json").read_text())["runs"],
             args.out / "fig9.png")
        return 0
    began = time.perf_counter()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    sets = [unique_specs([WindowSpec.parse(w) for w in ws]) for ws in WINDOW_SETS]
    punct = engines.punct_after_ms(sets)
    span_ms = args.span_minutes * 60_000
    spark = get_spark()
    if args.warmup_rows > 0:
        warm = engines.prepare_frame(
            synthetic(args.warmup_rows, 1_000, args.span_minutes, args.seed),
            args.rows_per_batch, WORK / "warmup", punct)
        for engine in ENGINES:
            started = time.perf_counter()
            _run(engine, spark, warm, sets[0], args, WORK / "warmup" / engine)
            print(f"warm-up {engine}: {time.perf_counter() - started:.1f} s", file=sys.stderr)

    repeats: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    mismatches: dict[str, str] = {}
    for level, keys in enumerate(args.keys):
        frame = synthetic(args.rows, keys, args.span_minutes, args.seed + level)
        replay = engines.prepare_frame(frame, args.rows_per_batch, WORK / f"keys-{keys}", punct)
        for index, windows in enumerate(sets):
            label = " ".join(map(str, windows))
            expected = window_oracle(frame, time_col=engines.TIME_COL, key_col=engines.KEY_COL,
                                     aggs=AGGS, windows=windows)
            per_pane = keys_per_partial(frame, pane_ms(windows))
            # Alternate which engine goes first, so neither always runs on a warmer JVM.
            order = list(ENGINES) if (level + index) % 2 == 0 else list(ENGINES[::-1])
            for attempt in range(args.repeat):
                for engine in order if attempt % 2 == 0 else order[::-1]:
                    m = _run(engine, spark, replay, windows, args,
                             WORK / f"keys-{keys}" / f"{engine}-{index}-{attempt}")
                    problem = m.mismatch(expected)
                    if problem is not None:
                        mismatches[f"{engine} {label} keys={keys} #{attempt}"] = problem
                        print(f"{engine} {label} keys={keys}: differs from the oracle:\n"
                              f"{problem}", file=sys.stderr)
                    row = _row(m, replay, engine, keys, per_pane, label, len(windows), problem)
                    repeats.setdefault((engine, keys, label), []).append(row)
                    print(f"{engine:<9} keys={keys:<6} {label:<22} {m.wall_seconds:6.1f} s "
                          f"{row['steady_rows_per_second']:9,.0f} steady rows/s "
                          f"oracle {'ok' if problem is None else 'DIFFERS'}",
                          file=sys.stderr, flush=True)

    runs = [_fastest(rows) for rows in repeats.values()]
    terms = []
    for split in (r for r in runs if r["engine"] == "split"):
        combined = next(r for r in runs if r["engine"] == "combined"
                        and (r["keys"], r["windows"]) == (split["keys"], split["windows"]))
        terms += [cost_terms(split, combined, span_ms, args.move_seconds, moved)
                  for moved in MOVES_PER_PERIOD]
    elapsed = time.perf_counter() - began
    meta = {
        "benchmark": "enorm split_combine (Fig. 9)",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "window_sets": [" ".join(ws) for ws in WINDOW_SETS], "aggregates": [a.output_name
                                                                            for a in AGGS],
        "key_groups": KEY_GROUPS, "thresholds_seconds": THRESHOLDS,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "spark": pyspark.__version__, "master": spark.sparkContext.master},
        "elapsed_seconds": round(elapsed, 1), "oracle_mismatches": mismatches,
    }
    spark.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(runs, args.out / "split_combine.csv", COLUMNS)
    write_json(args.out / "split_combine.json", meta, indent=1, runs=runs, terms=terms)
    plot(runs, args.out / "fig9.png")
    print(table(runs, terms))
    print(f"\n{elapsed / 60:.1f} min in all; results in {args.out}")
    return oracle_exit(mismatches)


def table(runs: list[dict[str, Any]], terms: list[dict[str, Any]]) -> str:
    """Throughput per run, then the estimated terms and what decide() chose."""
    lines = [f"{'keys':>6} {'keys/partial':>12} {'windows':<22} {'split r/s':>10} "
             f"{'combined r/s':>12} {'split/comb':>10}   (steady rows/s: after the 1st step)"]
    for split in (r for r in runs if r["engine"] == "split"):
        comb = next(r for r in runs if r["engine"] == "combined"
                    and (r["keys"], r["windows"]) == (split["keys"], split["windows"]))
        lines.append(f"{split['keys']:>6} {split['keys_per_partial']:>12,.0f} "
                     f"{split['windows']:<22} {split['steady_rows_per_second']:>10,.0f} "
                     f"{comb['steady_rows_per_second']:>12,.0f} "
                     f"{split['steady_rows_per_second'] / comb['steady_rows_per_second']:>10.2f}"
                     f"   (all steps: {split['rows_per_second']:,.0f} vs "
                     f"{comb['rows_per_second']:,.0f})")
    lines += ["", f"{'keys':>6} {'windows':<22} {'E µs':>7} {'K_1 ms':>7} {'MK_p':>5} "
              f"{'split cpu':>9} {'comb cpu':>9} {'comb lat':>8}  decide @ "
              + " / ".join(f"{t:g} s" for t in THRESHOLDS)]
    for t in terms:
        lines.append(f"{t['keys']:>6} {t['windows']:<22} {t['E'] * 1e6:>7.2f} "
                     f"{t['K_1'] * 1e3:>7.2f} {t['MK_p']:>5g} {t['split_cpu']:>9.2f} "
                     f"{t['combine_cpu']:>9.2f} {t['combine_latency']:>8.2f}  "
                     + " / ".join(t["decisions"].values()))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
