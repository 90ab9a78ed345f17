"""``elastream data fetch DATASET``: download a data set, verify it, print its path.

The one data set is ``flights`` (the US flight stream of :mod:`elastream.workloads.flights`).
The path of the verified file goes to stdout, so ``$(elastream data fetch flights)`` can feed
other commands; a progress line goes to stderr only when something is downloaded.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from elastream.core.errors import OptionError
from elastream.workloads.flights import DATA_DIR_ENV, fetch_flights

DATASETS = ("flights",)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``data`` sub-command (with its ``fetch`` action) to the top-level parser."""
    data = commands.add_parser(
        "data",
        help="download and verify input data sets",
        description="Download and verify the input data sets elastream can replay.",
    )
    actions = data.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = actions.add_parser(
        "fetch",
        help="fetch a data set into the data directory and print its path",
        description="Fetch a data set (if not already there and verified), print its path.",
    )
    fetch.add_argument("dataset", metavar="DATASET", help=f"one of: {', '.join(DATASETS)}")
    fetch.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where data sets live (env: {DATA_DIR_ENV}; default: ./data)",
    )
    fetch.set_defaults(handler=fetch_command)


def fetch_command(args: argparse.Namespace) -> int:
    """Fetch ``args.dataset`` into ``args.data_dir``, print the verified file's path, return 0.

    Raises:
        OptionError: the data set name is not one of :data:`DATASETS`.
        DataError: the download or its verification failed.
    """
    if args.dataset not in DATASETS:
        raise OptionError("DATASET", f"must be one of: {', '.join(DATASETS)}", args.dataset)
    print(fetch_flights(args.data_dir))
    return 0
