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
import math
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from elastream.cli.json_input import read_json
from elastream.cli.json_output import JsonAnswer
from elastream.cli.run_checks import check_files
from elastream.cli.run_console import job_failure, spark_console_logged
from elastream.cli.run_progress import RunProgress, outcome
from elastream.control.scale_events import unfinished
from elastream.core.aggregates import AggSpec
from elastream.core.chain import ChainOperator
from elastream.core.errors import OptionError
from elastream.core.filesystem import local_path
from elastream.core.job import (
    EXECUTIONS,
    FORMATS,
    MIGRATION_KINDS,
    MIGRATION_PLANNERS,
    MODES,
    SCALE_IN,
    SCALE_MODES,
    JobSpec,
    OperatorSpec,
    ScaleEvent,
    format_of,
)
from elastream.core.metrics_file import read_metrics
from elastream.core.windows import WindowSpec, parse_duration

FLAGS = {
    "aggs": "--agg", "windows": "--window", "slots": "--slots", "key_groups": "--key-groups",
    "then": "--then", "scale_at": "--scale-at", "planner": "--planner",
    "max_moves": "--max-moves", "lateness": "--lateness", "key": "--key-col",
    "time": "--time-col", "migration": "--migration", "tau": "--tau",
    "scale_mode": "--scale-mode", "format": "--format", "mode": "--mode",
    "rows_per_batch": "--rows-per-batch", "max_batches": "--max-batches", "rate": "--rate",
    "schema": "--schema", "max_slots": "--scale-at", "min_imbalance": "--min-imbalance",
    "serialisation": "--serialisation", "latency_target": "--latency-target",
    "executors": "--elastic-executors", "spark_executors": "--spark-executors",
    "autoscale": "--autoscale", "scale_in": "--scale-in",
    "release_after": "--release-after", "partition_by": "--partition-by", "chain": "--chain",
    "fused": "--fused", "migration_kind": "--migration-kind", "execution": "--execution",
    "latency_threshold": "--latency-threshold", "input": "--input", "output": "--output",
}
"""The CLI flag of each API argument: the library's errors name arguments, the CLI its flags."""
DEFAULT_AGGS = ("sum:delay", "count", "avg:delay")
DEFAULT_WINDOWS = ("1h", "6h/1h", "24h/1h")


def _int(option: str) -> Any:
    def convert(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} must be an integer, got {text!r}") from None
    return convert


