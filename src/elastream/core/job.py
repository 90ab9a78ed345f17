"""A streaming job's configuration, validated at the boundary (API, CLI) before Spark starts.

:class:`PipelineSpec` is what the Python API takes (``elastream.windowed``); its errors name the
API's arguments (``windows``, ``slots``). :class:`JobSpec` adds what ``elastream run`` needs to
read files and write outputs; the CLI maps argument names to its flags (``--window``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elastream.core.aggregates import AggSpec, validate_aggs
from elastream.core.chain import ChainOperator, check_fusion, most_fused
from elastream.core.errors import OptionError
from elastream.core.keygroups import validate_key_groups
from elastream.core.windows import WindowSpec, pane_ms, unique_specs

FORMATS = ("parquet", "csv", "json")
MODES = ("replay", "watch")
SCALE_MODES = ("live", "stop")
"""``live``: progressive migration while the query runs; ``stop``: stop, move all, restart."""
SCALE_IN = ("integrated", "separate")
"""How a planner that takes a removal set scales in (ALBIC §5.1, Fig. 5): ``integrated``, it
gets the leaving slots as its ``remove`` and empties them while it balances; ``separate``, they
are drained first (to the slots holding the fewest key groups), then it balances the rest."""
KEY_SEPARATOR = ","
"""Joins the values of a several-column key in results (``origin,destination`` → ``ABQ,LAX``)."""


def format_of(path: Path) -> str:
    """Input format named by a file's suffix, else Parquet (folders, unknown suffixes).

    >>> format_of(Path("in.csv")), format_of(Path("flights")), format_of(Path("x.JSON"))
    ('csv', 'parquet', 'json')
    """
    suffix = path.suffix.lstrip(".").lower()
    return suffix if suffix in FORMATS else "parquet"


@dataclass(frozen=True)
class OperatorSpec:
    """One keyed operator of a job: the columns of its key, and those its key groups hash.

    ``partition_by`` are Enorm's partition attributes (§3): a subset of the key columns whose
    values alone pick the key group, so an operator keyed by route but partitioned by origin
    puts every route of an origin in the key group the origin has in an operator keyed by
    origin — each upstream key group then sends to one downstream key group (ALBIC's
    One-To-One), which a planner can collocate. Default: the whole key.

    >>> OperatorSpec.parse("origin,destination/origin")
    OperatorSpec(keys=('origin', 'destination'), partition_by=('origin',))
    >>> OperatorSpec.parse("origin").name
    'origin'
    """

    keys: tuple[str, ...]
    partition_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.keys or any(not k for k in self.keys) or len(set(self.keys)) < len(self.keys):
            raise OptionError("then", "must name one or more distinct key columns",
                              KEY_SEPARATOR.join(self.keys))
        if not self.partition_by:
            object.__setattr__(self, "partition_by", self.keys)
        if not set(self.partition_by) <= set(self.keys):
            raise OptionError("then", f"must partition by key columns ({self.name})",
                              KEY_SEPARATOR.join(self.partition_by))

    @classmethod
    def parse(cls, text: str) -> OperatorSpec:
        """``COL[,COL...][/COL[,COL...]]``: key columns, then optionally the partition columns."""
        keys, slash, partition = text.partition("/")
        split = [c.strip() for c in keys.split(KEY_SEPARATOR)]
        by = [c.strip() for c in partition.split(KEY_SEPARATOR)] if slash else []
        if any(not c for c in split + by):
            raise OptionError("then", "must be COL[,COL...][/COL[,COL...]]", text)
        return cls(tuple(split), tuple(by))

    @property
    def name(self) -> str:
        """The key columns joined by commas: the ``operator`` column of results."""
        return KEY_SEPARATOR.join(self.keys)


MIGRATION_KINDS = ("disruptive", "smooth")
"""How a key group that moves takes its window state along (Enorm §4.5): ``disruptive``, its
state is handed over and its windows wait for it; ``smooth``, no state is handed over: the old
slot finishes the windows that started before the move while the new one builds the next ones,
and both get the key group's partials for the longest window length."""
EXECUTIONS = ("split", "combine", "auto")
"""How a job builds its windows (Enorm §5.1): ``split``, records reduced to panes once and
windows assembled from them; ``combine``, each record added to every window it falls in;
``auto``, either, chosen live per period by the cost model (§5.1.1–5.1.2)."""
MIGRATION_PLANNERS = ("ssm", "storm", "ch", "redist")
"""Migration planners a running job can scale with (``mtm``, ``oms`` need futures it lacks)."""


