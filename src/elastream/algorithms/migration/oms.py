"""``oms``: optimal migration sequence for known node counts (Ding et al., §5.1, Fig. 8).

Given the node counts ``n_1, …, n_p`` of the next ``p`` migrations (and their thresholds
``τ_1, …, τ_p``), choose the intervals after every migration so that the *total* cost is least.
Single-step migration applied ``p`` times can lose: its first plan may make the next migration
expensive (Table 3). By Lemma 5.1 only the partitioning after each step matters to the steps
after it, so Fig. 8's recursion — try every partitioning meeting ``τ_1`` for the first step,
solve the rest recursively, use SSM for the last step — is a shortest path through layers of
partitionings: ``V_1[P] = cost(current, P)``, ``V_{i+1}[P′] = min_P V_i[P] + cost(P, P′)``, and
the answer ``min_P V_{p−1}[P] + SSM(P, n_p)``. Step costs are the cheapest matchings
(:mod:`.matching`); the partitionings of each intermediate step are listed by
:mod:`.partitions`.

Exponential, as the paper's: layer ``i`` holds up to ``C(m−1, n_i−1)`` partitionings, and
consecutive layers are compared pairwise, O(Σ_i |L_i|·|L_{i+1}|·(n_i + n_{i+1})) time (numpy,
in blocks) plus ``|L_{p−1}|`` SSM runs. ``max_partitions`` (default 2000) bounds a layer; a
larger one raises :class:`~elastream.core.errors.OptionError`. Use it for short sequences of
small instances (tests, the CLI) — the paper uses it to motivate MTM-aware migration.

Each step's plan is relative to the step before: step 1's nodes are the instance's (``0 … n−1``,
new ones ``≥ n``); step ``i + 1`` numbers its current nodes by the task order of step ``i``'s
intervals. Status ``optimal``, or ``infeasible`` (no step-1 plan, ``reason`` naming the step)
when some step has no partitioning meeting its τ.

>>> from elastream.algorithms.migration.intervals import MigrationInstance
>>> inst = MigrationInstance([1.0] * 20, [1.0] * 20, [(0, 13), (13, 20)], 3, 0.4)
>>> seq = plan_sequence(inst, then=(4,))       # Table 3: 2 → 3 → 4 nodes, τ = 0.4
>>> [s.cost for s in seq.steps], seq.total_cost  # Table 3 shows 4 + 6 and 5 + 4
([4.0, 2.0], 6.0)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
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
from elastream.algorithms.migration.partitions import canonical, feasible_partitionings
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

NAME: Final = "oms"
PAIRS_PER_BLOCK: Final = 1 << 16


@dataclass(frozen=True)
class OmsOptions:
    """Parameters of :func:`plan`.

    ``then`` (default none): node counts of the migrations after this one (the instance's
    ``target_nodes`` is the first); ``taus`` (default: the instance's τ for every step): τ of
    each migration in ``then``; ``max_partitions`` (default 2000): most partitionings one
    intermediate step may have.
    """

    then: tuple[int, ...] = ()
    taus: tuple[float, ...] | None = None
    max_partitions: int = 2000

    def __post_init__(self) -> None:
        object.__setattr__(self, "then", tuple(rules.integer(f"then[{i}]", c)
                                               for i, c in enumerate(self.then)))
        if self.taus is not None:
            if len(self.taus) != len(self.then):
                raise OptionError("taus", f"must give one tau per later migration "
                                  f"({len(self.then)})", list(self.taus))
            object.__setattr__(self, "taus", tuple(rules.number("tau", t) for t in self.taus))
        rules.integer("max_partitions", self.max_partitions)


@dataclass(frozen=True)
class SequencePlan:
    """OMS's answer: one plan per migration (each relative to the one before) and their sum."""

    steps: tuple[MigrationPlan, ...]
    total_cost: float
    status: PlanStatus
    reason: str = ""
    details: dict[str, float] = field(default_factory=dict)


def plan(instance: MigrationInstance, *, options: OmsOptions | None = None) -> MigrationPlan:
    """The first migration of the optimal sequence.

    ``details`` holds ``total_cost`` and each step's cost.
    """
    opts = options or OmsOptions()
    return first_step(plan_sequence(instance, opts.then, opts.taus,
                                    max_partitions=opts.max_partitions))


def first_step(seq: SequencePlan) -> MigrationPlan:
    """The sequence's first plan, with ``total_cost`` and each step's cost in ``details``."""
    if seq.status is PlanStatus.INFEASIBLE:
        return no_plan(NAME, seq.reason)
    first = seq.steps[0]
    details = {**first.details, "total_cost": seq.total_cost, "steps": float(len(seq.steps)),
               **{f"step_{i + 1}_cost": s.cost for i, s in enumerate(seq.steps)}}
    return MigrationPlan(algo=NAME, status=first.status, intervals=first.intervals,
                         node_of_interval=first.node_of_interval, cost=first.cost,
                         max_load_ratio=first.max_load_ratio, meets_tau=first.meets_tau,
                         details=details)


def plan_sequence(instance: MigrationInstance, then: Sequence[int] = (),
                  taus: Sequence[float] | None = None, *,
                  max_partitions: int = 2000) -> SequencePlan:
    """Plans for the migrations to ``instance.target_nodes``, then to each count in ``then``."""
    counts = [instance.target_nodes, *then]
    thresholds = [instance.tau, *(taus if taus is not None else [instance.tau] * len(then))]
    work = instance.work
    caps = [(1 + t) * instance.total_work / c for c, t in zip(counts, thresholds, strict=True)]
    for i, (c, t, cap) in enumerate(zip(counts, thresholds, caps, strict=True)):
        reason = ssm.infeasibility(work, cap, c, t)
        if reason:
            return SequencePlan((), np.inf, PlanStatus.INFEASIBLE,
                                f"migration {i + 1} (to {c} nodes): {reason}")
    prefix = np.r_[0.0, np.cumsum(instance.state)]
    layers = [_layer(work, c, cap, max_partitions) for c, cap in
              zip(counts[:-1], caps[:-1], strict=True)]
    chosen = _shortest_path(instance, layers, counts[-1], caps[-1], prefix)
    steps: list[MigrationPlan] = []
    current = instance
    for i, bounds in enumerate(chosen):
        current = current if i == 0 else current.retargeted(
            counts[i], intervals=steps[-1].intervals, tau=thresholds[i])
        _, pairs = match(current.bounds, bounds, prefix)
        steps.append(assemble(current, NAME, bounds=bounds,
                              nodes=assign_nodes(current.n, counts[i], pairs),
                              status=PlanStatus.OPTIMAL))
    last = current if not steps else current.retargeted(
        counts[-1], intervals=steps[-1].intervals, tau=thresholds[-1])
    final = ssm.plan(last)
    steps.append(replace(final, algo=NAME))
    return SequencePlan(tuple(steps), float(sum(s.cost for s in steps)), PlanStatus.OPTIMAL,
                        details={"layer_sizes": float(sum(len(layer) for layer in layers))})


def _layer(work: F64, count: int, cap: float, limit: int) -> I64:
    try:
        return feasible_partitionings(work, count, capacity=cap, limit=limit)
    except OptionError:
        raise OptionError("target_nodes", f"make oms enumerate more than {limit} partitionings "
                          f"of {work.size} tasks for {count} nodes (use ssm or mtm)",
                          count) from None


def _shortest_path(instance: MigrationInstance, layers: list[I64], last_count: int,
                   last_cap: float, prefix: F64) -> list[I64]:
    """The partitioning of every intermediate step on the cheapest path (empty if p = 1)."""
    if not layers:
        return []
    start = canonical(instance.bounds, instance.m)
    value = prefix[-1] - pair_gains(np.broadcast_to(start, (len(layers[0]), start.size)),
                                    layers[0], prefix)
    parents: list[I64] = []
    for before, after in itertools.pairwise(layers):
        value, parent = _relax(before, value, after, prefix)
        parents.append(parent)
    finish = np.array([_ssm_cost(b, instance, last_count, last_cap, prefix) for b in layers[-1]])
    at = int(np.argmin(value + finish))
    path = [at]
    for parent in reversed(parents):
        path.append(int(parent[path[-1]]))
    path.reverse()
    return [layer[i] for layer, i in zip(layers, path, strict=True)]


def _relax(before: I64, value: F64, after: I64, prefix: F64) -> tuple[F64, I64]:
    """``min_p value[p] + cost(before[p], after[q])`` for every ``q``, and the best ``p``."""
    best = np.full(len(after), np.inf)
    parent = np.zeros(len(after), dtype=np.int64)
    step = max(1, PAIRS_PER_BLOCK // max(len(after), 1))
    for lo in range(0, len(before), step):
        block = before[lo:lo + step]
        rows = np.repeat(block, len(after), axis=0)
        cols = np.tile(after, (len(block), 1))
        total = (value[lo:lo + step, None]
                 + (prefix[-1] - pair_gains(rows, cols, prefix)).reshape(len(block), -1))
        arg = np.argmin(total, axis=0)
        low = total[arg, np.arange(len(after))]
        better = low < best
        best[better], parent[better] = low[better], lo + arg[better]
    return best, parent


def _ssm_cost(bounds: I64, instance: MigrationInstance, count: int, cap: float,
              prefix: F64) -> float:
    found = ssm.solve(instance.work, prefix, bounds, count, cap)
    return np.inf if found is None else float(prefix[-1] - found.gain)
