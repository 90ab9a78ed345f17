r"""Autoscale: the slot count a job needs, from what it measures, with hysteresis and a cool-down.

The model is the ``elasticutor`` planner's (Elasticutor §4.1 on a micro-batch engine,
:mod:`elastream.algorithms.balance.elasticutor`) applied to the whole job instead of to each
elastic executor, so that any planner's job can size itself while its planner balances:

* ``λ``, rows/s arriving: the observation's rows over the wall-clock span they arrived in
  (this observation's alone: :attr:`~elastream.core.load.ServiceTimes.arrival_rate`, while
  ``μ`` and ``O`` fold in older observations);
* ``μ``, rows one slot processes per second of its busy time, pooled over the slots, and ``O``,
  a batch's seconds beyond its busiest slot's work (scheduling, shuffles, commits: more slots
  do not shorten them) — both as the runtime measures them
  (:class:`~elastream.core.load.ServiceTimes`);
* slots keep batches within the target ``T`` when each processes its share within ``T − O``:
  at the effective rate ``μ_eff = μ·(1 − O/T)`` the fewest slots that keep up are
  ``⌊λ/μ_eff⌋ + 1`` (the stable minimum of the paper's M/M/k model, whose queueing delay is
  negligible against ``T`` at these rates), within ``[fewest, most]``. With ``O ≥ T`` no slot
  count meets the target: the job holds ``most``.

Rows that wait for the job (a watched folder's or a replay's files not yet read: the
*backlog*, where the runtime knows it) add ``backlog / (BACKLOG_TARGETS·T)`` to ``λ``: the
slots should work it off within ``BACKLOG_TARGETS`` = 10 micro-batches of the target length.
Without a backlog, a job whose rows wait in front of it measures ``λ`` as its own throughput,
so the rule still drives its batches toward ``T``.

**Cores.** The model's slots are Elasticutor's cores: servers that work at once. A job whose
cores do not grow with its slots (``local[N]``, a cluster without executors that follow the
slots) gains no parallelism from more slots than cores: the model asks for at most
``max(fewest, cores)`` there.

**Hysteresis and cool-down**, so it never flaps: a scale-out happens as soon as a step needs
more slots; a scale-in only after ``patience`` steps in a row all needed fewer, to the most any
of them needed; after a scale event, ``cool_down`` steps pass before the next decision (the
control loop also waits until the event's moves are done). Every step's decision is a record
with its inputs and its reason (:meth:`Autoscaler.decide`).

>>> import numpy as np
>>> scaler = Autoscaler(AutoscaleOptions(fewest=1, most=8, latency_target=2.0, patience=2,
...                                      cool_down=1))
>>> service = ServiceTimes(1.0, np.array([0.8, 0.8]), rows=1600.0, overhead_seconds=1.0)
>>> scaler.decide(2, service)["decision"]  # λ 1600/s, μ 1000/s, μ_eff 500/s: 4 slots
'out'
>>> scaler.decide(4, service)["reason"]
'cooling down (1 more step)'
>>> calm = ServiceTimes(1.0, np.array([0.1] * 4), rows=400.0, overhead_seconds=1.0)
>>> [scaler.decide(4, calm)["decision"] for _ in range(2)]  # λ 400/s needs 1 slot, twice in a row
['hold', 'in']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from elastream.core import rules
from elastream.core.load import ServiceTimes

BACKLOG_TARGETS = 10
"""Work off a backlog within this many micro-batches of the target length."""


@dataclass(frozen=True)
class AutoscaleOptions:
    """Bounds and pace of :class:`Autoscaler`.

    ``fewest``, ``most``: the slot counts it may choose (1 ≤ fewest ≤ most).
    ``latency_target``: T, the micro-batch duration to keep within, in seconds (default 5).
    ``patience``: steps in a row that must need fewer slots before a scale-in (default 3).
    ``cool_down``: steps after a scale event before the next decision (default 2).
    """

    fewest: int
    most: int
    latency_target: float = 5.0
    patience: int = 3
    cool_down: int = 2

    def __post_init__(self) -> None:
        rules.integer("fewest", self.fewest)
        rules.integer("most", self.most)
        rules.bounds("autoscale", (self.fewest, self.most))
        rules.integer("patience", self.patience)
        rules.integer("cool_down", self.cool_down, low=0)
        rules.number("latency_target", self.latency_target, above=0, unit="seconds")


@dataclass
class Autoscaler:
    """Decides, step by step, whether a job's slot count should change (module doc)."""

    options: AutoscaleOptions
    _lower: list[int] = field(default_factory=list)
    _cooling: int = 0

    def needed(self, service: ServiceTimes | None, backlog: int = 0,
               cores: int | None = None) -> tuple[int | None, dict[str, Any]]:
        """The slots the model asks for (``None``: nothing measured yet), and its inputs.

        ``backlog``: rows waiting for the job (module doc). ``cores``: the tasks the job runs
        at once when that does not grow with its slots (``local[N]``, or a cluster's executors
        that do not follow the slots), else ``None``: slots beyond them add no parallelism, so
        the model asks for no more (and says so with the input ``cores``).
        """
        opts = self.options
        mu = None if service is None else service.service_rate
        if service is None or mu is None:
            return None, {"backlog_rows": backlog}
        rate = service.arrival_rate + backlog / (BACKLOG_TARGETS * opts.latency_target)
        overhead = service.overhead_seconds
        inputs: dict[str, Any] = {
            "rate": round(rate, 1), "backlog_rows": backlog, "service_rate": round(mu, 1),
            "overhead_seconds": round(overhead, 3), "latency_target": opts.latency_target}
        if overhead >= opts.latency_target:
            need = opts.most
        else:
            effective = mu * (1.0 - overhead / opts.latency_target)
            inputs["effective_rate"] = round(effective, 1)
            need = min(opts.most, max(opts.fewest, math.floor(rate / effective) + 1))
        if cores is not None and need > max(opts.fewest, cores):
            inputs["cores"] = cores
            need = max(opts.fewest, cores)
        return need, inputs

    def decide(self, slots: int, service: ServiceTimes | None, backlog: int = 0,
               cores: int | None = None) -> dict[str, Any]:
        """Decide for a job of ``slots`` slots now; its record.

        ``backlog``, ``cores``: as in :meth:`needed`. ``decision``: ``out``, ``in`` or
        ``hold``; ``slots``: the count to scale to (or the same); ``needed``: the model's
        count; the model's inputs; ``reason``.
        """
        need, inputs = self.needed(service, backlog, cores)
        record: dict[str, Any] = {"slots_now": slots, "needed": need, **inputs,
                                  "decision": "hold", "slots": slots}
        if self._cooling > 0:
            self._cooling -= 1
            return {**record, "reason": f"cooling down ({self._cooling + 1} more step"
                                        f"{'s' if self._cooling else ''})"}
        if need is None:
            return {**record, "reason": "no service rate measured yet"}
        if "cores" in inputs and need > slots:
            return self._scaled({**record, "decision": "out", "slots": need,
                                 "reason": f"{need} slots, one per core the job runs on: more "
                                           "add no parallelism"})
        if inputs.get("overhead_seconds", 0.0) >= self.options.latency_target \
                and need > slots:
            return self._scaled({**record, "decision": "out", "slots": need,
                                 "reason": "a batch's fixed time exceeds the target: the most "
                                           "slots"})
        if need > slots:
            return self._scaled({**record, "decision": "out", "slots": need,
                                 "reason": f"{need} slots keep batches within the target"})
        if need >= slots:
            self._lower.clear()
            return {**record, "reason": "the slots keep up"}
        self._lower.append(need)
        if len(self._lower) < self.options.patience:
            return {**record, "reason": f"fewer slots needed {len(self._lower)} of "
                                        f"{self.options.patience} steps in a row"}
        to = max(self._lower)
        return self._scaled({**record, "decision": "in", "slots": to,
                             "reason": f"{to} slots kept up for {self.options.patience} steps"})

    def _scaled(self, record: dict[str, Any]) -> dict[str, Any]:
        self._lower.clear()
        self._cooling = self.options.cool_down
        return record
