"""Every option of a job, defined once: name, part, type, default, rule, help, flag, rerun.

:data:`OPTIONS` is the one definition the rest derives from: the CLI's ``elastream run``
parser and the flag of each name in its errors (:mod:`elastream.cli.run`), the API's defaults
and argument conversion (``elastream.windowed``), the spec's defaults and rules
(:class:`~elastream.core.spec.PipelineSpec`), what a rerun must keep (``job.json``,
:mod:`elastream.core.identity`) and the README's option table (:func:`markdown`).

A value travels in three forms: the CLI's text (``"1:4"``), the API's value (``(1, 4)``:
:attr:`Option.text` turns one into the other) and the spec's (:attr:`Option.to_spec`; e.g.
``"6h/1h"`` → :class:`~elastream.core.windows.WindowSpec`), where :attr:`Option.rule` checks
it. Errors name the API's argument; the CLI renames them to its flags (:func:`flag_of`).

>>> OPTIONS["key_groups"].flag, OPTIONS["key_groups"].default, OPTIONS["key_groups"].rerun
('--key-groups', 128, 'never')
>>> flag_of("time"), flag_of("max_slots"), flag_of("executors")
('--time-col', '--scale-at', '--elastic-executors')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.kafka_topic import KafkaTopic, is_kafka, kafka_topic
from elastream.core.keygroups import validate_key_groups

PARTS = {
    "input": "Input",
    "windows": "Windows and aggregates",
    "chain": "Chained operators",
    "routing": "Routing and planner",
    "scaling": "Scaling",
    "run": "Where a job reads and writes",
    "spark": "Spark",
}
"""The parts of a job, in the order the CLI's help and the README list them."""
RERUN = {
    "never": "must stay",
    "free": "may change",
    "within": "may change, within the state partitions",
    "job": "names the job",
}
"""What a rerun on the same output or ``state_dir`` may do with an option: ``never`` change
it (it made the job's state: :mod:`elastream.core.identity`), change it ``free``-ly or
``within`` the job's state partitions; the ``job`` option names which job a run is."""

FORMATS = ("parquet", "csv", "json")
STARTING_OFFSETS = ("earliest", "latest")
SINKS = ("parquet", "delta", "kafka")
MODES = ("replay", "watch")
SCALE_MODES = ("live", "stop")
"""``live``: progressive migration while the query runs; ``stop``: stop, move all, restart."""
SCALE_IN = ("integrated", "separate")
"""How a planner that takes a removal set scales in (ALBIC §5.1, Fig. 5): ``integrated``, it
gets the leaving slots as its ``remove`` and empties them while it balances; ``separate``, they
are drained first (to the slots holding the fewest key groups), then it balances the rest."""
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
class Option:
    """One option of a job.

    ``name``: the API's argument, and the name in every error. ``part``: one of :data:`PARTS`.
    ``kind``: the type of the CLI's text (``int``, ``float``, ``str``, ``path``, ``flag``).
    ``default``: the API's and the spec's (``cli_default``: the CLI's where it differs, e.g.
    the flights' columns). ``rule``: checks the spec's value (``None``: checked where it is
    parsed). ``flag``: the CLI's (``""``: none; ``named_as``: the flag that sets it, named
    in its errors). ``api``: whether ``elastream.windowed`` takes it. ``field``: the spec's
    attribute (``""``: not in the spec). ``text``: the CLI's text → the API's value;
    ``to_spec``: the API's value → the spec's. ``rerun``: one of :data:`RERUN`.
    ``setting``: the planner setting a CLI-only option gives (the API's ``planner_options``).
    """

    name: str
    part: str
    help: str
    kind: str = "str"
    default: Any = None
    cli_default: Any = "same"
    rule: Callable[[str, Any], object] | None = None
    flag: str = "auto"
    named_as: str = ""
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    repeat: bool = False
    api: bool = True
    field: str = "auto"
    text: Callable[[str, str], Any] | None = None
    to_spec: Callable[[str, Any], Any] | None = None
    rerun: str = "free"
    setting: str = ""

    def __post_init__(self) -> None:
        if self.flag == "auto":
            object.__setattr__(self, "flag", "--" + self.name.replace("_", "-"))
        if self.field == "auto":
            object.__setattr__(self, "field", self.name)
        if self.cli_default == "same":
            object.__setattr__(self, "cli_default", self.default)
        if self.choices and self.rule is None:
            object.__setattr__(self, "rule", _one_of(self.choices))
        assert self.part in PARTS and self.rerun in RERUN, self

    def check(self, value: Any) -> None:
        """Raise :class:`OptionError` (naming :attr:`name`) unless ``value`` follows the rule."""
        if self.rule is not None and value is not None:
            self.rule(self.name, value)


