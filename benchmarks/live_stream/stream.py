"""A live file stream and one elastream job on it, through the Python API.

:func:`stream_files` cuts the flights into the event-time ordered files a producer would drop
into a folder (``prepare_replay``'s cut: never inside one timestamp, so no row arrives at or
below a watermark it already moved; two one-row *punctuation* files at time ``P``, past every
window, end the stream and close every window). A :class:`Writer` thread writes them into the
watched folder at a fixed rate — each under a hidden name, then renamed in — and never waits
for the query. :func:`run_live` starts the job's results query on the folder and the writer
beside it, and waits until the watermark reached ``P`` and the results hold every window
expected (or a timeout passed: then the oracle check tells what is missing).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from elastream.api import windowed
from elastream.runtimes.spark.sink import ParquetBatchSink
from elastream.workloads.replay import PUNCT, prepare_replay

POLL_SECONDS = 0.2


@dataclass(frozen=True)
class StreamFile:
    """One file of the stream and the latest event time it holds (UTC, epoch ms)."""

    table: pa.Table
    max_time_ms: int
    punctuation: bool

    @property
    def rows(self) -> int:
        """Rows in the file (a punctuation file's one row included)."""
        return int(self.table.num_rows)

    @property
    def data_rows(self) -> int:
        """Flights in the file."""
        return 0 if self.punctuation else self.rows


def stream_files(source: Path, staging: Path, rows_per_file: int, punct_after_ms: int
                 ) -> list[StreamFile]:
    """The stream's files in order (the chunks ``elastream run --mode replay`` feeds)."""
    manifest = prepare_replay(source, "parquet", "date", rows_per_file, staging, punct_after_ms)
    files = []
    for name in manifest.chunks:
        table = pq.read_table(staging / name)
        times = table["date"].cast(pa.timestamp("ms", "UTC")).cast(pa.int64()).to_numpy()
        files.append(StreamFile(table, int(times.max()), bool(table[PUNCT].to_numpy().all())))
    return files


Pace = tuple[tuple[float, float], ...]
"""The stream's rate in phases: ``(seconds, rows/s)`` each, in order; the last one lasts until
the stream ends."""


def due_seconds(rows: float, pace: Pace) -> float:
    """When a stream paced by ``pace`` has produced ``rows`` rows, in seconds from its start.

    >>> due_seconds(150, ((10.0, 10.0), (5.0, 20.0)))  # 100 rows in 10 s, then 50 at 20/s
    12.5
    """
    elapsed = 0.0
    for index, (seconds, rate) in enumerate(pace):
        last = index == len(pace) - 1
        if last or rows <= seconds * rate:
            return elapsed + rows / rate
        rows -= seconds * rate
        elapsed += seconds
    raise ValueError("a pace needs at least one phase")


class Writer(threading.Thread):
    """Writes the files into ``folder``, file ``i`` as soon as ``pace`` allows its rows.

    ``pace``: one rate (rows/s) or phases of rates (:data:`Pace`). ``arrivals[i]``: the
    wall-clock time (``time.time()``) file ``i`` appeared in the folder; ``on_written(i)`` runs
    after it (the scaling run scales there).
    """

    def __init__(self, files: Sequence[StreamFile], folder: Path, pace: float | Pace,
                 on_written: Callable[[int], None] | None = None) -> None:
        super().__init__(name="stream-writer", daemon=True)
        self.files = files
        self.folder = folder
        self.pace: Pace = ((1.0, float(pace)),) if isinstance(pace, int | float) else pace
        self.on_written = on_written
        self.arrivals: list[float] = []
        self.late_seconds = 0.0  # the writer's own worst lag behind its schedule
        self.error: BaseException | None = None
        self._done = threading.Event()

    def finish(self) -> None:
        """Stop writing (if not done yet) and wait for the thread."""
        self._done.set()
        self.join()

    def _write(self, table: pa.Table, name: str) -> None:
        tmp = self.folder / f".{name}.tmp"  # hidden: the file source skips it
        pq.write_table(table, tmp)
        os.replace(tmp, self.folder / name)

    def run(self) -> None:
        try:
            started = time.monotonic()
            rows = 0
            for index, stream_file in enumerate(self.files):
                due = started + due_seconds(rows, self.pace)
                self._done.wait(max(0.0, due - time.monotonic()))
                self.late_seconds = max(self.late_seconds, time.monotonic() - due)
                self._write(stream_file.table, f"flights-{index:06d}.parquet")
                self.arrivals.append(time.time())
                rows += stream_file.rows
                if self.on_written is not None:
                    self.on_written(index)
                if self._done.is_set():
                    break
        except BaseException as error:  # reported by run_live
            self.error = error


@dataclass(frozen=True)
class LiveSettings:
    """What every live run shares: the stream's pace (rows/s, or :data:`Pace`) and the job's
    settings."""

    rate: float | Pace
    max_files_per_trigger: int
    key_groups: int
    max_moves: int
    windows: tuple[str, ...]
    aggs: tuple[str, ...]
    timeout: float


@dataclass(frozen=True)
class RunSettings:
    """One run's job settings (the API's arguments) and, for a scaling run, when to scale."""

    name: str
    planner: str
    slots: int
    max_slots: int = 0
    scale_after: tuple[tuple[float, int], ...] = ()
    """``(fraction of the data files written, slots)``: then ``job.scale(slots)``."""
    planner_options: tuple[tuple[str, Any], ...] = ()
    """Settings of the planner (``elastream.windowed``'s ``planner_options``)."""
    spark_executors: tuple[int, int] | None = None
    release_after: float = 30.0


@dataclass
class LiveRun:
    """What one live run left: metrics records, progress reports, arrivals, outputs."""

    name: str
    metrics: list[dict[str, Any]]
    progress: list[dict[str, Any]]
    arrivals: list[float]
    results_dir: Path
    complete: bool
    writer_late_seconds: float
    scale_requests: list[tuple[int, int, float]] = field(default_factory=list)
    """``(file index, slots, time)`` of each ``job.scale(slots)`` call."""


def run_live(spark: Any, files: Sequence[StreamFile], run: RunSettings, live: LiveSettings,
             folder: Path, expected_rows: int) -> LiveRun:
    """Stream ``files`` into ``folder/in`` while the job runs on them, until it is complete."""
    inbox = folder / "in"
    inbox.mkdir(parents=True)
    probe = folder / "schema.parquet"
    pq.write_table(files[0].table.slice(0, 1), probe)
    schema = spark.read.parquet(str(probe)).schema
    df = (spark.readStream.schema(schema)
          .option("maxFilesPerTrigger", live.max_files_per_trigger).parquet(str(inbox)))
    job = windowed(df, key="origin", time="date", windows=live.windows, aggs=live.aggs,
                   planner=run.planner, slots=run.slots, key_groups=live.key_groups,
                   max_moves=live.max_moves, max_slots=run.max_slots,
                   planner_options=dict(run.planner_options),
                   spark_executors=run.spark_executors, release_after=run.release_after,
                   state_dir=folder / "state")
    results = folder / "results"
    sink = ParquetBatchSink(results)
    query = (job.results.writeStream.queryName(f"live_{run.name}").foreachBatch(sink)
             .option("checkpointLocation", str(folder / "checkpoint")).start())
    requests: list[tuple[int, int, float]] = []
    data_files = sum(1 for f in files if not f.punctuation)
    due = sorted((round(f * data_files), slots) for f, slots in run.scale_after)

    def scale(index: int) -> None:
        while due and index + 1 >= due[0][0]:
            _, slots = due.pop(0)
            job.scale(slots)
            requests.append((index, slots, time.time()))

    writer = Writer(files, inbox, live.rate, on_written=scale)
    writer.start()
    try:
        complete = _await_complete(query, writer, results, files[-1].max_time_ms,
                                   expected_rows, live.timeout)
        progress = [json.loads(p.json) for p in query.recentProgress]
        (folder / "progress.json").write_text(json.dumps(progress))  # for a closer look
    finally:
        writer.finish()
        query.stop()
        job.stop()
    return LiveRun(run.name, job.metrics, progress, writer.arrivals, results, complete,
                   writer.late_seconds, requests)


def _await_complete(query: Any, writer: Writer, results: Path, punct_ms: int,
                    expected_rows: int, timeout: float) -> bool:
    """Until every file is in, the watermark reached ``P`` and the results are complete.

    ``False`` if the results are still short ``timeout`` seconds after the last file.
    """
    counted: dict[str, int] = {}
    deadline = None
    while True:
        if writer.error is not None:
            raise writer.error
        error = query.exception()
        if error is not None:
            raise error
        last = query.lastProgress
        watermark = (last.eventTime or {}).get("watermark") if last is not None else None
        at_end = watermark is not None and pd.Timestamp(watermark).value // 10**6 >= punct_ms
        if len(writer.arrivals) == len(writer.files):
            deadline = deadline or time.monotonic() + timeout
            if at_end and _rows(results, counted) >= expected_rows:
                return True
            if time.monotonic() > deadline:
                if not at_end:
                    raise TimeoutError(f"watermark {watermark} {timeout:.0f} s after the last "
                                       "file: the query fell too far behind")
                return False
        time.sleep(POLL_SECONDS)


def _rows(folder: Path, counted: dict[str, int]) -> int:
    """Rows in the sink's files (each counted once: a file is complete when it appears)."""
    for path in folder.glob("part-*.parquet"):
        if path.name not in counted:
            counted[path.name] = pq.ParquetFile(path).metadata.num_rows
    return sum(counted.values())
