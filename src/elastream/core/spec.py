"""A streaming job's configuration, validated at the boundary (API, CLI) before Spark starts.

:class:`PipelineSpec` is what the Python API takes (``elastream.windowed``); its errors name the
API's arguments (``windows``, ``slots``). :class:`RunSpec` adds what ``elastream run`` needs to
read files and write outputs; the CLI maps argument names to its flags (``--window``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elastream.core import options
from elastream.core.aggregates import AggSpec, validate_aggs
from elastream.core.chain import ChainOperator, check_fusion, most_fused
from elastream.core.errors import OptionError
from elastream.core.options import FORMATS, default
from elastream.core.windows import WindowSpec, pane_ms, unique_specs

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

    Each field is an option of :data:`elastream.core.options.OPTIONS` (its meaning, default
    and rule are there), named as the API's argument but for ``time_col``, ``key_col`` and
    ``lateness_ms``; :meth:`__post_init__` checks each option's rule, then the rules between
    options. ``max_slots`` 0 becomes the most of ``slots``, ``scale_at``'s and ``autoscale``'s;
    ``fused`` ``None`` as many chained operators as can fuse.
    """

    time_col: str
    key_col: str
    aggs: tuple[AggSpec, ...]
    windows: tuple[WindowSpec, ...]
    slots: int = default("slots")
    key_groups: int = default("key_groups")
    planner: str = default("planner")
    lateness_ms: int = 0
    max_moves: int = default("max_moves")
    planner_options: dict[str, Any] = field(default_factory=dict)
    then: tuple[OperatorSpec, ...] = ()
    scale_at: tuple[ScaleEvent, ...] = ()
    migration: str = default("migration")
    tau: float = default("tau")
    scale_mode: str = default("scale_mode")
    max_slots: int = default("max_slots")
    partition_by: tuple[str, ...] = ()
    chain: tuple[ChainOperator, ...] = ()
    fused: int | None = None
    migration_kind: str = default("migration_kind")
    execution: str = default("execution")
    latency_threshold: float | None = None
    autoscale: tuple[int, int] | None = None
    latency_target: float | None = None
    scale_in: str = default("scale_in")
    spark_executors: tuple[int, int] | None = None
    release_after: float = default("release_after")

    def __post_init__(self) -> None:
        options.check(self, PIPELINE_OPTIONS)
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
        if self.slots > self.key_groups:
            raise OptionError("slots", f"must not exceed key_groups ({self.key_groups})",
                              self.slots)
        if self.lateness_ms < 0:
            raise OptionError("lateness", "must not be negative", self.lateness_ms)
        if self.time_col in self.source_keys:
            raise OptionError("key", "must differ from the time column", self.key_col)
        if self.time_col in self.key_columns:
            raise OptionError("then", "must not key an operator by the time column",
                              self.time_col)
        self._check_scaling()
        self._check_chain()
        if self.latency_threshold is not None and self.execution != "auto":
            raise OptionError("latency_threshold", "bounds the automatic choice only "
                              "(execution auto)", self.latency_threshold)
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
        check_fusion(*source[:4], self.chain, self.fused or 0)

    def _check_scaling(self) -> None:
        if self.autoscale is not None and not self.autoscale[0] <= self.slots \
                <= self.autoscale[1]:
            raise OptionError("autoscale", f"must be FEWEST:MOST with 1 <= FEWEST <= slots "
                              f"({self.slots}) <= MOST", "{}:{}".format(*self.autoscale))
        least = max([self.slots, *(e.slots for e in self.scale_at),
                     *(self.autoscale[1:] if self.autoscale else ())])
        if self.max_slots == 0:
            object.__setattr__(self, "max_slots", least)
        elif self.max_slots < least:
            raise OptionError("max_slots", f"must be an integer of at least {least} (slots, "
                              "every scale_at event's slots and autoscale's most)",
                              self.max_slots)
        if self.max_slots > self.key_groups:
            raise OptionError("max_slots", f"must not exceed key_groups ({self.key_groups})",
                              self.max_slots)
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
    def named_columns(self) -> list[tuple[str, str]]:
        """(option, column) for every input column the options name, each column once.

        >>> from elastream.core.aggregates import AggSpec
        >>> spec = PipelineSpec(time_col="ts", key_col="a,b", aggs=(AggSpec.parse("sum:v"),),
        ...                     windows=(WindowSpec.parse("1m"),),
        ...                     then=(OperatorSpec.parse("b,c"),))
        >>> spec.named_columns
        [('time', 'ts'), ('key', 'a'), ('key', 'b'), ('then', 'c'), ('aggs', 'v')]
        """
        named = [("time", self.time_col), *(("key", c) for c in self.source_keys),
                 *(("then", c) for c in self.key_columns[len(self.source_keys):]),
                 *(("aggs", a.column) for a in self.aggs if a.column is not None)]
        return list({column: (option, column) for option, column in reversed(named)}
                    .values())[::-1]

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
class RunSpec(PipelineSpec):
    """Everything ``elastream run`` needs: a pipeline, where it reads and where it writes.

    ``mode``: ``replay`` turns a static data set into an event-time ordered file stream of
    ``rows_per_batch`` rows per micro-batch, fed at ``rate`` rows/s (default: all at once,
    one chunk per micro-batch); ``watch`` streams the files that arrive in the ``input``
    folder, with ``schema`` (a DDL string) or the first file's. ``max_batches``: stop after
    that many micro-batches with data (a replay also stops when every chunk was processed).
    """

    input: Path
    output: Path
    format: str = default("format")
    mode: str = default("mode")
    rows_per_batch: int = default("rows_per_batch")
    max_batches: int | None = None
    rate: float | None = None
    schema: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        options.check(self, ("format", "mode", "rows_per_batch", "max_batches", "rate"))
        if self.rate is not None and self.mode != "replay":
            raise OptionError("rate", "paces a replay only (mode replay)", self.rate)
        if self.schema is not None and self.mode != "watch":
            raise OptionError("schema", "is for a watched folder only (mode watch)", self.schema)


def partitions_for(max_slots: int) -> int:
    """P, the state partitions of a job of up to ``max_slots`` slots: one per slot, at least 2.

    Spark 4.3 fails ("Can only upgrade readStore to writeStore with the same stateStoreId")
    when the aggregation and transformWithState share one task, which happens with a single
    partition; a one-slot job keeps a second, idle partition.

    >>> partitions_for(1), partitions_for(8)
    (2, 8)
    """
    return max(2, max_slots)


PIPELINE_OPTIONS = tuple(o.name for o in options.OPTIONS.values()
                         if o.field in PipelineSpec.__dataclass_fields__)
"""The options a :class:`PipelineSpec` holds."""
