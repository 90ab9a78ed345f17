"""The Elasticutor simulator (runtimes/sim/elastic*.py) and the key-shuffle workload."""

from __future__ import annotations

import math
from dataclasses import astuple

import numpy as np
import pytest

from elastream.core.errors import OptionError
from elastream.runtimes.sim.elastic import RoundRecord, simulate_elastic
from elastream.runtimes.sim.elastic_cluster import ElasticConfig, Layout, move_cost, round_cost
from elastream.runtimes.sim.elastic_policies import Decision, Fixed, Scheduled, View
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


@pytest.mark.parametrize(("sources", "targets", "transfers"), [
    ([], [], 0),                      # nothing moves: no migration step
    ([3, 3], [3, 3], 0),              # within a node: state sharing, nothing crosses the network
    ([0], [1], 1),                    # one transfer
    ([0, 1, 2], [1, 2, 0], 1),        # a ring: every NIC sends one and receives one, in parallel
    ([0, 0, 0, 1], [1, 2, 3, 0], 3),  # node 0 sends three, one after another
    ([1, 2, 3], [0, 0, 0], 3),        # node 0 receives three
])
def test_a_round_lasts_as_long_as_its_busiest_nic(sources: list[int], targets: list[int],
                                                  transfers: int) -> None:
    config = ElasticConfig()
    one = 0.001 + 32768 / 125e6  # overhead + 32 KiB at 125 MB/s
    sync, migration, per_move = round_cost(config, drain=0.3, source_nodes=sources,
                                           target_nodes=targets)
    assert sync == pytest.approx(32 * 6.25e-3 + 0.3)  # steps a + d, then the drain (b)
    assert migration == pytest.approx(transfers * one)
    assert per_move.tolist() == pytest.approx([0.0 if a == b else one
                                               for a, b in zip(sources, targets, strict=True)])


def test_config_rejects_an_unknown_rc_protocol() -> None:
    with pytest.raises(OptionError, match="rc_protocol"):
        ElasticConfig(rc_protocol="global")  # type: ignore[arg-type]


