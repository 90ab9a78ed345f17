"""The two engines under comparison, driven the same way over the same replayed chunks.

* **elastream**: :class:`elastream.runtimes.spark.file_run.FileRun` with the ``hash`` planner (the
  routing never changes, so only the window technique differs): builtin aggregation into 1-pane
  partials, then one ``transformWithStateInPandas`` operator assembling every window length from
  panes and shorter windows with the fewest merges.
* **native**: what a Spark user writes — per window spec a streaming
  ``groupBy(window(ts, length, slide), key).agg(...)`` in append mode; Spark expands every row into
  each of the ``ceil(length/slide)`` windows that hold it. One streaming query per spec by
  default; with ``union=True`` the branches are unioned into a single query instead.

Both read the same chunk files (hard links to one prepared copy), one chunk per micro-batch
(``maxFilesPerTrigger=1``), with a 0 s watermark, ``slots`` shuffle partitions and the session's
RocksDB state store. Each step moves one chunk into the watched folder and waits
(``processAllAvailable``) until every query of the engine has processed it; the wall time summed
over the steps is what is reported. Query start-up and chunk preparation are not timed.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from common import native_windowed
from elastream.control.controller import Controller
from elastream.control.planners import planner
from elastream.core.aggregates import AggSpec
from elastream.core.spec import RunSpec
from elastream.core.windows import WindowSpec, pane_ms
from elastream.runtimes.spark.file_run import FileRun, Paths
from elastream.workloads.replay import PUNCT, Feeder, ReplayManifest, prepare_replay

TIME_COL, KEY_COL = "date", "origin"


@dataclass(frozen=True)
class Replay:
    """One input (the first ``rows`` flights in time order) cut into chunks once."""

    input: Path
    staged: Path
    manifest: ReplayManifest
    frame: pd.DataFrame

    @property
    def rows(self) -> int:
        return self.manifest.rows

    @property
    def first_chunk_rows(self) -> int:
        return int(pq.read_metadata(self.staged / self.manifest.chunks[0]).num_rows)


@dataclass(frozen=True)
class Measured:
    """What one engine did on one window set."""

    wall_seconds: float
    input_rows: int
    micro_batches: int
    queries: int
    step_seconds: tuple[float, ...]
    results: pd.DataFrame

    def mismatch(self, expected: pd.DataFrame) -> str | None:
        """``None`` when the results equal the oracle's ``expected``, else the difference.

        (``tests/`` must be on ``sys.path``: every benchmark that checks puts it there.)
        """
        from oracle import compare_results

        if self.results.empty:
            return f"no output rows (expected {len(expected)})"
        try:
            compare_results(self.results, expected)
        except AssertionError as error:
            return str(error)
        return None


def prepare(flights: Path, rows: int | None, rows_per_batch: int, folder: Path,
            punct_after_ms: int) -> Replay:
    """Write the first ``rows`` flights (time order) and cut them into replay chunks."""
    frame = pq.read_table(flights).to_pandas()
    frame = frame.sort_values(TIME_COL, kind="stable", ignore_index=True)
    if rows is not None:
        frame = frame.head(rows)
    return prepare_frame(frame, rows_per_batch, folder, punct_after_ms)


def prepare_frame(frame: pd.DataFrame, rows_per_batch: int, folder: Path,
                  punct_after_ms: int) -> Replay:
    """Write ``frame`` (columns ``TIME_COL``, ``KEY_COL`` and values, in time order) and cut it
    into replay chunks: any input, flights or synthetic."""
    folder.mkdir(parents=True)
    source = folder / "input.parquet"
    frame.to_parquet(source, index=False)
    manifest = prepare_replay(source, "parquet", TIME_COL, rows_per_batch, folder / "staged",
                              punct_after_ms)
    return Replay(source, folder / "staged", manifest, frame)


def punct_after_ms(window_sets: list[tuple[WindowSpec, ...]]) -> int:
    """A punctuation past every window of every set (what FileRun would pick, at the most)."""
    return max(max(w.length_ms for w in ws) + pane_ms(ws) for ws in window_sets)


def _link_chunks(replay: Replay, target: Path) -> None:
    """Give a run its own copy of the staged chunks (hard links: the feeder moves them)."""
    shutil.copytree(replay.staged, target, copy_function=os.link)


def _read_results(folder: Path) -> pd.DataFrame:
    if not folder.exists():
        return pd.DataFrame()
    frame: pd.DataFrame = ds.dataset(str(folder), format="parquet").to_table().to_pandas()
    return frame


def run_elastream(spark: SparkSession, replay: Replay, windows: tuple[WindowSpec, ...],
                  aggs: tuple[AggSpec, ...], slots: int, rows_per_batch: int,
                  folder: Path) -> Measured:
    """FileRun with the hash planner; wall time from its summary (sum over batch steps)."""
    spec = RunSpec.of(input=replay.input, output=folder, time_col=TIME_COL, key_col=KEY_COL,
                      aggs=aggs, windows=windows, slots=slots, planner="hash",
                      rows_per_batch=rows_per_batch)
    _link_chunks(replay, Paths(folder).staged)
    plan, options = planner("hash")
    summary = FileRun(spark, spec, Controller(plan, options)).run()
    steps = [json.loads(line)["wall_seconds"]
             for line in Paths(folder).metrics.read_text().splitlines() if line.strip()]
    return Measured(wall_seconds=float(summary["wall_seconds"]),
                    input_rows=int(summary["input_rows"]),
                    micro_batches=int(summary["batches"]), queries=2, step_seconds=tuple(steps),
                    results=_read_results(Paths(folder).results))


def _windowed(rows: DataFrame, spec: WindowSpec, aggs: tuple[AggSpec, ...]) -> DataFrame:
    result: DataFrame = native_windowed(rows, spec, aggs, time_col=TIME_COL, key_col=KEY_COL)
    return result


def run_native(spark: SparkSession, replay: Replay, windows: tuple[WindowSpec, ...],
               aggs: tuple[AggSpec, ...], slots: int, folder: Path, *,
               union: bool = False) -> Measured:
    """Spark's own sliding ``window()``: one query per spec (or one union query)."""
    staged, watched = folder / "staged", folder / "input"
    _link_chunks(replay, staged)
    feeder = Feeder(staged, watched, replay.manifest)
    spark.conf.set("spark.sql.shuffle.partitions", str(slots))
    # As in elastream's replay: the chunk stream drives the batches and the second punctuation
    # chunk runs the batch that closes the last windows, so no-data batches are off for both.
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    schema = spark.read.parquet(str(staged / replay.manifest.chunks[0])).schema

    def source() -> DataFrame:
        raw = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(watched))
        # The punctuation row only moves the watermark. The filter mentions the event time so
        # the optimizer keeps it above the watermark (as elastream's parse.valid does).
        marked = raw.withWatermark(TIME_COL, "0 seconds")
        return marked.filter(~(F.col(PUNCT) & F.col(TIME_COL).isNotNull()))

    if union:
        rows = source()
        plans = [functools.reduce(DataFrame.unionByName, (_windowed(rows, w, aggs)
                                                          for w in windows))]
    else:
        plans = [_windowed(source(), w, aggs) for w in windows]
    queries = [
        plan.writeStream.queryName(f"native_{i}").format("parquet").outputMode("append")
        .option("checkpointLocation", str(folder / "checkpoints" / str(i)))
        .start(str(folder / "results" / str(i)))
        for i, plan in enumerate(plans)
    ]
    steps: list[float] = []
    try:
        while True:
            started = time.perf_counter()
            if feeder.feed_next() is None:
                break
            for query in queries:
                query.processAllAvailable()
            steps.append(round(time.perf_counter() - started, 3))
        batches = sum(q.lastProgress["batchId"] + 1 for q in queries if q.lastProgress)
    finally:
        for query in queries:
            query.stop()
    frames = [_read_results(folder / "results" / str(i)) for i in range(len(plans))]
    frames = [f for f in frames if len(f)]
    results = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return Measured(wall_seconds=round(sum(steps), 3), input_rows=replay.rows,
                    micro_batches=batches, queries=len(queries), step_seconds=tuple(steps),
                    results=results)
