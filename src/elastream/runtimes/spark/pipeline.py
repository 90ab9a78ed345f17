"""Build a job's streaming DataFrames from any input DataFrame: results and dead letter.

results: parse → key groups → routing (the micro-batch's bound version) → pane partials (or
window partials, when the version runs combined) → owner slot (the same version) →
consolidate windows (:mod:`.consolidate`). dead letter: the malformed records of the same
input with their reason. Both carry observed metrics named after the job
(:class:`~elastream.runtimes.spark.progress.MetricNames`), which is how the control loop finds
and reads them, whoever starts their queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from elastream.algorithms.windows.consolidation import plan_consolidation
from elastream.core.chain import result_columns, sinks
from elastream.core.errors import SessionError
from elastream.core.spec import KEY_SEPARATOR, PipelineSpec
from elastream.runtimes.spark import chain, compute, parse, route
from elastream.runtimes.spark.busy import busy_accumulator
from elastream.runtimes.spark.consolidate import EVENT, LATE, Consolidate, output_schema
from elastream.runtimes.spark.costs import cost_accumulator
from elastream.runtimes.spark.pins import pins_for
from elastream.runtimes.spark.progress import MetricNames
from elastream.runtimes.spark.settings import job_settings
from elastream.stores.filesystem import Folder
from elastream.stores.routing_store import ROUTING_FOLDER
from elastream.workloads.replay import CORRUPT, PUNCT

ROUTING, MIGRATION, METRICS = ROUTING_FOLDER, "_migration", "metrics.jsonl"
"""Where a job keeps its routing store, its migration store and its metrics log."""


@dataclass(frozen=True)
class StatePaths:
    """What a job keeps beside its checkpoints, under one folder (``state_dir``).

    A local path or any URI of :mod:`elastream.stores.filesystem`.
    """

    root: Folder

    @property
    def routing(self) -> Folder:  # noqa: D102
        return self.root / ROUTING

    @property
    def migration(self) -> Folder:  # noqa: D102
        return self.root / MIGRATION


@dataclass(frozen=True)
class Pipeline:
    """A job's two streaming DataFrames and its accumulators.

    ``busy``: its slots' busy seconds (:mod:`.busy`); ``costs``: its stages' costs
    (:mod:`.costs`).
    """

    results: DataFrame
    dead_letter: DataFrame
    busy: Any
    costs: Any


def check_session(spark: SparkSession, spec: PipelineSpec) -> None:
    """Raise :class:`SessionError` naming every setting that differs from what the job needs."""
    wrong = [(key, value, spark.conf.get(key, None))
             for key, value in job_settings(spec.partitions).items()
             if spark.conf.get(key, None) != value]
    if wrong:
        lines = "; ".join(f"{key} must be {value!r}, got {got!r}" for key, value, got in wrong)
        fix = " ".join(f"spark.conf.set({key!r}, {value!r})" for key, value, _ in wrong)
        raise SessionError(f"the SparkSession does not suit this job: {lines}. Set them before "
                           f"starting its queries ({fix}), or call "
                           "elastream.configure(spark, job_slots) first")


def build(df: DataFrame, spec: PipelineSpec, state: StatePaths, names: MetricNames, *,
          top_keys: int = 0) -> Pipeline:
    """The results and dead-letter DataFrames of ``spec`` over the streaming ``df``."""
    spark = df.sparkSession
    partitions = spec.partitions
    parsed = parse.parse(df, spec)
    counted = parsed.observe(names.input, F.count_if(~F.col(PUNCT)).alias("rows"))
    lateness = f"{spec.source.lateness_ms // 1000} seconds"
    keyed = compute.keyed(parse.valid(counted, lateness), spec.operators, spec.routing.key_groups,
                          traffic_metrics=names.traffic)
    routed = compute.routed(keyed, str(state.routing), spec.total_key_groups, partitions,
                            spec.scaling.max_slots, top_keys, load_metrics=names.load)
    busy, costs = busy_accumulator(spark, partitions), cost_accumulator(spark)
    plan = plan_consolidation(spec.consolidated_windows)
    panes = compute.panes(routed, spec.windowing.aggs, plan, partitions, str(state.routing), busy,
                          longest_ms=spec.consolidated_longest_ms, costs=costs,
                          count_both=spec.windowing.execution == "auto")
    # The consolidate stage is grouped by the slot owning each key group under the batch's
    # owner version (its pin): few Python calls per batch, each vectorised over many keys. A
    # key group that moved hands its state over through the migration store (consolidate.py).
    owned = panes.observe(names.owner, F.min(route.OWNER_VERSION).alias("min_version"),
                          F.max(route.OWNER_VERSION).alias("version"),
                          F.sum("partials").alias("partials"))
    partials = owned.select(F.col(route.OWNER_PIN).alias("cpin"), compute.BLOB)
    every_slot = spark.createDataFrame(
        [(int(p),) for p in pins_for(partitions)], "cpin int").groupBy("cpin")
    event_time = (spec.chaining.fused or 0) < len(spec.chaining.chain)
    results = partials.groupBy("cpin").transformWithStateInPandas(
        statefulProcessor=Consolidate(
            plan, spec.windowing.aggs, partitions=partitions, routing_dir=str(state.routing),
            migration_dir=str(state.migration), busy=busy, costs=costs, event_time=event_time),
        outputStructType=output_schema(spec.windowing.aggs, event_time),
        outputMode="Append",
        timeMode="EventTime",
        initialState=every_slot,
        eventTimeColumnName=EVENT if event_time else "",
    )
    results = _windows(results, spec, names)
    if len(spec.operators) > 1:
        results = _operator_column(results, spec)
    return Pipeline(results, _dead_letter(df, parsed, names), busy, costs)


def _windows(emitted: DataFrame, spec: PipelineSpec, names: MetricNames) -> DataFrame:
    """The consolidate stage's windows with timestamp bounds; its late-row counts observed."""
    counted = emitted.observe(names.late, F.sum(LATE).alias("rows"))
    windows = chain.chained(counted.filter(F.col(LATE).isNull()), spec)
    ops = spec.chaining.chain
    outputs = result_columns(ops) if ops else [agg.output_name for agg in spec.windowing.aggs]
    several = chain.OPERATOR in windows.columns
    joined = several or len(sinks(ops)[0].keys if ops else spec.source_keys) > 1
    return windows.select(
        *([chain.OPERATOR] if several else []),
        F.replace(F.col("key"), F.lit(parse.KEY_JOIN), F.lit(KEY_SEPARATOR)).alias("key")
        if joined and len(spec.operators) == 1 else F.col("key"),
        F.timestamp_millis("window_start").alias("window_start"),
        F.timestamp_millis("window_end").alias("window_end"),
        "window_length", "window_slide", *outputs)


