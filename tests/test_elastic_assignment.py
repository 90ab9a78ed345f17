"""Algorithm 1 of Elasticutor §4.2 against brute force on tiny clusters, and its stated choices."""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np
import pytest

from elastream.algorithms.elastic.assignment import (
    IDLE,
    _cheapest,
    assign_cores,
    migration_cost,
    step_cost,
)
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus


@cache
def node_splits(cores: int, executors: int) -> tuple[tuple[int, ...], ...]:
    """Every way to give at most ``cores`` cores of one node to the executors."""
    return tuple(t for t in itertools.product(range(cores + 1), repeat=executors)
                 if sum(t) <= cores)


def brute_force(k: list[int], c: list[int], x0: np.ndarray, s: list[float], home: list[int],
                intensive: list[bool]) -> float:
    """Least C(X | X̃) over every X meeting (a), (b) and (c) of problem (2)."""
    best = math.inf
    for columns in itertools.product(*(node_splits(ci, len(k)) for ci in c)):
        x = np.array(columns).T
        if np.any(x.sum(axis=1) < k):
            continue
        if any(intensive[j] and x[j].sum() != x[j, home[j]] for j in range(len(k))):
            continue
        best = min(best, migration_cost(x0, x, s, home))
    return best


def random_instance(rng: np.random.Generator) -> dict[str, object]:
    n, m = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    c = [int(v) for v in rng.integers(1, 4, n)]
    x0 = np.zeros((m, n), np.int64)
    for i in range(n):  # a random current assignment within the nodes' cores
        for _ in range(int(rng.integers(0, c[i] + 1))):
            x0[int(rng.integers(0, m)), i] += 1
    k = [int(v) for v in rng.integers(0, 4, m)]
    while sum(k) > sum(c):
        k[int(np.argmax(k))] -= 1
    return {"demand": k, "node_cores": c, "current": x0.tolist(),
            "state": [float(v) for v in rng.integers(1, 10, m) * 1e6],
            "intensity": [float(v) for v in rng.choice([1e5, 8e5, 3e6], m)],
            "home": [int(v) for v in rng.integers(0, n, m)]}


def test_against_brute_force_on_tiny_clusters() -> None:
    rng = np.random.default_rng(2)
    equal = moved = 0
    worst = 1.0
    for _ in range(300):
        inst = random_instance(rng)
        got = assign_cores(**inst)  # type: ignore[arg-type]
        k = inst["demand"]
        x = np.array(got.assignment)
        per_core = np.array(inst["intensity"]) / np.maximum(k, 1)  # type: ignore[call-overload]
        intensive = list(per_core > got.phi)
        assert got.status in (PlanStatus.OPTIMAL, PlanStatus.FEASIBLE)
        assert np.all(x.sum(axis=1) >= k)
        assert np.all(x.sum(axis=0) <= inst["node_cores"])
        home = inst["home"]
        assert all(not intensive[j] or x[j].sum() == x[j, home[j]]  # type: ignore[index]
                   for j in range(len(k)))  # type: ignore[arg-type]
        best = brute_force(k, inst["node_cores"], np.array(inst["current"]),  # type: ignore[arg-type]
                           inst["state"], home, intensive)  # type: ignore[arg-type]
        assert got.migration_cost >= best - 1e-6
        equal += got.migration_cost <= best + 1e-6
        if best > 0:
            moved += 1
            worst = max(worst, got.migration_cost / best)
    # Algorithm 1 is a heuristic: it matches the optimum on most tiny instances.
    print(f"algorithm 1 = brute force on {equal}/300, {moved} with state to move, "
          f"worst ratio {worst:.3f}")
    assert equal >= 255, (equal, moved, worst)  # 262 with this seed


