"""A folder that files keep arriving in, as a streaming DataFrame no bad file can stop.

:class:`WatchedFolder` runs a :class:`~elastream.workloads.intake.FolderIntake` in a thread of
the driver: every new file of the folder is checked and taken into a folder of its own (under
``work``), which the stream reads one file per micro-batch; a file Spark could not read is
quarantined instead (``work/quarantine.jsonl``, and ``on_quarantine`` called), and the stream
goes on with the next one. Parquet files with nanosecond timestamps, as pandas writes them,
are converted on the way. ``elastream run --mode watch`` reads its folder this way; so can a
Python API job (:func:`elastream.watch_folder`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from elastream.core.errors import OptionError
from elastream.core.options import OPTIONS
from elastream.workloads.intake import INPUT, FolderIntake, Quarantined

QUARANTINE = "quarantine.jsonl"
POLL_SECONDS = 0.2
OLDEST_FILE = "36500d"
"""The stream's ``maxFileAge``: files keep their modification time when taken, so an old file
arriving late must not count as too old to read."""


def read_options(fmt: str) -> dict[str, str]:
    """Reader options of an input format (CSV files carry a header row)."""
    return {"header": "true"} if fmt == "csv" else {}


class WatchedFolder:
    """``folder``'s files as a stream (:attr:`stream`, after :meth:`open`).

    ``work``: where the files taken and the books live (local); ``quarantine``: the list of
    files quarantined (default ``work/quarantine.jsonl``); ``schema``: the files' columns (a DDL
    string or a ``StructType``; default: the first file's, waiting for it);
    ``on_quarantine``: called in the intake's thread with each file quarantined.
    """

    def __init__(self, spark: SparkSession, folder: Path, work: Path, *,
                 format: str = "parquet", schema: str | StructType | None = None,
                 quarantine: Path | None = None,
                 on_quarantine: Callable[[Quarantined], None] | None = None) -> None:
        if not folder.is_dir():
            raise OptionError("folder", "must be an existing folder", str(folder))
        self.spark = spark
        self.format = format
        self.schema = schema
        self.intake = FolderIntake(folder, work, format, quarantine or work / QUARANTINE)
        self.on_quarantine = on_quarantine
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stream: DataFrame | None = None

    @property
    def quarantined(self) -> list[Quarantined]:
        """The folder's files in quarantine now."""
        return self.intake.quarantined()

    def open(self, interrupted: Callable[[], bool] = lambda: False, *,
             wait: bool = True) -> DataFrame | None:
        """Start taking files in; the stream (``None`` if ``interrupted`` while waiting).

        Without a schema it waits for the first file the intake takes and reads its schema
        (``wait=False``: only looks once; ``None`` if none could be taken).
        """
        schema = self.schema
        if schema is None:
            schema = self._first_schema(interrupted, wait)
            if schema is None:
                return None
        elif isinstance(schema, str):
            schema = self.spark.createDataFrame([], schema).schema
        self.intake.schema = to_arrow_schema(schema, timezone="UTC")
        self._thread = threading.Thread(target=self._run, name="elastream-intake", daemon=True)
        self._thread.start()
        self.stream = (self.spark.readStream.schema(schema).options(**read_options(self.format))
                       .option("maxFilesPerTrigger", 1).option("maxFileAge", OLDEST_FILE)
                       .format(self.format).load(str(self.intake.target)))
        return self.stream

    def _first_schema(self, interrupted: Callable[[], bool], wait: bool) -> StructType | None:
        """The schema of the first file taken (taken now, alone, if none was before)."""
        while True:
            taken = self.intake.taken()
            if taken:
                return self.spark.read.options(**read_options(self.format)) \
                    .format(self.format).load(str(taken[0])).schema
            self._take(most=1)
            if not self.intake.taken() and (not wait or interrupted()):
                return None
            if not self.intake.taken():
                self._stop.wait(POLL_SECONDS)

    def _take(self, most: int | None = None) -> None:
        for quarantined in self.intake.take(most):
            if self.on_quarantine is not None:
                self.on_quarantine(quarantined)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._take()
                self._stop.wait(POLL_SECONDS)
        except BaseException as error:  # raised again by check()
            self.error = error

    def check(self) -> None:
        """Raise the error the intake met (a full disk, a folder removed)."""
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """Stop taking files in (the stream's queries are stopped by whoever started them)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> WatchedFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def watch_folder(spark: SparkSession, folder: str | os.PathLike[str], *,
                 work_dir: str | os.PathLike[str], format: str = "parquet",
                 schema: str | StructType | None = None) -> WatchedFolder:
    """The files arriving in ``folder`` as a stream (``.stream``), bad files quarantined.

    ``work_dir``: a local folder of the job's (e.g. beside its ``state_dir``) for the files
    taken and the quarantine list; ``format``: parquet, csv or json; ``schema``: the files'
    columns as DDL (``"ts timestamp, user string, amount double"``) or a ``StructType``;
    without it, the folder's oldest readable file gives it. ``.quarantined`` lists the files
    not read and why; ``.stop()`` (or a ``with`` block) stops taking files in.
    """
    OPTIONS["format"].check(format)
    watched = WatchedFolder(spark, Path(folder), Path(work_dir), format=format, schema=schema)
    if watched.open(wait=False) is None:
        raise OptionError("schema", "is needed while the folder holds no readable file",
                          str(folder))
    return watched


__all__ = ["INPUT", "QUARANTINE", "WatchedFolder", "read_options", "watch_folder"]
