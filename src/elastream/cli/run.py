"""``elastream run``: stream a data set through a windowed job on Spark (``local[2]`` by default).

With no options it fetches (if needed) and replays the real US flight stream: key ``origin``,
aggregates ``sum:delay``, ``count`` and ``avg:delay`` over windows ``1h``, ``6h/1h`` and
``24h/1h``, planner ``flux``. Running the same command again with the same ``--output``
resumes from the checkpoints.

``--then KEYS[/PARTITION]`` (repeatable) adds a keyed operator after the first: every record
also goes through it, keyed by ``KEYS`` (comma-separated columns) and placed by the key groups
of ``PARTITION`` (default: the key). ``--then origin,destination`` gives the flights' delay per
origin and then per route; ``--then origin,destination/origin`` keeps each origin's routes in
the key group its origin has, so planners can collocate them (ALBIC's One-To-One). Results then
carry an ``operator`` column, and each batch's metrics the key-group traffic between the
operators and its collocation factor, which the ``albic`` and ``cola`` planners optimise.

``--key-col origin,destination`` keys the job by several columns; ``--partition-by origin``
picks its key groups by some of them (Enorm's partition attributes). ``--chain FILE.json``
chains operators after it, each aggregating the windows of the one before (per route, then the
largest route per origin; or windows of 1, 5, 10, 20 min, each of the one before)::

    {"operators": [{"id": "worst_route", "keys": ["origin"], "aggs": ["max:sum_delay"]}]}

``window`` (a tumbling length, a multiple of the upstream's) and ``partition_by`` are optional.
The first operators whose partition attributes intersect the source's fuse into its component
(``--fused N`` to choose how many): one shuffle for all of them; the others run as Spark window
aggregations with a shuffle each. Results are the last operator's windows.

``--graph FILE.json`` gives operators and the edges between them instead (fan-out, fan-in;
``source`` is the job's own operator; the file ``plan fuse`` reads)::

    {"operators": [...], "edges": [{"from": "source", "to": "worst_route", "rate": 1}]}

Results are then the windows of every operator no other reads (with an ``operator`` column
when there are several); Algorithm 1's component of the source fuses as far as it can run, and
the other operators run in one stateful stage per depth after it.

``--scale-at BATCH:SLOTS`` (repeatable) scales the job once micro-batch BATCH is done, with any
planner but elasticutor (which sizes its slots itself). With ``hash`` (the default with
``--scale-at``) slots keep consecutive key-group ranges: the ``--migration`` planner (Ding et
al.: ssm, or the baselines storm, ch, redist) chooses which key groups change slot under the load
bound ``--tau``. With a balancing planner a scale-out adds empty slots that it fills, and a
scale-in marks the least-loaded slots as leaving: milp and albic empty them while they balance
(ALBIC's integrated scale-in), cola and potc place nothing on them, flux and fish get them
drained first. Either way the job moves ``--max-moves`` key groups per micro-batch while it
keeps running; a moved key group's windows wait until its state has arrived, no other key group
pauses (``--scale-mode stop``, with hash, instead stops, moves everything and restarts).

``--mode watch`` runs like a service on a folder that files keep arriving in, until Ctrl-C or
SIGTERM (or ``--max-batches``): it starts before the first file arrives (taking the schema from
it, or from ``--schema``), and balances, splits hot keys and scales while the files stream in.

``--master spark://HOST:PORT`` runs the job on a cluster, with ``--conf KEY=VALUE``,
``--driver-memory`` and ``--executor-memory`` passed to Spark; launched by ``spark-submit
…/elastream/__main__.py run …`` it takes spark-submit's master and settings. Settings the
state layout needs are set, and refused if given otherwise. The output folder is read and
written by every executor: on a cluster of several machines it must be a shared mount.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from elastream.cli.json_input import read_json
from elastream.cli.json_output import JsonAnswer
from elastream.cli.run_checks import check_files
from elastream.cli.run_console import job_failure, spark_console_logged
from elastream.cli.run_progress import RunProgress, outcome
from elastream.control.fusion import planned
from elastream.control.scale_events import unfinished
from elastream.core.errors import OptionError
from elastream.core.kafka_topic import KafkaTopic, is_kafka, kafka_topic
from elastream.core.options import OPTIONS, fewest_most, flag_of, flags_in, spec_values
from elastream.core.spec import RunSpec, format_of
from elastream.stores.filesystem import local_path
from elastream.stores.metrics_file import read_metrics

GROUPS = {"spark": "Spark (under spark-submit, its own options apply too)"}
"""Parts of the options shown as a group of their own in ``--help``."""


def _number(flag: str, kind: type) -> Any:
    def convert(text: str) -> Any:
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} must be {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None
    return convert


def register(commands: Any) -> None:
    """Add the ``run`` sub-command: a flag per option of :data:`OPTIONS` that has one."""
    p = commands.add_parser("run", help="run a windowed streaming job on Spark (local, or "
                            "a cluster's with --master)",
                            description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    from elastream.control.planners import PLANNERS

    groups = {part: p.add_argument_group(title) for part, title in GROUPS.items()}
    for option in OPTIONS.values():
        if not option.flag:
            continue
        kind: dict[str, Any] = {"int": {"type": _number(option.flag, int)},
                                "float": {"type": _number(option.flag, float)},
                                "path": {"type": Path}, "str": {}, "flag": {}}[option.kind]
        shown = option.cli_default if option.cli_default not in (None, (), False) else None
        text = flags_in(option.help.replace("{planners}", ", ".join(PLANNERS)))
        if shown is not None:
            text += f" (default {' '.join(map(str, shown)) if option.repeat else shown})"
        group = groups.get(option.part, p)
        if option.kind == "flag":
            group.add_argument(option.flag, dest=option.name, action="store_true", help=text)
            continue
        group.add_argument(option.flag, dest=option.name, metavar=option.metavar,
                           action="append" if option.repeat else "store",
                           choices=option.choices or None,
                           default=None if option.repeat else option.cli_default,
                           help=text, **kind)
    p.set_defaults(handler=run_command, json=True)  # stdout: the JSON summary alone


def job_from_args(args: argparse.Namespace) -> RunSpec:
    """Validate every option into a :class:`RunSpec`; only then are the flights fetched.

    The library's errors name its arguments; they become the flags' names here.
    """
    from elastream.control.planners import job_planner
    from elastream.workloads.flights import fetch_flights, flights_path

    try:
        source = None if args.input is None else (
            kafka_topic("input", args.input) if is_kafka(args.input) else Path(args.input))
        spec = _spec(args, source or Path("."))
        job_planner(spec, shared=planner_settings(args))  # the planner's name and settings
    except OptionError as error:
        raise as_flags(error) from None
    try:
        spec = check_files(spec, given_input=source, flights=flights_path())
    except OptionError as error:
        raise as_flags(error) from None
    if source is None:
        return spec.with_(input=fetch_flights(quiet=args.quiet))
    return spec


def planner_settings(args: argparse.Namespace) -> dict[str, float]:
    """The planner settings among the options, each checked by its rule whatever the planner.

    They are offered to every planner (shared settings): each planner takes those it has.
    """
    settings = {"min_imbalance": args.min_imbalance, "serialisation": args.serialisation}
    for name, value in settings.items():
        OPTIONS[name].check(value)
    return settings


def as_flags(error: OptionError) -> OptionError:
    """The same error with API argument names turned into flags (``key_groups`` → ``--key-groups``).

    >>> str(as_flags(OptionError("slots", "must not exceed key_groups (8)", 9)))
    '--slots must not exceed --key-groups (8), got 9'
    """
    return OptionError(flag_of(error.option), flags_in(error.rule), error.value)


MASTER = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?|spark://\S+|yarn|k8s://\S+")
MEMORY = re.compile(r"\d+[kmgtp]?b?", re.IGNORECASE)
SHORTHANDS = {"spark.master": "--master", "spark.driver.memory": "--driver-memory",
              "spark.executor.memory": "--executor-memory"}


def spark_conf(args: argparse.Namespace) -> dict[str, str]:
    """The Spark settings of ``--master``, ``--conf``, ``--driver-memory``, ``--executor-memory``.

    >>> args = argparse.Namespace(master="spark://h:7077", conf=["spark.cores.max=2"],
    ...                           driver_memory=None, executor_memory="2g")
    >>> spark_conf(args)
    {'spark.cores.max': '2', 'spark.master': 'spark://h:7077', 'spark.executor.memory': '2g'}
    """
    conf: dict[str, str] = {}
    for text in args.conf or ():
        key, equals, value = text.partition("=")
        if not equals or not key.startswith("spark.") or not value or " " in key:
            raise OptionError("--conf", "must look like KEY=VALUE with KEY starting with "
                              "spark., e.g. spark.cores.max=2", text)
        if key in SHORTHANDS:
            raise OptionError("--conf", f"must not set {key}: use {SHORTHANDS[key]}", text)
        if key == "spark.sql.shuffle.partitions":
            raise OptionError("--conf", "must not set spark.sql.shuffle.partitions: the job "
                              "sets it, one per slot (--slots, --scale-at)", text)
        conf[key] = value
    if args.master is not None:
        if not MASTER.fullmatch(args.master):
            raise OptionError("--master", "must be local, local[N], local[*], "
                              "spark://HOST:PORT, yarn or k8s://URL", args.master)
        conf["spark.master"] = args.master
    for option, key, value in (("--driver-memory", "spark.driver.memory", args.driver_memory),
                               ("--executor-memory", "spark.executor.memory",
                                args.executor_memory)):
        if value is not None:
            if not MEMORY.fullmatch(value):
                raise OptionError(option, "must be a size like 2g or 512m", value)
            conf[key] = value
    from elastream.runtimes.spark.settings import REQUIRED, refuse_conflicts

    refuse_conflicts(conf, {key: value for key, (value, _) in REQUIRED.items()})
    return conf


def _spec(args: argparse.Namespace, source: Path | KafkaTopic) -> RunSpec:
    """The spec of the flags' values: each converted as its option says, as the API's are."""
    if args.input is None:
        if args.format not in (None, "parquet"):
            raise OptionError("--format", "must be parquet without --input (the flights)",
                              args.format)
    elif args.time is None or args.key is None:
        raise OptionError("--time-col/--key-col", "are required with --input", "missing")
    values = {name: getattr(args, name) for name, option in OPTIONS.items()
              if option.flag and option.field}
    for name, value in values.items():
        option = OPTIONS[name]
        if option.text is not None and isinstance(value, str):
            values[name] = option.text(name, value)
        elif option.repeat and value is None:
            values[name] = option.cli_default
    if isinstance(source, KafkaTopic):
        fmt = args.format or "json"
    else:
        fmt = args.format or ("parquet" if args.input is None else format_of(source))
    values.update(
        input=source, output=local_path(args.output, option="--output"),
        time=args.time or "date", key=args.key or "origin", format=fmt,
        sink=_sink(values["sink"], source),
        planner=args.planner or ("hash" if args.scale_at else "flux"),
        planner_options={} if args.elastic_executors is None else {
            "executors": args.elastic_executors},
        **_chain(args))
    spec = RunSpec.of(**spec_values(values))
    return planned(spec) if values["fused"] is None else spec


def _sink(sink: str | KafkaTopic, source: Path | KafkaTopic) -> str | KafkaTopic:
    """``--sink kafka``: topic ``INPUT_TOPIC-windows`` on the input's broker."""
    if sink != "kafka":
        return sink
    if not isinstance(source, KafkaTopic):
        raise OptionError("sink", "kafka needs a Kafka input (whose broker it writes to), or "
                          "give kafka://HOST:PORT/TOPIC", sink)
    return KafkaTopic(source.bootstrap, f"{source.topic}-windows")


