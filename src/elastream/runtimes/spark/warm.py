"""Start a job's Python workers while Spark plans its first micro-batch.

A job's first micro-batch waits for its Python stages' workers: the executors start PySpark's
daemon, fork a worker per core and each worker imports what the job's functions need (NumPy,
pyarrow, pandas, elastream's stages), several seconds on a cold machine; meanwhile the
driver's first query planning (~4 s) keeps one core busy and the others idle. A small job
submitted when the job is built, one task per core, starts those workers and imports those
modules in them, beside the planning; the stages then take the warm workers from PySpark's
pool (``spark.python.worker.reuse``, on by default).

It is a convenience, not a step the job depends on: it runs in a daemon thread, and its
failure (a session stopped first, an executor lost) changes nothing but the first batch's time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from pyspark.sql import SparkSession

JOB_GROUP = "elastream-warm-workers"
"""The warm-up job's group (Spark's job group, for its UI and status tracker)."""


def import_job_modules(_rows: Iterable[object]) -> Iterator[object]:
    """The modules a job's Python stages unpickle their functions with (in a worker)."""
    import pyspark.sql.pandas.serializers
    import pyspark.sql.streaming.stateful_processor_api_client  # noqa: F401

    import elastream.runtimes.spark.compute
    import elastream.runtimes.spark.consolidate  # noqa: F401
    return iter(())


def warm_python_workers(spark: SparkSession, *, group: str = JOB_GROUP) -> threading.Thread:
    """Start a task per core that imports the job's modules in its Python worker; return.

    ``group``: the Spark job group the warm-up runs in.
    """
    context = spark.sparkContext
    tasks = max(1, context.defaultParallelism)

    def run() -> None:
        try:
            context.setJobGroup(group, "elastream: start the job's Python workers")
            context.parallelize(range(tasks), tasks).mapPartitions(import_job_modules).collect()
        except Exception:  # best effort: the job's stages start their workers anyway
            return

    thread = threading.Thread(target=run, name="elastream-warm-workers", daemon=True)
    thread.start()
    return thread
