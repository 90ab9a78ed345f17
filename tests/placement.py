"""Where the compute stage aggregates each pane partial: the partition (and executor) of each.

:func:`compute_placement` streams rows through the real compute stage under a random routing
and records, for every pane partial, its key group, pin, the partition that aggregated it and
the executor that ran the task: ``test_spark_placement`` on the local session,
``tests/on_cluster.py`` on the test cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from elastream.algorithms.windows.consolidation import plan_consolidation
from elastream.core.aggregates import AggSpec
from elastream.core.routing import RoutingTable
from elastream.core.spec import OperatorSpec, PipelineSpec
from elastream.core.windows import WindowSpec
from elastream.stores.routing_store import RoutingStore

SLOTS, GROUPS = 4, 16


def compute_placement(spark: Any, folder: Path) -> tuple[pd.DataFrame, RoutingTable]:
    """Every pane partial's ``pin``, ``kg``, partition ``part`` and ``executor``; the routing."""
    from pyspark.sql import functions as F

    from elastream.runtimes.spark import compute, parse
    from elastream.runtimes.spark.keygroup_state import from_blobs

    rng = np.random.default_rng(3)
    table = RoutingTable(3, tuple(int(s) for s in rng.integers(0, SLOTS, GROUPS)), SLOTS)
    store = RoutingStore(folder / "routing")
    store.publish(table)
    store.set_owner(0, table.version)  # as a job's first start records it
    start = pd.Timestamp("2001-01-01 01:00", tz="UTC")
    rows = pd.DataFrame({
        "ts": start + pd.to_timedelta(rng.integers(0, 7200, 400), unit="s"),
        "key": [f"k{i}" for i in rng.integers(0, 60, 400)],
        "_punct": False,
    })
    punct = pd.DataFrame({"ts": [start + pd.Timedelta(hours=5)],
                          "key": pd.Series([None], dtype="string"), "_punct": [True]})
    source = folder / "in"
    source.mkdir(parents=True)
    rows.to_parquet(source / "a.parquet", coerce_timestamps="us")
    punct.to_parquet(source / "b.parquet", coerce_timestamps="us")
    spark.conf.set("spark.sql.shuffle.partitions", str(SLOTS))
    # The punctuation's watermark closes the panes in the no-data batch that follows it.
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "true")
    raw = spark.readStream.schema(spark.read.parquet(str(source)).schema).parquet(str(source))
    spec = PipelineSpec.of(time_col="ts", key_col="key", aggs=(AggSpec("count"),),
                           windows=(WindowSpec(3_600_000, 3_600_000),))
    valid = parse.valid(parse.parse(raw, spec), "0 seconds")
    keyed = compute.keyed(valid, [OperatorSpec(("key",))], GROUPS, traffic_metrics="t")
    routed = compute.routed(keyed, str(folder / "routing"), GROUPS, SLOTS, SLOTS,
                            load_metrics="l")
    plan = plan_consolidation([WindowSpec(3_600_000, 3_600_000)])
    panes = compute.panes(routed, [AggSpec("count")], plan, SLOTS, str(folder / "routing"))
    def executor_id() -> str:
        """The id of the executor JVM this Python worker serves; ``driver`` in local mode.

        A Python worker is forked by the ``pyspark.daemon`` its executor JVM started: the first
        ancestor running ``CoarseGrainedExecutorBackend`` is that JVM (``--executor-id`` N).
        Nested, so that it is pickled by value: executors cannot import this test module.
        """
        from pathlib import Path

        pid = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[1]
        while pid not in ("0", "1"):
            argv = Path(f"/proc/{pid}/cmdline").read_text().split("\0")
            if "org.apache.spark.executor.CoarseGrainedExecutorBackend" in argv:
                return argv[argv.index("--executor-id") + 1]
            pid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        return "driver"

    executor = F.udf(executor_id, "string").asNondeterministic()
    placed = panes.select("pin", compute.BLOB, F.spark_partition_id().alias("part"),
                          executor().alias("executor"))
    query = (placed.writeStream.format("memory").queryName("placement").outputMode("append")
             .option("checkpointLocation", str(folder / "ck")).start())
    try:
        query.processAllAvailable()
        packed = spark.sql("SELECT * FROM placement").toPandas()
    finally:
        query.stop()
    # A packed row per compute task and owner slot: one row per partial, with its key group.
    kgs = [from_blobs([row.blob]).column("kg").to_numpy() for row in packed.itertuples()]
    out = packed.drop(columns=compute.BLOB).loc[packed.index.repeat([len(k) for k in kgs])]
    return out.assign(kg=np.concatenate(kgs) if kgs else []).reset_index(drop=True), table
