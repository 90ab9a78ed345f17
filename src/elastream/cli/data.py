"""``elastream data fetch DATASET`` and ``elastream data zipf OUT``: input data sets.

``fetch`` downloads and verifies ``flights`` (the US flight stream of
:mod:`elastream.workloads.flights`) and prints its path, so ``$(elastream data fetch flights)``
can feed other commands; a progress line goes to stderr only when something is downloaded.
``zipf`` writes FISH's time-evolving Zipf stream (:mod:`elastream.workloads.zipf`) as Parquet
with columns ``ts, key, value``, ready for ``elastream run --input OUT --time-col ts
--key-col key``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from elastream.core import rules
from elastream.workloads.flights import DATA_DIR_ENV, fetch_flights

DATASETS = ("flights",)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``data`` sub-command (with its ``fetch`` action) to the top-level parser."""
    data = commands.add_parser(
        "data",
        help="input data sets: fetch the flights, or generate a Zipf stream",
        description="Fetch (download and verify) the real data sets elastream can replay, or "
                    "generate a synthetic one.",
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
    zipf = actions.add_parser(
        "zipf",
        help="write a time-evolving Zipf stream (FISH §6.1) as Parquet",
        description="Write FISH's time-evolving Zipf stream as Parquet (ts, key, value).",
    )
    zipf.add_argument("out", type=Path, metavar="OUT", help="Parquet file to write")
    zipf.add_argument("--tuples", type=int, default=1_000_000, help="tuples (default 1000000)")
    zipf.add_argument("--z", type=float, default=1.0, help="skew exponent (default 1.0)")
    zipf.add_argument("--keys", type=int, default=100_000, help="distinct keys (default 100000)")
    zipf.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    zipf.add_argument("--rate", type=float, default=1000.0,
                      help="tuples per second of event time (default 1000)")
    zipf.set_defaults(handler=zipf_command)


def zipf_command(args: argparse.Namespace) -> int:
    """Write the Zipf stream to ``args.out`` and print its path."""
    from elastream.workloads.zipf import zipf_frame

    frame = zipf_frame(args.tuples, z=args.z, num_keys=args.keys, seed=args.seed, rate=args.rate)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(args.out, index=False, coerce_timestamps="us")
    print(args.out)
    return 0


def fetch_command(args: argparse.Namespace) -> int:
    """Fetch ``args.dataset`` into ``args.data_dir``, print the verified file's path, return 0.

    Raises:
        OptionError: the data set name is not one of :data:`DATASETS`.
        DataError: the download or its verification failed.
    """
    rules.choice("DATASET", args.dataset, DATASETS)
    print(fetch_flights(args.data_dir))
    return 0
