"""Versioned routing tables (key group → slot, plus split hot keys) and their atomic publication.

A new version takes effect at a micro-batch boundary, identically everywhere: it is Enorm's
modification punctuation. Versions are immutable; the store writes a version file first and only
then swaps the ``CURRENT`` pointer with an atomic rename, so a reader sees the old version or the
new one, never a torn file.

**Versions are bound to micro-batches, not to the moment they are read.** The controller
publishes whenever a plan is ready, while micro-batches run back to back. The first reader of
micro-batch ``N`` (any stage, any task) *binds* ``N`` to the version current at that moment:
it creates ``batches/N`` exclusively (a hard link, which fails if the file exists), and every
later reader of ``N`` — the other stages of the batch, and every retry of it after a failure —
reads the version from there. A plan that is ready late thus takes effect at the first batch not
yet bound; versions published between two bindings are skipped as routing, but stay in the
history that names hand-offs.

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

import contextlib
import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from elastream.core.errors import OptionError
from elastream.core.plan import Move, Plan

HotKeys = tuple[tuple[int, tuple[int, ...]], ...]
"""Split hot keys: ``(key hash, slot of each bucket)`` pairs, sorted by key hash."""


@dataclass(frozen=True)
class RoutingTable:
    """Which slot owns each key group, and how split hot keys spread, at one version.

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

    def __post_init__(self) -> None:
        if self.num_slots < 1:
            raise OptionError("num_slots", "must be positive", self.num_slots)
        bad = [s for s in self.slot_of if not 0 <= s < self.num_slots]
        if bad:
            raise OptionError("slot_of", f"must name slots in [0, {self.num_slots})", bad[0])
        object.__setattr__(self, "hot_keys", check_hot_keys(self.hot_keys, self.num_slots))

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
                            self.num_slots if num_slots is None else num_slots, self.hot_keys)

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
        })

    @classmethod
    def from_json(cls, text: str) -> RoutingTable:
        """Inverse of :meth:`to_json`."""
        data = json.loads(text)
        hot = tuple((int(k), tuple(int(s) for s in b)) for k, b in data.get("hot_keys", ()))
        return cls(int(data["version"]), tuple(int(s) for s in data["slot_of"]),
                   int(data["num_slots"]), hot)


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
    """A directory of immutable routing versions plus an atomically swapped ``CURRENT`` pointer."""

    POINTER = "CURRENT"
    BATCHES = "batches"
    OWNERS = "owners"

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def version_path(self, version: int) -> Path:
        """File holding one version."""
        return self.directory / f"v{version:08d}.json"

    def publish(self, table: RoutingTable) -> None:
        """Write ``table`` and make it current; publishing the same version again is a no-op."""
        self.directory.mkdir(parents=True, exist_ok=True)
        current = self.current()
        if current is not None and table.version < current.version:
            raise ValueError(f"cannot publish routing version {table.version}: "
                             f"version {current.version} is already current")
        target = self.version_path(table.version)
        if not target.exists():
            atomic_write(target, table.to_json())
        atomic_write(self.directory / self.POINTER, target.name)

    def get(self, version: int) -> RoutingTable:
        """One published version."""
        return RoutingTable.from_json(self.version_path(version).read_text())

    def current(self) -> RoutingTable | None:
        """The current version, or ``None`` if nothing was published yet."""
        version = self.current_version()
        return None if version is None else self.get(version)

    def current_version(self) -> int | None:
        """The current version's number, or ``None`` if nothing was published yet."""
        pointer = self.directory / self.POINTER
        if not pointer.exists():
            return None
        return int(pointer.read_text().strip().removeprefix("v").removesuffix(".json"))

    def binding_path(self, batch_id: int) -> Path:
        """File naming the version micro-batch ``batch_id`` routes by."""
        return self.directory / self.BATCHES / f"{batch_id:012d}"

    def bound(self, batch_id: int) -> int | None:
        """The version bound to micro-batch ``batch_id``, or ``None`` while it is unbound."""
        path = self.binding_path(batch_id)
        return int(path.read_text()) if path.exists() else None

    def bind(self, batch_id: int) -> RoutingTable:
        """The version micro-batch ``batch_id`` routes by: bound now if no reader bound it yet.

        Exactly one version wins for a batch, whatever readers race: the binding file is
        created by a hard link, which fails when the name exists.
        """
        if batch_id < 0:
            raise ValueError(f"batch_id must be >= 0, got {batch_id}")
        version = self.bound(batch_id)
        if version is None:
            current = self.current_version()
            if current is None:
                raise ValueError(f"no routing version published in {self.directory}")
            version = _create_once(self.binding_path(batch_id), str(current))
        return self.get(version)

    def set_owner(self, batch_id: int, version: int) -> None:
        """From micro-batch ``batch_id`` on, key-group state is owned as at ``version``.

        Idempotent: the first record for a batch stays (a retried batch writes the same one).
        """
        _create_once(self.directory / self.OWNERS / f"{batch_id:012d}", str(version))

    def owner(self, batch_id: int) -> int:
        """The owner version of micro-batch ``batch_id``: the latest record at or before it."""
        folder = self.directory / self.OWNERS
        records = sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) \
            if folder.exists() else []
        at = [b for b in records if b <= batch_id]
        if not at:
            raise ValueError(f"no owner version recorded for batch {batch_id} in "
                             f"{self.directory}")
        return int((folder / f"{at[-1]:012d}").read_text())

    def has_owner(self) -> bool:
        """Whether any owner version was recorded (a job's first start records one)."""
        folder = self.directory / self.OWNERS
        return folder.exists() and any(p.name.isdigit() for p in folder.iterdir())

    def bindings(self) -> dict[int, int]:
        """Every recorded binding, batch id → version."""
        folder = self.directory / self.BATCHES
        if not folder.exists():
            return {}
        return {int(p.name): int(p.read_text()) for p in folder.iterdir()
                if p.name.isdigit()}

    def forget_bindings(self, below: int) -> None:
        """Forget what micro-batches before ``below`` (committed: never re-run) were bound to.

        Owner records go too, but for the latest at or before ``below``, which still counts.
        """
        folder = self.directory / self.BATCHES
        stale = [p for p in folder.iterdir() if p.name.isdigit() and int(p.name) < below] \
            if folder.exists() else []
        owners = self.directory / self.OWNERS
        if owners.exists():
            records = sorted((int(p.name), p) for p in owners.iterdir() if p.name.isdigit())
            kept = [b for b, _ in records if b <= below]
            stale += [p for b, p in records if kept and b < kept[-1]]
        for path in stale:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def forget_versions(self, below: int) -> None:
        """Delete the published versions before ``below`` (no batch that may still run uses them).

        The current version always stays.
        """
        current = self.current_version()
        for path in self.directory.glob("v*.json"):
            version = int(path.stem.removeprefix("v"))
            if version < below and version != current:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()


def _create_once(path: Path, text: str) -> int:
    """Create ``path`` holding ``text`` unless it exists; return the number it holds.

    Exactly one writer wins whatever writers race: the file is linked into place, which fails
    when the name exists.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(text)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another writer was first: its record counts
    finally:
        tmp.unlink()
    return int(path.read_text())


def atomic_write(path: Path, content: str | bytes) -> None:
    """Replace ``path`` by ``content`` at once: readers see the old file or the new one."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        tmp.write_text(content)
    os.replace(tmp, path)
