"""Spark agrees with elastream's Python hashing, and pins place slots on their partitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from elastream.core.aggregates import AggSpec
from elastream.core.job import OperatorSpec
from elastream.core.keygroups import key_groups
from elastream.core.pins import murmur3_int, pins_for
from elastream.core.routing import RoutingStore, RoutingTable

pytestmark = pytest.mark.spark


def test_python_key_groups_and_hashes_equal_spark(spark: Any) -> None:
    from pyspark.sql import functions as F

    rng = np.random.default_rng(7)
    keys = [*(f"key-{i}-{'é' * (i % 3)}" for i in rng.integers(0, 10**6, 500)), "", "ORD"]
    ints = [*rng.integers(-2 ** 31, 2 ** 31 - 1, 500).tolist(), 0, 1, -1]
    frame = spark.createDataFrame([(k,) for k in keys], "key string")
    got = frame.select(F.pmod(F.xxhash64("key"), F.lit(97)).alias("kg")).toPandas()["kg"]
    assert got.tolist() == key_groups(keys, 97).tolist()
    ints_frame = spark.createDataFrame([(v,) for v in ints], "v int")
    hashed = ints_frame.select(F.hash("v").alias("h")).toPandas()["h"]
    assert hashed.tolist() == murmur3_int(np.array(ints)).tolist()


@pytest.mark.parametrize("partitions", [2, 5])
def test_pins_land_in_their_partition_after_a_hash_shuffle(spark: Any, partitions: int) -> None:
    from pyspark.sql import functions as F

    pins = pins_for(partitions)
    frame = spark.createDataFrame([(int(p), s) for s, p in enumerate(pins) for _ in range(3)],
                                  "pin int, slot int")
    placed = frame.repartition(partitions, "pin").select(
        "slot", F.spark_partition_id().alias("part")).toPandas()
    assert (placed["slot"] == placed["part"]).all()


def test_compute_stage_state_lives_in_the_routed_slot(spark: Any, tmp_path: Path) -> None:
    """Each pane partial is aggregated in the partition of its key group's routed slot."""
    from pyspark.sql import functions as F

    from elastream.runtimes.spark import compute, parse

    slots, groups = 4, 16
    rng = np.random.default_rng(3)
    table = RoutingTable(3, tuple(int(s) for s in rng.integers(0, slots, groups)), slots)
    store = RoutingStore(tmp_path / "routing")
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
    folder = tmp_path / "in"
    folder.mkdir()
    rows.to_parquet(folder / "a.parquet", coerce_timestamps="us")
    punct.to_parquet(folder / "b.parquet", coerce_timestamps="us")
    spark.conf.set("spark.sql.shuffle.partitions", str(slots))
    # The punctuation's watermark closes the panes in the no-data batch that follows it.
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "true")
    raw = spark.readStream.schema(spark.read.parquet(str(folder)).schema).parquet(str(folder))
    valid = parse.valid(parse.parse(raw, "ts", "key", []), "0 seconds")
    keyed = compute.keyed(valid, [OperatorSpec(("key",))], groups, traffic_metrics="t")
    routed = compute.routed(keyed, str(tmp_path / "routing"), groups, slots, slots,
                            load_metrics="l")
    panes = compute.panes(routed, [AggSpec("count")], 3_600_000, slots, str(tmp_path / "routing"))
    placed = panes.select("pin", "kg", F.spark_partition_id().alias("part"))
    query = (placed.writeStream.format("memory").queryName("placement").outputMode("append")
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        query.processAllAvailable()
        out = spark.sql("SELECT * FROM placement").toPandas()
    finally:
        query.stop()
    assert len(out) > 20
    expected_slot = np.array(table.slot_of)[out["kg"].to_numpy()]
    assert (out["part"].to_numpy() == expected_slot).all()
    assert (out["pin"].to_numpy() == pins_for(slots)[expected_slot]).all()
    assert len(set(out["part"])) == slots
