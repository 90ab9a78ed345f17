"""``elastream report OUTPUT``: one self-contained HTML page of what a run did.

Reads the output folder of ``elastream run`` (or a Python API job's ``state_dir``) and writes
``OUTPUT/report.html`` (``--html FILE`` elsewhere): the summary, input rate and throughput,
batch durations (p50/p95), the load per slot, moves and routing versions, hot keys split,
hand-offs in flight, scale events, state size, split or combine, and the dead letter by
reason with examples. The page needs no network to view. ``--png DIR`` also writes each plot
as ``DIR/<plot>.png``; ``--json`` prints the paths written and the plots drawn or skipped.
``--serve`` is a live view of a running job instead (:mod:`elastream.report.live`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from elastream.cli.json_output import JsonAnswer
from elastream.core import rules
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
    p.add_argument("--serve", action="store_true",
                   help="a live view instead: serve the report on 127.0.0.1, drawn anew at "
                        "each load, the page reloading itself (Ctrl-C stops)")
    p.add_argument("--port", type=int, default=8000,
                   help="--serve: the port (default 8000; 0: any free one)")
    p.add_argument("--refresh", type=int, default=5, metavar="SECONDS",
                   help="--serve: seconds between reloads (default 5)")
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
    rules.integer("--port", args.port, low=0, high=65535)
    rules.integer("--refresh", args.refresh, unit="seconds")
    if args.serve and (args.json or args.html is not None or args.png is not None):
        raise OptionError("--serve", "writes no files: not with --html, --png or --json",
                          "--serve")


def report_command(args: argparse.Namespace) -> int | JsonAnswer:
    """Handler of ``elastream report``."""
    from elastream.report import render

    check_paths(args)
    if args.serve:
        return _serve(args)
    report = render(args.output, args.html, args.png)
    if args.json:
        return JsonAnswer({"html": str(report.html), "png": [str(p) for p in report.pngs],
                           "plots": list(report.plots), "skipped": report.skipped})
    print(report.html)
    for path in report.pngs:
        print(path)
    return 0


def _serve(args: argparse.Namespace) -> int:
    """``--serve``: until Ctrl-C."""
    from elastream.report.live import serve

    try:
        server = serve(args.output, args.port, args.refresh)
    except OSError as error:
        raise OptionError("--port", f"must be free to listen on ({error.strerror})",
                          args.port) from None
    port = server.server_address[1]
    print(f"elastream report: serving {args.output} on http://127.0.0.1:{port}/ "
          f"(reloads every {args.refresh} s; Ctrl-C stops)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
