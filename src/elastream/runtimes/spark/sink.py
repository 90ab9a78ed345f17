"""A Parquet sink that holds each micro-batch's rows exactly once for every reader.

Spark's file sink is exactly-once for Spark readers only: a micro-batch that fails after some
write tasks finished leaves their files in the folder but not in the sink's log
(``_spark_metadata``), the retry writes its own, and pandas, pyarrow, DuckDB or Polars read
both; a process killed mid-write leaves zero-byte files that no reader can open.

:class:`ParquetBatchSink` is a ``foreachBatch`` function instead: micro-batch ``N``'s rows
become one file ``part-N.parquet``, written whole or not at all
(:meth:`elastream.stores.filesystem.Folder.write`: under a hidden temporary name and renamed into
place on a local disk or HDFS, one upload to an object store), so a reader sees the whole batch
or none of it. A retried batch (same id, same input, same state) writes the same rows under the
same name, replacing the first attempt's file (HDFS keeps the first: the same rows). Temporary
files that a killed process left behind are hidden (``.``-prefixed: every reader skips them)
and, on a local disk, removed when the sink is made again. Batches without rows write no file.

Read the folder with ``pandas.read_parquet(folder)``, ``pyarrow.dataset.dataset(folder)``,
``spark.read.parquet(folder)`` or DuckDB's ``read_parquet('folder/*.parquet')``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyspark.sql import DataFrame

from elastream.stores import filesystem
from elastream.stores.filesystem import Folder, LocalFolder

_PART = re.compile(r"^part-(\d+)\.parquet$")


class ParquetBatchSink:
    """``query = df.writeStream.foreachBatch(ParquetBatchSink(folder)).start()``.

    ``folder``: a local path or a URI (:mod:`elastream.stores.filesystem`).
    """

    def __init__(self, folder: str | os.PathLike[str] | Folder) -> None:
        self.files = filesystem.folder(folder, option="folder")
        if isinstance(self.files, LocalFolder):
            self.files.path.mkdir(parents=True, exist_ok=True)
            self.files.discard_temporaries()

    @staticmethod
    def name(batch_id: int) -> str:
        """The file of micro-batch ``batch_id``."""
        return f"part-{batch_id:08d}.parquet"

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id``'s rows (the ``foreachBatch`` callback)."""
        self.write_table(batch_id, frame.toArrow())

    def rows(self, *, through: int) -> int:
        """Rows in the folder's files of micro-batches up to ``through`` (Spark's last commit).

        Hidden temporary files are skipped; so are a batch's files written after the last
        commit (that batch runs again and writes them anew).
        """
        if not isinstance(self.files, LocalFolder) or not self.files.path.is_dir():
            return 0
        files = [str(p) for p in sorted(self.files.path.glob("*.parquet"))
                 if (batch_of(p) or 0) <= through]
        return int(ds.dataset(files, format="parquet").count_rows()) if files else 0

    def write_table(self, batch_id: int, table: pa.Table) -> None:
        """Write micro-batch ``batch_id``'s rows, given as an Arrow table."""
        if table.num_rows == 0:
            return
        encoded = pa.BufferOutputStream()
        pq.write_table(table, encoded)
        self.files.write(self.name(batch_id), encoded.getvalue())


def batch_of(path: Path) -> int | None:
    """The micro-batch a sink file holds (``None`` for other files)."""
    match = _PART.match(path.name)
    return int(match[1]) if match else None
