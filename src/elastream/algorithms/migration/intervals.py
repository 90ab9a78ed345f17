"""Tasks, task intervals, migration instances and plans (Ding et al., §4.1).

An operator's input is split by its partitioning function into ``m`` *tasks* ``0 … m−1``; task
``j`` brings ``work[j]`` (tuples per unit of time, any unit) and holds ``state[j]`` (bytes, rows
or counters: the unit of the migration cost). Each of the ``n`` current nodes processes one
*task interval* ``[lb, ub)`` (half-open; intervals are given in task order, disjoint and
covering ``0 … m``; an empty one ``lb == ub`` is an idle node). Current node ``i`` is the one
holding ``intervals[i]``.

A migration to ``n′ = target_nodes`` nodes (Definition 4.1) chooses new task intervals and the
node of each. Node ids in a plan: ``0 … n−1`` are the current nodes, ids ``≥ n`` are new nodes
(numbered ``n, n+1, …`` in the order of their intervals); a current node that holds no interval
afterwards is removed. *Load balancing* with threshold ``τ ≥ 0``: every node's work
``W_i ≤ (1+τ)·W/n′`` (``W`` the total work), checked with a relative tolerance of
``LOAD_RTOL`` = 1e-9. The *migration cost* is the total state of the tasks whose node changes —
"the total size of operator states transmitted between nodes" (§4.1) — so it is
``Σ state − gain``, the gain being the state that stays where it is.

A plan lists its intervals in task order. Planners that keep intervals contiguous (ssm, oms, mtm,
storm) give one interval per target node, so ``len(intervals) == n′`` with empty intervals
``[x, x)`` for idle nodes; baselines that scatter tasks (ch, redist) give the maximal runs of
tasks on one node, so a node may appear several times in ``node_of_interval``.

>>> inst = MigrationInstance(work=[1, 1, 1, 1], state=[2, 2, 2, 2],
...                          intervals=[(0, 2), (2, 4)], target_nodes=4, tau=0.0)
>>> inst.capacity, inst.node_of_task.tolist()
(1.0, [0, 0, 1, 1])
>>> p = assemble(inst, "demo", bounds=[0, 1, 2, 3, 4], nodes=[0, 2, 1, 3],
...              status=PlanStatus.FEASIBLE)
>>> p.cost, p.max_load_ratio, p.meets_tau, p.status.value
(4.0, 1.0, True, 'feasible')
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

LOAD_RTOL: Final = 1e-9
"""Relative slack of the load test ``W_i ≤ (1+τ)·W/n′`` (float sums of work)."""
IMPOSSIBLE: Final = 1 << 62
"""More intervals than any node count: no partitioning fits."""


MigrationStatus = PlanStatus
"""The same enum as :class:`~elastream.core.plan.PlanStatus` (one status for every planner):
``OPTIMAL`` — proved least cost among plans that meet τ; ``FEASIBLE`` — a plan that meets τ,
from a heuristic or a restricted search; ``INFEASIBLE`` — no plan meets τ (``intervals``
empty), or the baseline's plan breaks it (see ``reason``). Kept under this name for code that
already uses it."""


@dataclass(frozen=True, eq=False)
class MigrationInstance:
    """One single-step migration problem (Definition 4.1), validated on construction.

    ``work``, ``state``: one non-negative finite number per task (``m ≥ 1`` tasks, the work
    summing to more than 0). ``intervals``: the current nodes' task intervals ``(lb, ub)``, in
    task order, contiguous from 0 to ``m``. ``target_nodes``: ``n′ ≥ 1``. ``tau``: ``τ ≥ 0``.
    Mistakes raise :class:`OptionError` naming the field (``intervals[2]``), the rule and the
    value.
    """

    work: F64
    state: F64
    intervals: tuple[tuple[int, int], ...]
    target_nodes: int
    tau: float

    def __post_init__(self) -> None:
        work = _vector("work", self.work, None)
        if not work.sum() > 0:
            raise OptionError("work", "must have a positive sum", float(work.sum()))
        object.__setattr__(self, "work", work)
        object.__setattr__(self, "state", _vector("state", self.state, work.size))
        object.__setattr__(self, "intervals", check_intervals("intervals", self.intervals,
                                                              work.size))
        object.__setattr__(self, "target_nodes", rules.integer("target_nodes",
                                                               self.target_nodes))
        object.__setattr__(self, "tau", rules.number("tau", self.tau))

    @property
    def m(self) -> int:
        """Number of tasks."""
        return int(self.work.size)

    @property
    def n(self) -> int:
        """Number of current nodes."""
        return len(self.intervals)

    @cached_property
    def bounds(self) -> I64:
        """The current boundaries ``[0, ub_0, ub_1, …, m]`` (``n + 1`` of them)."""
        return bounds_of(self.intervals)

    @cached_property
    def node_of_task(self) -> I64:
        """The current node of every task."""
        return node_of_task(self.bounds, np.arange(self.n))

    @property
    def total_work(self) -> float:
        """``W``."""
        return float(self.work.sum())

    @property
    def total_state(self) -> float:
        """All state: the cost of moving every task."""
        return float(self.state.sum())

    @property
    def capacity(self) -> float:
        """``(1+τ)·W/n′``: the most work a target node may get."""
        return (1.0 + self.tau) * self.total_work / self.target_nodes

    def retargeted(self, target_nodes: int, intervals: Sequence[tuple[int, int]] | None = None,
                   tau: float | None = None) -> MigrationInstance:
        """The same tasks with another target (and, optionally, other current intervals or τ)."""
        return MigrationInstance(self.work, self.state,
                                 self.intervals if intervals is None else tuple(intervals),
                                 target_nodes, self.tau if tau is None else tau)


@dataclass(frozen=True)
class MigrationPlan:
    """A migration planner's answer: new intervals, their nodes, the cost and the balance.

    ``intervals``: runs of tasks in task order covering ``0 … m`` (one per target node for
    contiguous planners; empty when status is infeasible and no plan exists);
    ``node_of_interval``: the node of each (module docstring for ids); ``cost``: state moved
    (``inf`` without a plan); ``max_load_ratio``: ``max_i W_i / (W/n′)`` (``inf`` without a
    plan); ``meets_tau``: ``max_load_ratio ≤ 1+τ``; ``reason``: why the status is infeasible;
    ``solve_seconds``: filled in by whoever timed the call (planners never read the clock);
    ``details``: planner-specific numbers.
    """

    algo: str
    status: PlanStatus
    intervals: tuple[tuple[int, int], ...]
    node_of_interval: tuple[int, ...]
    cost: float
    max_load_ratio: float
    meets_tau: bool
    reason: str = ""
    solve_seconds: float = 0.0
    details: Mapping[str, float] = field(default_factory=dict)

    def contract(self) -> dict[str, Any]:
        """The CLI's JSON object; infinities become ``null``, ``reason`` only when infeasible."""
        out: dict[str, Any] = {
            "algo": self.algo,
            "status": self.status.value,
            "intervals": [list(iv) for iv in self.intervals],
            "node_of_interval": list(self.node_of_interval),
            "cost": _finite_or_none(self.cost),
            "max_load_ratio": _finite_or_none(self.max_load_ratio),
            "solve_seconds": self.solve_seconds,
        }
        if self.status is PlanStatus.INFEASIBLE:
            out["reason"] = self.reason
        return out


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


