"""A streaming job's configuration, validated at the boundary (API, CLI) before Spark starts.

:class:`PipelineSpec` is what the Python API takes (``elastream.windowed``); its errors name the
API's arguments (``windows``, ``slots``). :class:`RunSpec` adds what ``elastream run`` needs to
read files and write outputs; the CLI maps argument names to its flags (``--window``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Self

from elastream.core import options
from elastream.core.aggregates import AggSpec, validate_aggs
from elastream.core.chain import (
    ChainOperator,
    check_fusion,
    linked,
    most_fused,
    ordered,
    stages,
)
from elastream.core.errors import OptionError
from elastream.core.kafka_topic import KafkaTopic
from elastream.core.options import FORMATS, default
from elastream.core.windows import WindowSpec, pane_ms, unique_specs

KEY_SEPARATOR = ","
"""Joins the values of a several-column key in results (``origin,destination`` → ``ABQ,LAX``)."""


KAFKA_FORMATS = ("json", "csv")
"""The formats of a Kafka input's values."""


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


@dataclass(frozen=True, kw_only=True)
class Source:
    """Where records come from (part ``input``): their time and key columns, their lateness."""

    part: ClassVar[str] = "input"
    time_col: str
    key_col: str
    partition_by: tuple[str, ...] = ()
    lateness_ms: int = 0


@dataclass(frozen=True, kw_only=True)
class Windowing:
    """What the source operator computes (part ``windows``): its windows and aggregates."""

    part: ClassVar[str] = "windows"
    windows: tuple[WindowSpec, ...]
    aggs: tuple[AggSpec, ...]
    execution: str = default("execution")
    latency_threshold: float | None = None


@dataclass(frozen=True, kw_only=True)
class Chaining:
    """The operators after the source (part ``chain``): siblings (``then``) or a graph.

    ``chain``: operators in a topological order, each naming its inputs (a chain's, the one
    before); ``fused``: how many of the first fuse into the source's component.
    """

    part: ClassVar[str] = "chain"
    then: tuple[OperatorSpec, ...] = ()
    chain: tuple[ChainOperator, ...] = ()
    fused: int | None = None


@dataclass(frozen=True, kw_only=True)
class Routing:
    """How key groups are routed to slots (part ``routing``): their count and the planner."""

    part: ClassVar[str] = "routing"
    planner: str = default("planner")
    key_groups: int = default("key_groups")
    max_moves: int = default("max_moves")
    planner_options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Scaling:
    """How many slots, and how the job changes their count (part ``scaling``)."""

    part: ClassVar[str] = "scaling"
    slots: int = default("slots")
    max_slots: int = default("max_slots")
    scale_at: tuple[ScaleEvent, ...] = ()
    autoscale: tuple[int, int] | None = None
    latency_target: float | None = None
    scale_in: str = default("scale_in")
    migration: str = default("migration")
    tau: float = default("tau")
    scale_mode: str = default("scale_mode")
    migration_kind: str = default("migration_kind")
    spark_executors: tuple[int, int] | None = None
    release_after: float = default("release_after")


@dataclass(frozen=True, kw_only=True)
class Files:
    """Where ``elastream run`` reads and writes (part ``run``), and how it feeds the input."""

    part: ClassVar[str] = "run"
    input: Path | KafkaTopic
    format: str = default("format")
    mode: str = default("mode")
    rows_per_batch: int = default("rows_per_batch")
    rate: float | None = None
    schema: str | None = None
    starting_offsets: str | None = None
    max_batches: int | None = None
    output: Path
    sink: str | KafkaTopic = "parquet"

    @property
    def path(self) -> Path:
        """The input's path (not a Kafka input's)."""
        assert isinstance(self.input, Path), self.input
        return self.input

    @property
    def kafka(self) -> KafkaTopic | None:
        """The input topic, when the input is Kafka's."""
        return self.input if isinstance(self.input, KafkaTopic) else None

    @property
    def sink_kind(self) -> str:
        """``parquet``, ``delta`` or ``kafka``."""
        return "kafka" if isinstance(self.sink, KafkaTopic) else self.sink



PART_CLASSES: dict[str, type[Any]] = {c.part: c for c in (Source, Windowing, Chaining, Routing,
                                                           Scaling, Files)}
"""The dataclass of each part of :data:`~elastream.core.options.PARTS` a spec holds."""
PART_OF_FIELD = {o.field: o.part for o in options.OPTIONS.values() if o.field}
"""The part each spec field belongs to, as :data:`~elastream.core.options.OPTIONS` says."""


