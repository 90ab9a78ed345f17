"""A Parquet sink that holds each micro-batch's rows exactly once for every reader.

Spark's file sink is exactly-once for Spark readers only: a micro-batch that fails after some
write tasks finished leaves their files in the folder but not in the sink's log
(``_spark_metadata``), the retry writes its own, and pandas, pyarrow, DuckDB or Polars read
both; a process killed mid-write leaves zero-byte files that no reader can open.

:class:`ParquetBatchSink` is a ``foreachBatch`` function instead: micro-batch ``N``'s rows
become one file ``part-N.parquet``, written under a hidden temporary name and renamed into
place, so a reader sees the whole batch or none of it. A retried batch (same id, same input,
same state) writes the same rows under the same name, replacing the first attempt's file.
Temporary files that a killed process left behind are hidden (``.``-prefixed: every reader
skips them) and removed when the sink is made again. Batches without rows write no file.

Read the folder with ``pandas.read_parquet(folder)``, ``pyarrow.dataset.dataset(folder)``,
``spark.read.parquet(folder)`` or DuckDB's ``read_parquet('folder/*.parquet')``.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame

_PART = re.compile(r"^part-(\d+)\.parquet$")


class ParquetBatchSink:
    """``query = df.writeStream.foreachBatch(ParquetBatchSink(folder)).start()``."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        for leftover in self.folder.glob(".part-*.tmp"):
            leftover.unlink(missing_ok=True)

    def path(self, batch_id: int) -> Path:
        """The file of micro-batch ``batch_id``."""
        return self.folder / f"part-{batch_id:08d}.parquet"

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id``'s rows (the ``foreachBatch`` callback)."""
        table = frame.toArrow()
        if table.num_rows == 0:
            return
        target = self.path(batch_id)
        tmp = self.folder / f".{target.name}.{uuid.uuid4().hex}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, target)


def batch_of(path: Path) -> int | None:
    """The micro-batch a sink file holds (``None`` for other files)."""
    match = _PART.match(path.name)
    return int(match[1]) if match else None
