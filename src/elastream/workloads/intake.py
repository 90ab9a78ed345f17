"""A watched folder's files, taken into a stream one by one: checked, converted or quarantined.

Spark's file stream fails its query on the first file it cannot read: a Parquet file with
nanosecond timestamps (what pandas writes by default), a column whose type differs from the
stream's, a truncated or empty file. A service must not stop for that, so a watched folder is
not read by Spark directly. :class:`FolderIntake` looks at each new file first, oldest first
(by modification time, then path, as Spark orders them), and

* takes it into the folder the stream reads (``target``), under the same relative path: a
  hard link when Spark can read it as it is (a copy across file systems), else a converted
  Parquet file with the source's modification time: nanosecond timestamps to microseconds
  (sub-microsecond digits dropped), and numbers widened to the stream's type (``int32`` to
  ``int64`` or ``double``);
* or, when it cannot be read or converted, *quarantines* it: one line in the quarantine list
  (``{"file", "reason", "size", "mtime_ns", "at"}``), the file left where it is. A quarantined
  file that changes later (another size or modification time: fixed in place) is looked at
  again. A column of another kind than the stream's (text for a number, a number for a time)
  is quarantined, not guessed at.

What each file became is kept in ``taken.jsonl`` beside the target, so a restarted intake
takes no file twice; a file taken just before a kill is taken again under the same name, which
Spark's file stream has seen, so it reads it once. Checks by format: Parquet, the whole file
is read (footer and pages) and its columns' types compared with the stream's schema; CSV, the
header must name the stream's columns in order (Spark reads CSV columns by position); JSON
lines are taken as they are (Spark sends malformed lines to the stream as nulls).

>>> import tempfile, pandas as pd
>>> home = Path(tempfile.mkdtemp())
>>> (home / "in").mkdir()
>>> pd.DataFrame({"ts": pd.to_datetime(["2024-01-01 10:00:00.000000001"]), "v": [1.5]}
...              ).to_parquet(home / "in" / "a.parquet")
>>> _ = (home / "in" / "b.parquet").write_bytes(b"not parquet")
>>> intake = FolderIntake(home / "in", home / "work", "parquet", home / "quarantine.jsonl")
>>> [q.file for q in intake.take()], [p.name for p in intake.taken()]
(['b.parquet'], ['a.parquet'])
>>> pq.ParquetFile(home / "work" / "input" / "a.parquet").schema_arrow.field("ts").type
TimestampType(timestamp[us])
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

TAKEN = "taken.jsonl"
INPUT = "input"
SPARK_READS_TIMESTAMPS = ("ms", "us")
"""Parquet timestamp units Spark reads; nanoseconds it refuses."""


@dataclass(frozen=True)
class Quarantined:
    """A file of the watched folder that the stream does not read, and why."""

    file: str
    reason: str


class UnreadableFileError(Exception):
    """A file cannot be taken into the stream; the message says why."""


class FolderIntake:
    """Takes the files arriving in ``source`` into ``work/input``; quarantines to ``quarantine``.

    ``fmt``: the files' format (their suffix); ``schema``: the stream's columns as Arrow types
    (``None`` until known: files are then only read through and their nanosecond timestamps
    converted).
    """

    def __init__(self, source: Path, work: Path, fmt: str, quarantine: Path,
                 schema: pa.Schema | None = None) -> None:
        self.source = source
        self.target = work / INPUT
        self.book = work / TAKEN
        self.quarantine = quarantine
        self.fmt = fmt
        self.schema = schema
        self.target.mkdir(parents=True, exist_ok=True)
        self._done = {**_seen(self.book), **_seen(self.quarantine)}

    def taken(self) -> list[Path]:
        """The files taken so far, in the target folder, in the order they were taken."""
        return [self.target / str(entry["file"]) for entry in _entries(self.book)]

    def quarantined(self) -> list[Quarantined]:
        """The files in quarantine now (a file taken after it was fixed is no longer)."""
        return self.quarantined_in(self.book, self.quarantine)

    @staticmethod
    def quarantined_in(book: Path, quarantine: Path) -> list[Quarantined]:
        """:meth:`quarantined` of the intake whose books are ``book`` and ``quarantine``."""
        taken = set(_seen(book))
        found = {str(e["file"]): str(e["reason"]) for e in _entries(quarantine)
                 if e["file"] not in taken}
        return [Quarantined(file, reason) for file, reason in found.items()]

    def pending(self) -> list[Path]:
        """New files of the source folder (or quarantined ones changed since), oldest first."""
        files = []
        for path in self.source.rglob(f"*.{self.fmt}"):
            relative = path.relative_to(self.source)
            if any(part.startswith((".", "_")) for part in relative.parts):
                continue
            stat = path.stat()
            if self._done.get(str(relative)) != [stat.st_size, stat.st_mtime_ns]:
                files.append((stat.st_mtime_ns, str(relative), path))
        return [path for _, _, path in sorted(files)]

    def take(self, most: int | None = None) -> list[Quarantined]:
        """Take the pending files in order; return the files quarantined meanwhile.

        ``most``: stop once that many were taken (the first file, which gives the schema).
        """
        quarantined: list[Quarantined] = []
        taken = 0
        for path in self.pending():
            if most is not None and taken >= most:
                break
            relative = str(path.relative_to(self.source))
            stat = path.stat()
            entry = {"file": relative, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
            try:
                self._publish(path, relative, stat.st_mtime_ns)
                _append(self.book, entry)
                taken += 1
            except UnreadableFileError as error:
                quarantined.append(Quarantined(relative, str(error)))
                _append(self.quarantine, {**entry, "reason": str(error),
                                          "at": datetime.now(UTC).isoformat(timespec="seconds")})
            self._done[relative] = [stat.st_size, stat.st_mtime_ns]
        return quarantined

    def _publish(self, path: Path, relative: str, mtime_ns: int) -> None:
        """Place ``path`` at ``target/relative``: whole, under a hidden name first."""
        final = self.target / relative
        final.parent.mkdir(parents=True, exist_ok=True)
        hidden = final.with_name(f".{final.name}.tmp")
        hidden.unlink(missing_ok=True)
        converted = self._check(path)
        if converted is None:
            try:
                os.link(path, hidden)
            except OSError:  # another file system: a copy, keeping the modification time
                shutil.copy2(path, hidden)
        else:
            pq.write_table(converted, hidden)
            os.utime(hidden, ns=(mtime_ns, mtime_ns))
        os.replace(hidden, final)

    def _check(self, path: Path) -> pa.Table | None:
        """The converted table Spark needs instead of ``path``, or ``None`` to take it as is."""
        if self.fmt == "parquet":
            return _parquet(path, self.schema)
        if self.fmt == "csv" and self.schema is not None:
            _check_header(path, self.schema.names)
        return None


def _parquet(path: Path, schema: pa.Schema | None) -> pa.Table | None:
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as error:
        raise UnreadableFileError(f"not a readable Parquet file ({_first_line(error)})") \
            from None
    casts = {field.name: wanted for field in table.schema
             if (wanted := _cast_to(field, schema)) is not None}
    for name, wanted in casts.items():
        found = table.schema.field(name).type
        try:
            column = pc.cast(table[name], wanted, safe=not pa.types.is_timestamp(found))
        except (pa.ArrowException, ValueError) as error:
            raise UnreadableFileError(f"column {name}: {found} does not fit {wanted} "
                                      f"({_first_line(error)})") from None
        table = table.set_column(table.schema.get_field_index(name), name, column)
    return table if casts else None


def _cast_to(field: pa.Field, schema: pa.Schema | None) -> pa.DataType | None:
    """The type a column must be cast to for Spark (``None``: readable as it is).

    Converted: nanosecond timestamps (to microseconds, the time zone kept: Spark reads a naive
    timestamp as written), and numbers into a wider type of the stream's (an ``int32`` column
    for an ``int64`` or ``double`` one). Any other type than the stream's is refused.
    """
    found = field.type
    wanted = schema.field(field.name).type if schema is not None and \
        field.name in schema.names else None
    if pa.types.is_timestamp(found) and (wanted is None or pa.types.is_timestamp(wanted)):
        return None if found.unit in SPARK_READS_TIMESTAMPS else pa.timestamp("us", tz=found.tz)
    if wanted is None or found == wanted or _large_twin(found, wanted):
        return None
    if _widens(found, wanted):
        return wanted
    raise UnreadableFileError(f"column {field.name} is {found}, the stream's is {wanted}")


def _widens(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether every value of ``found`` is one of ``wanted``: a wider integer or float."""
    if pa.types.is_integer(found) and pa.types.is_integer(wanted):
        return bool(wanted.bit_width >= found.bit_width
                    and pa.types.is_signed_integer(wanted) >= pa.types.is_signed_integer(found))
    if pa.types.is_integer(found) and pa.types.is_floating(wanted):
        return True
    return bool(pa.types.is_floating(found) and pa.types.is_floating(wanted)
                and wanted.bit_width >= found.bit_width)


def _large_twin(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Types Parquet stores alike: string and large string, binary and large binary."""
    pairs = {(pa.large_string(), pa.string()), (pa.large_binary(), pa.binary())}
    return (found, wanted) in pairs or (wanted, found) in pairs


def _check_header(path: Path, names: list[str]) -> None:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError) as error:
        raise UnreadableFileError(f"not a readable CSV file ({_first_line(error)})") from None
    if header != names:
        raise UnreadableFileError(f"its header ({', '.join(header) or 'none'}) is not the stream's "
                         f"columns in order ({', '.join(names)})")


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _entries(path: Path) -> Iterator[dict[str, object]]:
    """A JSON-lines book's entries; a line torn by a kill is skipped."""
    if not path.is_file():
        return
    for line in path.read_text().splitlines():
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            continue


def _seen(path: Path) -> dict[str, list[int]]:
    """Each file of a book with the size and modification time it had when looked at."""
    return {str(e["file"]): [int(str(e["size"])), int(str(e["mtime_ns"]))]
            for e in _entries(path)}


def _append(path: Path, entry: dict[str, object]) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(entry) + "\n")
