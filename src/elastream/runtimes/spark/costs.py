"""What the job's stages cost, for Enorm's split-or-combine cost model (§5.1.1).

Each task of the slot stages adds, to one Spark accumulator, what it did and how long it took
(:data:`COSTS`); the driver reads the sums between observations (:class:`CostClock`), and the
control loop turns them into the model's terms (:mod:`elastream.control.execution`):

* ``compute_seconds`` / ``executions``: the pane stage's time and its executions of records —
  one per record split, one per record and window combined (the model's ``E`` per execution);
* ``pane_partials`` / ``window_partials``: the partials the pane stage made, split or combined,
  and in an ``auto`` job also those the other execution would have made (the streams of
  partials each sends; 0 for the kind not counted);
* ``consolidate_seconds`` / ``partials``: the consolidate stage's time and the partials it
  received (``K_1``, the cost of one partial, while split; every window's cost, combined);
* ``handoff_seconds`` / ``handoffs``: time spent writing and taking over key groups' state, and
  how many (``L``, the pause a key group moved with its state costs).

Like :mod:`.busy`, a task's additions count once, when the task succeeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pyspark.sql import SparkSession

from elastream.runtimes.spark.busy import BusyClock, Seconds

COSTS = ("compute_seconds", "executions", "pane_partials", "window_partials",
         "consolidate_seconds", "partials", "handoff_seconds", "handoffs")


def cost_accumulator(spark: SparkSession) -> Any:
    """A new accumulator of the :data:`COSTS`."""
    return spark.sparkContext.accumulator(np.zeros(len(COSTS)), Seconds())


def add_costs(accumulator: Any, **amounts: float) -> None:
    """In a task: add ``amounts`` (names of :data:`COSTS`); nothing when ``accumulator`` is None."""
    if accumulator is None:
        return
    values = np.zeros(len(COSTS))
    for name, amount in amounts.items():
        values[COSTS.index(name)] = amount
    accumulator.add(values)


class CostClock:
    """The driver's reader: the :data:`COSTS` added since its last :meth:`lap`."""

    def __init__(self, accumulator: Any) -> None:
        self._clock = BusyClock(accumulator)

    def lap(self) -> dict[str, float]:
        """Each cost since the previous lap (or since the job began)."""
        return dict(zip(COSTS, map(float, self._clock.lap()), strict=True))
