"""A Delta Lake table that holds each micro-batch's rows exactly once, for every Delta reader.

No Delta Lake release for Spark (``delta-spark``) supports pyspark 4.3 yet (the newest, 4.4.1,
takes pyspark ≤ 4.2.0), so :class:`DeltaBatchSink` writes through delta-rs (the ``deltalake``
package, no JVM jar): a ``foreachBatch`` function whose micro-batch ``N`` is one append
commit to the table that also records Delta's application transaction ``(app_id, N)``. A
micro-batch that runs again (its process killed after the commit, before Spark's) finds ``N``
recorded and writes nothing; a commit is atomic, so a reader — ``deltalake.DeltaTable``,
Spark with Delta, DuckDB's ``delta_scan``, Polars — sees a batch whole or not at all. Files a
killed write left behind are in no commit: no Delta reader reads them (a plain Parquet reader
of the folder would: read the table as Delta).
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from elastream.core.errors import ElastreamError

APP_ID = "elastream"
"""The application transaction of a job's batches, unless the sink is given another."""


def _deltalake() -> Any:
    try:
        import deltalake
    except ImportError:
        raise ElastreamError("the Delta sink needs the deltalake package: pip install "
                             "'elastream[delta]'") from None
    return deltalake


class DeltaBatchSink:
    """``df.writeStream.foreachBatch(DeltaBatchSink(table)).start()``.

    ``table``: the table's path or URI (made at the first batch with rows); ``app_id``: the
    application transaction recorded with each batch — one per query writing the table.
    """

    def __init__(self, table: str | os.PathLike[str], app_id: str = APP_ID) -> None:
        self.table = os.fspath(table)
        self.app_id = app_id

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id``'s rows (the ``foreachBatch`` callback)."""
        self.write_table(batch_id, frame.toArrow())

    def write_table(self, batch_id: int, table: pa.Table) -> None:
        """Append micro-batch ``batch_id``'s rows in one commit, unless it was committed."""
        if table.num_rows == 0 or self._committed(batch_id):
            return
        delta = _deltalake()
        delta.write_deltalake(self.table, table, mode="append",
                              commit_properties=delta.CommitProperties(
                                  app_transactions=[delta.Transaction(self.app_id, batch_id)]))

    def _committed(self, batch_id: int) -> bool:
        table = self._open()
        if table is None:
            return False
        version = table.transaction_version(self.app_id)
        return version is not None and version >= batch_id

    def _open(self) -> Any:
        delta = _deltalake()
        try:
            return delta.DeltaTable(self.table)
        except delta.exceptions.TableNotFoundError:
            return None

    def rows(self, *, through: int) -> int:
        """The rows the table holds of micro-batches up to ``through`` (Spark's last commit).

        A batch committed to the table whose Spark commit a kill prevented is left out: it
        runs again and finds itself there.
        """
        table = self._open()
        if table is None:
            return 0
        while (table.transaction_version(self.app_id) or -1) > through:
            table.load_as_version(table.version() - 1)
        return int(table.to_pyarrow_dataset().count_rows())
