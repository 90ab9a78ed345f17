"""Enorm's migration kinds on the real Spark pipeline: disruptive against smooth (Figs. 10–13).

The flights (key ``origin``, G = ``--key-groups`` key groups on ``--slots`` slots, windows 1h,
6h/1h, 24h/1h; sum, count, average delay — the jobs of ``benchmarks/migration_spark``) replayed
in micro-batches of ``--rows-per-batch``. The consolidate stage is Enorm's rigid stateful
component (§5): a key group that moves there goes by one of the two kinds of
:data:`elastream.core.options.MIGRATION_KINDS`:

* **disruptive** — its window state is handed to the new slot through the migration store; its
  new partials wait at the new slot until the hand-off arrives;
* **smooth** — the old slot keeps its state and finishes the windows that start before the
  move's boundary, the new slot builds the windows from it on; both get the key group's pane
  partials (duplicated) until the watermark passes boundary + the longest window (24 h).

(a) **One move** (Figs. 10–12): after batch ``--move-at`` a planner moves ``--fractions`` of the
key groups (a seeded choice) each to the next slot, once. Per run: the job's wall time, the
batch durations around the move, the parts handed over (``HandOff.rows``), the partial rows
beyond the 0 % run's (smooth's duplicates), the batches until the migration completed
(disruptive: until the last hand-off was merged; smooth: until ``smooth_in_transit`` is 0
again) and how many batches later than in the 0 % run the moved key groups' windows came out.

(b) **Ramp** (Fig. 13): the flights plus extra copies of the records of the key groups hashed to
one slot, ramping up over the first half of the stream, then the same for the next slot; the
Flux planner (``--ramp-max-moves`` a step) keeps moving key groups; batch duration over time.

Both kinds run side by side in one program, alternating which goes first, so a shared machine's
load hits them alike. Every run's results are checked against the pandas oracle
(``tests/oracle.py``); the program exits 1 if any differs. Writes results/migration_kinds.csv
(one row per run), results/migration_kinds.json (the runs, every batch, the command and
settings), results/migration_kinds_moves.png, results/migration_kinds_batches.png and
results/migration_kinds_ramp.png; scratch in work/.

    nice -n 5 .venv/bin/python benchmarks/enorm/migration_kinds.py [--quick] [--rows N]
        [--rows-per-batch N] [--fractions F…] [--move-at B] [--no-ramp]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pyspark

from elastream.control.controller import Controller
from elastream.control.planners import job_planner
from elastream.core.aggregates import AggSpec
from elastream.core.keygroups import key_groups
from elastream.core.load import LoadSnapshot
from elastream.core.options import MIGRATION_KINDS, OPTIONS
from elastream.core.plan import Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable
from elastream.core.spec import RunSpec
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.file_run import FileRun
from elastream.runtimes.spark.session import get_spark
from elastream.stores.migration_store import MigrationStore

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parent
sys.path.insert(0, str(BENCHMARKS))  # benchmarks/common.py
sys.path.insert(0, str(BENCHMARKS.parent / "tests"))  # the pandas oracle and the job readers
from common import (  # noqa: E402
    first_flights,
    positive,
    run_meta,
    spark_job_outputs,
    write_csv,
    write_json,
)
from oracle import compare_results, window_oracle  # noqa: E402
from spark_jobs import results_by_batch  # noqa: E402

AGGS: tuple[AggSpec, ...] = tuple(AggSpec.parse(a) for a in OPTIONS["aggs"].cli_default)
WINDOWS: tuple[WindowSpec, ...] = tuple(WindowSpec.parse(w) for w in OPTIONS["windows"].cli_default)
"""``elastream run``'s default job, as ``benchmarks/migration_spark`` runs it."""
WORK = HERE / "work"
COLOURS = {"disruptive": "tab:red", "smooth": "tab:blue", "none": "tab:grey"}


