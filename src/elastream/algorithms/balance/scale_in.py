"""Scale-in as a separate step: drain the slots marked for removal, regardless of balance.

ALBIC (§5.1, Fig. 5) compares its integrated scale-in — the MILP gets the marked nodes B as
its ``remove`` setting and empties them while it balances the rest — with the usual *separate*
one: a scale-in step first spends the migration budget moving key groups off B "to the other
nodes evenly", and only then does the balancing planner run on the nodes that stay, with what
is left of the budget. Here "evenly" is by key-group count: in key-group order, each key group
on B goes to the staying slot that holds the fewest key groups (the lower id on a tie).

The round simulator runs it as Fig. 5's baseline; the control loop runs it for every planner
that takes no removal set (``flux``, ``fish``, ``cola``, ``potc``), so a job that shrinks
drains its leaving slots first, then balances.

Slot 1 holds one key group and slot 0 two: key group 2 goes to slot 1, and key group 3 to
slot 0 (two each now; the lower id). Cost: O(G + S) for G key groups and S slots.

References:
    K. G. S. Madsen, Y. Zhou, J. Cao. Integrative Dynamic Reconfiguration in a Parallel Stream
    Processing Engine. 2016, §4.3.1, §5.1.

>>> slot_of = np.array([0, 1, 2, 2, 0, 2])
>>> removed = np.array([False, False, True])
>>> [(m.key_group, m.source, m.target) for m in drain(slot_of, removed, max_moves=2)]
[(2, 2, 1), (3, 2, 0)]
"""

from __future__ import annotations

import math
from collections.abc import Set

import numpy as np
import numpy.typing as npt

from elastream.core.errors import OptionError
from elastream.core.plan import Move

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


def drain(slot_of: I64, removed: Mask, *, state: F64 | None = None,
          max_moves: float = math.inf, max_cost: float = math.inf,
          skip: Set[int] = frozenset()) -> tuple[Move, ...]:
    """Moves of key groups off the slots ``removed`` marks, within the budgets.

    ``slot_of[kg]``: the slot of every key group; ``removed[s]``: slot ``s`` is marked.
    ``state`` (default 1 each) prices a move against ``max_cost``; a key group that does not
    fit the cost left is passed over for a lighter one. Key groups in ``skip`` (a hand-off still
    in flight) stay for a later step.
    """
    slot_of = np.asarray(slot_of, dtype=np.int64)
    removed = np.asarray(removed, dtype=bool)
    active = np.flatnonzero(~removed)
    if active.size == 0:
        raise OptionError("remove", "must leave at least one slot", np.flatnonzero(removed))
    weights = np.ones(slot_of.size) if state is None else np.asarray(state, dtype=float)
    counts = np.bincount(slot_of, minlength=removed.size).astype(np.int64)
    moves: list[Move] = []
    cost = 0.0
    for kg in np.flatnonzero(removed[slot_of]):
        if len(moves) >= max_moves:
            break
        if int(kg) in skip or cost + weights[kg] > max_cost * (1 + 1e-12):
            continue
        target = int(active[np.argmin(counts[active])])
        moves.append(Move(int(kg), int(slot_of[kg]), target))
        counts[target] += 1
        cost += float(weights[kg])
    return tuple(moves)