@dataclass(frozen=True)
class ScaleEvent:
    """Once micro-batch ``batch`` is done, go to ``slots`` slots (``--scale-at BATCH:SLOTS``).

    >>> ScaleEvent.parse("20:6")
    ScaleEvent(batch=20, slots=6)
    """

    batch: int
    slots: int

    @classmethod
    def parse(cls, text: str) -> ScaleEvent:
        """``BATCH:SLOTS`` with a batch id ≥ 0 and ≥ 1 slots."""
        batch, colon, slots = text.partition(":")
        try:
            event: ScaleEvent | None = cls(int(batch), int(slots))
        except ValueError:
            event = None
        if not colon or event is None or event.batch < 0 or event.slots < 1:
            raise OptionError("scale_at", "must be BATCH:SLOTS (batch id >= 0, slots >= 1)",
                              text)
        return event


@dataclass(frozen=True)
class PipelineSpec:
    """A keyed, windowed, elastic pipeline: what ``elastream.windowed`` builds on a DataFrame.

    ``max_slots``: the most slots the job may ever have (it sizes the state partitions, fixed
    at the query's first start); 0 (default): the most of ``slots`` and of every ``scale_at``
    event's slots. ``planner_options``: the user's settings of ``planner`` (each one it must
    take: :func:`elastream.control.planners.job_planner`).

    ``key_col``: one column, or several joined by commas (``origin,destination``);
    ``partition_by``: the source operator's partition attributes, some of its key columns
    (default: all). ``chain``: operators that each aggregate the windows of the one before
    (:mod:`elastream.core.chain`); ``fused``: how many of them run in the source's component
    (``None``: as many as can), whose partition attributes then pick the key groups.
    ``migration_kind``: one of :data:`MIGRATION_KINDS`. ``execution``: one of
    :data:`EXECUTIONS`; with ``auto`` the control loop picks split or combine after every
    period (the longest window) by Enorm's cost model, combine only while its migration pause
    per period stays within ``latency_threshold`` seconds (``None``: no bound).
    ``autoscale``: ``(fewest, most)`` slots the job sizes itself within, from what it measures
    against ``latency_target`` seconds per micro-batch (``None``: the default, 5 s;
    :mod:`elastream.control.autoscale`); ``None``: it scales only where asked. ``scale_in``:
    one of :data:`SCALE_IN`.
    """

    time_col: str
    key_col: str
    aggs: tuple[AggSpec, ...]
    windows: tuple[WindowSpec, ...]
    slots: int = 4
    key_groups: int = 128
    planner: str = "flux"
    lateness_ms: int = 0
    max_moves: int = 4
    planner_options: dict[str, Any] = field(default_factory=dict)
    then: tuple[OperatorSpec, ...] = ()
    scale_at: tuple[ScaleEvent, ...] = ()
    migration: str = "ssm"
    tau: float = 0.2
    scale_mode: str = "live"
    max_slots: int = 0
    partition_by: tuple[str, ...] = ()
    chain: tuple[ChainOperator, ...] = ()
    fused: int | None = None
    migration_kind: str = "disruptive"
    execution: str = "split"
    latency_threshold: float | None = None
    autoscale: tuple[int, int] | None = None
    latency_target: float | None = None
    scale_in: str = "integrated"

    def __post_init__(self) -> None:
        validate_aggs(self.aggs)
        keys = self.source_keys
        if any(not k for k in keys) or len(set(keys)) < len(keys):
            raise OptionError("key", "must name one or more distinct columns, joined by commas",
                              self.key_col)
        if not set(self.partition_by) <= set(keys):
            raise OptionError("partition_by", f"must be some of the key's columns "
                              f"({self.key_col})", list(self.partition_by))
        object.__setattr__(self, "windows", unique_specs(self.windows))
        pane_ms(self.windows)
        _positive("slots", self.slots)
        validate_key_groups(self.key_groups)
        if self.slots > self.key_groups:
            raise OptionError("slots", f"must not exceed key_groups ({self.key_groups})",
                              self.slots)
        if self.lateness_ms < 0:
            raise OptionError("lateness", "must not be negative", self.lateness_ms)
        if self.max_moves < 0:
            raise OptionError("max_moves", "must not be negative", self.max_moves)
        if self.time_col in self.source_keys:
            raise OptionError("key", "must differ from the time column", self.key_col)
        if self.time_col in self.key_columns:
            raise OptionError("then", "must not key an operator by the time column",
                              self.time_col)
        self._check_scaling()
        self._check_chain()
        self._check_execution()
        names = [op.name for op in self.operators]
        if len(set(names)) < len(names):
            raise OptionError("then", "must not repeat an operator's key", names)
        for agg in self.aggs:
            if agg.column in (self.time_col, *self.key_columns):
                raise OptionError("aggs", "must aggregate a value column, not the time or key",
                                  agg.column)

    def _check_chain(self) -> None:
        if self.chain and self.then:
            raise OptionError("chain", "cannot be combined with sibling operators (then)",
                              [op.id for op in self.chain])
        source = (self.source_keys, self.partition_by or self.source_keys, self.aggs,
                  self.windows, self.chain)
        if self.fused is None:
            object.__setattr__(self, "fused", most_fused(*source))
        elif isinstance(self.fused, bool) or not isinstance(self.fused, int):
            raise OptionError("fused", "must be a whole number of chained operators",
                              self.fused)
        check_fusion(*source[:4], self.chain, self.fused or 0)

    def _check_execution(self) -> None:
        if self.execution not in EXECUTIONS:
            raise OptionError("execution", f"must be one of {', '.join(EXECUTIONS)}",
                              self.execution)
        threshold = self.latency_threshold
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(
                threshold, int | float) or not 0 <= threshold < float("inf")):
            raise OptionError("latency_threshold", "must be a number of seconds >= 0",
                              threshold)
        if threshold is not None and self.execution != "auto":
            raise OptionError("latency_threshold", "bounds the automatic choice only "
                              "(execution auto)", threshold)

    def _check_scaling(self) -> None:
        if self.migration not in MIGRATION_PLANNERS:
            raise OptionError("migration", f"must be one of {', '.join(MIGRATION_PLANNERS)}",
                              self.migration)
        if not (isinstance(self.tau, int | float) and 0 <= self.tau < float("inf")):
            raise OptionError("tau", "must be a non-negative number", self.tau)
        if self.scale_mode not in SCALE_MODES:
            raise OptionError("scale_mode", f"must be one of {', '.join(SCALE_MODES)}",
                              self.scale_mode)
        if self.autoscale is not None:
            fewest, most = self.autoscale
            if any(isinstance(v, bool) or not isinstance(v, int) for v in (fewest, most)) \
                    or not 1 <= fewest <= self.slots <= most:
                raise OptionError("autoscale", f"must be FEWEST:MOST with 1 <= FEWEST <= slots "
                                  f"({self.slots}) <= MOST", f"{fewest}:{most}")
        least = max([self.slots, *(e.slots for e in self.scale_at),
                     *(self.autoscale[1:] if self.autoscale else ())])
        if self.max_slots == 0:
            object.__setattr__(self, "max_slots", least)
        elif isinstance(self.max_slots, bool) or not isinstance(self.max_slots, int) \
                or self.max_slots < least:
            raise OptionError("max_slots", f"must be an integer of at least {least} (slots, "
                              "every scale_at event's slots and autoscale's most)",
                              self.max_slots)
        if self.max_slots > self.key_groups:
            raise OptionError("max_slots", f"must not exceed key_groups ({self.key_groups})",
                              self.max_slots)
        if self.scale_in not in SCALE_IN:
            raise OptionError("scale_in", f"must be one of {', '.join(SCALE_IN)}", self.scale_in)
        if self.migration_kind not in MIGRATION_KINDS:
            raise OptionError("migration_kind", f"must be one of {', '.join(MIGRATION_KINDS)}",
                              self.migration_kind)
        if not self.scales:
            return
        if self.max_moves == 0 and self.scale_mode == "live":
            raise OptionError("max_moves", "must be at least 1 for a job that scales live "
                              "(its key groups move at most that many a micro-batch)",
                              self.max_moves)
        if self.migration_kind != "disruptive":
            raise OptionError("migration_kind", "must be disruptive for a job that scales "
                              "(the migration planner's moves hand their state over)",
                              self.migration_kind)
        batches = [e.batch for e in self.scale_at]
        if batches != sorted(set(batches)):
            raise OptionError("scale_at", "must name increasing batch ids", batches)

    @property
    def scales(self) -> bool:
        """Whether the job may change its slot count (asked, or by itself: ``autoscale``)."""
        return bool(self.scale_at) or self.max_slots > self.slots or self.autoscale is not None

    @property
    def partitions(self) -> int:
        """P, the state partitions (:func:`partitions_for` its ``max_slots``)."""
        return partitions_for(self.max_slots)

    @property
    def operators(self) -> tuple[OperatorSpec, ...]:
        """The job's keyed operators in order: ``key_col``'s, then each of ``then``.

        Every record goes through each of them; operator ``i`` owns the key groups
        ``i·G … (i+1)·G − 1`` of the routing table. The source operator's key groups hash
        its component's partition attributes (:attr:`component_pa`).
        """
        return (OperatorSpec(self.source_keys, self.component_pa), *self.then)

    @property
    def source_keys(self) -> tuple[str, ...]:
        """The source operator's key columns (``key_col`` split at commas)."""
        return tuple(c.strip() for c in self.key_col.split(KEY_SEPARATOR))

    @property
    def component_pa(self) -> tuple[str, ...]:
        """Partition attributes of the source's component: its own, and the fused operators'."""
        pa = self.partition_by or self.source_keys
        if self.chain and self.fused:
            return check_fusion(self.source_keys, pa, self.aggs, self.windows, self.chain,
                                self.fused)
        return pa

    @property
    def key_columns(self) -> tuple[str, ...]:
        """Every column some operator is keyed by, once each, in order."""
        return tuple(dict.fromkeys(c for op in self.operators for c in op.keys))

    @property
    def operator_of_key_groups(self) -> tuple[int, ...]:
        """The operator of each key group of the routing table."""
        return tuple(kg // self.key_groups for kg in range(self.total_key_groups))

    @property
    def total_key_groups(self) -> int:
        """Key groups of the routing table: G per operator."""
        return self.key_groups * len(self.operators)

    @property
    def pane_ms(self) -> int:
        """Pane length: gcd of every window length and slide."""
        return pane_ms(self.windows)

    @property
    def fused_windows(self) -> tuple[WindowSpec, ...]:
        """The fused window operators' windows, in chain order (:mod:`elastream.core.chain`)."""
        return tuple(op.window for op in self.chain[:self.fused or 0] if op.window is not None)

    @property
    def consolidated_windows(self) -> tuple[WindowSpec, ...]:
        """Every window the consolidate stage builds: the job's and the fused operators'."""
        return unique_specs((*self.windows, *self.fused_windows))

    @property
    def consolidated_longest_ms(self) -> int:
        """The longest of :attr:`consolidated_windows`: how long a pane partial is needed."""
        return max(w.length_ms for w in self.consolidated_windows)

    @property
    def longest_ms(self) -> int:
        """Length of the longest window, the chained operators' included."""
        return max([w.length_ms for w in self.windows]
                   + [op.window.length_ms for op in self.chain if op.window is not None])


@dataclass(frozen=True, kw_only=True)
class JobSpec(PipelineSpec):
    """Everything ``elastream run`` needs: a pipeline, where it reads and where it writes.

    ``mode``: ``replay`` turns a static data set into an event-time ordered file stream of
    ``rows_per_batch`` rows per micro-batch, fed at ``rate`` rows/s (default: all at once,
    one chunk per micro-batch); ``watch`` streams the files that arrive in the ``input``
    folder, with ``schema`` (a DDL string) or the first file's. ``max_batches``: stop after
    that many micro-batches with data (a replay also stops when every chunk was processed).
    ``spark_executors``: ``(fewest, most)`` Spark executors the job holds for the slots its
    planner keeps busy (a planner that sizes them, on a cluster master:
    :mod:`elastream.runtimes.spark.executors`); ``None``: Spark's executors stay as they are.
    ``release_after``: seconds a smaller demand must last before an executor is released.
    """

    input: Path
    output: Path
    format: str = "parquet"
    mode: str = "replay"
    rows_per_batch: int = 100_000
    max_batches: int | None = None
    rate: float | None = None
    schema: str | None = None
    spark_executors: tuple[int, int] | None = None
    release_after: float = 30.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.format not in FORMATS:
            raise OptionError("format", f"must be one of {', '.join(FORMATS)}", self.format)
        if self.mode not in MODES:
            raise OptionError("mode", f"must be one of {', '.join(MODES)}", self.mode)
        _positive("rows_per_batch", self.rows_per_batch)
        if self.max_batches is not None:
            _positive("max_batches", self.max_batches)
        if self.rate is not None and not (isinstance(self.rate, int | float)
                                          and 0 < self.rate < float("inf")):
            raise OptionError("rate", "must be a positive number of rows per second", self.rate)
        if self.rate is not None and self.mode != "replay":
            raise OptionError("rate", "paces a replay only (mode replay)", self.rate)
        if self.schema is not None and self.mode != "watch":
            raise OptionError("schema", "is for a watched folder only (mode watch)", self.schema)
        if self.spark_executors is not None:
            check_spark_executors(self.spark_executors)
        if not (isinstance(self.release_after, int | float) and 0 <= self.release_after
                < float("inf")):
            raise OptionError("release_after", "must be a finite number of seconds >= 0",
                              self.release_after)


def check_spark_executors(bounds: tuple[int, int]) -> None:
    """Check ``spark_executors``: ``(fewest, most)`` Spark executors a job may hold.

    ``1 <= fewest <= most``; whether the job's planner can use them is the planner's
    (:func:`elastream.control.planners.check_planner`).

    >>> check_spark_executors((2, 1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    elastream.core.errors.OptionError: spark_executors must be FEWEST:MOST with 1 <= ...
    """
    fewest, most = bounds
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (fewest, most)) \
            or not 1 <= fewest <= most:
        raise OptionError("spark_executors", "must be FEWEST:MOST with 1 <= FEWEST <= MOST",
                          f"{fewest}:{most}")


def partitions_for(max_slots: int) -> int:
    """P, the state partitions of a job of up to ``max_slots`` slots: one per slot, at least 2.

    Spark 4.3 fails ("Can only upgrade readStore to writeStore with the same stateStoreId")
    when the aggregation and transformWithState share one task, which happens with a single
    partition; a one-slot job keeps a second, idle partition.

    >>> partitions_for(1), partitions_for(8)
    (2, 8)
    """
    return max(2, max_slots)


def _positive(option: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionError(option, "must be a positive integer", value)
