"""The routing store: versions of routing tables, their atomic publication and batch bindings.

A new version takes effect at a micro-batch boundary, identically everywhere: it is Enorm's
modification punctuation. Versions are immutable; the store writes a version file first and only
then publishes the ``CURRENT`` pointer (an atomic rename on a local disk, a new pointer object on
HDFS and object stores: :mod:`elastream.stores.filesystem`), so a reader sees the old version or
the new one, never a torn file.

**Versions are bound to micro-batches, not to the moment they are read.** The controller
publishes whenever a plan is ready, while micro-batches run back to back. The first reader of
micro-batch ``N`` (any stage, any task) *binds* ``N`` to the version current at that moment:
it creates ``batches/N`` exclusively (a hard link, which fails if the file exists), and every
later reader of ``N`` — the other stages of the batch, and every retry of it after a failure —
reads the version from there. Where no exclusive create exists (HDFS and object stores through
pyarrow) the first reader asks the driver instead, which binds ``N`` alone
(:meth:`RoutingStore.bind_requested`, run by :class:`elastream.control.binder.Binder`). A plan
that is ready late thus takes effect at the first batch not yet bound; versions published
between two bindings are skipped as routing, but stay in the history that names hand-offs.

**Owners change one watermark step later.** The stage that keeps a key group's window state
(the consolidate stage) groups by an *owner* version, which lags: a batch in which the
watermark advances records, for the batches after it, the version it was bound to
(:meth:`RoutingStore.set_owner`); :meth:`RoutingStore.owner` is the latest such record. The old
owner thus emits every window the watermark closed and hands the rest of the state off in that
batch, and the new owner, from the next batch with work on, always finds it.

>>> import tempfile
>>> from elastream.core.plan import Move
>>> store = RoutingStore(tempfile.mkdtemp())
>>> store.publish(RoutingTable.hashed(4, 2))
>>> store.bind(0).version
0
>>> store.publish(RoutingTable.hashed(4, 2).apply([Move(0, 0, 1)]))
>>> store.bind(0).version, store.bind(1).version, store.bound(1)
(0, 1, 1)
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from elastream.core.routing import RoutingTable
from elastream.stores.filesystem import Folder, LocalFolder, folder

ROUTING_FOLDER = "_routing"
"""Where a job keeps its :class:`RoutingStore`, under its state folder."""


class RoutingStore:
    """Immutable routing versions, the current one, and what each micro-batch is bound to.

    ``directory``: a local path or a URI (:func:`elastream.stores.filesystem.folder`). On a
    filesystem without exclusive create (HDFS, object stores) the driver alone binds
    micro-batches: a reader of an unbound batch asks for its binding (``requests/N``) and
    waits until the driver's :meth:`bind_requested` wrote it (see :meth:`bind`).
    """

    POINTER = "CURRENT"
    BATCHES = "batches"
    OWNERS = "owners"
    REQUESTS = "requests"
    WAIT_SECONDS = 0.01
    """How often a reader looks for the binding it asked the driver for."""
    WAIT_LIMIT_SECONDS = 600.0
    """How long it waits before it fails."""

    def __init__(self, directory: str | os.PathLike[str] | Folder) -> None:
        self.folder = folder(directory, option="directory")

    @property
    def directory(self) -> Path | str:
        """The store's folder: a ``Path`` on the local disk, else its URI."""
        return self.folder.path if isinstance(self.folder, LocalFolder) else str(self.folder)

    @staticmethod
    def version_name(version: int) -> str:
        """File holding one version."""
        return f"v{version:08d}.json"

    def publish(self, table: RoutingTable) -> None:
        """Write ``table`` and make it current; publishing the same version again is a no-op."""
        current = self.current()
        if current is not None and table.version < current.version:
            raise ValueError(f"cannot publish routing version {table.version}: "
                             f"version {current.version} is already current")
        if current is not None and table.version == current.version:
            return
        name = self.version_name(table.version)
        if not self.folder.exists(name):
            self.folder.write(name, table.to_json())
        self.folder.publish(self.POINTER, name)

    def get(self, version: int) -> RoutingTable:
        """One published version."""
        return RoutingTable.from_json(self.folder.read_text(self.version_name(version)))

    def current(self) -> RoutingTable | None:
        """The current version, or ``None`` if nothing was published yet."""
        version = self.current_version()
        return None if version is None else self.get(version)

    def current_version(self) -> int | None:
        """The current version's number, or ``None`` if nothing was published yet."""
        pointer = self.folder.latest(self.POINTER)
        if pointer is None:
            return None
        return int(pointer.decode().strip().removeprefix("v").removesuffix(".json"))

    def bound(self, batch_id: int) -> int | None:
        """The version bound to micro-batch ``batch_id``, or ``None`` while it is unbound."""
        try:
            return int((self.folder / self.BATCHES).read_text(f"{batch_id:012d}"))
        except FileNotFoundError:
            return None

    def bind(self, batch_id: int) -> RoutingTable:
        """The version micro-batch ``batch_id`` routes by: bound now if no reader bound it yet.

        Exactly one version wins for a batch, whatever readers race: on a local disk the
        binding file is created by a hard link, which fails when the name exists; elsewhere
        the reader asks the driver, the only writer of bindings there, and waits for it.
        """
        if batch_id < 0:
            raise ValueError(f"batch_id must be >= 0, got {batch_id}")
        version = self.bound(batch_id)
        if version is None and self.folder.exclusive:
            current = self.current_version()
            if current is None:
                raise ValueError(f"no routing version published in {self.folder}")
            version = int((self.folder / self.BATCHES).create_once(f"{batch_id:012d}",
                                                                   str(current)))
        elif version is None:
            version = self._await_binding(batch_id)
        return self.get(version)

    def _await_binding(self, batch_id: int) -> int:
        """Ask the driver to bind ``batch_id`` (filesystems without exclusive create)."""
        (self.folder / self.REQUESTS).write(f"{batch_id:012d}", b"")
        deadline = time.monotonic() + self.WAIT_LIMIT_SECONDS
        while (version := self.bound(batch_id)) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"micro-batch {batch_id} was not bound to a routing version in "
                    f"{self.WAIT_LIMIT_SECONDS:.0f} s: on {self.folder} (no exclusive create) "
                    "the job's driver binds micro-batches; is its binder running?")
            time.sleep(self.WAIT_SECONDS)
        return version

    def bind_requested(self) -> list[int]:
        """Bind every micro-batch a reader asked for to the current version (the driver's part).

        The driver is then the only writer of bindings, so one version wins per batch without
        exclusive create. Returns the batches bound now.
        """
        requests = self.folder / self.REQUESTS
        asked = _numbered(requests)
        current = self.current_version() if asked else None
        if current is None:
            return []
        done = []
        for batch_id in asked:
            if self.bound(batch_id) is None:
                (self.folder / self.BATCHES).write(f"{batch_id:012d}", str(current))
                done.append(batch_id)
            requests.delete(f"{batch_id:012d}")
        return done

    def set_owner(self, batch_id: int, version: int) -> None:
        """From micro-batch ``batch_id`` on, key-group state is owned as at ``version``.

        Idempotent: the first record for a batch stays. Its writers (the slots of one batch,
        and its retries) all write the batch's bound version, so the record needs no
        exclusive create.
        """
        (self.folder / self.OWNERS).create_once(f"{batch_id:012d}", str(version))

    def owner(self, batch_id: int) -> int:
        """The owner version of micro-batch ``batch_id``: the latest record at or before it."""
        owners = self.folder / self.OWNERS
        at = [b for b in _numbered(owners) if b <= batch_id]
        if not at:
            raise ValueError(f"no owner version recorded for batch {batch_id} in "
                             f"{self.folder}")
        return int(owners.read_text(f"{at[-1]:012d}"))

    def has_owner(self) -> bool:
        """Whether any owner version was recorded (a job's first start records one)."""
        return bool(_numbered(self.folder / self.OWNERS))

    def bindings(self) -> dict[int, int]:
        """Every recorded binding, batch id → version."""
        batches = self.folder / self.BATCHES
        return {b: int(batches.read_text(f"{b:012d}")) for b in _numbered(batches)}

    def forget_bindings(self, below: int) -> None:
        """Forget what micro-batches before ``below`` (committed: never re-run) were bound to.

        Owner records go too, but for the latest at or before ``below``, which still counts.
        """
        batches, owners = self.folder / self.BATCHES, self.folder / self.OWNERS
        for batch_id in _numbered(batches):
            if batch_id < below:
                batches.delete(f"{batch_id:012d}")
        records = _numbered(owners)
        kept = [b for b in records if b <= below]
        for batch_id in records:
            if kept and batch_id < kept[-1]:
                owners.delete(f"{batch_id:012d}")

    def forget_versions(self, below: int) -> None:
        """Delete the published versions before ``below`` (no batch that may still run uses them).

        The current version always stays.
        """
        current = self.current_version()
        for name in self.folder.names():
            match = _VERSION.match(name)
            if match and int(match[1]) < below and int(match[1]) != current:
                self.folder.delete(name)


_VERSION = re.compile(r"^v(\d+)\.json$")


def _numbered(records: Folder) -> list[int]:
    """The numbers of a folder's numbered files (batch ids), in order."""
    return sorted(int(n) for n in records.names() if n.isdigit())