@dataclass
class MoveOnce:
    """A planner that, at the first snapshot of batch ``at`` or later, moves ``fraction`` of
    the key groups (a seeded choice) each to the next slot; nothing before or after."""

    fraction: float
    at: int
    seed: int = 7
    moved: tuple[int, ...] = field(default=(), init=False)

    def __call__(self, snapshot: LoadSnapshot, current: RoutingTable, *,
                 options: object = None) -> Plan:
        if self.moved or snapshot.batch_id < self.at or self.fraction <= 0:
            return Plan(PlanStatus.UNCHANGED)
        count = round(self.fraction * current.num_key_groups)
        chosen = np.random.default_rng(self.seed).permutation(current.num_key_groups)[:count]
        self.moved = tuple(sorted(int(kg) for kg in chosen))
        return Plan(PlanStatus.FEASIBLE, tuple(
            Move(kg, current.slot_of[kg], (current.slot_of[kg] + 1) % current.num_slots)
            for kg in self.moved))


@dataclass
class Run:
    """One finished job: its settings, metrics, results and where they are."""

    kind: str
    label: str
    folder: Path
    wall_seconds: float
    metrics: list[dict[str, Any]]
    results: pd.DataFrame
    exact: bool
    moved: tuple[int, ...] = ()


def job_spec(source: Path, folder: Path, kind: str, args: argparse.Namespace,
             **overrides: Any) -> RunSpec:
    """The benchmark's job over ``source`` with the migration kind ``kind``."""
    settings: dict[str, Any] = dict(slots=args.slots, key_groups=args.key_groups,
                                    planner="hash", rows_per_batch=args.rows_per_batch)
    settings.update(overrides)
    return RunSpec.of(input=source, output=folder, time_col="date", key_col="origin", aggs=AGGS,
                      windows=WINDOWS, migration_kind=kind, **settings)


def run_job(spark: Any, spec: RunSpec, controller: Controller, expected: pd.DataFrame,
            label: str) -> tuple[float, list[dict[str, Any]], pd.DataFrame, bool]:
    """Run one job; its wall time, metrics, results and whether they equal the oracle's."""
    shutil.rmtree(spec.files.output, ignore_errors=True)
    started = time.perf_counter()
    FileRun(spark, spec, controller).run()
    wall = time.perf_counter() - started
    metrics, results = spark_job_outputs(spec.files.output)
    try:
        compare_results(results, expected)
        exact = True
    except AssertionError as problem:
        print(f"{label}: DIFFERS FROM THE ORACLE: {problem}", file=sys.stderr, flush=True)
        exact = False
    return wall, metrics, results, exact


def alternating(kinds: Sequence[str], index: int) -> list[str]:
    """``kinds`` in order for even ``index``, reversed for odd (load hits both alike)."""
    return list(kinds) if index % 2 == 0 else list(reversed(kinds))


# -- reading a run's metrics --------------------------------------------------------------------
def per_batch(run: Run) -> list[dict[str, Any]]:
    """One row per micro-batch with records: its duration, and its step's record fields."""
    rows = []
    for m in run.metrics:
        if m["batch_id"] < 0:
            continue
        first = m["first_batch_id"]
        for i, ms in enumerate(m["batch_ms_each"]):
            batch = first + i
            last = batch == m["batch_id"]
            rows.append({
                "label": run.label, "kind": run.kind, "batch": batch, "batch_ms": ms,
                "step_rows": m["valid_rows"] if last else 0,
                "partial_rows": m["partial_rows"] if last else 0,
                "moves": m["moves"] if last else 0,
                "smooth_in_transit": m.get("smooth_in_transit", 0) if last else None,
                "max_mean_slot_load": m["max_mean_slot_load"] if last else None,
            })
    return rows


def effective_batch(metrics: list[dict[str, Any]], version: int) -> int | None:
    """The first micro-batch whose compute stage routed by ``version`` or a later one."""
    used = [u["batch"] for m in metrics for u in m.get("routing_versions_used", [])
            if "compute" in u and u["compute"][1] >= version]
    return min(used, default=None)


