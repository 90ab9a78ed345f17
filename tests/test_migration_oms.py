"""``oms`` (Ding et al. §5.1) against brute force over every sequence of partitionings."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples
from tests.test_migration_oracles import brute_sequence, instances, intervals

from elastream.algorithms.migration import oms, ssm
from elastream.algorithms.migration.intervals import MigrationInstance
from elastream.algorithms.migration.oms import OmsOptions, plan_sequence
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus


@settings(max_examples=examples(60), deadline=None, derandomize=True, database=None)
@given(instances(max_tasks=5, max_nodes=3), st.lists(st.integers(1, 3), min_size=1,
                                                     max_size=2))
def test_total_equals_brute_force(case: tuple, then: list[int]) -> None:
    work, state, current, target, tau = case
    inst = MigrationInstance(np.array(work), np.array(state), intervals(current), target, tau)
    seq = plan_sequence(inst, then)
    expected = brute_sequence(work, state, current, [target, *then], tau)
    if math.isinf(expected):
        assert seq.status is PlanStatus.INFEASIBLE and seq.steps == ()
        assert "migration" in seq.reason
        return
    assert seq.status is PlanStatus.OPTIMAL
    assert seq.total_cost == pytest.approx(expected)
    # the steps chain: each starts from the intervals the one before left
    assert len(seq.steps) == 1 + len(then)
    for step, count in zip(seq.steps, [target, *then], strict=True):
        assert len(step.intervals) == count and step.meets_tau
    # never worse than repeating single-step migration
    single, at = 0.0, inst
    for count in [target, *then]:
        p = ssm.plan(at.retargeted(count))
        single += p.cost
        at = at.retargeted(count, intervals=p.intervals)
    assert seq.total_cost <= single + 1e-9


def test_table3_sequence_costs_less_than_the_papers() -> None:
    # Ding et al. Table 3 (τ = 0.4): the paper's single-step 4 + 6 and alternative 5 + 4;
    # the optimum is 6 (4 to add N3, then 2 to add N4 by moving the ends of two intervals)
    inst = MigrationInstance(np.ones(20), np.ones(20), [(0, 13), (13, 20)], 3, 0.4)
    seq = plan_sequence(inst, (4,))
    assert seq.total_cost == 6.0
    first = oms.plan(inst, options=OmsOptions(then=(4,)))
    assert first.details["total_cost"] == 6.0 and first.cost == seq.steps[0].cost


def test_one_step_is_ssm() -> None:
    rng = np.random.default_rng(1)
    for _ in range(5):
        work, state = rng.integers(1, 5, 8).astype(float), rng.integers(0, 5, 8).astype(float)
        inst = MigrationInstance(work, state, [(0, 3), (3, 8)], 3, 0.5)
        assert oms.plan(inst).cost == ssm.plan(inst).cost


def test_infeasible_step_is_named() -> None:
    inst = MigrationInstance(np.array([1.0, 6.0, 1.0]), np.ones(3), [(0, 3)], 2, 0.0)
    seq = plan_sequence(inst, (1,))
    assert seq.status is PlanStatus.INFEASIBLE
    assert seq.reason.startswith("migration 1 (to 2 nodes): task 1 alone")
    assert oms.plan(inst, options=OmsOptions(then=(1,))).status is PlanStatus.INFEASIBLE


def test_limits_and_options() -> None:
    inst = MigrationInstance(np.ones(40), np.ones(40), [(0, 40)], 8, 2.0)
    with pytest.raises(OptionError, match="target_nodes make oms enumerate more than 50"):
        plan_sequence(inst, (9,), max_partitions=50)
    with pytest.raises(OptionError, match=r"then\[1\] must be an integer >= 1, got 0"):
        OmsOptions(then=(2, 0))
    with pytest.raises(OptionError, match="taus must give one tau per later migration"):
        OmsOptions(then=(2,), taus=(0.1, 0.2))


def test_per_step_tau_is_used() -> None:
    # a loose first step then a tight second: the tight τ applies to step 2 only
    inst = MigrationInstance(np.ones(6), np.ones(6), [(0, 6)], 2, 2.0)
    seq = plan_sequence(inst, (3,), taus=(0.0,))
    assert seq.total_cost == 4.0  # 4 of the 6 unit tasks end up off the one node
    assert seq.steps[0].max_load_ratio <= 3.0
    assert all(ub - lb == 2 for lb, ub in seq.steps[1].intervals)
    assert list(itertools.accumulate(s.cost for s in seq.steps))[-1] == seq.total_cost
