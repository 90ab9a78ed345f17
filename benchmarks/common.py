"""What every benchmark program shares: its argument types and how it writes its results.

The programs run as scripts from their own folders; each puts this folder on ``sys.path``
(``sys.path.insert(0, str(Path(__file__).resolve().parents[1]))``) and imports ``common``.

Every benchmark reads the flights from one cache, through :mod:`elastream.workloads.flights`:
``$ELASTREAM_DATA_DIR`` when set, else the repository's ``data/`` (where ``make run`` puts
them), whatever folder the program runs from.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from elastream.workloads.flights import DATA_DIR_ENV, fetch_flights

REPOSITORY = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """The one flights cache: ``$ELASTREAM_DATA_DIR``, else the repository's ``data/``."""
    return Path(os.environ.get(DATA_DIR_ENV) or REPOSITORY / "data")


def flights_file() -> Path:
    """The verified flights file in :func:`data_dir`, fetched there first if needed."""
    return fetch_flights(data_dir(), quiet=True)


def positive(text: str) -> int:
    """An ``argparse`` type: a positive integer."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


READ_BACK_DIGITS = 9
"""Decimals for a CSV whose rows a report reads back (:func:`read_csv_rows`) to redraw its
summary: at the default 6, times in seconds keep only whole microseconds, and a redrawn summary
that shows milliseconds to 4 places can differ from the run's."""


def rounded(value: Any, digits: int = 6) -> Any:
    """Floats rounded for a CSV cell; anything else as it is."""
    return round(value, digits) if isinstance(value, float) else value


def write_csv(rows: Iterable[dict[str, Any]], path: Path,
              columns: Sequence[str] | None = None, digits: int = 6) -> None:
    """Rows as CSV with a header: ``columns`` (others ignored), else the first row's keys.

    Floats are rounded to ``digits`` decimals; ``None`` is an empty cell.
    """
    rows = [{k: rounded(v, digits) for k, v in r.items()} for r in rows]
    if not rows and columns is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns or rows[0]),
                                extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def read_csv_rows(path: Path,
                  types: Mapping[str, Callable[[str], Any]]) -> list[dict[str, Any]]:
    """The rows :func:`write_csv` wrote, each cell converted by its column's type in ``types``.

    An empty cell in a typed column is ``None`` (``write_csv`` writes ``None`` and ``""`` alike
    as an empty cell); columns not in ``types`` stay strings. Floats come back as
    :func:`rounded` left them.
    """
    with path.open(newline="") as handle:
        return [{k: (None if v == "" else types[k](v)) if k in types else v
                 for k, v in row.items()}
                for row in csv.DictReader(handle)]


def write_json(path: Path, meta: dict[str, Any], indent: int = 1, **tables: Any) -> None:
    """``meta`` (the command, settings, machine) and the result tables in one JSON file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**meta, **tables}, indent=indent) + "\n")


def oracle_exit(mismatches: Mapping[str, str]) -> int:
    """Exit status of a benchmark: 1 (naming them on stderr) when runs differed from the oracle."""
    if mismatches:
        print(f"{len(mismatches)} run(s) differ from the oracle: {', '.join(mismatches)}",
              file=sys.stderr)
    return 1 if mismatches else 0


def run_meta(script: str, argv: Sequence[str] | None, args: argparse.Namespace,
             **machine: Any) -> dict[str, Any]:
    """The command that produced a result, its settings and the machine it ran on."""
    import platform
    import sys

    return {
        "command": f"benchmarks/{script} " + " ".join(argv or sys.argv[1:]),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "machine": {"python": platform.python_version(), **machine},
    }


def spark_job_outputs(folder: Path) -> tuple[list[dict[str, Any]], Any]:
    """A finished Spark job's per-batch metrics and its results (window bounds in UTC)."""
    import pandas as pd
    import pyarrow.dataset as ds

    from elastream.runtimes.spark.file_run import Paths

    paths = Paths(folder)
    metrics = [json.loads(line) for line in paths.metrics.read_text().splitlines()]
    results = ds.dataset(str(paths.results), format="parquet").to_table().to_pandas()
    for column in ("window_start", "window_end"):
        if column in results:  # none when no window closed
            results[column] = pd.to_datetime(results[column], utc=True)
    return metrics, results


def first_flights(rows: int | None = None) -> Any:
    """The flights in time order (stable), the first ``rows`` of them (all when ``None``)."""
    import pandas as pd

    flights = pd.read_parquet(flights_file()).sort_values("date", kind="stable")
    return (flights if rows is None else flights.head(rows)).reset_index(drop=True)


def native_windowed(rows: Any, spec: Any, aggs: Sequence[Any], *, time_col: str,
                    key_col: str) -> Any:
    """What a Spark user writes for one window spec: ``groupBy(window(...), key).agg(...)``.

    Columns as elastream outputs them (``key``, bounds, length and slide in seconds, one column
    per aggregate: count long, the rest double).
    """
    from pyspark.sql import functions as F  # noqa: N812

    def aggregate(agg: Any) -> Any:
        if agg.column is None:
            return F.count(F.lit(1)).alias(agg.output_name)
        column = F.col(agg.column)
        if agg.func == "count":
            return F.count(column).alias(agg.output_name)
        func = {"sum": F.sum, "min": F.min, "max": F.max, "avg": F.avg}[agg.func]
        return func(column).cast("double").alias(agg.output_name)

    length, slide = spec.length_ms // 1000, spec.slide_ms // 1000
    window = F.window(time_col, f"{length} seconds", f"{slide} seconds").alias("w")
    grouped = rows.groupBy(window, F.col(key_col).alias("key")).agg(*map(aggregate, aggs))
    return grouped.select(
        "key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
        F.lit(length).cast("long").alias("window_length"),
        F.lit(slide).cast("long").alias("window_slide"), *(a.output_name for a in aggs))
