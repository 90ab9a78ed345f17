"""The ``fish`` planner (FISH per micro-batch) and the routing table's split hot keys."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.algorithms.balance.fish_split import (
    FishSplitOptions,
    FishSplitPlanner,
    largest_remainder,
    predicted_slot_load,
)
from elastream.algorithms.balance.flux import FluxOptions
from elastream.algorithms.hotkeys.epoch_counter import EpochCounter
from elastream.control.planners import planner
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Plan, PlanStatus
from elastream.core.routing import RoutingTable
from elastream.stores.routing_store import RoutingStore

G, S = 16, 4


def batch(counts: dict[int, float], cold: float = 0.0, batch_id: int = 0) -> LoadSnapshot:
    """A batch where key hash ``h`` (key group ``h mod G``) brought ``counts[h]`` tuples, and
    every key group another ``cold`` tuples of keys too light to be observed."""
    loads = np.full(G, cold)
    for key, count in counts.items():
        loads[key % G] += count
    return LoadSnapshot(batch_id, loads, key_hashes=np.array(list(counts), dtype=np.int64),
                        key_counts=np.array(list(counts.values()), dtype=float))


def test_epoch_counter_batch_epochs_decay_by_alpha() -> None:
    counter = EpochCounter(kmax=8, epoch=1, alpha=0.5)
    counter.add_epoch(np.array([1, 2]), np.array([10.0, 2.0]), tuples=20)
    counter.add_epoch(np.array([2]), np.array([4.0]), tuples=4)
    # (10, 2) of 20 decayed once by 0.5, then key 2 adds 4 of 4: exact decayed counts.
    assert counter.estimate(np.array([1, 2])).tolist() == [5.0, 5.0]
    assert counter.total == pytest.approx(14.0)


def test_a_hot_key_is_split_over_its_own_slot_and_ring_neighbours() -> None:
    fish = FishSplitPlanner()
    current = RoutingTable.hashed(G, S)
    hot = 5  # key group 5, slot 1
    plan = fish(batch({hot: 600.0, 3: 20.0}, cold=25.0), current)
    assert plan.status is PlanStatus.FEASIBLE
    assert plan.hot_keys is not None
    (key, buckets), = plan.hot_keys  # key 3 (20 of 1020 tuples) is not hot
    assert key == hot and len(buckets) == FishSplitOptions().buckets
    slots = set(buckets)
    assert current.slot_of[hot % G] in slots and len(slots) >= 2
    # CHK: the top key gets all S slots' worth of candidates; Algorithm 3 fills the lightest.
    after = current.apply_plan(plan)
    assert after.version == 1 and after.hot_keys == plan.hot_keys
    level = predicted_slot_load(after.hot_keys, np.array([3, hot]), np.array([20.0, 600.0]),
                                batch({hot: 600.0, 3: 20.0}, cold=25.0).key_group_load, current)
    unsplit = batch({hot: 600.0, 3: 20.0}, cold=25.0).slot_load(current)
    assert level.sum() == pytest.approx(unsplit.sum())
    assert load_distance(level) < load_distance(unsplit) / 4
    assert plan.objective == pytest.approx(load_distance(level))


def test_no_hot_keys_on_a_uniform_batch_and_the_table_stays() -> None:
    fish = FishSplitPlanner()
    current = RoutingTable.hashed(G, S)
    plan = fish(batch({k: 10.0 for k in range(G)}), current)
    assert plan.status is PlanStatus.UNCHANGED and plan.hot_keys is None
    assert current.apply_plan(plan) is current


def test_a_cooled_key_returns_to_its_key_group() -> None:
    fish = FishSplitPlanner(FishSplitOptions(alpha=0.1))
    current = RoutingTable.hashed(G, S)
    current = current.apply_plan(fish(batch({7: 900.0}, cold=10.0), current))
    assert [k for k, _ in current.hot_keys] == [7]
    for i in range(1, 4):  # key 7 disappears; others take over evenly
        current = current.apply_plan(fish(batch({}, cold=60.0, batch_id=i), current))
    assert current.hot_keys == ()


def test_d_follows_chk_and_never_shrinks_while_hot() -> None:
    fish = FishSplitPlanner(FishSplitOptions(alpha=1.0, buckets=256))
    current = RoutingTable(0, tuple([0] * G), S)  # every key group on slot 0
    # Key 1 is the top key (d = S); key 2 has a quarter of its frequency (d = S/4 = 1 → d_min 2).
    plan = fish(batch({1: 800.0, 2: 200.0}), current)
    split = dict(plan.hot_keys or ())
    assert len(set(split[1])) == S
    assert len(set(split[2])) == 2
    # Later key 2 becomes as hot as key 1: d = S, remembered (M_k) afterwards.
    current = current.apply_plan(plan)
    plan = fish(batch({1: 800.0, 2: 5000.0}, batch_id=1), current)
    assert len(set(dict(plan.hot_keys or ())[2])) == S
    assert len(fish.memory) == 2


def test_deterministic_for_the_same_history() -> None:
    snapshots = [batch({3: 500.0 + 10 * i, 9: 300.0}, cold=5.0, batch_id=i) for i in range(4)]
    plans: list[list[Plan]] = []
    for _ in range(2):
        fish, current, seen = FishSplitPlanner(), RoutingTable.hashed(G, S), []
        for snapshot in snapshots:
            plan = fish(snapshot, current)
            current = current.apply_plan(plan)
            seen.append(plan)
        plans.append(seen)
    assert plans[0] == plans[1]


@pytest.mark.parametrize(("kwargs", "option"), [
    ({"alpha": 1.5}, "alpha"), ({"kmax": 0}, "kmax"), ({"theta": 0.0}, "theta"),
    ({"buckets": -1}, "buckets"), ({"d_min": 0}, "d_min"),
])
def test_options_validated(kwargs: dict[str, float], option: str) -> None:
    with pytest.raises(OptionError, match=option):
        FishSplitOptions(**kwargs)  # type: ignore[arg-type]


def test_rejects_key_counts_that_do_not_match() -> None:
    snapshot = LoadSnapshot(0, np.ones(G), key_hashes=np.array([1, 2]),
                            key_counts=np.array([1.0]))
    with pytest.raises(OptionError, match="key_counts"):
        FishSplitPlanner()(snapshot, RoutingTable.hashed(G, S))


def test_registry_builds_a_fresh_planner_per_job() -> None:
    first, options = planner("fish", max_moves=3)
    second, _ = planner("fish")
    assert isinstance(options, FishSplitOptions) and first is not second


def test_largest_remainder_keeps_the_bucket_count() -> None:
    rng = np.random.default_rng(1)
    share = rng.integers(0, 50, size=(20, 6))
    share[:, 0] += 1
    out = largest_remainder(share, 64)
    assert (out.sum(axis=1) == 64).all() and (out >= 0).all()
    assert (np.abs(out - share / share.sum(axis=1, keepdims=True) * 64) < 1).all()


def test_routing_table_hot_keys_round_trip_and_validation(tmp_path: object) -> None:
    table = RoutingTable(3, (0, 1, 1, 0), 2, hot_keys=((-9, (0, 1, 1)), (4, (1,))))
    assert RoutingTable.from_json(table.to_json()) == table
    store = RoutingStore(str(tmp_path))
    store.publish(table)
    assert store.current() == table
    with pytest.raises(OptionError, match="hot_keys"):
        RoutingTable(0, (0, 1), 2, hot_keys=((1, (2,)),))
    with pytest.raises(OptionError, match="hot_keys"):
        RoutingTable(0, (0, 1), 2, hot_keys=((1, ()),))
    with pytest.raises(OptionError, match="hot_keys"):
        RoutingTable(0, (0, 1), 2, hot_keys=((1, (0,)), (1, (1,))))
    # The same split again publishes no new version.
    again = Plan(PlanStatus.FEASIBLE, hot_keys=((4, (1,)), (-9, (0, 1, 1))))
    assert table.apply_plan(again) is table


def test_cold_key_groups_are_balanced_by_flux_and_hot_keys_split_on_top() -> None:
    current = RoutingTable(0, (0,) * 8 + (1, 2, 3, 1, 2, 3, 1, 2), S)
    snapshot = batch({5: 400.0}, cold=30.0)  # slot 0 holds half the key groups, key 5 is hot
    plan = FishSplitPlanner(FishSplitOptions(flux=FluxOptions(max_moves=3)))(snapshot,
                                                                             current)
    assert 0 < len(plan.moves) <= 3
    assert all(m.source == 0 for m in plan.moves)
    after = current.apply_plan(plan)
    assert [k for k, _ in after.hot_keys] == [5]
    unsplit = snapshot.slot_load(current)
    assert plan.objective < load_distance(unsplit) / 2
    only_split = FishSplitPlanner(FishSplitOptions(flux=FluxOptions(max_moves=0)))
    only_split = only_split(snapshot, current)
    assert only_split.moves == () and only_split.objective > plan.objective
