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


# ---------------------------------------------------------------- the shared cluster set-up


def test_cluster_config_loads_the_initial_workers_to_the_utilisation() -> None:
    from elastream.runtimes.sim.cluster import cluster_config

    # 4 workers, speeds 2, 2, 1, 1 → 6 tuples per µs at full load; 0.9 of it → 5.4 M/s.
    config = cluster_config(4, heterogeneous=True, service_time=1e-6, utilisation=0.9)
    assert config.capacities == (2.0, 2.0, 1.0, 1.0)
    assert config.arrival_rate == pytest.approx(5.4e6)
    grown = cluster_config(4, heterogeneous=True, events=[WorkerEvent.at_tuple(10, "add", 6)])
    assert grown.capacities == (2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0)  # added ids run at speed 1
    assert grown.arrival_rate == pytest.approx(5.4e6)  # the rate is set by the initial workers


@pytest.mark.parametrize(("option", "kwargs"), [
    ("utilisation", {"utilisation": 0.0}),
    ("utilisation", {"utilisation": 11.0}),
    ("service_time", {"service_time": -1.0}),
])
def test_cluster_config_rejects_bad_values_naming_them(option: str, kwargs: dict[str, float]
                                                       ) -> None:
    from elastream.core.errors import OptionError
    from elastream.runtimes.sim.cluster import cluster_config

    with pytest.raises(OptionError) as error:
        cluster_config(4, **kwargs)
    assert error.value.option == option


def test_run_scheme_tells_fish_the_service_time_and_the_speeds() -> None:
    from elastream.runtimes.sim.cluster import cluster_config, run_scheme

    keys = np.zeros(60_000, dtype=np.int64)  # one hot key: FISH may use every worker
    config = cluster_config(4, heterogeneous=True)
    heuristic = run_scheme(keys, "fish", config)
    count = run_scheme(keys, "fish", config, assignment="count")
    # Algorithm 3 feeds the fast workers twice as much; counting tuples feeds all alike.
    assert heuristic.tuples_per_worker.tolist() == [20_000, 20_000, 10_000, 10_000]
    assert count.tuples_per_worker.tolist() == [15_000] * 4
    assert count.exec_time == pytest.approx(1.5 * heuristic.exec_time)
