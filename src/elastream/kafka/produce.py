"""Send a file's rows to a Kafka topic as JSON objects, in file order, at a rate if asked.

:func:`produce` reads Parquet, CSV or JSON lines by record batches (never the whole file at
once), turns each batch into JSON texts with Arrow's compute functions (:func:`json_values`),
and hands them to the ``confluent-kafka`` producer: one call per row, the one Python loop left,
since the client takes messages one by one. Keys, when a column is named, are its values as
UTF-8, placed by the Java client's partitioner (murmur2), so a key lands in the partition a
Spark job's Kafka sink would put it in. Idempotence keeps each partition in file order through
retries.

Values read as Spark's ``from_json`` reads them with its default options: timestamps as
``2001-01-01T00:01:00.000000`` (ISO 8601, microseconds; with a time zone, in UTC with ``Z``),
dates as ``2001-01-01``, NaN and infinities as ``NaN``, ``Infinity``, ``-Infinity``, nulls as
``null``. With ``rate``, rows leave in bursts of :data:`BURST_SECONDS` worth, each once the
wall clock since the first reaches its rows' share (no drift over a long run): ``n`` rows take
at least ``n / rate`` seconds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from elastream.core import rules
from elastream.core.errors import DataError, OptionError
from elastream.core.options import FORMATS
from elastream.core.spec import format_of
from elastream.kafka.broker import (
    BrokerError,
    check_topic,
    client_config,
    confluent,
    create_topic,
)

BATCH_ROWS = 65_536
"""Parquet rows read, encoded and sent together."""
BLOCK_BYTES = 1 << 22
"""CSV and JSON lines are read by blocks of this many bytes (a line must fit in one)."""
BURST_SECONDS = 0.05
"""With a rate, rows are sent in bursts of this many seconds' worth."""
DELIVERY_SECONDS = 30.0
"""How long a message may wait for the broker (a restart included) before its delivery fails."""
FLUSH_MARGIN = 10.0
"""Seconds the last flush waits beyond a message's own delivery timeout."""
CONTROL_CHARACTERS = {chr(c): json.dumps(chr(c))[1:-1] for c in range(0x20)}
"""The characters JSON strings escape besides ``"`` and ``\\``, with their escapes."""


def produce(bootstrap: str, topic: str, path: Path | str, *, partitions: int = 1,
            key_col: str | None = None, rate: float | None = None,
            format: str | None = None) -> dict[str, Any]:
    """Send every row of the file at ``path`` to ``topic``; return what was sent.

    ``partitions``: the topic's partitions if it does not exist yet (an existing topic keeps
    its own). ``key_col``: the column whose values (as UTF-8 text) key the messages; default
    none. ``rate``: rows per second (default: as fast as the broker takes them). ``format``:
    ``parquet``, ``csv`` or ``json`` (JSON lines); default from the file's suffix.

    Returns ``{"topic", "rows", "partitions", "seconds"}``: ``partitions`` the topic's,
    ``seconds`` the wall time from reading the first rows to the last acknowledgement. Raises
    :class:`~elastream.core.errors.OptionError` for a bad argument and
    :class:`~elastream.core.errors.DataError` for a missing file or one whose first block
    cannot be read, before anything is sent (a later block that cannot be read stops the
    sending there); :class:`~elastream.kafka.broker.BrokerError` if the broker does not answer
    within :data:`~elastream.kafka.broker.ANSWER_SECONDS` or a delivery fails (with the first
    failure's reason).
    """
    path = Path(path)
    check_topic(topic)
    rules.integer("partitions", partitions)
    if rate is not None:
        rules.number("rate", rate, above=0, unit="rows per second")
    fmt = rules.choice("format", format, FORMATS) if format is not None else format_of(path)
    reader = _open(path, fmt)
    columns = reader.schema.names
    if key_col is not None and key_col not in columns:
        raise OptionError("key_col", f"must be a column of {path.name} ({', '.join(columns)})",
                          key_col)
    partitions = create_topic(bootstrap, topic, partitions)
    sender = Sender(bootstrap, topic)
    start = time.monotonic()
    rows = 0
    for batch in _batches(reader, path, fmt):
        values = json_values(batch).cast(pa.binary()).to_pylist()
        keys = _keys(batch.column(key_col)) if key_col is not None else None
        burst = max(1, int(rate * BURST_SECONDS)) if rate else len(values)
        for first in range(0, len(values), burst):
            if rate:
                sender.wait_until(start + (rows + first + burst) / rate)
            sender.send(values[first:first + burst],
                        keys[first:first + burst] if keys is not None else None)
            if sender.failures:
                break
        rows += len(values)
        if sender.failures:
            break
    sender.flush(f"sending {path.name}")
    return {"topic": topic, "rows": rows, "partitions": partitions,
            "seconds": time.monotonic() - start}