def _chain(args: argparse.Namespace) -> dict[str, Any]:
    """``--chain FILE.json`` or ``--graph FILE.json``, and ``--fused N``: what fuses."""
    if args.chain is not None and args.graph is not None:
        raise OptionError("--graph", "cannot be combined with --chain", str(args.graph))
    if args.chain is None and args.graph is None:
        if args.fused is not None:
            raise OptionError("--fused", "needs --chain or --graph", args.fused)
        return {"chain": ()}
    flag, path = ("--chain", args.chain) if args.graph is None else ("--graph", args.graph)
    shape = {"--chain": ({"operators"}, '{"operators": [...], "fused": N (optional)}'),
             "--graph": ({"operators", "edges"},
                         '{"operators": [...], "edges": [...], "fused": N (optional)}')}[flag]
    data = read_json(path, flag)
    if not isinstance(data, dict) or not isinstance(data.get("operators"), list) \
            or not shape[0] <= set(data) <= shape[0] | {"fused"}:
        raise OptionError(flag, f"must hold {shape[1]}", str(path))
    operators = data["operators"] if flag == "--chain" else {
        k: data[k] for k in ("operators", "edges")}
    return {"chain": operators,
            "fused": args.fused if args.fused is not None else data.get("fused")}


def _check_master_holds_executors(args: argparse.Namespace, conf: dict[str, str]) -> None:
    """``--spark-executors`` needs a cluster master (under spark-submit, the pool checks)."""
    if args.spark_executors is None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    try:
        OPTIONS["spark_executors"].check(fewest_most("spark_executors", args.spark_executors))
    except OptionError as error:
        raise as_flags(error) from None
    master = conf.get("spark.master", "local[2]")
    if master.startswith("local"):
        raise OptionError("--spark-executors", "needs a cluster master (--master "
                          "spark://HOST:PORT, yarn or k8s://URL): a local master has no "
                          "executors to hold", master)


