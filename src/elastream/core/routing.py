"""Versioned routing tables (key group → slot) and their atomic publication on disk.

A new version takes effect at a micro-batch boundary, identically everywhere: it is Enorm's
modification punctuation. Versions are immutable; the store writes a version file first and only
then swaps the ``CURRENT`` pointer with an atomic rename, so a reader sees the old version or the
new one, never a torn file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from elastream.core.errors import OptionError
from elastream.core.plan import Move, Plan


@dataclass(frozen=True)
class RoutingTable:
    """Which slot owns each key group, at one version.

    >>> t = RoutingTable.hashed(num_key_groups=4, num_slots=2)
    >>> t.slot_of
    (0, 1, 0, 1)
    >>> t.apply([Move(key_group=0, source=0, target=1)]).slot_of
    (1, 1, 0, 1)
    """

    version: int
    slot_of: tuple[int, ...]
    num_slots: int

    def __post_init__(self) -> None:
        if self.num_slots < 1:
            raise OptionError("num_slots", "must be positive", self.num_slots)
        bad = [s for s in self.slot_of if not 0 <= s < self.num_slots]
        if bad:
            raise OptionError("slot_of", f"must name slots in [0, {self.num_slots})", bad[0])

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
                            self.num_slots if num_slots is None else num_slots)

    def apply_plan(self, plan: Plan) -> RoutingTable:
        """The next version after ``plan``, or ``self`` when the plan changes nothing."""
        if not plan.changes_routing:
            return self
        return self.apply(plan.moves, plan.num_slots)

    def to_json(self) -> str:
        """Serialised form, as stored by :class:`RoutingStore`."""
        return json.dumps(
            {"version": self.version, "num_slots": self.num_slots, "slot_of": list(self.slot_of)}
        )

    @classmethod
    def from_json(cls, text: str) -> RoutingTable:
        """Inverse of :meth:`to_json`."""
        data = json.loads(text)
        return cls(int(data["version"]), tuple(int(s) for s in data["slot_of"]),
                   int(data["num_slots"]))


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