class Sender:
    """An idempotent producer to ``topic`` whose every delivery is checked by :meth:`flush`.

    Also the Kafka sink's (:mod:`elastream.runtimes.spark.kafka_sink`).
    """

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.failures: list[str] = []

        def failed(error: Any, message: Any) -> None:  # with delivery.report.only.error
            self.failures.append(error.str())

        self.producer = confluent().Producer({
            **client_config(bootstrap), "enable.idempotence": True, "linger.ms": 20,
            "compression.type": "lz4", "partitioner": "murmur2_random",
            "queue.buffering.max.messages": 1_000_000, "message.timeout.ms":
            int(DELIVERY_SECONDS * 1000), "delivery.report.only.error": True,
            "on_delivery": failed})

    def send(self, values: list[bytes], keys: list[bytes | None] | None) -> None:
        """Queue the messages; a full queue waits for deliveries to free room."""
        send, producer, topic = self.producer.produce, self.producer, self.topic
        for i, value in enumerate(values):
            key = keys[i] if keys is not None else None
            while True:
                try:
                    send(topic, value, key)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)

    def wait_until(self, moment: float) -> None:
        """Serve the producer's events until the monotonic clock reaches ``moment``."""
        while (left := moment - time.monotonic()) > 0:
            self.producer.poll(min(left, 0.1))

    def flush(self, what: str) -> None:
        """Wait until the broker has every message; :class:`BrokerError` names ``what`` failed."""
        left = self.producer.flush(DELIVERY_SECONDS + FLUSH_MARGIN)
        if self.failures or left:
            reason = self.failures[0] if self.failures else f"{left} messages unacknowledged"
            self.failures.clear()
            raise BrokerError(f"{what} to topic {self.topic!r} at {self.bootstrap} failed: "
                              f"{reason}")


def json_values(batch: pa.RecordBatch) -> pa.Array:
    r"""Each row of ``batch`` as a JSON object, a string array built by Arrow's kernels.

    >>> import datetime
    >>> batch = pa.record_batch({"date": [datetime.datetime(2001, 1, 1, 0, 1), None],
    ...                          "origin": ['L"A', "ATL"], "delay": [33.5, float("nan")]})
    >>> for text in json_values(batch).to_pylist():
    ...     print(text)
    {"date":"2001-01-01T00:01:00.000000","origin":"L\"A","delay":33.5}
    {"date":null,"origin":"ATL","delay":NaN}
    """
    parts: list[Any] = []
    for i, (name, column) in enumerate(zip(batch.schema.names, batch.columns, strict=True)):
        parts.append(("{" if i == 0 else ",") + json.dumps(name, ensure_ascii=False) + ":")
        parts.append(pc.fill_null(_json_texts(column), "null"))
    if not parts:
        return pa.array(["{}"] * batch.num_rows, pa.string())
    return pc.binary_join_element_wise(*parts, "}", "")


def _json_texts(column: pa.Array) -> pa.Array:
    """Each value of ``column`` as JSON text (null where the value is null)."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        return _json_texts(column.dictionary_decode())
    if pa.types.is_null(kind):
        return pa.nulls(len(column), pa.string())
    if pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_decimal(kind):
        return column.cast(pa.string())
    if pa.types.is_floating(kind):
        text = column.cast(pa.string())
        for arrow, spark in (("nan", "NaN"), ("inf", "Infinity"), ("-inf", "-Infinity")):
            text = pc.if_else(pc.equal(text, arrow), spark, text)
        return text
    if pa.types.is_timestamp(kind):
        # Arrow writes "2001-01-01 00:01:00.000000" (with "Z" in UTC): ISO 8601 wants a "T"
        # (strftime would be 20 times slower).
        utc = "UTC" if kind.tz is not None else None
        text = column.cast(pa.timestamp("us", utc), safe=False).cast(pa.string())
        return _quoted(pc.utf8_replace_slice(text, 10, 11, "T"))
    if pa.types.is_date(kind):
        return _quoted(column.cast(pa.date32()).cast(pa.string()))
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _quoted(column.cast(pa.string()))
    # Lists, structs, binary and the rest are rare here: Python's json, value by value.
    return pa.array([None if v is None else json.dumps(v, ensure_ascii=False, default=str,
                                                    separators=(",", ":"))
                     for v in column.to_pylist()], pa.string())


def _quoted(text: pa.Array) -> pa.Array:
    """Strings as JSON string literals: escaped (when any needs it) and in double quotes."""
    if pc.any(pc.match_substring_regex(text, r'["\\\x00-\x1f]')).as_py():
        text = pc.replace_substring(text, "\\", "\\\\")
        text = pc.replace_substring(text, '"', '\\"')
        for character, escape in CONTROL_CHARACTERS.items():
            text = pc.replace_substring(text, character, escape)
    return pc.binary_join_element_wise('"', text, '"', "")


def _keys(column: pa.Array) -> list[bytes | None]:
    """The key column's values as UTF-8 bytes (text for numbers and times; None if null)."""
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        column = column.cast(pa.string())
    keys: list[bytes | None] = column.cast(pa.binary()).to_pylist()
    return keys


def _open(path: Path, fmt: str) -> Any:
    """A reader of the file's record batches, with their ``schema``.

    Parquet's comes from the footer, CSV's and JSON's from the first block.
    """
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson
    import pyarrow.parquet as pq

    if not path.is_file():
        raise DataError(f"input {str(path)!r} " + ("is not a file" if path.exists()
                                                    else "does not exist"))
    try:
        if fmt == "parquet":
            return _ParquetBatches(pq.ParquetFile(path))
        if fmt == "csv":
            return pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=BLOCK_BYTES))
        return pajson.open_json(path, read_options=pajson.ReadOptions(block_size=BLOCK_BYTES))
    except (pa.ArrowInvalid, OSError) as error:
        raise DataError(f"cannot read {str(path)!r} as {fmt}: {error}") from None


def _batches(reader: Any, path: Path, fmt: str) -> Iterator[pa.RecordBatch]:
    try:
        yield from (batch for batch in reader if batch.num_rows)
    except (pa.ArrowInvalid, OSError) as error:
        raise DataError(f"cannot read {str(path)!r} as {fmt}: {error}") from None


class _ParquetBatches:
    """A Parquet file's record batches of :data:`BATCH_ROWS` rows, and its schema."""

    def __init__(self, parquet: Any) -> None:
        self.schema = parquet.schema_arrow
        self._parquet = parquet

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return iter(self._parquet.iter_batches(batch_size=BATCH_ROWS))
