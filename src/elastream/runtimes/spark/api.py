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
from elastream.control.fusion import planned
from elastream.control.loop import ControlLoop
from elastream.control.planners import (
    check_planner,
    job_planner,
    scales_by_ranges,
    top_keys,
)
from elastream.control.scaling import initial_table
from elastream.core.errors import OptionError
from elastream.core.identity import IDENTITY, Resume, check_resume, identity
from elastream.core.options import default, spec_values
from elastream.core.routing import RoutingTable
from elastream.core.spec import (
    PipelineSpec,
    partitions_for,
)
from elastream.runtimes.spark import pipeline
from elastream.runtimes.spark.executors import ExecutorPool
from elastream.runtimes.spark.pipeline import METRICS, StatePaths, check_session
from elastream.runtimes.spark.progress import MetricNames
from elastream.runtimes.spark.runtime import SparkRuntime
from elastream.runtimes.spark.settings import job_settings
from elastream.runtimes.spark.warm import warm_python_workers
from elastream.stores.filesystem import Folder, LocalFolder, folder
from elastream.stores.routing_store import RoutingStore


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
             aggs: Sequence[str] = default("aggs"), state_dir: str | os.PathLike[str],
             planner: str = default("planner"), slots: int = default("slots"),
             key_groups: int = default("key_groups"), max_moves: int = default("max_moves"),
             lateness: str = default("lateness"), then: Sequence[str] = (),
             scale_at: Sequence[str | tuple[int, int]] = (),
             max_slots: int = default("max_slots"), migration: str = default("migration"),
             tau: float = default("tau"), planner_options: Mapping[str, Any] | None = None,
             spark_executors: tuple[int, int] | None = None,
             release_after: float = default("release_after"),
             partition_by: Sequence[str] = (), chain: Sequence[Mapping[str, Any]] = (),
             graph: Mapping[str, Any] | None = None, fused: int | None = None,
             migration_kind: str = default("migration_kind"),
             execution: str = default("execution"), latency_threshold: float | None = None,
             autoscale: tuple[int, int] | None = None, latency_target: float | None = None,
             scale_in: str = default("scale_in"), start_controller: bool = True) -> WindowedJob:
    """An elastic windowed aggregation of the streaming ``df``; see the module docstring.

    Every argument but ``df`` and ``start_controller`` is an option of
    :data:`elastream.core.options.OPTIONS`, where its meaning, default and rule are (the
    README's option table lists them). In short: ``key``, ``time``: columns (``key`` may join
    several with commas, ``partition_by`` name those that pick key groups; ``then``: further
    operators ``"KEYS[/PARTITION]"``; ``chain``: operators that each aggregate the windows of
    the one before, ``{"id", "keys", "aggs", "window"?, "partition_by"?}``; ``graph``: such
    operators and the edges between them, ``{"operators": [...], "edges": [{"from", "to",
    "rate"?}]}``, ``from`` an operator or ``"source"``, the job's own; results are then the
    windows of the operators no other reads, with an ``operator`` column). ``windows``:
    ``"LENGTH[/SLIDE]"`` with units s, m, h, d. ``aggs``: ``"FUNC[:COLUMN]"``, FUNC one of
    sum, count, min, max, avg. ``planner_options``: settings of the planner (e.g.
    ``min_imbalance`` for flux; ``executors`` for elasticutor). ``state_dir``: a local path or
    a ``file://``, ``hdfs://``, ``s3://`` or ``gs://`` URI (:mod:`elastream.stores.filesystem`);
    Spark's checkpoints are the queries' own option. ``start_controller``: start the control
    loop now (else call ``job.loop.start()``).

    Errors name the argument: :class:`~elastream.core.errors.OptionError`,
    :class:`~elastream.core.errors.SessionError` for session settings.
    """
    values = {name: value for name, value in locals().items()
              if name not in ("df", "state_dir", "start_controller")}
    if graph is not None:
        if chain:
            raise OptionError("graph", "cannot be combined with chain", list(graph))
        values["chain"] = graph
    spec = PipelineSpec.of(**spec_values(values))
    if fused is None:
        spec = planned(spec)
    return build_job(df, spec, state_dir, spec.routing.planner_options,
                     start_controller=start_controller)


def build_job(df: DataFrame, spec: PipelineSpec, state_dir: str | os.PathLike[str],
              planner_settings: Mapping[str, Any], *,
              shared_settings: Mapping[str, Any] | None = None, start_controller: bool = True,
              restart: Callable[[], None] | None = None, controller: Controller | None = None,
              on_record: Callable[[dict[str, Any]], None] | None = None,
              backlog: Callable[[], int] | None = None) -> WindowedJob:
    """The job of a validated ``spec`` (the API's and the CLI's common path).

    ``planner_settings``: the user's settings of the spec's planner (one it does not take is
    an :class:`OptionError`); ``shared_settings``: settings offered to whichever planner the
    job names (the CLI's ``--min-imbalance``, ``--serialisation``), taken where it has them
    (:func:`~elastream.control.planners.job_planner`).

    ``restart``: how to stop and start the job's queries (a job that owns them);
    ``controller``: instead of the spec's planner; ``on_record``: called with each metrics
    record after it was written; ``backlog``: the rows waiting for the job (autoscaling's
    input, where the caller knows it).
    """
    if not df.isStreaming:
        raise OptionError("df", "must be a streaming DataFrame (spark.readStream...)",
                          type(df).__name__)
    if spec.scaling.scale_mode == "stop" and restart is None:
        raise OptionError("scale_mode", "stop needs elastream to own the queries "
                          "(elastream run); use live", spec.scaling.scale_mode)
    if controller is None:
        make_planner, options = job_planner(spec, shared=shared_settings, **planner_settings)
        controller = Controller(make_planner, options)
    pool = None
    if spec.scaling.spark_executors is not None:
        check_planner(spec)
        pool = ExecutorPool(df.sparkSession, *spec.scaling.spark_executors,
                            release_after=spec.scaling.release_after)
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
                           top_keys=top_keys(controller.options, spec.scaling.slots))
    warm_python_workers(df.sparkSession)
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
        return spec, Resume(spec.scaling.max_slots, None, spec.scales)
    resume = check_resume(json.loads(recorded), spec, place="state_dir",
                          location=str(state_dir), by_ranges=scales_by_ranges(spec))
    if resume.max_slots != spec.scaling.max_slots:
        spec = spec.with_(max_slots=resume.max_slots)
    return spec, resume


def _publish_initial(store: RoutingStore, spec: PipelineSpec, state_dir: Folder) -> None:
    """Version 0 of a new job; a resumed job's state must fit the spec."""
    current = store.current()
    if current is None:
        current = initial_table(spec, by_ranges=scales_by_ranges(spec))
        if spec.windowing.execution == "combine":
            current = replace(current, execution="combine")
        store.publish(current)
    if not store.has_owner():
        store.set_owner(0, current.version)
    if current.num_key_groups != spec.total_key_groups:
        raise OptionError("state_dir", f"holds a job of {current.num_key_groups} key groups, "
                          f"not {spec.total_key_groups}: use a new folder",
                          str(state_dir))
