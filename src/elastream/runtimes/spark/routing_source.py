"""The routing table as a Python data source, re-read by Spark at every micro-batch.

Used as the static side of a stream–static join: each micro-batch plans a fresh scan, so a
version the controller published between batches is what the next batch routes by. (A join
against a plain Parquet table would keep the file list of its first plan.)
"""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from elastream.core.errors import DataError
from elastream.core.pins import pins_for
from elastream.core.routing import RoutingStore

NAME = "elastream_routing"
SCHEMA = "kg long, slot int, pin int, version long"


class RoutingSource(DataSource):
    """Options: ``path`` (a :class:`RoutingStore` folder), ``partitions`` (P of the query)."""

    @classmethod
    def name(cls) -> str:
        """Format name for ``spark.read.format``."""
        return NAME

    def schema(self) -> str:
        """One row per key group."""
        return SCHEMA

    def reader(self, schema: object) -> DataSourceReader:
        """A reader of the current version."""
        return _Reader(self.options["path"], int(self.options["partitions"]))


class _Reader(DataSourceReader):
    def __init__(self, path: str, partitions: int) -> None:
        self.path = path
        self.num_partitions = partitions

    def read(self, partition: InputPartition) -> Iterator[tuple[int, int, int, int]]:
        table = RoutingStore(self.path).current()
        if table is None:
            raise DataError(f"no routing table published in {self.path}")
        pins = pins_for(self.num_partitions)
        for kg, slot in enumerate(table.slot_of):
            yield kg, slot, int(pins[slot]), table.version
