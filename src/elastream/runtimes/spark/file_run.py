"""``elastream run``: a windowed job over files, on the Python API, with outputs beside it.

The input is a file stream, one file per micro-batch: a *replay* prepares a static data set as
event-time ordered chunks and feeds them into the folder the stream reads (all at once, or at
``rate`` rows/s), a *watch* reads the files that arrive in a folder, like a service, until
stopped. Or the input is a Kafka topic, read as a service too (:mod:`.kafka_source`). Either
way the job is :func:`~elastream.runtimes.spark.api.build_job`'s: micro-batches run back to
back while the control loop plans beside them; nothing waits for a batch.

Outputs, all under ``output``: ``results/``, ``dead_letter/`` (Parquet folders or Delta tables;
or Kafka topics: ``--sink``) and the counts of each micro-batch, written by the job's one query
(:mod:`.job_sink`: exactly once for every reader, the counts with the batch they count),
checkpoints (RocksDB state), the job's state (routing, hand-offs), ``metrics.jsonl`` and
``summary.json`` (:mod:`.summary`), which every end of a run writes: done, stopped, failed or
aborted. Running the same command again resumes where a
stopped or killed run was.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from tqdm import tqdm

from elastream.control.controller import Controller
from elastream.control.planners import scales_by_ranges
from elastream.core.errors import DataError
from elastream.core.identity import IDENTITY, identity
from elastream.core.spec import RunSpec
from elastream.runtimes.spark.api import WindowedJob, build_job
from elastream.runtimes.spark.backlog import Backlog, KafkaBacklog
from elastream.runtimes.spark.job_sink import JobSink, one_stream, sinks_of
from elastream.runtimes.spark.kafka_source import kafka_records, kafka_stream
from elastream.runtimes.spark.ledger import last_commit
from elastream.runtimes.spark.pipeline import METRICS, MIGRATION, ROUTING
from elastream.runtimes.spark.settings import job_settings
from elastream.runtimes.spark.summary import SUMMARY, summarize
from elastream.runtimes.spark.watch import QUARANTINE, WatchedFolder
from elastream.runtimes.stop_signals import stop_on_signal
from elastream.stores.filesystem import LocalFolder
from elastream.workloads.intake import TAKEN, FolderIntake, Quarantined
from elastream.workloads.replay import STAGED, Feeder, prepare_replay

POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Paths:
    """Where ``elastream run`` keeps outputs and internals, all under ``--output`` (local).

    The job's state (routing, migration, metrics:
    :class:`~elastream.runtimes.spark.pipeline.StatePaths`) is there too.
    """

    root: Path

    @property
    def routing(self) -> Path:  # noqa: D102
        return self.root / ROUTING

    @property
    def migration(self) -> Path:  # noqa: D102
        return self.root / MIGRATION

    @property
    def metrics(self) -> Path:  # noqa: D102
        return self.root / METRICS

    @property
    def results(self) -> Path:  # noqa: D102
        return self.root / "results"

    @property
    def dead_letter(self) -> Path:  # noqa: D102
        return self.root / "dead_letter"

    @property
    def summary(self) -> Path:  # noqa: D102
        return self.root / SUMMARY

    @property
    def checkpoints(self) -> Path:  # noqa: D102
        return self.root / "_checkpoints"

    @property
    def commits(self) -> Path:
        """The commit log of the job's query."""
        return self.checkpoints / "results" / "commits"

    @property
    def watch(self) -> Path:
        """A watched folder's files as the stream reads them, and the intake's book."""
        return self.root / "_watch"

    @property
    def quarantine(self) -> Path:
        """The watched folder's files that could not be read, one JSON line each."""
        return self.root / QUARANTINE

    @property
    def staged(self) -> Path:  # noqa: D102
        return self.root / STAGED

    @property
    def stream_input(self) -> Path:  # noqa: D102
        return self.root / "_replay" / "input"


