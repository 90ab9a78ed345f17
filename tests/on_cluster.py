"""A driver program of the cluster tests: ``python -m tests.on_cluster MASTER FOLDER``.

One application on the cluster (one JVM and one set of executors to start, not two) that
writes into FOLDER what ``test_spark_cluster`` checks:

* ``placement.parquet``, ``routing.json``: where the compute stage aggregated each pane partial
  (:func:`tests.placement.compute_placement`);
* ``in.parquet`` and ``out/``: a job scaled live from 2 to 4 slots after micro-batch 1, at
  most 3 key groups moving per micro-batch, run by the engine of ``elastream run``;
* ``events/``: Spark's event log of both.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cluster_jobs import AGGS, WINDOWS, spark_conf
from tests.placement import compute_placement
from tests.spark_jobs import make_spec, random_stream, run_job

from elastream.core.job import ScaleEvent
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
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
