"""Replay a static data set as an event-time ordered file stream.

``prepare_replay`` reads a Parquet, CSV or JSON-lines data set once, orders it by event time
(rows whose time cannot be parsed go last; the stream's parser sends them to the dead letter)
and writes it as numbered Parquet chunks of about ``rows_per_batch`` rows into a staging folder
(each in a few row groups, so Spark reads a chunk in parallel).
Chunks are cut only where the time changes, so no timestamp spans two micro-batches. Raw values
are kept as they were (CSV and JSON cells as strings), so malformed cells still reach the stream
and are reported there; rows that cannot even be split into fields become one ``_corrupt`` row
each. Two final chunks hold a single *timestamp punctuation* each (Enorm §6.2): a row marked
``_punct`` whose time lies past every window of the data, so the watermark closes them all (the
second one runs the micro-batch that acts on the watermark the first one moved).

A :class:`Feeder` then moves one chunk at a time into the folder a Spark file stream watches
(an atomic rename, so Spark never sees half a file). Moved chunks are the stream's history: on
restart the feeder continues with the first chunk still staged.
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from elastream.core import rules
from elastream.core.errors import DataError, OptionError
from elastream.core.options import FORMATS

CORRUPT = "_corrupt"
PUNCT = "_punct"
MANIFEST = "manifest.json"
STAGED = Path("_replay", "staged")
"""Where ``elastream run`` stages a replay's chunks, under its output folder."""
ROW_GROUPS = 4
"""Row groups per chunk, so Spark can read a chunk with several tasks (one per row group)."""


@dataclass(frozen=True)
class ReplayManifest:
    """What ``prepare_replay`` wrote: data chunks plus one punctuation chunk, in order."""

    source: str
    format: str
    time_col: str
    rows: int
    chunks: list[str]
    first_time: str | None
    last_time: str | None
    punct_time: str | None

    def replays(self, source: Path, time_col: str) -> bool:
        """Whether these chunks are ``source`` ordered by ``time_col`` (a run may resume them)."""
        return self.source == str(source.resolve()) and self.time_col == time_col


def read_static(path: Path, fmt: str) -> pa.Table:
    """Read a whole data set, keeping raw values (CSV/JSON cells as text) and bad rows."""
    rules.choice("format", fmt, FORMATS)
    if not path.exists():
        raise DataError(f"input {str(path)!r} does not exist")
    files = sorted(p for p in path.rglob(f"*.{fmt}")) if path.is_dir() else [path]
    if not files:
        raise DataError(f"input folder {str(path)!r} holds no .{fmt} files")
    tables = [_read_file(f, fmt) for f in files]
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowInvalid as error:
        raise DataError(f"input files of {str(path)!r} disagree on columns: {error}") from None


def _read_file(path: Path, fmt: str) -> pa.Table:
    try:
        if fmt == "parquet":
            table = pq.read_table(path)
        elif fmt == "csv":
            table = _read_csv(path)
        else:
            table = _read_json_lines(path)
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read {str(path)!r} as {fmt}: {error}") from None
    if CORRUPT not in table.column_names:
        table = table.append_column(CORRUPT, pa.nulls(table.num_rows, pa.string()))
    return table


def _read_csv(path: Path) -> pa.Table:
    with path.open(newline="") as handle:
        header = next(csv.reader(handle), None)
    if not header:
        raise DataError(f"CSV file {str(path)!r} has no header row")
    bad: list[str] = []

    def keep_bad_row(row: pacsv.InvalidRow) -> str:
        bad.append(f"expected {row.expected_columns} fields, got {row.actual_columns}: "
                   f"{(row.text or '')[:200]}")
        return "skip"

    table = pacsv.read_csv(
        path,
        parse_options=pacsv.ParseOptions(invalid_row_handler=keep_bad_row),
        convert_options=pacsv.ConvertOptions(
            column_types={name: pa.string() for name in header}, strings_can_be_null=True),
    )
    table = table.append_column(CORRUPT, pa.nulls(table.num_rows, pa.string()))
    if bad:
        extra = {name: pa.nulls(len(bad), pa.string()) for name in header}
        extra[CORRUPT] = pa.array(bad, pa.string())
        table = pa.concat_tables([table, pa.table(extra)])
    return table


