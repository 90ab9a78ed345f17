"""The rows a job's stream has still to read: its backlog, an input of autoscaling.

For a Kafka input, :class:`KafkaBacklog`: the topic's end offsets less those the job committed.

A replay's feeder and a watched folder's intake put files where the job's file stream reads
them, one per micro-batch. The backlog is the rows of those files less the rows the job
committed (its ledger, :mod:`.ledger`, over every run): what arrived and waits, plus the
micro-batch under way. A file's rows are read once (Parquet's footer; a CSV's or JSON-lines
file's lines) and kept while its size and time stay the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from elastream.core.kafka_topic import KafkaTopic
from elastream.runtimes.spark.ledger import CountsLedger, last_commit
from elastream.stores.filesystem import LocalFolder


class Backlog:
    """Rows waiting in ``files()`` (of ``fmt``) beyond those the job in ``output`` committed."""

    def __init__(self, files: Callable[[], list[Path]], fmt: str, output: Path,
                 commits: Path) -> None:
        self.files, self.fmt = files, fmt
        self.ledger, self.commits = CountsLedger(LocalFolder(output)), commits
        self._rows: dict[Path, tuple[int, int, int]] = {}

    def __call__(self) -> int:
        """The backlog now, in rows (0 when the stream read everything there)."""
        arrived = sum(self._rows_of(path) for path in self.files())
        committed = self.ledger.committed(last_commit(self.commits))["input_rows"]
        return max(0, arrived - committed)

    def _rows_of(self, path: Path) -> int:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return 0
        known = self._rows.get(path)
        if known is not None and known[:2] == (stat.st_size, stat.st_mtime_ns):
            return known[2]
        if self.fmt == "parquet":
            rows = int(pq.ParquetFile(path).metadata.num_rows)
        else:
            with path.open("rb") as lines:
                rows = sum(1 for line in lines if line.strip()) - (self.fmt == "csv")
        self._rows[path] = (stat.st_size, stat.st_mtime_ns, max(0, rows))
        return max(0, rows)


class KafkaBacklog:
    """Records waiting in a Kafka topic beyond the offsets the job's query committed.

    ``checkpoint``: the query's checkpoint folder, whose ``offsets/N`` holds, for micro-batch
    ``N``, where it read each partition to. Before the first commit, from each partition's
    first offset.
    """

    def __init__(self, topic: KafkaTopic, checkpoint: Path) -> None:
        self.topic, self.checkpoint = topic, checkpoint
        self._consumer: Any = None

    def __call__(self) -> int:
        """The backlog now, in records (0 if the broker does not answer)."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        from elastream.kafka.broker import client_config

        if self._consumer is None:
            self._consumer = Consumer({**client_config(self.topic.bootstrap),
                                       "group.id": "elastream-backlog",
                                       "enable.auto.commit": False})
        read = self._committed()
        try:
            partitions = self._consumer.list_topics(self.topic.topic, timeout=5).topics[
                self.topic.topic].partitions
            waiting = 0
            for partition in partitions:
                low, high = self._consumer.get_watermark_offsets(
                    TopicPartition(self.topic.topic, partition), timeout=5)
                waiting += max(0, high - read.get(partition, low))
        except KafkaException:
            return 0
        return waiting

    def _committed(self) -> dict[int, int]:
        last = last_commit(self.checkpoint / "commits")
        if last < 0:
            return {}
        for line in (self.checkpoint / "offsets" / str(last)).read_text().splitlines():
            if line.startswith("{") and f'"{self.topic.topic}"' in line:
                offsets = json.loads(line).get(self.topic.topic, {})
                return {int(p): int(o) for p, o in offsets.items()}
        return {}
