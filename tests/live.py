"""Live streams for the Spark tests: files written by a thread while the query runs."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from elastream.core.plan import Plan, PlanStatus


class FolderWriter(threading.Thread):
    """Writes ``parts`` as Parquet files into ``folder`` every ``interval`` seconds.

    Each file appears at once (written under a hidden name, then renamed), in order, as a
    service's input would; the writer never waits for the query. With ``hold_after`` it
    writes that many files, then waits for :meth:`release` (a test's own pause, not the
    query's).
    """

    def __init__(self, folder: Path, parts: Sequence[pd.DataFrame], interval: float,
                 hold_after: int | None = None) -> None:
        super().__init__(daemon=True)
        self.folder, self.parts, self.interval = folder, list(parts), interval
        self.hold_after = hold_after
        self.released = threading.Event()
        self.written = 0
        folder.mkdir(parents=True, exist_ok=True)

    def release(self) -> None:
        """Let a holding writer go on."""
        self.released.set()

    def run(self) -> None:
        for part in self.parts:
            if self.written == self.hold_after:
                self.released.wait()
            write_part(self.folder, self.written, part)
            self.written += 1
            time.sleep(self.interval)


def write_part(folder: Path, number: int, part: pd.DataFrame) -> None:
    """``part`` as ``folder/part-NNNNN.parquet``, appearing at once (written under a hidden
    name, then renamed) as a service's input would."""
    name = f"part-{number:05d}.parquet"
    part.to_parquet(folder / f".{name}.tmp", coerce_timestamps="us")
    os.replace(folder / f".{name}.tmp", folder / name)


def split(df: pd.DataFrame, files: int) -> list[pd.DataFrame]:
    """``df`` in ``files`` consecutive parts."""
    size = -(-len(df) // files)
    return [df.iloc[i:i + size] for i in range(0, len(df), size)]


def folder_stream(spark: Any, folder: Path) -> Any:
    """A streaming DataFrame over the Parquet files arriving in ``folder``, one per batch."""
    return (spark.readStream.schema("ts timestamp, key string, v double")
            .option("maxFilesPerTrigger", 1).parquet(str(folder)))


def read_folder(folder: Path) -> pd.DataFrame:
    """A sink folder as pandas reads it (every file there, no Spark log consulted)."""
    return _utc(pd.read_parquet(folder) if any(folder.glob("*.parquet")) else pd.DataFrame())


def read_by_every_reader(folder: Path, spark: Any = None) -> dict[str, pd.DataFrame]:
    """A sink folder as pandas, pyarrow, DuckDB (and, given a session, Spark) read it."""
    import duckdb
    import pyarrow.dataset as ds

    frames = {"pandas": read_folder(folder),
              "pyarrow": ds.dataset(str(folder), format="parquet").to_table().to_pandas(),
              "duckdb": duckdb.sql(f"select * from read_parquet('{folder}/*.parquet')").df()}
    if spark is not None:
        frames["spark"] = spark.read.parquet(str(folder)).toPandas()
    return {reader: _utc(frame) for reader, frame in frames.items()}


def every_reader_sees(folder: Path, expected: pd.DataFrame) -> None:
    """Raise unless pandas, pyarrow and DuckDB each read ``expected``'s windows from ``folder``
    (:func:`tests.oracle.compare_results`), each window once."""
    from tests.oracle import compare_results

    for reader, frame in read_by_every_reader(folder).items():
        try:
            compare_results(frame, expected)
        except AssertionError as problem:
            raise AssertionError(f"as {reader} reads it: {problem}") from None


def _utc(frame: pd.DataFrame) -> pd.DataFrame:
    """Window bounds as UTC timestamps, however the reader typed them."""
    for column in ("window_start", "window_end"):
        if column in frame:
            frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def no_moves(snapshot: Any, current: Any, *, options: Any) -> Plan:
    """A planner that never moves anything (another thread publishes instead)."""
    return Plan(PlanStatus.FEASIBLE, ())


@contextmanager
def running(query: Any, job: Any) -> Iterator[None]:
    """Stop the query and the job's control loop however the block ends."""
    try:
        yield
    finally:
        if query.isActive:
            query.stop()
        job.stop()


def assert_one_version_per_batch(job: Any) -> int:
    """Every stage of every batch routed by one version: the routing joins by the one bound
    to the batch, the consolidate owner by the batch's owner version, never a newer one.

    Returns how many distinct versions the batches' routing joins used.
    """
    used = [u for r in job.metrics for u in r["routing_versions_used"]]
    assert used, "no batch routed any row"
    store = job.runtime.store
    for batch in used:
        compute, owner = set(batch.get("compute", [])), set(batch.get("owner", []))
        assert len(compute) <= 1 and len(owner) <= 1, batch
        bound = store.bound(batch["batch"])
        assert bound is None or compute <= {bound}, (batch, bound)
        assert owner <= {store.owner(batch["batch"])}, batch
        assert not (compute and owner) or max(owner) <= max(compute), batch
    return len({v for b in used for v in b.get("compute", [])})