def emission_delay(run: Run, base: Run, moved: Sequence[int], key_group_count: int
                   ) -> dict[str, Any]:
    """How many batches later than in ``base`` the windows of key groups ``moved`` came out."""
    if not moved:
        return {"moved_windows": 0, "delayed_windows": 0, "mean_delay_batches": 0.0,
                "max_delay_batches": 0}
    bounds = ["key", "window_start", "window_length"]
    mine = results_by_batch(run.folder).dropna(subset=["key"])[[*bounds, "batch"]]
    theirs = results_by_batch(base.folder).dropna(subset=["key"])[[*bounds, "batch"]]
    both = mine.merge(theirs, on=bounds, suffixes=("", "_base"))
    keys = both["key"].unique()
    kg = dict(zip(keys, key_groups(keys, key_group_count), strict=True))
    both = both[both["key"].map(kg).isin(set(moved))]
    delay = both["batch"] - both["batch_base"]
    return {"moved_windows": len(both), "delayed_windows": int((delay > 0).sum()),
            "mean_delay_batches": round(float(delay.mean()), 3) if len(both) else 0.0,
            "max_delay_batches": int(delay.max()) if len(both) else 0}


def summarize_move(run: Run, base: Run, args: argparse.Namespace) -> dict[str, Any]:
    """A one-move run's row of the CSV (``base``: the same kind's 0 % run)."""
    batches = pd.DataFrame(per_batch(run))
    moved_at = [m for m in run.metrics if m["moves"] > 0]
    version = moved_at[0]["routing_version"] if moved_at else None
    start = effective_batch(run.metrics, version) if version is not None else None
    handed = [h for h in MigrationStore(run.folder / "_migration").hand_offs()
              if version is not None and h.version == version]
    done = None
    if start is not None and run.kind == "smooth":
        done = next((m["batch_id"] for m in run.metrics if m["batch_id"] >= start
                     and m.get("smooth_in_transit", 1) == 0), None)
    elif start is not None:
        done = max((h.taken for h in handed), default=None)
    centre = start if start is not None else args.move_at + 1
    around = batches[batches["batch"].between(centre, centre + 2)]
    steady = batches[(batches["batch"] > 1) & ~batches["batch"].between(centre - 1, centre + 4)
                     & (batches["step_rows"] > 0)]
    return {
        "experiment": "move", "kind": run.kind, "fraction": run.label.split(":")[1],
        "moved_key_groups": len(run.moved), "equal_to_oracle": run.exact,
        "wall_seconds": round(run.wall_seconds, 2),
        "batch_seconds_total": round(float(batches["batch_ms"].sum()) / 1000, 2),
        "move_batch": start,
        "batch_ms_around_move_mean": round(float(around["batch_ms"].mean()), 1),
        "batch_ms_around_move_max": int(around["batch_ms"].max()),
        "batch_ms_elsewhere_mean": round(float(steady["batch_ms"].mean()), 1),
        "around_over_elsewhere": round(float(around["batch_ms"].mean()
                                             / steady["batch_ms"].mean()), 3),
        "hand_offs": len(handed), "handed_rows": sum(max(h.rows, 0) for h in handed),
        "partial_rows": int(batches["partial_rows"].sum()),
        "extra_partial_rows": int(batches["partial_rows"].sum()
                                  - pd.DataFrame(per_batch(base))["partial_rows"].sum()),
        "completed_batch": done,
        "batches_to_complete": None if done is None or start is None else done - start + 1,
        **emission_delay(run, base, run.moved, args.key_groups),
    }


