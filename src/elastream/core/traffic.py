"""Traffic between key groups of communicating operators, and what it costs across slots.

ALBIC (§4.3.2) models a job of several operators whose key groups send tuples to key groups of
downstream operators. Traffic that crosses slots (nodes) is serialised and deserialised, which
costs CPU on both ends; collocating communicating key groups saves it. Here traffic is an array
of rows ``(kg_from, kg_to, rate)`` over the key groups of one routing table (key group ids are
global across operators), ``rate`` in the same unit as key-group load (tuples per observation
window).

* :func:`key_group_loads` — each key group's load as measured on its node: its own load plus
  ``serialisation`` × the traffic it sends to or receives from other slots (both ends pay);
  :func:`slot_loads` — their sum per slot.
* :func:`collocation_factor` — the share of all traffic (in %) whose two key groups share a
  slot. ALBIC plots it without a formula; this is the quantity its algorithm maximises.
* :func:`load_index` — ALBIC §5: the current mean slot load divided by a reference mean (the
  one right after initialisation), in %.

>>> traffic = np.array([[0, 2, 10.0], [1, 3, 30.0]])
>>> collocation_factor(np.array([0, 1, 0, 0]), traffic)
25.0
>>> slot_loads(np.array([0, 1, 0, 0]), np.ones(4), traffic, serialisation=0.1, num_slots=2).tolist()
[6.0, 4.0]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from elastream.core import rules
from elastream.core.errors import OptionError

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def check_traffic(traffic: npt.ArrayLike | None, num_key_groups: int) -> F64:
    """Traffic as a float ``(E, 3)`` array of valid key-group ids and non-negative rates."""
    if traffic is None:
        return np.empty((0, 3))
    rows = np.asarray(traffic, dtype=np.float64)
    if rows.size == 0:
        return np.empty((0, 3))
    if rows.ndim != 2 or rows.shape[1] != 3:
        raise OptionError("traffic", "must be rows [kg_from, kg_to, rate]", rows.shape)
    ids = rows[:, :2]
    if not (np.isfinite(rows).all() and (ids == np.floor(ids)).all()):
        raise OptionError("traffic", "must hold whole key-group ids and finite rates",
                          rows[~np.isfinite(rows).all(axis=1)][:1].tolist() or "fractional id")
    if ids.min() < 0 or ids.max() >= num_key_groups:
        raise OptionError("traffic", f"must name key groups in [0, {num_key_groups})",
                          int(ids.max()) if ids.max() >= num_key_groups else int(ids.min()))
    if (rows[:, 2] < 0).any():
        raise OptionError("traffic", "rates must be non-negative", float(rows[:, 2].min()))
    return rows


def _ends(slot_of: I64, traffic: npt.ArrayLike | None) -> tuple[I64, I64, F64]:
    rows = check_traffic(traffic, len(slot_of))
    source = slot_of[rows[:, 0].astype(np.int64)]
    target = slot_of[rows[:, 1].astype(np.int64)]
    return source, target, rows[:, 2]


def cross_traffic(slot_of: npt.ArrayLike, traffic: npt.ArrayLike | None) -> float:
    """Total rate of the traffic whose two key groups sit on different slots."""
    source, target, rate = _ends(np.asarray(slot_of, dtype=np.int64), traffic)
    return float(rate[source != target].sum())


def collocation_factor(slot_of: npt.ArrayLike, traffic: npt.ArrayLike | None) -> float:
    """Percent of all traffic that stays inside a slot (100 when there is no traffic)."""
    source, target, rate = _ends(np.asarray(slot_of, dtype=np.int64), traffic)
    total = float(rate.sum())
    if total <= 0:
        return 100.0
    return float(rate[source == target].sum()) / total * 100.0


def key_group_loads(slot_of: npt.ArrayLike, key_group_load: npt.ArrayLike,
                    traffic: npt.ArrayLike | None, *, serialisation: float) -> F64:
    """Each key group's load as its node measures it: its own plus its cross-slot traffic cost.

    A key group pays ``serialisation`` × the traffic it sends to or receives from key groups
    on other slots (both ends pay); summed per slot these are :func:`slot_loads`.
    """
    rules.number("serialisation", serialisation)
    slots = np.asarray(slot_of, dtype=np.int64)
    out = np.asarray(key_group_load, dtype=np.float64).copy()
    rows = check_traffic(traffic, len(slots))
    if serialisation == 0 or rows.size == 0:
        return out
    a, b = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
    cost = np.where(slots[a] != slots[b], rows[:, 2] * serialisation, 0.0)
    out += np.bincount(a, weights=cost, minlength=out.size)
    out += np.bincount(b, weights=cost, minlength=out.size)
    return out


def slot_loads(slot_of: npt.ArrayLike, key_group_load: npt.ArrayLike,
               traffic: npt.ArrayLike | None, *, serialisation: float,
               num_slots: int) -> F64:
    """Each slot's load: its key groups' plus ``serialisation`` × its cross-slot traffic."""
    measured = key_group_loads(slot_of, key_group_load, traffic, serialisation=serialisation)
    loads: F64 = np.bincount(np.asarray(slot_of, dtype=np.int64), weights=measured,
                             minlength=num_slots).astype(np.float64)
    return loads


def load_index(loads: npt.ArrayLike, reference_mean: float) -> float:
    """ALBIC's load index: mean of ``loads`` over ``reference_mean``, in %."""
    rules.number("reference_mean", reference_mean, above=0)
    return float(np.mean(np.asarray(loads, dtype=np.float64))) / reference_mean * 100.0