def register(commands: Any) -> None:
    """Add the ``run`` sub-command."""
    p = commands.add_parser("run", help="run a windowed streaming job on Spark (local, or "
                            "a cluster's with --master)",
                            description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", type=Path, help="data set (file or folder); default: the flights")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="input format (default: from the file name, else parquet)")
    p.add_argument("--mode", choices=MODES, default="replay",
                   help="replay a static data set in event-time order, or watch a folder")
    p.add_argument("--time-col", default=None, help="event-time column (default: date)")
    p.add_argument("--key-col", default=None, help="key column (default: origin)")
    p.add_argument("--then", action="append", metavar="KEYS[/PARTITION]",
                   help="a further keyed operator, repeatable (e.g. origin,destination)")
    p.add_argument("--partition-by", default=None, metavar="COLS",
                   help="the key columns (comma-separated) that pick key groups: Enorm's "
                        "partition attributes (default: the whole key)")
    p.add_argument("--chain", type=Path, default=None, metavar="FILE.json",
                   help='operators that each aggregate the windows of the one before: '
                        '{"operators": [{"id", "keys", "aggs", "window"?, "partition_by"?}], '
                        '"fused"?: N}; results are the last one\'s windows')
    p.add_argument("--fused", type=_int("--fused"), default=None, metavar="N",
                   help="chained operators fused into the source's component "
                        "(default: as many as can)")
    p.add_argument("--agg", action="append", metavar="FUNC[:COLUMN]",
                   help="sum|count|min|max|avg, repeatable (default: sum:delay count avg:delay)")
    p.add_argument("--window", action="append", metavar="LENGTH[/SLIDE]",
                   help="units s/m/h/d, repeatable (default: 1h 6h/1h 24h/1h)")
    p.add_argument("--slots", type=_int("--slots"), default=4, help="parallel slots (default 4)")
    p.add_argument("--key-groups", type=_int("--key-groups"), default=128,
                   help="maximum key groups G (default 128)")
    from elastream.control.planners import PLANNERS

    p.add_argument("--planner", default=None,
                   help=f"one of {', '.join(PLANNERS)} (default flux, with --scale-at hash: "
                        "key-group ranges; fish splits hot keys)")
    p.add_argument("--max-moves", type=_int("--max-moves"), default=4,
                   help="most key groups a plan may move per batch (default 4)")
    p.add_argument("--min-imbalance", type=float, default=0.05,
                   help="flux, fish: leave slots alone while max/mean load - 1 is below this "
                        "(0.05)")
    p.add_argument("--scale-at", action="append", metavar="BATCH:SLOTS",
                   help="after micro-batch BATCH, scale to SLOTS slots, repeatable")
    p.add_argument("--autoscale", default=None, metavar="FEWEST:MOST",
                   help="the job sizes itself between FEWEST and MOST slots, from its measured "
                        "input rate, service rate and batch overhead against --latency-target "
                        "(any planner but elasticutor, which sizes its slots itself)")
    p.add_argument("--migration", default="ssm", choices=MIGRATION_PLANNERS,
                   help="which key groups move when scaling (default ssm)")
    p.add_argument("--migration-kind", default="disruptive", choices=MIGRATION_KINDS,
                   help="how a moving key group takes its windows along: disruptive (its state "
                        "is handed over) or smooth (the old slot finishes the windows begun "
                        "before the move; no state handed over)")
    p.add_argument("--execution", default="split", choices=EXECUTIONS,
                   help="how windows are built: split (records reduced to panes, windows "
                        "assembled from them), combine (each record added to every window it "
                        "falls in) or auto (chosen per period by Enorm's cost model, switched "
                        "live; default split)")
    p.add_argument("--latency-threshold", type=float, default=None, metavar="SECONDS",
                   help="with --execution auto: combine only while its pause for moving key "
                        "groups stays within SECONDS per period (default: no bound)")
    p.add_argument("--tau", type=float, default=0.2,
                   help="scaling: most load a slot may get over the mean, as a fraction (0.2)")
    p.add_argument("--scale-in", default="integrated", choices=SCALE_IN,
                   help="milp, albic, cola, potc: empty the leaving slots while balancing "
                        "(integrated, ALBIC's) or drain them first (separate); default "
                        "integrated")
    p.add_argument("--scale-mode", default="live", choices=SCALE_MODES,
                   help="live: move key groups' state while the query runs, --max-moves per "
                        "batch; stop: stop the query, move all, restart (default live)")
    p.add_argument("--latency-target", type=float, default=None, metavar="SECONDS",
                   help="the micro-batch duration to keep within, in seconds: for --autoscale "
                        "(default 5) and elasticutor (default 1)")
    p.add_argument("--elastic-executors", type=_int("--elastic-executors"), default=None,
                   metavar="E", help="elasticutor: fixed key-group ranges whose slots follow "
                   "their load (default one per slot: static until a range needs more)")
    p.add_argument("--spark-executors", default=None, metavar="FEWEST:MOST",
                   help="with --autoscale or elasticutor, on a cluster: hold between FEWEST and "
                        "MOST Spark executors, as many as the slots need (spark.executor.cores "
                        "each)")
    p.add_argument("--release-after", type=float, default=30.0, metavar="SECONDS",
                   help="with --spark-executors: release an executor once fewer were needed "
                        "for this long (default 30)")
    p.add_argument("--serialisation", type=float, default=0.1,
                   help="albic, cola, potc: load a tuple crossing slots costs at each end, in "
                        "tuples (default 0.1)")
    p.add_argument("--rows-per-batch", type=_int("--rows-per-batch"), default=100_000,
                   help="replay micro-batch size in rows (default 100000)")
    p.add_argument("--rate", type=float, default=None,
                   help="replay: feed the chunks at this many rows/s (default: all at once)")
    p.add_argument("--schema", default=None,
                   help="watch: the files' schema as DDL, e.g. 'ts timestamp, key string, "
                        "v double' (default: the first file's, waiting for it)")
    p.add_argument("--lateness", default="0s", help="watermark delay (default 0s)")
    p.add_argument("--max-batches", type=_int("--max-batches"), default=None,
                   help="stop after this many micro-batches (resume by running again)")
    p.add_argument("--output", default="output",
                   help="output folder, a local path or file:// URI (default ./output)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress display and no summary line (stdout: the JSON alone)")
    p.add_argument("--verbose", action="store_true",
                   help="Spark's console (JVM, log4j, Python workers) on the terminal, "
                        "instead of OUTPUT/logs/spark.log")
    spark = p.add_argument_group("Spark (under spark-submit, its own options apply too)")
    spark.add_argument("--master", default=None, metavar="URL",
                       help="local[N], local[*], spark://HOST:PORT, yarn or k8s://URL "
                            "(default: spark-submit's, else local[2])")
    spark.add_argument("--conf", action="append", metavar="KEY=VALUE",
                       help="a Spark setting, repeatable (e.g. spark.cores.max=2); settings "
                            "the job's state layout needs are refused if they differ")
    spark.add_argument("--driver-memory", default=None, metavar="SIZE",
                       help="the driver JVM's heap, e.g. 4g (default 2g; under spark-submit, "
                            "pass spark-submit's --driver-memory instead)")
    spark.add_argument("--executor-memory", default=None, metavar="SIZE",
                       help="each executor's heap on a cluster, e.g. 2g (default Spark's 1g)")
    p.set_defaults(handler=run_command, json=True)  # stdout: the JSON summary alone


def job_from_args(args: argparse.Namespace) -> JobSpec:
    """Validate every option into a :class:`JobSpec`; only then are the flights fetched.

    The library's errors name its arguments; they become the flags' names here.
    """
    from elastream.control.planners import job_planner
    from elastream.workloads.flights import fetch_flights, flights_path

    try:
        spec = _spec(args, args.input or Path("."))
        job_planner(spec, shared=planner_settings(args))  # the planner's name and settings
    except OptionError as error:
        raise as_flags(error) from None
    try:
        spec = check_files(spec, given_input=args.input, flights=flights_path(),
                           flag=lambda name: FLAGS.get(name, name))
    except OptionError as error:
        raise as_flags(error) from None
    if args.input is None:
        return replace(spec, input=fetch_flights(quiet=args.quiet))
    return spec


def planner_settings(args: argparse.Namespace) -> dict[str, float]:
    """The planner settings among the options, each a finite number >= 0 whatever the planner.

    They are offered to every planner (shared settings): each planner takes those it has.
    """
    settings = {"min_imbalance": args.min_imbalance, "serialisation": args.serialisation}
    for name, value in settings.items():
        if not (math.isfinite(value) and value >= 0):
            raise OptionError(name, "must be a finite number >= 0", value)
    return settings


def as_flags(error: OptionError) -> OptionError:
    """The same error with API argument names turned into flags (``key_groups`` → ``--key-groups``).

    >>> str(as_flags(OptionError("slots", "must not exceed key_groups (8)", 9)))
    '--slots must not exceed --key-groups (8), got 9'
    """
    rule = error.rule
    for name, flag in FLAGS.items():
        if "_" in name:
            rule = re.sub(rf"\b{name}\b", flag, rule)
    return OptionError(FLAGS.get(error.option, error.option), rule, error.value)


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


def _spec(args: argparse.Namespace, source: Path) -> JobSpec:
    if args.input is None:
        if args.format not in (None, "parquet"):
            raise OptionError("--format", "must be parquet without --input (the flights)",
                              args.format)
        fmt, time_col, key_col = "parquet", args.time_col or "date", args.key_col or "origin"
    else:
        fmt = args.format or format_of(source)
        if args.time_col is None or args.key_col is None:
            raise OptionError("--time-col/--key-col", "are required with --input", "missing")
        time_col, key_col = args.time_col, args.key_col
    lateness = 0 if args.lateness.strip() == "0" else parse_duration(
        args.lateness, option="lateness", allow_zero=True)
    return JobSpec(
        input=source,
        output=local_path(args.output, option="--output"),
        time_col=time_col,
        key_col=key_col,
        aggs=tuple(AggSpec.parse(a) for a in (args.agg or DEFAULT_AGGS)),
        windows=tuple(WindowSpec.parse(w) for w in (args.window or DEFAULT_WINDOWS)),
        format=fmt,
        mode=args.mode,
        slots=args.slots,
        key_groups=args.key_groups,
        planner=args.planner or ("hash" if args.scale_at else "flux"),
        rows_per_batch=args.rows_per_batch,
        lateness_ms=lateness,
        max_batches=args.max_batches,
        max_moves=args.max_moves,
        then=tuple(OperatorSpec.parse(t) for t in args.then or ()),
        scale_at=tuple(ScaleEvent.parse(e) for e in args.scale_at or ()),
        migration=args.migration,
        migration_kind=args.migration_kind,
        execution=args.execution,
        latency_threshold=args.latency_threshold,
        tau=args.tau,
        scale_mode=args.scale_mode,
        scale_in=args.scale_in,
        rate=args.rate,
        schema=args.schema,
        planner_options={} if args.elastic_executors is None else {
            "executors": args.elastic_executors},
        autoscale=_bounds("--autoscale", args.autoscale),
        latency_target=args.latency_target,
        spark_executors=_bounds("--spark-executors", args.spark_executors),
        release_after=args.release_after,
        partition_by=tuple(c.strip() for c in (args.partition_by or "").split(",") if c.strip()),
        **_chain(args),
    )


def _chain(args: argparse.Namespace) -> dict[str, Any]:
    """``--chain FILE.json`` and ``--fused N``: the spec's ``chain`` and ``fused``."""
    if args.chain is None:
        if args.fused is not None:
            raise OptionError("--fused", "needs --chain", args.fused)
        return {}
    data = read_json(args.chain, "--chain")
    if not isinstance(data, dict) or not isinstance(data.get("operators"), list) \
            or not set(data) <= {"operators", "fused"}:
        raise OptionError("--chain", 'must hold {"operators": [...], "fused": N (optional)}',
                          str(args.chain))
    fused = args.fused if args.fused is not None else data.get("fused")
    return {"chain": tuple(ChainOperator.parse(op) for op in data["operators"]),
            "fused": fused}


def _bounds(flag: str, text: str | None) -> tuple[int, int] | None:
    """``--spark-executors`` or ``--autoscale`` ``FEWEST:MOST``.

    >>> _bounds("--autoscale", "1:4")
    (1, 4)
    """
    if text is None:
        return None
    fewest, colon, most = text.partition(":")
    if not colon or not fewest.strip().isdigit() or not most.strip().isdigit():
        raise OptionError(flag, "must be FEWEST:MOST, e.g. 1:4", text)
    return int(fewest), int(most)


def _check_master_holds_executors(args: argparse.Namespace, conf: dict[str, str]) -> None:
    """``--spark-executors`` needs a cluster master (under spark-submit, the pool checks)."""
    if _bounds("--spark-executors", args.spark_executors) is None \
            or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    master = conf.get("spark.master", "local[2]")
    if master.startswith("local"):
        raise OptionError("--spark-executors", "needs a cluster master (--master "
                          "spark://HOST:PORT, yarn or k8s://URL): a local master has no "
                          "executors to hold", master)


def _progress(spec: JobSpec) -> RunProgress:
    """The progress display of ``spec``'s run: a resumed job counts the rows it did before."""
    from elastream.runtimes.spark.job import Paths
    from elastream.workloads.replay import staged_manifest

    paths = Paths(spec.output)
    before = sum(int(r.get("input_rows", 0)) for r in read_metrics(paths.metrics))

    def total() -> int | None:
        manifest = staged_manifest(paths.staged)
        return None if manifest is None else manifest.rows

    return RunProgress(sys.stderr, total, before, live=spec.mode == "watch")


def run_command(args: argparse.Namespace) -> JsonAnswer:
    """Handler of ``elastream run``: Spark's console goes to ``OUTPUT/logs/spark.log``.

    A failure inside Spark ends the command with one line naming its root cause and
    ``OUTPUT/logs/error.log`` (exit status 1), not a traceback.
    """
    conf = spark_conf(args)
    _check_master_holds_executors(args, conf)
    spec = job_from_args(args)
    from elastream.runtimes.spark.job import SparkJob
    from elastream.runtimes.spark.session import get_spark
    from elastream.runtimes.stop_signals import stop_on_signal

    with spark_console_logged(spec.output, to_terminal=args.verbose), \
            stop_on_signal() as interrupted:
        if not args.quiet:
            keys = " then ".join(op.name for op in spec.operators)
            print(f"elastream run: {spec.input} → {spec.output} (key {keys}, windows "
                  f"{', '.join(map(str, spec.windows))}, {spec.slots} slots, planner "
                  f"{spec.planner})", file=sys.stderr)
        progress = None if args.quiet else _progress(spec)
        try:
            spark = get_spark(conf=conf, partitions=spec.partitions)
            interrupted.install()  # over the handler PySpark's SparkContext installed
            job = SparkJob(spark, spec, on_batch=progress,
                           shared_settings=planner_settings(args))
            summary = job.run(interrupted)
        except Exception as error:
            from elastream.runtimes.spark import failure

            if not failure.is_spark_failure(error):
                raise
            raise job_failure(failure.root_cause(error), failure.failure_report(error),
                              spec.output) from None
        finally:
            if progress is not None:
                progress.close()
    if not args.quiet:
        resume = "; run the same command again to resume" if summary["interrupted"] else ""
        print(f"elastream run: {outcome(summary)}{resume}; see them: elastream report "
              f"{spec.output}", file=sys.stderr)
        for line in unfinished(summary.get("scale_events", [])):
            print(f"elastream run: warning: {line}", file=sys.stderr)
    if summary["interrupted"]:
        if args.quiet:
            print("elastream run: stopped; run the same command again to resume",
                  file=sys.stderr)
        return JsonAnswer(summary, 130)
    return JsonAnswer(summary, 0 if summary["nothing_lost"] else 1)