# ------------------------------------------------------------------------------- validation


def _vector(name: str, values: object, size: int | None) -> F64:
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise OptionError(name, "must be a list of numbers", _short(values)) from None
    if array.ndim != 1 or array.size == 0:
        raise OptionError(name, "must be a non-empty list of numbers", _short(values))
    if size is not None and array.size != size:
        raise OptionError(name, f"must hold one number per task (m={size})", array.size)
    bad = ~np.isfinite(array) | (array < 0)
    if bad.any():
        at = int(np.argmax(bad))
        raise OptionError(f"{name}[{at}]", "must be a finite number >= 0", float(array[at]))
    array.setflags(write=False)
    return array


def _short(value: object) -> object:
    text = repr(value)
    return value if len(text) <= 60 else text[:57] + "..."


def check_intervals(name: str, intervals: object, m: int) -> tuple[tuple[int, int], ...]:
    """Half-open intervals ``[lb, ub)`` in task order, contiguous from 0 to ``m``."""
    if not isinstance(intervals, Sequence | np.ndarray) or isinstance(intervals, str) \
            or len(intervals) == 0:
        raise OptionError(name, "must be a non-empty list of [lb, ub] pairs", _short(intervals))
    out: list[tuple[int, int]] = []
    expected = 0
    for i, pair in enumerate(intervals):
        where = f"{name}[{i}]"
        if isinstance(pair, str) or not isinstance(pair, Sequence | np.ndarray) \
                or len(pair) != 2 or not all(rules.is_count(v) for v in pair):
            raise OptionError(where, "must be a pair [lb, ub] of integers", _short(pair))
        lb, ub = int(pair[0]), int(pair[1])
        if lb != expected:
            rule = "must start at 0" if i == 0 else f"must start where {name}[{i - 1}] ends " \
                                                    f"({expected})"
            raise OptionError(where, rule, [lb, ub])
        if ub < lb:
            raise OptionError(where, "must have lb <= ub", [lb, ub])
        out.append((lb, ub))
        expected = ub
    if expected != m:
        raise OptionError(f"{name}[{len(out) - 1}]", f"must end at the number of tasks (m={m})",
                          list(out[-1]))
    return tuple(out)


