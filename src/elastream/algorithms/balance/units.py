"""Units for the MILP: key groups that move together, and key groups placed on a given slot.

ALBIC (§4.3.2) runs its MILP with two kinds of extra constraints: a partition of collocated key
groups "is migrated as a unit" (step 2), and a new pair of key groups is placed "on node n"
(step 3). Both are modelled here by *contracting* the allocation problem
(:class:`~elastream.algorithms.balance.allocation_problem.Allocation`) rather than by adding rows:

* ``together`` — each group of key groups, all on one slot now, becomes one entry with the sum of
  their loads, migration costs and states, and ``size`` = its member count, the migrations that
  moving it spends of ``max_moves``. Collocated partitions share a slot by construction (ALBIC
  collocates a pair by placing it), so the restriction costs nothing.
* ``pin`` — ``(key group, slot)`` pairs. A pin applies to its key group's whole unit (pins on
  one unit must agree). A pinned unit is moved to its slot before the program is built, what
  that spends is taken off the budgets, and it stays there (``frozen``): the MILP balances the
  rest around it.

Contracting keeps the program and its warm starts exactly as they are for plain key groups
(with no group and no pin the contracted problem *is* the original), and makes the program
smaller: a unit is one set of columns, not one per member plus equality rows.

>>> import numpy as np
>>> p = Allocation(load=np.array([10.0, 20, 30, 40]), capacity=np.ones(2),
...                origin=np.array([0, 0, 1, 1]), removed=np.zeros(2, dtype=bool),
...                cost=np.ones(4), max_moves=3.0, max_cost=np.inf, state=None,
...                state_limit=None, scale=1.0)
>>> c = contract(p, together=((0, 1),), pin=((3, 0),))
>>> c.unit_of.tolist(), c.problem.load.tolist(), c.problem.origin.tolist()
([0, 0, 1, 2], [30.0, 30.0, 40.0], [0, 1, 0])
>>> c.problem.sizes.tolist(), c.problem.movable.tolist(), c.problem.max_moves
([2.0, 1.0, 1.0], [True, True, False], 2.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from elastream.algorithms.balance.allocation_problem import I64, Allocation
from elastream.core import rules
from elastream.core.errors import OptionError

Together = tuple[tuple[int, ...], ...]
Pins = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Contracted:
    """The contracted problem and the map back: key group ``k`` is entry ``unit_of[k]``."""

    problem: Allocation
    unit_of: I64

    @property
    def identity(self) -> bool:
        """True when every entry is one key group, where it is now, free to move."""
        return self.problem.size is None and self.problem.frozen is None

    def expand(self, assign: I64) -> I64:
        """The key groups' slots under an assignment of the entries."""
        return np.asarray(assign[self.unit_of], dtype=np.int64)


def check_together(together: object) -> Together:
    """``together`` as a tuple of tuples of distinct key-group ids ≥ 0, none in two groups."""
    if not isinstance(together, tuple) or not all(isinstance(g, tuple) for g in together):
        raise OptionError("together", "must be a tuple of tuples of key-group ids", together)
    seen: set[int] = set()
    for group in together:
        if not all(_is_id(k) for k in group):
            raise OptionError("together", "must hold key-group ids >= 0", group)
        if seen.intersection(group) or len(set(group)) != len(group):
            raise OptionError("together", "must name each key group at most once", group)
        seen.update(group)
    return together


def check_pin(pin: object) -> Pins:
    """``pin`` as a tuple of ``(key group, slot)`` pairs of ids ≥ 0, each key group once."""
    if not isinstance(pin, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and _is_id(p[0]) and _is_id(p[1]) for p in pin):
        raise OptionError("pin", "must be a tuple of (key group, slot) pairs of ids >= 0", pin)
    kgs = [k for k, _ in pin]
    if len(set(kgs)) != len(kgs):
        raise OptionError("pin", "must pin each key group at most once", pin)
    return pin


def _is_id(value: object) -> bool:
    return rules.is_count(value) and value >= 0


def contract(problem: Allocation, *, together: Sequence[Sequence[int]] = (),
             pin: Sequence[tuple[int, int]] = ()) -> Contracted:
    """Contract ``problem`` by ``together`` groups and ``pin`` placements (module docstring).

    Entries are ordered by their lowest key group, so without groups entry ``k`` is key group
    ``k``. Raises :class:`OptionError` for a group spread over several slots, an id out of
    range, a pin onto a slot marked for removal, pins that disagree within a group, and pins
    whose migrations exceed a budget or push a slot over its state limit.
    """
    num_kgs, num_slots = problem.num_key_groups, problem.num_slots
    if not together and not pin:
        return Contracted(problem, np.arange(num_kgs, dtype=np.int64))
    label = np.arange(num_kgs, dtype=np.int64)
    for group in together:
        members = np.asarray(group, dtype=np.int64)
        if members.size and members.max() >= num_kgs:
            raise OptionError("together", f"must name key groups in [0, {num_kgs})", group)
        if np.unique(problem.origin[members]).size > 1:
            raise OptionError("together", "must name key groups that share a slot now", group)
        if members.size:
            label[members] = members.min()
    _, unit_of = np.unique(label, return_inverse=True)
    unit_of = unit_of.astype(np.int64)
    num_units = int(unit_of.max()) + 1 if num_kgs else 0

    target = np.full(num_units, -1, dtype=np.int64)
    for kg, slot in pin:
        if kg >= num_kgs or slot >= num_slots:
            raise OptionError("pin", f"must pin key groups in [0, {num_kgs}) to slots in "
                              f"[0, {num_slots})", (kg, slot))
        if problem.removed[slot]:
            raise OptionError("pin", "must not place a key group on a slot marked for removal",
                              (kg, slot))
        unit = unit_of[kg]
        if target[unit] not in (-1, slot):
            raise OptionError("pin", "must place the key groups of one unit on one slot",
                              (kg, slot))
        target[unit] = slot

    def per_unit(values: np.ndarray) -> np.ndarray:
        return np.bincount(unit_of, weights=values, minlength=num_units)

    origin = np.zeros(num_units, dtype=np.int64)
    origin[unit_of] = problem.origin
    pinned = target >= 0
    arrives = pinned[unit_of] & (target[unit_of] != problem.origin)
    spent_moves = float(arrives.sum())
    spent_cost = float(problem.cost[arrives].sum())
    if spent_moves > problem.max_moves or spent_cost > problem.max_cost * (1 + 1e-12):
        raise OptionError("pin", f"must fit within the migration budget (moves "
                          f"{problem.max_moves:g}, cost {problem.max_cost:g})",
                          (spent_moves, spent_cost))
    origin[pinned] = target[pinned]
    if problem.state is not None and problem.state_limit is not None:
        held = np.bincount(origin[unit_of], weights=problem.state, minlength=num_slots)
        now = np.bincount(problem.origin, weights=problem.state, minlength=num_slots)
        over = (held > now) & (held > problem.state_limit * (1 + 1e-12) + 1e-12)
        if over.any():
            raise OptionError("pin", "must keep every slot within its state limit",
                              int(np.flatnonzero(over)[0]))
    contracted = replace(
        problem,
        load=per_unit(problem.load),
        origin=origin,
        cost=per_unit(problem.cost),
        max_moves=problem.max_moves - spent_moves,
        max_cost=problem.max_cost - spent_cost,
        state=None if problem.state is None else per_unit(problem.state),
        size=per_unit(problem.sizes),
        frozen=pinned,
    )
    return Contracted(contracted, unit_of)