def _one_of(choices: tuple[str, ...]) -> Callable[[str, Any], object]:
    return lambda name, value: rules.choice(name, value, choices)


def _whole(low: int | None = 1) -> Callable[[str, Any], object]:
    return lambda name, value: rules.integer(name, value, low=low)


def _seconds(name: str, value: Any) -> object:
    return rules.number(name, value, unit="seconds")


def _sink_text(name: str, text: str) -> Any:
    """``--sink``'s text: a kind of :data:`SINKS`, or a Kafka topic's URL."""
    return kafka_topic(name, text) if is_kafka(text) else text


def _sink(name: str, value: Any) -> object:
    if not isinstance(value, KafkaTopic) and value not in SINKS:
        raise OptionError(name, f"must be one of {', '.join(SINKS)} or "
                          "kafka://HOST:PORT/TOPIC", value)
    return value


def _per_second(name: str, value: Any) -> object:
    return rules.number(name, value, above=0, unit="rows per second")


def fewest_most(name: str, text: str) -> tuple[int, int]:
    """``FEWEST:MOST`` as two integers.

    >>> fewest_most("autoscale", "1:4")
    (1, 4)
    """
    fewest, colon, most = text.partition(":")
    if not colon or not fewest.strip().isdigit() or not most.strip().isdigit():
        raise OptionError(name, "must be FEWEST:MOST, e.g. 1:4", text)
    return int(fewest), int(most)


def _columns(name: str, text: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split(",") if c.strip())


def _texts(name: str, values: Sequence[str] | str) -> list[str]:
    """A list of strings (one string is a list of one)."""
    if isinstance(values, str):
        values = [values]
    bad = [v for v in values if not isinstance(v, str)]
    if bad:
        raise OptionError(name, "must be a list of strings", bad[0])
    return list(values)


def _parsed(parse: Callable[[str], Any]) -> Callable[[str, Any], tuple[Any, ...]]:
    return lambda name, values: tuple(parse(v) for v in _texts(name, values))


def _lateness(name: str, text: str) -> int:
    from elastream.core.windows import parse_duration

    text = str(text)
    return 0 if text.strip() == "0" else parse_duration(text, option=name, allow_zero=True)


def _windows(name: str, values: Sequence[str]) -> tuple[Any, ...]:
    from elastream.core.windows import WindowSpec

    return _parsed(WindowSpec.parse)(name, values)


def _aggs(name: str, values: Sequence[str]) -> tuple[Any, ...]:
    from elastream.core.aggregates import AggSpec

    return _parsed(AggSpec.parse)(name, values)


def _then(name: str, values: Sequence[str]) -> tuple[Any, ...]:
    from elastream.core.spec import OperatorSpec

    return _parsed(OperatorSpec.parse)(name, values)


def _scale_at(name: str, values: Sequence[str | tuple[int, int]]) -> tuple[Any, ...]:
    from elastream.core.spec import ScaleEvent

    return tuple(ScaleEvent.parse(e if isinstance(e, str) else f"{e[0]}:{e[1]}")
                 for e in ([values] if isinstance(values, str) else values))


def _chain(name: str, values: Sequence[Mapping[str, Any]] | Mapping[str, Any]
           ) -> tuple[Any, ...]:
    """A chain's operators, or a graph's (``{"operators", "edges"}``: the API's ``graph``)."""
    from elastream.core.chain import ChainOperator, graph_operators

    if isinstance(values, Mapping):
        return graph_operators(values)
    return tuple(ChainOperator.parse(op) for op in values)


def _bounds(name: str, value: Any) -> object:
    return rules.bounds(name, value)


def _optional_pair(name: str, value: Any) -> tuple[int, int] | None:
    return None if value is None else (int(value[0]), int(value[1]))


def _options(*options: Option) -> dict[str, Option]:
    return {o.name: o for o in options}


