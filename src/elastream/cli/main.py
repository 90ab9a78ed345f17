"""``elastream`` command line: parse, validate, call; user mistakes become one-line errors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from elastream.core.errors import ElastreamError


class _Parser(argparse.ArgumentParser):
    """Usage mistakes become one line on stderr and exit status 2 (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-command per module in ``elastream.cli``."""
    from elastream.cli import data, plan, run, simulate

    parser = _Parser(
        prog="elastream",
        description="Elastic, skew-aware stateful stream processing on Spark.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=_Parser)
    for module in (run, simulate, plan, data):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 2 bad usage or input, 130 interrupted)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except ElastreamError as error:
        print(f"elastream {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"elastream {args.command}: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
