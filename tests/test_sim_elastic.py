"""The Elasticutor simulator (runtimes/sim/elastic*.py) and the key-shuffle workload."""

from __future__ import annotations

import math

import numpy as np
import pytest

from elastream.core.errors import OptionError
from elastream.runtimes.sim.elastic import simulate_elastic
from elastream.runtimes.sim.elastic_cluster import ElasticConfig, move_cost
from elastream.runtimes.sim.elastic_strategies import Fixed, Scheduled
from elastream.workloads.key_shuffle import KeyShuffle, key_shuffle_keys
from elastream.workloads.zipf import zipf_probabilities

SMALL = dict(nodes=4, cores_per_node=4, executors=4, shards_per_executor=32, warmup=2.0)
"""16 cores, 4 executors of 32 shards (128 shards: 8 per core for static and RC)."""


# -- the key-shuffle workload ------------------------------------------------------------
@pytest.mark.parametrize("omega", [1.0, 2.0, 16.0])
def test_every_epoch_is_a_permutation_of_the_zipf_frequencies(omega: float) -> None:
    w = KeyShuffle(omega=omega, duration=60.0, num_keys=500, seed=3)
    zipf = np.sort(zipf_probabilities(0.5, 500))
    assert w.epochs == math.ceil(omega)
    assert np.allclose(w.change_times, np.arange(w.epochs) * 60.0 / omega)
    for e in range(w.epochs):
        assert np.array_equal(np.sort(w.frequencies[e]), zipf)  # exactly the same numbers
        assert sorted(w.ranks[e].tolist()) == list(range(500))
    assert not np.array_equal(w.ranks[0], w.ranks[-1]) or w.epochs == 1


def test_no_shuffle_without_omega_and_equal_seeds_give_equal_workloads() -> None:
    w = KeyShuffle(omega=0, duration=600.0, num_keys=50, seed=1)
    assert w.epochs == 1 and w.epoch_at([0.0, 599.0]).tolist() == [0, 0]
    again = KeyShuffle(omega=0, duration=600.0, num_keys=50, seed=1)
    assert np.array_equal(w.frequencies, again.frequencies)
    times = np.linspace(0, 599, 1000)
    assert np.array_equal(key_shuffle_keys(times, w, seed=2), key_shuffle_keys(times, w, seed=2))


def test_sampled_keys_follow_each_epochs_frequencies() -> None:
    w = KeyShuffle(omega=30, duration=4.0, num_keys=20, seed=0)  # an epoch every 2 s
    times = np.sort(np.random.default_rng(0).uniform(0, 4.0, 200_000))
    keys = key_shuffle_keys(times, w, seed=1)
    for e in range(w.epochs):
        inside = w.epoch_at(times) == e
        observed = np.bincount(keys[inside], minlength=20) / inside.sum()
        assert np.abs(observed - w.frequencies[e]).max() < 0.01


def test_workload_rejects_bad_arguments() -> None:
    with pytest.raises(OptionError, match="omega"):
        KeyShuffle(omega=-1, duration=1.0)
    with pytest.raises(OptionError, match="duration"):
        KeyShuffle(omega=1, duration=0.0)


# -- hand-computed micro-cases --------------------------------------------------------------
def test_two_keys_on_two_cores_match_the_hand_computation() -> None:
    # Zipf(0.5) over 2 keys: p = (1, 1/√2) / (1 + 1/√2) = (0.5858, 0.4142); 1000 tuples/s, each
    # key's shard on its own 1000/s core: utilisations 0.5858 and 0.4142, no backlog, M/M/1
    # sojourn 1 ms / (1 − ρ) = 2.4142 ms and 1.7071 ms; mean 0.5858·2.4142 + 0.4142·1.7071
    # = √2 + 1/√2 = 1.5·√2 ms.
    config = ElasticConfig(nodes=1, cores_per_node=2, executors=2, shards_per_executor=1,
                           offered_rate=1000.0, warmup=0.0)
    w = KeyShuffle(omega=0, duration=2.0, num_keys=2)
    r = simulate_elastic(config, Scheduled("static", config), w)
    assert r.throughput == pytest.approx(1000.0)
    assert r.latency.mean == pytest.approx(1.5 * math.sqrt(2) * 1e-3)
    assert r.latency.p50 == pytest.approx((1 + math.sqrt(2)) * 1e-3, rel=0.01)  # 58.6% there
    assert r.latency.p99 == pytest.approx((1 + math.sqrt(2)) * 1e-3, rel=0.01)
    assert r.in_system == pytest.approx(0.0, abs=1e-9)


