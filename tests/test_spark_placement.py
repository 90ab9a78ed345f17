"""Spark agrees with elastream's Python hashing, and pins place slots on their partitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.placement import SLOTS, compute_placement

from elastream.core.keygroups import key_groups
from elastream.runtimes.spark.pins import murmur3_int, pins_for

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
    out, table = compute_placement(spark, tmp_path)
    assert len(out) > 20
    expected_slot = np.array(table.slot_of)[out["kg"].to_numpy()]
    assert (out["part"].to_numpy() == expected_slot).all()
    assert (out["pin"].to_numpy() == pins_for(SLOTS)[expected_slot]).all()
    assert len(set(out["part"])) == SLOTS
    assert set(out["executor"]) == {"driver"}  # local mode: the driver's JVM runs the tasks
