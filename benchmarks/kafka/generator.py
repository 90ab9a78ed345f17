"""A skewed stream into a Kafka topic at an offered rate, event time = produce time.

Runs as a process of its own (``run.py`` starts it with ``subprocess``), so that its Python
loop shares a GIL with nothing else; it prints one JSON report on stdout when done. It starts
with a warm-up at ``--warm-rate`` rows/s, until a line arrives on its stdin (``run.py`` sends
one once the job has committed a few micro-batches: a cold job's first batches take ~30 s),
then sends ``--seconds`` at ``--rate``; the report is of that measured part.

Every ``--burst-ms`` milliseconds it sends the rows that are due by then (``rate × elapsed``
minus those sent, so a late burst catches up and the rate does not drift) as JSON objects
``{"key": "k17", "v": 1.0, "ts": "2026-11-28T14:00:00.123Z"}``, keyed by the record key
(Kafka's murmur2 partitioner, as the Java client's). Keys are Zipf(``--z``) ranks over
``--keys`` keys (``k0`` the heaviest), drawn once up front with ``--seed``; each key's JSON
up to the timestamp is encoded once, and a burst formats one timestamp: the wall clock when
the burst leaves. So each row's event time is its produce time, to within the burst's own
sending time (a few ms).

The report, of the measured part: ``rows`` sent (all acknowledged, else ``unacknowledged``
> 0), ``seconds`` from the first burst to the last, ``rate`` achieved (rows over those
seconds), ``start_unix`` and ``end_unix`` (wall clock of the first and last burst),
``cpu_seconds`` (the process's own, librdkafka's threads included) and ``cpu_share`` (of one
core, over ``seconds``), ``late_bursts`` (bursts that left more than a burst interval behind
their schedule) and ``timeline``: ``[unix, rows sent]`` about every 0.5 s; and
``warm_rows``, ``warm_seconds``, ``warm_start_unix`` of the warm-up.

    python benchmarks/kafka/generator.py BOOTSTRAP TOPIC --rate R --seconds S
        [--warm-rate 1000] [--keys 1000] [--z 1.5] [--seed 0] [--burst-ms 10]
"""

from __future__ import annotations

import argparse
import json
import select
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
from confluent_kafka import Producer

from elastream.workloads.zipf import zipf_probabilities

TIMELINE_SECONDS = 0.5
PRODUCER = {
    "linger.ms": 5,
    "acks": 1,
    "compression.type": "lz4",
    "partitioner": "murmur2_random",
    "queue.buffering.max.messages": 2_000_000,
    "queue.buffering.max.kbytes": 1 << 20,
}
"""Small bursts leave within 5 ms; one replica, so the leader's acknowledgement is all there is."""


def key_ranks(rows: int, keys: int, z: float, seed: int) -> np.ndarray:
    """``rows`` Zipf(z) ranks in [0, keys), seeded: rank 0 the heaviest."""
    cdf = np.cumsum(zipf_probabilities(z, keys))
    cdf[-1] = 1.0
    return np.searchsorted(cdf, np.random.default_rng(seed).random(rows), side="right")


