"""The Spark settings elastream needs, the ones it fills in, and how a session's are decided.

Three kinds, and who wins:

* **required** (:data:`REQUIRED`, and a job's shuffle partitions): the state layout depends on
  them. A value given otherwise (``--conf``, ``spark-submit``, ``spark-defaults.conf``) is
  refused with a :class:`~elastream.core.errors.SessionError` naming the setting, never
  overridden silently.
* **given**: whatever the user or a launcher (``spark-submit``) set; kept as it is.
* **defaults** (:func:`defaults`): filled in where nothing was given — quiet logs, UTC, Arrow,
  the driver's memory (only while the driver's JVM has not started), and, on the local file
  system, :data:`LOCAL_CHECKPOINT_FILES`.

Pure: no Spark here, so the command line checks ``--conf`` before anything starts.

>>> settings = session_settings({"spark.master": "spark://h:7077",
...                              "spark.executor.memory": "3g"}, jvm_started=False)
>>> settings["spark.executor.memory"], settings["spark.scheduler.minRegisteredResourcesRatio"]
('3g', '1.0')
>>> session_settings({OPERATOR_DISTRIBUTION: "true"}, jvm_started=False)
Traceback (most recent call last):
...
elastream.core.errors.SessionError: spark.sql.streaming.statefulOperator.useStrictDistribution \
must be 'false' for elastream (a slot's pin decides its state partition), got 'true'; remove it \
or set it to 'false'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from elastream.core.errors import SessionError

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STATE_STORE = "spark.sql.streaming.stateStore.providerClass"
OPERATOR_DISTRIBUTION = "spark.sql.streaming.statefulOperator.useStrictDistribution"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
LOCAL_CHECKPOINT_FILES = ("org.apache.spark.sql.execution.streaming.checkpointing."
                          "FileSystemBasedCheckpointFileManager")
"""How checkpoint files (offsets, commits, state changelogs) are written on a local disk.

Spark's default goes through Hadoop's ``FileContext``, whose rename runs ``readlink`` in a
forked process on every file committed when Hadoop's native library is absent (as with a pip
installed PySpark): about 17 forks of the JVM per micro-batch here. This one writes a temporary
file and renames it with the local file system's atomic ``rename``.
"""
DEFAULT_MASTER = "local[2]"

REQUIRED: Mapping[str, tuple[str, str]] = {
    STATE_STORE: (ROCKSDB, "transformWithState keeps its state in RocksDB"),
    OPERATOR_DISTRIBUTION: ("false", "a slot's pin decides its state partition"),
}
"""Setting → (the value elastream needs, why). A job adds :data:`SHUFFLE_PARTITIONS`."""


def job_settings(partitions: int) -> dict[str, str]:
    """The SQL settings a job of ``partitions`` state partitions needs at its queries' start.

    RocksDB state; no strict distribution, so the stateful operators keep the partitioning by
    pin the compute stage sets up; one shuffle partition per slot (fixed at a first start).
    """
    needed = {key: value for key, (value, _) in REQUIRED.items()}
    return {**needed, SHUFFLE_PARTITIONS: str(partitions)}


def defaults(master: str, given: Mapping[str, str], *, jvm_started: bool) -> dict[str, str]:
    """What elastream sets where nothing was given (``given`` decides the file system).

    A cluster master (not ``local``) also waits for every executor core asked for
    (``spark.cores.max``) before the first job, so the state partitions spread over all
    executors from the first micro-batch on (state stays where it was first loaded).
    """
    settings = {
        "spark.app.name": "elastream",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # A file costs little to open here, so a micro-batch's one file (a few MB) is split by
        # row groups into a task per core instead of being read by one task.
        "spark.sql.files.openCostInBytes": str(64 * 1024),
        # Spark sets it for the mapInArrow stages but not for transformWithStateInPandas:
        # without it the job's Python stages hold two pools of Python workers, not one.
        "spark.executorEnv.SPARK_SIMPLIFIED_TRACEBACK": "1",
    }
    if not jvm_started:
        log_config = Path(__file__).with_name("log4j2.properties")
        settings["spark.driver.memory"] = os.environ.get("ELASTREAM_DRIVER_MEMORY", "2g")
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={log_config}"
    if not master.startswith("local"):
        settings["spark.scheduler.minRegisteredResourcesRatio"] = "1.0"
    if given.get("spark.hadoop.fs.defaultFS", "file:///").startswith("file:"):
        settings[CHECKPOINT_MANAGER] = LOCAL_CHECKPOINT_FILES
    return settings


def refuse_conflicts(given: Mapping[str, str], needed: Mapping[str, str]) -> None:
    """Raise :class:`SessionError` naming each ``given`` setting that differs from ``needed``."""
    wrong = [(key, value, given[key]) for key, value in needed.items()
             if key in given and given[key] != value]
    if wrong:
        raise SessionError("; ".join(
            f"{key} must be {value!r} for elastream ({_why(key)}), got {got!r}; remove it or "
            f"set it to {value!r}" for key, value, got in wrong))


def session_settings(given: Mapping[str, str], *, jvm_started: bool,
                     partitions: int | None = None) -> dict[str, str]:
    """Every setting of a new session: what was given, what is needed, and the defaults.

    ``given`` (with ``spark.master``) is kept; the :data:`REQUIRED` settings and, for a job of
    ``partitions`` state partitions, its shuffle partitions are set (refused where ``given``
    differs); :func:`defaults` fill in the rest.
    """
    needed = {key: value for key, (value, _) in REQUIRED.items()}
    if partitions is not None:
        needed[SHUFFLE_PARTITIONS] = str(partitions)
    refuse_conflicts(given, needed)
    master = given.get("spark.master", DEFAULT_MASTER)
    return {**defaults(master, given, jvm_started=jvm_started), "spark.master": master,
            **given, **needed}


def _why(key: str) -> str:
    if key == SHUFFLE_PARTITIONS:
        return "one state partition per slot, from the job's slots"
    return REQUIRED[key][1]