# -- RC's repartitioning rounds (§1 steps a–d) on a scripted two-shard operator -------------
class SwapAtOne:
    """Two single-core executors on two nodes; from t = 1 s each wants the other's shard.

    Like :class:`Scheduled`, every decision lists all the moves still wanted (a decision
    replaces the moves not yet started).
    """

    name = "swap"
    coordination = "operator"

    def layout(self, config: ElasticConfig, num_keys: int) -> Layout:
        return Layout.make(config, num_keys, executors=2, shards_per_executor=1)

    def start(self, config: ElasticConfig,
              layout: Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        one_each = np.array([0, 1], dtype=np.int64)
        return one_each, one_each.copy(), one_each.copy()

    def control(self, view: View) -> Decision:
        if view.now < 1.0:
            return Decision()
        wanted = [(shard, 1 - shard) for shard in (0, 1)
                  if view.shard_core[shard] != 1 - shard and shard not in view.moving]
        return Decision(moves={0: wanted})


# 1000 tuples/s of two keys, one per shard: Zipf(0.5) shares p0 = 1 / (1 + 1/√2) and 1 − p0.
# Steps of 0.25 s keep every time below exact in binary. Steps a + d: 2 upstream × 0.25 s;
# step c: 62.5 MB at 125 MB/s = 0.5 s (no fixed overhead).
P0 = 1 / (1 + 1 / math.sqrt(2))
SWAP = dict(nodes=2, cores_per_node=1, executors=2, shards_per_executor=1, offered_rate=1000.0,
            warmup=0.0, step=0.25, upstream_executors=2, rc_sync_per_upstream=0.25,
            migration_overhead=0.0, shard_state_bytes=62.5e6)


def test_an_rc_round_pauses_the_whole_operator() -> None:
    # Both cores run below capacity, so their queues are empty at t = 1: no drain. The round
    # lasts 0.5 s (a + d) + 0 (b) + 0.5 s (c: each node sends one state and receives one, in
    # parallel) = [1, 2). Meanwhile nothing reaches either task — not only the moving shards —
    # so second 1 processes nothing; the 1000 tuples the source emits wait upstream (2 × 1024
    # fit). At t = 2 each shard's batch joins its new task: the p0 shard's task then has
    # 1000·p0 queued + 1000·p0 arriving in [2, 3) against 1000 served, leaving 2000·p0 − 1000.
    config = ElasticConfig(**SWAP)  # type: ignore[arg-type]
    r = simulate_elastic(config, SwapAtOne(), KeyShuffle(omega=0, duration=3.0, num_keys=2))
    assert r.rounds == (RoundRecord(start=1.0, moves=2, drain=0.0, sync=0.5, migration=0.5),)
    assert [(m.start, m.sync, m.migration, m.inter_node) for m in r.moves] == \
        [(1.0, 0.5, 0.5, True)] * 2
    assert r.migrated_bytes == 2 * 62.5e6
    assert r.throughput_series.tolist() == pytest.approx([1000.0, 0.0, 3000.0 - 2000.0 * P0])
    assert r.emitted == pytest.approx(3000.0)
    assert r.in_system == pytest.approx(2000.0 * P0 - 1000.0)
    assert r.emitted == pytest.approx(r.processed + r.in_system, rel=1e-12)
    # The p0 batch (586 of 3000 tuples) waits longest: held 0.5 s on average, then behind half
    # its own batch, then 1 ms of service; it holds the top 5% and 1%.
    held_longest = 0.5 + 1000.0 * P0 / 2 / 1000.0 + 0.001
    assert r.latency.p95 == pytest.approx(held_longest, rel=0.01)
    assert r.latency.p99 == pytest.approx(held_longest, rel=0.01)


def test_back_pressure_blocks_the_source_once_the_paused_upstream_is_full() -> None:
    # One upstream executor holding at most 100 tuples: during the round [1, 2) the source
    # emits 100 tuples and is then blocked (what it does not emit is never generated).
    config = ElasticConfig(**{**SWAP, "upstream_executors": 1, "rc_sync_per_upstream": 0.5,
                              "queue_bound": 100})  # type: ignore[arg-type]
    r = simulate_elastic(config, SwapAtOne(), KeyShuffle(omega=0, duration=3.0, num_keys=2))
    assert r.rounds[0].end == 2.0
    assert r.emitted == pytest.approx(1000.0 + 100.0 + 1000.0)
    assert r.throughput_series[1] == 0.0


def test_a_round_does_not_read_as_a_drop_in_load() -> None:
    # The round [1, 2) hides the stream for the whole interval [1, 2), and the paused upstream
    # (100 tuples at most) blocks the source after 0.1 s: counting what the source emitted
    # would read 100 tuples/s. The controller at t = 2 keeps the rates it measured over [0, 1)
    # instead (1000 tuples/s split by the shards' shares).
    class Watching(SwapAtOne):
        def __init__(self) -> None:
            self.rates: list[list[float]] = []

        def control(self, view: View) -> Decision:
            self.rates.append(view.shard_rates.tolist())
            return super().control(view)

    config = ElasticConfig(**{**SWAP, "upstream_executors": 1, "rc_sync_per_upstream": 0.5,
                              "queue_bound": 100})  # type: ignore[arg-type]
    w = KeyShuffle(omega=0, duration=3.0, num_keys=2)
    watching = Watching()
    simulate_elastic(config, watching, w)
    share = np.bincount(watching.layout(config, 2).key_shard, weights=w.frequencies[0])
    assert watching.rates[0] == pytest.approx((1000.0 * share).tolist())  # t = 1
    assert watching.rates[1] == watching.rates[0]                          # t = 2


def test_move_rounds_run_every_step_per_shard_and_drain_first() -> None:
    # One round per move. Round 1 [1, 2) moves shard 0 onto core 1, where shard 1 still is:
    # at t = 2 core 1 gets all 1000 held tuples. Round 2 starts at once and first waits for
    # every task to process its queue (step b): 1000 tuples at 1000/s = 1 s, so it lasts
    # 0.5 + 1 + 0.5 s = [2, 4) and the run (4 s) ends when it does.
    config = ElasticConfig(**{**SWAP, "rc_protocol": "move_rounds"})  # type: ignore[arg-type]
    r = simulate_elastic(config, SwapAtOne(), KeyShuffle(omega=0, duration=4.0, num_keys=2))
    assert [astuple(x) for x in r.rounds] == [(1.0, 1, 0.0, 0.5, 0.5),
                                              pytest.approx((2.0, 1, 1.0, 1.5, 0.5))]
    assert r.throughput_series.tolist() == pytest.approx([1000.0, 0.0, 1000.0, 0.0])
    assert r.emitted == pytest.approx(r.processed + r.in_system, rel=1e-12)


def test_the_shard_protocol_pauses_only_the_moving_shard() -> None:
    # The earlier model: move 1 [1, 2) pauses shard 0 only; shard 1 keeps flowing to core 1.
    # Move 2 (shard 1 off core 1) starts at t = 2 behind shard 0's batch, released there.
    config = ElasticConfig(**{**SWAP, "rc_protocol": "shard"})  # type: ignore[arg-type]
    w = KeyShuffle(omega=0, duration=3.0, num_keys=2)
    shard0 = float(w.frequencies[0][SwapAtOne().layout(config, 2).key_shard == 0].sum())
    r = simulate_elastic(config, SwapAtOne(), w)
    assert r.rounds == ()
    assert [(m.start, m.sync, m.migration) for m in r.moves] == [
        (1.0, 0.5, 0.5), pytest.approx((2.0, 0.5 + 1000.0 * shard0 / 1000.0, 0.5))]
    assert r.throughput_series[1] == pytest.approx(1000.0 * (1 - shard0))  # shard 1's tuples


# -- whole runs ----------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "protocol"), [
    ("static", "round"), ("rc", "round"), ("rc", "move_rounds"), ("rc", "shard"), ("ec", "round"),
    ("naive_ec", "round")])
