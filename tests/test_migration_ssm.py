"""``ssm`` (Ding et al. §4.3) against exhaustive search, plus its contract on hand-made cases.

The oracle enumerates every partitioning of up to 7 tasks into up to 4 intervals and every
assignment of the intervals to nodes; SSM's cost must equal the least cost found, its plan must
meet τ, and it must call an instance infeasible exactly when no partitioning meets τ.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from tests.properties import examples
from tests.test_migration_oracles import brute_ssm, instances, intervals

from elastream.algorithms.migration import ssm
from elastream.algorithms.migration.intervals import (
    MigrationInstance,
    node_of_task,
)
from elastream.core.plan import PlanStatus


@settings(max_examples=examples(300), deadline=None, derandomize=True, database=None)
@given(instances())
def test_cost_equals_exhaustive_search(case: tuple) -> None:
    work, state, current, target, tau = case
    inst = MigrationInstance(work, state, intervals(current), target, tau)
    plan = ssm.plan(inst)
    expected = brute_ssm(work, state, current, target, tau)
    if math.isinf(expected):
        assert plan.status is PlanStatus.INFEASIBLE and plan.intervals == ()
        assert plan.reason
        return
    assert plan.status is PlanStatus.OPTIMAL and plan.meets_tau
    assert plan.cost == pytest.approx(expected)
    assert plan.details["gain"] == pytest.approx(sum(state) - expected)
    # one interval per target node, contiguous, on distinct nodes
    assert len(plan.intervals) == target
    bounds = [plan.intervals[0][0], *(ub for _, ub in plan.intervals)]
    assert bounds[0] == 0 and bounds[-1] == len(work) and bounds == sorted(bounds)
    assert len(set(plan.node_of_interval)) == target
    n = len(current) - 1
    if target >= n:  # scale-out keeps every node; new ones are numbered n, n+1, …
        assert sorted(plan.node_of_interval) == list(range(target))
    else:
        assert set(plan.node_of_interval) <= set(range(n))
    load = np.bincount(node_of_task(bounds, plan.node_of_interval), weights=work)
    assert load.max() <= (1 + tau) * sum(work) / target * (1 + 1e-9)
    assert plan.max_load_ratio == pytest.approx(load.max() / (sum(work) / target))


def test_table3_first_step() -> None:
    # Ding et al. Table 3: 20 unit tasks on 13/7, one node added, τ = 0.4 → at most 9 a node
    inst = MigrationInstance([1.0] * 20, [1.0] * 20, [(0, 13), (13, 20)], 3, 0.4)
    plan = ssm.plan(inst)
    assert plan.cost == 4.0
    assert all(ub - lb <= 9 for lb, ub in plan.intervals)


def test_no_change_when_nothing_needs_to_move() -> None:
    # same node count, already balanced: the current intervals on their own nodes, cost 0
    inst = MigrationInstance([2.0, 1.0, 3.0], [5.0] * 3, [(0, 2), (2, 3)], 2, 0.0)
    plan = ssm.plan(inst)
    assert plan.cost == 0.0 and plan.intervals == ((0, 2), (2, 3))
    assert plan.node_of_interval == (0, 1)


def test_heavy_state_stays_put() -> None:
    # task 1 holds almost all state; whatever the split, its node keeps it
    inst = MigrationInstance([1.0] * 4, [1.0, 100.0, 1.0, 1.0], [(0, 4)], 2, 0.0)
    plan = ssm.plan(inst)
    assert plan.cost == 2.0  # two unit tasks go to the new node
    assert plan.node_of_interval[plan.intervals.index((0, 2))] == 0


def test_scale_in_removes_the_cheapest_node() -> None:
    # three nodes → two; the node with the least state is the one emptied
    inst = MigrationInstance([1.0] * 6, [3.0, 3.0, 1.0, 1.0, 3.0, 3.0],
                             [(0, 2), (2, 4), (4, 6)], 2, 0.0)
    plan = ssm.plan(inst)
    assert plan.cost == 2.0 and 1 not in plan.node_of_interval


@pytest.mark.parametrize(("work", "target", "tau", "needle"), [
    ([1.0, 5.0, 1.0], 3, 0.5, "task 1 alone has work 5"),
    ([1.0, 1.0, 1.0], 2, 0.0, "need at least 3 intervals"),
])
def test_infeasible_says_why(work: list[float], target: int, tau: float, needle: str) -> None:
    inst = MigrationInstance(work, [1.0] * len(work), [(0, len(work))], target, tau)
    plan = ssm.plan(inst)
    assert plan.status is PlanStatus.INFEASIBLE and needle in plan.reason
    assert plan.intervals == () and math.isinf(plan.cost)


def test_large_instance_is_feasible_and_no_worse_than_keeping_aligned_cuts() -> None:
    rng = np.random.default_rng(3)
    m, n, target, tau = 300, 9, 12, 0.2
    work, state = rng.uniform(0.5, 1.5, m), rng.uniform(0, 2, m)
    cuts = np.linspace(0, m, n + 1).astype(int)
    inst = MigrationInstance(work, state, list(itertools.pairwise(cuts)),
                             target, tau)
    plan = ssm.plan(inst)
    assert plan.status is PlanStatus.OPTIMAL and plan.meets_tau
    assert 0 < plan.cost < state.sum() / 2
