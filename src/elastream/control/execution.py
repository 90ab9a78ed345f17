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
* ``K_1``: the consolidate stage's seconds per partial it received, while split; while
  combined, its seconds per window partial over the ratio below;
* ``key_groups``: the streams of partials, pane partials per period over ``PW_p``. Enorm's
  compute stage emits one partial per key group and pane; ours one per key, pane and slot, so
  this is the number that makes ``PW_p·K_1·#keygroups`` the period's consolidation cost. The
  pane stage counts the pane partials even when combined (``pane_partials``);
* ``MK_p``: key groups the period's plans moved; ``L``: seconds of hand-off (writing and taking
  over the state) per key group handed off, over the job so far.

One term is not Enorm's: the paper prices combined execution as ``T_p·W·E`` with no
consolidation, as its combined operator holds its windows. Here the consolidate stage still
merges the window partials, so once the job has run a period combined right after one split,
combine's cost adds ``K_c·window partials`` (``combine_consolidation``), the window partials
counted by the pane stage in either execution (``window_partials``). ``K_c`` is ``K_1`` times
the ratio of the consolidate stage's seconds per window partial to its seconds per pane partial
over those two periods; the ratio, not either cost, carries over to later periods, because each
cost is a period's whole stage time over its partials: a batch's fixed cost counts per partial,
and with few partials comes out high (a cost measured over few keys says little about many
keys; when the keys grew from 64 to 20,000 in ``benchmarks/enorm/live_switch.py`` the costs
fell 5–38×, their ratio moved 22–29 %). Until then the model is the paper's, which is what makes
a split job try combine at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from elastream.algorithms.windows.split_combine import (
    CostTerms,
    Execution,
    PeriodObservation,
    decide,
    estimate_terms,
)
from elastream.control.runtime import BatchObservation, event_millis
from elastream.core.routing import RoutingTable
from elastream.core.spec import PipelineSpec
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

    Two windows over 10 panes; a period of 200k records whose pane stage took 2 s (``E`` =
    10 µs) and 4,000 partials whose consolidation took 8 s (``K_1`` = 2 ms, 400 streams):
    split costs ``T·E + PW·K_1·streams`` = 2 + 8 s, combine ``T·W·E`` = 4 s. Combined, the
    next period's 16,000 window partials take 12 s to consolidate (``K_c`` = 0.75 ms, 0.375
    ``K_1``): combine now costs 4 + 12 s, and the job goes back to split.

    >>> import numpy as np
    >>> policy = CostModel(windows=2, panes_per_window=10, period_ms=3_600_000,
    ...                    latency_threshold=math.inf)
    >>> routing = RoutingTable.hashed(8, 2)
    >>> def seen(time, rows, costs):
    ...     record = {"batch_id": 0, "valid_rows": rows, "max_event_time": time}
    ...     return BatchObservation(record, np.zeros(8), np.zeros(2), costs=costs)
    >>> split = dict(compute_seconds=1.0, executions=100_000, consolidate_seconds=4.0,
    ...              partials=2_000, pane_partials=2_000, window_partials=8_000)
    >>> policy(seen("2001-01-01T00:00:00Z", 100_000, split), routing, 0)
    ('split', None)
    >>> choice, decision = policy(seen("2001-01-01T01:00:00Z", 100_000, split), routing, 0)
    >>> choice, decision["split_cpu"], decision["combine_cpu"]
    ('combine', 10.0, 4.0)
    >>> combined = dict(split, compute_seconds=2.0, executions=200_000,
    ...                 consolidate_seconds=6.0, partials=8_000)
    >>> combining = replace(routing, execution="combine")
    >>> policy(seen("2001-01-01T01:30:00Z", 100_000, combined), combining, 0)
    ('combine', None)
    >>> choice, decision = policy(seen("2001-01-01T02:00:00Z", 100_000, combined), combining, 0)
    >>> choice, decision["split_cpu"], decision["combine_cpu"]
    ('split', 10.0, 16.0)
    """

    windows: int
    panes_per_window: int
    period_ms: int
    latency_threshold: float = math.inf
    _period: _Period = field(default_factory=_Period)
    _last_partial: tuple[str, float] | None = None
    _combine_per_split_partial: float | None = None
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
                   latency_threshold=math.inf if spec.windowing.latency_threshold is None
                   else float(spec.windowing.latency_threshold))

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
                      ("T_p", "E", "W", "PW_p", "MK_p", "K_1", "L", "key_groups",
                       "combine_consolidation")}}

    def _terms(self, period: _Period, current: str) -> CostTerms | None:
        """The period's terms; ``None`` while a term was never measured, or for no rows."""
        costs = period.costs
        executions = costs.get("executions", 0.0)
        self._handoff_seconds += costs.get("handoff_seconds", 0.0)
        self._handoffs += costs.get("handoffs", 0.0)
        per_partial = self._per_partial(period, current)
        panes = costs.get("pane_partials", 0.0)
        if executions <= 0 or panes <= 0 or per_partial is None or period.rows <= 0:
            return None
        ratio = self._combine_per_split_partial
        split_k, combine_k = ((per_partial, per_partial * ratio if ratio is not None else 0.0)
                              if current == Execution.SPLIT.value else
                              (per_partial / ratio if ratio else per_partial, per_partial))
        seen = PeriodObservation(
            rows=period.rows, seconds_per_row=costs.get("compute_seconds", 0.0) / executions,
            windows=self.windows, panes_per_window=self.panes_per_window,
            moved_key_groups=period.moved, seconds_per_partial=split_k,
            move_seconds=self._handoff_seconds / self._handoffs if self._handoffs else 0.0)
        terms = estimate_terms(
            [seen], key_groups=max(1, round(panes / self.panes_per_window)))
        return replace(terms,
                       combine_consolidation=combine_k * costs.get("window_partials", 0.0))

    def _per_partial(self, period: _Period, current: str) -> float | None:
        """The consolidate stage's seconds per partial over ``period`` (``None``: not measured).

        Run one way all period long; a period run the other way just before sets the ratio of
        a window partial's cost to a pane partial's (``K_c / K_1``), which is steadier than
        either: a batch's fixed cost counts per partial, high with few partials.
        """
        partials = period.costs.get("partials", 0.0)
        if len(period.executions) != 1 or partials <= 0:
            self._last_partial = None
            return None
        measured = period.costs.get("consolidate_seconds", 0.0) / partials
        last, self._last_partial = self._last_partial, (current, measured)
        if last is not None and last[0] != current and last[1] > 0 and measured > 0:
            by = {current: measured, last[0]: last[1]}
            self._combine_per_split_partial = (by[Execution.COMBINE.value]
                                               / by[Execution.SPLIT.value])
        return measured


def policy_for(spec: PipelineSpec) -> ExecutionPolicy:
    """The execution policy ``spec`` asks for."""
    execution = spec.windowing.execution
    return CostModel.for_spec(spec) if execution == "auto" else Fixed(execution)

