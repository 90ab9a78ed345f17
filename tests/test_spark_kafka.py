"""``elastream run`` on a Kafka topic of a real broker, as a service: each test equal to the
pandas oracle. A topic fed while the job runs, scaling 2 → 4 → 2 with fish splitting the hot
key, killed (SIGKILL of its process group) mid-migration and run again, results in Parquet
(pandas, pyarrow, DuckDB); the broker stopped and started again mid-run (the job waits, then
goes on), results to a Kafka topic; killed mid-migration and run again, results in a Delta
table (delta-rs, no Spark; DuckDB). Malformed values go to the dead letter with their topic,
partition and offset.

Every wait is for a condition (rows committed, a migration under way), never for a time: the
timeouts only bound a test that went wrong.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.live import every_reader_sees
from tests.oracle import compare_results, window_oracle
from tests.spark_jobs import random_stream

from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec
from elastream.kafka import broker
from elastream.kafka.produce import produce
from elastream.runtimes.spark.ledger import CountsLedger, last_commit
from elastream.stores.filesystem import LocalFolder
from elastream.stores.metrics_file import read_metrics

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

SCHEMA = "ts timestamp, key string, v double"
AGGS, WINDOWS = ("sum:v", "count"), ("2h", "6h/2h")
MALFORMED = ("not json", '{"ts": "2001-03-01T01:00:00", "key": "k1", "v": "ten"}',
             '{"ts": "yesterday", "key": "k2", "v": 1.0}')
DONE_SECONDS = 600.0
"""Bounds a wait for a condition; a healthy run meets it in a fraction of that."""


def _stream(seed: int, rows: int, *, hot: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows of the oracle, and the rows sent: those and, last, one far later row that closes
    every window of the others (its own stay open)."""
    df = random_stream(seed=seed, rows=rows)
    if hot:
        df.loc[df.sample(frac=0.5, random_state=seed).index, "key"] = "hot"
    closing = pd.DataFrame({"ts": [df["ts"].max() + pd.Timedelta(days=10)], "key": ["zz-end"],
                            "v": [0.0]})
    return df, pd.concat([df, closing], ignore_index=True)


def _oracle(df: pd.DataFrame) -> pd.DataFrame:
    return window_oracle(df, time_col="ts", key_col="key",
                         aggs=[AggSpec.parse(a) for a in AGGS],
                         windows=[WindowSpec.parse(w) for w in WINDOWS])


def _command(url: str, out: Path, *options: str) -> list[str]:
    command = [sys.executable, "-m", "elastream.cli.main", "run", "--input", url,
               "--schema", SCHEMA, "--time-col", "ts", "--key-col", "key",
               "--starting-offsets", "earliest", "--lateness", "6h", "--output", str(out),
               "--quiet", *options]
    for agg in AGGS:
        command += ["--agg", agg]
    for window in WINDOWS:
        command += ["--window", window]
    return command