OPTIONS: dict[str, Option] = _options(
    # Input
    Option("time", "input", "event-time column (CLI default: date, the flights')",
           field="time_col", flag="--time-col", metavar="C", rerun="never"),
    Option("key", "input", "key column, or several joined by commas (CLI default: origin)",
           field="key_col", flag="--key-col", metavar="C[,C...]", rerun="never"),
    Option("partition_by", "input", "the key columns that pick key groups: Enorm's partition "
           "attributes (default: the whole key)", default=(), metavar="C[,C...]",
           text=_columns, to_spec=lambda n, v: tuple(_texts(n, v)), rerun="never"),
    Option("lateness", "input", "watermark delay", default="0s", metavar="D",
           field="lateness_ms", to_spec=_lateness, rerun="never"),
    # Windows and aggregates
    Option("windows", "windows", "window LENGTH[/SLIDE], units s/m/h/d, repeatable",
           flag="--window", metavar="LENGTH[/SLIDE]", repeat=True,
           cli_default=("1h", "6h/1h", "24h/1h"), to_spec=_windows, rerun="never"),
    Option("aggs", "windows", "aggregate FUNC[:COLUMN], FUNC one of sum, count, min, max, "
           "avg; repeatable", default=("count",), cli_default=("sum:delay", "count",
                                                               "avg:delay"),
           flag="--agg", metavar="FUNC[:COLUMN]", repeat=True, to_spec=_aggs, rerun="never"),
    Option("execution", "windows", "how windows are built: split (records reduced to panes, "
           "windows assembled from them), combine (each record added to every window it falls "
           "in) or auto (chosen per period by Enorm's cost model, switched live)",
           default="split", choices=EXECUTIONS, rerun="never"),
    Option("latency_threshold", "windows", "with execution auto: combine only while its pause "
           "for moving key groups stays within this many seconds per period (default: no "
           "bound)", kind="float", metavar="SECONDS", rule=_seconds),
    # Chained operators
    Option("then", "chain", "a further keyed operator KEYS[/PARTITION] every record also goes "
           "through, repeatable (e.g. origin,destination/origin)", default=(),
           metavar="KEYS[/PARTITION]", repeat=True, to_spec=_then, rerun="never"),
    Option("chain", "chain", 'operators that each aggregate the windows of the one before: '
           '[{"id", "keys", "aggs", "window"?, "partition_by"?}] (CLI: a file '
           '{"operators": [...], "fused"?: N}); results are the last one\'s windows',
           default=(), cli_default=None, kind="path", metavar="FILE.json", to_spec=_chain,
           rerun="never"),
    Option("graph", "chain", 'an operator graph: {"operators": [{"id", "keys", "aggs", '
           '"window"?, "partition_by"?}], "edges": [{"from", "to", "rate"?}]}, "from" the '
           'source ("source") or an operator (CLI: a file, with "fused"?: N; the format plan '
           'fuse reads); results are the windows of every operator no other reads, with an '
           'operator column', default=None, kind="path", metavar="FILE.json", field="",
           rerun="never"),
    Option("fused", "chain", "the first N operators (of a graph: in its order) fused into the "
           "source's component (default: Algorithm 1's component, as far as it can run)",
           kind="int", metavar="N", rule=_whole(0), rerun="never"),
    # Routing and planner
    Option("planner", "routing", "the balancing planner, one of {planners} (default flux; "
           "with scale_at: hash, key-group ranges)", default="flux", cli_default=None,
           metavar="NAME"),
    Option("key_groups", "routing", "key groups G per operator, in [1, 32768]", kind="int",
           default=128, metavar="G", rule=lambda n, v: validate_key_groups(v, option=n),
           rerun="never"),
    Option("max_moves", "routing", "most key groups a plan may move per micro-batch",
           kind="int", default=4, metavar="M", rule=_whole(0)),
    Option("planner_options", "routing", "settings of the planner, e.g. {\"min_imbalance\": "
           "0.1}; each must be one the planner takes", default={}, flag="",
           to_spec=lambda n, v: dict(v or {})),
    Option("min_imbalance", "routing", "flux, fish: leave slots alone while max/mean load - 1 "
           "is below this (API: planner_options)", kind="float", default=0.05, api=False,
           field="", metavar="F", rule=lambda n, v: rules.number(n, v)),
    Option("serialisation", "routing", "albic, cola, potc: load a tuple crossing slots costs "
           "at each end, in tuples (API: planner_options)", kind="float", default=0.1,
           api=False, field="", metavar="S", rule=lambda n, v: rules.number(n, v)),
    Option("elastic_executors", "routing", "elasticutor: fixed key-group ranges whose slots "
           "follow their load (default one per slot; API: planner_options executors)",
           kind="int", api=False, field="", metavar="E", rule=_whole(),
           setting="executors"),
    # Scaling
    Option("slots", "scaling", "parallel slots", kind="int", default=4, metavar="N",
           rule=_whole(), rerun="within"),
    Option("max_slots", "scaling", "the most slots the job may ever have (its state "
           "partitions; default: the most of slots, scale_at's and autoscale's)", default=0,
           flag="", named_as="--scale-at", rule=_whole(0), rerun="within"),
    Option("scale_at", "scaling", "after micro-batch BATCH, scale to SLOTS slots, repeatable "
           "(any planner but elasticutor)", default=(), metavar="BATCH:SLOTS", repeat=True,
           to_spec=_scale_at, rerun="within"),
    Option("autoscale", "scaling", "the job sizes itself between FEWEST and MOST slots from "
           "its measured input rate, service rate and batch overhead against latency_target "
           "(any planner but elasticutor, which sizes its slots itself)",
           metavar="FEWEST:MOST", text=fewest_most, to_spec=_optional_pair, rule=_bounds,
           rerun="within"),
    Option("latency_target", "scaling", "the micro-batch duration to keep within, in seconds: "
           "for autoscale (default 5) and elasticutor (default 1)", kind="float",
           metavar="SECONDS", rule=lambda n, v: rules.number(n, v, above=0, unit="seconds")),
    Option("scale_in", "scaling", "milp, albic, cola, potc: empty the leaving slots while "
           "balancing (integrated, ALBIC's) or drain them first (separate)",
           default="integrated", choices=SCALE_IN),
    Option("migration", "scaling", "which key groups move when hash scales (Ding et al.)",
           default="ssm", choices=MIGRATION_PLANNERS),
    Option("tau", "scaling", "hash scaling: most load a slot may get over the mean, as a "
           "fraction", kind="float", default=0.2, metavar="T",
           rule=lambda n, v: rules.number(n, v)),
    Option("scale_mode", "scaling", "live: move key groups' state while the query runs, "
           "max_moves per micro-batch; stop (hash only, CLI only: elastream owns the "
           "queries): stop the query, move all, restart", default="live", api=False,
           choices=SCALE_MODES),
    Option("migration_kind", "scaling", "how a moving key group takes its windows along: "
           "disruptive (its state is handed over) or smooth (the old slot finishes the "
           "windows begun before the move; no state handed over)", default="disruptive",
           choices=MIGRATION_KINDS, rerun="never"),
    Option("spark_executors", "scaling", "with autoscale or elasticutor, on a cluster: hold "
           "between FEWEST and MOST Spark executors, as many as the slots need",
           metavar="FEWEST:MOST", text=fewest_most, to_spec=_optional_pair, rule=_bounds),
    Option("release_after", "scaling", "with spark_executors: release an executor once fewer "
           "were needed for this long, in seconds", kind="float", default=30.0,
           metavar="SECONDS", rule=_seconds),
    # elastream run
    Option("input", "run", "data set (file or folder; default: the flights), or a Kafka "
           "topic kafka://HOST:PORT/TOPIC read as a service", api=False, metavar="PATH",
           rerun="never"),
    Option("format", "run", "input format (default: from the file name, else parquet; a "
           "Kafka topic's values: json or csv)", default="parquet", cli_default=None,
           api=False, choices=FORMATS, rerun="never"),
    Option("mode", "run", "replay a static data set in event-time order, or watch a folder "
           "that files arrive in", default="replay", api=False, choices=MODES, rerun="never"),
    Option("rows_per_batch", "run", "replay micro-batch size in rows", kind="int",
           default=500_000, api=False, metavar="N", rule=_whole(), rerun="never"),
    Option("rate", "run", "replay: feed the chunks at this many rows/s (default: all at "
           "once)", kind="float", api=False, metavar="ROWS_PER_S", rule=_per_second),
    Option("schema", "run", "watch: the files' schema as DDL, e.g. 'ts timestamp, key "
           "string, v double' (default: the first file's, waiting for it)", api=False,
           metavar="DDL"),
    Option("starting_offsets", "run", "Kafka input: where a new job starts reading the "
           "topic (Spark's default: latest; a job that resumes goes on from its checkpoint)",
           api=False, choices=STARTING_OFFSETS),
    Option("max_batches", "run", "stop after this many micro-batches (resume by running "
           "again)", kind="int", api=False, metavar="N", rule=_whole()),
    Option("output", "run", "output folder, a local path or file:// URI", default="output",
           api=False, metavar="DIR", rerun="job"),
    Option("sink", "run", "where results and dead letter go: parquet (OUTPUT/results/, "
           "exactly once for every reader), delta (Delta tables OUTPUT/results, "
           "OUTPUT/dead_letter, exactly once) or kafka (topic INPUT_TOPIC-windows on the input's "
           "broker, or kafka://HOST:PORT/TOPIC; the dead letter to TOPIC-dead-letter: at "
           "least once, keyed per window)", default="parquet", api=False, metavar="SINK",
           text=_sink_text, rule=_sink, rerun="never"),
    Option("state_dir", "run", "the job's routing versions, hand-offs and metrics: a local "
           "path or a file://, hdfs://, s3:// or gs:// URI (the CLI's: OUTPUT)", flag="",
           field="", rerun="job"),
    Option("quiet", "run", "no progress display and no summary line (stdout: the JSON alone)",
           kind="flag", default=False, api=False, field=""),
    Option("verbose", "run", "Spark's console (JVM, log4j, Python workers) on the terminal, "
           "instead of OUTPUT/logs/spark.log", kind="flag", default=False, api=False,
           field=""),
    # Spark
    Option("master", "spark", "local[N], local[*], spark://HOST:PORT, yarn or k8s://URL "
           "(default: spark-submit's, else local[2])", api=False, field="", metavar="URL"),
    Option("conf", "spark", "a Spark setting KEY=VALUE, repeatable (e.g. spark.cores.max=2); "
           "settings the job's state layout needs are refused if they differ", api=False,
           field="", metavar="KEY=VALUE", repeat=True),
    Option("driver_memory", "spark", "the driver JVM's heap, e.g. 4g (default 2g; under "
           "spark-submit, its --driver-memory)", api=False, field="", metavar="SIZE"),
    Option("executor_memory", "spark", "each executor's heap on a cluster, e.g. 2g (default "
           "Spark's 1g)", api=False, field="", metavar="SIZE"),
)


