"""Run a windowed job on Spark Structured Streaming, with the controller between micro-batches.

Two streaming queries read the same file stream: the *results* query (parse → key groups →
routing → compute panes → consolidate windows → Parquet) and the *dead-letter* query (parse →
malformed records with their reason → Parquet). Both checkpoint beside the output (RocksDB state
store), so running the same command again resumes exactly where a stopped run was.

In replay mode the runtime also drives the stream: it feeds one chunk, lets both queries process
everything available, reads the batch statistics, asks the controller for a plan and publishes
the next routing version before feeding the next chunk. Routing therefore changes exactly at
micro-batch boundaries, and a batch retried after a failure reads the version it first read.
"""

from __future__ import annotations

import json
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.dataset as ds
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from elastream.algorithms.balance.fish_split import FishSplitOptions
from elastream.algorithms.windows.consolidation import plan_consolidation
from elastream.control.controller import Controller
from elastream.control.scaling import next_moves, ranges_table, scale_target
from elastream.core.aggregates import partial_columns, value_columns
from elastream.core.errors import DataError
from elastream.core.job import KEY_SEPARATOR, JobSpec
from elastream.core.load import LoadSnapshot
from elastream.core.pins import pins_for
from elastream.core.plan import Plan
from elastream.core.routing import RoutingStore, RoutingTable
from elastream.core.routing_history import RoutingHistory
from elastream.core.traffic import collocation_factor, cross_traffic
from elastream.runtimes.spark import compute, parse
from elastream.runtimes.spark.consolidate import Consolidate, output_schema
from elastream.runtimes.spark.migration_store import MigrationStore
from elastream.workloads.replay import CORRUPT, PUNCT, Feeder, prepare_replay

SCALE_LOAD_DECAY = 0.5
"""Weight of the past in the key-group loads a scale event is planned on (per batch)."""
DEAD_METRICS = "elastream_dead"
INPUT_METRICS = "elastream_input"


@contextmanager
def _stop_on_interrupt() -> Iterator[Callable[[], bool]]:
    """Turn the first Ctrl-C into a stop after the current micro-batch; a second one aborts.

    Replaces PySpark's own SIGINT handler (which cancels running Spark jobs mid-batch) while
    the job runs. Outside the main thread signals cannot be caught, so nothing changes there.
    """
    requested: list[bool] = []

    def handler(signum: int, frame: object) -> None:
        if requested:
            raise KeyboardInterrupt
        requested.append(True)
        print("elastream: stopping after this micro-batch (Ctrl-C again to abort)",
              file=sys.stderr, flush=True)

    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: bool(requested)
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass(frozen=True)
class Paths:
    """Where a job keeps its outputs and internals, all under ``--output``."""

    root: Path

    @property
    def results(self) -> Path:  # noqa: D102
        return self.root / "results"

    @property
    def dead_letter(self) -> Path:  # noqa: D102
        return self.root / "dead_letter"

    @property
    def metrics(self) -> Path:  # noqa: D102
        return self.root / "metrics.jsonl"

    @property
    def summary(self) -> Path:  # noqa: D102
        return self.root / "summary.json"

    @property
    def routing(self) -> Path:  # noqa: D102
        return self.root / "_routing"

    @property
    def migration(self) -> Path:  # noqa: D102
        return self.root / "_migration"

    @property
    def checkpoints(self) -> Path:  # noqa: D102
        return self.root / "_checkpoints"

    @property
    def staged(self) -> Path:  # noqa: D102
        return self.root / "_replay" / "staged"

    @property
    def stream_input(self) -> Path:  # noqa: D102
        return self.root / "_replay" / "input"


def _read_options(fmt: str) -> dict[str, str]:
    """Reader options of an input format (CSV files carry a header row)."""
    return {"header": "true"} if fmt == "csv" else {}