class Service:
    """``elastream run`` in a process group of its own."""

    def __init__(self, command: list[str], out: Path) -> None:
        self.out = out
        self.process = subprocess.Popen(
            command, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def counts(self) -> dict[str, int]:
        """The ledger's totals over the committed micro-batches."""
        commits = self.out / "_checkpoints" / "results" / "commits"
        return CountsLedger(LocalFolder(self.out)).committed(last_commit(commits))

    def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        """Until ``condition()``; fails if the service ended first."""
        deadline = time.monotonic() + DONE_SECONDS
        while not condition():
            if self.process.poll() is not None:
                _, err = self.process.communicate()
                pytest.fail(f"the service ended ({self.process.returncode}) before {what}: "
                            f"{err[-3000:]}")
            assert time.monotonic() < deadline, f"no {what} within {DONE_SECONDS:.0f} s"
            time.sleep(0.5)

    def wait_done(self, rows: int, windows: int) -> None:
        """Until every row sent and every window of the oracle was committed."""
        self.wait_for(lambda: (self.counts()["input_rows"], self.counts()["output_rows"])
                      == (rows, windows), f"{rows} rows and {windows} windows committed")

    def stop(self) -> dict[str, Any]:
        """SIGTERM to the service: the summary of an interrupted run."""
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=DONE_SECONDS)
        assert self.process.returncode == 130, err[-3000:]
        assert "Traceback" not in err
        return dict(json.loads(out))

    def kill(self) -> None:
        """SIGKILL of the whole process group: driver, JVM and Python workers."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.communicate()


def _send_raw(bootstrap: str, topic: str, values: tuple[str, ...]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0


def _written(tmp_path: Path, sent: pd.DataFrame) -> Path:
    path = tmp_path / "sent.parquet"
    sent.to_parquet(path)
    return path


def test_a_topic_fed_while_the_job_scales_2_4_2_killed_mid_migration_is_exact(
        kafka_broker: Any, kafka_topic: str, tmp_path: Path) -> None:
    """fish splits the hot key while the job scales out, is killed (SIGKILL of its process
    group) while key groups move to the new slots, runs again and scales in: every reader of
    its Parquet results sees each window once."""
    df, sent = _stream(seed=61, rows=2400, hot=True)
    bootstrap, out = kafka_broker.bootstrap, tmp_path / "out"
    broker.create_topic(bootstrap, kafka_topic, 3)
    command = _command(f"kafka://{bootstrap}/{kafka_topic}", out,
                       "--planner", "fish", "--slots", "2", "--key-groups", "16",
                       "--scale-at", "2:4", "--scale-at", "6:2", "--max-moves", "2",
                       "--rows-per-batch", "150")
    first = Service(command, out)
    _send_raw(bootstrap, kafka_topic, MALFORMED[:1])
    feeder = threading.Thread(target=produce, args=(bootstrap, kafka_topic,
                                                    _written(tmp_path, sent)),
                              kwargs={"key_col": "key", "rate": 120.0})
    feeder.start()  # the job is starting or running: the topic fills while it consumes

    def filling_new_slots() -> bool:
        records = read_metrics(out / "metrics.jsonl")
        return any(r.get("scale_to") == 4 for r in records) and records[-1]["moves"] > 0

    first.wait_for(filling_new_slots, "key groups moving to the new slots")
    first.kill()
    rerun = Service(command, out)
    feeder.join()
    _send_raw(bootstrap, kafka_topic, MALFORMED[1:])
    expected = _oracle(df)
    rerun.wait_done(len(sent) + len(MALFORMED), len(expected))
    summary = rerun.stop()
    assert summary["nothing_lost"] and summary["interrupted"]
    assert summary["input_rows"] == len(sent) + len(MALFORMED)
    assert summary["aggregated_rows"] == len(sent) and summary["late_rows"] == 0
    assert summary["scale_events"][-1]["slots"] == 2  # a kill may lose an event's record
    every_reader_sees(out / "results", expected)
    dead = pd.read_parquet(out / "dead_letter")
    assert len(dead) == len(MALFORMED)
    assert set(dead["kafka_topic"]) == {kafka_topic}
    assert dead["kafka_partition"].notna().all() and dead["kafka_offset"].notna().all()
    assert sorted(dead["_corrupt"]) == sorted(MALFORMED)
    assert dead["reason"].str.startswith("malformed record: ").all()
    split = [m for m in read_metrics(out / "metrics.jsonl") if m["hot_keys"]]
    assert split and all("hot" in m["hot_key_names"] for m in split)


def test_the_broker_stopped_and_started_mid_run_the_job_waits_and_stays_exact(
        tmp_path: Path, kafka_topic: str) -> None:
    """On a broker of its own (the session's serves other tests meanwhile); results to a Kafka
    topic, read back by a consumer that keeps one message per key."""
    df, sent = _stream(seed=62, rows=1000)
    own = broker.start(tmp_path / "broker")
    try:
        bootstrap, out = own.bootstrap, tmp_path / "out"
        half = len(sent) // 2
        first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
        sent.iloc[:half].to_parquet(first)
        sent.iloc[half:].to_parquet(second)
        produce(bootstrap, kafka_topic, first, partitions=3, key_col="key")
        service = Service(_command(f"kafka://{bootstrap}/{kafka_topic}", out,
                                   "--sink", "kafka", "--rows-per-batch", "200"), out)
        service.wait_for(lambda: service.counts()["input_rows"] >= 200, "a first batch")
        broker.stop(own.directory)
        time.sleep(5)  # the outage; the job must outlive it whatever its length
        assert service.process.poll() is None, "the job ended while the broker was down"
        own = broker.start(own.directory)
        produce(bootstrap, kafka_topic, second, key_col="key")
        expected = _oracle(df)
        service.wait_done(len(sent), len(expected))
        summary = service.stop()
        assert summary["nothing_lost"] and summary["input_rows"] == len(sent)
        compare_results(_consumed(bootstrap, f"{kafka_topic}-windows"), expected)
    finally:
        broker.stop(own.directory)


def _consumed(bootstrap: str, topic: str) -> pd.DataFrame:
    """Every message of ``topic``, the last of each key (a consumer's deduplication)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test",
                         "enable.auto.commit": False})
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in partitions}
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    latest: dict[bytes, dict[str, Any]] = {}
    seen = dict.fromkeys(partitions, 0)
    while any(seen[p] < ends[p] for p in partitions):
        message = consumer.poll(30)
        assert message is not None and message.error() is None
        latest[message.key()] = json.loads(message.value())
        seen[message.partition()] = message.offset() + 1
    consumer.close()
    frame = pd.DataFrame(list(latest.values()))
    for bound in ("window_start", "window_end"):
        frame[bound] = pd.to_datetime(frame[bound], utc=True)
    return frame