def test_an_overloaded_core_saturates_and_back_pressure_bounds_its_queue() -> None:
    # One key, so one core gets everything: offered 3000/s against its 1000/s. The core is busy
    # from the first step on, so it processes exactly 1000/s × 2 s; the source emits only what
    # keeps the queue at the bound (1024 tuples), which is what stays in the system.
    config = ElasticConfig(nodes=1, cores_per_node=2, executors=2, shards_per_executor=1,
                           offered_rate=3000.0, warmup=0.0)
    w = KeyShuffle(omega=0, duration=2.0, num_keys=1)
    r = simulate_elastic(config, Scheduled("static", config), w)
    assert r.processed == pytest.approx(2000.0)
    assert r.in_system == pytest.approx(1024.0)
    assert r.emitted == pytest.approx(3024.0)
    assert r.throughput_series.tolist() == pytest.approx([1000.0, 1000.0])
    assert r.latency.p99 == pytest.approx(1.025, rel=0.02)  # a full queue: 1024 × 1 ms + 1 ms


def test_move_costs_follow_the_protocol() -> None:
    config = ElasticConfig()
    # EC, across nodes: 2 ms + 10 queued tuples × 1 ms; 1 ms + 32 KiB / 125 MB/s.
    sync, migration = move_cost(config, same_node=False, drained=10, coordination="executor")
    assert sync == pytest.approx(0.012)
    assert migration == pytest.approx(0.001 + 32768 / 125e6)
    # Within a node the state is shared: nothing migrates. RC: 32 upstream × 6.25 ms.
    sync, migration = move_cost(config, same_node=True, drained=0, coordination="operator")
    assert (sync, migration) == (pytest.approx(0.2), 0.0)


# -- whole runs ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["static", "rc", "ec", "naive_ec"])
def test_tuples_are_conserved(name: str) -> None:
    config = ElasticConfig(**SMALL)  # type: ignore[arg-type]
    strategy = Scheduled(name, config)
    r = simulate_elastic(config, strategy, KeyShuffle(omega=16, duration=12.0, num_keys=400))
    assert r.emitted > 0
    assert r.emitted == pytest.approx(r.processed + r.in_system, rel=1e-12, abs=1e-6)
    assert r.throughput_series.sum() == pytest.approx(r.processed)


def test_static_never_moves_cores_or_shards() -> None:
    config = ElasticConfig(**SMALL)  # type: ignore[arg-type]
    w = KeyShuffle(omega=16, duration=10.0, num_keys=400)
    r = simulate_elastic(config, Scheduled("static", config), w)
    assert r.moves == () and r.migrated_bytes == 0
    assert (r.cores == 1).all()  # one core per single-core executor, at every interval


def test_rc_moves_one_at_a_time_and_ec_moves_are_fast() -> None:
    config = ElasticConfig(**SMALL)  # type: ignore[arg-type]
    w = KeyShuffle(omega=16, duration=12.0, num_keys=400)
    rc = simulate_elastic(config, Scheduled("rc", config), w)
    assert rc.moves
    ends = [m.start + m.sync + m.migration for m in rc.moves]
    assert all(nxt.start >= end - 1e-12 for nxt, end in zip(rc.moves[1:], ends, strict=False))
    assert min(m.sync for m in rc.moves) >= config.upstream_executors \
        * config.rc_sync_per_upstream
    ec = simulate_elastic(config, Scheduled("ec", config), w)
    assert ec.moves
    assert np.median([m.sync for m in ec.moves]) < 0.1 * np.median([m.sync for m in rc.moves])


def test_ec_meets_the_latency_target_when_cores_suffice() -> None:
    # 16 cores, 4 executors, a light load (30% of the cores): the model's allocation can meet
    # 3 ms, and the simulated tuples see it too once the first interval has re-balanced.
    config = ElasticConfig(**SMALL, offered_load=0.3, latency_target=3e-3)  # type: ignore[arg-type]
    strategy = Scheduled("ec", config)
    r = simulate_elastic(config, strategy, KeyShuffle(omega=2, duration=20.0, num_keys=400))
    assert set(r.statuses) == {"optimal"}
    assert r.latency.mean <= config.latency_target
    assert r.throughput == pytest.approx(r.offered, rel=0.01)


def test_a_fixed_executor_scales_with_its_cores() -> None:
    # One executor of 256 shards, all load: 4 cores process about twice what 2 cores do.
    base = dict(nodes=2, cores_per_node=4, executors=1, shards_per_executor=256, warmup=3.0,
                offered_load=1.0)
    w = KeyShuffle(omega=0, duration=8.0, num_keys=2000)
    throughput = {}
    for cores in (2, 4):
        config = ElasticConfig(**base, offered_rate=0.9 * cores * 1000)  # type: ignore[arg-type]
        throughput[cores] = simulate_elastic(config, Fixed(config, [cores]), w).throughput
    assert throughput[4] == pytest.approx(2 * throughput[2], rel=0.05)
