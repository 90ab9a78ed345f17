"""The Spark runtime the control loop drives: observe a job's queries, publish its routing.

Implements :class:`~elastream.control.runtime.Runtime` over a job's state folder (routing
store, migration store) and its queries' progress reports. Nothing here waits for a
micro-batch: the queries run back to back, and each poll reads the reports that arrived.

Housekeeping that must follow commits, done on each observation of newly committed batches:

* hand-off files whose receipt was seen at the previous observation are deleted — every batch
  that could still read them (the receiver's, running then at the latest) has committed since;
* routing bindings of batches long committed are forgotten (Spark never re-runs them), and
  the routing history is compacted to what the batches after them can still ask
  (:meth:`~elastream.stores.routing_history.RoutingHistory.compacted`, published for the
  workers); versions older than the previous compaction's base are deleted.

What the slots took, for planners that size them (elasticutor): each observation from the
second on carries :class:`~elastream.core.load.ServiceTimes` — the span since the previous
one, each slot's busy seconds (:mod:`.busy`), the rows, and the per-batch time beyond the
busiest slot's work. The service rate is folded over recent steps (:data:`SERVICE_DECAY`), the
overhead is the median of the last :data:`OVERHEAD_STEPS` steps'.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
from pyspark.sql import SparkSession

from elastream.control.runtime import BatchObservation
from elastream.core.load import ServiceTimes
from elastream.core.routing import RoutingTable
from elastream.core.spec import PipelineSpec
from elastream.runtimes.spark.busy import BusyClock
from elastream.runtimes.spark.costs import CostClock
from elastream.runtimes.spark.executors import ExecutorPool
from elastream.runtimes.spark.pipeline import StatePaths
from elastream.runtimes.spark.progress import MetricNames, ProgressPoller, observation
from elastream.stores.migration_store import MigrationStore
from elastream.stores.routing_history import RoutingHistory, compact_history
from elastream.stores.routing_store import RoutingStore

SERVICE_DECAY = 0.7
"""Weight of the past in the service rate and overhead the planner sees (per step): a batch's
time is noisy (a shared machine, a garbage collection), the service it measures is not."""
OVERHEAD_STEPS = 8
"""The per-batch overhead the planner sees is the median of this many steps': a batch slowed by
an elasticity operation itself (an executor's state partitions loading from the checkpoint, a
hand-off) must not make the model ask for still more slots."""
KEEP_BINDINGS = 100
"""Bindings kept behind the last committed batch (Spark's own ``minBatchesToRetain``)."""


class SparkRuntime:
    """A job's routing and migration stores, and the reports of its queries."""

    def __init__(self, spark: SparkSession, spec: PipelineSpec, state: StatePaths,
                 names: MetricNames, restart: Callable[[], None] | None = None, *,
                 busy: Any = None, costs: Any = None,
                 executors: ExecutorPool | None = None) -> None:
        self.spec = spec
        self.names = names
        self.clock = None if busy is None else BusyClock(busy)
        self.costs = None if costs is None else CostClock(costs)
        self.executors = executors
        self._last_end: float | None = None
        self._recent_service: ServiceTimes | None = None
        self._overheads: deque[float] = deque(maxlen=OVERHEAD_STEPS)
        self.store = RoutingStore(state.routing)
        self.migration = MigrationStore(state.migration)
        self.poller = ProgressPoller(spark, names)
        self._restart = restart
        self._history: RoutingHistory | None = None
        self._receipts: set[tuple[int, int]] = set()
        self._dead_waiting: list[dict[str, Any]] = []

    def observe(self) -> BatchObservation | None:
        """The batches both queries completed since the last call.

        The dead-letter query's reports wait for the next of the results query, so that each
        record is a results micro-batch's; they are recorded alone only once the results
        query is no longer running (the job's queries were stopped).
        """
        reports = self.poller.poll()
        results = reports.get("results", [])
        dead = self._dead_waiting + reports.get("dead_letter", [])
        if not results and (not dead or self.poller.results_active()):
            self._dead_waiting = dead
            return None
        self._dead_waiting = []
        if results:
            self.migration.collect(self._receipts)
            self._receipts = self.migration.receipts()
            below = results[-1]["batchId"] - KEEP_BINDINGS
            self.store.forget_bindings(below=below)
            self._compact(below)
        observed = observation(self.spec, self.names, results, dead)
        if results and self.costs is not None:
            costs = self.costs.lap()
            observed = replace(observed, costs=costs, record={
                **observed.record, "stage_costs": {k: round(v, 4) for k, v in costs.items()}})
        measured = self._service(results, observed.slot_load) if results else None
        if measured is None:
            return observed
        recent = self._recent_service = measured.folded(self._recent_service, SERVICE_DECAY)
        self._overheads.append(measured.overhead_seconds)
        planned = replace(recent, overhead_seconds=float(np.median(self._overheads)))
        rate = recent.service_rate
        record = {**observed.record, "interval_seconds": round(measured.interval_seconds, 3),
                  "busy_seconds": [round(float(b), 3) for b in measured.busy_seconds],
                  "overhead_seconds": round(measured.overhead_seconds, 3),
                  "service_rate": None if rate is None else round(rate, 1)}
        return replace(observed, record=record, service=planned)

    def _service(self, results: list[dict[str, Any]], slot_load: np.ndarray
                 ) -> ServiceTimes | None:
        """How long the slots worked on these batches, over the span since the last ones.

        ``None`` for the first batches a runtime sees: their busy time holds the workers'
        start, and there is no earlier end to measure the span from.
        """
        if self.clock is None:
            return None
        busy = self.clock.lap()[:self.spec.scaling.max_slots]
        end = _ended(results[-1])
        previous, self._last_end = self._last_end, end
        if previous is None or end <= previous:
            return None
        batch_seconds = sum(int(p["durationMs"].get("triggerExecution", 0))
                            for p in results) / 1000
        overhead = max(0.0, batch_seconds - float(busy.max(initial=0.0))) / len(results)
        return ServiceTimes(end - previous, busy, rows=float(slot_load.sum()),
                            batches=len(results), overhead_seconds=overhead)

    def _compact(self, below: int) -> None:
        """Publish the routing history compacted for batches ``below`` and after."""
        if below >= 0:
            self._history = compact_history(self.store, below, self._history)

    def routing(self, version: int | None = None) -> RoutingTable:
        """A published version (default: the latest)."""
        if version is not None:
            return self.store.get(version)
        table = self.store.current()
        if table is None:
            raise ValueError(f"no routing version published in {self.store.folder}")
        return table

    def publish(self, table: RoutingTable) -> None:
        """Publish ``table``; the first micro-batch not yet bound routes by it."""
        self.store.publish(table)

    def in_flight(self) -> set[int]:
        """Key groups whose last move's state has not been handed off yet.

        Once it has (the hand-off file exists), the key group may move on: its receiver
        forwards the state with the partials that waited there.
        """
        self._history = RoutingHistory.load(self.store, self._history)
        latest = self._history.last_moves()
        done = self.migration.acknowledged()
        return {int(kg) for kg in np.flatnonzero(latest)
                if (int(latest[kg]), int(kg)) not in done
                and not self.migration.handed_off(int(latest[kg]), int(kg))}

    def load_state(self) -> dict[str, Any] | None:
        """The scaling target, kept in the migration store."""
        return self.migration.target()

    def save_state(self, state: dict[str, Any]) -> None:
        """Replace the scaling target."""
        self.migration.save_target(state)

    def hold_slots(self, slots: int) -> dict[str, int]:
        """Hold Spark executors for ``slots`` busy slots (a job given ``spark_executors``)."""
        return {} if self.executors is None else self.executors.hold(slots)

    def restart(self) -> None:
        """Stop the job's queries and start them again (only a job that owns its queries)."""
        if self._restart is None:
            raise RuntimeError("this job's queries are the user's: elastream cannot restart them")
        self._restart()


def _ended(progress: dict[str, Any]) -> float:
    """When a progress report's micro-batch ended, in seconds since the epoch."""
    started = datetime.fromisoformat(str(progress["timestamp"]).replace("Z", "+00:00"))
    return started.timestamp() + int(progress["durationMs"].get("triggerExecution", 0)) / 1000
