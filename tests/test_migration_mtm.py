"""PMC (Ding et al. §5.2, Fig. 9) and MTM-aware migration.

On tiny state spaces: value iteration reaches the values policy iteration gets from direct
linear solves, and the MTM-aware policy's expected discounted cost is never above single-step
migration's (the optimal policy of an MDP is no worse than any other — here SSM's — from every
state). The migration costs in these oracles come from brute-force matching, not from the
planners' code.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.test_migration_oracles import best_gain

from elastream.algorithms.migration import mtm, ssm
from elastream.algorithms.migration.intervals import (
    MigrationInstance,
    intervals_of,
)
from elastream.algorithms.migration.mtm import MtmOptions
from elastream.algorithms.migration.partitions import canonical
from elastream.algorithms.migration.pmc import (
    ProjectedCosts,
    StateSpace,
    check_mtm,
    closure_space,
    exhaustive_space,
    precompute_pmc,
)
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

CASES = [(seed, gamma) for seed in range(4) for gamma in (0.0, 0.5, 0.9)]


def tiny(seed: int) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """5 tasks, counts 1–3, a random MTM with some zeros."""
    rng = np.random.default_rng(seed)
    work = rng.integers(1, 4, 5).astype(float)
    state = rng.integers(0, 5, 5).astype(float)
    raw = rng.random((3, 3)) * (rng.random((3, 3)) < 0.7)
    raw[raw.sum(axis=1) == 0, 0] = 1.0
    return work, state, 1.0, raw / raw.sum(axis=1, keepdims=True)


def brute_costs(space: StateSpace, state: np.ndarray) -> np.ndarray:
    total = float(state.sum())
    rows = [[b for b in r.tolist()] for r in space.bounds]
    return np.array([[total - best_gain(state.tolist(), a, b) for b in rows] for a in rows])


def policy_value(space: StateSpace, costs: np.ndarray, matrix: np.ndarray, gamma: float,
                 policy: dict[tuple[int, int], int]) -> np.ndarray:
    """Expected discounted cost of a stationary policy ``(state, next count) → state``."""
    n = len(space)
    chain, reward = np.zeros((n, n)), np.zeros(n)
    for i in range(n):
        for c, p in enumerate(matrix[space.counts[i] - 1], start=1):
            if p > 0:
                j = policy[i, c]
                chain[i, j] += p
                reward[i] += p * costs[i, j]
    return np.linalg.solve(np.eye(n) - gamma * chain, reward)


def policy_iteration(space: StateSpace, costs: np.ndarray, matrix: np.ndarray,
                     gamma: float) -> np.ndarray:
    groups = {c: np.flatnonzero(space.counts == c) for c in np.unique(space.counts).tolist()}
    policy = {(i, c): int(groups[c][0]) for i in range(len(space)) for c in groups}
    while True:
        value = policy_value(space, costs, matrix, gamma, policy)
        better = {(i, c): int(groups[c][np.argmin(costs[i, groups[c]] + gamma
                                                  * value[groups[c]])])
                  for i, c in policy}
        if all(costs[i, better[i, c]] + gamma * value[better[i, c]]
               >= costs[i, policy[i, c]] + gamma * value[policy[i, c]] - 1e-12
               for i, c in policy):
            return value
        policy = better


def ssm_policy(space: StateSpace, work: np.ndarray, state: np.ndarray,
               tau: float) -> dict[tuple[int, int], int]:
    m, policy = work.size, {}
    for i in range(len(space)):
        count = int(space.counts[i])
        current = intervals_of(space.bounds[i][: count + 1])
        for c in np.unique(space.counts).tolist():
            p = ssm.plan(MigrationInstance(work, state, current, c, tau))
            bounds = [p.intervals[0][0], *(ub for _, ub in p.intervals)]
            j = space.index(c, canonical(np.array(bounds), m))
            assert j is not None, "SSM left a closed space"
            policy[i, c] = j
    return policy


@pytest.mark.parametrize(("seed", "gamma"), CASES)
def test_value_iteration_equals_policy_iteration(seed: int, gamma: float) -> None:
    work, state, tau, matrix = tiny(seed)
    space = exhaustive_space(work, tau, [1, 2, 3])
    pmc = precompute_pmc(space, work, state, tau, check_mtm(matrix), gamma)
    assert pmc.converged and pmc.residual <= 1e-9 * max(state.sum(), 1)
    exact = policy_iteration(space, brute_costs(space, state), matrix, gamma)
    assert pmc.values == pytest.approx(exact, abs=1e-6)


@pytest.mark.parametrize(("seed", "gamma"), CASES)
def test_mtm_aware_is_never_worse_than_single_step(seed: int, gamma: float) -> None:
    work, state, tau, matrix = tiny(seed)
    space = exhaustive_space(work, tau, [1, 2, 3])
    pmc = precompute_pmc(space, work, state, tau, check_mtm(matrix), gamma)
    single = policy_value(space, brute_costs(space, state), matrix, gamma,
                          ssm_policy(space, work, state, tau))
    assert np.all(pmc.values <= single + 1e-6)


def test_mtm_aware_strictly_better_somewhere() -> None:
    # the doctest's instance: 2 → 3 → 4 → 2 … nodes; SSM's cheapest first step costs later
    work = np.array([1.0, 3, 1, 2, 2, 2])
    state = np.array([1.0, 1, 4, 4, 4, 3])
    cycle = check_mtm([[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0]])
    space = exhaustive_space(work, 0.5, [2, 3, 4])
    pmc = precompute_pmc(space, work, state, 0.5, cycle, 0.9)
    single = policy_value(space, brute_costs(space, state), cycle, 0.9,
                          ssm_policy(space, work, state, 0.5))
    assert np.all(pmc.values <= single + 1e-6) and np.any(pmc.values < single - 1)


def test_closure_space_is_closed_and_no_worse_than_ssm() -> None:
    rng = np.random.default_rng(7)
    work, state = rng.integers(1, 4, 9).astype(float), rng.integers(0, 5, 9).astype(float)
    matrix = check_mtm([[0, 0, 0, 0], [0, 0, 0.7, 0.3], [0, 0.5, 0, 0.5], [0, 0.2, 0.8, 0]])
    seeds = [(2, np.array([0, 4, 9]))]
    closure = closure_space(work, state, 0.5, matrix, seeds)
    assert closure.closed and not closure.exhaustive
    full = exhaustive_space(work, 0.5, [2, 3, 4])
    assert len(closure) < len(full)
    at = [full.index(int(c), b) for c, b in zip(closure.counts, closure.bounds, strict=True)]
    assert None not in at
    near = precompute_pmc(closure, work, state, 0.5, matrix, 0.8)
    best = precompute_pmc(full, work, state, 0.5, matrix, 0.8)
    # a restricted space can only cost more; but it is closed under SSM, so never more than SSM
    assert np.all(near.values >= best.values[at] - 1e-6)
    single = policy_value(closure, brute_costs(closure, state), matrix, 0.8,
                          ssm_policy(closure, work, state, 0.5))
    assert np.all(near.values <= single + 1e-6)


def test_gamma_zero_is_single_step() -> None:
    rng = np.random.default_rng(2)
    matrix = [[0, 0, 0, 0], [0, 0.2, 0.5, 0.3], [0, 0.4, 0.2, 0.4], [0, 0.5, 0.5, 0]]
    for _ in range(6):
        work, state = rng.integers(1, 5, 8).astype(float), rng.integers(0, 6, 8).astype(float)
        inst = MigrationInstance(work, state, [(0, 4), (4, 8)], 3, 0.6)
        p = mtm.plan(inst, options=MtmOptions(mtm=matrix, gamma=0.0))
        assert p.status is PlanStatus.OPTIMAL
        assert p.cost == ssm.plan(inst).cost


def test_plan_objective_is_no_worse_than_ssms_plan() -> None:
    rng = np.random.default_rng(4)
    matrix = [[0, 0, 0, 0, 0], [0, 0, 0.6, 0.4, 0], [0, 0.3, 0, 0.3, 0.4],
              [0, 0.1, 0.5, 0, 0.4], [0, 0.2, 0.2, 0.6, 0]]
    for _ in range(4):
        work, state = rng.integers(1, 5, 9).astype(float), rng.integers(0, 6, 9).astype(float)
        inst = MigrationInstance(work, state, [(0, 3), (3, 6), (6, 9)], 4, 0.8)
        opts = MtmOptions(mtm=matrix, gamma=0.8)
        projected = mtm.build(inst, opts)
        p = mtm.plan(inst, options=MtmOptions(mtm=matrix, gamma=0.8, projected=projected))
        single = ssm.plan(inst)
        bounds = np.array([single.intervals[0][0], *(ub for _, ub in single.intervals)])
        ssm_objective = single.cost + 0.8 * projected.backup(bounds, 4)[0]
        assert p.details["objective"] <= ssm_objective + 1e-9
        assert p.details["objective"] == pytest.approx(p.cost + 0.8 * p.details[
            "projected_cost"])
        assert p.meets_tau


def test_map_fn_does_the_per_block_work() -> None:
    work, state, tau, matrix = tiny(1)
    space = exhaustive_space(work, tau, [1, 2, 3])
    calls: list[int] = []

    def recording_map(f, blocks):  # type: ignore[no-untyped-def]
        blocks = list(blocks)
        calls.append(len(blocks))
        return [f(b) for b in reversed(blocks)][::-1]

    mapped = precompute_pmc(space, work, state, tau, check_mtm(matrix), 0.7,
                            map_fn=recording_map)
    local = precompute_pmc(space, work, state, tau, check_mtm(matrix), 0.7)
    assert np.array_equal(mapped.values, local.values)
    assert len(calls) == 1 + mapped.iterations  # the costs, then one map per sweep


def test_large_instance_uses_the_ssm_closure() -> None:
    rng = np.random.default_rng(5)
    m = 64
    work, state = rng.uniform(0.5, 1.5, m), rng.uniform(0, 2, m)
    matrix = np.zeros((6, 6))
    matrix[3, [4, 5]] = 0.5
    matrix[4, [3, 5]] = 0.5
    matrix[5, [3, 4]] = 0.5
    cuts = np.linspace(0, m, 5).astype(int)
    inst = MigrationInstance(work, state, intervals_of(cuts), 5, 0.3)
    p = mtm.plan(inst, options=MtmOptions(mtm=matrix, gamma=0.8, max_states=300))
    assert p.status is PlanStatus.FEASIBLE and p.meets_tau
    assert p.details["exhaustive"] == 0.0 and p.details["states"] <= 300


@pytest.mark.parametrize(("matrix", "needle"), [
    ([[0.5, 0.5]], "mtm must be a square list of lists"),
    ([[0.5, 0.5], [-0.1, 1.1]], "mtm[1][0] must be a finite probability >= 0, got -0.1"),
    ([[0.5, 0.4], [0, 1]], "mtm[0] must sum to 1 (or be all zero: never left), got 0.9"),
    ("abc", "mtm must be a square list of lists"),
])
def test_bad_mtm(matrix: object, needle: str) -> None:
    with pytest.raises(OptionError) as error:
        check_mtm(matrix)
    assert needle in str(error.value)


def test_bad_options() -> None:
    with pytest.raises(OptionError, match=r"gamma must be a number in \[0, 1\), got 1.0"):
        MtmOptions(mtm=[[1]], gamma=1.0)
    inst = MigrationInstance(np.ones(4), np.ones(4), [(0, 2), (2, 4)], 3, 0.5)
    with pytest.raises(OptionError, match="mtm must be at least n' x n' = 3 x 3"):
        mtm.plan(inst, options=MtmOptions(mtm=[[0, 1], [1, 0]]))
    with pytest.raises(OptionError, match="mtm is required"):
        mtm.plan(inst)
    good = MtmOptions(mtm=[[0, 0, 0], [0, 0, 1], [0, 1, 0]])
    other: ProjectedCosts = mtm.build(inst.retargeted(3, tau=1.0), good)
    with pytest.raises(OptionError, match="projected must be computed for this instance"):
        mtm.plan(inst, options=MtmOptions(mtm=good.mtm, projected=other))