class SparkJob:
    """One job: its queries, its routing store and its controller loop."""

    def __init__(self, spark: SparkSession, spec: JobSpec, controller: Controller,
                 on_batch: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.spark = spark
        self.spec = spec
        self.controller = controller
        self.on_batch = on_batch
        self.paths = Paths(spec.output)
        self.store = RoutingStore(self.paths.routing)
        self.migration = MigrationStore(self.paths.migration)
        self._history: RoutingHistory | None = None
        self._recent = np.zeros(spec.total_key_groups)
        # Spark 4.3 fails ("Can only upgrade readStore to writeStore with the same
        # stateStoreId") when the aggregation and transformWithState share one task, which
        # happens with a single partition; a one-slot job keeps a second, idle partition.
        self.partitions = max(2, spec.max_slots)
        # Only a replay publishes routing strictly between micro-batches, which handing a key
        # group's consolidate state over needs (see _start).
        self.migrates = spec.mode == "replay"
        self.slot_ids = spec.max_slots
        self.queries: list[StreamingQuery] = []
        self._seen: dict[str, int] = {}
        # A planner that splits hot keys (fish) needs each batch's heaviest keys. A key above
        # the hot threshold θ is among a batch's 1/θ heaviest; 4/θ leaves room for keys on
        # their way up (and for the sketch's error), at most kmax (the planner's counters).
        options = controller.options
        self.top_keys = 0
        if isinstance(options, FishSplitOptions):
            theta = options.theta or 1.0 / (4 * spec.slots)
            self.top_keys = min(options.kmax, max(64, math.ceil(4 / theta)))

    # -- building ---------------------------------------------------------------------------
    def _source(self, files_per_trigger: int | None) -> tuple[DataFrame, list[str]]:
        if self.spec.mode == "replay":
            folder, fmt = self.paths.stream_input, "parquet"
            first = self.paths.staged / "chunk-000000.parquet"
            probe = first if first.exists() else folder / "chunk-000000.parquet"
            schema = self.spark.read.parquet(str(probe)).schema
        else:
            folder, fmt = self.spec.input, self.spec.format
            if not folder.is_dir():
                raise DataError(f"--mode watch needs --input to be a folder, got {str(folder)!r}")
            schema = (self.spark.read.options(**_read_options(fmt)).format(fmt)
                      .load(str(folder)).schema)
        reader = self.spark.readStream.schema(schema).options(**_read_options(fmt))
        if files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", files_per_trigger)
        raw = reader.format(fmt).load(str(folder))
        columns = [c for c in raw.columns if c not in (CORRUPT, PUNCT)]
        return raw, columns + ([CORRUPT] if CORRUPT in raw.columns else [])

    def _start(self) -> None:
        spec = self.spec
        self.spark.conf.set("spark.sql.shuffle.partitions", str(self.partitions))
        # A replay drives the stream chunk by chunk: windows closed by one chunk's data are
        # emitted by the next chunk's micro-batch, so extra no-data batches only cost time.
        # A watched folder keeps them, so windows close even while no new file arrives.
        self.spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled",
                            str(spec.mode != "replay").lower())
        raw, _ = self._source(files_per_trigger=1)
        parsed = parse.parse(raw, spec.time_col, spec.key_col, value_columns(spec.aggs),
                             spec.key_columns[1:])
        counted = parsed.observe(INPUT_METRICS, F.count_if(~F.col(PUNCT)).alias("rows"))
        lateness = f"{spec.lateness_ms // 1000} seconds"
        keyed = compute.keyed(parse.valid(counted, lateness), spec.operators, spec.key_groups)
        routed = compute.routed(keyed, self.spark, str(self.paths.routing),
                                spec.total_key_groups, self.partitions, self.slot_ids,
                                self.top_keys)
        panes = compute.panes(routed, spec.aggs, spec.pane_ms, self.partitions)
        # The consolidate stage is grouped by the slot owning each key group under the current
        # routing (its pin): few Python calls per batch, each vectorised over many keys. A key
        # group that moved hands its state over through the migration store (consolidate.py).
        # A watched folder keeps each key group's consolidate state on a fixed slot (kg mod P)
        # and relies on instant migration of the pane stage alone.
        if self.migrates:
            owner = compute.routing_table(self.spark, str(self.paths.routing), self.partitions)
            panes = panes.drop("pin").join(F.broadcast(owner), "kg")
        else:
            fixed = F.array(*[F.lit(int(p)) for p in pins_for(self.partitions)])
            panes = panes.withColumn("pin", F.element_at(
                fixed, F.pmod(F.col("kg"), F.lit(self.partitions)).cast("int") + 1))
        partials = panes.select(
            F.col("pin").alias("cpin"), "kg", F.col(parse.KEY).alias("key"),
            F.unix_millis(F.col("pane.start")).alias("start"), *partial_columns(spec.aggs))
        every_slot = self.spark.createDataFrame(
            [(int(p),) for p in pins_for(self.partitions)], "cpin int").groupBy("cpin")
        results = partials.groupBy("cpin").transformWithStateInPandas(
            statefulProcessor=Consolidate(
                plan_consolidation(spec.windows), spec.aggs, partitions=self.partitions,
                routing_dir=str(self.paths.routing), migration_dir=str(self.paths.migration),
                migrate=self.migrates),
            outputStructType=output_schema(spec.aggs),
            outputMode="Append",
            timeMode="EventTime",
            initialState=every_slot,
        )
        if len(spec.operators) > 1:
            results = _operator_column(results, spec)
        self.queries = [
            results.writeStream.queryName("results").format("parquet").outputMode("append")
            .option("checkpointLocation", str(self.paths.checkpoints / "results"))
            .start(str(self.paths.results))
        ]
        if spec.mode == "watch":
            self.queries.append(self._dead_letter_query(catch_up=False))

    def _dead_letter_query(self, *, catch_up: bool) -> StreamingQuery:
        """The dead-letter query: reads the same files as the results query, on its own.

        A replay runs it once at the end (``catch_up``: one batch over every file, then it
        stops), rather than a micro-batch per chunk beside the results query; a watched
        folder runs it continuously.
        """
        spec = self.spec
        raw, raw_columns = self._source(files_per_trigger=None)
        parsed = parse.parse(raw, spec.time_col, spec.key_col, value_columns(spec.aggs),
                             spec.key_columns[1:])
        dead = parse.dead_letter(parsed, raw_columns).observe(
            DEAD_METRICS, F.count(F.lit(1)).alias("rows"))
        writer = dead.writeStream.queryName("dead_letter").format("parquet").outputMode("append")
        if catch_up:
            writer = writer.trigger(availableNow=True)
        return (writer.option("checkpointLocation", str(self.paths.checkpoints / "dead_letter"))
                .start(str(self.paths.dead_letter)))

    # -- running ----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Run the job and return the summary.

        A replay ends when every chunk was fed (or after ``max_batches`` chunks); a watched
        folder after ``max_batches`` micro-batches, once it has caught up with the files there,
        or at Ctrl-C.
        """
        spec = self.spec
        self.paths.root.mkdir(parents=True, exist_ok=True)
        routing = self.store.current()
        if routing is None:
            routing = (ranges_table(spec.total_key_groups, spec.slots, spec.max_slots)
                       if spec.scale_at else RoutingTable.hashed(spec.total_key_groups, spec.slots))
            self.store.publish(routing)
        feeder = None
        if spec.mode == "replay":
            manifest = prepare_replay(spec.input, spec.format, spec.time_col, spec.rows_per_batch,
                                      self.paths.staged,
                                      spec.longest_ms + spec.pane_ms + spec.lateness_ms)
            feeder = Feeder(self.paths.staged, self.paths.stream_input, manifest)
        self._start()
        started = time.perf_counter()
        steps = 0
        try:
            with _stop_on_interrupt() as interrupted:
                while not interrupted() and (spec.max_batches is None
                                             or steps < spec.max_batches):
                    receipts = self.migration.receipts()
                    if not self._step(feeder):
                        break
                    self.migration.collect(receipts)  # their receivers' batches committed
                    steps += 1
                    routing = self._after_batches(routing, time.perf_counter() - started)
                    started = time.perf_counter()
            if feeder is not None:
                dead = self._dead_letter_query(catch_up=True)
                self.queries.append(dead)
                dead.awaitTermination()
            elif not interrupted():
                # A watched folder stops once caught up: every file there is processed and the
                # windows its watermark closed are emitted.
                for query in self.queries:
                    query.processAllAvailable()
            self._after_batches(routing, time.perf_counter() - started)
        finally:
            self.stop()
        summary = self.write_summary()
        summary["interrupted"] = interrupted()
        return summary

    def _step(self, feeder: Feeder | None) -> bool:
        """Feed one chunk and wait for its micro-batch (replay), or wait for the next batch.

        False when a replay has no chunk left.
        """
        if feeder is None:
            self._await_progress()
            return True
        if feeder.feed_next() is None:
            return False
        self.queries[0].processAllAvailable()
        return True

    def _await_progress(self) -> None:
        while True:
            for query in self.queries:
                if query.exception() is not None:
                    query.awaitTermination()
            progress = self.queries[0].lastProgress
            if progress and progress["batchId"] > self._seen.get("results", -1):
                return
            time.sleep(0.5)

    def _new_progress(self, query: StreamingQuery) -> list[dict[str, Any]]:
        """Progress reports of the batches since the last call, oldest first.

        Usually one batch ran since: its report is ``lastProgress``. Only otherwise is
        ``recentProgress`` (up to 100 reports, each converted from the JVM) read.
        """
        last = self._seen.get(query.name, -1)
        latest = query.lastProgress
        if latest is None or latest.batchId <= last:
            return []
        fresh: list[dict[str, Any]]
        if latest.batchId == last + 1:
            fresh = [json.loads(latest.json)]
        else:
            fresh = [json.loads(p.json) for p in query.recentProgress if p.batchId > last]
        if fresh:
            self._seen[query.name] = fresh[-1]["batchId"]
        return fresh

    def _after_batches(self, routing: RoutingTable, wall: float) -> RoutingTable:
        results = self._new_progress(self.queries[0])
        dead = self._new_progress(self.queries[1]) if len(self.queries) > 1 else []
        record, loads, slot_load, (key_hashes, key_counts), traffic = self._batch_record(
            results, dead)
        if len(self.spec.operators) > 1:
            # Measured on the table the batch ran with, before the plan changes it.
            sent = int(traffic[:, 2].sum())
            record.update(traffic_rows=sent,
                          cross_slot_rows=round(cross_traffic(routing.slot_of, traffic)),
                          collocation_factor=round(collocation_factor(routing.slot_of, traffic), 3)
                          if sent else None)
        plan: Plan | None = None
        ran_with = routing
        self._recent = loads + SCALE_LOAD_DECAY * self._recent
        if self.spec.scale_at and record["valid_rows"] > 0:
            routing = self._scale(record, routing)
        elif record["valid_rows"] > 0:
            snapshot = LoadSnapshot(batch_id=record["batch_id"], key_group_load=loads,
                                    key_hashes=key_hashes, key_counts=key_counts,
                                    traffic=traffic if len(self.spec.operators) > 1 else None)
            plan, routing_next = self.controller.step(snapshot, routing)
            waiting = self._in_flight()
            if waiting and any(m.key_group in waiting for m in plan.moves):
                # A key group moves again only once its last hand-off was written.
                plan = replace(plan, moves=tuple(m for m in plan.moves
                                                 if m.key_group not in waiting))
                routing_next = routing.apply_plan(plan)
            if routing_next is not routing:
                self.store.publish(routing_next)
                routing = routing_next
        active = sorted(set(ran_with.slot_of))
        record.update(
            routing_version=routing.version,
            plan_status=plan.status.value if plan else None,
            plan_seconds=round(plan.solve_seconds, 6) if plan else 0.0,
            slot_load=slot_load.astype(int).tolist(),
            active_slots=len(active),
            max_mean_slot_load=round(float(slot_load[active].max() / slot_load[active].mean()), 4)
            if slot_load.sum() > 0 else None,
            hot_keys=len(routing.hot_keys),
            split_slots=sum(len(set(b)) for _, b in routing.hot_keys),
            key_group_load=loads.astype(int).tolist(),
            wall_seconds=round(wall, 3),
        )
        record.setdefault("moves", len(plan.moves) if plan else 0)
        record.setdefault("moved_key_groups", [m.key_group for m in plan.moves] if plan else [])
        with self.paths.metrics.open("a") as handle:
            handle.write(json.dumps(record) + "\n")
        if self.on_batch is not None:
            self.on_batch(record)
        return routing

    def _scale(self, record: dict[str, Any], routing: RoutingTable) -> RoutingTable:
        """Plan a due scale event; publish the next mini-migration (or, ``stop``, all moves)."""
        spec = self.spec
        target = self.migration.target()
        done = target["events"] if target else 0
        migrating = target is not None and routing.slot_of != tuple(target["slot_of"])
        # An event due while the previous migration still runs waits for it to finish.
        if (done < len(spec.scale_at) and record["batch_id"] >= spec.scale_at[done].batch
                and not migrating):
            event = spec.scale_at[done]
            started = time.perf_counter()
            slot_of, migration = scale_target(routing, self._recent, self._recent,
                                              slots=event.slots, algo=spec.migration, tau=spec.tau)
            target = {"events": done + 1, "slot_of": slot_of.tolist()}
            self.migration.save_target(target)
            record.update(scale_to=event.slots, scale_plan=migration.algo,
                          scale_plan_status=migration.status.value,
                          scale_cost=round(float(migration.cost), 3),
                          scale_max_load_ratio=round(float(migration.max_load_ratio), 4),
                          scale_plan_seconds=round(time.perf_counter() - started, 6))
        if not target:
            return routing
        goal = np.asarray(target["slot_of"])
        waiting = self._in_flight()
        limit = spec.max_moves if spec.scale_mode == "live" else len(goal)
        moves = next_moves(routing, goal, waiting, limit)
        record.update(key_groups_to_move=int((routing.as_array() != goal).sum()),
                      in_flight=len(waiting))
        if not moves:
            return routing
        routing = routing.apply(moves)
        self.store.publish(routing)
        record.update(moves=len(moves), moved_key_groups=[m.key_group for m in moves])
        if spec.scale_mode == "stop":
            started = time.perf_counter()
            self.stop()
            self._start()
            record["restart_seconds"] = round(time.perf_counter() - started, 3)
        return routing

    def _in_flight(self) -> set[int]:
        """Key groups whose last move's state has not been handed off yet.

        Once it has (the hand-off file exists), the key group may move on: its receiver
        forwards the state with the partials that waited there.
        """
        if not self.migrates:
            return set()
        self._history = RoutingHistory.load(self.store, self._history)
        latest = self._history.last_moves()
        done = self.migration.acknowledged()
        return {int(kg) for kg in np.flatnonzero(latest)
                if (int(latest[kg]), int(kg)) not in done
                and not self.migration.path(int(latest[kg]), int(kg)).exists()}

    def stop(self) -> None:
        """Stop both queries (their checkpoints keep everything committed)."""
        for query in self.queries:
            if query.isActive:
                query.stop()
        errors = [q.exception() for q in self.queries if q.exception() is not None]
        if errors:
            print(f"elastream: a streaming query failed: {errors[0]}", file=sys.stderr)

    def write_summary(self) -> dict[str, Any]:
        """Totals over every batch of the job (across resumed runs) into ``summary.json``."""
        summary = summarize(self.paths.metrics)
        summary["output_rows"] = _parquet_rows(self.paths.results)
        self.paths.summary.write_text(json.dumps(summary, indent=2) + "\n")
        return summary


    def _batch_record(self, results: list[dict[str, Any]], dead: list[dict[str, Any]]
                      ) -> tuple[dict[str, Any], np.ndarray, np.ndarray,
                                 tuple[np.ndarray, np.ndarray], np.ndarray]:
        """Sum one controller step's progress reports into a record, loads, top keys, traffic.

        Loads are rows per key group and per slot (exact, observed where the records went);
        top keys the key hashes and counts of the batches' ``approx_top_k`` sketches; traffic
        the rows ``(kg_from, kg_to, tuples)`` between consecutive operators' key groups.
        """
        spec = self.spec
        loads = np.zeros(spec.total_key_groups)
        slot_load = np.zeros(self.slot_ids)
        hashes, counts = [np.empty(0, dtype=np.int64)], [np.empty(0)]
        traffic = [np.empty((0, 3))]
        for progress in results:
            metrics = progress.get("observedMetrics", {})
            observed = metrics.get(compute.LOAD_METRICS)
            if observed and observed["version"] is not None:
                loads += compute.histogram_counts(observed, "kg_load", spec.total_key_groups)
                slot_load += compute.histogram_counts(observed, "slot_load", self.slot_ids)
                top_hashes, top_counts = compute.top_key_counts(observed)
                hashes.append(top_hashes)
                counts.append(top_counts)
            if metrics.get(compute.TRAFFIC_METRICS):
                traffic.append(compute.traffic_rows(metrics[compute.TRAFFIC_METRICS],
                                                    len(spec.operators), spec.key_groups))
        top = (np.concatenate(hashes), np.concatenate(counts))
        return _batch_record(results, dead), loads, slot_load, top, _summed(np.vstack(traffic))


def _summed(traffic: np.ndarray) -> np.ndarray:
    """Traffic rows with one row per (kg_from, kg_to) pair, several batches' rates summed."""
    if traffic.shape[0] == 0:
        return traffic
    pairs, inverse = np.unique(traffic[:, :2], axis=0, return_inverse=True)
    rates = np.bincount(inverse.ravel(), weights=traffic[:, 2], minlength=pairs.shape[0])
    return np.column_stack([pairs, rates])