# --------------------------------------------------------------------- intervals and costs


def bounds_of(intervals: Sequence[tuple[int, int]]) -> I64:
    """``[lb_0, ub_0, ub_1, …]`` of contiguous intervals.

    >>> bounds_of([(0, 2), (2, 2), (2, 5)]).tolist()
    [0, 2, 2, 5]
    """
    return np.array([intervals[0][0], *(ub for _, ub in intervals)], dtype=np.int64)


def intervals_of(bounds: Sequence[int] | I64) -> tuple[tuple[int, int], ...]:
    """The intervals between consecutive boundaries.

    >>> intervals_of([0, 2, 2, 5])
    ((0, 2), (2, 2), (2, 5))
    """
    return tuple(itertools.pairwise(int(x) for x in bounds))


def node_of_task(bounds: Sequence[int] | I64, nodes: Sequence[int] | I64) -> I64:
    """The node of every task when interval ``k = [bounds[k], bounds[k+1])`` is on ``nodes[k]``.

    >>> node_of_task([0, 2, 2, 3], [5, 6, 7]).tolist()
    [5, 5, 7]
    """
    b = np.asarray(bounds, dtype=np.int64)
    return np.repeat(np.asarray(nodes, dtype=np.int64), np.diff(b))


def runs(assignment: I64) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """The maximal runs of consecutive tasks on one node, and the node of each.

    >>> runs(np.array([3, 3, 1, 3]))
    (((0, 2), (2, 3), (3, 4)), (3, 1, 3))
    """
    a = np.asarray(assignment, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
    ends = np.r_[starts[1:], a.size]
    pairs = tuple((int(s), int(e)) for s, e in zip(starts, ends, strict=True))
    return pairs, tuple(int(a[s]) for s in starts)


def migration_cost(before: I64, after: I64, state: F64) -> float:
    """State of the tasks whose node changes (§4.1).

    >>> migration_cost(np.array([0, 0, 1]), np.array([0, 2, 1]), np.array([1.0, 4.0, 2.0]))
    4.0
    """
    return float(state[np.asarray(before) != np.asarray(after)].sum())


def load_ratio(assignment: I64, work: F64, nodes: int) -> float:
    """``max_i W_i / (W / nodes)``: 1 is perfect balance.

    >>> load_ratio(np.array([0, 0, 1]), np.array([1.0, 1.0, 2.0]), 2)
    1.0
    """
    total = float(work.sum())
    loads = np.bincount(np.asarray(assignment), weights=work)
    return float(loads.max() / (total / nodes))


def fits(load: float | F64, capacity: float) -> Any:
    """``load ≤ capacity`` with the relative slack :data:`LOAD_RTOL`."""
    return load <= capacity * (1.0 + LOAD_RTOL)


def assemble(instance: MigrationInstance, algo: str, *, bounds: Sequence[int] | I64,
             nodes: Sequence[int] | I64, status: PlanStatus,
             details: Mapping[str, float] | None = None) -> MigrationPlan:
    """A plan from intervals ``[bounds[k], bounds[k+1])`` on ``nodes[k]``.

    Its cost and balance are measured here; a plan over τ gets status infeasible with the reason.
    """
    assignment = node_of_task(bounds, nodes)
    return from_assignment(instance, algo, assignment, status=status, details=details,
                           keep=(intervals_of(bounds), tuple(int(v) for v in nodes)))


def from_assignment(instance: MigrationInstance, algo: str, assignment: I64, *,
                    status: PlanStatus, details: Mapping[str, float] | None = None,
                    keep: tuple[tuple[tuple[int, int], ...], tuple[int, ...]] | None = None,
                    ) -> MigrationPlan:
    """A plan from the node of every task (``keep``: the intervals to report, else its runs)."""
    intervals, nodes = keep if keep is not None else runs(assignment)
    ratio = load_ratio(assignment, instance.work, instance.target_nodes)
    meets = bool(fits(ratio, 1.0 + instance.tau))
    reason = ""
    if not meets:
        status = PlanStatus.INFEASIBLE
        reason = (f"max_load_ratio {ratio:.4g} exceeds 1 + tau = {1 + instance.tau:.4g} "
                  f"(the plan is kept)")
    return MigrationPlan(
        algo=algo, status=status, intervals=intervals, node_of_interval=nodes,
        cost=migration_cost(instance.node_of_task, assignment, instance.state),
        max_load_ratio=ratio, meets_tau=meets, reason=reason, details=dict(details or {}))


def no_plan(algo: str, reason: str, details: Mapping[str, float] | None = None) -> MigrationPlan:
    """The infeasible answer of a planner that found no plan meeting τ."""
    return MigrationPlan(algo=algo, status=PlanStatus.INFEASIBLE, intervals=(),
                         node_of_interval=(), cost=math.inf, max_load_ratio=math.inf,
                         meets_tau=False, reason=reason, details=dict(details or {}))


def fewest_intervals(work: F64, capacity: float) -> int:
    """Fewest contiguous intervals of load ``≤ capacity`` that cover all tasks (greedy, exact).

    :data:`IMPOSSIBLE` when one task alone is too heavy.

    >>> fewest_intervals(np.array([1.0, 1, 1]), 1.5), fewest_intervals(np.array([2.0]), 1.0)
    (3, 4611686018427387904)
    """
    if not bool(np.all(fits(work, capacity))):
        return IMPOSSIBLE
    prefix = np.r_[0.0, np.cumsum(work)]
    count, at = 0, 0
    while at < work.size:
        # the farthest end whose load from `at` still fits
        at = int(np.searchsorted(prefix, prefix[at] + capacity * (1 + LOAD_RTOL), "right")) - 1
        count += 1
    return count


def balanced_bounds(work: F64, nodes: int) -> I64:
    """Contiguous boundaries that split the work about evenly over ``nodes``.

    Each cut goes to the task boundary nearer the quantile ``k·W/nodes``.

    >>> balanced_bounds(np.array([1.0, 1, 1, 1, 4]), 2).tolist()
    [0, 4, 5]
    """
    prefix = np.r_[0.0, np.cumsum(work)]
    targets = prefix[-1] * np.arange(1, nodes) / nodes
    right = np.clip(np.searchsorted(prefix, targets), 1, work.size)
    left = right - 1
    nearer = np.where(prefix[right] - targets <= targets - prefix[left], right, left)
    bounds: I64 = np.r_[0, np.maximum.accumulate(nearer), work.size].astype(np.int64)
    return bounds