def test_step_costs_are_the_papers_formulas() -> None:
    x = np.array([[3, 1, 0], [0, 0, 2]])
    s = 12.0
    # C⁺_ij = s(X_j − x_ij)/(X_j(X_j + 1)), C⁻_ij = s(X_j − x_ij)/(X_j(X_j − 1)), X_0 = 4.
    assert step_cost(x, 0, 0, +1, s, 0) == pytest.approx(s * 1 / 20)
    assert step_cost(x, 0, 2, +1, s, 0) == pytest.approx(s * 4 / 20)
    assert step_cost(x, 0, 1, -1, s, 0) == pytest.approx(s * 3 / 12)
    # They are the exact change of C(X | X̃) for one core.
    for j, node, delta in [(0, 0, 1), (0, 2, 1), (0, 1, -1), (1, 2, -1), (1, 0, 1)]:
        after = x.copy()
        after[j, node] += delta
        assert step_cost(x, j, node, delta, s, 0) == pytest.approx(
            migration_cost(x[j:j + 1], after[j:j + 1], [s], [0]))
    # No cores: state sits at home; a first or last core elsewhere moves all of it.
    none = np.array([[0, 0]])
    assert step_cost(none, 0, 0, +1, s, 0) == 0.0 and step_cost(none, 0, 1, +1, s, 0) == s
    one = np.array([[0, 1]])
    assert step_cost(one, 0, 1, -1, s, 0) == s


def cheapest_by_step_cost(x: np.ndarray, k: np.ndarray, free: np.ndarray, s: np.ndarray,
                          home: np.ndarray, j: int, nodes: list[int], cost_aware: bool
                          ) -> tuple[tuple[int, int] | None, int]:
    """Lines 7 and 9 one candidate at a time: the least (C⁻ + C⁺, idle first, node, donor),
    and how many candidates share its cost (ties the order decided)."""
    keys = []
    for i in nodes:
        gain = step_cost(x, j, i, +1, float(s[j]), int(home[j])) if cost_aware else 0.0
        offers = [(0.0, 0, IDLE)] if free[i] > 0 else []
        offers += [(step_cost(x, d, i, -1, float(s[d]), int(home[d])) if cost_aware else 0.0,
                    1, d) for d in range(len(k)) if d != j and x[d].sum() > k[d] and x[d, i] > 0]
        keys += [(cost + gain, kind, i, donor) for cost, kind, donor in offers]
    if not keys:
        return None, 0
    best = min(keys)
    return (best[2], best[3]), sum(key[0] == best[0] for key in keys)


def test_vectorised_choice_is_the_scalar_one_ties_included() -> None:
    # Algorithm 1 picks each core from every (node, donor) at once with numpy; the pick must
    # be the one step_cost's scalar formulas and the stated tie order give, to the last bit of
    # the cost sums: equal states, idle cores and donors with C⁻ = 0 make many exact ties.
    rng = np.random.default_rng(3)
    ties = 0
    for _ in range(1500):
        m, n = int(rng.integers(1, 9)), int(rng.integers(1, 7))
        x = rng.integers(0, 4, (m, n)) * (rng.random((m, n)) < 0.6)
        k = rng.integers(0, 6, m)
        free = rng.integers(0, 2, n)
        s = rng.choice([1e6, 3e6, 0.0, 7.0], m) if rng.random() < 0.5 else np.full(m, 1e6)
        home = rng.integers(0, n, m)
        j = int(rng.integers(0, m))
        cost_aware = bool(rng.random() < 0.8)
        nodes = slice(int(home[j]), int(home[j]) + 1) if rng.random() < 0.3 else slice(None)
        got = _cheapest(x, x.sum(axis=1), k, free, s, home, j, nodes, cost_aware)
        want, tied = cheapest_by_step_cost(x, k, free, s, home, j, list(range(n))[nodes],
                                           cost_aware)
        assert got == want, (x.tolist(), k.tolist(), free.tolist(), s.tolist(), home, j)
        ties += tied > 1
    assert ties >= 300, ties  # the tie order decided often: the check is not vacuous


def test_data_intensive_executors_go_first() -> None:
    # One idle core on node 0, the home of both under-provisioned executors. The text's order
    # (descending intensity) gives it to the data-intensive one, which cannot take cores
    # elsewhere; the pseudo-code's "non-descending" order would force φ to double.
    got = assign_cores([1, 1], [1, 1], [[0, 0], [0, 0]], state=[1e6, 1e6],
                       intensity=[1e5, 4e6], home=[0, 0])
    assert got.assignment == ((0, 1), (1, 0))
    assert got.phi == 512_000.0


