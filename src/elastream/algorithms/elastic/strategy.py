r"""What every elasticity strategy takes and returns, so that one simulator can run them all.

Elasticutor §5 compares three execution paradigms (Table 1) and a variant: *static* (fixed key
partitioning, one executor per core), *resource-centric* (RC: the key space re-partitioned
over executors of one core each), *executor-centric* (EC, Elasticutor: fixed key ranges per
executor, cores moved between executors) and *naive EC* (EC without the scheduler's migration
and locality optimisations). Each is a module with one function

    schedule(workload: Workload, previous: Schedule | None) -> Schedule

(:data:`Strategy`): given what was observed over the last interval and the schedule in force
(``None`` at the start), the schedule for the next interval. It is pure and deterministic.

**The operator** (§5's defaults in brackets): ``Z`` shards [8192], the key space hashed into
them; ``executors`` elastic executors [32], executor ``j`` owning the contiguous shards
``[⌈jZ/E⌉, ⌈(j+1)Z/E⌉)`` (:func:`executor_of_shards`) with home node ``j mod n`` ("assigned to
the nodes in a round-robin manner", §5) unless given; ``n`` nodes of ``c_i`` cores [32 × 8].
A *task* is one core running one data processing thread; a schedule names, for every task, the
executor it works for and its node, and for every shard its task.

**Costs a schedule states** (the quantities of Table 2): ``migration_cost`` — bytes of shard
state whose *node* changed from the previous schedule (a shard moved between tasks of one node
costs nothing: intra-process state sharing, §3.2, which RC uses too, §5); the remote data
transfer rate — bytes/s of shards processed on a node other than their executor's home
(:meth:`Schedule.remote_rate`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from elastream.algorithms.elastic.assignment import DEFAULT_PHI
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class Workload:
    """One interval's observation of an operator, and the cluster it runs on.

    ``shard_rate``: tuples/s per shard; ``shard_state``: bytes per shard; ``shard_bytes``:
    input plus output bytes/s per shard (its data intensity); ``service_rate``: tuples/s one
    core processes (μ, the same for every executor); ``executors``: E ≥ 1 (at most Z);
    ``node_cores``: cores per node; ``latency_target``: T_max in seconds; ``theta``: the
    intra-executor imbalance threshold (§3.1); ``phi``: the locality threshold φ̄ (§4.2,
    bytes/s per core); ``home``: each executor's home node (default ``j mod n``).
    """

    shard_rate: F64
    shard_state: F64
    shard_bytes: F64
    service_rate: float
    executors: int
    node_cores: tuple[int, ...]
    latency_target: float
    theta: float = 1.2
    phi: float = DEFAULT_PHI
    home: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        rate = _vector("shard_rate", self.shard_rate, None)
        object.__setattr__(self, "shard_rate", rate)
        object.__setattr__(self, "shard_state", _vector("shard_state", self.shard_state,
                                                        rate.size))
        object.__setattr__(self, "shard_bytes", _vector("shard_bytes", self.shard_bytes,
                                                        rate.size))
        rules.number("service_rate", self.service_rate, above=0)
        rules.number("latency_target", self.latency_target, above=0)
        rules.integer("executors", self.executors, high=rate.size, unit="shards")
        cores = tuple(self.node_cores)
        if not cores or any(not rules.is_count(c) or c < 0
                            for c in cores) or sum(cores) == 0:
            raise OptionError("node_cores", "must list integers >= 0 with at least one core",
                              cores)
        object.__setattr__(self, "node_cores", cores)
        rules.number("theta", self.theta, low=1)
        if not rules.is_number(self.phi) \
                or math.isnan(self.phi) or self.phi <= 0:  # inf: no locality
            raise OptionError("phi", "must be bytes/s per core > 0", self.phi)
        home = tuple(j % len(cores) for j in range(self.executors)) if self.home is None \
            else tuple(self.home)
        if len(home) != self.executors or any(
                not rules.is_count(h) or not 0 <= h < len(cores)
                for h in home):
            raise OptionError("home", f"must name a node in [0, {len(cores)}) per executor",
                              home)
        object.__setattr__(self, "home", home)

    @property
    def shards(self) -> int:
        """Z."""
        return int(self.shard_rate.size)

    @property
    def total_cores(self) -> int:
        """Σ c_i."""
        return sum(self.node_cores)

    @property
    def homes(self) -> tuple[int, ...]:
        """Each executor's home node (``home``, filled in)."""
        assert self.home is not None
        return self.home

    def executor_sums(self, values: F64) -> F64:
        """Per executor sums of a per-shard quantity."""
        return np.bincount(executor_of_shards(self.shards, self.executors), weights=values,
                           minlength=self.executors).astype(np.float64)


