"""A vectorised simulator of a grouping scheme feeding a cluster of FIFO workers.

It reproduces the simulation of FISH (Huang et al., *Efficient Time-Evolving Stream
Processing at Scale*, §6.1): sources receive a keyed, timestamped stream, a grouping scheme
assigns each tuple to a worker, and workers aggregate per key. One call runs one scheme over
one stream and returns the metrics the papers compare: execution time (FISH normalises it to
SG), memory overhead (normalised to FG), throughput, latency percentiles and load over time.

What it models:

* **Sources.** One grouping-scheme instance per source. Tuple ``i`` goes to source
  ``i mod len(sources)`` (Storm's shuffle grouping into the sources); each source routes its
  tuples in stream order, chunk by chunk, with ``scheme.route(keys, times)``.
* **Workers** with FIFO queues of unbounded length, each serving one tuple at a time. A tuple
  reaches its worker at its arrival time and departs at
  ``max(arrival, previous departure of that worker) + service`` (the Lindley recursion,
  computed exactly in integer nanoseconds, vectorised: see :mod:`.queues`).
* **Service times**: ``service_time / capacity`` seconds per tuple on a worker; capacities
  may differ per worker (heterogeneous clusters, FISH §6.4 "hwa").
* **Arrivals** at explicit times (non-decreasing, seconds) or at a fixed rate.
* **Worker changes** mid-run (FISH §6.5): at a tuple index or a time, workers are added or
  removed and every source's ``scheme.set_workers`` is told. A removed worker still serves
  its queue but gets nothing new; an added worker starts with an empty queue.
* **State**: a worker keeps state for every key it ever received; nothing is evicted.

What it does not model:

* Network delay or bandwidth between sources and workers (a tuple reaches its worker when it
  arrives at the source).
* Back-pressure: queues never fill and sources never slow down, however overloaded a worker is.
* The cost of the grouping itself at the sources (hot-key counting, hashing): only the
  schemes' decisions matter. Its wall time is reported separately as ``route_seconds``.
* Moving state when workers change: keys remapped to another worker start a new state there,
  which the memory metric counts, but no migration time or traffic is charged.
* Per-tuple cost differences (every tuple costs the same on a given worker), failures,
  operator chains after the workers, windows and their expiry.

Metrics, exactly (times in seconds, computed from integer nanoseconds):

* ``exec_time`` = max over workers of the busy time, ``tuples served × service time``: the
  "processing time of loads" of FISH §6.1. It does not depend on arrival times, and equals
  the makespan when every tuple is present at time 0.
* ``makespan`` = last departure − first arrival; ``throughput`` = tuples / makespan.
* ``latency`` = departure − arrival (queueing plus own service) of every tuple; exact mean and
  nearest-rank p50/p95/p99 over all tuples (:class:`.metrics.LatencyStats`).
* ``memory`` = number of distinct (key, worker) pairs over the run: the key states held by all
  workers together (FISH §6.1 "memory overhead all workers have totally consumed").
* ``load[b, w]`` = tuples routed to worker ``w`` arriving in time bucket ``b``.

>>> class OneWorker:
...     name = "one"
...     def route(self, keys, times): return np.zeros(len(keys), dtype=np.int64)
...     def set_workers(self, workers): pass
>>> r = simulate(np.arange(4), np.zeros(4), OneWorker(), SimConfig(workers=1, service_time=1.0))
>>> r.exec_time, r.makespan, r.latency.mean, r.memory
(4.0, 4.0, 2.5, 4)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.base import GroupingScheme
from elastream.core.errors import ElastreamError, OptionError
from elastream.runtimes.sim.config import SimConfig, WorkerEvent
from elastream.runtimes.sim.metrics import DistinctPairs, LatencyStats, exact_sum, latency_stats
from elastream.runtimes.sim.queues import IDLE, TICKS_PER_SECOND, fifo_departures, to_ticks

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Clock = Callable[[], float]


class RoutingError(ElastreamError):
    """A scheme returned something that is not a live worker id for each tuple."""


@dataclass(frozen=True, eq=False)
class SimResult:
    """Metrics of one scheme over one stream; see the module docstring for definitions.

    Per-worker arrays have one entry (column) per worker id the run could use.
    """

    scheme: str
    workers: int
    """Live workers at the start (``SimConfig.workers``)."""
    tuples: int
    exec_time: float
    makespan: float
    throughput: float
    latency: LatencyStats
    memory: int
    tuples_per_worker: I64
    busy_time: F64
    """Seconds each worker spent serving."""
    load: I64
    """``load[b, w]``: tuples for worker ``w`` arriving in bucket ``b``, the time interval
    ``[load_start + b·load_bucket_width, load_start + (b+1)·load_bucket_width)``."""
    load_start: float
    load_bucket_width: float
    sim_seconds: float | None
    """Wall seconds of the whole :func:`simulate` call (None without a clock)."""
    route_seconds: float | None
    """Wall seconds spent inside ``scheme.route`` (None without a clock)."""
    latencies: I64 | None = None
    """Each tuple's latency in nanoseconds, stream order (with ``keep_latencies``)."""


