"""``elastream kafka start|stop|produce``: a local Kafka broker, and a file's rows sent to it.

``start`` launches a one-node broker (KRaft) whose folder, ``--dir`` (default ``./kafka``),
keeps its topics, its log and ``broker.json``; it returns once the broker answers, leaving it
running. ``stop`` ends it; ``start`` again on the same folder brings back its topics and
messages on the same port. ``produce`` sends every row of a Parquet, CSV or JSON-lines file to a
topic as a JSON object, in file order (optionally keyed by a column, optionally at a rate),
creating the topic with ``--partitions`` if it does not exist. The broker's jars come from
``make jars``; the client is the ``kafka`` extra (``pip install 'elastream[kafka]'``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from elastream.cli.json_output import JsonAnswer
from elastream.core.errors import OptionError

DEFAULT_DIR = Path("kafka")
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
FLAGS = {"port": "--port", "partitions": "--partitions", "rate": "--rate",
         "key_col": "--key-col", "format": "--format", "topic": "TOPIC"}
"""The library's argument names and the flags they are given by."""


def register(commands: Any) -> None:
    """Add the ``kafka`` sub-command with its ``start``, ``stop`` and ``produce`` actions."""
    kafka = commands.add_parser("kafka", help="a local Kafka broker, and files sent to it",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = kafka.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser("start", help="start a one-node broker and leave it running",
                               description="Start a one-node Kafka broker (KRaft) in DIR, "
                                           "wait until it answers, and leave it running.")
    _dir_flag(start)
    start.add_argument("--port", type=int, default=None, metavar="P",
                       help="the clients' port (default: the one DIR's broker had, else a "
                            "free one)")
    _json_flag(start, "the bootstrap address and folder")
    start.set_defaults(handler=start_command)
    stop = actions.add_parser("stop", help="stop the broker of a folder",
                              description="Stop the broker started in DIR (SIGTERM, then "
                                          "SIGKILL); its topics stay for the next start.")
    _dir_flag(stop)
    _json_flag(stop, "the folder and whether a broker was running")
    stop.set_defaults(handler=stop_command)
    produce = actions.add_parser("produce", help="send a file's rows to a topic as JSON",
                                 description="Send every row of FILE to TOPIC as a JSON object, "
                                             "in file order.")
    produce.add_argument("topic", metavar="TOPIC", help="the topic (created if missing)")
    produce.add_argument("file", type=Path, metavar="FILE",
                         help="a Parquet, CSV or JSON-lines file")
    produce.add_argument("--bootstrap", default=None, metavar="HOST:PORT",
                         help=f"the broker (default: the one in {DEFAULT_DIR}/broker.json, "
                              f"else {DEFAULT_BOOTSTRAP})")
    produce.add_argument("--partitions", type=int, default=1, metavar="N",
                         help="the topic's partitions, if it is created (default 1)")
    produce.add_argument("--key-col", default=None, metavar="C",
                         help="the column whose values key the messages (default: no key)")
    produce.add_argument("--rate", type=float, default=None, metavar="ROWS_PER_S",
                         help="rows per second (default: as fast as the broker takes them)")
    produce.add_argument("--format", choices=("parquet", "csv", "json"), default=None,
                         help="the file's format (default: from its suffix, else parquet)")
    _json_flag(produce, "the topic, rows, partitions and seconds")
    produce.set_defaults(handler=produce_command)


def start_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream kafka start``."""
    from elastream.kafka import broker

    with _flags():
        running = broker.start(args.dir, port=args.port)
    if args.json:
        return JsonAnswer({"bootstrap": running.bootstrap, "dir": str(running.directory),
                           "pid": running.pid})
    print(f"Kafka broker at {running.bootstrap} (pid {running.pid}, folder "
          f"{running.directory}); stop it with: elastream kafka stop --dir {args.dir}")
    return 0


def stop_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream kafka stop``."""
    from elastream.kafka import broker

    was_running = broker.running(args.dir)
    broker.stop(args.dir)
    if args.json:
        return JsonAnswer({"dir": str(args.dir.resolve()), "was_running": was_running})
    print(f"stopped the broker of {args.dir}" if was_running
          else f"the broker of {args.dir} was not running")
    return 0


def produce_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream kafka produce``."""
    from elastream.kafka import broker
    from elastream.kafka.produce import produce

    bootstrap = args.bootstrap
    if bootstrap is None:
        recorded = DEFAULT_DIR / broker.STATE_FILE
        bootstrap = broker.load(DEFAULT_DIR).bootstrap if recorded.exists() \
            else DEFAULT_BOOTSTRAP
    with _flags():
        sent = produce(bootstrap, args.topic, args.file, partitions=args.partitions,
                       key_col=args.key_col, rate=args.rate, format=args.format)
    if args.json:
        return JsonAnswer(sent)
    partitions = f"{sent['partitions']} partition" + ("s" if sent["partitions"] > 1 else "")
    print(f"sent {sent['rows']} rows of {args.file} to topic {sent['topic']} ({partitions}) "
          f"at {bootstrap} in {sent['seconds']:.1f} s")
    return 0


@contextmanager
def _flags() -> Iterator[None]:
    """Errors naming the library's arguments (``key_col``) name the flags (``--key-col``)."""
    try:
        yield
    except OptionError as error:
        if error.option not in FLAGS:
            raise
        raise OptionError(FLAGS[error.option], error.rule, error.value) from None


def _dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, metavar="DIR",
                        help=f"the broker's folder (default ./{DEFAULT_DIR})")


def _json_flag(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")