def _progress(spec: RunSpec) -> RunProgress:
    """The progress display of ``spec``'s run: a resumed job counts the rows it did before."""
    from elastream.runtimes.spark.file_run import Paths
    from elastream.workloads.replay import staged_manifest

    paths = Paths(spec.files.output)
    before = sum(int(r.get("input_rows", 0)) for r in read_metrics(paths.metrics))

    def total() -> int | None:
        manifest = staged_manifest(paths.staged)
        return None if manifest is None else manifest.rows

    return RunProgress(sys.stderr, total, before, live=spec.files.mode == "watch")


def run_command(args: argparse.Namespace) -> JsonAnswer:
    """Handler of ``elastream run``: Spark's console goes to ``OUTPUT/logs/spark.log``.

    A failure inside Spark ends the command with one line naming its root cause and
    ``OUTPUT/logs/error.log`` (exit status 1), not a traceback.
    """
    conf = spark_conf(args)
    _check_master_holds_executors(args, conf)
    spec = job_from_args(args)
    if spec.files.kafka is not None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        from elastream.kafka.jars import spark_kafka_jars  # (spark-submit: its --jars)

        given = [conf["spark.jars"]] if "spark.jars" in conf else []
        conf["spark.jars"] = ",".join(given + spark_kafka_jars())
    from elastream.runtimes.spark.file_run import FileRun
    from elastream.runtimes.spark.session import get_spark
    from elastream.runtimes.stop_signals import stop_on_signal

    with spark_console_logged(spec.files.output, to_terminal=args.verbose), \
            stop_on_signal() as interrupted:
        if not args.quiet:
            keys = " then ".join(op.name for op in spec.operators)
            print(f"elastream run: {spec.files.input} → {spec.files.output} (key {keys}, "
                  f"windows {', '.join(map(str, spec.windowing.windows))}, "
                  f"{spec.scaling.slots} slots, planner {spec.routing.planner})",
                  file=sys.stderr)
        progress = None if args.quiet else _progress(spec)
        try:
            spark = get_spark(conf=conf, partitions=spec.partitions)
            interrupted.install()  # over the handler PySpark's SparkContext installed
            job = FileRun(spark, spec, on_batch=progress,
                           shared_settings=planner_settings(args))
            summary = job.run(interrupted)
        except OptionError as error:
            raise as_flags(error) from None
        except Exception as error:
            from elastream.runtimes.spark import failure

            if not failure.is_spark_failure(error):
                raise
            raise job_failure(failure.root_cause(error), failure.failure_report(error),
                              spec.files.output) from None
        finally:
            if progress is not None:
                progress.close()
    if not args.quiet:
        resume = "; run the same command again to resume" if summary["interrupted"] else ""
        print(f"elastream run: {outcome(summary)}{resume}; see them: elastream report "
              f"{spec.files.output}", file=sys.stderr)
        for line in unfinished(summary.get("scale_events", [])):
            print(f"elastream run: warning: {line}", file=sys.stderr)
    if summary["interrupted"]:
        if args.quiet:
            print("elastream run: stopped; run the same command again to resume",
                  file=sys.stderr)
        return JsonAnswer(summary, 130)
    return JsonAnswer(summary, 0 if summary["nothing_lost"] else 1)
