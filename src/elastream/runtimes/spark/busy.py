"""How long each slot worked: busy seconds per state partition, summed in the driver.

The job's slot stages — pane partials (``mapInArrow``, :mod:`.compute`) and the consolidate
operator (:mod:`.consolidate`) — run in the partition of the slot they serve; each task adds
the seconds its Python function ran to a Spark accumulator, at the task's partition. The
driver reads the sums (:class:`BusyClock`): busy seconds per slot between two reads, from
which the control loop measures the rows a slot processes per second of work (Elasticutor's
service rate ``μ``, §4.1: "measured by the system").

Spark adds a task's accumulator updates once, when the task succeeds; a failed attempt's
seconds are not counted. A read falls between micro-batches only by chance: the tasks of a
batch still running when it is read count towards the next read.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from pyspark import AccumulatorParam, TaskContext
from pyspark.sql import SparkSession


class Seconds(AccumulatorParam[np.ndarray]):
    """Adds arrays (of seconds, or of any amounts) element by element."""

    def zero(self, value: np.ndarray) -> np.ndarray:
        """Zeros shaped like ``value``."""
        return np.zeros_like(value)

    def addInPlace(self, total: np.ndarray, more: np.ndarray) -> np.ndarray:
        """``total`` plus ``more``, in place."""
        total += more
        return total


def busy_accumulator(spark: SparkSession, partitions: int) -> Any:
    """A new accumulator of busy seconds for ``partitions`` state partitions."""
    return spark.sparkContext.accumulator(np.zeros(partitions), Seconds())


def add_busy(accumulator: Any, partitions: int, started: float) -> None:
    """In a task: add the seconds since ``started`` (``time.perf_counter``) at its partition.

    ``partitions``: the accumulator's size (:func:`busy_accumulator`'s).
    """
    context = TaskContext.get()
    if context is None or not 0 <= context.partitionId() < partitions:
        return
    seconds = np.zeros(partitions)
    seconds[context.partitionId()] = time.perf_counter() - started
    accumulator.add(seconds)


class BusyClock:
    """The driver's reader: busy seconds per partition since its last :meth:`lap`."""

    def __init__(self, accumulator: Any) -> None:
        self.accumulator = accumulator
        self._last = np.zeros_like(np.asarray(accumulator.value, dtype=float))

    def lap(self) -> np.ndarray:
        """Seconds each partition worked since the previous lap (or since the job began)."""
        now: np.ndarray = np.asarray(self.accumulator.value, dtype=float).copy()
        since: np.ndarray = np.maximum(now - self._last, 0.0)
        self._last = now
        return since
