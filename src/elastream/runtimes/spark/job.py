"""``elastream run``: a windowed job over files, on the Python API, with outputs beside it.

The input is a file stream, one file per micro-batch: a *replay* prepares a static data set as
event-time ordered chunks and feeds them into the folder the stream reads (all at once, or at
``rate`` rows/s), a *watch* reads the files that arrive in a folder, like a service, until
stopped. Either way the job is :func:`~elastream.runtimes.spark.api.build_job`'s: micro-batches
run back to back while the control loop plans beside them; nothing waits for a batch.

Outputs, all under ``output``: ``results/`` and ``dead_letter/`` through
:class:`~elastream.runtimes.spark.sink.ParquetBatchSink` (exactly once for every reader),
checkpoints (RocksDB state), the job's state (routing, hand-offs), ``metrics.jsonl`` and
``summary.json``. Running the same command again resumes where a stopped or killed run was.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType
from tqdm import tqdm

from elastream.control.controller import Controller
from elastream.core.errors import DataError
from elastream.core.job import JobSpec
from elastream.core.metrics_file import read_metrics
from elastream.runtimes.spark.api import WindowedJob, build_job
from elastream.runtimes.spark.pipeline import METRICS, MIGRATION, ROUTING, dead_letter
from elastream.runtimes.spark.settings import job_settings
from elastream.runtimes.spark.sink import ParquetBatchSink
from elastream.workloads.replay import STAGED, Feeder, prepare_replay

POLL_SECONDS = 0.2


@contextmanager
def _stop_on_signal() -> Iterator[Callable[[], bool]]:
    """Turn the first Ctrl-C (or SIGTERM) into a graceful stop; a second Ctrl-C aborts.

    Replaces PySpark's own SIGINT handler (which cancels running Spark jobs) while the job
    runs. Outside the main thread signals cannot be caught, so nothing changes there.
    """
    requested: list[bool] = []

    def handler(signum: int, frame: object) -> None:
        if requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        requested.append(True)
        # tqdm.write clears a progress bar drawn on stderr first, so the notice gets a line
        # of its own; with no bar it is a plain print.
        tqdm.write("elastream: stopping (Ctrl-C again to abort)", file=sys.stderr)

    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield lambda: bool(requested)
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


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
        return self.root / "summary.json"

    @property
    def checkpoints(self) -> Path:  # noqa: D102
        return self.root / "_checkpoints"

    @property
    def staged(self) -> Path:  # noqa: D102
        return self.root / STAGED

    @property
    def stream_input(self) -> Path:  # noqa: D102
        return self.root / "_replay" / "input"


def _read_options(fmt: str) -> dict[str, str]:
    """Reader options of an input format (CSV files carry a header row)."""
    return {"header": "true"} if fmt == "csv" else {}


class SparkJob:
    """One ``elastream run``: its source, its job, its queries and its summary."""

    def __init__(self, spark: SparkSession, spec: JobSpec, controller: Controller | None = None,
                 on_batch: Callable[[dict[str, Any]], None] | None = None,
                 shared_settings: dict[str, Any] | None = None) -> None:
        self.spark = spark
        self.spec = spec
        self.controller = controller
        self.on_batch = on_batch
        self.shared_settings = shared_settings or {}
        self.paths = Paths(spec.output)
        self.queries: dict[str, StreamingQuery] = {}
        self.job: WindowedJob | None = None
        self.feeder: Feeder | None = None
        self.raw_schema: StructType | None = None

    # -- source -----------------------------------------------------------------------------
    def _source(self, interrupted: Callable[[], bool]) -> DataFrame | None:
        """The input stream (``None`` if stopped while waiting for a watched folder's file)."""
        spec = self.spec
        if spec.mode == "replay":
            manifest = prepare_replay(spec.input, spec.format, spec.time_col,
                                      spec.rows_per_batch, self.paths.staged,
                                      spec.longest_ms + spec.pane_ms + spec.lateness_ms)
            self.feeder = Feeder(self.paths.staged, self.paths.stream_input, manifest)
            folder, fmt = self.paths.stream_input, "parquet"
            first = self.paths.staged / manifest.chunks[0]
            probe = first if first.exists() else folder / manifest.chunks[0]
            schema: StructType | str = self.spark.read.parquet(str(probe)).schema
        else:
            folder, fmt = spec.input, spec.format
            if not folder.is_dir():
                raise DataError(f"--mode watch needs --input to be a folder, got {str(folder)!r}")
            if spec.schema is not None:
                schema = spec.schema
            else:
                found = self._await_first_file(folder, fmt, interrupted)
                if found is None:
                    return None
                schema = (self.spark.read.options(**_read_options(fmt)).format(fmt)
                          .load(str(folder)).schema)
        return (self.spark.readStream.schema(schema).options(**_read_options(fmt))
                .option("maxFilesPerTrigger", 1).format(fmt).load(str(folder)))

    @staticmethod
    def _await_first_file(folder: Path, fmt: str,
                          interrupted: Callable[[], bool]) -> Path | None:
        """A watched folder's first file, waiting for it; ``None`` if stopped first."""
        told = False
        while not interrupted():
            found = next((p for p in sorted(folder.rglob(f"*.{fmt}"))
                          if not p.name.startswith((".", "_"))), None)
            if found is not None:
                return found
            if not told:
                print(f"elastream: waiting for the first .{fmt} file in {folder} "
                      "(or pass --schema)", file=sys.stderr, flush=True)
                told = True
            time.sleep(POLL_SECONDS)
        return None

    # -- queries ----------------------------------------------------------------------------
    def _start_results(self) -> None:
        assert self.job is not None
        query = (self.job.results.writeStream.queryName("results")
                 .foreachBatch(ParquetBatchSink(self.paths.results))
                 .option("checkpointLocation", str(self.paths.checkpoints / "results"))
                 .start())
        self.queries["results"] = query
        self.job.runtime.poller.track("results", query)
        if self.spec.mode == "watch":
            self._start_dead_letter(catch_up=False)

    def _start_dead_letter(self, *, catch_up: bool) -> StreamingQuery:
        """The dead-letter query: the same files as the results query, read on its own.

        A replay runs it once at the end (``catch_up``: every file in one batch, then it
        stops); a watched folder runs it continuously.
        """
        assert self.job is not None
        frame = self.job.dead_letter
        if catch_up:
            assert self.raw_schema is not None
            everything = (self.spark.readStream.schema(self.raw_schema)
                          .format("parquet").load(str(self.paths.stream_input)))
            frame = dead_letter(everything, self.spec, self.job.runtime.names)
        writer = (frame.writeStream.queryName("dead_letter")
                  .foreachBatch(ParquetBatchSink(self.paths.dead_letter))
                  .option("checkpointLocation", str(self.paths.checkpoints / "dead_letter")))
        if catch_up:
            writer = writer.trigger(availableNow=True)
        query = writer.start()
        self.queries["dead_letter"] = query
        self.job.runtime.poller.track("dead_letter", query)
        return query

    def _restart(self) -> None:
        """Stop-the-world scaling: stop the queries, start them again (state stays)."""
        self._stop_queries()
        self._start_results()

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
    def run(self) -> dict[str, Any]:
        """Run the job until its input is done (replay), ``max_batches``, or a stop signal."""
        spec = self.spec
        self.paths.root.mkdir(parents=True, exist_ok=True)
        with _stop_on_signal() as interrupted:
            raw = self._source(interrupted)
            if raw is None:
                return self._finish(interrupted=True)
            self.raw_schema = raw.schema
            self.spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "true")
            for key, value in job_settings(spec.partitions).items():
                self.spark.conf.set(key, value)
            self.job = build_job(raw, spec, spec.output, {},
                                 shared_settings=self.shared_settings, start_controller=False,
                                 restart=self._restart, controller=self.controller,
                                 on_record=self.on_batch,
                                 spark_executors=spec.spark_executors,
                                 release_after=spec.release_after)
            self._start_results()
            self.job.loop.start()
            try:
                self._wait(interrupted)
            finally:
                self._stop_queries()
                self.job.loop.stop()
            if self.feeder is not None and not interrupted() and self._failure() is None:
                self._start_dead_letter(catch_up=True).awaitTermination()
            self.job.loop.drain()
            failure = self._failure()
            if failure is not None:
                raise failure
            return self._finish(interrupted=interrupted())

    def _wait(self, interrupted: Callable[[], bool]) -> None:
        """Until the input is processed (replay, or ``max_batches``) or a stop signal."""
        spec = self.spec
        assert self.job is not None
        if self.feeder is not None:

            def stop_feeding() -> bool:
                self._check()
                return interrupted()

            self.feeder.feed(limit=spec.max_batches, rate=spec.rate, stop=stop_feeding)
        elif spec.max_batches is not None:
            while not interrupted() and self._data_batches() < spec.max_batches:
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
        commits = self.paths.checkpoints / "results" / "commits"
        committed = max((int(p.name) for p in commits.iterdir() if p.name.isdigit()),
                        default=-1) if commits.exists() else -1
        while not interrupted() and query.isActive:
            progress = query.lastProgress
            if progress is not None and progress.batchId >= committed:
                return
            self._check()
            time.sleep(POLL_SECONDS / 10)

    def _finish(self, *, interrupted: bool) -> dict[str, Any]:
        summary = self.write_summary()
        summary["interrupted"] = interrupted
        return summary

    def write_summary(self) -> dict[str, Any]:
        """Totals over every batch of the job (across resumed runs) into ``summary.json``."""
        summary = summarize(self.paths.metrics, self.paths.checkpoints / "results" / "commits")
        summary["output_rows"] = _parquet_rows(self.paths.results)
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


