"""The round simulator as a :class:`~elastream.control.runtime.Runtime`: a micro-batch a round.

A :class:`RoundsRuntime` runs the job of an :class:`~elastream.runtimes.sim.rounds_instance.
Instance` (its key groups on its nodes, one slot per node) one statistics period at a time:
:meth:`~RoundsRuntime.period` runs a period under the latest routing version, and
:meth:`~RoundsRuntime.observe` reports it once, as a micro-batch is reported on Spark. The
control loop (:class:`~elastream.control.loop.ControlLoop`) plans on that observation and
publishes its next version, which routes the next period. :mod:`elastream.runtimes.sim.rounds`
drives its rounds this way, with the loop the Spark runtime uses.

What it models, per period:

* ``key_group_load``: each key group's load as its node measures it — its own plus
  ``serialisation`` × the traffic it sends to or receives from key groups on other nodes
  (:func:`elastream.core.traffic.key_group_loads`); ``slot_load``: their sum per node;
* ``traffic``: the instance's rows ``(kg_from, kg_to, rate)``, each sender's rate scaled by
  its load now over its load in the instance;
* ``state_size`` and ``capacity``: the instance's, for planners with a migration-cost budget
  or nodes of different speeds;
* routing versions, every one published kept in memory (:meth:`~RoundsRuntime.routing`
  reads any of them); the control loop's durable state (a scaling target) as a dict in memory.

With a ``service_rate`` μ it also models the slots' service times, as Spark measures them
(:class:`~elastream.core.load.ServiceTimes`, what autoscaling reads): a period is one second in
which node ``i`` is busy for its load over ``μ·capacity[i]``, plus ``overhead_seconds`` a period
that more nodes do not shorten.

What it does not model: records — a period's ``input_rows`` and ``valid_rows`` count its key
groups, so the loop plans on every period, and no record is late or dead-lettered; time —
``batch_ms`` is 0 and ``watermark`` ``None``; split hot keys — records route by key group (a
table's ``hot_keys`` are kept, not simulated); state transfer — a published version moves every
key group's state at once, so :meth:`~RoundsRuntime.in_flight` is always empty; failures —
:meth:`~RoundsRuntime.restart` has nothing to restart; changing loads — the caller sets
:attr:`~RoundsRuntime.load` between periods (e.g. with
:func:`~elastream.runtimes.sim.rounds_instance.drift`).

>>> from elastream.algorithms.balance import flux
>>> from elastream.control.controller import Controller
>>> from elastream.control.loop import ControlLoop
>>> from elastream.runtimes.sim.rounds_instance import albic_instance
>>> job = RoundsRuntime(albic_instance(nodes=4, key_groups=16, varies=60, seed=0))
>>> loop = ControlLoop(job, Controller(flux.plan, flux.FluxOptions(max_moves=1)), round_spec(16))
>>> for batch in (1, 2, 3):
...     _ = job.period(batch)
...     r = loop.step()
...     print(batch, r["observed_routing_version"], r["moves"], r["routing_version"],
...           r["max_mean_slot_load"])
1 0 1 1 1.3076
2 1 1 2 1.1075
3 2 0 2 1.054
>>> job.routing(1).version, job.observe() is None, job.in_flight()
(1, True, set())
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from elastream.control.runtime import BatchObservation
from elastream.core import rules
from elastream.core.aggregates import AggSpec
from elastream.core.load import ServiceTimes
from elastream.core.routing import RoutingTable
from elastream.core.spec import PipelineSpec
from elastream.core.traffic import key_group_loads, slot_loads
from elastream.core.windows import WindowSpec
from elastream.runtimes.sim.rounds_instance import Instance

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def round_spec(num_key_groups: int) -> PipelineSpec:
    """The job the control loop drives in a round: one operator of ``num_key_groups``.

    The loop reads of a spec its key groups, its operators and its scale events (none here);
    the columns, the window and the aggregate are placeholders, and so is ``slots``: the
    runtime's nodes are its slots. 1 ≤ ``num_key_groups`` ≤ 32768, as for every job.

    >>> round_spec(200).total_key_groups, round_spec(200).scales
    (200, False)
    """
    return PipelineSpec.of(time_col="time", key_col="key", aggs=(AggSpec("count"),),
                           windows=(WindowSpec(1000, 1000),), slots=1,
                           key_groups=num_key_groups)


class RoundsRuntime:
    """An instance's job on the simulated nodes, observed one period at a time (module doc).

    ``node_ids`` and ``capacity`` list the nodes in slot order; ``load`` (each key group's own
    load this period), ``state`` and ``serialisation`` (load per unit of cross-node traffic at
    each end, ≥ 0) are the rest of the cluster. Nodes may be added or dropped between periods
    (ALBIC's Algorithm 1 in :mod:`elastream.runtimes.sim.rounds`) by changing ``node_ids`` and
    ``capacity`` and publishing a version of as many slots.
    """

    def __init__(self, instance: Instance, *, serialisation: float = 0.0,
                 service_rate: float | None = None, overhead_seconds: float = 0.0) -> None:
        rules.number("serialisation", serialisation)
        if service_rate is not None:
            rules.number("service_rate", service_rate, above=0)
        self.serialisation = serialisation
        self.service_rate, self.overhead_seconds = service_rate, overhead_seconds
        self.node_ids = list(instance.node_ids)
        self.capacity = instance.capacity.astype(np.float64)
        self.load = instance.load.astype(np.float64)
        self.base_load = self.load.copy()
        self.state = instance.state_size.astype(np.float64)
        self.base_traffic = instance.traffic
        initial = RoutingTable(0, tuple(instance.slot_of.tolist()), instance.num_nodes)
        self._versions = {0: initial}
        self._latest = initial
        self._slot_of = initial.as_array()
        self._pending: BatchObservation | None = None
        self._saved: dict[str, Any] | None = None

    @property
    def slot_of(self) -> I64:
        """Each key group's node (slot) under the latest version."""
        return self._slot_of

    # ------------------------------------------------------------------ measurement

    def traffic(self) -> F64:
        """Traffic rows at this period's loads: a sender's rate follows its load."""
        rows = self.base_traffic.copy()
        if rows.size:
            src = rows[:, 0].astype(np.int64)
            base = self.base_load[src]
            rows[:, 2] *= np.divide(self.load[src], base, out=np.ones_like(base),
                                    where=base > 0)
        return rows

    def node_loads(self, slot_of: I64, traffic: F64) -> F64:
        """Each node's load were the key groups on ``slot_of``, serialisation included."""
        return slot_loads(slot_of, self.load, traffic, serialisation=self.serialisation,
                          num_slots=len(self.node_ids))

    def observation(self, batch_id: int, traffic: F64) -> BatchObservation:
        """What a controller measures now, reported as micro-batch ``batch_id``."""
        measured = key_group_loads(self.slot_of, self.load, traffic,
                                   serialisation=self.serialisation)
        rows = len(measured)
        record = {"batch_id": batch_id, "batches": 1, "first_batch_id": batch_id,
                  "input_rows": rows, "valid_rows": rows, "dead_letter_rows": 0,
                  "late_rows": 0, "batch_ms": 0, "watermark": None,
                  "observed_routing_version": self._latest.version}
        slot_load = self.node_loads(self.slot_of, traffic)
        service = None if self.service_rate is None else ServiceTimes(
            1.0, slot_load / (self.service_rate * self.capacity), rows=float(slot_load.sum()),
            overhead_seconds=self.overhead_seconds)
        return BatchObservation(record, measured, slot_load, traffic=traffic,
                                state_size=self.state, capacity=self.capacity.copy(),
                                service=service)

    def period(self, batch_id: int) -> BatchObservation:
        """Run one statistics period as micro-batch ``batch_id``; :meth:`observe` reports it."""
        self._pending = self.observation(batch_id, self.traffic())
        return self._pending

    # ------------------------------------------------------------------ Runtime

    def observe(self) -> BatchObservation | None:
        """The last period, once (``None`` until the next :meth:`period`)."""
        observed, self._pending = self._pending, None
        return observed

    def routing(self, version: int | None = None) -> RoutingTable:
        """A published version (default: the latest)."""
        return self._latest if version is None else self._versions[version]

    def publish(self, table: RoutingTable) -> None:
        """Make ``table`` the latest version: it routes the next period.

        It must cover the job's key groups, name one slot per node and have a newer version
        than the latest (publishing the latest again changes nothing).
        """
        if table.num_key_groups != len(self.load) or table.num_slots != len(self.node_ids):
            raise ValueError(f"routing version {table.version} has {table.num_key_groups} key "
                             f"groups and {table.num_slots} slots; the job has {len(self.load)} "
                             f"key groups on {len(self.node_ids)} nodes")
        if table == self._latest:
            return
        if table.version <= self._latest.version:
            raise ValueError(f"cannot publish routing version {table.version}: "
                             f"version {self._latest.version} is already published")
        self._versions[table.version] = table
        self._latest = table
        self._slot_of = table.as_array()

    def in_flight(self) -> set[int]:
        """None: the simulator moves a key group's state with its routing version, at once."""
        return set()

    def hold_slots(self, slots: int) -> dict[str, int]:
        """Nothing to hold: the simulated cluster's nodes are fixed."""
        return {}

    def load_state(self) -> dict[str, Any] | None:
        """The control loop's state, kept in memory."""
        return self._saved

    def save_state(self, state: dict[str, Any]) -> None:
        """Replace the control loop's state."""
        self._saved = dict(state)

    def restart(self) -> None:
        """Nothing to do: no query runs between periods."""
