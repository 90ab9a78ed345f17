"""Simulator oracle tests: the vectorised run equals a naive per-tuple queue simulation."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.core.errors import OptionError
from elastream.runtimes.sim import (
    RoutingError,
    SimConfig,
    SimResult,
    WorkerEvent,
    queues,
    simulate,
)
from elastream.runtimes.sim.metrics import DistinctPairs, exact_sum, nearest_rank
from elastream.runtimes.sim.queues import IDLE, fifo_departures, to_ticks

# --- tiny schemes implementing the GroupingScheme protocol -----------------------------------


class HashScheme:
    """Fields grouping: key mod the number of live workers, over the sorted live ids."""

    name = "hash"

    def __init__(self, workers: int) -> None:
        self.live = np.arange(workers, dtype=np.int64)

    def route(self, keys: np.ndarray, times: np.ndarray) -> np.ndarray:
        return self.live[keys % len(self.live)]

    def set_workers(self, workers: Sequence[int]) -> None:
        self.live = np.asarray(sorted(workers), dtype=np.int64)


class RoundRobin(HashScheme):
    """Shuffle grouping: a counter that survives chunks and worker changes."""

    name = "rr"

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.counter = 0

    def route(self, keys: np.ndarray, times: np.ndarray) -> np.ndarray:
        turns = self.counter + np.arange(len(keys))
        self.counter += len(keys)
        return self.live[turns % len(self.live)]


class FirstLive(HashScheme):
    """Everything to the lowest live worker id."""

    name = "first"

    def route(self, keys: np.ndarray, times: np.ndarray) -> np.ndarray:
        return np.full(len(keys), self.live[0], dtype=np.int64)


class Stale(HashScheme):
    """Ignores worker changes: routes to worker 0 forever."""

    name = "stale"

    def route(self, keys: np.ndarray, times: np.ndarray) -> np.ndarray:
        return np.zeros(len(keys), dtype=np.int64)


# --- the oracle: one tuple at a time, plain Python ints --------------------------------------


def naive(
    keys: list[int],
    ticks: list[int],
    kind: str,
    sources: int,
    service: list[int],
    workers: int,
    events: dict[int, list[tuple[str, int]]],
) -> dict[str, object]:
    """Per-tuple routing (same rule as the test scheme) and FIFO queues by the recursion."""
    live = list(range(workers))
    counters = [0] * sources
    last: dict[int, int] = {}
    latencies, pairs, served = [], set(), Counter[int]()
    routed = []
    for i, (key, arrival) in enumerate(zip(keys, ticks, strict=True)):
        for action, worker in events.get(i, []):
            live = sorted({*live, worker} if action == "add" else set(live) - {worker})
        if kind == "hash":
            w = live[key % len(live)]
        else:
            src = i % sources
            w = live[counters[src] % len(live)]
            counters[src] += 1
        departure = max(arrival, last.get(w, arrival)) + service[w]
        last[w] = departure
        latencies.append(departure - arrival)
        pairs.add((key, w))
        served[w] += 1
        routed.append(w)
    return {
        "latencies": latencies,
        "memory": len(pairs),
        "served": served,
        "routed": routed,
        "makespan": max(last.values()) - ticks[0],
        "exec": max(served[w] * service[w] for w in served),
    }


@st.composite
def runs(draw: st.DrawFn) -> dict[str, object]:
    n = draw(st.integers(1, 60))
    workers = draw(st.integers(1, 4))
    extra = draw(st.integers(0, 2))
    ids = workers + extra
    keys = draw(st.lists(st.integers(-(2**40), 2**40) | st.integers(0, 6), min_size=n, max_size=n))
    steps = draw(
        st.lists(st.sampled_from([0.0, 0.0, 1e-7, 3.3e-7, 1e-6, 4e-6]), min_size=n, max_size=n)
    )
    start = draw(st.sampled_from([0.0, 1.0, 1234.5]))
    times = [start + t for t in itertools.accumulate(steps)]
    service_time = draw(st.sampled_from([1e-6, 2.5e-7, 3e-9]))
    capacities = draw(
        st.none() | st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=ids, max_size=ids)
    )
    live = set(range(workers))
    events: list[tuple[int, str, int]] = []
    for index in sorted(draw(st.lists(st.integers(0, n), max_size=4))):
        idle = sorted(set(range(ids)) - live)
        if idle and (len(live) == 1 or draw(st.booleans())):
            worker = draw(st.sampled_from(idle))
            live.add(worker)
            events.append((index, "add", worker))
        elif len(live) > 1:
            worker = draw(st.sampled_from(sorted(live)))
            live.remove(worker)
            events.append((index, "remove", worker))
    return {
        "keys": keys,
        "times": times,
        "workers": workers,
        "ids": ids,
        "events": events,
        "service_time": service_time,
        "capacities": capacities,
        "chunk": draw(st.integers(1, 8)),
        "kind": draw(st.sampled_from(["hash", "rr"])),
        "sources": draw(st.integers(1, 3)),
        "by_time": draw(st.booleans()),
    }


def _event(index: int, action: str, worker: int, times: list[float], by_time: bool) -> WorkerEvent:
    # A time event lands on tuple `index` only if no earlier tuple has the same time.
    if by_time and index == len(times):
        return WorkerEvent.at_time(times[-1] + 1.0, action, worker)  # type: ignore[arg-type]
    if by_time and (index == 0 or times[index - 1] < times[index]):
        return WorkerEvent.at_time(times[index], action, worker)  # type: ignore[arg-type]
    return WorkerEvent.at_tuple(index, action, worker)  # type: ignore[arg-type]


@settings(max_examples=examples(300), deadline=None)
@given(runs())
def test_vectorised_run_equals_naive_per_tuple_simulation(run: dict) -> None:  # type: ignore[type-arg]
    keys, times, events = run["keys"], run["times"], run["events"]
    config = SimConfig(
        workers=run["workers"],
        service_time=run["service_time"],
        capacities=run["capacities"],
        chunk_size=run["chunk"],
        keep_latencies=True,
        load_buckets=3,
        events=[_event(i, a, w, times, run["by_time"]) for i, a, w in events],
    )
    scheme_type = HashScheme if run["kind"] == "hash" else RoundRobin
    sources = [scheme_type(run["workers"]) for _ in range(run["sources"])]
    result = simulate(np.array(keys, dtype=np.int64), np.array(times), sources, config)

    caps = run["capacities"] or [1.0] * run["ids"]
    service = [round(run["service_time"] * 1e9 / c) for c in caps]
    ticks = [round(t * 1e9) for t in times]
    by_index: dict[int, list[tuple[str, int]]] = {}
    for i, a, w in events:
        by_index.setdefault(i, []).append((a, w))
    want = naive(keys, ticks, run["kind"], run["sources"], service, run["workers"], by_index)

    assert result.latencies is not None
    assert result.latencies.tolist() == want["latencies"]
    assert result.memory == want["memory"]
    ids = config.num_worker_ids  # the initial workers, added ids and given capacities
    assert result.tuples_per_worker.tolist() == [want["served"][w] for w in range(ids)]
    assert result.exec_time == want["exec"] / 1e9
    assert result.makespan == want["makespan"] / 1e9
    assert result.throughput == len(keys) * 1e9 / want["makespan"]
    lat = sorted(want["latencies"])
    n = len(lat)
    assert result.latency.mean == float(Fraction(sum(lat), n * 10**9))
    assert result.latency.p50 == lat[math.ceil(0.50 * n) - 1] / 1e9
    assert result.latency.p95 == lat[nearest_rank(95, n) - 1] / 1e9
    assert result.latency.p99 == lat[nearest_rank(99, n) - 1] / 1e9
    width = (ticks[-1] - ticks[0]) // 3 + 1
    load = np.zeros((3, ids), dtype=np.int64)
    for t, w in zip(ticks, want["routed"], strict=True):
        load[(t - ticks[0]) // width, w] += 1
    assert result.load.tolist() == load.tolist()


# --- the queue kernel on its own, both code paths ---------------------------------------------


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 50), st.integers(0, 9)), max_size=40),
    st.lists(st.integers(0, 200) | st.just(IDLE), min_size=4, max_size=4),
    st.sampled_from([1, 2**55]),
)
def test_fifo_departures_equal_the_lindley_recursion(
    tuples: list[tuple[int, int, int]], carry: list[int], scale: int
) -> None:
    # scale 2**55 spreads arrivals up to 2**61 apart, so far that the lifted cumulative maximum
    # of two or more workers would overflow int64: the kernel then goes one worker at a time.
    arrivals = np.minimum(np.cumsum([a for _, a, _ in tuples], dtype=np.int64), 64) * scale
    workers = np.array([w for w, _, _ in tuples], dtype=np.int64)
    services = np.array([s for _, _, s in tuples], dtype=np.int64)
    got, carry_after = fifo_departures(arrivals, services, workers, np.array(carry))
    last = dict(enumerate(carry))
    want = []
    for a, w, s in zip(arrivals.tolist(), workers.tolist(), services.tolist(), strict=True):
        last[w] = max(a, last[w]) + s
        want.append(last[w])
    assert got.tolist() == want
    assert carry_after.tolist() == [last[w] for w in range(4)]


def test_segmented_max_accumulate_paths_agree() -> None:
    rng = np.random.default_rng(5)
    values = rng.integers(-1000, 1000, size=50)
    lengths = np.array([1, 9, 0, 25, 15])[[0, 1, 3, 4]]
    want = np.concatenate(
        [np.maximum.accumulate(part) for part in np.split(values, np.cumsum(lengths)[:-1])]
    )
    assert queues._segmented_max_accumulate(values, lengths).tolist() == want.tolist()
    assert queues._segmented_max_accumulate_loop(values, lengths).tolist() == want.tolist()


# --- hand-solvable runs -------------------------------------------------------------------------


def test_one_worker_gets_everything_makespan_is_total_service() -> None:
    # 10 tuples at t = 0 on one worker at 2 s each: departures 2, 4, …, 20.
    n, s = 10, 2.0
    config = SimConfig(workers=3, service_time=s, chunk_size=3, keep_latencies=True)
    result = simulate(np.arange(n), np.zeros(n), FirstLive(3), config)
    assert result.makespan == result.exec_time == n * s
    assert result.latencies is not None
    assert result.latencies.tolist() == [int(k * s * 1e9) for k in range(1, n + 1)]
    assert result.latency.mean == s * (n + 1) / 2
    assert result.latency.p50 == 5 * s  # ⌈0.5·10⌉ = 5th smallest
    assert result.latency.p99 == n * s  # ⌈9.9⌉ = 10th
    assert result.tuples_per_worker.tolist() == [n, 0, 0]
    assert result.throughput == n / (n * s)


def test_round_robin_exec_time_is_ceiling_share() -> None:
    # 10 tuples over 4 workers round robin: 3, 3, 2, 2 tuples; busiest is busy 3 s.
    result = simulate(
        np.zeros(10, dtype=np.int64),
        None,
        RoundRobin(4),
        SimConfig(workers=4, service_time=1.0, arrival_rate=1000.0),
    )
    assert result.exec_time == 3.0
    assert result.memory == 4  # one key, state on all four workers
    assert result.busy_time.tolist() == [3.0, 3.0, 2.0, 2.0]


def test_removed_worker_drains_and_added_worker_starts_empty() -> None:
    # 4 tuples at t = 0 to worker 0 (departures 1..4 s); worker 0 removed before tuple 4, so
    # tuples 4, 5 go to worker 1 (departures 1, 2 s) while worker 0 drains; worker 2 is added
    # before tuple 6 — id 2 is lowest live after worker 1 is removed there too — and starts
    # empty although the others are busy: departure 1 s.
    events = [
        WorkerEvent.at_tuple(4, "remove", 0),
        WorkerEvent.at_tuple(6, "remove", 1),
        WorkerEvent.at_tuple(6, "add", 2),
    ]
    config = SimConfig(workers=2, service_time=1.0, events=events, keep_latencies=True)
    result = simulate(np.arange(7), np.zeros(7), FirstLive(2), config)
    assert result.latencies is not None
    assert (result.latencies // 10**9).tolist() == [1, 2, 3, 4, 1, 2, 1]
    assert result.makespan == 4.0
    assert result.tuples_per_worker.tolist() == [4, 2, 1]


def test_heterogeneous_capacities_scale_service_time() -> None:
    # Worker 1 is 4× faster: 8 round-robin tuples at t = 0 → worker 0 busy 4 s, worker 1 1 s.
    config = SimConfig(workers=2, service_time=1.0, capacities=(1.0, 4.0))
    result = simulate(np.arange(8), np.zeros(8), RoundRobin(2), config)
    assert result.busy_time.tolist() == [4.0, 1.0]
    assert result.exec_time == result.makespan == 4.0


def test_event_at_time_with_arrival_rate() -> None:
    # 10 tuples/s: tuple i at i/10 s; a change at 0.25 s applies before tuple 3 (0.3 s).
    config = SimConfig(
        workers=1,
        service_time=0.01,
        arrival_rate=10.0,
        events=[WorkerEvent.at_time(0.25, "add", 1), WorkerEvent.at_time(0.25, "remove", 0)],
    )
    result = simulate(np.arange(10), None, FirstLive(1), config)
    assert result.tuples_per_worker.tolist() == [3, 7]
    assert result.load_start == 0.0


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(st.integers(0, 20), min_size=1, max_size=80),
    st.integers(1, 5),
    st.sampled_from(["hash", "rr"]),
)
def test_exec_time_bounds(keys: list[int], workers: int, kind: str) -> None:
    scheme = HashScheme(workers) if kind == "hash" else RoundRobin(workers)
    result = simulate(
        np.array(keys),
        np.linspace(0, 1e-3, len(keys)),
        scheme,
        SimConfig(workers=workers, service_time=1e-5),
    )
    total = len(keys) * 1e-5
    assert total / workers - 1e-12 <= result.exec_time <= result.makespan
    assert result.exec_time <= total + 1e-12
    assert result.load.sum(axis=0).tolist() == result.tuples_per_worker.tolist()
    if kind == "rr":
        assert result.exec_time == pytest.approx(math.ceil(len(keys) / workers) * 1e-5)
    else:  # fields grouping keeps one state per key
        assert result.memory == len(set(keys))


# --- metrics helpers ----------------------------------------------------------------------------


@given(
    st.lists(
        st.tuples(st.integers(0, 12) | st.integers(-(2**63), 2**63 - 1), st.integers(0, 4)),
        max_size=60,
    ),
    st.integers(1, 10),
    st.sampled_from([1, 50, 1 << 20]),
)
def test_distinct_pairs_brute_force(
    pairs: list[tuple[int, int]], chunk: int, dense_bytes: int
) -> None:
    # dense_bytes 50 (10 rows of 5 workers) makes keys 10..12 leave the key-is-row mode
    # midway through the stream; 1 leaves it at the first key but 0, 2**20 at the first wide key.
    counter = DistinctPairs(num_workers=5, dense_bytes=dense_bytes)
    for start in range(0, len(pairs), chunk):
        part = pairs[start : start + chunk]
        counter.add(
            np.array([k for k, _ in part], dtype=np.int64),
            np.array([w for _, w in part], dtype=np.int64),
        )
    assert counter.count == len(set(pairs))


@given(st.lists(st.integers(0, 2**63 - 1), max_size=50))
def test_exact_sum(values: list[int]) -> None:
    assert exact_sum(np.array(values, dtype=np.int64)) == sum(values)


def test_to_ticks_rounds_to_nearest_nanosecond() -> None:
    assert to_ticks([1e-9, 0.4e-9, 0.6e-9, 1234.5]).tolist() == [1, 0, 1, 1_234_500_000_000]


# --- errors a user can act on -----------------------------------------------------------------


def test_scheme_routing_to_a_removed_worker_is_an_error() -> None:
    config = SimConfig(workers=2, events=[WorkerEvent.at_tuple(3, "remove", 0)])
    with pytest.raises(RoutingError, match="worker 0, which is not live"):
        simulate(np.arange(5), np.zeros(5), Stale(2), config)


def test_decreasing_times_are_rejected() -> None:
    with pytest.raises(OptionError, match="non-decreasing"):
        simulate(np.arange(3), np.array([0.0, 2.0, 1.0]), HashScheme(1), SimConfig(workers=1))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": 0}, "workers must be an integer >= 1"),
        ({"workers": 2, "capacities": (1.0,)}, "capacities must give a speed"),
        ({"workers": 1, "capacities": (0.0,)}, "capacities must all be positive"),
        ({"workers": 1, "service_time": 1e-10}, "at least 1 ns"),
        ({"workers": 1, "arrival_rate": -1.0}, "arrival_rate"),
        ({"workers": 1, "chunk_size": 0}, "chunk_size"),
    ],
)
def test_config_validation(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(OptionError, match=message):
        SimConfig(**kwargs)


def test_invalid_worker_changes_are_rejected() -> None:
    with pytest.raises(OptionError, match="remove a worker that is live"):
        simulate(
            np.arange(3),
            np.zeros(3),
            HashScheme(1),
            SimConfig(workers=1, events=[WorkerEvent.at_tuple(1, "remove", 3)]),
        )
    with pytest.raises(OptionError, match="at least one live worker"):
        simulate(
            np.arange(3),
            np.zeros(3),
            HashScheme(1),
            SimConfig(workers=1, events=[WorkerEvent.at_tuple(1, "remove", 0)]),
        )
    with pytest.raises(OptionError, match="exactly one"):
        WorkerEvent("add", 1)
    with pytest.raises(OptionError, match="arrival_rate"):
        simulate(np.arange(3), None, HashScheme(1), SimConfig(workers=1))


def test_result_arrays_are_read_only() -> None:
    result: SimResult = simulate(np.arange(3), np.zeros(3), HashScheme(2), SimConfig(workers=2))
    with pytest.raises(ValueError, match="read-only"):
        result.load[0, 0] = 1


class Broken(HashScheme):
    """Returns one worker id too few."""

    name = "broken"

    def route(self, keys: np.ndarray, times: np.ndarray) -> np.ndarray:
        return np.zeros(max(0, len(keys) - 1), dtype=np.int64)


def test_scheme_returning_the_wrong_shape_is_an_error() -> None:
    with pytest.raises(RoutingError, match="expected 4 integer worker ids"):
        simulate(np.arange(4), np.zeros(4), Broken(1), SimConfig(workers=1))


def test_non_finite_times_are_rejected() -> None:
    with pytest.raises(OptionError, match="finite"):
        simulate(np.arange(3), np.array([0.0, np.nan, 1.0]), HashScheme(1), SimConfig(workers=1))
