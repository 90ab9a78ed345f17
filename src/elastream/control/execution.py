"""Split or combine, chosen live: Enorm's cost model fed with what the running job measured.

Madsen, Zhou, Su, *Enorm* (DEBS 2016), §5.1.1–5.1.2. A job with ``execution="auto"`` starts
split; after every period ``p`` (the longest window the consolidate stage builds, in event
time) the policy turns the period's measurements into the model's terms and keeps or switches
the execution (:func:`~elastream.algorithms.windows.split_combine.decide`). The control loop
publishes the choice as the next routing version's ``execution``, so the switch takes effect at
a micro-batch boundary like any routing change, and stays exact: the consolidate stage merges
pane partials and window partials alike (:mod:`elastream.algorithms.windows.combine`).

The terms, from the runtime's stage costs (``BatchObservation.costs``) over the period:

* ``T_p``: records; ``W``: windows a record falls in (from the job's windows); ``PW_p``: panes
  in the longest window;
* ``E``: the pane stage's seconds per execution (a record split; a record and window combined);
* ``K_1``: the consolidate stage's seconds per partial it received, while split (the last split
  period's when combined);
* ``key_groups``: the streams of partials, partials per period over ``PW_p``. Enorm's compute
  stage emits one partial per key group and pane; ours one per key, pane and slot, so this is
  the number that makes ``PW_p·K_1·#keygroups`` the period's consolidation cost;
* ``MK_p``: key groups the period's plans moved; ``L``: seconds of hand-off (writing and taking
  over the state) per key group handed off, over the job so far.

Limits: the model prices combined execution as ``T_p·W·E`` and no consolidation, as Enorm's
combined component keeps its windows in the one stateful operator; here that operator is the
consolidate stage, merging window partials, whose time is not in the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from elastream.algorithms.windows.split_combine import (
    CostTerms,
    Execution,
    PeriodObservation,
    decide,
    estimate_terms,
)
from elastream.control.runtime import BatchObservation, event_millis
from elastream.core.job import PipelineSpec
from elastream.core.routing import RoutingTable
from elastream.core.windows import pane_ms


class ExecutionPolicy(Protocol):
    """How the control loop picks the next execution after each observation."""

    def __call__(self, observed: BatchObservation, ran_with: RoutingTable,
                 moved: int) -> tuple[str, dict[str, Any] | None]:
        """The execution for the next batches, and a record of the decision (``None``: none).

        ``ran_with``: the routing version the observed batches ran by; ``moved``: key groups
        the step's plan moved.
        """
        ...


@dataclass(frozen=True)
class Fixed:
    """Always the same execution (``split`` or ``combine``)."""

    execution: str

    def __call__(self, observed: BatchObservation, ran_with: RoutingTable,
                 moved: int) -> tuple[str, dict[str, Any] | None]:
        """The fixed execution; no decision to record."""
        return self.execution, None


@dataclass
class _Period:
    """What one period accumulated."""

    started_ms: int | None = None
    rows: int = 0
    moved: int = 0
    costs: dict[str, float] = field(default_factory=dict)
    executions: set[str] = field(default_factory=set)


@dataclass
class CostModel:
    """Enorm §5.1.2 on the running job: re-decide after every period.

    ``windows`` (``W``), ``panes_per_window`` (``PW_p``) and ``period_ms`` come from the job
    (:meth:`for_spec`); ``latency_threshold``: seconds of pause per period combine may cost
    (``math.inf``: any).

    Two windows over 12 panes; a period of 200k records whose pane stage took 2 s (``E`` =
    10 µs) and 4,000 partials whose consolidation took 8 s (``K_1`` = 2 ms, 333 streams):
    split costs ``T·E + PW·K_1·streams`` = 2 + 8 s, combine ``T·W·E`` = 4 s.

    >>> import numpy as np
    >>> policy = CostModel(windows=2, panes_per_window=12, period_ms=3_600_000,
    ...                    latency_threshold=math.inf)
    >>> routing = RoutingTable.hashed(8, 2)
    >>> def seen(time, rows, costs):
    ...     record = {"batch_id": 0, "valid_rows": rows, "max_event_time": time}
    ...     return BatchObservation(record, np.zeros(8), np.zeros(2), costs=costs)
    >>> cheap_records = dict(compute_seconds=1.0, executions=100_000, consolidate_seconds=4.0,
    ...                      partials=2_000, handoff_seconds=0.0, handoffs=0)
    >>> policy(seen("2001-01-01T00:00:00Z", 100_000, cheap_records), routing, 0)
    ('split', None)
    >>> choice, decision = policy(seen("2001-01-01T01:00:00Z", 100_000, cheap_records),
    ...                           routing, 0)
    >>> choice, decision["split_cpu"], decision["combine_cpu"]
    ('combine', 10.0, 4.0)
    """

    windows: int
    panes_per_window: int
    period_ms: int
    latency_threshold: float = math.inf
    _period: _Period = field(default_factory=_Period)
    _split_second_per_partial: float | None = None
    _handoff_seconds: float = 0.0
    _handoffs: float = 0.0

    @classmethod
    def for_spec(cls, spec: PipelineSpec) -> CostModel:
        """The policy of ``spec``'s consolidated windows and latency threshold."""
        windows = spec.consolidated_windows
        pane = pane_ms(windows)
        return cls(windows=sum(-(-w.length_ms // w.slide_ms) for w in windows),
                   panes_per_window=spec.consolidated_longest_ms // pane,
                   period_ms=spec.consolidated_longest_ms,
                   latency_threshold=math.inf if spec.latency_threshold is None
                   else float(spec.latency_threshold))

    def __call__(self, observed: BatchObservation, ran_with: RoutingTable,
                 moved: int) -> tuple[str, dict[str, Any] | None]:
        """Accumulate the observation; at a period's end, decide for the next one."""
        current = ran_with.execution
        latest = event_millis(observed.record.get("max_event_time"))
        period = self._period
        if period.started_ms is None:
            period.started_ms = latest
        period.rows += observed.valid_rows
        period.moved += moved
        period.executions.add(current)
        for name, amount in (observed.costs or {}).items():
            period.costs[name] = period.costs.get(name, 0.0) + amount
        if latest is None or period.started_ms is None \
                or latest - period.started_ms < self.period_ms:
            return current, None
        self._period = _Period(started_ms=latest)
        terms = self._terms(period, current)
        if terms is None:
            return current, None
        decision = decide(terms, latency_threshold=self.latency_threshold, current=current)
        return decision.choice.value, {
            "choice": decision.choice.value, "ran": sorted(period.executions),
            "split_cpu": round(decision.split_cpu, 4),
            "combine_cpu": round(decision.combine_cpu, 4),
            "combine_latency": round(decision.combine_latency, 4), "reason": decision.reason,
            "terms": {name: round(float(getattr(terms, name)), 9) for name in
                      ("T_p", "E", "W", "PW_p", "MK_p", "K_1", "L", "key_groups")}}

    def _terms(self, period: _Period, current: str) -> CostTerms | None:
        """The period's terms; ``None`` while a term was never measured, or for no rows."""
        costs = period.costs
        executions, partials = costs.get("executions", 0.0), costs.get("partials", 0.0)
        self._handoff_seconds += costs.get("handoff_seconds", 0.0)
        self._handoffs += costs.get("handoffs", 0.0)
        if period.executions == {Execution.SPLIT.value} and partials > 0:
            self._split_second_per_partial = costs.get("consolidate_seconds", 0.0) / partials
        per_partial = self._split_second_per_partial
        if executions <= 0 or partials <= 0 or per_partial is None or period.rows <= 0:
            return None
        seen = PeriodObservation(
            rows=period.rows, seconds_per_row=costs.get("compute_seconds", 0.0) / executions,
            windows=self.windows, panes_per_window=self.panes_per_window,
            moved_key_groups=period.moved, seconds_per_partial=per_partial,
            move_seconds=self._handoff_seconds / self._handoffs if self._handoffs else 0.0)
        # Split, partials arrive once per stream and pane; combined, once per window instead.
        streams = partials / self.panes_per_window if current == Execution.SPLIT.value else \
            partials / max(1, self.windows) / self.panes_per_window
        return estimate_terms([seen], key_groups=max(1, round(streams)))


def policy_for(spec: PipelineSpec) -> ExecutionPolicy:
    """The execution policy ``spec`` asks for."""
    return CostModel.for_spec(spec) if spec.execution == "auto" else Fixed(spec.execution)