def dead_letter(df: DataFrame, spec: PipelineSpec, names: MetricNames) -> DataFrame:
    """The dead letter alone, over another reading of the job's input (a faster catch-up)."""
    parsed = parse.parse(df, spec)
    return _dead_letter(df, parsed, names)


def _dead_letter(df: DataFrame, parsed: DataFrame, names: MetricNames) -> DataFrame:
    raw_columns = [c for c in df.columns if c not in (CORRUPT, PUNCT)]
    raw_columns += [CORRUPT] if CORRUPT in df.columns else []
    return parse.dead_letter(parsed, raw_columns).observe(
        names.dead, F.count(F.lit(1)).alias("rows"))


def _operator_column(results: DataFrame, spec: PipelineSpec) -> DataFrame:
    """Results of a several-operator job: ``operator`` (its key columns) and the key's values.

    The internal key ``i␟v1␟v2`` becomes operator ``spec.operators[i].name`` and key
    ``v1,v2``.
    """
    parts = F.split(F.col("key"), compute.OPERATOR_SEPARATOR, 2)
    names = F.array(*[F.lit(op.name) for op in spec.operators])
    index = parts.getItem(0).cast("int")
    return results.select(
        F.element_at(names, index + 1).alias("operator"),
        F.replace(parts.getItem(1), F.lit(compute.OPERATOR_SEPARATOR),
                  F.lit(KEY_SEPARATOR)).alias("key"),
        *[c for c in results.columns if c != "key"],
    )