@dataclass(frozen=True)
class Schedule:
    """A strategy's decision for the next interval.

    ``task_executor[t]`` / ``task_node[t]``: the executor task ``t`` works for and its node;
    ``shard_task[s]``: the task of shard ``s``; ``executor_home[e]``: the home node of executor
    ``e`` (for static and RC every task is an executor of its own, at home);
    ``expected_latency``: the model's E[T] (eq. 1) with the schedule's tasks; ``status``:
    ``OPTIMAL`` or ``FEASIBLE`` when E[T] ≤ T_max, ``INFEASIBLE`` otherwise;
    ``migration_cost``: bytes of shard state whose node changed (0 for a first schedule);
    ``phi``: the locality threshold the EC scheduler ended with (``inf`` where none applies).
    """

    status: PlanStatus
    task_executor: tuple[int, ...]
    task_node: tuple[int, ...]
    shard_task: tuple[int, ...]
    executor_home: tuple[int, ...]
    expected_latency: float
    migration_cost: float
    phi: float = math.inf

    @property
    def cores(self) -> tuple[int, ...]:
        """Tasks (cores) per executor."""
        counts = np.bincount(np.asarray(self.task_executor, np.int64),
                             minlength=len(self.executor_home))
        return tuple(int(v) for v in counts)

    def shard_node(self) -> I64:
        """The node each shard is processed on."""
        return np.asarray(self.task_node, np.int64)[np.asarray(self.shard_task, np.int64)]

    def remote_rate(self, shard_bytes: F64) -> float:
        """Bytes/s between executors' main processes and their remote tasks (Table 2)."""
        task = np.asarray(self.shard_task, np.int64)
        executor = np.asarray(self.task_executor, np.int64)[task]
        remote = self.shard_node() != np.asarray(self.executor_home, np.int64)[executor]
        return float(np.asarray(shard_bytes, np.float64)[remote].sum())


Strategy = Callable[[Workload, "Schedule | None"], Schedule]
"""``schedule(workload, previous) -> Schedule``: every strategy module's entry point."""


def executor_of_shards(shards: int, executors: int) -> I64:
    """Executor ``j`` owns shards ``[⌈jZ/E⌉, ⌈(j+1)Z/E⌉)``: ``(s·E) // Z``.

    >>> executor_of_shards(10, 4).tolist()
    [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]
    """
    return (np.arange(shards, dtype=np.int64) * executors) // shards


def moved_state(previous: Schedule | None, shard_node: I64, shard_state: F64) -> float:
    """Bytes of state whose shard's node differs from ``previous`` (0 without one)."""
    if previous is None:
        return 0.0
    before = previous.shard_node()
    if before.size != shard_node.size:
        raise OptionError("previous", f"must schedule the workload's {shard_node.size} shards",
                          before.size)
    return float(shard_state[before != shard_node].sum())


def status_of(latency: float, target: float, met: PlanStatus = PlanStatus.FEASIBLE
              ) -> PlanStatus:
    """``met`` when the model's latency meets the target, else ``INFEASIBLE``."""
    return met if latency <= target else PlanStatus.INFEASIBLE


def round_robin_nodes(node_cores: Sequence[int], used: Sequence[int], count: int,
                      start: int = 0) -> list[int]:
    """Nodes for ``count`` new one-core tasks, round robin over nodes with idle cores.

    ``used``: cores already taken per node; ``start``: the node to begin with.

    >>> round_robin_nodes([2, 1, 2], [0, 1, 0], 3)
    [0, 2, 0]
    """
    free = [c - u for c, u in zip(node_cores, used, strict=True)]
    if count > sum(free):
        raise OptionError("count", f"must not exceed the idle cores ({sum(free)})", count)
    out: list[int] = []
    node = start % len(free)
    while len(out) < count:
        if free[node] > 0:
            free[node] -= 1
            out.append(node)
        node = (node + 1) % len(free)
    return out


def _vector(name: str, values: F64, size: int | None) -> F64:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0 or (size is not None and arr.size != size):
        raise OptionError(name, "must list one number per shard"
                          + ("" if size is None else f" ({size})"), arr.shape)
    bad = ~(np.isfinite(arr) & (arr >= 0))
    if bad.any():
        raise OptionError(f"{name}[{int(np.flatnonzero(bad)[0])}]",
                          "must be a finite number >= 0", float(arr[bad][0]))
    return arr
