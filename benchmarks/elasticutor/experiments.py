"""What each Elasticutor figure and table runs on the fluid simulator (runtimes/sim/elastic.py).

Every run is one strategy over one key-shuffle workload (§5.1: 10K keys, Zipf 0.5, ω shuffles
per minute) on the paper's cluster (32 nodes × 8 cores, 1 Gbps) unless the figure varies it.

* **6** (Fig. 6): static, RC and EC for ω ∈ {0, 1, 2, 4, 8, 16}; naive-EC at ω = 2 for Table 2;
  RC under the simulator's two other repartitioning protocols (``rc-move-rounds``: §1's steps
  a–d per shard move; ``rc-shard``: only the moving shard pauses) as a sensitivity check.
* **7** (Fig. 7): the ω = 2 runs of Fig. 6, throughput per second; EC's cores per executor.
* **9** (Figs. 8–9): sync and migration time per shard move: by kind (intra/inter node) in the
  ω = 2 runs (Fig. 8), RC and EC against the number of upstream executors (Fig. 9a) and the
  shard state size (Fig. 9b).
* **10-12** (Figs. 10–12): ONE elastic executor (256 shards, all keys) on 1..256 fixed cores
  (the first 8 local), the source offering 70% of those cores' capacity; per-tuple CPU cost
  1 / 0.1 / 0.01 ms and tuple size 128 B .. 8 KB (Figs. 10–11), shard state 32 KB .. 32 MB at
  ω = 2 and 16 (Fig. 12).
* **13** (Fig. 13): EC with y executors × z shards per executor under the default
  (128 B, ω = 2), data-intensive (8 KB) and highly dynamic (ω = 16) workloads; static and RC
  for reference.
* **table3** (Table 3): wall time of one scheduling round (``allocate_cores`` then
  ``assign_cores``) at 8/16/32 nodes, median of repeats.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, get_args

import numpy as np

from elastream.algorithms.elastic.assignment import assign_cores
from elastream.algorithms.elastic.core_allocation import allocate_cores
from elastream.runtimes.sim.elastic import ElasticResult, simulate_elastic
from elastream.runtimes.sim.elastic_cluster import ElasticConfig, Layout, RcProtocol
from elastream.runtimes.sim.elastic_policies import Fixed, Scheduled, even_start
from elastream.workloads.key_shuffle import KeyShuffle

OMEGAS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0)
UPSTREAMS = (1, 2, 4, 8, 16, 32, 64)
STATE_SIZES = (32 * 1024, 256 * 1024, 2 * 1024**2, 8 * 1024**2, 32 * 1024**2)
SCALE_CORES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
COSTS_MS = (1.0, 0.1, 0.01)
TUPLE_SIZES = (128, 512, 2048, 8192)
FIG12_STATES = (32 * 1024, 1024**2, 8 * 1024**2, 32 * 1024**2)
FIG13_Y = (1, 8, 32, 256)
FIG13_Z = (16, 64, 256, 1024)
WORKLOADS = {"default": (128, 2.0), "data-intensive": (8192, 2.0), "highly dynamic": (128, 16.0)}
TABLE3_NODES = (8, 16, 32)
RC_VARIANTS: dict[str, RcProtocol] = {"rc-move-rounds": "move_rounds", "rc-shard": "shard"}
"""Fig. 6's sensitivity rows: RC under the simulator's other repartitioning protocols."""
assert set(RC_VARIANTS.values()) < set(get_args(RcProtocol))

Emit = Callable[[str, list[dict[str, Any]], float], None]


@dataclass(frozen=True)
class Grid:
    """The sizes of one benchmark run (run.py's options)."""

    duration: float
    warmup: float
    """Seconds of the Fig. 6/7 runs left out of their metrics (RC converges from the hash
    partition in about 35 s at ω = 0)."""
    short: float
    seed: int
    repeats: int
    load: float = 0.7
    """Offered rate of Figs. 6–9 and 13 as a fraction of the cluster's capacity (1.0: more
    than any strategy sustains, a saturating source)."""


def strategy(name: str, config: ElasticConfig) -> Scheduled:
    """The package's strategy called ``name`` (``naive-ec`` is ``naive_ec``)."""
    return Scheduled(name.replace("-", "_"), config)


def run(name: str, config: ElasticConfig, workload: KeyShuffle) -> ElasticResult:
    """One strategy over ``workload``; ``rc-move-rounds`` / ``rc-shard`` are RC under those
    ``rc_protocol`` values, labelled so."""
    if name in RC_VARIANTS:
        config = replace(config, rc_protocol=RC_VARIANTS[name])
        return replace(simulate_elastic(config, strategy("rc", config), workload), strategy=name)
    return simulate_elastic(config, strategy(name, config), workload)


def paused_share(result: ElasticResult, warmup: float) -> float:
    """Fraction of ``[warmup, duration)`` during which RC's rounds paused the operator."""
    window = result.duration - warmup
    paused = sum(max(0.0, min(r.end, result.duration) - max(r.start, warmup))
                 for r in result.rounds)
    return paused / window if window > 0 else 0.0


def summary_row(result: ElasticResult, warmup: float = 0.0, **labels: Any) -> dict[str, Any]:
    """The metrics of one run as a CSV row (times in ms, sizes in MB, rates per second)."""
    moves = result.moves
    return {
        **labels, "strategy": result.strategy, "offered": result.offered,
        "throughput": result.throughput,
        "latency_mean_ms": result.latency.mean * 1e3, "latency_p50_ms": result.latency.p50 * 1e3,
        "latency_p95_ms": result.latency.p95 * 1e3, "latency_p99_ms": result.latency.p99 * 1e3,
        "moves": len(moves), "inter_node_moves": sum(m.inter_node for m in moves),
        "sync_mean_ms": _mean(m.sync for m in moves) * 1e3,
        "migration_mean_ms": _mean(m.migration for m in moves) * 1e3,
        "state_migration_mb_s": result.migrated_bytes / 1e6 / result.duration,
        "remote_data_mb_s": result.remote_bytes / 1e6 / result.duration,
        "rounds": len(result.rounds), "paused_share": paused_share(result, warmup),
    }


def _mean(values: Iterable[float]) -> float:
    listed = list(values)
    return float(np.mean(listed)) if listed else 0.0


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def fig6_7(grid: Grid, emit: Emit) -> tuple[dict[str, ElasticResult], list[dict[str, Any]]]:
    """Fig. 6's sweep over ω; returns the ω = 2 runs (Figs. 7, 8, Table 2) and cores rows."""
    began, rows, at2 = time.perf_counter(), [], {}
    config = ElasticConfig(seed=grid.seed, warmup=grid.warmup, offered_load=grid.load)
    for omega in OMEGAS:
        workload = KeyShuffle(omega=omega, duration=grid.duration, seed=grid.seed)
        names = ["static", "rc", "ec"] + (["naive-ec"] if omega == 2.0 else []) \
            + list(RC_VARIANTS)
        for name in names:
            result = run(name, config, workload)
            rows.append(summary_row(result, grid.warmup, figure="6", omega=omega))
            if omega == 2.0:
                at2[name] = result
        _progress(f"  fig 6: ω = {omega:g} done")
    emit("6", rows, time.perf_counter() - began)
    ec = at2["ec"]
    cores = [{"time": float(t), "executor": j, "cores": int(c)}
             for t, counts in zip(ec.control_times, ec.cores, strict=True)
             for j, c in enumerate(counts)]
    return at2, cores


def series_rows(runs: dict[str, ElasticResult]) -> list[dict[str, Any]]:
    """Fig. 7: tuples processed in each second of the ω = 2 runs."""
    return [{"second": i, "strategy": name, "throughput": float(v)}
            for name, r in runs.items() for i, v in enumerate(r.throughput_series)]


def move_rows(runs: dict[str, ElasticResult], **labels: Any) -> list[dict[str, Any]]:
    """Mean sync and migration time per shard move, by strategy and intra/inter node."""
    rows = []
    for name, r in runs.items():
        for inter in (False, True):
            moves = [m for m in r.moves if m.inter_node == inter]
            rows.append({**labels, "strategy": name, "kind": "inter" if inter else "intra",
                         "moves": len(moves),
                         "sync_ms": _mean(m.sync for m in moves) * 1e3,
                         "migration_ms": _mean(m.migration for m in moves) * 1e3})
    return rows


def fig9(grid: Grid, emit: Emit) -> None:
    """Figs. 9a and 9b: sync time against upstream executors, migration time against state."""
    began, rows = time.perf_counter(), []
    workload = KeyShuffle(omega=2.0, duration=grid.short, seed=grid.seed)
    for upstream in UPSTREAMS:
        config = ElasticConfig(upstream_executors=upstream, seed=grid.seed,
                               offered_load=grid.load)
        runs = {n: simulate_elastic(config, strategy(n, config), workload) for n in ("rc", "ec")}
        rows += move_rows(runs, figure="9a", upstream_executors=upstream,
                          state_kb=config.shard_state_bytes / 1024)
    for state in STATE_SIZES:
        config = ElasticConfig(shard_state_bytes=float(state), seed=grid.seed,
                               offered_load=grid.load)
        runs = {n: simulate_elastic(config, strategy(n, config), workload) for n in ("rc", "ec")}
        rows += move_rows(runs, figure="9b", upstream_executors=config.upstream_executors,
                          state_kb=state / 1024)
    emit("9", rows, time.perf_counter() - began)


def _single_executor(cores: int, config: ElasticConfig, omega: float, grid: Grid,
                     **labels: Any) -> dict[str, Any]:
    """One elastic executor with all keys on ``cores`` fixed cores (the first 8 local)."""
    offered = 0.7 * cores * config.service_rate
    config = replace(config, executors=1, offered_rate=offered, seed=grid.seed)
    workload = KeyShuffle(omega=omega, duration=grid.short, seed=grid.seed)
    result = simulate_elastic(config, Fixed(config, [cores]), workload)
    return summary_row(result, cores=cores, omega=omega, **labels)


def fig10_12(grid: Grid, emit: Emit) -> None:
    """Scalability of one executor: CPU cost, tuple size (Figs. 10–11), state size (Fig. 12)."""
    began, rows = time.perf_counter(), []
    for cost in COSTS_MS:
        config = ElasticConfig(service_time=cost / 1e3)
        rows += [_single_executor(k, config, 2.0, grid, figure="10-11", variant=f"{cost:g} ms")
                 for k in SCALE_CORES]
    for size in TUPLE_SIZES[1:]:
        config = ElasticConfig(tuple_bytes=size)
        rows += [_single_executor(k, config, 2.0, grid, figure="10-11", variant=f"{size} B")
                 for k in SCALE_CORES]
    _progress("  figs 10-11 done")
    for omega in (2.0, 16.0):
        for state in FIG12_STATES:
            config = ElasticConfig(shard_state_bytes=float(state))
            rows += [_single_executor(k, config, omega, grid, figure="12",
                                      variant=f"{state // 1024} KB") for k in SCALE_CORES]
    emit("10-12", rows, time.perf_counter() - began)


def fig13(grid: Grid, emit: Emit) -> None:
    """Throughput against executors y and shards per executor z, three workloads."""
    began, rows = time.perf_counter(), []
    for label, (size, omega) in WORKLOADS.items():
        workload = KeyShuffle(omega=omega, duration=grid.short, seed=grid.seed)
        for y in FIG13_Y:
            for z in FIG13_Z:
                config = ElasticConfig(executors=y, shards_per_executor=z, tuple_bytes=size,
                                       seed=grid.seed, offered_load=grid.load)
                result = simulate_elastic(config, strategy("ec", config), workload)
                rows.append(summary_row(result, figure="13", workload=label, y=y, z=z))
        config = ElasticConfig(tuple_bytes=size, seed=grid.seed, offered_load=grid.load)
        for name in ("static", "rc"):
            result = simulate_elastic(config, strategy(name, config), workload)
            rows.append(summary_row(result, config.warmup, figure="13", workload=label,
                                    y=config.cores, z=config.shards // config.cores))
        _progress(f"  fig 13: {label} done")
    emit("13", rows, time.perf_counter() - began)


def table3(grid: Grid, emit: Emit) -> None:
    """Wall time of allocate_cores + assign_cores for one re-scheduling after a shuffle.

    The rates are each epoch of a key shuffle at the default load; the assignment in force is
    the even one the simulator starts EC with. Each call is timed with ``time.perf_counter``.
    """
    began, rows = time.perf_counter(), []
    for nodes in TABLE3_NODES:
        config = ElasticConfig(nodes=nodes, seed=grid.seed)
        workload = KeyShuffle(omega=60.0, duration=float(grid.repeats), seed=grid.seed)
        layout = Layout.make(config, workload.num_keys)
        m = config.executors
        demand0 = np.full(m, config.cores // m, dtype=np.int64)
        demand0[: config.cores % m] += 1
        owner, _ = even_start(config, layout, demand0)
        current = np.zeros((m, nodes), dtype=np.int64)
        np.add.at(current, (owner, layout.core_node), 1)
        state = [config.shards_per_executor * config.shard_state_bytes] * m
        alloc_s, assign_s, statuses = [], [], set()
        for epoch in range(workload.epochs):
            shard_freq = np.bincount(layout.key_shard, weights=workload.frequencies[epoch],
                                     minlength=config.shards)
            rates = np.bincount(layout.shard_executor, weights=shard_freq * config.offered(),
                                minlength=m)
            tic = time.perf_counter()
            allocation = allocate_cores(rates.tolist(), [config.service_rate] * m,
                                        config.latency_target, config.cores,
                                        current=current.sum(axis=1).tolist())
            tac = time.perf_counter()
            result = assign_cores(_within(allocation.cores, config.cores),
                                  [config.cores_per_node] * nodes, current.tolist(),
                                  state=state, intensity=(rates * 2 * config.tuple_bytes).tolist(),
                                  home=layout.home.tolist(), phi=config.phi)
            toc = time.perf_counter()
            alloc_s.append(tac - tic)
            assign_s.append(toc - tac)
            statuses.add(f"{allocation.status}/{result.status}")
        total = np.add(alloc_s, assign_s)
        rows.append({"figure": "table3", "nodes": nodes, "cores": config.cores,
                     "executors": m, "repeats": len(total),
                     "median_ms": float(np.median(total)) * 1e3,
                     "p90_ms": float(np.percentile(total, 90)) * 1e3,
                     "allocate_median_ms": statistics.median(alloc_s) * 1e3,
                     "assign_median_ms": statistics.median(assign_s) * 1e3,
                     "statuses": " ".join(sorted(statuses))})
    emit("table3", rows, time.perf_counter() - began)


def _within(cores: Iterable[int], budget: int) -> list[int]:
    """An allocation over budget (stability needs more cores than exist) cut to the budget,
    one core at a time from the largest (the simulator's EC gets this from its strategy)."""
    demand = list(cores)
    while sum(demand) > budget:
        demand[demand.index(max(demand))] -= 1
    return demand
