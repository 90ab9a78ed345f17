"""The column names of an input, read without reading its rows, to check options up front.

Parquet: each file's footer; CSV: each file's header row; JSON lines: the keys of its records,
read until every column asked about was seen (a JSON record need not carry every column). A
folder's columns are those of its ``*.FORMAT`` files (hidden ones, ``.*`` and ``_*``, skipped),
as :func:`~elastream.workloads.replay.read_static` reads them. A watched folder's files may be
described by a Spark DDL string instead (:func:`ddl_columns`).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Collection
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from elastream.core.errors import OptionError

DDL_TYPE = re.compile(
    r"(boolean|tinyint|byte|smallint|short|int|integer|bigint|long|float|real|double|string"
    r"|binary|date|timestamp|timestamp_ntz|timestamp_ltz|void|variant"
    r"|(decimal|dec|numeric)(\(\s*\d+\s*(,\s*\d+\s*)?\))?|(varchar|char)\(\s*\d+\s*\)"
    r"|(array|map|struct)<.*>|interval\b.*)",
    re.IGNORECASE | re.DOTALL)
"""The column types of Spark's DDL (nested types are checked by their outer name only)."""


def data_files(path: Path, fmt: str) -> list[Path]:
    """The files of a data set: ``path`` itself, or a folder's ``*.fmt`` files in order."""
    if not path.is_dir():
        return [path]
    return sorted(p for p in path.rglob(f"*.{fmt}") if not p.name.startswith((".", "_")))


def file_columns(path: Path, fmt: str, wanted: Collection[str] = ()) -> list[str]:
    """Columns of the data set at ``path``, in first-seen order.

    ``wanted``: for JSON lines, stop reading a file once these were all seen.

    Raises:
        OptionError: naming ``input``, when a file cannot be read as ``fmt``.
    """
    columns: dict[str, None] = {}
    for file in data_files(path, fmt):
        try:
            columns.update(dict.fromkeys(_columns(file, fmt, set(wanted) - set(columns))))
        except (pa.ArrowException, OSError, UnicodeDecodeError, csv.Error) as error:
            raise OptionError("input", f"must be readable as {fmt} ({error})",
                              str(file)) from None
    return list(columns)


def first_readable_columns(folder: Path, fmt: str, wanted: Collection[str] = ()
                           ) -> list[str] | None:
    """Columns of a watched folder's oldest readable file (its stream's schema comes from it).

    Files are taken oldest first (by modification time, then path); one that cannot be read
    will be quarantined, so it is passed over. ``None``: no file can be read yet.
    """
    files = sorted(data_files(folder, fmt), key=lambda p: (p.stat().st_mtime_ns, str(p)))
    for file in files:
        try:
            return _columns(file, fmt, set(wanted))
        except (pa.ArrowException, OSError, UnicodeDecodeError, csv.Error):
            continue
    return None


def _columns(file: Path, fmt: str, wanted: set[str]) -> list[str]:
    if fmt == "parquet":
        return list(pq.read_schema(file).names)
    with file.open(newline="") as handle:
        if fmt == "csv":
            return next(csv.reader(handle), [])
        seen: dict[str, None] = {}
        for line in handle:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a malformed line goes to the dead letter, as the replay reads it
            if isinstance(record, dict):
                seen.update(dict.fromkeys(record))
            if wanted <= seen.keys():
                break
        return list(seen)


def ddl_columns(ddl: str) -> list[str]:
    """The column names of a Spark DDL schema, each entry checked for ``NAME TYPE``.

    >>> ddl_columns("ts timestamp, `my key` string, v decimal(10, 2), m map<string, int>")
    ['ts', 'my key', 'v', 'm']
    """
    names = []
    for entry in _top_level_split(ddl):
        match = re.fullmatch(r"\s*(`[^`]+`|[A-Za-z_]\w*)\s*:?\s+(.+?)\s*"
                             r"(\s+(NOT\s+NULL|COMMENT\s+'[^']*'))*\s*", entry,
                             re.IGNORECASE | re.DOTALL)
        if match is None or not DDL_TYPE.fullmatch(match.group(2)):
            raise OptionError("schema", "must be a DDL list of NAME TYPE, e.g. 'ts timestamp, "
                              "key string, v double'", entry.strip() or ddl)
        names.append(match.group(1).strip("`"))
    return names


def _top_level_split(text: str) -> list[str]:
    """``text`` split at the commas outside ``<…>`` and ``(…)``."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "<(") - (char in ">)")
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts
