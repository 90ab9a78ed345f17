"""The routing table as Python data sources, re-read by Spark at every micro-batch.

Used as the static side of stream–static joins: each micro-batch plans a fresh scan (a join
against a plain Parquet table would keep the file list of its first plan), and the scan reads
the version *bound to its micro-batch* (:meth:`RoutingStore.bind`), so every stage of a batch,
and every retry of it, routes by one version however the controller publishes meanwhile.
``elastream_routing`` gives each key group's slot; ``elastream_hot_keys`` the buckets of the
split hot keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from elastream.core.pins import pins_for
from elastream.core.routing import RoutingStore, RoutingTable
from elastream.runtimes.spark.batch import routing_for_task

NAME = "elastream_routing"
SCHEMA = "kg long, slot int, pin int, version long"
HOT_NAME = "elastream_hot_keys"
HOT_SCHEMA = "kh long, hot_slots array<int>, hot_pins array<int>"


class RoutingSource(DataSource):
    """The routing of a micro-batch, one row per key group.

    Options: ``path`` (a :class:`RoutingStore` folder), ``partitions`` (P of the query),
    ``owner`` (``true``: the batch's owner version, which places key-group state).
    """

    @classmethod
    def name(cls) -> str:
        """Format name for ``spark.read.format``."""
        return NAME

    def schema(self) -> str:
        """One row per key group."""
        return SCHEMA

    def reader(self, schema: object) -> DataSourceReader:
        """A reader of the current version."""
        return _Reader(self.options["path"], int(self.options["partitions"]),
                       self.options.get("owner", "false") == "true")


class HotKeySource(RoutingSource):
    """The current version's split hot keys: key hash, slot and pin of each bucket."""

    @classmethod
    def name(cls) -> str:
        """Format name for ``spark.read.format``."""
        return HOT_NAME

    def schema(self) -> str:
        """One row per split hot key."""
        return HOT_SCHEMA

    def reader(self, schema: object) -> DataSourceReader:
        """A reader of the current version."""
        return _HotReader(self.options["path"], int(self.options["partitions"]))


class _Reader(DataSourceReader):
    def __init__(self, path: str, partitions: int, owner: bool = False) -> None:
        self.path = path
        self.num_partitions = partitions
        self.owner = owner

    def _current(self) -> RoutingTable:
        return routing_for_task(RoutingStore(self.path), owner=self.owner)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        table = self._current()
        pins = pins_for(self.num_partitions)
        for kg, slot in enumerate(table.slot_of):
            yield kg, slot, int(pins[slot]), table.version


class _HotReader(_Reader):
    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        pins = pins_for(self.num_partitions)
        for key, buckets in self._current().hot_keys:
            yield key, list(buckets), [int(pins[s]) for s in buckets]