def simulate(
    keys: npt.ArrayLike,
    times: npt.ArrayLike | None,
    scheme: GroupingScheme | Sequence[GroupingScheme],
    config: SimConfig,
    *,
    clock: Clock | None = None,
) -> SimResult:
    """Route ``keys`` with ``scheme`` onto the workers of ``config`` and measure the outcome.

    Args:
        keys: int64 key of each tuple, in stream order (at least one tuple).
        times: arrival second of each tuple, non-decreasing; None to use
            ``config.arrival_rate``.
        scheme: one grouping scheme, or one per source (tuple ``i`` goes to source
            ``i mod len(scheme)``); each must start with workers ``0 .. config.workers-1``.
        config: the cluster and run parameters.
        clock: wall clock in seconds (e.g. ``time.perf_counter``) to time the run with.

    Returns:
        The run's metrics. Raises :class:`RoutingError` if a scheme routes a tuple to a worker
        that is not live, :class:`~elastream.core.errors.OptionError` for bad inputs.
    """
    started = clock() if clock else 0.0
    key_array = np.asarray(keys, dtype=np.int64)
    if key_array.ndim != 1 or len(key_array) == 0:
        raise OptionError("keys", "must be a 1-D array of at least one key", key_array.shape)
    arrivals = _Arrivals.make(times, len(key_array), config)
    sources = list(scheme) if isinstance(scheme, Sequence) else [scheme]
    if not sources:
        raise OptionError("scheme", "needs at least one source", sources)
    run = _Run(config, key_array, arrivals, sources, clock)
    events = _resolve_events(config.events, arrivals)
    position = 0
    for boundary in [*sorted(events), None]:  # None: the end of the stream
        stop = run.tuples if boundary is None else boundary
        for start in range(position, stop, config.chunk_size):
            run.step(start, min(start + config.chunk_size, stop))
        position = stop
        if boundary is not None:
            run.apply(events[boundary])
    return run.result(elapsed=clock() - started if clock else None)


