"""The local Kafka broker and the file producer: rows round-trip, pacing, restarts, the CLI.

One broker serves the file (the session's ``kafka_broker``); every test writes its own topic.
A test reads a topic back by assigning every partition from its start up to its high
watermark, so "every row once" is checked exactly, without waiting for more to come. No test
bounds a duration from above: timeouts here only stop a hung test.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from elastream.cli.main import main
from elastream.kafka import broker
from elastream.kafka.produce import json_values, produce

pytestmark = pytest.mark.kafka

ORIGINS = ["LAS", "ATL", "MCI", 'O"H', "SEA"]


def flights(rows: int) -> pa.Table:
    """Rows shaped like the flights: an index, a timestamp with microseconds, a key, a delay."""
    start = datetime.datetime(2001, 1, 1)
    return pa.table({
        "i": pa.array(range(rows), pa.int64()),
        "date": pa.array([start + datetime.timedelta(minutes=i, microseconds=i)
                          for i in range(rows)], pa.timestamp("us")),
        "origin": [ORIGINS[i * 7 % len(ORIGINS)] for i in range(rows)],
        "delay": [None if i % 11 == 0 else i * 1.5 - 20 for i in range(rows)],
    })


def expected(table: pa.Table) -> list[dict[str, Any]]:
    """The JSON objects the rows become: timestamps as ISO text with microseconds."""
    return [{**row, "date": row["date"].isoformat(timespec="microseconds")}
            for row in table.to_pylist()]


def write(table: pa.Table, path: Path) -> Path:
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    elif path.suffix == ".csv":
        pacsv.write_csv(table, path)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in expected(table)))
    return path


def read_topic(bootstrap: str, topic: str) -> dict[int, list[Any]]:
    """Every message of ``topic`` by partition, in offset order (up to the high watermarks)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}",
                         "enable.auto.commit": False})
    try:
        count = len(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in range(count)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(count)])
        messages: dict[int, list[Any]] = {p: [] for p in range(count)}
        deadline = time.monotonic() + 120  # a hang guard, not a bound on the time it takes
        while any(len(messages[p]) < ends[p] for p in messages):
            assert time.monotonic() < deadline, f"read {messages} of {ends} in 120 s"
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                messages[message.partition()].append(message)
    finally:
        consumer.close()
    return messages


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".json"])
def test_every_row_arrives_once_in_order_keyed(
        kafka_broker: broker.Broker, kafka_topic: str, tmp_path: Path, suffix: str) -> None:
    from confluent_kafka import murmur2

    table = flights(300)
    sent = produce(kafka_broker.bootstrap, kafka_topic, write(table, tmp_path / f"f{suffix}"),
                   partitions=3, key_col="origin")
    assert sent["topic"] == kafka_topic and sent["rows"] == 300 and sent["partitions"] == 3
    by_partition = read_topic(kafka_broker.bootstrap, kafka_topic)
    rows = expected(table)
    seen = []
    for partition, messages in by_partition.items():
        values = [json.loads(m.value()) for m in messages]
        indices = [v["i"] for v in values]
        assert indices == sorted(indices), f"partition {partition} is out of file order"
        for message, value in zip(messages, values, strict=True):
            assert value == rows[value["i"]]
            assert message.key() == value["origin"].encode()
            assert partition == murmur2(message.key(), 3)  # where a Java client puts it
        seen += indices
    assert sorted(seen) == list(range(300))  # every row, once


def test_rows_without_a_key_go_unkeyed(kafka_broker: broker.Broker, kafka_topic: str,
                                       tmp_path: Path) -> None:
    table = flights(50)
    produce(kafka_broker.bootstrap, kafka_topic, write(table, tmp_path / "f.parquet"))
    [messages] = read_topic(kafka_broker.bootstrap, kafka_topic).values()
    assert [json.loads(m.value()) for m in messages] == expected(table)
    assert all(m.key() is None for m in messages)


def test_a_rate_paces_the_rows(kafka_broker: broker.Broker, kafka_topic: str,
                               tmp_path: Path) -> None:
    # 40 rows at 100 rows/s: the last burst leaves once 40 / 100 = 0.4 s have passed.
    path = write(flights(40), tmp_path / "f.parquet")
    began = time.monotonic()
    sent = produce(kafka_broker.bootstrap, kafka_topic, path, rate=100.0)
    assert time.monotonic() - began >= 0.4 and sent["seconds"] >= 0.4
    assert sent["rows"] == 40


