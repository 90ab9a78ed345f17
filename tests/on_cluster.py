"""A driver program of the cluster tests: ``python -m tests.on_cluster MASTER FOLDER``.

One application on the cluster (one JVM and one set of executors to start, not two) that
writes into FOLDER what ``test_spark_cluster`` checks:

* ``placement.parquet``, ``routing.json``: where the compute stage aggregated each pane partial
  (:func:`tests.placement.compute_placement`);
* ``in.parquet`` and ``out/``: a job scaled live from 2 to 4 slots after micro-batch 1, at
  most 3 key groups moving per micro-batch, run by the engine of ``elastream run``;
* ``albic/``: the same stream under the ``albic`` planner scaled live from 2 to 4 slots and
  back to 2 by moves (the MILP fills the new slots, then empties the two it marked);
* ``elastic-in.parquet`` and ``elastic/``: a job whose slots the elasticutor planner sizes to
  each step's rows (a fixed service rate, so the sizes follow from the data alone) and which
  holds one Spark executor per slot in use, 1 or 2, releasing at once; ``pool.json``: the
  executors alive after a pool of that application was asked for 1, then for 2;
* ``events/``: Spark's event log of both.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tests.cluster_jobs import AGGS, WINDOWS, spark_conf
from tests.live import write_part
from tests.placement import compute_placement
from tests.spark_jobs import make_spec, random_stream, run_job

from elastream.core.spec import ScaleEvent
from elastream.runtimes.spark.executors import ExecutorPool, executor_ids
from elastream.runtimes.spark.session import get_spark


def main(master: str, folder: Path) -> None:
    """Run both on ``master``; write their outputs into ``folder``."""
    spark = get_spark(master, conf=spark_conf("test-on-cluster", folder / "events"))
    placed, table = compute_placement(spark, folder / "placement")
    placed.to_parquet(folder / "placement.parquet")
    (folder / "routing.json").write_text(json.dumps({"slot_of": list(table.slot_of)}))
    df = random_stream(seed=31, rows=750)
    df.to_parquet(folder / "in.parquet")
    spec = make_spec(folder / "in.parquet", folder / "out", aggs=AGGS, windows=WINDOWS,
                     slots=2, key_groups=8, scale_at=(ScaleEvent(1, 4),), max_moves=3,
                     rows_per_batch=150)
    run_job(spark, spec)
    albic = make_spec(folder / "in.parquet", folder / "albic", aggs=AGGS, windows=WINDOWS,
                      slots=2, key_groups=8, planner="albic", max_moves=3, rows_per_batch=100,
                      scale_at=(ScaleEvent(1, 4), ScaleEvent(3, 2)))
    run_job(spark, albic)
    elastic(spark, folder)
    spark.stop()


ELASTIC_FILES = (150, 150, 30, 30, 150, 30)
"""Rows of the files the elastic job's watched folder holds, one per micro-batch."""
SERVICE_RATE = 100.0
"""Rows a slot serves per second, fixed: with ``interval_seconds=1`` a step of ``n`` rows
wants ``min(2, n // 100 + 1)`` slots."""


def elastic(spark: Any, folder: Path) -> None:
    """The elasticutor job holding 1 or 2 executors, then the pool on its own (module doc)."""
    df = random_stream(seed=33, rows=sum(ELASTIC_FILES))
    df.to_parquet(folder / "elastic-in.parquet")
    watched = folder / "elastic-files"
    watched.mkdir()
    ends = np.cumsum(ELASTIC_FILES)
    for i, (start, end) in enumerate(zip(ends - ELASTIC_FILES, ends, strict=True)):
        write_part(watched, i, df.iloc[start:end])
    spec = make_spec(watched, folder / "elastic", aggs=AGGS, windows=WINDOWS, mode="watch",
                     schema="ts timestamp, key string, v double", slots=2, key_groups=8,
                     planner="elasticutor", max_batches=len(ELASTIC_FILES),
                     planner_options={"executors": 1, "service_rate": SERVICE_RATE,
                                      "interval_seconds": 1.0, "latency_target": 60.0},
                     spark_executors=(1, 2), release_after=0.0)
    run_job(spark, spec)
    pool = ExecutorPool(spark, 1, 2, release_after=0.0)
    seen = {"before": executor_ids(spark), "released": _held(pool, spark, 1),
            "regained": _held(pool, spark, 2)}
    (folder / "pool.json").write_text(json.dumps(seen))


def _held(pool: ExecutorPool, spark: Any, slots: int) -> list[str]:
    """Ask ``pool`` for ``slots`` executors until that many are alive (or 180 s passed)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        pool.hold(slots)
        if len(executor_ids(spark)) == slots:
            break
        time.sleep(0.5)
    return executor_ids(spark)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
