"""The Python API: an elastic, skew-aware windowed aggregation on any streaming DataFrame.

>>> import elastream as es                                          # doctest: +SKIP
>>> job = es.windowed(df, key="origin", time="date", windows=["1h", "6h/1h"],
...                   aggs=["sum:delay", "count"], planner="fish", slots=4,
...                   state_dir="/data/jobs/delays")                 # doctest: +SKIP
>>> query = (job.results.writeStream.foreachBatch(es.ParquetBatchSink("/data/delays"))
...          .option("checkpointLocation", "/data/jobs/delays/cp").start())  # doctest: +SKIP

DataFrame in, DataFrame out: ``job.results`` (one row per key and window, emitted once when
the watermark passes the window's end) and ``job.dead_letter`` (malformed records with their
reason) are streaming DataFrames; the user picks their sinks and triggers and starts them. A
control loop runs beside the queries in a thread of the driver: it reads each micro-batch's
observed loads off the results query's progress, plans with ``planner``, and publishes routing
versions, which take effect from the next micro-batch not yet started; key groups that move
hand their window state over while the query runs (no stop, no lock-step).

Restarting the same program with the same ``state_dir`` and the same checkpoints resumes
exactly. One results query per job: the routing binds to its micro-batch ids.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from elastream.control.binder import Binder
from elastream.control.controller import Controller
from elastream.control.loop import ControlLoop
from elastream.control.planners import (
    check_planner,
    job_planner,
    scales_by_ranges,
    top_keys,
)
from elastream.control.scaling import initial_table
from elastream.core.aggregates import AggSpec
from elastream.core.chain import ChainOperator
from elastream.core.errors import OptionError
from elastream.core.filesystem import Folder, LocalFolder, folder
from elastream.core.identity import IDENTITY, Resume, check_resume, identity
from elastream.core.job import (
    OperatorSpec,
    PipelineSpec,
    ScaleEvent,
    check_spark_executors,
    partitions_for,
)
from elastream.core.routing import RoutingStore, RoutingTable
from elastream.core.windows import WindowSpec, parse_duration
from elastream.runtimes.spark import pipeline
from elastream.runtimes.spark.executors import ExecutorPool
from elastream.runtimes.spark.pipeline import METRICS, StatePaths, check_session
from elastream.runtimes.spark.progress import MetricNames
from elastream.runtimes.spark.runtime import SparkRuntime
from elastream.runtimes.spark.settings import job_settings


@dataclass
class WindowedJob:
    """A windowed job on a streaming DataFrame, and the control loop beside its queries.

    ``results``: key, window bounds, length and slide (seconds), one column per aggregate
    (with ``then``, also ``operator``). ``dead_letter``: every input column as text and
    ``reason``. ``spec``: the validated pipeline. ``state_dir``: routing versions, hand-offs in
    flight, ``metrics.jsonl``. ``binder``: the driver's binder of micro-batches, on a
    ``state_dir`` without exclusive create (HDFS, object stores; :mod:`elastream.control.binder`).
    """

    results: DataFrame
    dead_letter: DataFrame
    spec: PipelineSpec
    state_dir: Folder
    loop: ControlLoop = field(repr=False)
    runtime: SparkRuntime = field(repr=False)
    binder: Binder | None = field(default=None, repr=False)

    @property
    def metrics(self) -> list[dict[str, Any]]:
        """One record per control step of this run (see README: ``metrics.jsonl``)."""
        return list(self.loop.records)

    @property
    def routing(self) -> RoutingTable:
        """The latest published routing version."""
        return self.runtime.routing()

    def report(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the HTML report of this job, as ``elastream report`` does; return its path.

        From ``state_dir`` (metrics, hand-offs) to ``path`` (default ``state_dir/report.html``);
        the job's results and dead letter are in the caller's sinks, so the page leaves them out.
        """
        from elastream.report import render

        if not isinstance(self.state_dir, LocalFolder):
            raise OptionError("state_dir", "must be a local folder for report()",
                              str(self.state_dir))
        return render(self.state_dir.path, path).html

    def scale(self, slots: int) -> None:
        """Move to ``slots`` slots (≤ ``max_slots``) by live migration, starting next step."""
        self.loop.request_scale(slots)

    def stop(self) -> None:
        """Stop the control loop and the binder (its queries are the caller's: stop them first).

        Reads the last reports of queries that ended, and re-raises an error the loop met.
        """
        try:
            self.loop.stop()
            self.loop.drain()
        finally:
            if self.binder is not None:
                self.binder.stop()

    def __enter__(self) -> WindowedJob:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def configure(spark: SparkSession, slots: int) -> SparkSession:
    """Set the SQL settings a job of ``slots`` slots (its ``max_slots``) needs, and return spark.

    Call it before the job's queries first start; a restarted query keeps what its checkpoint
    recorded.
    """
    for key, value in job_settings(partitions_for(slots)).items():
        spark.conf.set(key, value)
    return spark


