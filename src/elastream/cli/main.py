"""``elastream`` command line: parse, validate, call; user mistakes become one-line errors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from elastream import __version__
from elastream.cli.json_output import JsonAnswer, print_answer, stdout_reserved
from elastream.core.errors import ElastreamError, JobError


class _Parser(argparse.ArgumentParser):
    """Usage mistakes become one line on stderr and exit status 2 (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-command per module in ``elastream.cli``."""
    from elastream.cli import data, kafka, plan, report, run, simulate

    parser = _Parser(
        prog="elastream",
        description="Elastic, skew-aware stateful stream processing on Spark.",
    )
    parser.add_argument("--version", action="version", version=f"elastream {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=_Parser)
    for module in (run, report, simulate, plan, data, kafka):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 1 a job failed, 2 bad usage or input, 130 stopped).

    A command whose answer is JSON (``args.json``) runs with file descriptor 1 pointed at
    stderr and returns a :class:`JsonAnswer`, printed last: its stdout is that document alone.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with stdout_reserved(bool(getattr(args, "json", False))):
            outcome: int | JsonAnswer = args.handler(args)
    except JobError as error:
        print(f"elastream {args.command}: error: {error}", file=sys.stderr)
        return 1
    except ElastreamError as error:
        print(f"elastream {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"elastream {args.command}: interrupted", file=sys.stderr)
        return 130
    return print_answer(outcome) if isinstance(outcome, JsonAnswer) else outcome


if __name__ == "__main__":
    sys.exit(main())
