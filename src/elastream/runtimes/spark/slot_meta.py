"""A consolidate slot's bookkeeping, kept in its ``meta`` value state beside its key groups."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

NOT_YET = -(1 << 62)
"""``upto`` of a consolidation slot that has emitted nothing yet."""


@dataclass
class SlotMeta:
    """A slot's bookkeeping: emitted-up-to mark, heartbeat timer, migration book, key groups.

    ``pending``: key groups gained whose hand-off has not arrived (their parts wait);
    ``received`` / ``handed``: per key group, the version of the last hand-off taken over /
    written; ``held``: key groups with an entry in the parts map. ``leaving`` / ``joining``:
    key groups in a smooth migration away from / to this slot, with its boundary: the slot
    emits their windows that start before / at or after it.
    """

    upto: int = NOT_YET
    heartbeat: int | None = None
    pending: set[int] = field(default_factory=set)
    received: dict[int, int] = field(default_factory=dict)
    handed: dict[int, int] = field(default_factory=dict)
    held: set[int] = field(default_factory=set)
    leaving: dict[int, int] = field(default_factory=dict)
    joining: dict[int, int] = field(default_factory=dict)

    def book(self) -> str:
        """Everything but the marks, as JSON."""
        return json.dumps({"pending": sorted(self.pending), "held": sorted(self.held),
                           "received": sorted(map(list, self.received.items())),
                           "handed": sorted(map(list, self.handed.items())),
                           "leaving": sorted(map(list, self.leaving.items())),
                           "joining": sorted(map(list, self.joining.items()))})

    @classmethod
    def of(cls, upto: int, heartbeat: int | None, book: str | None) -> SlotMeta:
        """Rebuild from the stored marks and book."""
        data = json.loads(book) if book else {}
        return cls(int(upto), None if heartbeat is None else int(heartbeat),
                   set(data.get("pending", [])),
                   {int(k): int(v) for k, v in data.get("received", [])},
                   {int(k): int(v) for k, v in data.get("handed", [])},
                   set(data.get("held", [])),
                   {int(k): int(v) for k, v in data.get("leaving", [])},
                   {int(k): int(v) for k, v in data.get("joining", [])})
