"""The elasticity strategies (static, RC, EC, naive EC): valid schedules and their trade-offs."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.algorithms.elastic.strategies import STRATEGIES
from elastream.algorithms.elastic.strategy import Schedule, Workload, executor_of_shards
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus


def zipf_rates(shards: int, total: float, seed: int) -> np.ndarray:
    """§5.1's workload: Zipf(0.5) shard frequencies, shuffled by a seeded permutation."""
    weights = 1.0 / np.arange(1, shards + 1) ** 0.5
    rates = total * weights / weights.sum()
    return np.random.default_rng(seed).permutation(rates)


def workload(seed: int, total: float = 2400.0, **kwargs: object) -> Workload:
    z = 128
    args: dict[str, object] = {
        "shard_rate": zipf_rates(z, total, seed), "shard_state": np.full(z, 32e3),
        "shard_bytes": np.full(z, 2e4), "service_rate": 100.0, "executors": 8,
        "node_cores": (8, 8, 8, 8), "latency_target": 0.05, **kwargs}
    return Workload(**args)  # type: ignore[arg-type]


def check_valid(w: Workload, s: Schedule) -> None:
    tasks = len(s.task_node)
    assert len(s.task_executor) == tasks and len(s.shard_task) == w.shards
    assert all(0 <= t < tasks for t in s.shard_task)
    per_node = np.bincount(np.asarray(s.task_node), minlength=len(w.node_cores))
    assert np.all(per_node <= w.node_cores)
    assert s.migration_cost >= 0


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_strategy_gives_valid_deterministic_schedules(name: str) -> None:
    strategy = STRATEGIES[name]
    previous = None
    for step in range(4):  # ω key shuffles: a new permutation each interval
        w = workload(seed=step)
        s = strategy(w, previous)
        check_valid(w, s)
        assert strategy(w, previous) == s
        if previous is None:
            assert s.migration_cost == 0.0
        previous = s


def test_ec_keeps_every_shard_in_its_executor() -> None:
    previous = None
    for step in range(4):
        w = workload(seed=step)
        s = STRATEGIES["ec"](w, previous)
        owner = executor_of_shards(w.shards, w.executors)
        executor = np.asarray(s.task_executor)[np.asarray(s.shard_task)]
        assert np.array_equal(executor, owner)
        assert s.status is PlanStatus.OPTIMAL and s.expected_latency <= w.latency_target
        previous = s


def test_static_never_changes() -> None:
    first = STRATEGIES["static"](workload(0), None)
    later = STRATEGIES["static"](workload(1, total=5000.0), first)
    assert (later.task_node, later.shard_task) == (first.task_node, first.shard_task)
    assert later.migration_cost == 0.0
    assert len(first.task_node) == 32  # one executor per core


def test_rc_scales_its_executors_with_the_load() -> None:
    low = STRATEGIES["rc"](workload(0, total=600.0), None)
    high = STRATEGIES["rc"](workload(0, total=1600.0), low)  # heaviest shard ≈ 75 tuples/s
    assert len(low.task_node) < len(high.task_node) <= 32
    assert high.status is PlanStatus.FEASIBLE
    assert high.task_node[:len(low.task_node)] == low.task_node  # old executors stay put
    assert high.remote_rate(np.full(128, 2e4)) == 0.0


def test_ec_moves_less_state_and_data_than_naive_ec() -> None:
    # Table 2's comparison over ten key shuffles with a drifting total rate.
    moved = {"ec": 0.0, "naive_ec": 0.0}
    remote = {"ec": 0.0, "naive_ec": 0.0}
    for name in moved:
        previous = None
        for step in range(10):
            w = workload(seed=step, total=1800.0 + 150 * (step % 4))
            s = STRATEGIES[name](w, previous)
            moved[name] += s.migration_cost
            remote[name] += s.remote_rate(w.shard_bytes)
            previous = s
    assert moved["ec"] < moved["naive_ec"]
    assert remote["ec"] < remote["naive_ec"]


def test_more_load_than_the_cluster_is_infeasible_for_everyone() -> None:
    w = workload(0, total=4000.0)  # 32 cores of 100 tuples/s
    for strategy in STRATEGIES.values():
        s = strategy(w, None)
        assert s.status is PlanStatus.INFEASIBLE
        check_valid(w, s)


def test_ec_needs_a_core_per_executor() -> None:
    with pytest.raises(OptionError) as error:
        STRATEGIES["ec"](workload(0, executors=40), None)
    assert error.value.option == "executors"


@pytest.mark.parametrize(("change", "name"), [
    ({"executors": 0}, "executors"),
    ({"executors": 200}, "executors"),
    ({"service_rate": 0.0}, "service_rate"),
    ({"node_cores": (0, 0)}, "node_cores"),
    ({"shard_state": np.ones(3)}, "shard_state"),
    ({"home": (9,) * 8}, "home"),
    ({"theta": 0.5}, "theta"),
])
def test_bad_workloads_name_the_field(change: dict[str, object], name: str) -> None:
    with pytest.raises(OptionError) as error:
        workload(0, **change)
    assert error.value.option == name
