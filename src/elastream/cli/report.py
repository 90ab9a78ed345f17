"""``elastream report OUTPUT``: one self-contained HTML page of what a run did.

Reads the output folder of ``elastream run`` (or a Python API job's ``state_dir``) and writes
``OUTPUT/report.html`` (``--html FILE`` elsewhere): the summary, input rate and throughput,
batch durations (p50/p95), the load per slot, moves and routing versions, hot keys split,
hand-offs in flight, scale events, state size, split or combine, and the dead letter by
reason with examples. The page needs no network to view. ``--png DIR`` also writes each plot
as ``DIR/<plot>.png``; ``--json`` prints the paths written and the plots drawn or skipped.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from elastream.cli.json_output import JsonAnswer
from elastream.core.errors import OptionError


def register(commands: Any) -> None:
    """Add the ``report`` sub-command."""
    p = commands.add_parser("report", help="an HTML page of plots of what a run did",
                            description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("output", type=Path, metavar="OUTPUT", help="a run's output folder")
    p.add_argument("--html", type=Path, default=None, metavar="FILE",
                   help="where to write the page (default OUTPUT/report.html)")
    p.add_argument("--png", type=Path, default=None, metavar="DIR",
                   help="also write each plot as DIR/<plot>.png")
    p.add_argument("--json", action="store_true",
                   help="print the paths written and the plots as JSON")
    p.set_defaults(handler=report_command)


def check_paths(args: argparse.Namespace) -> None:
    """``OUTPUT`` is a folder; ``--html`` is not a folder; ``--png`` is not a file."""
    if not args.output.is_dir():
        raise OptionError("OUTPUT", "must be a run's output folder", str(args.output))
    if args.html is not None and args.html.is_dir():
        raise OptionError("--html", "must be a file path, not a folder", str(args.html))
    if args.png is not None and args.png.exists() and not args.png.is_dir():
        raise OptionError("--png", "must be a folder (made if missing), not a file",
                          str(args.png))


def report_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream report``."""
    from elastream.report import render

    check_paths(args)
    report = render(args.output, args.html, args.png)
    if args.json:
        return JsonAnswer({"html": str(report.html), "png": [str(p) for p in report.pngs],
                           "plots": list(report.plots), "skipped": report.skipped})
    print(report.html)
    for path in report.pngs:
        print(path)
    return 0
