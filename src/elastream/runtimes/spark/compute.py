"""Enorm's compute stage on Spark: key groups, routing to pinned slots, pane partials.

Each valid record gets its key group in the JVM (``pmod(xxhash64(key), G)``), joins the current
routing version (a broadcast of G rows re-read every micro-batch), and is shuffled by its slot's
pin, so the slot's state partition is the one the routing chose. A builtin streaming aggregation
grouped by (pin, key group, key, pane) keeps one partial per slot, key and pane and emits it when
the watermark passes the pane's end. Records of a key group that moved mid-pane leave partials in
two slots; the consolidate stage merges them (instant migration, Enorm §5).

With ``top_keys`` > 0 (the ``fish`` planner) records of split hot keys go to the slot of one of
their key's buckets, picked by a hash of the whole record (so a retried batch routes every record
the same way), and each batch also observes its ``top_keys`` heaviest key hashes with their
counts (Spark's ``approx_top_k`` sketch) for the planner's hot-key counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType

from elastream.core.aggregates import RECORDS, AggSpec, partial_columns
from elastream.runtimes.spark.parse import KEY, TS
from elastream.runtimes.spark.routing_source import HOT_NAME, NAME, HotKeySource, RoutingSource

LOAD_METRICS = "elastream_load"
SALT = "elastream-bucket"
"""Mixed into the record hash that picks a split hot key's bucket."""


def _record_hash(frame: DataFrame) -> Column:
    """A hash of every atomic column of a record (the bucket of a split hot key)."""
    atomic = [f.name for f in frame.schema.fields
              if not isinstance(f.dataType, ArrayType | MapType | StructType)]
    return F.xxhash64(F.lit(SALT), *[F.col(c) for c in atomic])


def routed(valid: DataFrame, spark: SparkSession, routing_dir: str, key_groups: int,
           partitions: int, slots: int, top_keys: int = 0) -> DataFrame:
    """Valid records with ``kg``, ``slot``, ``pin``, ``version``; observed loads per batch."""
    spark.dataSource.register(RoutingSource)
    table = (spark.read.format(NAME).option("path", routing_dir)
             .option("partitions", str(partitions)).load())
    with_kg = (valid.withColumn("kh", F.xxhash64(F.col(KEY)))
               .withColumn("kg", F.pmod(F.col("kh"), F.lit(key_groups))))
    joined = with_kg.join(F.broadcast(table), "kg")
    observed = [F.count(F.lit(1)).alias("rows"), F.max("version").alias("version")]
    if top_keys > 0:
        spark.dataSource.register(HotKeySource)
        hot = (spark.read.format(HOT_NAME).option("path", routing_dir)
               .option("partitions", str(partitions)).load())
        bucket = (F.pmod(_record_hash(valid), F.size("hot_slots")) + 1).cast("int")
        joined = (joined.join(F.broadcast(hot), "kh", "left")
                  .withColumn("slot", F.coalesce(F.element_at("hot_slots", bucket), "slot"))
                  .withColumn("pin", F.coalesce(F.element_at("hot_pins", bucket), "pin"))
                  .drop("hot_slots", "hot_pins"))
        observed.append(F.expr(f"approx_top_k(kh, {int(top_keys)})").alias("top_keys"))
    # histogram_numeric merges bins only when it sees more distinct values than bins; key
    # groups take at most G values, so G bins count every key group exactly — in one
    # aggregate, ~8x cheaper than G conditional counts. Slots likewise (Spark wants ≥ 2 bins).
    return joined.observe(
        LOAD_METRICS,
        *observed,
        F.histogram_numeric(F.col("kg"), F.lit(key_groups)).alias("kg_load"),
        F.histogram_numeric(F.col("slot"), F.lit(max(2, slots))).alias("slot_load"),
    )


def histogram_counts(observed: Any, field: str, size: int) -> np.ndarray:
    """Row counts per value ``0 … size-1`` from one batch's exact ``histogram_numeric``."""
    loads = np.zeros(size)
    for point in observed.get(field) or []:
        loads[int(point["x"])] += float(point["y"])
    return loads


def top_key_counts(observed: Any) -> tuple[np.ndarray, np.ndarray]:
    """Key hashes and estimated counts of one batch's ``approx_top_k``."""
    items = observed.get("top_keys") or []
    return (np.array([int(i["item"]) for i in items], dtype=np.int64),
            np.array([float(i["count"]) for i in items]))


def _partial_exprs(aggs: Sequence[AggSpec]) -> list[Column]:
    exprs = []
    for name in partial_columns(aggs):
        if name == RECORDS:
            exprs.append(F.count(F.lit(1)).alias(name))
            continue
        func, column = name.split("_", 1)
        value = F.col(f"_el_v_{column}")
        expr = {"sum": F.sum, "cnt": F.count, "min": F.min, "max": F.max}[func](value)
        exprs.append(expr.alias(name))
    return exprs


def panes(routed_rows: DataFrame, aggs: Sequence[AggSpec], pane_ms: int,
          partitions: int) -> DataFrame:
    """One partial per (pin, kg, key, pane), emitted once the watermark passes the pane end."""
    by_pin = routed_rows.repartition(partitions, "pin")
    pane = F.window(TS, f"{pane_ms // 1000} seconds").alias("pane")
    return by_pin.groupBy("pin", "kg", KEY, pane).agg(*_partial_exprs(aggs))
