"""The simulations behind each figure, run one at a time and shared between figures.

Every run goes through :func:`elastream.runtimes.sim.cluster.run_scheme` on a cluster from
:func:`elastream.runtimes.sim.cluster.cluster_config` — the set-up of ``elastream simulate``:
1 µs per tuple on a worker of capacity 1, arrivals at 0.9 of the initial workers' total
capacity, FISH told the service time. A run is identified by (stream, cluster, scheme,
parameters); :class:`Runner` remembers every result, so the SG and FG baselines and FISH with
its default parameters are simulated once however many figures use them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from streams import FLIGHT_KEYS, Stream, Streams

from elastream.algorithms.hotkeys.epoch_counter import DEFAULT_ALPHA
from elastream.runtimes.sim import WorkerEvent
from elastream.runtimes.sim.cluster import cluster_config, run_scheme
from elastream.workloads.flights import FLIGHTS_ROWS

COMPARED = ("sg", "fg", "pkg", "dc", "wc", "fish")
ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
THETAS = (Fraction(2), Fraction(1), Fraction(1, 2), Fraction(1, 4), Fraction(1, 8))
"""θ as multiples of 1/n (FISH §6.3, Fig. 13: 2/n, 1/n, 1/2n, 1/4n, 1/8n)."""
DEFAULT_THETA = Fraction(1, 4)
"""FISH's default θ = 1/4n (§6.3), as a multiple of 1/n."""


