"""The control loop: observe → plan → publish → record, beside a job whose batches run freely.

One loop serves every runtime (:class:`~elastream.control.runtime.Runtime`): the Spark runtime,
where micro-batches run back to back while the loop plans, and the simulators. Each step takes
what the runtime observed since the last step (one or more micro-batches), and

* with a balancing planner: plans on the observed key-group loads and publishes the next
  routing version (Enorm §4.5, ALBIC Alg. 1, FISH's hot-key splits);
* with a planner that sizes the slots to the load (``elasticutor``): asks the runtime to hold
  cores for the slots the plan keeps busy (:meth:`Runtime.hold_slots`; Spark executors on a
  cluster);
* in a job that scales (``scale_at``, or :meth:`ControlLoop.request_scale`) with a planner
  that keeps key-group ranges (``hash``): plans the scale event with Ding et al.'s migration
  planner once it is due and moves the key groups that change owner in mini-migrations of at
  most ``max_moves`` (§3), or all at once with a restart (``scale_mode="stop"``);
* in a job that scales with a balancing planner: a scale-out adds empty slots the planner
  fills, a scale-in marks the least-loaded slots as leaving; a planner that takes them
  (ALBIC's integrated scale-in) empties them while it balances, the others get them drained
  first (:mod:`elastream.control.slot_set`). The next event waits until no slot is leaving.

Either way a key group whose last move's state is still in flight does not move again
(:meth:`Runtime.in_flight`); the version published takes effect from the first micro-batch
not yet bound to one, so a plan that is ready late simply applies a batch later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from elastream.algorithms.balance.scale_in import drain
from elastream.control.autoscale import Autoscaler
from elastream.control.controller import Controller
from elastream.control.execution import policy_for
from elastream.control.planners import autoscale_options, can
from elastream.control.runtime import BatchObservation, Runtime, event_millis
from elastream.control.scaling import next_moves, scale_target
from elastream.control.slot_set import SlotSet, lifted, off_slots, snapshot_view, view
from elastream.core import registry, rules
from elastream.core.errors import OptionError
from elastream.core.plan import Capability, Plan, PlanStatus
from elastream.core.routing import RoutingTable
from elastream.core.spec import PipelineSpec
from elastream.core.traffic import collocation_factor, cross_traffic

SCALE_LOAD_DECAY = 0.5
"""Weight of the past in the key-group loads a scale event is planned on (per step)."""


class ControlLoop:
    """Drives one job: a step per observation, in the caller's thread or its own."""

    def __init__(self, runtime: Runtime, controller: Controller, spec: PipelineSpec, *,
                 on_record: Callable[[dict[str, Any]], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 scales: bool | None = None,
                 backlog: Callable[[], int] | None = None,
                 cores: int | None = None) -> None:
        """Drive ``spec``'s job on ``runtime``, planning with ``controller``.

        ``scales``: the job may change its slot count (default: whether ``spec`` scales; a job
        started to scale keeps scaling when resumed). ``backlog``: the rows waiting for the
        job, where the caller knows it (an input of ``autoscale``); ``cores``: the tasks
        the job runs at once, where that does not grow with its slots (autoscale asks for no
        more slots: :meth:`~elastream.control.autoscale.Autoscaler.needed`).
        """
        self.backlog = backlog
        self.cores = cores
        self.scales = spec.scales if scales is None else scales
        self.by_ranges = self.scales and can(spec.routing.planner, Capability.SCALE_BY_RANGES)
        self.takes_mark = can(spec.routing.planner, Capability.TAKE_SCALE_IN_MARK) \
            and spec.scaling.scale_in == "integrated"
        self._slots: SlotSet | None = None
        self.autoscaler = Autoscaler(autoscale_options(spec)) if spec.scaling.autoscale else None
        self.runtime = runtime
        self.controller = controller
        self.spec = spec
        self.on_record = on_record
        self.clock = clock
        self.records: list[dict[str, Any]] = []
        self._recent = np.zeros(spec.total_key_groups)
        self._requested: list[int] = []
        self._lock = threading.Lock()
        self._last = clock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._latest_event_ms: int | None = None
        self._key_names: dict[int, str] = {}
        self.execution = controller.execution or policy_for(spec)

    # -- driving ----------------------------------------------------------------------------
    def request_scale(self, slots: int) -> None:
        """Scale to ``slots`` slots once the migration under way (if any) is done."""
        rules.integer("slots", slots, high=self.spec.scaling.max_slots)
        if not self.scales:
            raise OptionError("max_slots", "must exceed slots for a job to scale",
                              self.spec.scaling.max_slots)
        with self._lock:
            self._requested.append(slots)

    def start(self, interval: float = 0.2) -> None:
        """Run steps in a daemon thread until :meth:`stop`.

        ``interval``: seconds between looks while nothing new was observed (a look asks Spark
        for each query's last progress; every 50 ms it cost the driver ~5 % of a core).
        """
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(interval,),
                                        name="elastream-control", daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        try:
            while not self._stop.is_set():
                if self.step() is None:
                    self._stop.wait(interval)
        except BaseException as error:  # reported by stop() and by the job
            self.error = error

    def stop(self) -> None:
        """Stop the thread after its current step; re-raise an error a step raised."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.error is not None:
            raise self.error

    def drain(self) -> None:
        """Take every observation the runtime still has (after the job's queries ended)."""
        while self.step() is not None:
            pass

    # -- one step ---------------------------------------------------------------------------
    def step(self) -> dict[str, Any] | None:
        """Observe, plan, publish and record once; ``None`` when nothing new was observed."""
        observed = self.runtime.observe()
        if observed is None:
            return None
        now = self.clock()
        record = dict(observed.record)
        routing = self.runtime.routing()
        version = record.get("observed_routing_version")
        ran_with = routing if version is None else self.runtime.routing(int(version))
        if len(self.spec.operators) > 1:
            sent = int(observed.traffic[:, 2].sum())
            record.update(
                traffic_rows=sent,
                cross_slot_rows=round(cross_traffic(ran_with.slot_of, observed.traffic)),
                collocation_factor=round(collocation_factor(ran_with.slot_of, observed.traffic),
                                         3) if sent else None)
        self._recent = observed.key_group_load + SCALE_LOAD_DECAY * self._recent
        self._key_names.update(observed.key_names)
        plan: Plan | None = None
        # A requested scale waits for observed load: the migration planner balances load.
        if observed.valid_rows > 0 or (self._requested and self._recent.sum() > 0):
            if self.by_ranges:
                routing = self._scale(record, routing, observed)
            else:
                if self.scales:
                    self._resize(record, routing, observed)
                plan, routing = self._balance(observed, routing, record)
            if self.autoscaler is not None:  # Spark executors, if the job holds them, follow
                in_use = self._slots.in_use if self._slots else set(routing.slot_of)
                record.update(self.runtime.hold_slots(len(in_use)))
        if self.spec.scaling.migration_kind == "smooth":
            record["smooth_in_transit"] = len(routing.smooth)
        routing = self._execution(record, observed, ran_with, routing, plan)
        if plan is not None and plan.slots_used is not None:
            # A planner that sizes the slots (elasticutor): hold cores for them.
            record.update(slots_used=plan.slots_used, **self.runtime.hold_slots(plan.slots_used))
        self._record(record, observed, routing, ran_with, plan, now - self._last)
        self._last = now
        return record

    def _balance(self, observed: BatchObservation, routing: RoutingTable,
                 record: dict[str, Any]) -> tuple[Plan, RoutingTable]:
        # Spark observes traffic only in a job of several operators (passed even when empty);
        # the round simulator's key groups may send traffic under a one-operator spec.
        several = len(self.spec.operators) > 1
        snapshot = observed.snapshot(traffic=several or observed.traffic.size > 0)
        slots = self._slots
        if slots is None:
            plan, routing_next = self.controller.step(snapshot, routing)
        elif slots.leaving and not self.takes_mark:
            plan = self._drain(routing, slots)
            routing_next = routing.apply_plan(plan)
        else:
            ids = slots.in_use
            options = registry.replaced(self.controller.options, {"remove": frozenset(
                ids.index(s) for s in slots.leaving)}) if self.takes_mark else None
            plan, _ = self.controller.step(snapshot_view(snapshot, ids), view(routing, ids),
                                           options=options)
            plan = lifted(plan, ids)
            routing_next = routing.apply_plan(plan)
        waiting = self.runtime.in_flight() if plan.moves else set()
        # A smooth migration's key group moves on once the old slot's windows are done.
        waiting |= set(routing.smooth_moves())
        if any(m.key_group in waiting for m in plan.moves):
            # A key group moves again only once its last hand-off was written.
            plan = replace(plan, moves=tuple(m for m in plan.moves
                                             if m.key_group not in waiting))
            routing_next = routing.apply_plan(plan)
        if self.spec.scaling.migration_kind == "smooth":
            routing_next = self._smooth(observed.record, routing, routing_next, plan)
        if routing_next is not routing:
            self.runtime.publish(routing_next)
        if slots is not None:
            self._settle(record, slots, routing_next)
        return plan, routing_next

    # -- scaling by moves (every planner but those that keep key-group ranges) -------------
    def _resize(self, record: dict[str, Any], routing: RoutingTable,
                observed: BatchObservation) -> None:
        """Start a due scale event: slots added, or marked as leaving (none may be leaving)."""
        saved = self.runtime.load_state() or {}
        if self._slots is None:
            self._slots = SlotSet(tuple(saved["active"]), tuple(saved["leaving"])) \
                if "active" in saved else SlotSet(tuple(sorted(set(routing.slot_of))))
        if self._slots.leaving:
            return
        slots, done = self._due(record, int(saved.get("events", 0)), len(self._slots.active),
                                observed)
        if slots is None:
            return
        load = np.bincount(routing.as_array(), weights=self._recent,
                           minlength=routing.num_slots)
        before = self._slots
        self._slots = before.resized(slots, load)
        self.runtime.save_state({"events": done, "active": list(self._slots.active),
                                 "leaving": list(self._slots.leaving)})
        record.update(scale_to=slots,
                      scale_plan="remove" if self.takes_mark else "drain",
                      slots_added=sorted(set(self._slots.active) - set(before.active)),
                      slots_marked=list(self._slots.leaving))

    def _due(self, record: dict[str, Any], done: int, now: int,
             observed: BatchObservation) -> tuple[int | None, int]:
        """The slot count of the event due now (``None``: none), and the scale_at events done.

        ``now``: the job's slots. A scheduled event comes first, then one asked for, then the
        autoscaler's decision (recorded, with its inputs, as ``autoscale``). Says in ``record``
        who asked (``scale_asked_by``).
        """
        scale_at = self.spec.scaling.scale_at
        if done < len(scale_at) and record["batch_id"] >= scale_at[done].batch:
            record["scale_asked_by"] = "scale_at"
            return self.spec.scaling.scale_at[done].slots, done + 1
        if self._requested and self._recent.sum() > 0:
            with self._lock:
                record["scale_asked_by"] = "request"
                return self._requested.pop(0), done
        if self.autoscaler is not None:
            decision = self.autoscaler.decide(now, observed.service,
                                              self.backlog() if self.backlog else 0,
                                              self.cores)
            record["autoscale"] = decision
            if decision["decision"] != "hold" and decision["slots"] != now:
                record["scale_asked_by"] = "autoscale"
                return int(decision["slots"]), done
        return None, done

    def _drain(self, routing: RoutingTable, slots: SlotSet) -> Plan:
        """Key groups off the leaving slots first (ALBIC's separate scale-in step)."""
        removed = ~np.isin(np.arange(routing.num_slots), slots.active)
        moves = drain(routing.as_array(), removed, max_moves=self.spec.routing.max_moves,
                      skip=self.runtime.in_flight())
        hot = off_slots(routing.hot_keys, slots.leaving, slots.active)
        return Plan(PlanStatus.FEASIBLE if moves or hot != routing.hot_keys
                    else PlanStatus.UNCHANGED, moves=moves,
                    hot_keys=None if hot == routing.hot_keys else hot,
                    details={"drained": float(len(moves))})

    def _settle(self, record: dict[str, Any], slots: SlotSet, routing: RoutingTable) -> None:
        """Drop the leaving slots the routing left empty; record the slots in use."""
        settled = slots.settled(routing)
        if settled != slots:
            saved = self.runtime.load_state() or {}
            self.runtime.save_state({**saved, "active": list(settled.active),
                                     "leaving": list(settled.leaving)})
            record["slots_gone"] = sorted(set(slots.leaving) - set(settled.leaving))
            self._slots = settled
        record.update(slots=len(settled.active), slots_active=list(settled.active),
                      slots_leaving=list(settled.leaving))

    def _execution(self, record: dict[str, Any], observed: BatchObservation,
                   ran_with: RoutingTable, routing: RoutingTable, plan: Plan | None
                   ) -> RoutingTable:
        """Split or combine for the next batches (Enorm §5.1.2); a change is a new version."""
        moved = len(plan.moves) if plan is not None else int(record.get("moves", 0))
        execution, decision = self.execution(observed, ran_with, moved)
        record["execution"] = ran_with.execution
        if decision is not None:
            record["execution_decision"] = decision
        if execution == routing.execution:
            return routing
        routing = replace(routing, version=routing.version + 1, execution=execution)
        self.runtime.publish(routing)
        return routing

    def _smooth(self, record: dict[str, Any], routing: RoutingTable, routing_next: RoutingTable,
                plan: Plan) -> RoutingTable:
        """Enorm's smooth migration (§4.5): the moves' boundaries, and the migrations done.

        A moved key group's boundary is the first pane after the latest event seen: the old
        slot keeps its windows that start before it, the new slot takes those from it on, and
        both get its partials for the longest window length (:mod:`~elastream.runtimes.spark.
        consolidate`). A migration is done once the watermark passed its boundary plus the
        longest window the consolidate stage builds.
        """
        latest = event_millis(record.get("max_event_time"))
        if latest is not None:
            self._latest_event_ms = max(latest, self._latest_event_ms or latest)
        pane = self.spec.pane_ms
        boundary = 0 if self._latest_event_ms is None else \
            (self._latest_event_ms // pane + 1) * pane
        watermark = event_millis(record.get("watermark"))
        kept = [(kg, old, at) for kg, old, at in routing_next.smooth
                if watermark is None or watermark < at + self.spec.consolidated_longest_ms]
        kept += [(m.key_group, m.source, boundary) for m in plan.moves]
        if routing_next is routing and tuple(sorted(kept)) == routing.smooth:
            return routing
        return replace(routing_next, version=routing.version + 1, smooth=tuple(kept))

    def _scale(self, record: dict[str, Any], routing: RoutingTable,
               observed: BatchObservation) -> RoutingTable:
        """Plan a due scale event; publish the next mini-migration (or, ``stop``, all moves)."""
        spec = self.spec
        target = self.runtime.load_state()
        done = target["events"] if target else 0
        migrating = target is not None and routing.slot_of != tuple(target["slot_of"])
        slots = None
        # An event due while the previous migration still runs waits for it to finish.
        if not migrating:
            now = int(target["slots"]) if target else len(set(routing.slot_of))
            slots, done = self._due(record, done, now, observed)
        if slots is not None:
            started = self.clock()
            slot_of, migration = scale_target(routing, self._recent, self._recent,
                                              slots=slots, algo=spec.scaling.migration,
                                              tau=spec.scaling.tau)
            target = {"events": done, "slot_of": slot_of.tolist(), "slots": slots}
            self.runtime.save_state(target)
            record.update(scale_to=slots, scale_plan=migration.algo,
                          **({"scale_fallback": spec.scaling.migration}
                             if migration.algo != spec.scaling.migration else {}),
                          scale_plan_status=migration.status.value,
                          scale_cost=round(float(migration.cost), 3),
                          scale_max_load_ratio=round(float(migration.max_load_ratio), 4),
                          scale_plan_seconds=round(self.clock() - started, 6))
        if not target:
            return routing
        goal = np.asarray(target["slot_of"])
        waiting = self.runtime.in_flight()
        limit = spec.routing.max_moves if spec.scaling.scale_mode == "live" else len(goal)
        moves = next_moves(routing, goal, waiting, limit)
        record.update(key_groups_to_move=int((routing.as_array() != goal).sum()),
                      in_flight=len(waiting))
        if not moves:
            return routing
        routing = routing.apply(moves)
        self.runtime.publish(routing)
        record.update(moves=len(moves), moved_key_groups=[m.key_group for m in moves])
        if spec.scaling.scale_mode == "stop":
            started = self.clock()
            self.runtime.restart()
            record["restart_seconds"] = round(self.clock() - started, 3)
        return routing

    def _hot_key_names(self, routing: RoutingTable, observed: BatchObservation) -> list[str]:
        """The hot keys split by ``routing``, named where the runtime saw their text."""
        hot = [h for h, _ in routing.hot_keys]
        self._key_names = {h: name for h, name in self._key_names.items()
                           if h in observed.key_names or h in hot}
        return [self._key_names.get(h, f"#{h}") for h in hot]

    def _record(self, record: dict[str, Any], observed: BatchObservation, routing: RoutingTable,
                ran_with: RoutingTable, plan: Plan | None, wall: float) -> None:
        slot_load = observed.slot_load
        active = sorted(set(ran_with.slot_of))
        record.update(
            routing_version=routing.version,
            plan_status=plan.status.value if plan else None,
            plan_seconds=round(plan.solve_seconds, 6) if plan else 0.0,
            slot_load=slot_load.astype(int).tolist(),
            active_slots=len(active),
            max_mean_slot_load=round(float(slot_load[active].max() / slot_load[active].mean()), 4)
            if slot_load[active].sum() > 0 else None,
            hot_keys=len(routing.hot_keys),
            hot_key_names=self._hot_key_names(routing, observed),
            split_slots=sum(len(set(b)) for _, b in routing.hot_keys),
            key_group_load=observed.key_group_load.astype(int).tolist(),
            wall_seconds=round(wall, 3),
        )
        record.setdefault("moves", len(plan.moves) if plan else 0)
        record.setdefault("moved_key_groups", [m.key_group for m in plan.moves] if plan else [])
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)
