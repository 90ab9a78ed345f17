"""What each grouping scheme promises, checked against the papers' rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.algorithms.grouping.consistent_hash import ConsistentHashGrouping, HashRing
from elastream.algorithms.grouping.d_choices import DChoices, choose_d
from elastream.algorithms.grouping.field import FieldGrouping
from elastream.algorithms.grouping.fish import FishGrouping
from elastream.algorithms.grouping.hashing import choice, choices
from elastream.algorithms.grouping.pkg import PartialKeyGrouping
from elastream.algorithms.grouping.shuffle import ShuffleGrouping
from elastream.algorithms.grouping.w_choices import WChoices
from elastream.algorithms.hotkeys.chk import arithmetic_choices


def zipf(size: int, z: float, keys: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = np.arange(1, keys + 1, dtype=float) ** -z
    return rng.choice(keys, size=size, p=p / p.sum()).astype(np.int64)


def workers_per_key(keys: np.ndarray, workers: np.ndarray) -> dict[int, set[int]]:
    seen: dict[int, set[int]] = {}
    for k, w in zip(keys.tolist(), workers.tolist(), strict=True):
        seen.setdefault(k, set()).add(w)
    return seen


KEYS = zipf(30_000, 1.4, 3000, seed=1)
ZEROS = np.zeros(len(KEYS))


# ---------------------------------------------------------------- SG and FG


def test_shuffle_is_round_robin() -> None:
    sg = ShuffleGrouping(range(5), seed=7)
    got = np.concatenate([sg.route(KEYS[:3], ZEROS[:3]), sg.route(KEYS[3:1003], ZEROS[3:1003])])
    assert got.tolist() == [(7 + i) % 5 for i in range(1003)]


@settings(max_examples=examples(30))
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=300),
       st.integers(1, 40), st.integers(0, 1000))
def test_field_grouping_never_splits_a_key(keys: list[int], workers: int, seed: int) -> None:
    array = np.array(keys, dtype=np.int64)
    got = FieldGrouping(range(workers), seed=seed).route(array, np.zeros(len(array)))
    assert all(len(ws) == 1 for ws in workers_per_key(array, got).values())
    assert got.tolist() == choice(array, workers, seed).tolist()  # hash mod n


def test_field_grouping_spreads_distinct_keys_evenly() -> None:
    counts = np.bincount(FieldGrouping(range(16)).route(np.arange(160_000), np.zeros(160_000)))
    assert counts.max() / counts.mean() < 1.03


# ---------------------------------------------------------------- PKG


@pytest.mark.parametrize("block", [1, 512])
def test_pkg_uses_at_most_its_two_hash_choices(block: int) -> None:
    got = PartialKeyGrouping(range(16), seed=4, block=block).route(KEYS, ZEROS)
    first, second = choice(KEYS, 16, 4, 1), choice(KEYS, 16, 4, 2)
    assert np.all((got == first) | (got == second))
    assert max(len(ws) for ws in workers_per_key(KEYS, got).values()) <= 2


def test_pkg_picks_the_less_loaded_by_its_local_counts() -> None:
    got = PartialKeyGrouping(range(8), seed=2, block=1).route(KEYS[:5000], ZEROS[:5000])
    first, second = choice(KEYS, 8, 2, 1), choice(KEYS, 8, 2, 2)
    loads = np.zeros(8, dtype=int)
    for i, w in enumerate(got.tolist()):
        a, b = int(first[i]), int(second[i])
        want = a if loads[a] <= loads[b] else b  # ties: the first choice
        assert w == want
        loads[w] += 1


# ---------------------------------------------------------------- D-Choices and W-Choices


def test_w_choices_spreads_a_head_key_over_every_worker_and_tail_keys_over_two() -> None:
    keys = zipf(40_000, 1.6, 20_000, seed=3)
    wc = WChoices(range(16), seed=1, block=1024)
    got = wc.route(keys, np.zeros(len(keys)))
    seen = workers_per_key(keys, got)
    top = int(np.bincount(keys).argmax())
    assert seen[top] == set(range(16))
    never_hot = [k for k, c in zip(*np.unique(keys, return_counts=True), strict=True)
                 if c < 5]  # far below θ = 1/80 of any prefix
    assert never_hot
    for k in never_hot:
        assert seen[int(k)] <= {int(choice([k], 16, 1, 1)[0]), int(choice([k], 16, 1, 2)[0])}


def test_d_choices_keeps_each_head_key_on_its_d_hash_choices() -> None:
    keys = zipf(40_000, 1.4, 20_000, seed=4)
    n, block = 64, 2048
    dc = DChoices(range(n), seed=2, block=block)
    for start in range(0, len(keys), block):
        part = keys[start:start + block]
        got = dc.route(part, np.zeros(len(part)))
        head = dc.summary.estimate(part) / dc.summary.total > dc.theta
        assert 2 <= dc.d < n  # here d stays below n, so heads use hashes
        allowed = choices(part, n, 2, np.arange(1, dc.d + 1))
        assert np.all((allowed == got[:, None]).any(axis=1)[head])
        tail = ~head
        two = (allowed[:, :2] == got[:, None]).any(axis=1)
        assert np.all(two[tail])


def test_d_choices_d_is_the_smallest_within_the_imbalance_tolerance() -> None:
    n, eps, p_top, p_head, heads = 32, 1e-4, 0.3, 0.5, 5
    d = choose_d(p_top=p_top, p_head=p_head, heads=heads, n=n, epsilon=eps)

    def fits(d: int) -> bool:
        b_h = 1 - ((n - 1) / n) ** (heads * d)
        b_1 = 1 - ((n - 1) / n) ** d
        tail = 1 - p_head
        return bool(p_head + tail * b_h**2 <= b_h + eps
                    and p_top + (p_head - p_top) * b_1**d + tail * b_1**2 <= b_1 + eps)

    assert fits(d) and not any(fits(x) for x in range(max(2, round(p_top * n)), d))
    assert choose_d(p_top=0.99, p_head=0.99, heads=1, n=8, epsilon=eps) == 8


# ---------------------------------------------------------------- consistent hashing


def test_adding_a_worker_moves_only_keys_to_it_and_about_one_in_n() -> None:
    keys = np.arange(200_000, dtype=np.int64)
    before = HashRing(range(20), seed=3).owner(keys)
    after = HashRing([*range(20), 20], seed=3).owner(keys)
    moved = before != after
    assert np.all(after[moved] == 20)  # only arcs next to the new worker's points change
    assert 0.5 / 21 < moved.mean() < 1.5 / 21


def test_removing_a_worker_moves_only_its_keys() -> None:
    keys = np.arange(100_000, dtype=np.int64)
    ch = ConsistentHashGrouping(range(10), seed=5)
    before = ch.route(keys, np.zeros(len(keys)))
    ch.set_workers([w for w in range(10) if w != 4])
    after = ch.route(keys, np.zeros(len(keys)))
    assert np.all((before == after) | (before == 4))
    assert not np.any(after == 4)


def test_virtual_nodes_even_out_the_arcs() -> None:
    keys = np.arange(100_000, dtype=np.int64)
    few = np.bincount(HashRing(range(8), virtual_nodes=1, seed=1).owner(keys))
    many = np.bincount(HashRing(range(8), virtual_nodes=200, seed=1).owner(keys))
    assert many.max() / many.mean() < 1.15 < few.max() / few.mean()


def test_successors_walk_the_ring_clockwise() -> None:
    ring = HashRing([3, 8, 5], virtual_nodes=4, seed=2)
    for point in range(len(ring)):
        walk = [int(ring.owners[(point + i) % len(ring)]) for i in range(len(ring))]
        first_seen = list(dict.fromkeys(walk))
        assert ring.successors(np.array([point]))[0].tolist() == first_seen


# ---------------------------------------------------------------- FISH


def test_fish_gives_each_key_the_workers_chk_says() -> None:
    n, block = 32, 250  # blocks inside epochs (1000): CHK runs on the counters at block ends
    keys = zipf(30_000, 1.5, 5000, seed=6)
    fish = FishGrouping(range(n), seed=3, block=block)
    ring = fish.ring
    best: dict[int, int] = {}
    for start in range(0, len(keys), block):
        part = keys[start:start + block]
        got = fish.route(part, np.zeros(len(part)))
        unique, d = fish.last_choices
        freq = fish.counter.estimate(unique) / fish.counter.total
        top = fish.counter.max_count / fish.counter.total
        hot = freq > 1 / (4 * n)
        arithmetic = arithmetic_choices(freq[hot], top, n, 2)  # d = W / 2^index, ≥ d_min
        for k, a, dk in zip(unique[hot].tolist(), arithmetic.tolist(), d[hot].tolist(),
                            strict=True):
            best[k] = max(best.get(k, 0), a)
            assert dk == best[k] >= 2  # never below the remembered M_k
        assert np.all(d[~hot] == 2)
        # every tuple went to one of the first d workers clockwise from its key
        d_of = dict(zip(unique.tolist(), d.tolist(), strict=True))
        prefix = ring.successors(ring.point(part))
        for i, k in enumerate(part.tolist()):
            assert got[i] in prefix[i, :d_of[k]]


def test_fish_sends_more_to_faster_workers() -> None:
    keys = np.zeros(40_000, dtype=np.int64)  # one hot key: every worker is a candidate
    speeds = np.array([1.0, 1.0, 2.0, 4.0])
    fish = FishGrouping(range(4), capacities=speeds, block=1000)
    counts = np.bincount(fish.route(keys, np.zeros(len(keys))), minlength=4)
    assert np.allclose(counts / counts.sum(), speeds / speeds.sum(), atol=0.01)


def test_fish_inferred_queues_drain_with_time() -> None:
    fish = FishGrouping(range(2), service_time=0.01, interval=1.0, block=1)
    fish.route(np.zeros(100, dtype=np.int64), np.zeros(100))
    assert fish.loads.sum() == 100
    fish.route(np.array([5]), np.array([0.5]))  # within T: no estimate yet
    assert fish.loads.sum() == 101
    fish.route(np.array([5]), np.array([0.2 + 1.0]))  # 1.2 s later: 120 tuples each done
    assert fish.loads.tolist() in ([1.0, 0.0], [0.0, 1.0])


def test_fish_count_assignment_ignores_speeds() -> None:
    keys = np.zeros(40_000, dtype=np.int64)  # one hot key: every worker is a candidate
    speeds = np.array([1.0, 1.0, 2.0, 4.0])
    fish = FishGrouping(range(4), capacities=speeds, service_time=1e-3, block=1000,
                        assignment="count")
    counts = np.bincount(fish.route(keys, np.arange(len(keys)) * 1e-3), minlength=4)
    assert counts.tolist() == [10_000] * 4  # the traditional assignment: equal tuple counts


def test_fish_hash_candidates_start_at_the_field_grouping_worker() -> None:
    n = 16
    keys = zipf(20_000, 1.5, 3000, seed=4)
    fish = FishGrouping(range(n), seed=5, block=500, candidates="hash")
    for start in range(0, len(keys), 500):
        part = keys[start:start + 500]
        got = fish.route(part, np.zeros(len(part)))
        unique, d = fish.last_choices
        d_of = dict(zip(unique.tolist(), d.tolist(), strict=True))
        first = choice(part, n, 5)  # F = HASH(k) mod n, as FG
        offset = (got - first) % n
        assert all(o < d_of[k] for o, k in zip(offset.tolist(), part.tolist(), strict=True))
    assert int(d.max()) > 2  # some keys were hot and got more than two candidates


@pytest.mark.parametrize(("candidates", "low", "high"), [("ring", 0.0, 0.15), ("hash", 0.6, 1.0)])
def test_fish_state_grows_little_when_a_worker_joins_only_on_the_ring(
    candidates: str, low: float, high: float
) -> None:
    # 2000 cold keys (each 1/2000 of the stream < θ = 1/64): two candidates each. The ring
    # moves a key only when the new worker's points fall among its first two successors
    # (~2/17 of keys); HASH(k) mod n moves almost every key, adding ~2 states per key (§6.5).
    keys = np.random.default_rng(3).permutation(np.repeat(np.arange(2000), 8))
    fish = FishGrouping(range(16), seed=1, block=1000, candidates=candidates)
    zeros = np.zeros(len(keys))
    first = fish.route(keys, zeros)
    fish.set_workers(range(17))
    second = fish.route(keys, zeros)
    before = len(set(zip(keys.tolist(), first.tolist(), strict=True)))
    both = before + len(set(zip(keys.tolist(), second.tolist(), strict=True))
                        - set(zip(keys.tolist(), first.tolist(), strict=True)))
    assert low <= both / before - 1 <= high


def test_fish_candidates_survive_adding_a_worker() -> None:
    keys = np.arange(5000, dtype=np.int64)  # all cold: d = 2 ring successors
    fish = FishGrouping(range(16), seed=1)
    before = fish.ring.successors(fish.ring.point(keys), 2)
    fish.set_workers(range(17))
    after = fish.ring.successors(fish.ring.point(keys), 2)
    same = (fish.workers[:16][before] == fish.workers[after]).all(axis=1)
    assert same.mean() > 0.8  # only keys next to the new worker's points change candidates


def test_fish_keeps_a_key_that_cools_within_a_block_on_its_hot_workers() -> None:
    n = 16
    hot_then_gone = np.concatenate([np.full(3000, 7), np.arange(100, 13_100)]).astype(np.int64)
    fish = FishGrouping(range(n), seed=2, block=16_384)  # one block, 16 epochs of 1000
    got = fish.route(hot_then_gone, np.zeros(len(hot_then_gone)))
    assert set(got[:3000].tolist()) == set(range(n))  # CHK in its epochs: d = W
    assert fish.memory.lookup(np.array([7])).tolist() == [n]