def _parquet_rows(folder: Path) -> int:
    """Rows in a sink folder's Parquet files (hidden temporary files are skipped)."""
    if not folder.exists() or not any(folder.glob("*.parquet")):
        return 0
    return int(ds.dataset(str(folder), format="parquet").count_rows())


def unmetered_batches(records: list[dict[str, Any]], commits: Path) -> list[int]:
    """Committed micro-batches no metrics record covers (a kill between commit and record).

    Spark keeps the last 100 commits, so only those are checked.
    """
    if not commits.exists():
        return []
    committed = {int(p.name) for p in commits.iterdir() if p.name.isdigit()}
    covered = {b for r in records if r["batches"] > 0
               for b in range(r["first_batch_id"], r["batch_id"] + 1)}
    return sorted(committed - covered)


def summarize(metrics_path: Path, commits: Path | None = None) -> dict[str, Any]:
    """Totals of a job's metrics file (``summary.json``).

    ``nothing_lost``: input rows = valid + dead-letter rows over the batches metered; a
    batch committed just before the process was killed may have no record
    (``unmetered_batches``, from the results query's commit log ``commits``).
    """
    records = read_metrics(metrics_path)
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
        "unmetered_batches": unmetered_batches(records, commits) if commits else [],
        "routing_versions": max((r["routing_version"] for r in records), default=0) + 1,
        "moves": total["moves"],
        "wall_seconds": round(wall, 3),
        "rows_per_second": round(input_rows / wall, 1) if wall > 0 else 0.0,
        "nothing_lost": input_rows == total["valid_rows"] + total["dead_letter_rows"],
    }