@dataclass(frozen=True)
class _Arrivals:
    """Arrival times of the stream, as given or from the arrival rate."""

    times: F64 | None
    period: int
    count: int

    @classmethod
    def make(cls, times: npt.ArrayLike | None, count: int, config: SimConfig) -> _Arrivals:
        if times is None:
            return cls(None, config.arrival_period_ticks(), count)
        given = np.asarray(times, dtype=np.float64)
        if given.shape != (count,):
            raise OptionError("times", f"must have one time per key ({count})", given.shape)
        return cls(given, 0, count)

    def ticks(self, start: int, stop: int) -> I64:
        if self.times is None:
            return np.arange(start, stop, dtype=np.int64) * self.period
        seconds = self.times[start:stop]
        if not np.isfinite(seconds).all():
            raise OptionError("times", "must be finite seconds", f"tuples {start}..{stop - 1}")
        return to_ticks(seconds)

    def seconds(self, start: int, stop: int) -> F64:
        if self.times is None:
            return self.ticks(start, stop) / TICKS_PER_SECOND
        return self.times[start:stop]

    def index_at(self, seconds: float) -> int:
        """Index of the first tuple arriving at or after ``seconds``."""
        if self.times is None:
            tick = int(to_ticks(seconds))
            return min(self.count, max(0, -(-tick // self.period)))
        return int(np.searchsorted(self.times, seconds, side="left"))


def _resolve_events(
    events: Sequence[WorkerEvent], arrivals: _Arrivals
) -> dict[int, list[WorkerEvent]]:
    """The events grouped by the index of the tuple they precede, in listed order."""
    resolved: dict[int, list[WorkerEvent]] = {}
    for event in events:
        if event.time is not None:
            index = arrivals.index_at(event.time)
        else:
            assert event.tuple_index is not None  # a WorkerEvent has one or the other
            index = event.tuple_index
        if index > arrivals.count:
            raise OptionError("event tuple_index", f"must be ≤ the {arrivals.count} tuples", index)
        resolved.setdefault(index, []).append(event)
    return resolved


class _Run:
    """The mutable state of one simulation, advanced one chunk at a time."""

    def __init__(
        self,
        config: SimConfig,
        keys: I64,
        arrivals: _Arrivals,
        sources: list[GroupingScheme],
        clock: Clock | None,
    ) -> None:
        ids = config.num_worker_ids
        self.config, self.keys, self.arrivals, self.sources = config, keys, arrivals, sources
        self.clock = clock
        self.tuples = len(keys)
        self.service = config.service_ticks()
        self.live = np.zeros(ids, dtype=bool)
        self.live[: config.workers] = True
        self.carry = np.full(ids, IDLE, dtype=np.int64)
        self.served = np.zeros(ids, dtype=np.int64)
        self.pairs = DistinctPairs(ids)
        self.latencies = np.empty(self.tuples, dtype=np.int64)
        self.latency_total = 0
        self.first_tick = int(arrivals.ticks(0, 1)[0])
        self.last_tick = self.first_tick
        span = int(arrivals.ticks(self.tuples - 1, self.tuples)[0]) - self.first_tick
        self.bucket_width = max(1, span // config.load_buckets + 1)
        self.load = np.zeros((config.load_buckets, ids), dtype=np.int64)
        self.route_seconds = 0.0

    def apply(self, events: list[WorkerEvent]) -> None:
        """Apply worker changes that take effect at the same tuple, then tell every source."""
        for event in events:
            if event.action == "add" and self.live[event.worker]:
                raise OptionError("events", "can only add a worker that is not live", event)
            if event.action == "remove" and not self.live[event.worker]:
                raise OptionError("events", "can only remove a worker that is live", event)
            self.live[event.worker] = event.action == "add"
        if not self.live.any():
            raise OptionError("events", "must leave at least one live worker", events)
        workers = np.flatnonzero(self.live).tolist()
        for source in self.sources:
            source.set_workers(workers)

    def step(self, start: int, stop: int) -> None:
        """Route, queue and measure the tuples ``start .. stop-1``."""
        keys, ticks = self.keys[start:stop], self.arrivals.ticks(start, stop)
        if int(ticks[0]) < self.last_tick or bool(np.any(ticks[1:] < ticks[:-1])):
            raise OptionError("times", "must be non-decreasing", f"tuples {start}..{stop - 1}")
        self.last_tick = int(ticks[-1])
        workers = self._route(start, stop)
        departures, self.carry = fifo_departures(ticks, self.service[workers], workers, self.carry)
        latencies = departures - ticks
        self.latencies[start:stop] = latencies
        self.latency_total += exact_sum(latencies)
        ids = len(self.live)
        self.served += np.bincount(workers, minlength=ids)
        self.pairs.add(keys, workers)
        cells = (ticks - self.first_tick) // self.bucket_width * ids + workers
        self.load += np.bincount(cells, minlength=self.load.size).reshape(self.load.shape)

    def _route(self, start: int, stop: int) -> I64:
        keys, seconds = self.keys[start:stop], self.arrivals.seconds(start, stop)
        if len(self.sources) == 1:
            return self._route_source(self.sources[0], keys, seconds, start)
        workers = np.empty(stop - start, dtype=np.int64)
        for number, source in enumerate(self.sources):
            mine = slice((number - start) % len(self.sources), None, len(self.sources))
            workers[mine] = self._route_source(
                source,
                np.ascontiguousarray(keys[mine]),
                np.ascontiguousarray(seconds[mine]),
                start,
            )
        return workers

    def _route_source(self, source: GroupingScheme, keys: I64, seconds: F64, start: int) -> I64:
        """``source.route(keys, seconds)``, timed, and checked to name a live worker per tuple."""
        tic = self.clock() if self.clock else 0.0
        workers = np.asarray(source.route(keys, seconds))
        if self.clock:
            self.route_seconds += self.clock() - tic
        expected = len(keys)
        if workers.shape != (expected,) or not np.issubdtype(workers.dtype, np.integer):
            raise RoutingError(
                f"scheme {source.name!r} returned {workers.dtype} of shape {workers.shape}; "
                f"expected {expected} integer worker ids, one per tuple"
            )
        workers = workers.astype(np.int64, copy=False)
        if expected == 0:
            return workers
        low, high = int(workers.min()), int(workers.max())
        if low < 0 or high >= len(self.live) or not self.live[workers].all():
            bad = (
                low
                if low < 0
                else high
                if high >= len(self.live)
                else int(workers[~self.live[workers]][0])
            )
            raise RoutingError(
                f"scheme {source.name!r} routed a tuple at or after tuple {start} to worker "
                f"{bad}, which is not live; live workers: {np.flatnonzero(self.live).tolist()}"
            )
        return workers

    def result(self, elapsed: float | None) -> SimResult:
        busy = self.served * self.service
        makespan = int(self.carry.max()) - self.first_tick
        keep = self.config.keep_latencies
        return SimResult(
            scheme=str(self.sources[0].name),
            workers=self.config.workers,
            tuples=self.tuples,
            exec_time=int(busy.max()) / TICKS_PER_SECOND,
            makespan=makespan / TICKS_PER_SECOND,
            throughput=self.tuples * TICKS_PER_SECOND / makespan,
            latency=latency_stats(self.latencies, self.latency_total, in_place=not keep),
            memory=self.pairs.count,
            tuples_per_worker=_frozen(self.served),
            busy_time=_frozen(busy / TICKS_PER_SECOND),
            load=_frozen(self.load),
            load_start=self.first_tick / TICKS_PER_SECOND,
            load_bucket_width=self.bucket_width / TICKS_PER_SECOND,
            sim_seconds=elapsed,
            route_seconds=self.route_seconds if self.clock else None,
            latencies=_frozen(self.latencies) if keep else None,
        )


def _frozen(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    array.setflags(write=False)
    return array