def spark_session(slots: int = 4, master: str | None = None, app_name: str | None = None,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """A session for jobs of up to ``slots`` slots, on ``master``, with Spark settings ``conf``.

    ``master`` defaults to ``spark-submit``'s, else ``local[2]``.
    Settings a job needs are set and a ``conf`` (or ``spark-submit``) value that differs is
    refused (:class:`~elastream.core.errors.SessionError`); see
    :func:`~elastream.runtimes.spark.session.get_spark`.
    """
    from elastream.runtimes.spark.session import get_spark

    return get_spark(master, app_name, conf, partitions=partitions_for(slots))


def windowed(df: DataFrame, *, key: str, time: str, windows: Sequence[str],
             aggs: Sequence[str] = ("count",), state_dir: str | os.PathLike[str],
             planner: str = "flux", slots: int = 4, key_groups: int = 128,
             max_moves: int = 4, lateness: str = "0s", then: Sequence[str] = (),
             scale_at: Sequence[str | tuple[int, int]] = (), max_slots: int = 0,
             migration: str = "ssm", tau: float = 0.2,
             planner_options: Mapping[str, Any] | None = None,
             spark_executors: tuple[int, int] | None = None, release_after: float = 30.0,
             partition_by: Sequence[str] = (), chain: Sequence[Mapping[str, Any]] = (),
             fused: int | None = None, migration_kind: str = "disruptive",
             execution: str = "split", latency_threshold: float | None = None,
             autoscale: tuple[int, int] | None = None, latency_target: float | None = None,
             scale_in: str = "integrated", start_controller: bool = True) -> WindowedJob:
    """An elastic windowed aggregation of the streaming ``df``; see the module docstring.

    ``key``, ``time``: columns (``then``: further operators ``"KEYS[/PARTITION]"``).
    ``windows``: ``"LENGTH[/SLIDE]"`` with units s, m, h, d. ``aggs``: ``"FUNC[:COLUMN]"``,
    FUNC one of sum, count, min, max, avg. ``planner``: hash, flux, fish, milp, albic, cola,
    potc, elasticutor. ``slots``: parallel slots; ``max_slots``: the most it may scale to
    (``scale``, ``scale_at`` ``"BATCH:SLOTS"``; any planner but elasticutor, which
    sizes its slots itself). ``lateness``: watermark delay.
    ``autoscale``: ``(fewest, most)`` slots the job sizes itself within (any planner but
    elasticutor), keeping each micro-batch within ``latency_target`` seconds (default 5;
    elasticutor's own target too, default 1): :mod:`elastream.control.autoscale`.
    ``scale_in``: ``integrated`` (milp, albic, cola, potc empty leaving slots while they
    balance) or ``separate`` (drained first), :data:`elastream.core.job.SCALE_IN`.
    ``planner_options``: settings of the planner (e.g. ``min_imbalance`` for flux;
    ``executors`` for elasticutor).
    ``spark_executors``: ``(fewest, most)`` Spark executors the job holds, on a cluster master,
    for the slots it uses (``autoscale``) or a planner that sizes them (elasticutor) keeps
    busy; an executor is released once the smaller demand lasted ``release_after`` seconds
    (:mod:`elastream.runtimes.spark.executors`). ``None`` (default): executors stay as Spark
    has them.
    ``key`` may join several columns with commas (``"origin,destination"``), and
    ``partition_by`` name the ones that pick its key groups (Enorm's partition attributes).
    ``chain``: operators that each aggregate the windows of the one before, as
    ``{"id", "keys", "aggs", "window" (optional: a tumbling length), "partition_by" (optional)}``
    (:mod:`elastream.core.chain`); ``results`` then hold the last one's windows. ``fused``: how
    many chained operators run in the source's component (no shuffle of their own); ``None``:
    as many as can. ``migration_kind``: ``disruptive`` (a moving key group's window state is
    handed over) or ``smooth`` (no state handed over: Enorm §4.5,
    :data:`elastream.core.job.MIGRATION_KINDS`). ``execution``: ``split`` (panes, then
    windows assembled from them), ``combine`` (each record added to every window it falls in)
    or ``auto`` (chosen per period by Enorm's cost model, switched live; combine only while its
    pause for moving key groups stays within ``latency_threshold`` seconds per period:
    :data:`elastream.core.job.EXECUTIONS`).
    ``state_dir``: a local path or a ``file://``, ``hdfs://``, ``s3://`` or ``gs://`` URI
    (:mod:`elastream.core.filesystem`); Spark's checkpoints are the queries' own option.
    Errors name the argument: :class:`~elastream.core.errors.OptionError`,
    :class:`~elastream.core.errors.SessionError` for session settings.
    """
    spec = PipelineSpec(
        time_col=time, key_col=key,
        aggs=tuple(AggSpec.parse(a) for a in _texts("aggs", aggs)),
        windows=tuple(WindowSpec.parse(w) for w in _texts("windows", windows)),
        slots=slots, key_groups=key_groups, planner=planner, max_moves=max_moves,
        lateness_ms=0 if str(lateness).strip() == "0" else parse_duration(
            str(lateness), option="lateness", allow_zero=True),
        then=tuple(OperatorSpec.parse(t) for t in _texts("then", then)),
        scale_at=tuple(_scale_event(e) for e in scale_at),
        migration=migration, tau=tau, max_slots=max_slots,
        partition_by=tuple(_texts("partition_by", partition_by)),
        chain=tuple(ChainOperator.parse(op) for op in chain), fused=fused,
        migration_kind=migration_kind, execution=execution,
        latency_threshold=latency_threshold, autoscale=autoscale,
        latency_target=latency_target, scale_in=scale_in)
    return build_job(df, spec, state_dir, dict(planner_options or {}),
                     start_controller=start_controller, spark_executors=spark_executors,
                     release_after=release_after)


def build_job(df: DataFrame, spec: PipelineSpec, state_dir: str | os.PathLike[str],
              planner_settings: Mapping[str, Any], *,
              shared_settings: Mapping[str, Any] | None = None, start_controller: bool = True,
              restart: Callable[[], None] | None = None, controller: Controller | None = None,
              on_record: Callable[[dict[str, Any]], None] | None = None,
              spark_executors: tuple[int, int] | None = None,
              release_after: float = 30.0,
              backlog: Callable[[], int] | None = None) -> WindowedJob:
    """The job of a validated ``spec`` (the API's and the CLI's common path).

    ``planner_settings``: the user's settings of the spec's planner (one it does not take is
    an :class:`OptionError`); ``shared_settings``: settings offered to whichever planner the
    job names (the CLI's ``--min-imbalance``, ``--serialisation``), taken where it has them
    (:func:`~elastream.control.planners.job_planner`).

    ``restart``: how to stop and start the job's queries (a job that owns them);
    ``controller``: instead of the spec's planner; ``on_record``: called with each metrics
    record after it was written; ``spark_executors``, ``release_after``: see :func:`windowed`;
    ``backlog``: the rows waiting for the job (autoscaling's input, where the caller knows it).
    """
    if not df.isStreaming:
        raise OptionError("df", "must be a streaming DataFrame (spark.readStream...)",
                          type(df).__name__)
    if spec.scale_mode == "stop" and restart is None:
        raise OptionError("scale_mode", "stop needs elastream to own the queries "
                          "(elastream run); use live", spec.scale_mode)
    if controller is None:
        make_planner, options = job_planner(spec, shared=shared_settings, **planner_settings)
        controller = Controller(make_planner, options)
    pool = None
    if spark_executors is not None:
        check_spark_executors(spark_executors)
        check_planner(spec, spark_executors=spark_executors)
        pool = ExecutorPool(df.sparkSession, *spark_executors, release_after=release_after)
    state = StatePaths(folder(state_dir, option="state_dir"))
    spec, resume = _resumed(spec, state.root)
    check_session(df.sparkSession, spec)
    store = RoutingStore(state.routing)
    _publish_initial(store, spec, state.root)
    state.root.publish(IDENTITY, json.dumps(identity(spec, scales=resume.scales,
                                                     by_ranges=scales_by_ranges(spec)),
                                            indent=2))
    names = MetricNames(uuid.uuid4().hex[:8])
    built = pipeline.build(df, spec, state, names,
                           top_keys=top_keys(controller.options, spec.slots))
    runtime = SparkRuntime(df.sparkSession, spec, state, names, restart=restart,
                           busy=built.busy, costs=built.costs, executors=pool)

    def write(record: dict[str, Any]) -> None:
        state.root.append(METRICS, json.dumps(record) + "\n")
        if on_record is not None:
            on_record(record)

    # Executors that follow the slots bring cores with them; otherwise the session's are all.
    cores = None if pool is not None else df.sparkSession.sparkContext.defaultParallelism
    loop = ControlLoop(runtime, controller, spec, on_record=write, scales=resume.scales,
                       backlog=backlog, cores=cores)
    binder = None if store.folder.exclusive else Binder(store)
    if binder is not None:
        binder.start()
    if resume.scale_to is not None:
        loop.request_scale(resume.scale_to)
    if start_controller:
        loop.start()
    return WindowedJob(built.results, built.dead_letter, spec, state.root, loop, runtime, binder)


def _resumed(spec: PipelineSpec, state_dir: Folder) -> tuple[PipelineSpec, Resume]:
    """``spec`` as it resumes the job in ``state_dir`` (its state partitions), and how.

    A job's defining options must be those it was started with (:mod:`elastream.core.identity`).
    A state folder of an earlier elastream, without ``job.json``, is taken as it is.
    """
    recorded = state_dir.latest(IDENTITY)
    if recorded is None:
        return spec, Resume(spec.max_slots, None, spec.scales)
    resume = check_resume(json.loads(recorded), spec, place="state_dir",
                          location=str(state_dir), by_ranges=scales_by_ranges(spec))
    if resume.max_slots != spec.max_slots:
        spec = replace(spec, max_slots=resume.max_slots)
    return spec, resume


def _publish_initial(store: RoutingStore, spec: PipelineSpec, state_dir: Folder) -> None:
    """Version 0 of a new job; a resumed job's state must fit the spec."""
    current = store.current()
    if current is None:
        current = initial_table(spec, by_ranges=scales_by_ranges(spec))
        if spec.execution == "combine":
            current = replace(current, execution="combine")
        store.publish(current)
    if not store.has_owner():
        store.set_owner(0, current.version)
    if current.num_key_groups != spec.total_key_groups:
        raise OptionError("state_dir", f"holds a job of {current.num_key_groups} key groups, "
                          f"not {spec.total_key_groups}: use a new folder",
                          str(state_dir))


def _texts(argument: str, values: Sequence[str] | str) -> list[str]:
    if isinstance(values, str):
        values = [values]
    bad = [v for v in values if not isinstance(v, str)]
    if bad:
        raise OptionError(argument, "must be a list of strings", bad[0])
    return list(values)


def _scale_event(event: str | tuple[int, int]) -> ScaleEvent:
    if isinstance(event, str):
        return ScaleEvent.parse(event)
    batch, slots = event
    return ScaleEvent.parse(f"{batch}:{slots}")
