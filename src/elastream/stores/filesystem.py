"""One filesystem layer for what a job keeps beside its checkpoints: local disk, HDFS, S3, GCS.

Every store goes through a :class:`Folder` made by :func:`folder` from a local path or a URI:
the routing versions, their micro-batch bindings and owner records (hot keys travel inside the
versions), the routing history snapshot, the migration store, a job's metrics and the results
sink. ``str(folder)`` gives the location back, so a folder travels to Spark's Python workers
as text.

==========================  ===================================  ===============================
location                    filesystem                           kind
==========================  ===================================  ===============================
``/a/b``, ``file:///a/b``   the local disk, through ``os``       renames, links (POSIX)
``hdfs://``, ``viewfs://``  ``pyarrow.fs.HadoopFileSystem``      renames, never over a name
``s3://`` (``s3a://``)      ``pyarrow.fs.S3FileSystem``          object store: no rename
``gs://``, ``gcs://``       ``pyarrow.fs.GcsFileSystem``         object store: no rename
==========================  ===================================  ===============================

Any other scheme is refused by :class:`~elastream.core.errors.OptionError` naming the option.
S3 options ride on the URI as pyarrow reads them (``s3://KEY:SECRET@bucket/path?region=…&
endpoint_override=host:port&scheme=http``); without credentials in it, the usual AWS chain
(environment, ``~/.aws``, instance role) applies. One filesystem object serves every folder
of a bucket (or name node) in a process, so a Spark task pays no client start-up.

**How each operation stays atomic** (what readers see while writers run or die):

* :meth:`Folder.write` — an immutable file: whole or not there. Local disk and HDFS: written
  under a hidden temporary name (``.NAME.<uuid>.tmp``) in the same folder, then renamed into
  place. HDFS's rename does not overwrite (pyarrow would delete the old file first, leaving a
  moment without it), so there a name that exists already is kept: callers write a name with
  the same content every time (a retried batch's hand-off or results). Object stores: one
  upload; an object appears whole when its PUT (or multipart upload) completes, never before.
* :meth:`Folder.publish` / :meth:`Folder.latest` — a value replaced over time (the ``CURRENT``
  pointer, the routing history snapshot, the migration ledger, a scaling target); readers see
  the old value or the new one. Local disk: the temporary file is renamed over the name
  (``os.replace``). HDFS and object stores cannot replace atomically, so nothing is ever
  replaced there: each value is a new immutable object ``NAME.<sequence>``, the newest one
  is the value, and older ones are deleted once it is written. One writer per name (the
  driver); a reader that finds the newest deleted meanwhile lists again.
* :meth:`Folder.create_once` — a file that exactly one writer creates, whatever writers race.
  Local disk: a hard link of the temporary file, which fails when the name exists
  (:attr:`Folder.exclusive`). HDFS and object stores offer no exclusive create through pyarrow
  (S3's ``If-None-Match`` is not exposed; HDFS's create and rename are made to overwrite): the
  file is written unless it is seen, which is safe only when racing writers write the same
  bytes. :class:`~elastream.stores.routing_store.RoutingStore` uses it only where that holds,
  and lets the driver alone bind micro-batches to routing versions elsewhere.
* :meth:`Folder.append` — a log of text (metrics). Local disk: appended to the file. HDFS and
  object stores: each call writes an immutable ``NAME.<sequence>`` object (one writer per
  log: the folder lists once, then counts).
* :meth:`Folder.names`, :meth:`Folder.delete` — a listing (hidden temporaries left out) and a
  delete that is a no-op when the file is gone.

>>> import tempfile
>>> home = folder(tempfile.mkdtemp())
>>> (home / "v1").write("a", "whole")
>>> home.names(), (home / "v1").read_text("a")
(['v1'], 'whole')
>>> home.create_once("bound", "3"), home.create_once("bound", "4")
(b'3', b'3')
>>> folder("ftp://host/x", option="state_dir")
Traceback (most recent call last):
  ...
elastream.core.errors.OptionError: state_dir must be a local path or a file://, hdfs://, \
viewfs://, s3://, s3a://, gs://, gcs:// URI, got 'ftp://host/x'
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
from abc import ABC, abstractmethod
from pathlib import Path
from urllib.parse import SplitResult, unquote, urlsplit

import pyarrow.fs as pafs

from elastream.core.errors import OptionError

RENAMING = ("hdfs", "viewfs")
"""Schemes of filesystems that rename (HDFS), through pyarrow."""
OBJECT_STORES = {"s3": "s3", "s3a": "s3", "gs": "gs", "gcs": "gs"}
"""Schemes of object stores (no rename), and the scheme pyarrow knows each by."""
SCHEMES = ("file", *RENAMING, *OBJECT_STORES)


class Folder(ABC):
    """A folder on some filesystem, with the few operations elastream's stores need.

    Names are single path components; ``folder / name`` is a sub-folder. Reads raise
    :class:`FileNotFoundError` for a missing file.
    """

    exclusive: bool
    """Whether :meth:`create_once` is exclusive (exactly one racing writer wins)."""

    @abstractmethod
    def __truediv__(self, name: str) -> Folder:
        """The sub-folder ``name`` (nothing is created)."""

    @abstractmethod
    def __str__(self) -> str:
        """The location, as :func:`folder` takes it back."""

    @abstractmethod
    def read_bytes(self, name: str) -> bytes:
        """The content of file ``name``."""

    def read_text(self, name: str) -> str:
        """The content of file ``name`` as UTF-8 text."""
        return self.read_bytes(name).decode()

    @abstractmethod
    def exists(self, name: str) -> bool:
        """Whether file or sub-folder ``name`` exists."""

    @abstractmethod
    def names(self) -> list[str]:
        """Files and sub-folders directly in this folder (none if it does not exist)."""

    @abstractmethod
    def write(self, name: str, data: bytes | str) -> None:
        """Write immutable file ``name``: readers see all of it or nothing."""

    @abstractmethod
    def create_once(self, name: str, data: bytes | str) -> bytes:
        """Create file ``name`` unless it exists; return the content that stays."""

    @abstractmethod
    def publish(self, name: str, data: bytes | str) -> None:
        """Make ``data`` the value of ``name``: readers see the old value or the new one."""

    @abstractmethod
    def latest(self, name: str) -> bytes | None:
        """The value last published under ``name`` (``None``: never published)."""

    @abstractmethod
    def append(self, name: str, text: str) -> None:
        """Add ``text`` to the log ``name``."""

    @abstractmethod
    def delete(self, name: str) -> None:
        """Delete file ``name``; nothing happens when it is gone."""

    @abstractmethod
    def prune(self) -> None:
        """Remove this folder if it is empty (where folders exist apart from their files)."""


class LocalFolder(Folder):
    """A folder on the local disk: ``os`` calls, atomic renames and hard links."""

    exclusive = True

    def __init__(self, path: Path) -> None:
        self.path = path

    def __truediv__(self, name: str) -> LocalFolder:
        return LocalFolder(self.path / name)

    def __str__(self) -> str:
        return str(self.path)

    def read_bytes(self, name: str) -> bytes:  # noqa: D102
        return (self.path / name).read_bytes()

    def exists(self, name: str) -> bool:  # noqa: D102
        return (self.path / name).exists()

    def names(self) -> list[str]:  # noqa: D102
        try:
            return [n for n in os.listdir(self.path) if not n.startswith(".")]
        except FileNotFoundError:
            return []

    def write(self, name: str, data: bytes | str) -> None:  # noqa: D102
        os.replace(self._temporary(name, data), self.path / name)

    def create_once(self, name: str, data: bytes | str) -> bytes:  # noqa: D102
        tmp = self._temporary(name, data)
        try:
            os.link(tmp, self.path / name)
        except FileExistsError:
            pass  # another writer was first: its file counts
        finally:
            tmp.unlink()
        return self.read_bytes(name)

    publish = write  # a rename replaces the old file atomically

    def latest(self, name: str) -> bytes | None:  # noqa: D102
        try:
            return self.read_bytes(name)
        except FileNotFoundError:
            return None

    def append(self, name: str, text: str) -> None:  # noqa: D102
        self.path.mkdir(parents=True, exist_ok=True)
        with (self.path / name).open("a") as log:
            log.write(text)

    def delete(self, name: str) -> None:  # noqa: D102
        (self.path / name).unlink(missing_ok=True)

    def prune(self) -> None:  # noqa: D102
        with contextlib.suppress(OSError):  # not empty, or gone
            self.path.rmdir()

    def discard_temporaries(self) -> None:
        """Delete the temporary files that writers killed mid-write left here."""
        with contextlib.suppress(FileNotFoundError):
            for name in os.listdir(self.path):
                if name.startswith(".") and name.endswith(".tmp"):
                    (self.path / name).unlink(missing_ok=True)

    def _temporary(self, name: str, data: bytes | str) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / f".{name}.{uuid.uuid4().hex}.tmp"
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        return tmp


class ArrowFolder(Folder):
    """A folder on HDFS or an object store, through a ``pyarrow.fs.FileSystem``.

    ``renames``: write through a temporary file and a rename (HDFS, where a file being written
    is visible); otherwise each write is one upload (object stores).
    """

    exclusive = False

    def __init__(self, fs: pafs.FileSystem, path: str, location: SplitResult, *,
                 renames: bool) -> None:
        self.fs = fs
        self.path = path.rstrip("/")
        self.location = location
        self.renames = renames
        self._appended: dict[str, int] = {}

    def __truediv__(self, name: str) -> ArrowFolder:
        path = f"{self.location.path.rstrip('/')}/{name}"
        return ArrowFolder(self.fs, f"{self.path}/{name}", self.location._replace(path=path),
                           renames=self.renames)

    def __str__(self) -> str:
        return self.location.geturl()

    def _file(self, name: str) -> str:
        return f"{self.path}/{name}"

    def read_bytes(self, name: str) -> bytes:  # noqa: D102
        with self.fs.open_input_stream(self._file(name)) as stream:
            return bytes(stream.readall())

    def exists(self, name: str) -> bool:  # noqa: D102
        return bool(self.fs.get_file_info(self._file(name)).type != pafs.FileType.NotFound)

    def names(self) -> list[str]:  # noqa: D102
        listing = self.fs.get_file_info(pafs.FileSelector(self.path, allow_not_found=True))
        return [info.base_name for info in listing if not info.base_name.startswith(".")]

    def write(self, name: str, data: bytes | str) -> None:  # noqa: D102
        content = data.encode() if isinstance(data, str) else data
        if not self.renames:
            with self.fs.open_output_stream(self._file(name)) as stream:
                stream.write(content)
            return
        if self.exists(name):
            return  # HDFS renames never over a file; this name's content is the same
        tmp = self._file(f".{name}.{uuid.uuid4().hex}.tmp")
        self.fs.create_dir(self.path, recursive=True)
        with self.fs.open_output_stream(tmp) as stream:
            stream.write(content)
        self.fs.move(tmp, self._file(name))

    def create_once(self, name: str, data: bytes | str) -> bytes:  # noqa: D102
        if not self.exists(name):
            self.write(name, data)  # not exclusive: safe for writers of the same bytes
        return self.read_bytes(name)

    def publish(self, name: str, data: bytes | str) -> None:  # noqa: D102
        older = self._sequence(name)
        self.write(f"{name}.{(older[-1] if older else 0) + 1:012d}", data)
        for number in older:
            self.delete(f"{name}.{number:012d}")

    def latest(self, name: str) -> bytes | None:  # noqa: D102
        while True:
            numbers = self._sequence(name)
            if not numbers:
                return None
            try:
                return self.read_bytes(f"{name}.{numbers[-1]:012d}")
            except FileNotFoundError:
                continue  # a newer value replaced it meanwhile: list again

    def append(self, name: str, text: str) -> None:  # noqa: D102
        if name not in self._appended:
            older = self._sequence(name)
            self._appended[name] = older[-1] if older else 0
        self._appended[name] += 1
        self.write(f"{name}.{self._appended[name]:012d}", text)

    def delete(self, name: str) -> None:  # noqa: D102
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self._file(name))

    def prune(self) -> None:
        """Nothing: an object store has no folders; HDFS keeps the empty one.

        (Deleting it would race a writer adding a file: pyarrow deletes folders recursively.)
        """

    def _sequence(self, name: str) -> list[int]:
        """Sequence numbers of the ``NAME.<sequence>`` objects, in order."""
        prefix = f"{name}."
        return sorted(int(n[len(prefix):]) for n in self.names()
                      if n.startswith(prefix) and n[len(prefix):].isdigit())


def folder(location: str | os.PathLike[str] | Folder, *, option: str = "folder") -> Folder:
    """The folder at ``location``: a local path, or a URI of a scheme in :data:`SCHEMES`.

    ``option`` names the argument in the error raised for any other scheme.
    """
    if isinstance(location, Folder):
        return location
    text = os.fspath(location)
    scheme = _scheme(text)
    if scheme in ("", "file"):
        return LocalFolder(_local(text))
    if scheme not in SCHEMES:
        raise OptionError(option, "must be a local path or a "
                          + ", ".join(f"{s}://" for s in SCHEMES) + " URI", text)
    parts = urlsplit(text)
    fs = _filesystem(scheme, parts.netloc, parts.query)
    if scheme in RENAMING:
        return ArrowFolder(fs, parts.path, parts, renames=True)
    bucket = parts.netloc.rpartition("@")[2]
    return ArrowFolder(fs, f"{bucket}{parts.path}", parts, renames=False)


def local_path(location: str | os.PathLike[str], *, option: str) -> Path:
    """``location`` as a local path (a plain path or a ``file:`` URI); others are refused."""
    text = os.fspath(location)
    if _scheme(text) not in ("", "file"):
        raise OptionError(option, "must be a local path or a file:// URI", text)
    return _local(text)


def _scheme(text: str) -> str:
    """The URI scheme of ``text`` (lower case), ``""`` for a plain path."""
    if "://" not in text and not text.startswith("file:"):
        return ""
    return urlsplit(text).scheme.lower()


def _local(text: str) -> Path:
    return Path(unquote(urlsplit(text).path)) if _scheme(text) == "file" else Path(text)


@functools.cache
def _filesystem(scheme: str, netloc: str, query: str) -> pafs.FileSystem:
    """One pyarrow filesystem per bucket (or name node) and options, made on first use."""
    native = OBJECT_STORES.get(scheme, scheme)
    fs, _ = pafs.FileSystem.from_uri(f"{native}://{netloc}/?{query}" if query
                                     else f"{native}://{netloc}/")
    return fs
