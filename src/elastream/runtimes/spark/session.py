"""The local SparkSession elastream runs on, configured for small, fast stateful streaming."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
LOCAL_CHECKPOINT_FILES = ("org.apache.spark.sql.execution.streaming.checkpointing."
                          "FileSystemBasedCheckpointFileManager")
"""How a local session writes checkpoint files (offsets, commits, state changelogs).

Spark's default goes through Hadoop's ``FileContext``, whose rename runs ``readlink`` in a
forked process on every file committed when Hadoop's native library is absent (as with a pip
installed PySpark): about 17 forks of the JVM per micro-batch here. This one writes a temporary
file and renames it with the local file system's atomic ``rename``.
"""


def get_spark(master: str = "local[2]", app_name: str = "elastream") -> SparkSession:
    """Create (or return) the session; workers run this very Python interpreter.

    ``useStrictDistribution=false`` lets a stateful aggregation keep the hash partitioning by
    pin that the compute stage sets up, so a slot's pin decides its partition (DESIGN.md).
    ``SPARK_SIMPLIFIED_TRACEBACK`` in every Python worker's environment: Spark sets it for the
    ``mapInArrow`` stages but not for ``transformWithStateInPandas``, and workers whose
    environments differ come from two daemons, so the job held twice the Python workers (four
    of ~200 MB instead of two on ``local[2]``). On a ``local`` master, checkpoint files are
    written as :data:`LOCAL_CHECKPOINT_FILES` says.
    """
    log_config = Path(__file__).with_name("log4j2.properties")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master)
    if master.startswith("local"):
        builder = builder.config("spark.sql.streaming.checkpointFileManagerClass",
                                 LOCAL_CHECKPOINT_FILES)
    spark = (
        builder
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        .config("spark.sql.streaming.statefulOperator.useStrictDistribution", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        # A file costs little to open here, so a micro-batch's one file (a few MB) is split by
        # row groups into a task per core instead of being read by one task.
        .config("spark.sql.files.openCostInBytes", str(64 * 1024))
        .config("spark.driver.memory", os.environ.get("ELASTREAM_DRIVER_MEMORY", "2g"))
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log_config}")
        .config("spark.executorEnv.SPARK_SIMPLIFIED_TRACEBACK", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark
