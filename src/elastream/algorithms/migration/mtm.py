"""``mtm``: optimal MTM-aware migration (Ding et al., §5.2, Definition 5.4).

Choose the target partitioning ``P′`` for ``n′`` nodes, meeting τ, that minimises

    cost(current, P′) + γ · C[P′]

where ``C`` is the projected migration cost of :mod:`.pmc` (the expected discounted cost of the
migrations that follow, under the migration transition matrix), then give its intervals to
nodes by the cheapest matching (:mod:`.matching`). With ``γ = 0`` this is single-step migration
("as an extreme case, when γ = 0, MTM-aware migration reduces to single-step migration",
§6); we weight ``C`` by γ so that this holds (Definition 5.4's sum, read with Definition 5.2's
weights ``γ^{i−1}`` over the whole sequence, the current migration first).

The candidates are the states for ``n′`` nodes of the PMC state space plus SSM's own plan; a
candidate outside the space is valued one Bellman step through it
(:meth:`.pmc.ProjectedCosts.backup`). The PMC is computed once and reused
(``MtmOptions.projected``, e.g. for every migration of a run), or built here: the exhaustive
space of every partitioning when there are at most ``max_states`` of them, else the SSM closure
seeded with SSM's plans from the current intervals to ``n′`` and to every count the MTM reaches.

Status: ``optimal`` when the space is exhaustive and the iteration converged (the MDP optimum of
Definition 5.4); ``feasible`` over a restricted space (still never worse than SSM over a closed
one, see :mod:`.pmc`); ``infeasible`` when no partitioning meets τ. Time: as :mod:`.pmc` when
building it, then one SSM run and O(N_n′·(n + n′)) matchings.

Parameters (:class:`MtmOptions`): ``mtm`` (required; square, row and column ``i`` = ``i + 1``
nodes, rows summing to 1 or all zero, at least ``n′ × n′``), ``gamma`` (default 0.8, the paper's,
in ``[0, 1)``), ``projected`` (default none: build it), ``max_states`` (default 2000),
``map_fn`` (default builtins ``map``: the executor of PMC's per-state work).

>>> from elastream.algorithms.migration.intervals import MigrationInstance
>>> inst = MigrationInstance([1.0, 3, 1, 2, 2, 2], [1.0, 1, 4, 4, 4, 3], [(0, 3), (3, 6)],
...                          target_nodes=3, tau=0.5)
>>> cycle = [[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0]]  # 2 → 3 → 4 → 2 → …
>>> p = plan(inst, options=MtmOptions(mtm=cycle, gamma=0.9))
>>> p.status.value, p.cost, p.details["ssm_cost"]   # pays 6 now, SSM 3, for cheaper futures
('optimal', 6.0, 3.0)
>>> p.intervals
((0, 2), (2, 4), (4, 6))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from elastream.algorithms.migration import ssm
from elastream.algorithms.migration.intervals import (
    F64,
    I64,
    MigrationInstance,
    MigrationPlan,
    assemble,
    no_plan,
)
from elastream.algorithms.migration.matching import assign_nodes, match, pair_gains
from elastream.algorithms.migration.partitions import canonical
from elastream.algorithms.migration.pmc import (
    DEFAULT_LIMIT,
    MapFn,
    ProjectedCosts,
    StateSpace,
    check_mtm,
    closure_space,
    exhaustive_space,
    precompute_pmc,
    reachable,
)
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

NAME: Final = "mtm"
DEFAULT_GAMMA: Final = 0.8


@dataclass(frozen=True, eq=False)
class MtmOptions:
    """Parameters of :func:`plan` (module docstring)."""

    mtm: object
    gamma: float = DEFAULT_GAMMA
    projected: ProjectedCosts | None = None
    max_states: int = DEFAULT_LIMIT
    map_fn: MapFn = map

    def __post_init__(self) -> None:
        object.__setattr__(self, "mtm", check_mtm(self.mtm))
        object.__setattr__(self, "gamma", rules.number("gamma", self.gamma, below=1))
        rules.integer("max_states", self.max_states)

    @property
    def matrix(self) -> F64:
        """The validated MTM."""
        matrix: F64 = self.mtm  # type: ignore[assignment]
        return matrix


def plan(instance: MigrationInstance, *, options: MtmOptions | None = None) -> MigrationPlan:
    """The MTM-aware plan (module docstring); never returns nothing."""
    if options is None:
        raise OptionError("mtm", "is required for the mtm planner", None)
    matrix = options.matrix
    target = instance.target_nodes
    if matrix.shape[0] < target:
        raise OptionError("mtm", f"must be at least n' x n' = {target} x {target}",
                          list(matrix.shape))
    single = ssm.plan(instance)
    if single.status is PlanStatus.INFEASIBLE:
        return no_plan(NAME, single.reason)
    projected = options.projected
    if projected is None:
        projected = build(instance, options)
    else:
        _check_matches(projected, instance, options)
    space = projected.space
    m = instance.m
    ssm_bounds = canonical(_bounds(single), m, space.bounds.shape[1])
    rows = np.flatnonzero(space.counts == target)
    candidates = space.bounds[rows]
    values = projected.values[rows]
    if space.index(target, ssm_bounds) is None:
        candidates = np.vstack([candidates, ssm_bounds])
        values = np.r_[values, projected.backup(ssm_bounds, target)]
    prefix = np.r_[0.0, np.cumsum(instance.state)]
    current = canonical(instance.bounds, m)
    costs = prefix[-1] - pair_gains(np.broadcast_to(current, (len(candidates), current.size)),
                                    candidates, prefix)
    objective = costs + projected.gamma * values
    best = int(np.lexsort((costs, objective))[0])  # least objective, then least cost now
    bounds = candidates[best][: target + 1]
    _, pairs = match(instance.bounds, bounds, prefix)
    exact = space.exhaustive and projected.converged
    return assemble(
        instance, NAME, bounds=bounds, nodes=assign_nodes(instance.n, target, pairs),
        status=PlanStatus.OPTIMAL if exact else PlanStatus.FEASIBLE,
        details={"objective": float(objective[best]), "projected_cost": float(values[best]),
                 "ssm_cost": single.cost, "gamma": projected.gamma,
                 "states": float(len(space)), "exhaustive": float(space.exhaustive),
                 "closed": float(space.closed), "pmc_iterations": float(projected.iterations),
                 "pmc_residual": projected.residual})


def build(instance: MigrationInstance, options: MtmOptions) -> ProjectedCosts:
    """PMC for this instance: exhaustive space if small enough, else the SSM closure."""
    matrix, target = options.matrix, instance.target_nodes
    counts = sorted({target, *reachable(matrix, target)})
    space: StateSpace
    try:
        space = exhaustive_space(instance.work, instance.tau, counts, limit=options.max_states)
    except OptionError as error:
        if error.option != "limit":
            raise
        prefix = np.r_[0.0, np.cumsum(instance.state)]
        seeds = []
        for c in counts:
            found = ssm.solve(instance.work, prefix, instance.bounds, c,
                              (1 + instance.tau) * instance.total_work / c)
            if found is None:
                raise OptionError("mtm", f"reaches {c} nodes, where no partitioning meets tau "
                                  f"= {instance.tau:g}", c) from None
            seeds.append((c, found.bounds))
        space = closure_space(instance.work, instance.state, instance.tau, matrix, seeds,
                              limit=options.max_states)
    return precompute_pmc(space, instance.work, instance.state, instance.tau, matrix,
                          options.gamma, map_fn=options.map_fn)


def _check_matches(projected: ProjectedCosts, instance: MigrationInstance,
                   options: MtmOptions) -> None:
    same = (np.array_equal(projected.work, instance.work)
            and np.array_equal(projected.state, instance.state)
            and projected.tau == instance.tau and np.array_equal(projected.mtm, options.matrix)
            and projected.gamma == options.gamma)
    if not same:
        raise OptionError("projected", "must be computed for this instance's work, state, tau "
                          "and the options' mtm and gamma", "a different PMC")


def _bounds(p: MigrationPlan) -> I64:
    return np.array([p.intervals[0][0], *(ub for _, ub in p.intervals)], dtype=np.int64)
