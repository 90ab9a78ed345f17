"""Real cores for a job's slots: Spark executors requested and released as the load asks.

Elasticutor's scheduler gives each elastic executor as many cores as its load needs (§4.1); on
Spark a core is an executor core, and a job's slots run as one task each per micro-batch. An
:class:`ExecutorPool` holds ``⌈slots / spark.executor.cores⌉`` executors for the slots a plan
keeps busy (:attr:`~elastream.core.plan.Plan.slots_used`), within the bounds the job was given,
through SparkContext's executor-allocation calls — which Spark's own dynamic allocation does
not drive for Structured Streaming (SPARK-24815):

* ``requestTotalExecutors(n, 0, {})`` sets the number the cluster manager keeps granted (a
  standalone master launches executors up to it, and launches no more; YARN and Kubernetes
  alike);
* surplus executors are killed only when idle, through the scheduler backend's
  ``killExecutors(ids, adjustTargetNumExecutors=false, countFailures=false, force=false)``
  (what Spark's ``ExecutorAllocationManager`` does): a busy one is left for a later step, so no
  running task is lost to a release. A released executor's state partitions are loaded again
  from the checkpoint by whichever executor runs them next.

Growing happens at once; shrinking only once the smaller demand has lasted ``release_after``
seconds (the largest demand within that window is held), since an executor takes seconds to
start and a demand that dips for one micro-batch would otherwise make the pool churn. The
paper moves cores between executors in milliseconds and has no such delay.

Needs a cluster master (standalone ``spark://``, YARN, Kubernetes) without dynamic
allocation; ``local[N]`` runs every task in the driver's JVM and has no executors to hold.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from elastream.core.errors import OptionError, SessionError
from elastream.core.options import OPTIONS


class ExecutorPool:
    """Holds the Spark executors a job's busy slots need, between ``fewest`` and ``most``."""

    def __init__(self, spark: SparkSession, fewest: int, most: int, *,
                 release_after: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        check_pool(spark, fewest, most, release_after)
        self.spark = spark
        self.fewest, self.most = fewest, most
        self.release_after = release_after
        self.cores = int(spark.conf.get("spark.executor.cores", "1") or 1)
        self.clock = clock
        self._wanted: deque[tuple[float, int]] = deque()
        self.target: int | None = None

    def executors_for(self, slots: int) -> int:
        """Executors that run ``slots`` tasks at once, within the bounds."""
        return min(self.most, max(self.fewest, math.ceil(slots / self.cores)))

    def hold(self, slots: int) -> dict[str, int]:
        """Ask for the executors ``slots`` need; release idle surplus once it lasted.

        Returns what it did, for the job's metrics: ``executors_wanted`` (for these slots),
        ``executors_target`` (asked of the cluster manager) and ``executors`` (alive now).
        """
        now, wanted = self.clock(), self.executors_for(slots)
        self._wanted.append((now, wanted))
        while self._wanted and self._wanted[0][0] < now - self.release_after:
            self._wanted.popleft()
        target = max(w for _, w in self._wanted)
        context = self.spark.sparkContext._jsc.sc()
        if target != self.target:
            context.requestTotalExecutors(target, 0, _empty_map(self.spark))
            self.target = target
        alive = executor_ids(self.spark)
        if len(alive) > target:
            self._release(alive, len(alive) - target)
        return {"executors_wanted": wanted, "executors_target": target,
                "executors": len(executor_ids(self.spark))}

    def _release(self, alive: list[str], surplus: int) -> None:
        """Kill up to ``surplus`` idle executors, the newest first."""
        context = self.spark.sparkContext._jsc.sc()
        scheduler = context.taskScheduler()
        idle = [e for e in sorted(alive, key=_id_order, reverse=True)
                if not scheduler.isExecutorBusy(e)][:surplus]
        if idle:
            jvm = _jvm(self.spark)
            ids = jvm.org.apache.spark.api.python.PythonUtils.toSeq(idle)
            context.schedulerBackend().killExecutors(ids, False, False, False)


def executor_ids(spark: SparkSession) -> list[str]:
    """Ids of the executors alive now and not being removed (the driver excluded)."""
    context = spark.sparkContext._jsc.sc()
    backend = context.schedulerBackend()
    seq = context.getExecutorIds()
    return [e for e in (str(seq.apply(i)) for i in range(seq.length()))
            if backend.isExecutorActive(e)]


def check_pool(spark: SparkSession, fewest: int, most: int, release_after: float) -> None:
    """Raise naming the argument when a pool cannot work with this session or these bounds."""
    OPTIONS["spark_executors"].check((fewest, most))
    OPTIONS["release_after"].check(release_after)
    master = str(spark.sparkContext.master)
    if master.startswith("local"):
        raise OptionError("spark_executors", "needs a cluster master (spark://, yarn, "
                          "k8s://): a local master runs every task in the driver", master)
    if (spark.conf.get("spark.dynamicAllocation.enabled", "false") or "").lower() == "true":
        raise SessionError("spark.dynamicAllocation.enabled must be false for a job that "
                           "holds its own executors (spark_executors): Spark refuses "
                           "executor requests while its dynamic allocation runs")


def _empty_map(spark: SparkSession) -> Any:
    """An empty Scala immutable map (no host has locality wishes)."""
    jvm = _jvm(spark)
    return jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(jvm.java.util.HashMap())


def _id_order(executor_id: str) -> tuple[int, str]:
    return (int(executor_id), executor_id) if executor_id.isdigit() else (-1, executor_id)


def _jvm(spark: SparkSession) -> Any:
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise SessionError("the SparkContext has stopped")
    return jvm