def default(name: str) -> Any:
    """The API's and the spec's default of option ``name``."""
    return OPTIONS[name].default


def flag_of(name: str) -> str:
    """The CLI flag that sets option ``name`` (``name`` itself if none does)."""
    option = OPTIONS.get(name) or next((o for o in OPTIONS.values() if o.setting == name),
                                       None)
    if option is None:
        return name
    return option.flag or option.named_as or name


def flags_in(text: str) -> str:
    """``text`` with each option name that has an underscore written as its CLI flag.

    >>> flags_in("must not exceed key_groups (8)")
    'must not exceed --key-groups (8)'
    """
    for name in OPTIONS:
        if "_" in name:
            text = re.sub(rf"\b{name}\b", flag_of(name), text)
    return text


def spec_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's fields from options' API values (each converted, none checked yet).

    >>> spec_values({"time": "ts", "lateness": "1m", "autoscale": [1, 4]})
    {'time_col': 'ts', 'lateness_ms': 60000, 'autoscale': (1, 4)}
    """
    fields: dict[str, Any] = {}
    for name, value in values.items():
        option = OPTIONS[name]
        if not option.field:
            continue
        if option.to_spec is not None and (value is not None or option.default is not None):
            value = option.to_spec(name, value)
        fields[option.field] = value
    return fields


class Fields(Protocol):
    """Something holding options' values by their :attr:`Option.field` (a spec)."""

    def value(self, name: str) -> Any:
        """The value of field ``name``."""


