"""Enorm's compute stage on Spark: key groups, routing to pinned slots, pane partials.

Each valid record gets its key group in the JVM (``pmod(xxhash64(key), G)``), its slot from the
micro-batch's routing version (looked up in the task, :mod:`.route`), and is shuffled by its
slot's pin, so the slot's partition is the one the routing chose. There each micro-batch's
records become pane partials (one per slot, key and pane) without any Spark state: the
consolidate stage keeps them until the watermark closes their windows. Records of a key group
that moved mid-pane leave partials in two slots; the consolidate stage merges them (instant
migration, Enorm §5).

With ``top_keys`` > 0 (the ``fish`` planner) records of split hot keys go to the slot of one of
their key's buckets, picked by a hash of the whole record (so a retried batch routes every record
the same way), and each batch also observes its ``top_keys`` heaviest key hashes with their
counts (Spark's ``approx_top_k`` sketch) for the planner's hot-key counters.

A job of several keyed operators (``--then``) sends each record through every operator: the
record becomes one row per operator, keyed ``i␟key`` in operator ``i``'s key groups
``i·G … (i+1)·G − 1``, and all rows share the routing, the pane aggregation and the
consolidate stage. What operator ``i`` sends operator ``i + 1`` — one tuple per record, from the
record's key group in ``i`` to its key group in ``i + 1`` — is observed exactly per batch as
key-group traffic (ALBIC §4.3.2), from which the runtime reports the collocation factor.
Spark shuffles every row whichever slot it goes to, so collocating communicating key groups
changes what a plan is measured by here, not the local shuffle cost (a cluster of executors
would serialise only rows that cross executors).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    MapType,
    StructField,
    StructType,
)

from elastream.algorithms.windows.combine import (
    LENGTH,
    executions,
    pane_partial_count,
    window_partial_count,
    window_partials,
)
from elastream.algorithms.windows.consolidation import ConsolidationPlan
from elastream.algorithms.windows.panes import pane_partials, value_column
from elastream.core.aggregates import RECORDS, AggSpec, partial_columns
from elastream.core.spec import KEY_SEPARATOR, OperatorSpec
from elastream.runtimes.spark import route
from elastream.runtimes.spark.batch import routing_for_task
from elastream.runtimes.spark.busy import add_busy
from elastream.runtimes.spark.costs import add_costs
from elastream.runtimes.spark.keygroup_state import to_blob
from elastream.runtimes.spark.parse import KEY, KEY_JOIN, TS, VALUE_PREFIX
from elastream.stores.routing_store import RoutingStore

OP = "_el_op"
"""The operator (0, 1, …) a row of a record is keyed for."""
OPERATOR_SEPARATOR = "\u001f"
"""Between the operator index and the key in a several-operator job's internal keys."""
SALT = "elastream-bucket"
"""Mixed into the record hash that picks a split hot key's bucket."""


def _record_hash(frame: DataFrame) -> Column:
    """A hash of every atomic column of a record (the bucket of a split hot key)."""
    atomic = [f.name for f in frame.schema.fields
              if not isinstance(f.dataType, ArrayType | MapType | StructType)]
    return F.xxhash64(F.lit(SALT), *[F.col(c) for c in atomic])


def _text(columns: Sequence[str]) -> list[Column]:
    return [F.col(c).cast("string") for c in columns]


def keyed(valid: DataFrame, operators: Sequence[OperatorSpec], key_groups: int, *,
          traffic_metrics: str) -> DataFrame:
    """One row per record and operator, with ``_el_op``, its ``_el_key``, ``kh`` and ``kg``.

    One operator: the record itself, ``kh = xxhash64(key)``, ``kg = kh mod G`` (or the hash of
    its partition columns mod G, when they are not its whole key). Several: the
    key of operator ``i`` is ``i␟`` followed by its key columns joined by ``␟`` (so equal keys of
    two operators stay apart), ``kh`` its hash, and ``kg = i·G + xxhash64(partition columns)
    mod G``; the traffic between consecutive operators' key groups is observed per batch
    (``pair_i`` histograms of ``kg_i · N + kg_{i+1}``, N = every operator's key groups).
    """
    g = F.lit(key_groups)
    if len(operators) == 1:
        source = operators[0]
        with_hash = valid.withColumn(OP, F.lit(0)).withColumn("kh", F.xxhash64(F.col(KEY)))
        if source.partition_by == source.keys:
            return with_hash.withColumn("kg", F.pmod(F.col("kh"), g))
        return with_hash.withColumn("kg", F.pmod(F.xxhash64(*_text(source.partition_by)), g))
    total = key_groups * len(operators)
    kgs = [F.pmod(F.xxhash64(*_text(op.partition_by)), g) + i * key_groups
           for i, op in enumerate(operators)]
    with_kgs = valid.select("*", *[kg.alias(f"_el_kg{i}") for i, kg in enumerate(kgs)])
    # Each pair's codes take at most G·G values, so that many bins count them exactly.
    pairs = [F.histogram_numeric(F.col(f"_el_kg{i}") * total + F.col(f"_el_kg{i + 1}"),
                                 F.lit(key_groups * key_groups)).alias(f"pair_{i}")
             for i in range(len(operators) - 1)]
    observed = with_kgs.observe(traffic_metrics, *pairs)
    rows = [F.struct(F.lit(i).alias(OP),
                     F.concat_ws(OPERATOR_SEPARATOR, F.lit(str(i)), *_text(op.keys)).alias(KEY),
                     F.col(f"_el_kg{i}").alias("kg"))
            for i, op in enumerate(operators)]
    kept = [c for c in valid.columns if c != KEY]
    exploded = observed.select(*kept, F.explode(F.array(*rows)).alias("_el_row"))
    return (exploded.select(*kept, "_el_row.*")
            .withColumn("kh", F.xxhash64(F.col(KEY))))


