"""Every registered grouping scheme runs through the simulator, with workers added and removed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from elastream.runtimes.sim import SimConfig, WorkerEvent, simulate

registry = pytest.importorskip("elastream.algorithms.grouping.registry")

N, WORKERS, SERVICE = 20_000, 8, 1e-6


def _keys() -> np.ndarray:
    rng = np.random.default_rng(3)
    ranks = np.arange(1, 501, dtype=np.float64) ** -1.2
    return rng.choice(500, size=N, p=ranks / ranks.sum()).astype(np.int64)


@pytest.mark.parametrize("name", registry.SCHEMES)
def test_scheme_runs_with_worker_changes(name: str) -> None:
    keys = _keys()
    events = [
        WorkerEvent.at_tuple(N // 3, "add", WORKERS),
        WorkerEvent.at_time(2 * N / 3 / 4e6, "remove", 0),
    ]
    config = SimConfig(
        workers=WORKERS, service_time=SERVICE, arrival_rate=4e6, events=events, chunk_size=4096
    )
    result = simulate(keys, None, registry.make_scheme(name, WORKERS, seed=1), config)
    distinct = len(np.unique(keys))
    assert result.scheme == name
    assert int(result.tuples_per_worker.sum()) == N
    assert result.tuples_per_worker[WORKERS] > 0  # the added worker got work
    assert distinct <= result.memory <= distinct * (WORKERS + 1)
    assert result.exec_time >= math.ceil(N / (WORKERS + 1)) * SERVICE - 1e-12
    assert result.exec_time <= result.makespan
    assert result.latency.p50 <= result.latency.p95 <= result.latency.p99


def test_field_grouping_keeps_one_state_per_key() -> None:
    keys = _keys()
    config = SimConfig(workers=WORKERS, service_time=SERVICE, arrival_rate=4e6)
    result = simulate(keys, None, registry.make_scheme("fg", WORKERS), config)
    assert result.memory == len(np.unique(keys))
