"""``elastream`` command line: parse, validate, call; user mistakes become one-line errors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from elastream.core.errors import ElastreamError


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-command per module in ``elastream.cli``."""
    from elastream.cli import data, run

    parser = argparse.ArgumentParser(
        prog="elastream",
        description="Elastic, skew-aware stateful stream processing on Spark.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (run, data):
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
