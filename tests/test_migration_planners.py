"""Every registered migration planner: the same checks, plus the baselines' own rules.

Conformance: the plan's intervals cover the tasks in order; contiguous planners give one interval
per target node on distinct nodes, the scattering ones (ch, redist) runs of tasks; node ids are
current nodes or new ids numbered from n; the reported cost and load ratio are what the plan
does; planners that guarantee τ meet it whenever SSM finds the instance feasible; a baseline's
``meets_tau`` and status agree with its load ratio; a plan repeats exactly; a setting the
planner does not take is refused. Then instance validation.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.algorithms.migration import ch, redist, ssm, storm
from elastream.algorithms.migration.intervals import (
    MigrationInstance,
    intervals_of,
    node_of_task,
)
from elastream.algorithms.migration.registry import PLANNERS, run
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

MTM4 = [[0, 0, 0, 0], [0, 0.2, 0.5, 0.3], [0, 0.4, 0.2, 0.4], [0, 0.5, 0.5, 0]]


def settings_for(name: str) -> dict[str, object]:
    return {"mtm": {"mtm": MTM4, "gamma": 0.5}, "oms": {"then": (2,)}}.get(name, {})


@st.composite
def cases(draw: st.DrawFn) -> MigrationInstance:
    m = draw(st.integers(1, 9))
    work = draw(st.lists(st.integers(0, 5), min_size=m, max_size=m).filter(lambda w: sum(w)))
    state = draw(st.lists(st.integers(0, 5), min_size=m, max_size=m))
    n = draw(st.integers(1, 4))
    cuts = sorted(draw(st.lists(st.integers(0, m), min_size=n - 1, max_size=n - 1)))
    return MigrationInstance(np.array(work, float), np.array(state, float),
                             intervals_of([0, *cuts, m]), draw(st.integers(2, 4)),
                             draw(st.sampled_from([0.0, 0.3, 1.0, 2.0])))


@pytest.mark.parametrize("name", list(PLANNERS))
@settings(max_examples=examples(40), deadline=None, derandomize=True, database=None)
@given(inst=cases())
def test_conformance(name: str, inst: MigrationInstance) -> None:
    try:
        plan = run(name, inst, **settings_for(name))
    except OptionError as error:  # mtm/oms: a future count where nothing meets τ
        assert name in ("mtm", "oms") and "no partitioning meets tau" in str(error)
        count = int(str(error).split("reaches ")[1].split()[0])
        assert ssm.plan(inst.retargeted(count)).status is PlanStatus.INFEASIBLE
        return
    assert plan.algo == name and plan.solve_seconds == 0.0  # the caller times
    assert isinstance(plan.status, PlanStatus)
    assert run(name, inst, **settings_for(name)) == plan  # deterministic
    feasible = ssm.plan(inst).status is not PlanStatus.INFEASIBLE
    if not plan.intervals:  # no plan: only when nothing meets τ
        assert PLANNERS[name].guarantees_tau and not feasible
        assert plan.status is PlanStatus.INFEASIBLE and plan.reason
        return
    bounds = [plan.intervals[0][0], *(ub for _, ub in plan.intervals)]
    assert bounds[0] == 0 and bounds[-1] == inst.m and bounds == sorted(bounds)
    assert all(a == b for (_, a), (b, _) in itertools.pairwise(plan.intervals))
    nodes = plan.node_of_interval
    used = sorted(set(nodes))
    assert len(used) <= inst.target_nodes
    new = [v for v in used if v >= inst.n]
    assert new == list(range(inst.n, inst.n + len(new)))
    if name in ("ssm", "oms", "mtm", "storm"):
        assert len(plan.intervals) == inst.target_nodes and len(used) == inst.target_nodes
    assignment = node_of_task(bounds, nodes)
    moved = inst.state[assignment != inst.node_of_task].sum()
    assert plan.cost == pytest.approx(moved)
    load = np.bincount(assignment, weights=inst.work)
    assert plan.max_load_ratio == pytest.approx(load.max() / (inst.work.sum()
                                                             / inst.target_nodes))
    assert plan.meets_tau == (load.max() <= inst.capacity * (1 + 1e-9))
    assert (plan.status is PlanStatus.INFEASIBLE) == (not plan.meets_tau)
    if PLANNERS[name].guarantees_tau:
        assert feasible and plan.meets_tau
        assert plan.cost >= ssm.plan(inst).cost - 1e-9  # SSM is the single-step optimum


def test_storm_is_equal_ranges_on_nodes_by_position() -> None:
    inst = MigrationInstance(np.ones(10), np.ones(10), [(0, 5), (5, 10)], 4, 5.0)
    p = storm.plan(inst)
    assert p.intervals == ((0, 2), (2, 5), (5, 7), (7, 10)) and p.node_of_interval == (0, 1, 2, 3)
    assert p.cost == 8.0 and p.details["cost_best_matching"] == 4.0
    # skewed work breaks τ: storm keeps its plan and says so
    skew = MigrationInstance(np.array([9.0, 1, 1, 1]), np.ones(4), [(0, 4)], 2, 0.2)
    bad = storm.plan(skew)
    assert bad.status is PlanStatus.INFEASIBLE and bad.intervals == ((0, 2), (2, 4))
    assert "max_load_ratio 1.667 exceeds 1 + tau = 1.2" in bad.reason


def test_ch_moves_only_to_the_new_node_and_back() -> None:
    m = 200
    for seed in range(3):
        a = ch.assignment(m, 5, seed=seed)
        b = ch.assignment(m, 6, seed=seed)
        assert np.all((a == b) | (b == 5))  # adding node 5 moves tasks to it only
        assert 0 < (b == 5).sum() < m / 2
        assert set(np.unique(a).tolist()) == set(range(5))
    inst = MigrationInstance(np.ones(m), np.ones(m), intervals_of([0, 100, m]), 3, 1.0)
    assert ch.plan(inst, options=ch.ChOptions(seed=1)).cost \
        != ch.plan(inst, options=ch.ChOptions(seed=2)).cost
    with pytest.raises(OptionError, match="seed must be an integer >= 0"):
        ch.ChOptions(seed=-1)


def test_redist_counts_tasks_unless_told_to_count_state() -> None:
    # one current node; the heavy-state task 0 should stay when state counts
    inst = MigrationInstance(np.ones(4), np.array([50.0, 1, 1, 1]), [(0, 4)], 2, 0.0)
    by_state = redist.plan(inst, options=redist.RedistOptions(unit_state=False))
    assert by_state.cost == 2.0 and by_state.meets_tau
    by_tasks = redist.plan(inst)
    assert by_tasks.meets_tau and by_tasks.cost in (2.0, 51.0)


def test_no_move_when_already_fine() -> None:
    inst = MigrationInstance(np.ones(6), np.ones(6), [(0, 2), (2, 4), (4, 6)], 3, 0.0)
    for name in ("ssm", "storm", "redist"):
        assert run(name, inst).cost == 0.0


def test_registry_rejects_unknown_names() -> None:
    inst = MigrationInstance(np.ones(4), np.ones(4), [(0, 4)], 2, 0.0)
    with pytest.raises(OptionError, match="algo must be one of ssm, oms, mtm, ch, storm"):
        run("flux", inst)


@pytest.mark.parametrize("name", list(PLANNERS))
def test_an_unknown_setting_is_refused(name: str) -> None:
    inst = MigrationInstance(np.ones(4), np.ones(4), [(0, 4)], 2, 0.0)
    with pytest.raises(OptionError) as error:
        run(name, inst, **settings_for(name), gama=0.5)  # misspelt
    assert error.value.option == "gama" and error.value.value == 0.5
    assert f"is not a setting of planner {name!r} (it takes" in error.value.rule


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"work": [1, -1]}, "work[1] must be a finite number >= 0, got -1.0"),
    ({"work": [0, 0]}, "work must have a positive sum, got 0.0"),
    ({"work": []}, "work must be a non-empty list of numbers"),
    ({"state": [1]}, "state must hold one number per task (m=2), got 1"),
    ({"state": [1, float("nan")]}, "state[1] must be a finite number >= 0, got nan"),
    ({"intervals": [(0, 1), (2, 2)]}, "intervals[1] must start where intervals[0] ends (1)"),
    ({"intervals": [(1, 2)]}, "intervals[0] must start at 0, got [1, 2]"),
    ({"intervals": [(0, 1)]}, "intervals[0] must end at the number of tasks (m=2), got [0, 1]"),
    ({"intervals": [(0, 2, 3)]}, "intervals[0] must be a pair [lb, ub] of integers"),
    ({"intervals": [(0, 1.5), (1.5, 2)]}, "intervals[0] must be a pair [lb, ub] of integers"),
    ({"intervals": []}, "intervals must be a non-empty list of [lb, ub] pairs"),
    ({"target_nodes": 0}, "target_nodes must be an integer >= 1, got 0"),
    ({"target_nodes": True}, "target_nodes must be an integer >= 1, got True"),
    ({"tau": -0.1}, "tau must be a finite number >= 0, got -0.1"),
    ({"tau": "x"}, "tau must be a finite number >= 0, got 'x'"),
])
def test_instance_validation(kwargs: dict[str, object], needle: str) -> None:
    base: dict[str, object] = {"work": [1, 1], "state": [1, 1], "intervals": [(0, 2)],
                               "target_nodes": 2, "tau": 0.0}
    with pytest.raises(OptionError) as error:
        MigrationInstance(**{**base, **kwargs})  # type: ignore[arg-type]
    assert needle in str(error.value)