@dataclass(frozen=True)
class Cluster:
    """Initial workers, their speeds, and an optional worker change halfway through."""

    workers: int
    heterogeneous: bool = False
    event: str = ""
    """``""``, ``"add"`` (worker id ``workers`` joins) or ``"remove"`` (a seeded worker leaves)."""

    def events(self, tuples: int, seed: int) -> list[WorkerEvent]:
        if self.event == "add":
            return [WorkerEvent.at_tuple(tuples // 2, "add", self.workers)]
        if self.event == "remove":  # FISH §6.5 removes "randomly" one worker instance
            victim = int(np.random.default_rng(seed).integers(self.workers))
            return [WorkerEvent.at_tuple(tuples // 2, "remove", victim)]
        return []


@dataclass(frozen=True)
class Result:
    """The metrics of one simulation (times in seconds)."""

    exec_time: float
    makespan: float
    memory: int
    latency_mean: float
    latency_p99: float
    sim_seconds: float


Params = tuple[tuple[str, Any], ...]


class Runner:
    """Runs simulations one after another, each once; logs one line per run to stderr."""

    def __init__(self, streams: Streams, *, seed: int) -> None:
        self.streams = streams
        self.seed = seed
        self._done: dict[tuple[Stream, Cluster, str, Params], Result] = {}

    @property
    def runs(self) -> int:
        return len(self._done)

    def result(self, stream: Stream, cluster: Cluster, scheme: str, **params: Any) -> Result:
        ident = (stream, cluster, scheme, tuple(sorted(params.items())))
        if ident not in self._done:
            self._done[ident] = self._simulate(stream, cluster, scheme, params)
        return self._done[ident]

    def _simulate(self, stream: Stream, cluster: Cluster, scheme: str,
                  params: dict[str, Any]) -> Result:
        keys = self.streams.keys(stream)
        config = cluster_config(cluster.workers, heterogeneous=cluster.heterogeneous,
                                events=cluster.events(len(keys), self.seed))
        started = time.perf_counter()
        r = run_scheme(keys, scheme, config, seed=self.seed, **params)
        wall = time.perf_counter() - started
        extra = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in params.items())
        print(f"  {stream.label:<32} {cluster.workers:>4} workers{_tags(cluster):<15} "
              f"{scheme:<5} {extra:<24} {wall:6.1f} s", file=sys.stderr, flush=True)
        return Result(r.exec_time, r.makespan, r.memory, r.latency.mean, r.latency.p99, wall)

    def row(self, figure: str, stream: Stream, cluster: Cluster, scheme: str, variant: str = "",
            **params: Any) -> dict[str, Any]:
        """One CSV row: the run normalised to SG (same cluster) and FG (same stream, static)."""
        r = self.result(stream, cluster, scheme, **params)
        sg = self.result(stream, cluster, "sg")
        fg = self.result(stream, Cluster(cluster.workers), "fg")
        return {
            "figure": figure, "stream": stream.kind, "key": stream.key or "",
            "z": stream.z, "seed": stream.seed, "tuples": stream.tuples,
            "workers": cluster.workers,
            "capacity": "heterogeneous" if cluster.heterogeneous else "homogeneous",
            "event": cluster.event, "scheme": scheme, "variant": variant,
            "exec_time": r.exec_time, "exec_vs_sg": r.exec_time / sg.exec_time,
            "makespan_vs_sg": r.makespan / sg.makespan,
            "memory": r.memory, "memory_vs_fg": r.memory / fg.memory,
            "latency_mean_us": r.latency_mean * 1e6, "latency_p99_us": r.latency_p99 * 1e6,
            "sim_seconds": round(r.sim_seconds, 2),
        }


def _tags(cluster: Cluster) -> str:
    tags = (["heterogeneous"] if cluster.heterogeneous else []) + (
        [cluster.event] if cluster.event else [])
    return f" ({', '.join(tags)})" if tags else ""


@dataclass(frozen=True)
class Grid:
    """What the sweeps cover: skews, worker counts, tuples per stream, and the headline run."""

    zs: tuple[float, ...]
    workers: tuple[int, ...]
    tuples: int
    headline_tuples: int
    headline_workers: int
    paper_runs: int

    def zipf(self, z: float, tuples: int | None = None, seed: int = 0) -> Stream:
        return Stream("zipf", tuples or self.tuples, z=z, seed=seed)


Figure = Callable[[Runner, Grid], list[dict[str, Any]]]


def fig9(runner: Runner, grid: Grid) -> list[dict[str, Any]]:
    """Execution time vs SG on the real flights, keys origin and route (paper: AM and MT)."""
    return [runner.row("9", Stream("flights", FLIGHTS_ROWS, key=key), Cluster(w), scheme)
            for key in FLIGHT_KEYS for w in grid.workers for scheme in COMPARED]


def fig10_11(runner: Runner, grid: Grid) -> list[dict[str, Any]]:
    """Every scheme on time-evolving Zipf: execution time vs SG (10) and memory vs FG (11)."""
    rows = [runner.row("10-11", grid.zipf(z), Cluster(w), scheme)
            for z in grid.zs for w in grid.workers for scheme in COMPARED]
    if grid.headline_tuples and grid.headline_tuples != grid.tuples:
        rows += [runner.row("10-11", grid.zipf(z, grid.headline_tuples),
                            Cluster(grid.headline_workers), scheme)
                 for z in grid.zs for scheme in COMPARED]
    return rows


def paper_runs(runner: Runner, grid: Grid) -> list[dict[str, Any]]:
    """Figs 10/11 at the headline workers as 10 separate 5 M-tuple runs (seeds), the other
    reading of §6.1's "run 10 times with a different seed"; seed 0 is the grid's stream."""
    return [runner.row("10-11-runs", grid.zipf(z, seed=seed), Cluster(grid.headline_workers),
                       scheme)
            for z in grid.zs for seed in range(grid.paper_runs) for scheme in COMPARED]


def fig12(runner: Runner, grid: Grid) -> list[dict[str, Any]]:
    """FISH with decaying factor α from 0 (forget each epoch) to 1 (never forget)."""
    # The default (α = 0.2) is passed as no parameter, so Fig. 10's FISH run is reused.
    return [runner.row("12", grid.zipf(z), Cluster(w), "fish", f"alpha={a:g}",
                       **({} if a == DEFAULT_ALPHA else {"alpha": a}))
            for a in ALPHAS for z in grid.zs for w in grid.workers]


def fig13(runner: Runner, grid: Grid) -> list[dict[str, Any]]:
    """FISH with hot-key threshold θ from 2/n down to 1/8n."""
    return [runner.row("13", grid.zipf(z), Cluster(w), "fish", f"theta={_per_n(t)}",
                       **({} if t == DEFAULT_THETA else {"theta": float(t) / w}))
            for t in THETAS for z in grid.zs for w in grid.workers]


def _per_n(multiple: Fraction) -> str:
    if multiple.denominator == 1:
        return f"{multiple.numerator}/n"
    return f"1/{multiple.denominator}n"


def fig16(runner: Runner, grid: Grid) -> list[dict[str, Any]]:
    """FISH's heuristic assignment vs counting tuples, half the workers twice as fast."""
    return [runner.row("16", grid.zipf(z), Cluster(w, heterogeneous=True), scheme, variant,
                       **params)
            for z in grid.zs for w in grid.workers
            for scheme, variant, params in (("sg", "", {}), ("fish", "heuristic", {}),
                                            ("fish", "count", {"assignment": "count"}))]


def fig17(runner: Runner, grid: Grid) -> list[dict[str, Any]]:
    """FISH with and without consistent hashing when a worker joins or leaves halfway."""
    return [runner.row("17", grid.zipf(z), Cluster(w, event=event), "fish", candidates,
                       candidates=candidates)
            for event in ("add", "remove") for z in grid.zs for w in grid.workers
            for candidates in ("ring", "hash")]


FIGURES: dict[str, Figure] = {
    "9": fig9, "10": fig10_11, "runs": paper_runs, "12": fig12, "13": fig13, "16": fig16,
    "17": fig17,
}


def run_all(runner: Runner, grid: Grid, names: Iterable[str],
            on_figure: Callable[[str, list[dict[str, Any]], float], None]) -> None:
    """Run the named figures in order; ``on_figure(name, rows, seconds)`` after each."""
    for name in names:
        started = time.perf_counter()
        print(f"figure {name}", file=sys.stderr, flush=True)
        rows = FIGURES[name](runner, grid)
        on_figure(name, rows, time.perf_counter() - started)
