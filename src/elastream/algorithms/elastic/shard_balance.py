r"""Intra-executor load balancing: an elastic executor's shards over its tasks (Elasticutor §3.1).

An elastic executor hashes its key subspace into *shards* and runs one *task* per assigned core;
when key frequencies drift or cores come and go, it reassigns shards so that the imbalance
factor ``δ = max task load / average task load`` falls to at most ``θ`` (default 1.2), moving
few shards (each move migrates the shard's state). §3.1: "the algorithm refines the
shard-to-task assignment in rounds until the workload imbalance factor δ is below a predefined
threshold θ. In each round, among all the possible reassignments that reassign a shard from the
most overloaded task to the least loaded task, the algorithm picks the shard reassignment that
reduces δ the most."

Here, where the paper is silent:

- *Tasks that went away.* A shard whose task is ``≥ num_tasks`` (its core was taken away) must
  move: such shards are placed first, heaviest first, each on the least loaded task (LPT).
- *A round.* The source is the most loaded task (lowest id among ties), the target the least
  loaded one; a shard of load ``p > 0`` on the source qualifies when
  ``load(target) + p < load(source)``, and the one leaving the smaller maximum of the two loads
  moves (ties: the lower shard id). When several tasks share the maximum, one move does not
  lower δ yet, but it lowers the pair's maximum, and the rounds go on. Every move lowers the sum
  of squared task loads by ``2p·(load(source) − load(target) − p) > 0``, so the rounds end.
- *The bound.* When no shard qualifies, every shard ``p`` on the most loaded task has
  ``load(min) + p ≥ load(max)``, and ``load(min) ≤ avg``: hence ``δ ≤ 1 + p_max/avg`` at the
  end, for any ``θ``. So ``δ ≤ θ`` is guaranteed whenever no shard exceeds ``(θ − 1)·avg``. The
  weaker condition "no shard exceeds ``θ·avg``" cannot be guaranteed by any assignment (three
  equal shards on two tasks: the best δ is 4/3 > 1.2).
- *Fallback.* If the rounds stop above ``θ``, the longest-processing-time assignment of all
  shards from scratch (LPT, which also has ``δ ≤ 1 + p_max/avg`` and is within 4/3 of the
  optimal maximum) is taken instead when its δ is lower; it moves many more shards.
- ``δ`` of an executor without load is 1.0. Float guards: a move must lower the pair's
  maximum by more than 1e-12 of it, and at most 4 rounds per shard run.

Complexity: O(Z log Z) for the orphans, then O(Z) per round (Z shards); the rounds are at most
the number of moves, which is small when the assignment was balanced before.

References:
    L. Wang et al. Elasticutor, §3.1.
    R. L. Graham. Bounds on multiprocessing timing anomalies. SIAM J. Appl. Math. 17(2), 1969
    (LPT).

>>> plan = balance_shards([5.0, 4.0, 3.0, 3.0, 1.0], [0, 0, 0, 1, 1], num_tasks=2)  # δ = 12/8
>>> plan.assignment, plan.moves, round(plan.imbalance, 3)
((0, 1, 0, 1, 1), ((1, 0, 1),), 1.0)
>>> rng = np.random.default_rng(3)
>>> p = balance_shards(rng.pareto(2.0, 256) + 1, [0] * 256, num_tasks=4)  # 3 cores added
>>> p.imbalance <= 1.2, len(p.moves)
(True, 125)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from elastream.core import rules
from elastream.core.errors import OptionError

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

MOVE_RTOL = 1e-12
"""A round's move must lower the pair's maximum load by more than this fraction of it."""
ROUNDS_PER_SHARD = 4
"""Most rounds per shard; moves lower the sum of squared loads, so this is a float guard."""


@dataclass(frozen=True)
class ShardPlan:
    """Shards' tasks after balancing, the moves that got there, and ``δ``.

    ``assignment[s]``: the task of shard ``s``; ``moves``: ``(shard, from_task, to_task)`` for
    every shard whose task changed, in shard order (``from_task`` may be a task that no longer
    exists); ``imbalance``: ``δ = max task load / average task load`` afterwards.
    """

    assignment: tuple[int, ...]
    moves: tuple[tuple[int, int, int], ...]
    imbalance: float


def balance_shards(shard_loads: Sequence[float] | F64, assignment: Sequence[int] | I64,
                   num_tasks: int, *, theta: float = 1.2) -> ShardPlan:
    """Reassign shards from the most to the least loaded task until ``δ ≤ θ`` (module doc).

    Args:
        shard_loads: load of each shard (tuples in the window, or tuples/s; finite, ≥ 0).
        assignment: current task of each shard (integer ≥ 0; ``≥ num_tasks``: a removed task).
        num_tasks: tasks (cores) of the executor from now on (≥ 1).
        theta: the imbalance threshold ``θ ≥ 1``.

    Raises:
        OptionError: naming the argument, the rule and the value.
    """
    loads, origin = _validated(shard_loads, assignment, num_tasks, theta)
    task = origin.copy()
    kept = task < num_tasks
    task_load = _task_loads(loads[kept], task[kept], num_tasks)
    _place_orphans(loads, task, task_load, num_tasks)
    _rounds(loads, task, task_load, theta)
    delta = _imbalance(task_load)
    if delta > theta:
        lpt = _lpt(loads, num_tasks)
        lpt_load = _task_loads(loads, lpt, num_tasks)
        if _imbalance(lpt_load) < delta:
            task, delta = lpt, _imbalance(lpt_load)
    moved = np.flatnonzero(task != origin)
    moves = tuple((int(s), int(origin[s]), int(task[s])) for s in moved)
    return ShardPlan(tuple(int(t) for t in task), moves, delta)


def imbalance(shard_loads: Sequence[float] | F64, assignment: Sequence[int] | I64,
              num_tasks: int) -> float:
    """``δ`` of an assignment: max task load over average task load (1.0 without load)."""
    return _imbalance(_task_loads(np.asarray(shard_loads, np.float64),
                                  np.asarray(assignment, np.int64), num_tasks))


def _task_loads(loads: F64, task: I64, num_tasks: int) -> F64:
    return np.bincount(task, weights=loads, minlength=num_tasks).astype(np.float64)


def _imbalance(task_load: F64) -> float:
    total = float(task_load.sum())
    if total <= 0:
        return 1.0
    return float(task_load.max()) / total * task_load.size


def _place_orphans(loads: F64, task: I64, task_load: F64, num_tasks: int) -> None:
    orphans = np.flatnonzero(task >= num_tasks)
    heap = [(float(task_load[t]), t) for t in range(num_tasks)]
    heapq.heapify(heap)
    for s in orphans[np.lexsort((orphans, -loads[orphans]))]:
        load, t = heapq.heappop(heap)
        task[s] = t
        task_load[t] += loads[s]
        heapq.heappush(heap, (load + float(loads[s]), t))


def _rounds(loads: F64, task: I64, task_load: F64, theta: float) -> None:
    """The paper's rounds, in place, until δ ≤ θ or no shard qualifies.

    A move must lower the pair's maximum by more than ``MOVE_RTOL`` of it (float sums must not
    cycle), and the rounds stop after ``ROUNDS_PER_SHARD`` per shard (then the LPT fallback).
    """
    for _ in range(ROUNDS_PER_SHARD * loads.size):
        if _imbalance(task_load) <= theta:
            return
        source = int(np.argmax(task_load))
        target = int(np.argmin(task_load))
        gap = task_load[source] - task_load[target]
        mine = np.flatnonzero(task == source)
        p = loads[mine]
        ok = (p > 0) & (p < gap)
        if not ok.any():
            return
        # The pair's maximum after moving p: max(L_s − p, L_t + p); smallest wins.
        after = np.maximum(task_load[source] - p, task_load[target] + p)
        after[~ok | (after >= task_load[source] * (1 - MOVE_RTOL))] = math.inf
        if not np.isfinite(after).any():
            return
        s = int(mine[int(np.argmin(after))])  # argmin: lowest shard id among ties
        task[s] = target
        task_load[source] -= loads[s]
        task_load[target] += loads[s]


def _lpt(loads: F64, num_tasks: int) -> I64:
    """Longest processing time first: heaviest shard to the least loaded task."""
    task = np.full(loads.size, num_tasks, dtype=np.int64)
    _place_orphans(loads, task, np.zeros(num_tasks), num_tasks)
    return task


def _validated(shard_loads: Sequence[float] | F64, assignment: Sequence[int] | I64,
               num_tasks: int, theta: float) -> tuple[F64, I64]:
    rules.integer("num_tasks", num_tasks)
    rules.number("theta", theta, low=1)
    loads = np.asarray(shard_loads, dtype=np.float64)
    if loads.ndim != 1:
        raise OptionError("shard_loads", "must be a list of numbers", loads.shape)
    bad = ~(np.isfinite(loads) & (loads >= 0))
    if bad.any():
        raise OptionError(f"shard_loads[{int(np.flatnonzero(bad)[0])}]",
                          "must be a finite number >= 0", float(loads[bad][0]))
    task = np.asarray(assignment)
    if task.shape != loads.shape:
        raise OptionError("assignment", f"must give a task for each of the {loads.size} shards",
                          task.shape)
    if task.size and (task.dtype.kind not in "iu" or task.min() < 0):
        raise OptionError("assignment", "must hold task ids, integers >= 0",
                          task.min() if task.dtype.kind in "iu" else task.dtype.name)
    return loads, task.astype(np.int64)