def check(spec: Fields, names: Iterable[str]) -> None:
    """Check each option of ``names`` against its rule, as ``spec`` holds it."""
    for name in names:
        OPTIONS[name].check(spec.value(OPTIONS[name].field))


def of_part(part: str, *, api: bool | None = None) -> list[Option]:
    """The options of a part, in order (``api``: only those the API takes, or does not)."""
    return [o for o in OPTIONS.values() if o.part == part and (api is None or o.api == api)]


def markdown(planners: Sequence[str]) -> str:
    """The README's option table: one row per option, grouped by part."""
    rows = ["| CLI flag | API argument | default | what it is | on a rerun |",
            "|---|---|---|---|---|"]
    for part, title in PARTS.items():
        rows.append(f"| **{title}** | | | | |")
        for o in of_part(part):
            shown = o.flag + (f" {o.metavar}" if o.metavar else "") if o.flag else ""
            shown += " …" if o.repeat else ""
            choices = " (" + "\\|".join(o.choices) + ")" if o.choices else ""
            text = o.help.replace("{planners}", ", ".join(planners)).replace("|", "\\|")
            rows.append(f"| {f'`{shown}`' if shown else ''} | {f'`{o.name}`' if o.api else ''}"
                        f" | {_shown_default(o)} | {text}{choices} | {RERUN[o.rerun]} |")
    return "\n".join(rows) + "\n"


def _shown_default(option: Option) -> str:
    if option.kind == "flag" or (option.default in NO_DEFAULT and option.cli_default in NO_DEFAULT):
        return ""
    if option.cli_default != option.default and option.api and option.flag:
        return f"API {_text(option.default)}, CLI {_text(option.cli_default)}"
    return _text(option.default if option.api else option.cli_default)


NO_DEFAULT: tuple[Any, ...] = (None, (), {})
"""Defaults the README's table leaves blank."""


def _text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, tuple | list):
        return " ".join(f"`{v}`" for v in value)
    return f"`{value}`"