def test_tuples_are_conserved(name: str, protocol: str) -> None:
    config = ElasticConfig(**SMALL, rc_protocol=protocol)  # type: ignore[arg-type]
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


def test_rc_rounds_do_not_overlap_and_every_move_belongs_to_one() -> None:
    config = ElasticConfig(**SMALL)  # type: ignore[arg-type]
    w = KeyShuffle(omega=16, duration=12.0, num_keys=400)
    rc = simulate_elastic(config, Scheduled("rc", config), w)
    assert rc.rounds and sum(x.moves for x in rc.rounds) == len(rc.moves)
    assert all(b.start >= a.end - 1e-12 for a, b in zip(rc.rounds, rc.rounds[1:], strict=False))
    fixed = config.upstream_executors * config.rc_sync_per_upstream
    assert all(x.sync == pytest.approx(fixed + x.drain) for x in rc.rounds)
    starts = {x.start: x for x in rc.rounds}
    assert all(m.start in starts and m.sync == starts[m.start].sync for m in rc.moves)
    assert all(m.migration <= starts[m.start].migration + 1e-12 for m in rc.moves)


def test_rc_shard_moves_one_at_a_time_and_ec_moves_are_fast() -> None:
    config = ElasticConfig(**SMALL, rc_protocol="shard")  # type: ignore[arg-type]
    w = KeyShuffle(omega=16, duration=12.0, num_keys=400)
    rc = simulate_elastic(config, Scheduled("rc", config), w)
    assert rc.moves and rc.rounds == ()
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
