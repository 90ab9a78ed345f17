"""Key groups moving between consolidate slots: hand-off, take-over and smooth migration.

A slot that loses key group ``kg`` under routing version ``v`` writes its parts to the migration
store (:mod:`elastream.stores.migration_store`) and drops them (:meth:`Handoffs.hand_off`);
the slot that gains it merges them once it owns ``kg`` (:meth:`Handoffs.take_over`), emitting
what the sender had not yet. A *smooth* move (Enorm §4.5) hands on only the parts from the
move's boundary on: the old slot keeps the rest and finishes the windows that began before it
(:meth:`Handoffs.finish_smooth` drops what it no longer needs). The consolidate stage
(:mod:`.consolidate`) calls these in its step that advances the watermark.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import pandas as pd

from elastream.runtimes.spark.keygroup_state import KeyGroupParts
from elastream.runtimes.spark.slot_meta import SlotMeta
from elastream.stores.migration_store import MigrationStore
from elastream.stores.routing_store import RoutingStore

_SMOOTH: dict[tuple[str, int], dict[int, tuple[int, int]]] = {}
"""Per routing directory and version, its smooth migrations (versions never change)."""

Assemble = Callable[[pd.DataFrame, int, int, SlotMeta], tuple[pd.DataFrame, pd.DataFrame]]
"""A slot's windows ending in ``(after, upto]`` of some parts, and the parts to keep."""


class Handoffs:
    """The moves of one slot's key groups: its parts map, the migration store, the routing.

    ``longest_ms``: the longest window the slot builds (a smoothly leaving key group's parts
    are kept until every window before its boundary was emitted).
    """

    def __init__(self, parts: KeyGroupParts, store: MigrationStore, routing_dir: str,
                 longest_ms: int) -> None:
        self.parts = parts
        self.store = store
        self.routing_dir = routing_dir
        self.longest_ms = longest_ms

    def smooth(self, version: int) -> dict[int, tuple[int, int]]:
        """The smooth migrations of a routing version (read once per worker)."""
        found = _SMOOTH.get((self.routing_dir, version))
        if found is None:
            found = RoutingStore(self.routing_dir).get(version).smooth_moves()
            _SMOOTH[(self.routing_dir, version)] = found
        return found

    def finish_smooth(self, meta: SlotMeta, owner_version: int) -> None:
        """Drop what a smooth migration no longer needs.

        A leaving key group's parts once every window before its boundary was emitted (the
        mark passed the boundary plus the longest window), and its entry once the owner
        version no longer sends its partials here; a joining key group's boundary once no
        window before it can end after the mark.
        """
        still = self.smooth(owner_version)
        for kg, boundary in list(meta.leaving.items()):
            done = meta.upto >= boundary + self.longest_ms
            if done and kg in meta.held:
                self.parts.put(self.parts.empty, [kg])
            if done and kg not in still:
                del meta.leaving[kg]
        for kg, boundary in list(meta.joining.items()):
            if meta.upto >= boundary + self.longest_ms:
                del meta.joining[kg]

    @staticmethod
    def settled(meta: SlotMeta, kg: int, arrival: int) -> bool:
        """Whether ``kg``'s state is here: held since the start, or its hand-off taken over."""
        return arrival == 0 or (arrival > 0 and meta.received.get(kg) == arrival)

    def hand_off(self, meta: SlotMeta, departures: np.ndarray, me: int,
                  batch: int | None) -> int:
        """Write every lost key group's parts to the migration store and drop them; how many."""
        handed = 0
        for kg in map(int, np.flatnonzero(departures >= 0)):
            version = int(departures[kg])
            if meta.handed.get(kg) == version:
                continue
            if kg in meta.pending:  # its own state never arrived: it cannot travel on
                print(f"elastream consolidate: key group {kg} moves on before its state "
                      f"arrived; its partials stay", file=sys.stderr)
                continue
            parts = self.parts.get([kg], meta.held).sort_values(["key", "start", "length"],
                                                                 kind="stable")
            smooth = self.smooth(version).get(kg)
            if smooth is not None and smooth[0] == me:
                # Smooth: keep the state and finish the windows before the boundary; hand on
                # only the parts from the boundary on (those of batches routed before the move).
                parts = parts[parts["start"] >= smooth[1]]
            self.store.hand_off(version, kg, parts.reset_index(drop=True), meta.upto, slot=me,
                                batch=batch)
            self.store.fault_point()
            if smooth is not None and smooth[0] == me:
                meta.leaving[kg] = smooth[1]
            else:
                self.parts.put(self.parts.empty, [kg])
            meta.handed[kg] = version
            handed += 1
        return handed

    def take_over(self, meta: SlotMeta, arrivals: np.ndarray, me: int, batch: int | None,
                  assemble: Assemble) -> list[pd.DataFrame]:
        """Merge every gained key group's hand-off that arrived; emit what it had not.

        ``assemble``: the slot's windows of the merged parts and the parts to keep (its
        partials of this batch join it when the slot emits).
        """
        out: list[pd.DataFrame] = []
        for kg in map(int, np.flatnonzero(arrivals > 0)):
            version = int(arrivals[kg])
            if meta.received.get(kg) == version:
                continue
            got = self.store.take_over(version, kg)
            if got is None:
                meta.pending.add(kg)
                continue
            parts, sender_upto = got
            if sender_upto > meta.upto:
                raise RuntimeError(f"key group {kg} arrived from a slot ahead of this one "
                                   f"({sender_upto} > {meta.upto})")
            smooth = self.smooth(version).get(kg)
            if smooth is not None:
                meta.joining[kg] = smooth[1]
            merged = pd.concat([parts, self.parts.get([kg], meta.held)], ignore_index=True)
            windows, kept = assemble(merged, sender_upto, meta.upto, meta)
            out.append(windows)
            self.parts.put(kept, [kg])
            meta.received[kg] = version
            meta.pending.discard(kg)
            self.store.acknowledge(version, kg, slot=me, batch=batch, rows=len(parts))
        return out
