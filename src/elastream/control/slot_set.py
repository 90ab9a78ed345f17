"""The slots a job that scales by moves uses, and the balancing planner's view of them.

A job that scales keeps ``max_slots`` slot ids (its state partitions on Spark) and uses some of
them. With a balancing planner (every one but ``hash``, which keeps key-group ranges:
:mod:`elastream.control.scaling`) a scale event changes the :class:`SlotSet`:

* **scale-out** makes slots *active*: those still leaving first (the most loaded), then the
  lowest free ids. They start empty; the planner fills them.
* **scale-in** marks the least-loaded active slots as *leaving* (ALBIC §4.3's B; ties: the
  higher id). A planner that takes a removal set (``milp``, ``albic``) sees them as its
  ``remove`` and empties them while it balances the rest; the others get them drained first
  (:func:`~elastream.algorithms.balance.scale_in.drain`) and plan once they are empty. A leaving
  slot that holds no key group and no bucket of a split hot key is gone (:meth:`SlotSet.settled`).

The planner sees the slots in use as ``0 … n−1`` (:func:`view`): it balances over exactly them,
whatever ids they have, and its plan is mapped back (:func:`lifted`).

>>> table = RoutingTable(0, (0, 1, 0, 1, 0, 1), 4)
>>> slots = SlotSet((0, 1)).resized(3, np.array([3.0, 3.0, 0.0, 0.0]))
>>> slots
SlotSet(active=(0, 1, 2), leaving=())
>>> slots = slots.resized(1, np.array([3.0, 2.0, 1.0, 0.0]))
>>> slots
SlotSet(active=(0,), leaving=(1, 2))
>>> view(table, slots.in_use).slot_of, view(table, (0, 1, 3)).num_slots
((0, 1, 0, 1, 0, 1), 3)
>>> slots.settled(RoutingTable(1, (0,) * 6, 4))
SlotSet(active=(0,), leaving=())
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot
from elastream.core.plan import Move, Plan
from elastream.core.routing import HotKeys, RoutingTable


@dataclass(frozen=True)
class SlotSet:
    """Slot ids a job uses: ``active`` ones take key groups, ``leaving`` ones are emptied."""

    active: tuple[int, ...]
    leaving: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.active or set(self.active) & set(self.leaving):
            raise OptionError("slots", "must keep one active slot at least, none also leaving",
                              (self.active, self.leaving))

    @property
    def in_use(self) -> tuple[int, ...]:
        """Active and leaving slots, in id order: the planner's slots."""
        return tuple(sorted(self.active + self.leaving))

    def resized(self, slots: int, slot_load: np.ndarray) -> SlotSet:
        """``slots`` active slots; ``slot_load[s]``: recent load of slot ``s`` (any id)."""
        active, leaving = list(self.active), list(self.leaving)
        if slots > len(active):
            for s in sorted(leaving, key=lambda s: (-slot_load[s], s))[:slots - len(active)]:
                leaving.remove(s)
                active.append(s)
            free = (s for s in range(len(slot_load)) if s not in active and s not in leaving)
            active += [next(free) for _ in range(slots - len(active))]
        elif slots < len(active):
            marked = sorted(active, key=lambda s: (slot_load[s], -s))[:len(active) - slots]
            active = [s for s in active if s not in marked]
            leaving += marked
        return SlotSet(tuple(sorted(active)), tuple(sorted(leaving)))

    def settled(self, table: RoutingTable) -> SlotSet:
        """Without the leaving slots that ``table`` leaves empty (no key group, no bucket)."""
        held = set(table.slot_of) | {s for _, buckets in table.hot_keys for s in buckets}
        return replace(self, leaving=tuple(s for s in self.leaving if s in held))


def view(table: RoutingTable, ids: tuple[int, ...]) -> RoutingTable:
    """``table`` over the slots ``ids`` (sorted, holding every key group) as ``0 … n−1``."""
    index = {s: i for i, s in enumerate(ids)}
    try:
        return replace(table, slot_of=tuple(index[s] for s in table.slot_of),
                       num_slots=len(ids), hot_keys=_mapped(table.hot_keys, index))
    except KeyError as missing:
        raise OptionError("slots", f"must hold every key group (slot {missing} is not among "
                          "them)", ids) from None


def lifted(plan: Plan, ids: tuple[int, ...]) -> Plan:
    """A plan made on :func:`view` in the slot ids of the job (no new slot count)."""
    index = dict(enumerate(ids))
    return replace(plan, num_slots=None,
                   moves=tuple(Move(m.key_group, index[m.source], index[m.target])
                               for m in plan.moves),
                   hot_keys=None if plan.hot_keys is None else _mapped(plan.hot_keys, index))


def snapshot_view(snapshot: LoadSnapshot, ids: tuple[int, ...]) -> LoadSnapshot:
    """``snapshot`` with the capacities of the slots ``ids`` only."""
    if snapshot.capacity is None:
        return snapshot
    return replace(snapshot, capacity=np.asarray(snapshot.capacity)[list(ids)])


def off_slots(hot_keys: HotKeys, leaving: tuple[int, ...], active: tuple[int, ...]) -> HotKeys:
    """``hot_keys`` with every bucket on a ``leaving`` slot given to an active one, in turn.

    A bucket only spreads a hot key's records over the pane stage; the key's window state stays
    with its key group, so buckets move without a hand-off.
    """
    gone = set(leaving)
    turn = itertools.count()
    return tuple((key, tuple(active[next(turn) % len(active)] if s in gone else s
                             for s in buckets)) for key, buckets in hot_keys)


def _mapped(hot_keys: HotKeys, index: dict[int, int]) -> HotKeys:
    return tuple((key, tuple(index[s] for s in buckets)) for key, buckets in hot_keys)