def test_a_restart_keeps_the_port_topics_and_messages(
        kafka_broker: broker.Broker, kafka_topic: str, tmp_path: Path) -> None:
    table = flights(20)
    produce(kafka_broker.bootstrap, kafka_topic, write(table, tmp_path / "f.parquet"),
            partitions=2, key_col="origin")
    broker.stop(kafka_broker.directory)
    assert not broker.running(kafka_broker.directory)
    broker.stop(kafka_broker.directory)  # stopping a stopped broker is fine
    again = broker.start(kafka_broker.directory)
    assert again.port == kafka_broker.port and again.pid != kafka_broker.pid
    by_partition = read_topic(again.bootstrap, kafka_topic)
    assert len(by_partition) == 2
    assert sorted(json.loads(m.value())["i"] for ms in by_partition.values() for m in ms) \
        == list(range(20))


def elastream(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "elastream.cli.main", *args],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, **(env or {})})


def test_the_commands_print_pure_json(tmp_path: Path) -> None:
    folder = tmp_path / "kafka"
    started = elastream("kafka", "start", "--dir", str(folder), "--json")
    try:
        assert started.returncode == 0, started.stderr
        answer = json.loads(started.stdout)
        assert answer["dir"] == str(folder.resolve())
        assert answer["bootstrap"] == broker.load(folder).bootstrap
        path = write(flights(10), tmp_path / "f.csv")
        sent = elastream("kafka", "produce", "t", str(path), "--bootstrap",
                         answer["bootstrap"], "--partitions", "2", "--key-col", "origin",
                         "--json")
        assert sent.returncode == 0, sent.stderr
        assert json.loads(sent.stdout)["rows"] == 10
    finally:
        stopped = elastream("kafka", "stop", "--dir", str(folder), "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {"dir": str(folder.resolve()), "was_running": True}
    assert not broker.running(folder)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize(("args", "message"), [
    (["--rate", "0"], "--rate must be a finite number of rows per second > 0, got 0.0"),
    (["--rate", "nan"], "--rate must be a finite number of rows per second > 0, got nan"),
    (["--partitions", "0"], "--partitions must be an integer >= 1, got 0"),
    (["--key-col", "nope"], "--key-col must be a column of f.parquet (i, date, origin, "
                            "delay), got 'nope'"),
    (["--format", "csv"], "cannot read"),
])
def test_bad_options_fail_before_the_broker_is_asked(
        args: list[str], message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # No broker listens at this address: an option checked after contacting it would fail
    # with the broker's error instead.
    path = write(flights(5), tmp_path / "f.parquet")
    code = main(["kafka", "produce", "t", str(path), "--bootstrap",
                 f"127.0.0.1:{free_port()}", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.splitlines()) == 1, err


def test_a_missing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["kafka", "produce", "t", str(tmp_path / "none.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and err == (f"elastream kafka: error: input "
                                 f"{str(tmp_path / 'none.parquet')!r} does not exist\n")


def test_no_broker_there_is_one_line(tmp_path: Path) -> None:
    path = write(flights(5), tmp_path / "f.parquet")
    done = elastream("kafka", "produce", "t", str(path), "--bootstrap",
                     f"127.0.0.1:{free_port()}")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "no Kafka broker answers at 127.0.0.1:" in done.stderr


def test_missing_jars_name_make_jars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ELASTREAM_JARS", "/nonexistent")
    code = main(["kafka", "start", "--dir", str(tmp_path / "kafka")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert "jars are not in /nonexistent/kafka-broker: run `make jars` (Maven)" in err
    assert not (tmp_path / "kafka").exists()  # refused before anything was written


@pytest.mark.parametrize("command", [["start"], ["produce", "t", "{file}"]])
def test_a_missing_client_names_the_extra(command: list[str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # its import fails
    path = str(write(flights(5), tmp_path / "f.parquet"))
    code = main(["kafka", *[path if a == "{file}" else a for a in command],
                 *(["--dir", str(tmp_path / "kafka")] if command == ["start"] else [])])
    err = capsys.readouterr().err
    assert code == 2 and err == ("elastream kafka: error: the Kafka client confluent-kafka is "
                                 "not installed: pip install 'elastream[kafka]'\n")


@pytest.mark.spark
def test_spark_from_json_reads_the_values(spark: Any) -> None:
    """The values parse with Spark's default ``from_json`` options into the file's values."""
    from pyspark.sql import functions as F

    table = flights(30)
    texts = json_values(table.to_batches()[0]).to_pylist()
    parsed = (spark.createDataFrame([(t,) for t in texts], "value string")
              .select(F.from_json("value", "i BIGINT, date TIMESTAMP, origin STRING, "
                                           "delay DOUBLE").alias("row"))
              .select("row.*").orderBy("i").collect())
    assert [row.asDict() for row in parsed] == table.to_pylist()