def _operator_column(results: DataFrame, spec: JobSpec) -> DataFrame:
    """Results of a several-operator job: ``operator`` (its key columns) and the key's values.

    The internal key ``i␟v1␟v2`` becomes operator ``spec.operators[i].name`` and key
    ``v1,v2``.
    """
    parts = F.split(F.col("key"), compute.OPERATOR_SEPARATOR, 2)
    names = F.array(*[F.lit(op.name) for op in spec.operators])
    index = parts.getItem(0).cast("int")
    return results.select(
        F.element_at(names, index + 1).alias("operator"),
        F.replace(parts.getItem(1), F.lit(compute.OPERATOR_SEPARATOR),
                  F.lit(KEY_SEPARATOR)).alias("key"),
        *[c for c in results.columns if c != "key"],
    )


def _batch_record(results: list[dict[str, Any]], dead: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals of one controller step's progress reports (both queries)."""
    input_rows = valid = dead_rows = late = 0
    state_rows: list[int] = []
    by_operator: dict[str, int] = {}
    version = None
    for progress in results:
        counted = progress.get("observedMetrics", {}).get(INPUT_METRICS)
        input_rows += int(counted["rows"]) if counted else 0
        observed = progress.get("observedMetrics", {}).get(compute.LOAD_METRICS)
        if observed:
            valid += int(observed["rows"])
            version = observed["version"] if observed["version"] is not None else version
        late += sum(int(op.get("numRowsDroppedByWatermark", 0))
                    for op in progress.get("stateOperators", []))
        operators = progress.get("stateOperators", [])
        state_rows = [int(op.get("numRowsTotal", 0)) for op in operators]
        by_operator = {op.get("operatorName", str(i)): int(op.get("numRowsTotal", 0))
                       for i, op in enumerate(operators)}
    for progress in dead:
        observed = progress.get("observedMetrics", {}).get(DEAD_METRICS)
        if observed:
            dead_rows += int(observed["rows"])
    return {
        "batch_id": results[-1]["batchId"] if results else -1,
        "batches": len(results),
        "input_rows": input_rows,
        "valid_rows": valid,
        "dead_letter_rows": dead_rows,
        "late_rows": late,
        "batch_ms": sum(int(p["durationMs"].get("triggerExecution", 0)) for p in results),
        "watermark": results[-1]["eventTime"].get("watermark") if results else None,
        "observed_routing_version": version,
        "state_rows": state_rows,
        "state_rows_by_operator": by_operator,
    }


def _parquet_rows(folder: Path) -> int:
    """Rows in the committed Parquet files of a sink folder."""
    if not folder.exists():
        return 0
    return int(ds.dataset(str(folder), format="parquet").count_rows())


def summarize(metrics_path: Path) -> dict[str, Any]:
    """Totals of a job's metrics file (``summary.json``)."""
    records = [json.loads(line) for line in metrics_path.read_text().splitlines() if line.strip()]
    total = {k: sum(r[k] for r in records) for k in
             ("input_rows", "valid_rows", "dead_letter_rows", "late_rows", "batches", "moves")}
    wall = sum(r["wall_seconds"] for r in records)
    input_rows = total["input_rows"]
    return {
        "input_rows": input_rows,
        "output_rows": 0,
        "dead_letter_rows": total["dead_letter_rows"],
        "aggregated_rows": total["valid_rows"] - total["late_rows"],
        "late_rows": total["late_rows"],
        "batches": total["batches"],
        "routing_versions": max((r["routing_version"] for r in records), default=0) + 1,
        "moves": total["moves"],
        "wall_seconds": round(wall, 3),
        "rows_per_second": round(input_rows / wall, 1) if wall > 0 else 0.0,
        "nothing_lost": input_rows == total["valid_rows"] + total["dead_letter_rows"],
    }