# -- the two experiments ------------------------------------------------------------------------
def move_runs(spark: Any, flights: pd.DataFrame, args: argparse.Namespace
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(a): every fraction under both kinds; the CSV rows and every batch."""
    source = WORK / "flights.parquet"
    flights.to_parquet(source, index=False)
    expected = window_oracle(flights, time_col="date", key_col="origin", aggs=AGGS,
                             windows=WINDOWS)
    runs: dict[tuple[str, float, int], Run] = {}
    for repeat in range(args.repeats):
        for index, fraction in enumerate(args.fractions):
            for kind in alternating(MIGRATION_KINDS, index + repeat):
                label = f"{kind}:{round(fraction * 100)}%"
                planner = MoveOnce(fraction, args.move_at)
                spec = job_spec(source, WORK / f"move-{kind}-{round(fraction * 100)}-{repeat}",
                                kind, args)
                wall, metrics, results, exact = run_job(spark, spec, Controller(planner, None),
                                                        expected, label)
                runs[(kind, fraction, repeat)] = Run(kind, label, spec.files.output, wall, metrics,
                                                     results, exact, planner.moved)
                print(f"{label} #{repeat}: {wall:.1f} s, oracle "
                      f"{'equal' if exact else 'DIFFERS'}", flush=True)
    base = min(args.fractions)
    rows = [{**summarize_move(run, runs[(kind, base, repeat)], args), "repeat": repeat}
            for (kind, _, repeat), run in runs.items()]
    rows.sort(key=lambda r: (r["repeat"], float(r["fraction"].rstrip("%")), r["kind"]))
    batches = [{**b, "repeat": repeat} for (_, _, repeat), run in runs.items()
               for b in per_batch(run)]
    return rows, batches


def medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per experiment, kind and fraction: the median of every numeric column over repeats."""
    frame = pd.DataFrame(rows)
    keys = ["experiment", "kind", "fraction"]
    numeric = [c for c in frame.columns if c not in (*keys, "repeat", "equal_to_oracle")
               and pd.api.types.is_numeric_dtype(frame[c])]
    grouped = frame.groupby(keys, sort=False)
    out = grouped[numeric].median().round(3)
    out["equal_to_oracle"] = grouped["equal_to_oracle"].all()
    out["repeats"] = grouped.size()
    return [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
            for r in out.reset_index().to_dict("records")]


def ramp_flights(flights: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """The flights plus extra copies of hot key groups' records, ramping up in two waves.

    Wave ``w`` (first half, second half of the stream) makes the key groups that hash routing
    puts on slot ``w`` hot: a record at fraction ``p`` of its wave gets ``p · extra`` copies
    on average (seeded draws), so their load climbs to ``1 + extra`` times their share.
    """
    slot_of = np.asarray(RoutingTable.hashed(args.key_groups, args.slots).slot_of)
    origins = flights["origin"].unique()
    kg = dict(zip(origins, key_groups(origins, args.key_groups), strict=True))
    slot = slot_of[flights["origin"].map(kg).to_numpy()]
    position = np.arange(len(flights)) / len(flights)
    wave = (position >= 0.5).astype(int)
    within = (position - 0.5 * wave) / 0.5
    hot = slot == wave
    draw = np.random.default_rng(args.seed).random(len(flights))
    copies = np.where(hot, np.floor(within * args.ramp_extra + draw), 0).astype(int)
    extra = flights.loc[np.repeat(np.arange(len(flights)), copies)]
    return (pd.concat([flights, extra]).sort_values("date", kind="stable")
            .reset_index(drop=True))


def ramp_runs(spark: Any, flights: pd.DataFrame, args: argparse.Namespace
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(b): the ramp under Flux with both kinds, and without moves; rows and every batch."""
    skewed = ramp_flights(flights, args)
    source = WORK / "ramp.parquet"
    skewed.to_parquet(source, index=False)
    expected = window_oracle(skewed, time_col="date", key_col="origin", aggs=AGGS,
                             windows=WINDOWS)
    rows, batches = [], []
    order = [(r, kind) for r in range(args.repeats)
             for kind in [*alternating(MIGRATION_KINDS, r), "none"]]
    for index, (repeat, kind) in enumerate(order):
        label = f"ramp:{kind}"
        planner = "hash" if kind == "none" else "flux"
        spec = job_spec(source, WORK / f"ramp-{kind}-{repeat}",
                        "disruptive" if kind == "none" else kind, args, planner=planner,
                        max_moves=args.ramp_max_moves)
        plan, plan_options = job_planner(spec)
        wall, metrics, results, exact = run_job(spark, spec, Controller(plan, plan_options),
                                                expected, label)
        run = Run(kind, label, spec.files.output, wall, metrics, results, exact)
        print(f"{label}: {wall:.1f} s, oracle {'equal' if exact else 'DIFFERS'} ({index})",
              flush=True)
        frame = pd.DataFrame(per_batch(run))
        data = frame[frame["step_rows"] > 0]
        handed = MigrationStore(run.folder / "_migration").hand_offs()
        rows.append({
            "experiment": "ramp", "kind": kind, "fraction": "", "equal_to_oracle": exact,
            "wall_seconds": round(wall, 2),
            "batch_seconds_total": round(float(frame["batch_ms"].sum()) / 1000, 2),
            "moves_total": int(frame["moves"].sum()),
            "hand_offs": len(handed), "handed_rows": sum(max(h.rows, 0) for h in handed),
            "partial_rows": int(frame["partial_rows"].sum()),
            "batch_ms_mean": round(float(frame["batch_ms"].mean()), 1),
            "batch_ms_p95": round(float(frame["batch_ms"].quantile(0.95)), 1),
            "batch_ms_max": int(frame["batch_ms"].max()),
            "max_mean_slot_load_mean": round(float(data["max_mean_slot_load"].mean()), 3),
            "repeat": repeat,
        })
        batches += [{**b, "repeat": repeat} for b in frame.to_dict("records")]
    return rows, batches


# -- figures ------------------------------------------------------------------------------------
def plot_moves(rows: list[dict[str, Any]], path: Path) -> None:
    """Per fraction moved, both kinds: wall time, hand-off parts, extra partials, batches."""
    panels = (("wall_seconds", "job wall time (s)"),
              ("batch_ms_around_move_max", "slowest batch of the move + 2 (ms)"),
              ("handed_rows", "parts handed over"),
              ("extra_partial_rows", "partial rows beyond the 0 % run"),
              ("batches_to_complete", "batches until the migration completed"),
              ("mean_delay_batches", "moved windows' mean emission delay (batches)"))
    fig, axes = plt.subplots(3, 2, figsize=(10, 9))
    for ax, (name, label) in zip(axes.flat, panels, strict=True):
        for kind in MIGRATION_KINDS:
            mine = [r for r in rows if r["kind"] == kind]
            ax.plot([float(r["fraction"].rstrip("%")) for r in mine],
                    [np.nan if r[name] is None else r[name] for r in mine], marker="o",
                    label=kind, color=COLOURS[kind])
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("key groups moved (%)", fontsize=8)
    axes.flat[0].legend()
    fig.suptitle("One move of the consolidate stage on the flights: disruptive vs smooth")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_batches(batches: list[dict[str, Any]], labels: Sequence[str], title: str,
                 path: Path, move_at: int | None = None) -> None:
    """Batch duration over the micro-batches of the runs ``labels`` (repeats paler)."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for label in labels:
        for repeat in sorted({b["repeat"] for b in batches if b["label"] == label}):
            mine = [b for b in batches if b["label"] == label and b["repeat"] == repeat]
            kind = mine[0]["kind"]
            ax.plot([b["batch"] for b in mine], [b["batch_ms"] for b in mine], marker=".",
                    label=label if repeat == 0 else None, color=COLOURS.get(kind),
                    linestyle="-" if label.endswith(("100%", kind)) else "--", linewidth=1,
                    alpha=1.0 if repeat == 0 else 0.45)
    if move_at is not None:
        ax.axvline(move_at, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("micro-batch")
    ax.set_ylabel("batch duration (ms)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


# -- main ---------------------------------------------------------------------------------------
def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line; ``--quick`` shrinks the defaults (explicit flags still win)."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small run: 60k rows of 6k, fractions 0/50/100 %%, a short ramp")
    p.add_argument("--rows", type=positive, help="first N flights in time order (150000)")
    p.add_argument("--rows-per-batch", type=positive, help="(10000)")
    p.add_argument("--fractions", type=float, nargs="+",
                   help="fractions of the key groups to move (0 .25 .5 .75 1)")
    p.add_argument("--move-at", type=int, help="move after this batch (6)")
    p.add_argument("--slots", type=positive, default=4)
    p.add_argument("--key-groups", type=positive, default=64)
    p.add_argument("--ramp-rows", type=positive, help="flights under the ramp (90000)")
    p.add_argument("--ramp-extra", type=float, default=2.0,
                   help="extra copies of a hot record at a wave's end (2)")
    p.add_argument("--ramp-max-moves", type=positive, default=2, help="Flux's per step (2)")
    p.add_argument("--no-ramp", action="store_true", help="skip (b)")
    p.add_argument("--repeats", type=positive, help="runs of each variant (2; --quick 1)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    quick = {"rows": 60_000, "rows_per_batch": 6_000, "fractions": [0.0, 0.5, 1.0],
             "move_at": 3, "ramp_rows": 48_000, "repeats": 1}
    full = {"rows": 150_000, "rows_per_batch": 10_000, "fractions": [0.0, 0.25, 0.5, 0.75, 1.0],
            "move_at": 6, "ramp_rows": 90_000, "repeats": 2}
    for name, value in (quick if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if min(args.fractions) != 0.0 or not all(0 <= f <= 1 for f in args.fractions):
        p.error(f"--fractions must lie in [0, 1] and include 0 (the baseline), got "
                f"{args.fractions}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run (a) and (b); write the CSV, JSON and figures; 1 if a result differs from the oracle."""
    args = parse(argv)
    started = time.perf_counter()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    flights = first_flights(max(args.rows, args.ramp_rows))
    spark = get_spark()
    warm = flights.head(6_000)
    warm.to_parquet(WORK / "warm.parquet", index=False)
    FileRun(spark, job_spec(WORK / "warm.parquet", WORK / "warm", "smooth", args,
                             rows_per_batch=2_000), Controller(MoveOnce(0.5, 1), None)).run()
    rows, batches = move_runs(spark, flights.head(args.rows), args)
    if not args.no_ramp:
        ramp, ramp_batches = ramp_runs(spark, flights.head(args.ramp_rows), args)
        rows += ramp
        batches += ramp_batches
    meta = {**run_meta("enorm/migration_kinds.py", argv, args, pyspark=pyspark.__version__,
                       cpus=spark.sparkContext.defaultParallelism),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "wall_seconds": round(time.perf_counter() - started, 1)}
    spark.stop()
    suffix = "_quick" if args.quick else ""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    write_csv(rows, args.out / f"migration_kinds{suffix}.csv", columns)
    typical = medians(rows)
    write_csv(typical, args.out / f"migration_kinds_medians{suffix}.csv")
    write_json(args.out / f"migration_kinds{suffix}.json", meta, medians=typical, runs=rows,
               batches=batches)
    moves = [r for r in typical if r["experiment"] == "move"]
    plot_moves(moves, args.out / f"migration_kinds_moves{suffix}.png")
    top = f"{round(max(args.fractions) * 100)}%"
    plot_batches(batches, [f"{k}:{p}" for k in MIGRATION_KINDS for p in ("0%", top)],
                 f"Batch duration, {top} of the key groups moved after batch {args.move_at}",
                 args.out / f"migration_kinds_batches{suffix}.png", args.move_at)
    if not args.no_ramp:
        plot_batches(batches, [f"ramp:{k}" for k in (*MIGRATION_KINDS, "none")],
                     "Batch duration under a ramping skew, Flux moving key groups",
                     args.out / f"migration_kinds_ramp{suffix}.png")
    for row in typical:
        print(row, flush=True)
    print(f"wall time {meta['wall_seconds']} s", flush=True)
    return 0 if all(r["equal_to_oracle"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