class FileRun:
    """One ``elastream run``: its source, its job, its queries and its summary."""

    def __init__(self, spark: SparkSession, spec: RunSpec, controller: Controller | None = None,
                 on_batch: Callable[[dict[str, Any]], None] | None = None,
                 shared_settings: dict[str, Any] | None = None) -> None:
        self.spark = spark
        self.spec = spec
        self.controller = controller
        self.on_batch = on_batch
        self.shared_settings = shared_settings or {}
        self.paths = Paths(spec.files.output)
        self.queries: dict[str, StreamingQuery] = {}
        self.job: WindowedJob | None = None
        self.feeder: Feeder | None = None
        self.watched: WatchedFolder | None = None
        self.sinks = sinks_of(self.paths.root, spec.files.sink)

    # -- source -----------------------------------------------------------------------------
    def _source(self, interrupted: Callable[[], bool]) -> DataFrame | None:
        """The input stream (``None`` if stopped while waiting for a watched folder's file)."""
        spec = self.spec
        if spec.files.kafka is not None:
            assert spec.files.schema is not None  # the spec's rule for a Kafka input
            raw = kafka_stream(self.spark, spec.files.kafka,
                               rows_per_batch=spec.files.rows_per_batch,
                               starting_offsets=spec.files.starting_offsets)
            return kafka_records(raw, spec.files.schema, spec.files.format)
        if spec.files.mode == "watch":
            return self._watch(interrupted)
        manifest = prepare_replay(spec.files.path, spec.files.format, spec.source.time_col,
                                  spec.files.rows_per_batch, self.paths.staged,
                                  spec.longest_ms + spec.pane_ms + spec.source.lateness_ms)
        self.feeder = Feeder(self.paths.staged, self.paths.stream_input, manifest)
        folder = self.paths.stream_input
        first = self.paths.staged / manifest.chunks[0]
        probe = first if first.exists() else folder / manifest.chunks[0]
        schema = self.spark.read.parquet(str(probe)).schema
        return (self.spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
                .parquet(str(folder)))

    def _watch(self, interrupted: Callable[[], bool]) -> DataFrame | None:
        """A watched folder's stream (:mod:`.watch`): its bad files are quarantined."""
        spec = self.spec
        if not spec.files.path.is_dir():
            raise DataError("--mode watch needs --input to be a folder, got "
                            f"{str(spec.files.input)!r}")

        def told(file: Quarantined) -> None:
            tqdm.write(f"elastream: quarantined {spec.files.path / file.file}: {file.reason} "
                       f"(listed in {self.paths.quarantine})", file=sys.stderr)

        self.watched = WatchedFolder(self.spark, spec.files.path, self.paths.watch,
                                     format=spec.files.format, schema=spec.files.schema,
                                     quarantine=self.paths.quarantine, on_quarantine=told)
        intake = self.watched.intake
        if spec.files.schema is None and not intake.taken() and not intake.pending():
            print(f"elastream: waiting for the first .{spec.files.format} file in "
                  f"{spec.files.input} (or pass --schema)", file=sys.stderr, flush=True)
        return self.watched.open(interrupted)

    def _backlog(self) -> Callable[[], int]:
        """The rows the stream has still to read (:mod:`.backlog`).

        Of the replay's chunks fed, of the files the watched folder's intake took, or of the
        Kafka topic beyond the offsets the job committed.
        """
        if self.spec.files.kafka is not None:
            return KafkaBacklog(self.spec.files.kafka, self.paths.checkpoints / "results")
        if self.feeder is not None:
            feeder = self.feeder
            return Backlog(lambda: [feeder.watched / n for n in feeder.manifest.chunks],
                           "parquet", self.paths.root, self.paths.commits)
        assert self.watched is not None
        return Backlog(self.watched.intake.taken, self.spec.files.format, self.paths.root,
                       self.paths.commits)

    # -- queries ----------------------------------------------------------------------------
    def _start_query(self) -> None:
        """The job's one query: results, dead letter and counts (:mod:`.job_sink`)."""
        assert self.job is not None
        query = (one_stream(self.job.results, self.job.dead_letter).writeStream
                 .queryName("elastream")
                 .foreachBatch(JobSink(self.spark, self.paths.root, self.job.runtime.names,
                                       self.sinks))
                 .option("checkpointLocation", str(self.paths.checkpoints / "results"))
                 .start())
        self.queries["results"] = query
        self.job.runtime.poller.track("results", query)

    def _restart(self) -> None:
        """Stop-the-world scaling: stop the queries, start them again (state stays)."""
        self._stop_queries()
        self._start_query()

    def _stop_queries(self) -> None:
        for query in self.queries.values():
            if query.isActive:
                query.stop()

    def _failure(self) -> BaseException | None:
        for query in self.queries.values():
            error = query.exception()
            if error is not None:
                return error
        return None

    # -- running ----------------------------------------------------------------------------
    def run(self, interrupted: Callable[[], bool] | None = None) -> dict[str, Any]:
        """Run the job until its input is done (replay), ``max_batches``, or a stop signal.

        ``interrupted``: whether a stop was asked (default: Ctrl-C or SIGTERM while it runs).
        Whatever ends the run, the summary is written first.
        """
        if interrupted is None:
            with stop_on_signal() as signalled:
                return self.run(signalled)
        self.paths.root.mkdir(parents=True, exist_ok=True)
        # A new job's defining options, before anything of it is written; a job there already
        # is checked against them when it is built (build_job), and elastream run's options
        # before Spark starts (cli/run_checks.py).
        if not (self.paths.root / IDENTITY).exists():
            LocalFolder(self.paths.root).publish(IDENTITY,
                                                 json.dumps(identity(
                self.spec, by_ranges=scales_by_ranges(self.spec)), indent=2))
        ended = False
        try:
            if not interrupted():
                self._run(interrupted)
            ended = True
        finally:
            if self.watched is not None:
                self.watched.stop()
            summary = self.write_summary(interrupted=interrupted(),
                                         failed=not ended and not interrupted())
        return summary

    def _run(self, interrupted: Callable[[], bool]) -> None:
        spec = self.spec
        raw = self._source(interrupted)
        if raw is None:
            return
        self.spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "true")
        for key, value in job_settings(spec.partitions).items():
            self.spark.conf.set(key, value)
        self.job = build_job(raw, spec, spec.files.output, {},
                             shared_settings=self.shared_settings, start_controller=False,
                             restart=self._restart, controller=self.controller,
                             on_record=self.on_batch, backlog=self._backlog())
        self._start_query()
        self.job.loop.start()
        try:
            self._wait(interrupted)
        finally:
            self._stop_queries()
            self.job.stop()  # the control loop, after the queries' last reports
        failure = self._failure()
        if failure is not None:
            raise failure

    def _wait(self, interrupted: Callable[[], bool]) -> None:
        """Until the input is processed (replay, or ``max_batches``) or a stop signal."""
        spec = self.spec
        assert self.job is not None
        if self.feeder is not None:

            def stop_feeding() -> bool:
                self._check()
                return interrupted()

            self.feeder.feed(limit=spec.files.max_batches, rate=spec.files.rate, stop=stop_feeding)
        elif spec.files.max_batches is not None:
            while not interrupted() and self._data_batches() < spec.files.max_batches:
                self._check()
                time.sleep(POLL_SECONDS)
        else:
            while not interrupted():
                self._check()
                time.sleep(POLL_SECONDS)
            return
        self._await_caught_up(interrupted)

    def _data_batches(self) -> int:
        assert self.job is not None
        return sum(r["batches"] for r in self.job.loop.records if r["valid_rows"] > 0)

    def _check(self) -> None:
        """Raise the error a query or the control loop met."""
        assert self.job is not None
        failure = self._failure()
        if failure is not None:
            raise failure
        if self.job.loop.error is not None:
            raise self.job.loop.error
        if self.watched is not None:
            self.watched.check()

    def _await_caught_up(self, interrupted: Callable[[], bool]) -> None:
        """Until the results query processed every file there (a restart waits anew)."""
        while not interrupted():
            query = self.queries["results"]
            done, errors = _processing_all_available(query)
            while not done.wait(POLL_SECONDS) and not interrupted():
                self._check()
            if errors:
                raise errors[0]
            if done.is_set() and query is self.queries["results"] and query.isActive:
                self._await_reported(query, interrupted)
                return

    def _await_reported(self, query: StreamingQuery, interrupted: Callable[[], bool]) -> None:
        """Until the query reported its last committed micro-batch.

        ``processAllAvailable`` returns once a batch committed, and Spark reports the batch's
        progress (its observed metrics: the rows counted) just after; a stop in between would
        lose the report, and the batch, committed, never runs again.
        """
        committed = last_commit(self.paths.commits)
        while not interrupted() and query.isActive:
            progress = query.lastProgress
            if progress is not None and progress.batchId >= committed:
                return
            self._check()
            time.sleep(POLL_SECONDS / 10)

    def write_summary(self, *, interrupted: bool, failed: bool = False) -> dict[str, Any]:
        """Totals over every batch of the job (across resumed runs) into ``summary.json``.

        ``interrupted``: the run was stopped (Ctrl-C, SIGTERM); ``failed``: it ended by an
        error (then ``"failed": true`` is in the summary).
        """
        quarantined = FolderIntake.quarantined_in(self.paths.watch / TAKEN, self.paths.quarantine)
        summary = summarize(self.paths.root, self.paths.metrics, self.paths.commits,
                            self.sinks, len(quarantined),
                            [(e.batch, e.slots) for e in self.spec.scaling.scale_at])
        summary["interrupted"] = interrupted
        if failed:
            summary["failed"] = True
        self.paths.summary.write_text(json.dumps(summary, indent=2) + "\n")
        return summary


def _processing_all_available(query: StreamingQuery
                              ) -> tuple[threading.Event, list[BaseException]]:
    """``query.processAllAvailable()`` in a thread: set when it returns, with its error."""
    done, errors = threading.Event(), []

    def wait() -> None:
        try:
            query.processAllAvailable()
        except BaseException as error:  # re-raised by the waiting thread
            errors.append(error)
        done.set()

    threading.Thread(target=wait, daemon=True).start()
    return done, errors