def timestamp() -> bytes:
    """The wall clock as Spark's ``from_json`` reads it: ISO 8601, milliseconds, UTC."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.").encode() + b"%03dZ" % (now.microsecond // 1000)


class Stream:
    """The rows to send, drawn and encoded up front, and the producer they leave through."""

    def __init__(self, bootstrap: str, topic: str, *, keys: int, z: float, seed: int,
                 rows: int) -> None:
        self.topic = topic
        self.ranks = key_ranks(rows, keys, z, seed)
        self.names = [b"k%d" % k for k in range(keys)]
        self.prefixes = [b'{"key":"k%d","v":1.0,"ts":"' % k for k in range(keys)]
        self.producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
        self.position = 0

    def send(self, rows: int) -> None:
        """The next ``rows`` rows, stamped with the wall clock now (the drawn keys cycle)."""
        produce, names, prefixes = self.producer.produce, self.names, self.prefixes
        tail = timestamp() + b'"}'
        first = self.position % len(self.ranks)
        ranks = (self.ranks[first:first + rows] if first + rows <= len(self.ranks)
                 else np.take(self.ranks, range(first, first + rows), mode="wrap"))
        for rank in ranks.tolist():
            try:
                produce(self.topic, prefixes[rank] + tail, names[rank])
            except BufferError:  # the local queue is full: let librdkafka drain it
                self.producer.poll(0.05)
                produce(self.topic, prefixes[rank] + tail, names[rank])
        self.position += rows
        self.producer.poll(0)


def pace(stream: Stream, rate: float, burst_ms: float,
         done: Callable[[float], bool]) -> dict[str, Any]:
    """Bursts at ``rate`` rows/s until ``done(seconds since the first burst)``.

    Each burst sends the rows due by then, so a burst that left late catches up.
    """
    interval = burst_ms / 1000
    start, start_unix = time.monotonic(), time.time()
    sent = late = tick = 0
    timeline: list[list[float]] = []
    next_mark = now = start
    while not done(now - start):
        due = int(rate * (now - start)) + 1
        stream.send(due - sent)
        sent = due
        if now >= next_mark:
            timeline.append([round(time.time(), 3), sent])
            next_mark += TIMELINE_SECONDS
        tick += 1
        wake = start + tick * interval
        now = time.monotonic()
        if now > wake + interval:
            late += 1
            tick = int((now - start) / interval)
        else:
            time.sleep(max(0.0, wake - now))
        now = time.monotonic()
    elapsed, end_unix = now - start, time.time()
    timeline.append([round(end_unix, 3), sent])
    return {"rows": sent, "seconds": round(elapsed, 3), "rate": round(sent / elapsed, 1),
            "start_unix": round(start_unix, 3), "end_unix": round(end_unix, 3),
            "late_bursts": late, "bursts": tick, "timeline": timeline}


def told_to_go() -> bool:
    """Whether a line arrived on stdin (or stdin closed)."""
    if not select.select([sys.stdin], [], [], 0)[0]:
        return False
    sys.stdin.readline()
    return True


def generate(bootstrap: str, topic: str, *, rate: float, seconds: float, warm_rate: float,
             keys: int, z: float, seed: int, burst_ms: float) -> dict[str, Any]:
    """The warm-up at ``warm_rate`` until told to go, then ``seconds`` at ``rate``."""
    stream = Stream(bootstrap, topic, keys=keys, z=z, seed=seed,
                    rows=max(1 << 20, int(rate * seconds) + 1))
    warm = pace(stream, warm_rate, burst_ms, lambda _: told_to_go())
    cpu_start = time.process_time()
    report = pace(stream, rate, burst_ms, lambda elapsed: elapsed >= seconds)
    unacknowledged = stream.producer.flush(60)
    cpu = time.process_time() - cpu_start
    return {**report, "cpu_seconds": round(cpu, 3), "cpu_share": round(cpu / report["seconds"], 3),
            "unacknowledged": unacknowledged, "warm_rows": warm["rows"],
            "warm_seconds": warm["seconds"], "warm_start_unix": warm["start_unix"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("--rate", type=float, required=True, help="offered rows/s")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--warm-rate", type=float, default=1000.0,
                        help="rows/s until a line arrives on stdin")
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--z", type=float, default=1.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--burst-ms", type=float, default=10.0)
    args = parser.parse_args(argv)
    report = generate(args.bootstrap, args.topic, rate=args.rate, seconds=args.seconds,
                      warm_rate=args.warm_rate,
                      keys=args.keys, z=args.z, seed=args.seed, burst_ms=args.burst_ms)
    print(json.dumps(report), flush=True)
    return 0 if report["unacknowledged"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
