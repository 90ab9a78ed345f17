"""Versioned routing tables (key group → slot, plus split hot keys) and their atomic publication.

A new version takes effect at a micro-batch boundary, identically everywhere: it is Enorm's
modification punctuation. Versions are immutable; the store writes a version file first and only
then swaps the ``CURRENT`` pointer with an atomic rename, so a reader sees the old version or the
new one, never a torn file.
"""

from __future__ import annotations

import json
import os
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


class RoutingStore:
    """A directory of immutable routing versions plus an atomically swapped ``CURRENT`` pointer."""

    POINTER = "CURRENT"

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
            _atomic_write(target, table.to_json())
        _atomic_write(self.directory / self.POINTER, target.name)

    def get(self, version: int) -> RoutingTable:
        """One published version."""
        return RoutingTable.from_json(self.version_path(version).read_text())

    def current(self) -> RoutingTable | None:
        """The current version, or ``None`` if nothing was published yet."""
        pointer = self.directory / self.POINTER
        if not pointer.exists():
            return None
        return RoutingTable.from_json((self.directory / pointer.read_text().strip()).read_text())


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