def test_killed_mid_migration_and_rerun_is_exact_for_a_delta_reader(
        kafka_broker: Any, kafka_topic: str, tmp_path: Path) -> None:
    """Results in a Delta table: read without Spark (delta-rs), through DuckDB too."""
    import duckdb
    from deltalake import DeltaTable

    df, sent = _stream(seed=63, rows=1200)
    bootstrap, out = kafka_broker.bootstrap, tmp_path / "out"
    produce(bootstrap, kafka_topic, _written(tmp_path, sent), partitions=3, key_col="key")
    command = _command(f"kafka://{bootstrap}/{kafka_topic}", out, "--sink", "delta",
                       "--planner", "hash", "--slots", "2", "--key-groups", "8",
                       "--scale-at", "2:4", "--max-moves", "1", "--rows-per-batch", "150")
    first = Service(command, out)

    def migrating() -> bool:
        records = read_metrics(out / "metrics.jsonl")
        return bool(records) and records[-1].get("key_groups_to_move", 0) > 0

    first.wait_for(migrating, "a migration under way")
    first.kill()
    rerun = Service(command, out)
    expected = _oracle(df)
    rerun.wait_done(len(sent), len(expected))
    summary = rerun.stop()
    assert summary["nothing_lost"] and summary["input_rows"] == len(sent)
    assert summary["scale_events"][-1]["slots"] == 4
    table = DeltaTable(str(out / "results"))
    compare_results(table.to_pandas(), expected)
    committed = duckdb.from_arrow(table.to_pyarrow_dataset())  # the table's files only
    assert committed.aggregate("count(*)").fetchall() == [(len(expected),)]


@pytest.mark.parametrize("value_format", ["json", "csv"])
def test_kafka_records_parse_values_and_keep_the_unparsable_with_their_origin(
        spark: Any, value_format: str) -> None:
    """The API's parsing of a Kafka DataFrame of one's own (here a static one of its columns)."""
    from elastream.runtimes.spark.kafka_source import NO_VALUE, kafka_records

    good, bad_type = (('{"ts": "2001-03-01T01:00:00Z", "key": "a", "v": 2.5}',
                       '{"ts": "2001-03-01T01:00:00Z", "key": "b", "v": "ten"}')
                      if value_format == "json" else
                      ("2001-03-01T01:00:00Z,a,2.5", "2001-03-01T01:00:00Z,b,ten"))
    values = [good, bad_type, "{{not", None]
    kafka = spark.createDataFrame(
        [(None, None if v is None else bytearray(v.encode()), "flights", 1, offset)
         for offset, v in enumerate(values)],
        "key binary, value binary, topic string, partition int, offset long")
    rows = kafka_records(kafka, SCHEMA, value_format).orderBy("kafka_offset").collect()
    assert rows[0]["key"] == "a" and rows[0]["v"] == 2.5 and rows[0]["_corrupt"] is None
    assert str(rows[0]["ts"]) == "2001-03-01 01:00:00"
    assert [r["_corrupt"] for r in rows[1:]] == [bad_type, "{{not", NO_VALUE]
    assert {(r["kafka_topic"], r["kafka_partition"]) for r in rows} == {("flights", 1)}