@dataclass(frozen=True, kw_only=True)
class PipelineSpec:
    """A keyed, windowed, elastic pipeline: what ``elastream.windowed`` builds on a DataFrame.

    A small tree of parts, one per part of :data:`~elastream.core.options.PARTS`: ``source``
    (input), ``windowing``, ``chaining``, ``routing`` and ``scaling``. Each field of a part is
    an option of :data:`elastream.core.options.OPTIONS` (its part, meaning, default and rule
    are there), named as the API's argument but for ``time_col``, ``key_col`` and
    ``lateness_ms``. :meth:`of` builds a spec from flat fields, :meth:`with_` changes some,
    :meth:`value` reads one by name. :meth:`__post_init__` checks each option's rule, then the
    rules between options. ``max_slots`` 0 becomes the most of ``slots``, ``scale_at``'s and
    ``autoscale``'s; ``fused`` ``None`` as many chained operators as can fuse.
    """

    source: Source
    windowing: Windowing
    chaining: Chaining = field(default_factory=Chaining)
    routing: Routing = field(default_factory=Routing)
    scaling: Scaling = field(default_factory=Scaling)

    @classmethod
    def of(cls, **values: Any) -> Self:
        """A spec from flat fields (``time_col=..., slots=...``), grouped into its parts.

        >>> from elastream.core.aggregates import AggSpec
        >>> spec = PipelineSpec.of(time_col="ts", key_col="user", slots=2,
        ...                        aggs=(AggSpec.parse("count"),),
        ...                        windows=(WindowSpec.parse("1m"),))
        >>> spec.scaling.slots, spec.source.key_col, spec.with_(planner="hash").routing.planner
        (2, 'user', 'hash')
        """
        grouped = cls._grouped(values)
        return cls(**{name: PART_CLASSES[part](**grouped.get(part, {}))
                      for part, name in cls.parts().items()})

    def with_(self, **changes: Any) -> Self:
        """A copy with some flat fields changed, checked again as a new spec is."""
        parts = self.parts()
        return replace(self, **{parts[part]: replace(getattr(self, parts[part]), **values)
                                for part, values in self._grouped(changes).items()})

    def value(self, name: str) -> Any:
        """The flat field ``name`` (an :attr:`~elastream.core.options.Option.field`)."""
        part = self.parts().get(PART_OF_FIELD.get(name, ""))
        if part is None:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        return getattr(getattr(self, part), name)

    @classmethod
    def holds(cls, name: str) -> bool:
        """Whether the spec has the flat field ``name`` (a :class:`RunSpec` has ``input``)."""
        return PART_OF_FIELD.get(name) in cls.parts()

    def flat(self) -> dict[str, Any]:
        """Every field of every part by its flat name, parts in order."""
        return {f.name: getattr(getattr(self, name), f.name)
                for name in self.parts().values() for f in fields(getattr(self, name))}

    @classmethod
    def parts(cls) -> dict[str, str]:
        """The attribute holding each part: ``{"input": "source", ...}``."""
        return {PART_CLASSES_BY_NAME[str(f.type)].part: f.name for f in fields(cls)}

    @classmethod
    def _grouped(cls, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
        parts = cls.parts()
        grouped: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            part = PART_OF_FIELD.get(name)
            if part not in parts:
                raise TypeError(f"{cls.__name__} has no field {name!r}")
            grouped.setdefault(part, {})[name] = value
        return grouped

    def _change(self, part: str, **values: Any) -> None:
        """Normalise fields of a part while checking (``max_slots`` 0, ``fused`` None)."""
        object.__setattr__(self, part, replace(getattr(self, part), **values))

    def __post_init__(self) -> None:
        options.check(self, PIPELINE_OPTIONS)
        src, win, routing, scaling = self.source, self.windowing, self.routing, self.scaling
        validate_aggs(win.aggs)
        keys = self.source_keys
        if any(not k for k in keys) or len(set(keys)) < len(keys):
            raise OptionError("key", "must name one or more distinct columns, joined by commas",
                              src.key_col)
        if not set(src.partition_by) <= set(keys):
            raise OptionError("partition_by", f"must be some of the key's columns "
                              f"({src.key_col})", list(src.partition_by))
        self._change("windowing", windows=unique_specs(win.windows))
        pane_ms(self.windowing.windows)
        if scaling.slots > routing.key_groups:
            raise OptionError("slots", f"must not exceed key_groups ({routing.key_groups})",
                              scaling.slots)
        if src.lateness_ms < 0:
            raise OptionError("lateness", "must not be negative", src.lateness_ms)
        if src.time_col in self.source_keys:
            raise OptionError("key", "must differ from the time column", src.key_col)
        if src.time_col in self.key_columns:
            raise OptionError("then", "must not key an operator by the time column",
                              src.time_col)
        self._check_scaling()
        self._check_chain()
        if win.latency_threshold is not None and win.execution != "auto":
            raise OptionError("latency_threshold", "bounds the automatic choice only "
                              "(execution auto)", win.latency_threshold)
        names = [op.name for op in self.operators]
        if len(set(names)) < len(names):
            raise OptionError("then", "must not repeat an operator's key", names)
        for agg in win.aggs:
            if agg.column in (src.time_col, *self.key_columns):
                raise OptionError("aggs", "must aggregate a value column, not the time or key",
                                  agg.column)

    def _check_chain(self) -> None:
        chain, win = self.chaining, self.windowing
        if chain.chain and chain.then:
            raise OptionError("chain", "cannot be combined with sibling operators (then)",
                              [op.id for op in chain.chain])
        source = (self.source_keys, self.source.partition_by or self.source_keys, win.aggs,
                  win.windows)
        ops = ordered(linked(chain.chain))
        stages(self.source_keys, win.aggs, win.windows, ops)
        fused = most_fused(*source, ops) if chain.fused is None and ops else chain.fused
        self._change("chaining", chain=ops, fused=fused)
        check_fusion(*source, ops, fused or 0)

    def _check_scaling(self) -> None:
        s, routing = self.scaling, self.routing
        if s.autoscale is not None and not s.autoscale[0] <= s.slots <= s.autoscale[1]:
            raise OptionError("autoscale", f"must be FEWEST:MOST with 1 <= FEWEST <= slots "
                              f"({s.slots}) <= MOST", "{}:{}".format(*s.autoscale))
        least = max([s.slots, *(e.slots for e in s.scale_at),
                     *(s.autoscale[1:] if s.autoscale else ())])
        if s.max_slots == 0:
            self._change("scaling", max_slots=least)
            s = self.scaling
        elif s.max_slots < least:
            raise OptionError("max_slots", f"must be an integer of at least {least} (slots, "
                              "every scale_at event's slots and autoscale's most)",
                              s.max_slots)
        if s.max_slots > routing.key_groups:
            raise OptionError("max_slots", f"must not exceed key_groups ({routing.key_groups})",
                              s.max_slots)
        if not self.scales:
            return
        if routing.max_moves == 0 and s.scale_mode == "live":
            raise OptionError("max_moves", "must be at least 1 for a job that scales live "
                              "(its key groups move at most that many a micro-batch)",
                              routing.max_moves)
        if s.migration_kind != "disruptive":
            raise OptionError("migration_kind", "must be disruptive for a job that scales "
                              "(the migration planner's moves hand their state over)",
                              s.migration_kind)
        batches = [e.batch for e in s.scale_at]
        if batches != sorted(set(batches)):
            raise OptionError("scale_at", "must name increasing batch ids", batches)

    @property
    def scales(self) -> bool:
        """Whether the job may change its slot count (asked, or by itself: ``autoscale``)."""
        s = self.scaling
        return bool(s.scale_at) or s.max_slots > s.slots or s.autoscale is not None

    @property
    def partitions(self) -> int:
        """P, the state partitions (:func:`partitions_for` its ``max_slots``)."""
        return partitions_for(self.scaling.max_slots)

    @property
    def operators(self) -> tuple[OperatorSpec, ...]:
        """The job's keyed operators in order: ``key_col``'s, then each of ``then``.

        Every record goes through each of them; operator ``i`` owns the key groups
        ``i·G … (i+1)·G − 1`` of the routing table. The source operator's key groups hash
        its component's partition attributes (:attr:`component_pa`).
        """
        return (OperatorSpec(self.source_keys, self.component_pa), *self.chaining.then)

    @property
    def source_keys(self) -> tuple[str, ...]:
        """The source operator's key columns (``key_col`` split at commas)."""
        return tuple(c.strip() for c in self.source.key_col.split(KEY_SEPARATOR))

    @property
    def component_pa(self) -> tuple[str, ...]:
        """Partition attributes of the source's component: its own, and the fused operators'."""
        pa = self.source.partition_by or self.source_keys
        chain = self.chaining
        if chain.chain and chain.fused:
            return check_fusion(self.source_keys, pa, self.windowing.aggs,
                                self.windowing.windows, chain.chain, chain.fused)
        return pa

    @property
    def key_columns(self) -> tuple[str, ...]:
        """Every column some operator is keyed by, once each, in order."""
        return tuple(dict.fromkeys(c for op in self.operators for c in op.keys))

    @property
    def named_columns(self) -> list[tuple[str, str]]:
        """(option, column) for every input column the options name, each column once.

        >>> from elastream.core.aggregates import AggSpec
        >>> spec = PipelineSpec.of(time_col="ts", key_col="a,b",
        ...                        aggs=(AggSpec.parse("sum:v"),),
        ...                        windows=(WindowSpec.parse("1m"),),
        ...                        then=(OperatorSpec.parse("b,c"),))
        >>> spec.named_columns
        [('time', 'ts'), ('key', 'a'), ('key', 'b'), ('then', 'c'), ('aggs', 'v')]
        """
        named = [("time", self.source.time_col), *(("key", c) for c in self.source_keys),
                 *(("then", c) for c in self.key_columns[len(self.source_keys):]),
                 *(("aggs", a.column) for a in self.windowing.aggs if a.column is not None)]
        return list({column: (option, column) for option, column in reversed(named)}
                    .values())[::-1]

    @property
    def operator_of_key_groups(self) -> tuple[int, ...]:
        """The operator of each key group of the routing table."""
        return tuple(kg // self.routing.key_groups for kg in range(self.total_key_groups))

    @property
    def total_key_groups(self) -> int:
        """Key groups of the routing table: G per operator."""
        return self.routing.key_groups * len(self.operators)

    @property
    def pane_ms(self) -> int:
        """Pane length: gcd of every window length and slide."""
        return pane_ms(self.windowing.windows)

    @property
    def fused_windows(self) -> tuple[WindowSpec, ...]:
        """The fused window operators' windows, in chain order (:mod:`elastream.core.chain`)."""
        chain = self.chaining
        return tuple(op.window for op in chain.chain[:chain.fused or 0] if op.window is not None)

    @property
    def consolidated_windows(self) -> tuple[WindowSpec, ...]:
        """Every window the consolidate stage builds: the job's and the fused operators'."""
        return unique_specs((*self.windowing.windows, *self.fused_windows))

    @property
    def consolidated_longest_ms(self) -> int:
        """The longest of :attr:`consolidated_windows`: how long a pane partial is needed."""
        return max(w.length_ms for w in self.consolidated_windows)

    @property
    def longest_ms(self) -> int:
        """Length of the longest window, the chained operators' included."""
        return max([w.length_ms for w in self.windowing.windows]
                   + [op.window.length_ms for op in self.chaining.chain
                      if op.window is not None])


@dataclass(frozen=True, kw_only=True)
class RunSpec(PipelineSpec):
    """Everything ``elastream run`` needs: a pipeline, where it reads and where it writes.

    Its part ``files``: ``mode`` ``replay`` turns a static data set into an event-time ordered
    file stream of ``rows_per_batch`` rows per micro-batch, fed at ``rate`` rows/s (default:
    all at once, one chunk per micro-batch); ``watch`` streams the files that arrive in the
    ``input`` folder, with ``schema`` (a DDL string) or the first file's. ``max_batches``: stop
    after that many micro-batches with data (a replay also stops when every chunk was
    processed).
    """

    files: Files

    def __post_init__(self) -> None:
        super().__post_init__()
        options.check(self, ("format", "mode", "rows_per_batch", "max_batches", "rate",
                             "starting_offsets", "sink"))
        files = self.files
        if files.rate is not None and files.mode != "replay":
            raise OptionError("rate", "paces a replay only (mode replay)", files.rate)
        if files.kafka is not None:
            _check_kafka_input(files)
        elif files.schema is not None and files.mode != "watch":
            raise OptionError("schema", "is for a watched folder or a Kafka input only",
                              files.schema)
        elif files.starting_offsets is not None:
            raise OptionError("starting_offsets", "is for a Kafka input only",
                              files.starting_offsets)


def _check_kafka_input(files: Files) -> None:
    """A Kafka input is a stream of JSON or CSV values of the ``schema`` DDL."""
    if files.mode != "replay":
        raise OptionError("mode", "is for files: a Kafka input is read as it arrives",
                          files.mode)
    if files.rate is not None:
        raise OptionError("rate", "paces a replay of files (produce a topic at a rate with "
                          "elastream kafka produce --rate)", files.rate)
    if files.format not in KAFKA_FORMATS:
        raise OptionError("format", f"must be one of {', '.join(KAFKA_FORMATS)} for a "
                          "Kafka input (the values' format)", files.format)
    if files.schema is None:
        raise OptionError("schema", "is required with a Kafka input: the values' columns as "
                          "DDL, e.g. 'date timestamp, origin string, delay double'", "missing")


def partitions_for(max_slots: int) -> int:
    """P, the state partitions of a job of up to ``max_slots`` slots: one per slot, at least 2.

    Spark 4.3 fails ("Can only upgrade readStore to writeStore with the same stateStoreId")
    when the aggregation and transformWithState share one task, which happens with a single
    partition; a one-slot job keeps a second, idle partition.

    >>> partitions_for(1), partitions_for(8)
    (2, 8)
    """
    return max(2, max_slots)


PART_CLASSES_BY_NAME = {c.__name__: c for c in PART_CLASSES.values()}
"""Each part's dataclass by its name: the type a spec's field names (annotations are text)."""
PIPELINE_OPTIONS = tuple(o.name for o in options.OPTIONS.values()
                         if o.field and o.part in PipelineSpec.parts())
"""The options a :class:`PipelineSpec` holds."""