def test_over_provisioned_data_intensive_executors_donate_at_home() -> None:
    # Executor 1 is data-intensive and has a spare core on node 0; executor 0 (intensive, home
    # 0) takes it rather than φ doubling.
    got = assign_cores([1, 1], [2, 1], [[0, 0], [2, 1]], state=[1e6, 1e6],
                       intensity=[4e6, 4e6], home=[0, 1])
    assert got.phi == 512_000.0
    assert got.assignment[0] == (1, 0)


def test_intensive_executors_give_up_remote_cores() -> None:
    got = assign_cores([2], [2, 2], [[1, 1]], state=[4e6], intensity=[4e6], home=[0])
    assert got.assignment == ((2, 0),) and got.migration_cost == pytest.approx(2e6)


def test_phi_doubles_until_a_plan_exists() -> None:
    # 3 cores needed at home, 2 there: locality must go. Per-core intensity 3e6/3 = 1e6 B/s,
    # above 512 KB/s and 1.024e6 is the first doubling above it.
    got = assign_cores([3], [2, 2], None, state=[1e6], intensity=[3e6], home=[0])
    assert got.phi == 1_024_000.0
    assert got.assignment == ((2, 1),) and got.status is PlanStatus.FEASIBLE


def test_idle_cores_come_before_taking_from_others() -> None:
    got = assign_cores([1, 1], [2], [[0], [2]], state=[1.0, 1.0], intensity=[0.0, 0.0],
                       home=[0, 0])
    assert got.assignment == ((1,), (1,))  # free? none: node 0 is full, so 1 donates
    got = assign_cores([1, 1], [3], [[0], [2]], state=[1.0, 1.0], intensity=[0.0, 0.0],
                       home=[0, 0])
    assert got.assignment == ((1,), (2,)) and got.status is PlanStatus.OPTIMAL


def test_nothing_to_do_is_optimal() -> None:
    got = assign_cores([2, 1], [2, 2], [[2, 0], [0, 2]], state=[5.0, 5.0],
                       intensity=[0.0, 0.0], home=[0, 1])
    assert got.status is PlanStatus.OPTIMAL and got.migration_cost == 0.0
    assert got.assignment == ((2, 0), (0, 2))


def test_more_demand_than_cores_is_infeasible() -> None:
    got = assign_cores([3, 3], [2, 2], None, state=[1.0, 1.0], intensity=[0.0, 0.0],
                       home=[0, 1])
    assert got.status is PlanStatus.INFEASIBLE
    assert sum(got.cores) == 4


def test_naive_scheduler_ignores_cost_and_locality() -> None:
    inst = {"state": [8e6, 4e6], "intensity": [1e6, 1e6], "home": [0, 1]}
    naive = assign_cores([2, 2], [4, 4], [[0, 0], [0, 0]], phi=math.inf, cost_aware=False,
                         **inst)  # type: ignore[arg-type]
    assert naive.assignment == ((2, 0), (2, 0))  # first idle cores, node 0 first
    aware = assign_cores([2, 2], [4, 4], [[0, 0], [0, 0]], **inst)  # type: ignore[arg-type]
    assert aware.assignment == ((2, 0), (0, 2))


@pytest.mark.parametrize(("change", "name"), [
    ({"demand": [1, -1]}, "demand[1]"),
    ({"node_cores": []}, "node_cores"),
    ({"current": [[1, 0]]}, "current"),
    ({"current": [[3, 0], [0, 0]]}, "current"),
    ({"current": [[1], [0, 0]]}, "current[0]"),
    ({"state": [1.0]}, "state"),
    ({"intensity": [1.0, math.nan]}, "intensity[1]"),
    ({"home": [0, 2]}, "home[1]"),
    ({"phi": 0.0}, "phi"),
])
def test_bad_inputs_name_the_argument(change: dict[str, object], name: str) -> None:
    args: dict[str, object] = {"demand": [1, 1], "node_cores": [2, 2], "current": None,
                               "state": [1.0, 1.0], "intensity": [0.0, 0.0], "home": [0, 1],
                               **change}
    with pytest.raises(OptionError) as error:
        assign_cores(**args)  # type: ignore[arg-type]
    assert error.value.option == name
