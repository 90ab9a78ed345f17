"""How fast the simulator runs at the FISH scale: 50 M tuples on 128 workers.

Runs one cheap scheme (multiplicative hashing of the key, i.e. fields grouping) over the
time-evolving Zipf stream of FISH §6.1 and splits the wall time into routing (inside
``scheme.route``) and the simulator's own work (queues, latencies, state, load)::

    python -m elastream.runtimes.sim.perf [tuples] [workers]

Memory: ``peak_bytes`` is the peak of memory allocated during :func:`simulate` (numpy reports
its buffers to ``tracemalloc``), not counting the input arrays; ``peak_rss_bytes`` is the
process's peak resident size, inputs and interpreter included.
"""

from __future__ import annotations

import resource
import sys
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from elastream.runtimes.sim.config import SimConfig
from elastream.runtimes.sim.simulator import SimResult, simulate


@dataclass(frozen=True)
class Measurement:
    """Wall seconds and memory of one simulation run."""

    tuples: int
    workers: int
    input_seconds: float
    """Generating keys and times (not part of the simulation)."""
    total_seconds: float
    """The whole :func:`simulate` call."""
    route_seconds: float
    """Inside ``scheme.route``."""
    sim_seconds: float
    """``total_seconds − route_seconds``: the simulator's own work."""
    peak_bytes: int
    peak_rss_bytes: int
    result: SimResult


class _HashScheme:
    """Fields grouping by a multiplicative hash of the key over the sorted live workers."""

    name = "hash"

    def __init__(self, workers: int) -> None:
        self._live = np.arange(workers, dtype=np.int64)

    def route(
        self, keys: npt.NDArray[np.int64], times: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.int64]:
        mixed = (keys.view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)
        workers: npt.NDArray[np.int64] = self._live[mixed % np.uint64(len(self._live))]
        return workers

    def set_workers(self, workers: Sequence[int]) -> None:
        self._live = np.asarray(sorted(workers), dtype=np.int64)


def measure(
    num_tuples: int = 50_000_000,
    workers: int = 128,
    *,
    service_time: float = 1e-6,
    utilisation: float = 0.9,
    chunk_size: int = 1 << 20,
    seed: int = 0,
) -> Measurement:
    """Simulate ``num_tuples`` ZF(z=1) tuples on ``workers`` workers and time it.

    Tuples arrive evenly at ``utilisation × workers / service_time`` per second (explicit
    float times, as a replayed stream would give them).
    """
    from elastream.workloads.zipf import time_evolving_zipf  # the workload, not the simulator

    tic = time.perf_counter()
    keys = time_evolving_zipf(num_tuples, z=1.0, seed=seed)
    rate = utilisation * workers / service_time
    times = np.arange(num_tuples, dtype=np.float64) / rate
    input_seconds = time.perf_counter() - tic
    config = SimConfig(workers=workers, service_time=service_time, chunk_size=chunk_size)
    tracemalloc.start()
    result = simulate(keys, times, _HashScheme(workers), config, clock=time.perf_counter)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result.sim_seconds is not None and result.route_seconds is not None
    return Measurement(
        tuples=num_tuples,
        workers=workers,
        input_seconds=input_seconds,
        total_seconds=result.sim_seconds,
        route_seconds=result.route_seconds,
        sim_seconds=result.sim_seconds - result.route_seconds,
        peak_bytes=peak,
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        result=result,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Print one measurement: ``python -m elastream.runtimes.sim.perf [tuples] [workers]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    tuples = int(args[0]) if args else 50_000_000
    workers = int(args[1]) if len(args) > 1 else 128
    m = measure(tuples, workers)
    r = m.result
    print(
        f"{m.tuples} tuples, {m.workers} workers: simulate {m.total_seconds:.2f} s "
        f"(routing {m.route_seconds:.2f} s, simulator {m.sim_seconds:.2f} s); "
        f"inputs {m.input_seconds:.2f} s; peak allocated during simulate "
        f"{m.peak_bytes / 2**20:.0f} MiB; peak RSS {m.peak_rss_bytes / 2**20:.0f} MiB\n"
        f"exec_time {r.exec_time:.4f} s, makespan {r.makespan:.4f} s, throughput "
        f"{r.throughput:.4g}/s, latency mean {r.latency.mean:.4g} p50 {r.latency.p50:.4g} "
        f"p95 {r.latency.p95:.4g} p99 {r.latency.p99:.4g} s, memory {r.memory} pairs"
    )


if __name__ == "__main__":
    main()
