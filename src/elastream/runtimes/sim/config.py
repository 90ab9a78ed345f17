"""What a simulation run is given: the workers, their speeds, the arrivals and worker changes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.runtimes.sim.queues import TICKS_PER_SECOND

Action = Literal["add", "remove"]

MAX_CHUNK_SIZE = 1 << 30


@dataclass(frozen=True)
class WorkerEvent:
    """A worker joins or leaves mid-run, before a given tuple or at a given time.

    Exactly one of ``tuple_index`` and ``time`` is set; the constructors say which.
    An event at tuple ``i`` takes effect before tuple ``i`` is routed; an event at time ``t``
    (seconds) before the first tuple whose arrival time is ≥ ``t``. A removed worker gets no
    new tuples but still serves the ones queued at it; an added worker starts with an empty
    queue (a worker id added again after removal resumes its own, by then usually empty, queue).

    >>> WorkerEvent.at_tuple(1000, "add", 8)
    WorkerEvent(action='add', worker=8, tuple_index=1000, time=None)
    """

    action: Action
    worker: int
    tuple_index: int | None = None
    time: float | None = None

    def __post_init__(self) -> None:
        rules.choice("event action", self.action, ("add", "remove"))
        rules.integer("event worker", self.worker, low=0)
        if (self.tuple_index is None) == (self.time is None):
            raise OptionError(
                "event",
                "needs exactly one of tuple_index and time",
                (self.tuple_index, self.time),
            )
        if self.tuple_index is not None:
            rules.integer("event tuple_index", self.tuple_index, low=0)
        if self.time is not None:
            rules.number("event time", self.time, low=None, unit="seconds")

    @classmethod
    def at_tuple(cls, index: int, action: Action, worker: int) -> WorkerEvent:
        """``action`` on ``worker`` just before tuple ``index`` (0-based) is routed."""
        return cls(action, worker, tuple_index=index)

    @classmethod
    def at_time(cls, seconds: float, action: Action, worker: int) -> WorkerEvent:
        """``action`` on ``worker`` just before the first tuple arriving at or after ``seconds``."""
        return cls(action, worker, time=seconds)


@dataclass(frozen=True)
class SimConfig:
    """The simulated cluster and how the stream reaches it.

    Args:
        workers: live workers at the start, ids ``0 .. workers-1`` (≥ 1).
        service_time: seconds a worker of capacity 1 needs per tuple (> 0); rounded to whole
            nanoseconds per worker after dividing by its capacity, and at least 1 ns.
        capacities: relative speed of every worker id, including ids added later (each > 0);
            worker ``w`` needs ``service_time / capacities[w]`` per tuple. Default: all 1.
        arrival_rate: tuples per second when :func:`simulate` gets no arrival times; tuple
            ``i`` then arrives at ``i × round(10⁹ / arrival_rate)`` ns.
        chunk_size: tuples routed and queued per step (bounds the working memory).
        events: workers added or removed mid-run, applied in tuple order (listed order
            breaks ties).
        load_buckets: equal time buckets spanning first to last arrival, for the per-worker
            load over time.
        keep_latencies: also return every tuple's latency (int64 ns, 8 bytes per tuple).

    >>> SimConfig(workers=4, capacities=(1, 1, 2, 2)).service_ticks().tolist()
    [1000, 1000, 500, 500]
    """

    workers: int
    service_time: float = 1e-6
    capacities: Sequence[float] | None = None
    arrival_rate: float | None = None
    chunk_size: int = 1 << 20
    events: Sequence[WorkerEvent] = ()
    load_buckets: int = 100
    keep_latencies: bool = False

    def __post_init__(self) -> None:
        # Accept any sequence, keep a tuple: the frozen config stays immutable all the way down.
        object.__setattr__(self, "events", tuple(self.events))
        if self.capacities is not None:
            object.__setattr__(self, "capacities", tuple(float(c) for c in self.capacities))
        rules.integer("workers", self.workers)
        rules.integer("chunk_size", self.chunk_size, high=MAX_CHUNK_SIZE)
        rules.integer("load_buckets", self.load_buckets)
        rules.number("service_time", self.service_time, above=0, unit="seconds")
        if self.arrival_rate is not None:
            rules.number("arrival_rate", self.arrival_rate, above=0, high=TICKS_PER_SECOND,
                         unit="tuples per second")
        for event in self.events:
            if not isinstance(event, WorkerEvent):
                raise OptionError("events", "must hold WorkerEvent values", event)
        if self.capacities is not None:
            if len(self.capacities) < self.num_worker_ids:
                raise OptionError(
                    "capacities",
                    f"must give a speed for each of {self.num_worker_ids} worker "
                    "ids (initial workers and every added id)",
                    len(self.capacities),
                )
            bad = [c for c in self.capacities if not (math.isfinite(c) and c > 0)]
            if bad:
                raise OptionError("capacities", "must all be positive", bad[0])
        ticks = self.service_ticks()
        if int(ticks.min()) < 1:
            fastest = int(np.argmin(ticks))
            speed = 1.0 if self.capacities is None else self.capacities[fastest]
            raise OptionError(
                "service_time / capacity",
                f"must be at least 1 ns per tuple (worker {fastest})",
                f"{self.service_time} s / {speed}",
            )

    @property
    def num_worker_ids(self) -> int:
        """Number of worker ids the run may use: initial ones, added ones, given capacities."""
        added = max((e.worker + 1 for e in self.events), default=0)
        return max(self.workers, added, len(self.capacities or ()))

    def service_ticks(self) -> npt.NDArray[np.int64]:
        """Service nanoseconds per tuple of every worker id."""
        speeds = (
            np.ones(self.num_worker_ids)
            if self.capacities is None
            else np.asarray(self.capacities, dtype=np.float64)
        )
        ticks: npt.NDArray[np.int64] = np.rint(
            self.service_time * TICKS_PER_SECOND / speeds
        ).astype(np.int64)
        return ticks

    def arrival_period_ticks(self) -> int:
        """Nanoseconds between two arrivals when arrivals follow ``arrival_rate``."""
        if self.arrival_rate is None:
            raise OptionError("arrival_rate", "is needed when no arrival times are given", None)
        return max(1, round(TICKS_PER_SECOND / self.arrival_rate))
