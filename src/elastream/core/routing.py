"""Versioned routing tables: key group → slot, plus split hot keys, and their plans.

A table is immutable: applying a plan's moves gives the next version. Where versions are kept
and how each micro-batch is bound to one is :mod:`elastream.stores.routing_store`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from elastream.core import rules
from elastream.core.errors import OptionError
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
