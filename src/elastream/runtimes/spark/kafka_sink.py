"""A Kafka topic as a sink: each row a JSON value, keyed so that a consumer can deduplicate.

Kafka gives no exactly-once for a ``foreachBatch`` writer (nor for Spark's own Kafka sink):
a micro-batch that runs again after a failure — its process killed after sending, before
Spark's commit — sends its rows again. :class:`KafkaBatchSink` is therefore **at least
once**: the producer is idempotent (no duplicates from its own retries), every row of a
micro-batch is acknowledged by the broker before the batch may commit (a failed delivery fails
the batch), and each message's key names the row — for windows ``KEY|WINDOW_START|LENGTH``
(and the operator, in a several-operator job), for dead-letter records their source topic,
partition and offset — so a consumer keeps the last message of each key (or the topic is
compacted) and holds every window once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from elastream.core.kafka_topic import KafkaTopic

WINDOW_KEY = ("operator", "key", "window_start", "window_length")
"""The columns a window's message key is made of (those the results have)."""
DEAD_KEY = ("kafka_topic", "kafka_partition", "kafka_offset")
"""The columns a dead-letter record's message key is made of, when it came from Kafka."""


class KafkaBatchSink:
    """``df.writeStream.foreachBatch(KafkaBatchSink(topic)).start()``: rows to ``topic``.

    ``topic``: a :class:`~elastream.core.kafka_topic.KafkaTopic`; ``key_columns``: the columns
    that name a row, those present, joined by ``|`` (default: a window's); with none present,
    a row is named by its micro-batch and place in it. Values are JSON objects, as
    ``elastream kafka produce`` writes them (:func:`elastream.kafka.produce.json_values`).
    """

    def __init__(self, topic: KafkaTopic, key_columns: Sequence[str] = WINDOW_KEY) -> None:
        self.topic = topic
        self.key_columns = tuple(key_columns)
        self._sender: Any = None

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        """Send micro-batch ``batch_id``'s rows (the ``foreachBatch`` callback)."""
        self.write_table(batch_id, frame.toArrow())

    def write_table(self, batch_id: int, table: pa.Table) -> None:
        """Send micro-batch ``batch_id``'s rows and wait until the broker has every one.

        A delivery that fails raises :class:`~elastream.kafka.broker.BrokerError`: the batch
        fails before its commit, and runs again.
        """
        from elastream.kafka.produce import Sender, json_values

        if table.num_rows == 0:
            return
        if self._sender is None:
            self._sender = Sender(self.topic.bootstrap, self.topic.topic)
        first = 0
        for batch in table.to_batches():
            values = json_values(batch).cast(pa.binary()).to_pylist()
            self._sender.send(values, _keys(batch, self.key_columns, batch_id, first))
            first += batch.num_rows
        self._sender.flush(f"micro-batch {batch_id}")

    def rows(self, *, through: int) -> None:
        """Unknown: a topic may hold a batch more than once.

        Every row written was acknowledged, which the batch's commit waited for.
        """
        return None


def _keys(batch: pa.RecordBatch, columns: Sequence[str], batch_id: int,
          first: int) -> list[bytes | None]:
    """Each row's key: the values of ``columns`` it has joined by ``|``, else batch and place."""
    present = [batch.column(c).cast(pa.string()) for c in columns if c in batch.schema.names]
    if not present:
        return [f"{batch_id}|{first + i}".encode() for i in range(batch.num_rows)]
    joined = pc.binary_join_element_wise(*[pc.fill_null(c, "") for c in present], "|")
    keys: list[bytes | None] = joined.cast(pa.binary()).to_pylist()
    return keys