def _read_json_lines(path: Path) -> pa.Table:
    records: list[dict[str, object]] = []
    with path.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as error:
                records.append({CORRUPT: f"line {number}: {error.msg}: {line.strip()[:200]}"})
                continue
            if isinstance(value, dict):
                records.append(value)
            else:
                records.append({CORRUPT: f"line {number}: not a JSON object"})
    names = list(dict.fromkeys(name for record in records for name in record))
    if CORRUPT not in names:
        names.append(CORRUPT)
    columns = {name: pa.array([_json_text(r.get(name)) for r in records], pa.string())
               for name in names}
    return pa.table(columns)


def _json_text(value: object) -> str | None:
    """A JSON value as the text it was written as (strings without their quotes)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def event_times(column: pa.ChunkedArray) -> pd.Series:
    """Event times as UTC timestamps for ordering (unparsable → NaT)."""
    series = column.to_pandas()
    out: pd.Series
    if pa.types.is_timestamp(column.type):
        out = pd.to_datetime(series)
        out = out.dt.tz_localize("UTC") if out.dt.tz is None else out.dt.tz_convert("UTC")
    elif pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        out = pd.to_datetime(series, unit="s", utc=True, errors="coerce")
    else:
        out = pd.to_datetime(series.astype("string"), utc=True, errors="coerce", format="mixed")
    return out


def staged_manifest(staging: Path) -> ReplayManifest | None:
    """What a replay already staged in ``staging`` (``None``: nothing yet)."""
    path = staging / MANIFEST
    if not path.exists():
        return None
    return ReplayManifest(**json.loads(path.read_text()))


def prepare_replay(
    source: Path,
    fmt: str,
    time_col: str,
    rows_per_batch: int,
    staging: Path,
    punct_after_ms: int,
) -> ReplayManifest:
    """Write ``source`` as ordered chunks into ``staging``; reuse them if already written.

    The input is sorted in memory; that memory goes back to the operating system before the
    stream starts (Arrow's allocator keeps freed memory otherwise: ~360 MB on 3 M flights).
    """
    manifest = _prepare(source, fmt, time_col, rows_per_batch, staging, punct_after_ms)
    pa.default_memory_pool().release_unused()
    return manifest


def _prepare(source: Path, fmt: str, time_col: str, rows_per_batch: int, staging: Path,
             punct_after_ms: int) -> ReplayManifest:
    manifest_path = staging / MANIFEST
    manifest = staged_manifest(staging)
    if manifest is not None:
        if manifest.replays(source, time_col):
            return manifest
        raise DataError(f"output folder already replays {manifest.source!r}; use a new --output")
    table = read_static(source, fmt)
    if time_col not in table.column_names:
        columns = ", ".join(c for c in table.column_names if c != CORRUPT)
        raise OptionError("time", f"must name a column of the input ({columns})", time_col)
    table = _utc_timestamps(table)
    times = event_times(table[time_col])
    order = np.argsort(times.to_numpy(dtype="datetime64[ns]"), kind="stable")
    table = table.take(pa.array(order))
    times = times.iloc[order].reset_index(drop=True)
    table = table.append_column(PUNCT, pa.array(np.zeros(table.num_rows, dtype=bool)))
    staging.mkdir(parents=True, exist_ok=True)
    names = []
    for index, (lo, hi) in enumerate(_cuts(times, rows_per_batch)):
        name = f"chunk-{index:06d}.parquet"
        pq.write_table(table.slice(lo, hi - lo), staging / name,
                       row_group_size=max(1, math.ceil((hi - lo) / ROW_GROUPS)))
        names.append(name)
    valid = times.dropna()
    punct_time = None
    if len(valid):
        punct_at = valid.iloc[-1] + pd.Timedelta(milliseconds=punct_after_ms)
        if pa.types.is_integer(table.schema.field(time_col).type):
            punct_at = punct_at.ceil("s")  # whole epoch seconds; never before the intended time
        name = f"chunk-{len(names):06d}.parquet"
        pq.write_table(_punctuation(table.schema, time_col, punct_at), staging / name)
        names.append(name)
        # Replay runs without no-data micro-batches: a second punctuation runs the batch that
        # acts on the watermark the first one moved.
        name = f"chunk-{len(names):06d}.parquet"
        pq.write_table(_punctuation(table.schema, time_col, punct_at), staging / name)
        names.append(name)
        punct_time = punct_at.isoformat()
    manifest = ReplayManifest(
        source=str(source.resolve()), format=fmt, time_col=time_col, rows=table.num_rows,
        chunks=names, first_time=valid.iloc[0].isoformat() if len(valid) else None,
        last_time=valid.iloc[-1].isoformat() if len(valid) else None, punct_time=punct_time)
    tmp = staging / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(asdict(manifest)))
    os.replace(tmp, manifest_path)
    return manifest


def _utc_timestamps(table: pa.Table) -> pa.Table:
    """Mark naive timestamps as UTC so Spark reads them as TIMESTAMP, not TIMESTAMP_NTZ."""
    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and field.type.tz is None:
            cast = table.column(i).cast(pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC"))
            table = table.set_column(i, field.name, cast)
        elif pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            table = table.set_column(i, field.name, table.column(i).cast(
                pa.timestamp("us", tz=field.type.tz), safe=False))
    return table


def _cuts(times: pd.Series, rows_per_batch: int) -> list[tuple[int, int]]:
    """Chunk bounds of about ``rows_per_batch`` rows that never split equal times."""
    values = times.to_numpy(dtype="datetime64[ns]")
    cuts, lo, total = [], 0, len(values)
    while lo < total:
        hi = min(lo + rows_per_batch, total)
        while 0 < hi < total and values[hi] == values[hi - 1]:
            hi += 1
        cuts.append((lo, hi))
        lo = hi
    return cuts


def _punctuation(schema: pa.Schema, time_col: str, at: pd.Timestamp) -> pa.Table:
    columns = {}
    for field in schema:
        if field.name == PUNCT:
            columns[field.name] = pa.array([True])
        elif field.name == time_col:
            kind = field.type
            if pa.types.is_timestamp(kind):
                value: object = at.to_pydatetime()
            elif pa.types.is_integer(kind):
                value = math.ceil(at.timestamp())
            elif pa.types.is_floating(kind):
                value = at.timestamp()
            else:
                value = at.strftime("%Y-%m-%d %H:%M:%S.%f")
            columns[field.name] = pa.array([value], type=kind)
        else:
            columns[field.name] = pa.nulls(1, field.type)
    return pa.table(columns, schema=schema)


class Feeder:
    """Moves staged chunks one at a time into the folder a file stream watches."""

    def __init__(self, staging: Path, watched: Path, manifest: ReplayManifest) -> None:
        self.staging = staging
        self.watched = watched
        self.manifest = manifest
        watched.mkdir(parents=True, exist_ok=True)

    def fed(self) -> int:
        """Chunks already in the watched folder."""
        return sum(1 for name in self.manifest.chunks if (self.watched / name).exists())

    def remaining(self) -> int:
        """Chunks still staged (the punctuation chunk included)."""
        return len(self.manifest.chunks) - self.fed()

    def feed_next(self) -> str | None:
        """Move the next chunk; return its name, or ``None`` when all were fed.

        Its modification time is set after every chunk fed before (a file stream takes the
        oldest files first, by modification time in milliseconds).
        """
        for index, name in enumerate(self.manifest.chunks):
            if not (self.watched / name).exists():
                target = self.watched / name
                before = (self.watched / self.manifest.chunks[index - 1]) if index else None
                floor = before.stat().st_mtime_ns + 1_000_000 if before and before.exists() \
                    else 0
                stamp = max(time.time_ns(), floor)
                os.utime(self.staging / name, ns=(stamp, stamp))
                os.replace(self.staging / name, target)
                return name
        return None

    def feed(self, *, limit: int | None = None, rate: float | None = None,
             stop: Callable[[], bool] = lambda: False,
             sleep: Callable[[float], None] = time.sleep) -> int:
        """Feed up to ``limit`` chunks (default: all left), at ``rate`` rows/s if given.

        Returns how many were fed; ``stop`` is asked before each chunk.
        """
        fed = 0
        started = time.monotonic()
        rows = 0
        while limit is None or fed < limit:
            if stop():
                break
            if rate is not None:
                sleep(max(0.0, started + rows / rate - time.monotonic()))
            name = self.feed_next()
            if name is None:
                break
            fed += 1
            rows += self.rows_of(name)
        return fed

    def rows_of(self, name: str) -> int:
        """Rows of a fed chunk."""
        return int(pq.ParquetFile(self.watched / name).metadata.num_rows)
