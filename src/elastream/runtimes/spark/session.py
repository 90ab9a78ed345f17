"""The SparkSession elastream runs on: local ``local[2]`` by default, or any master's.

Settings are decided by :mod:`.settings`: what the user gave (arguments, or ``spark-submit``'s
``--master``, ``--conf``, ``--driver-memory`` and ``spark-defaults.conf`` when the program was
launched by it) is kept, what elastream needs is set (and a given value that differs is refused
with a :class:`~elastream.core.errors.SessionError` naming the setting), the rest is filled in.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from elastream.core.errors import SessionError
from elastream.runtimes.spark.settings import (
    REQUIRED,
    SHUFFLE_PARTITIONS,
    job_settings,
    session_settings,
)

DRIVER_MEMORY = "spark.driver.memory"
PYTHON = "spark.pyspark.python"


def get_spark(master: str | None = None, app_name: str | None = None,
              conf: Mapping[str, str] | None = None, *,
              partitions: int | None = None) -> SparkSession:
    """The session on ``master`` (default: ``spark-submit``'s, else ``local[2]``).

    ``conf``: further settings (``spark.executor.memory``, …); ``partitions``: the state
    partitions of the job it is for (its shuffle partitions; default: one per core, Spark's
    default parallelism). Executors' Python workers run this very interpreter unless
    ``spark.pyspark.python`` or ``PYSPARK_PYTHON`` says otherwise. A session this process
    already has is returned after checking it can take ``master`` and ``conf``.
    """
    asked = dict(conf or {})
    if master is not None:
        asked["spark.master"] = master
    if app_name is not None:
        asked["spark.app.name"] = app_name
    if SparkContext._active_spark_context is not None:
        return _reuse(SparkSession.builder.getOrCreate(), asked, partitions)
    launched = _launched_conf()
    jvm_started = SparkContext._gateway is not None
    if jvm_started and DRIVER_MEMORY in asked and asked[DRIVER_MEMORY] != launched.get(
            DRIVER_MEMORY):
        raise SessionError(f"{DRIVER_MEMORY} cannot be {asked[DRIVER_MEMORY]!r}: the driver's "
                           "JVM already runs (under spark-submit, pass its --driver-memory)")
    settings = session_settings({**launched, **asked}, jvm_started=jvm_started,
                                partitions=partitions)
    _check_reachable(settings["spark.master"])
    if PYTHON in settings:
        os.environ["PYSPARK_PYTHON"] = settings[PYTHON]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as error:  # the gateway raises several kinds: runtime, OS, Py4J
        raise SessionError(f"Spark could not start on {settings['spark.master']!r}: "
                           f"{_reason(error)}") from error
    if SHUFFLE_PARTITIONS not in settings:
        spark.conf.set(SHUFFLE_PARTITIONS, str(spark.sparkContext.defaultParallelism))
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _check_reachable(master: str) -> None:
    """Fail at once if no master of a ``spark://`` URL answers (Spark would retry for a minute).

    >>> _check_reachable("local[2]")
    """
    if not master.startswith("spark://"):
        return
    problems = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=5):
                return
        except (OSError, ValueError) as error:
            problems.append(f"{address}: {error}")
    raise SessionError(f"spark.master {master!r} does not answer ({'; '.join(problems)}); is the "
                       "cluster running?")


def _reason(error: Exception) -> str:
    """A Java exception's own message (not Py4J's wrapper), else the error's first line."""
    java = getattr(error, "java_exception", None)
    text = str(java.toString()) if java is not None else str(error)
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__


def _launched_conf() -> dict[str, str]:
    """What ``spark-submit`` set for this program (empty when it was not launched by it).

    ``spark-submit`` starts the driver's JVM first and hands this process its gateway
    (``PYSPARK_GATEWAY_PORT``); the JVM's system properties hold the master and settings.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}
    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


def _reuse(spark: SparkSession, asked: Mapping[str, str],
           partitions: int | None) -> SparkSession:
    """The process's session, with the runtime settings ``asked`` and those a job needs."""
    context = spark.sparkContext
    if "spark.master" in asked and asked["spark.master"] != context.master:
        raise SessionError(f"spark.master cannot be {asked['spark.master']!r}: this process "
                           f"already runs a SparkContext on {context.master!r}; stop it first")
    running = dict(context.getConf().getAll())
    for key, value in asked.items():
        if key == "spark.master" or running.get(key) == value:
            continue
        if not spark.conf.isModifiable(key):
            raise SessionError(f"{key} cannot be {value!r} in the running SparkContext "
                               f"(it has {running.get(key)!r}); stop it first")
        spark.conf.set(key, value)
    needed = (job_settings(partitions) if partitions is not None
              else {key: value for key, (value, _) in REQUIRED.items()})
    for key, value in needed.items():
        spark.conf.set(key, value)
    return spark