def traffic_rows(observed: Any, operators: int, key_groups: int) -> np.ndarray:
    """Rows ``(kg_from, kg_to, tuples)`` of one batch's observed key-group traffic."""
    total = key_groups * operators
    rows = [(int(p["x"]) // total, int(p["x"]) % total, float(p["y"]))
            for i in range(operators - 1) for p in observed.get(f"pair_{i}") or []]
    return np.array(rows, dtype=float).reshape(-1, 3)


RECORD_HASH = "_el_rh"
"""A record's hash (the bucket of a split hot key), between keying and routing."""


def routed(keyed_rows: DataFrame, routing_dir: str, key_groups: int, partitions: int,
           slots: int, top_keys: int = 0, *, load_metrics: str) -> DataFrame:
    """Keyed rows with ``slot``, ``pin``, ``version``; observed loads per batch.

    Only the columns the later stages read go on: ``_el_op``, the key, event time, values,
    ``kh`` and ``kg``. Each task looks the slots up in the micro-batch's routing version
    (:func:`~elastream.runtimes.spark.route.route_batches`). ``key_groups``: every operator's.
    ``rows`` counts records (rows of operator 0); ``version`` / ``min_version`` the routing
    versions the batch's rows were routed by (one).
    """
    wanted = [c for c in keyed_rows.columns
              if c in (OP, KEY, TS, "kh", "kg") or c.startswith(VALUE_PREFIX)]
    rows = keyed_rows.select(*wanted, *([_record_hash(keyed_rows).alias(RECORD_HASH)]
                                        if top_keys > 0 else []))
    schema = StructType([f for f in rows.schema.fields if f.name != RECORD_HASH]
                        + [StructField(route.SLOT, IntegerType()),
                           StructField(route.PIN, IntegerType()),
                           StructField(route.VERSION, LongType())])
    looked_up = rows.mapInArrow(
        partial(route.route_batches, routing_dir=routing_dir, partitions=partitions,
                record_hash=RECORD_HASH if top_keys > 0 else None), schema)
    observed = [F.count_if(F.col(OP) == 0).alias("rows"), F.max("version").alias("version"),
                F.min("version").alias("min_version")]
    if top_keys > 0:
        # The hash and the key's text in one item, so the hot keys split can be named.
        observed.append(F.expr(f"approx_top_k(concat(string(kh), '{KEY_JOIN}', {KEY}), "
                               f"{int(top_keys)})").alias("top_keys"))
    # histogram_numeric merges bins only when it sees more distinct values than bins; key
    # groups take at most G values, so G bins count every key group exactly — in one
    # aggregate, ~8x cheaper than G conditional counts. Slots likewise (Spark wants ≥ 2 bins).
    return looked_up.observe(
        load_metrics,
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


def top_key_counts(observed: Any) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Key hashes, estimated counts and keys (as text) of one batch's ``approx_top_k``.

    Each item is ``HASH␟KEY`` (a several-column key's values joined by commas here).
    """
    items = [(str(i["item"]).partition(KEY_JOIN), float(i["count"]))
             for i in observed.get("top_keys") or []]
    return (np.array([int(h) for (h, _, _), _ in items], dtype=np.int64),
            np.array([c for _, c in items]),
            [k.replace(KEY_JOIN, KEY_SEPARATOR) for (_, _, k), _ in items])


def panes(routed_rows: DataFrame, aggs: Sequence[AggSpec], plan: ConsolidationPlan,
          partitions: int, routing_dir: str, busy: Any = None, longest_ms: int = 0,
          costs: Any = None, count_both: bool = False) -> DataFrame:
    """One partial per (pin, kg, key, pane) and micro-batch, built in the routed slot.

    Rows are shuffled by pin (the partition of the slot the routing chose) and reduced there
    by :func:`~elastream.algorithms.windows.panes.pane_partials` in a stateless ``mapInArrow``:
    a pane that spans micro-batches gets one partial per batch, and the consolidate stage merges
    them (it merges a pane's partials from several slots anyway). No Spark state is kept here.
    A micro-batch whose routing version runs combined (:attr:`RoutingTable.execution`) makes
    window partials instead, one per window instance (:mod:`~elastream.algorithms.windows.
    combine`); ``length`` tells them apart (the pane's length, or a negative marker).
    Each partial also gets the pin and version of the slot owning its key group's state in the
    micro-batch (``owner_pin``, ``owner_version``: :func:`~.route.with_owner`; two of them
    while its key group migrates smoothly, ``longest_ms`` the longest window). ``busy``: the
    job's accumulator of busy seconds per slot (:mod:`.busy`), or ``None``; ``costs``: its
    accumulator of stage costs (:mod:`.costs`), or ``None``; ``count_both``: count the pane
    partials and the window partials whichever the batch made (an ``auto`` job's cost model
    needs both; counting the other kind costs a pass over the records or ``W`` over the panes).
    """
    partials = partial_columns(aggs)
    values = sorted({value_column(p, VALUE_PREFIX) for p in partials if p != RECORDS})
    millis = F.unix_millis(F.col(TS))
    by_pin = routed_rows.select(
        F.col("pin").cast("int").alias("pin"), F.col("kg").cast("long").alias("kg"), KEY,
        (millis - F.pmod(millis, F.lit(plan.pane_ms))).alias("start"), *values,
    ).repartition(partitions, "pin")
    return by_pin.mapInArrow(partial(_pane_batches, plan=plan, partials=partials,
                                     routing_dir=routing_dir, partitions=partitions, busy=busy,
                                     longest_ms=longest_ms, costs=costs,
                                     count_both=count_both), PACKED)


def _pane_batches(batches: Iterator[pa.RecordBatch], *, plan: ConsolidationPlan,
                  partials: Sequence[str], routing_dir: str, partitions: int, busy: Any = None,
                  longest_ms: int = 0, costs: Any = None,
                  count_both: bool = False) -> Iterator[pa.RecordBatch]:
    """A partition's pane (or window) partials (the ``mapInArrow`` function of :func:`panes`)."""
    started = time.perf_counter()
    received = [batch for batch in batches if batch.num_rows]
    if received:
        records = pa.Table.from_batches(received)
        group = ["pin", "kg", KEY, "start"]
        combined = routing_for_task(RoutingStore(routing_dir)).execution == "combine"
        if combined:
            made = window_partials(records, plan, group, partials, prefix=VALUE_PREFIX)
            runs = executions(records.column("start").to_numpy(), plan)
        else:
            made = pane_partials(records, group, partials, prefix=VALUE_PREFIX)
            made = made.add_column(len(group), LENGTH,
                                   pa.array(np.full(made.num_rows, plan.pane_ms), pa.int64()))
            runs = records.num_rows
        yield packed(route.with_owner(made, routing_dir=routing_dir, partitions=partitions,
                                      longest_ms=longest_ms))
        spent = time.perf_counter() - started
        if costs is not None:
            # With count_both also what the other execution would have sent (the cost model's).
            if combined:
                panes_made = pane_partial_count(records, group) if count_both else 0
                windows_made = made.num_rows
            else:
                panes_made = made.num_rows
                windows_made = window_partial_count(made, plan, group) if count_both else 0
            add_costs(costs, compute_seconds=spent, executions=runs,
                      pane_partials=panes_made, window_partials=windows_made)
    if busy is not None:
        add_busy(busy, partitions, started)


BLOB = "blob"
"""A packed row's partials: Arrow IPC of ``kg``, the key, ``start``, ``length`` and partials."""
PACKED_ARROW = pa.schema([("pin", pa.int32()), (route.OWNER_PIN, pa.int32()),
                          (route.OWNER_VERSION, pa.int64()), ("partials", pa.int64()),
                          (BLOB, pa.binary())])
PACKED = from_arrow_schema(PACKED_ARROW)
"""What the compute stage sends the consolidate stage: a row per (compute pin, owner pin)."""


def packed(partials: pa.Table) -> pa.RecordBatch:
    """``partials`` (with ``pin``, ``owner_pin``, ``owner_version``) packed per pin pair.

    The consolidate stage then regroups a row per compute task and slot, not one per partial
    (PySpark hands ``transformWithStateInPandas`` its input row by row), and reads the
    partials back as columns.
    """
    pins = partials.column("pin").to_numpy()
    owners = partials.column(route.OWNER_PIN).to_numpy()
    order = np.lexsort((owners, pins))
    pins, owners = pins[order], owners[order]
    ordered = partials.take(pa.array(order))
    changes = np.flatnonzero((np.diff(pins) != 0) | (np.diff(owners) != 0)) + 1
    starts, stops = np.r_[0, changes], np.r_[changes, len(order)]
    inner = ordered.drop_columns(["pin", route.OWNER_PIN, route.OWNER_VERSION])
    return pa.RecordBatch.from_arrays([
        pa.array(pins[starts], pa.int32()), pa.array(owners[starts], pa.int32()),
        ordered.column(route.OWNER_VERSION).take(pa.array(starts)).combine_chunks(),
        pa.array(stops - starts, pa.int64()),
        pa.array([to_blob(inner.slice(a, b - a)) for a, b in zip(starts, stops, strict=True)],
                 pa.binary()),
    ], schema=PACKED_ARROW)
