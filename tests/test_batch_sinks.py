"""The Delta and Kafka batch sinks, micro-batch by micro-batch, without Spark: a batch that
runs again is in a Delta table once (and the rows counted through Spark's last commit leave a
batch committed after it out); in a Kafka topic it is twice, under the same keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from elastream.core.kafka_topic import KafkaTopic
from elastream.runtimes.spark.delta_sink import DeltaBatchSink
from elastream.runtimes.spark.job_sink import sinks_of
from elastream.runtimes.spark.kafka_sink import DEAD_KEY, KafkaBatchSink


def _windows(batch: int, rows: int = 3) -> pa.Table:
    start = pa.array([batch * 3_600_000_000 + i for i in range(rows)],
                     pa.timestamp("us", tz="UTC"))
    return pa.table({"key": [f"k{i}" for i in range(rows)], "window_start": start,
                     "window_length": [3600] * rows, "count": list(range(rows))})


def test_a_delta_batch_that_runs_again_is_in_the_table_once(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    sink = DeltaBatchSink(tmp_path / "results")
    assert sink.rows(through=5) == 0  # no table yet
    for batch in (0, 1, 1, 2):  # batch 1 again: its process was killed before Spark's commit
        sink.write_table(batch, _windows(batch))
    sink.write_table(3, _windows(3, rows=0))  # a batch without rows commits nothing
    table = DeltaTable(str(tmp_path / "results"))
    assert table.to_pyarrow_table().num_rows == 9
    assert table.transaction_version("elastream") == 2
    assert sink.rows(through=2) == 9
    assert sink.rows(through=1) == 6  # batch 2 committed to the table, not yet by Spark


def test_two_queries_write_one_table_under_their_own_transactions(tmp_path: Path) -> None:
    first, second = (DeltaBatchSink(tmp_path / "t", app_id=a) for a in ("q1", "q2"))
    first.write_table(0, _windows(0))
    second.write_table(0, _windows(5))  # batch 0 of another query: not the first's
    assert first.rows(through=0) == 6


def test_the_run_sinks_are_folders_tables_or_topics(tmp_path: Path) -> None:
    results, dead = sinks_of(tmp_path, "delta")
    assert isinstance(results, DeltaBatchSink) and results.table.endswith("results")
    assert isinstance(dead, DeltaBatchSink) and dead.table.endswith("dead_letter")
    topic = KafkaTopic("127.0.0.1:9", "windows")
    kafka_results, kafka_dead = sinks_of(tmp_path, topic)
    assert isinstance(kafka_results, KafkaBatchSink) and kafka_results.topic == topic
    assert isinstance(kafka_dead, KafkaBatchSink)
    assert (kafka_dead.topic.topic, kafka_dead.key_columns) == ("windows-dead-letter", DEAD_KEY)


@pytest.mark.kafka
def test_a_kafka_batch_that_runs_again_is_sent_twice_under_the_same_keys(
        kafka_broker: Any, kafka_topic: str) -> None:
    from confluent_kafka import Consumer

    sink = KafkaBatchSink(KafkaTopic(kafka_broker.bootstrap, kafka_topic))
    for batch in (0, 1, 1):
        sink.write_table(batch, _windows(batch))
    assert sink.rows(through=1) is None  # a topic is not read back
    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "t",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([kafka_topic])
    messages = []
    while len(messages) < 9:
        message = consumer.poll(30)
        assert message is not None and message.error() is None
        messages.append((message.key().decode(), json.loads(message.value())))
    consumer.close()
    keys = [key for key, _ in messages]
    assert len(set(keys)) == 6  # batch 1's three windows twice, under the same keys
    assert keys[0] == "k0|1970-01-01 00:00:00.000000Z|3600"  # key, window start, length
    assert {value["count"] for _, value in messages} == {0, 1, 2}
