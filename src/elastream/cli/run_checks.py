"""``elastream run``'s options checked against the files they name, before anything happens.

:func:`check_files` runs once the options made a valid :class:`~elastream.core.spec.RunSpec`
and before the flights are fetched, Spark starts or anything is written. It reads no rows:

- ``--input``: a Kafka topic's URL (its columns: ``--schema``), or a path that exists; a
  folder for ``--mode watch``; for a replay, a file or a folder holding
  ``.FORMAT`` files, readable as ``--format``. Without ``--input`` (the flights), ``--mode
  watch`` has no folder to watch.
- ``--time-col``, ``--key-col``, ``--then``, ``--agg``: columns of the input, read from
  Parquet footers, CSV headers, JSON records (:mod:`elastream.workloads.input_columns`), the
  ``--schema`` DDL, or the flights' known columns; a watched folder's, from its oldest file
  that can be read (the others will be quarantined), or, with none yet and no ``--schema``,
  when its first file arrives.
- A Kafka topic (``--input``, ``--sink``): its broker answers; Spark's Kafka connector's jars
  are there (``make jars``).
- ``--output``: a folder, or a path where one can be made; a job already there resumes, so its
  defining options must be the same (:mod:`elastream.core.identity`: each difference is
  named with both values) and a new slot count one it can move to live. The job is then run
  with the state partitions it has.

Each failure is an :class:`~elastream.core.errors.OptionError` naming the flag, the rule and
the value.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from elastream.core.errors import OptionError
from elastream.core.identity import IDENTITY, check_resume
from elastream.core.kafka_topic import KafkaTopic
from elastream.core.options import flag_of
from elastream.core.spec import RunSpec
from elastream.workloads.flights import FLIGHTS_COLUMNS
from elastream.workloads.input_columns import (
    data_files,
    ddl_columns,
    file_columns,
    first_readable_columns,
)

BROKER_SECONDS = 10.0
STATE = ("_checkpoints", "_routing", "_replay", "_migration")
"""What a job of any elastream version keeps in its output folder."""


def check_files(spec: RunSpec, *, given_input: Path | KafkaTopic | None,
                flights: Path) -> RunSpec:
    """Check the input, its columns and the output folder of ``spec``; the spec to run.

    ``given_input``: ``--input``, or ``None`` for the flights, whose file is ``flights``
    (where they are or will be fetched to). Options are named by their flags. A job that
    resumes runs with the state partitions it has (its ``max_slots``).
    """
    source = flights if given_input is None else given_input
    if isinstance(source, KafkaTopic):
        assert spec.files.schema is not None  # the spec's rule for a Kafka input
        columns: list[str] | None = ddl_columns(spec.files.schema)
    else:
        columns = _flights_columns(spec) if given_input is None else _input_columns(spec,
                                                                                   source)
    if columns is not None:
        _check_columns(spec, columns)
    for option, topic in (("--input", spec.files.kafka), ("--sink", spec.files.sink)):
        if isinstance(topic, KafkaTopic):
            _check_broker(option, topic)
    if isinstance(source, KafkaTopic):
        from elastream.kafka.jars import spark_kafka_jars

        spark_kafka_jars()  # or one line naming `make jars`
    return _check_output(spec, source)


def _check_broker(option: str, topic: KafkaTopic) -> None:
    """A broker answers at ``topic``'s bootstrap servers (asked for 10 s at most)."""
    from elastream.kafka.broker import client_config, confluent

    kafka = confluent()
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient(client_config(topic.bootstrap)).list_topics(timeout=BROKER_SECONDS)
    except kafka.KafkaException:
        raise OptionError(option, f"must name a Kafka broker that answers (none did at "
                          f"{topic.bootstrap} within {BROKER_SECONDS:.0f} s)",
                          str(topic)) from None


def _flights_columns(spec: RunSpec) -> list[str]:
    if spec.files.mode == "watch":
        raise OptionError("--mode", "watch needs --input, the folder files arrive in", "watch")
    return list(FLIGHTS_COLUMNS)


def _input_columns(spec: RunSpec, source: Path) -> list[str] | None:
    """The input's columns, or ``None`` for a watched folder with neither files nor schema."""
    if not source.exists():
        raise OptionError("--input", "must be an existing file or folder", str(source))
    needed = [column for _, column in spec.named_columns]
    if spec.files.mode == "watch":
        if not source.is_dir():
            raise OptionError("--input", "must be a folder with --mode watch", str(source))
        if spec.files.schema is not None:
            return ddl_columns(spec.files.schema)
        return first_readable_columns(source, spec.files.format, needed)
    if not data_files(source, spec.files.format):
        raise OptionError("--input", f"must hold .{spec.files.format} files (or give --format)",
                          str(source))
    return file_columns(source, spec.files.format, needed)


def _check_columns(spec: RunSpec, columns: list[str]) -> None:
    for option, column in spec.named_columns:
        if column not in columns:
            raise OptionError(flag_of(option), f"must name a column of the input "
                              f"({', '.join(columns)})", column)


def _check_output(spec: RunSpec, source: Path | KafkaTopic) -> RunSpec:
    output = spec.files.output
    if output.exists() and not output.is_dir():
        raise OptionError("--output", "must be a folder (or a path to make one at)", str(output))
    nearest = output.absolute()
    while not nearest.exists():
        nearest = nearest.parent
    if not nearest.is_dir() or not os.access(nearest, os.W_OK | os.X_OK):
        raise OptionError("--output", f"must be where you can write ({nearest} is not a "
                          "writable folder)", str(output))
    recorded = output / IDENTITY
    if not recorded.is_file():
        if any((output / name).exists() for name in STATE):
            raise OptionError("--output", "holds a job of an earlier elastream (no job.json); "
                              "use a new --output", str(output))
        return spec
    try:
        job = json.loads(recorded.read_text())
    except (OSError, ValueError):
        raise OptionError("--output", f"holds an unreadable {IDENTITY}; use a new --output",
                          str(output)) from None
    from elastream.control.planners import scales_by_ranges  # the planners: loaded when needed

    resume = check_resume(job, spec.with_(input=source), place="--output",
                          location=str(output), name=flag_of, by_ranges=scales_by_ranges(spec))
    return spec.with_(max_slots=resume.max_slots)
