"""Versioned routing tables (key group → slot, plus split hot keys) and their atomic publication.

A new version takes effect at a micro-batch boundary, identically everywhere: it is Enorm's
modification punctuation. Versions are immutable; the store writes a version file first and only
then publishes the ``CURRENT`` pointer (an atomic rename on a local disk, a new pointer object on
HDFS and object stores: :mod:`elastream.core.filesystem`), so a reader sees the old version or
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
>>> store = RoutingStore(tempfile.mkdtemp())
>>> store.publish(RoutingTable.hashed(4, 2))
>>> store.bind(0).version
0
>>> store.publish(RoutingTable.hashed(4, 2).apply([Move(0, 0, 1)]))
>>> store.bind(0).version, store.bind(1).version, store.bound(1)
(0, 1, 1)
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.filesystem import Folder, LocalFolder, folder
from elastream.core.plan import Move, Plan

HotKeys = tuple[tuple[int, tuple[int, ...]], ...]
"""Split hot keys: ``(key hash, slot of each bucket)`` pairs, sorted by key hash."""
Smooth = tuple[tuple[int, int, int], ...]
"""``(key group, old slot, boundary ms)`` of each key group in a smooth migration."""
EXECUTIONS = ("split", "combine")
"""How the batches routed by a version build windows (Enorm §5.1): panes, or window partials."""


@dataclass(frozen=True)
class RoutingTable:
    """Which slot owns each key group, and how split hot keys spread, at one version.

    ``execution``: whether the micro-batches routed by this version reduce records to pane
    partials (``split``) or to window partials (``combine``, :mod:`elastream.algorithms.
    windows.combine`); the consolidate stage merges both, so a job may switch at any version.

    ``hot_keys`` overrides the key group for a few keys (FISH, :mod:`elastream.algorithms.
    balance.fish_split`): a record of hot key ``h`` (the key's 64-bit hash, the one key groups
    are taken from) goes to the slot of bucket ``salt mod B`` of ``h``'s ``B`` buckets, where
    ``salt`` is a hash of the whole record. A key's partials may then sit in several slots;
    the consolidate stage merges them, so results do not depend on the split.

    >>> t = RoutingTable.hashed(num_key_groups=4, num_slots=2)
    >>> t.slot_of
    (0, 1, 0, 1)
    >>> t.apply([Move(key_group=0, source=0, target=1)]).slot_of
    (1, 1, 0, 1)
    """

    version: int
    slot_of: tuple[int, ...]
    num_slots: int
    hot_keys: HotKeys = ()
    smooth: Smooth = ()
    execution: str = "split"

    def __post_init__(self) -> None:
        rules.choice("execution", self.execution, EXECUTIONS)
        rules.integer("num_slots", self.num_slots)
        bad = [s for s in self.slot_of if not 0 <= s < self.num_slots]
        if bad:
            raise OptionError("slot_of", f"must name slots in [0, {self.num_slots})", bad[0])
        object.__setattr__(self, "hot_keys", check_hot_keys(self.hot_keys, self.num_slots))
        object.__setattr__(self, "smooth", tuple(sorted(
            (int(kg), int(old), int(boundary)) for kg, old, boundary in self.smooth)))
        if len({kg for kg, _, _ in self.smooth}) < len(self.smooth):
            raise OptionError("smooth", "must name each key group once", self.smooth)

    def smooth_moves(self) -> dict[int, tuple[int, int]]:
        """Key groups in a smooth migration: ``kg → (old slot, boundary ms)``.

        The old slot still owns the windows of ``kg`` that start before the boundary (and
        gets its pane partials up to the boundary plus the longest window); the slot in
        ``slot_of`` owns those that start at or after it (Enorm §4.5).
        """
        return {kg: (old, boundary) for kg, old, boundary in self.smooth}

    @classmethod
    def hashed(cls, num_key_groups: int, num_slots: int, version: int = 0) -> RoutingTable:
        """The initial table: key group ``kg`` on slot ``kg mod num_slots``."""
        return cls(version, tuple(kg % num_slots for kg in range(num_key_groups)), num_slots)

    @property
    def num_key_groups(self) -> int:
        """G, the fixed number of key groups."""
        return len(self.slot_of)

    def as_array(self) -> np.ndarray:
        """The table as an int64 array indexed by key group."""
        return np.asarray(self.slot_of, dtype=np.int64)

    def apply(self, moves: Sequence[Move], num_slots: int | None = None) -> RoutingTable:
        """The next version with ``moves`` applied; a move's source must be the current owner."""
        slots = list(self.slot_of)
        for move in moves:
            if not 0 <= move.key_group < len(slots):
                raise ValueError(f"move names key group {move.key_group}, "
                                 f"outside [0, {len(slots)})")
            if slots[move.key_group] != move.source:
                raise ValueError(
                    f"move of key group {move.key_group} names source {move.source}, "
                    f"but its slot is {slots[move.key_group]}"
                )
            slots[move.key_group] = move.target
        return RoutingTable(self.version + 1, tuple(slots),
                            self.num_slots if num_slots is None else num_slots, self.hot_keys,
                            self.smooth, self.execution)

    def apply_plan(self, plan: Plan) -> RoutingTable:
        """The next version after ``plan``, or ``self`` when the plan changes nothing."""
        hot = plan.hot_keys
        if hot is not None and check_hot_keys(hot, plan.num_slots or self.num_slots) \
                == self.hot_keys:
            hot = None  # the same split again: no new version
        if not plan.moves and plan.num_slots is None and hot is None:
            return self
        moved = self.apply(plan.moves, plan.num_slots)
        return moved if hot is None else replace(moved, hot_keys=hot)

    def to_json(self) -> str:
        """Serialised form, as stored by :class:`RoutingStore`."""
        return json.dumps({
            "version": self.version, "num_slots": self.num_slots, "slot_of": list(self.slot_of),
            "hot_keys": [[key, list(buckets)] for key, buckets in self.hot_keys],
            **({"smooth": [list(entry) for entry in self.smooth]} if self.smooth else {}),
            **({"execution": self.execution} if self.execution != "split" else {}),
        })

    @classmethod
    def from_json(cls, text: str) -> RoutingTable:
        """Inverse of :meth:`to_json`."""
        data = json.loads(text)
        hot = tuple((int(k), tuple(int(s) for s in b)) for k, b in data.get("hot_keys", ()))
        smooth = tuple((int(kg), int(old), int(b)) for kg, old, b in data.get("smooth", ()))
        return cls(int(data["version"]), tuple(int(s) for s in data["slot_of"]),
                   int(data["num_slots"]), hot, smooth, str(data.get("execution", "split")))


def check_hot_keys(hot_keys: HotKeys, num_slots: int) -> HotKeys:
    """``hot_keys`` sorted by key hash, each with ≥ 1 bucket naming a slot in ``[0, num_slots)``.

    >>> check_hot_keys(((7, (1, 0)), (-3, (0,))), 2)
    ((-3, (0,)), (7, (1, 0)))
    """
    ordered = tuple(sorted((int(k), tuple(int(s) for s in b)) for k, b in hot_keys))
    keys = [k for k, _ in ordered]
    if len(set(keys)) != len(keys):
        raise OptionError("hot_keys", "must name each key hash once", keys)
    for key, buckets in ordered:
        if not buckets or not all(0 <= s < num_slots for s in buckets):
            raise OptionError("hot_keys", f"must give key {key} ≥ 1 bucket, each a slot in "
                              f"[0, {num_slots})", list(buckets))
    return ordered


ROUTING_FOLDER = "_routing"
"""Where a job keeps its :class:`RoutingStore`, under its state folder."""


class RoutingStore:
    """Immutable routing versions, the current one, and what each micro-batch is bound to.

    ``directory``: a local path or a URI (:func:`elastream.core.filesystem.folder`). On a
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
