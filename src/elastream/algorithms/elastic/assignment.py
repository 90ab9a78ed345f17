r"""Which node's cores each elastic executor gets: Elasticutor's Algorithm 1 (§4.2).

The allocation (:mod:`~elastream.algorithms.elastic.core_allocation`) says how many cores ``k_j``
executor ``j`` needs; this module places them on the nodes, starting from the assignment in
force ``X̃`` (executors × nodes, ``x̃_ij`` cores of node ``i`` run tasks of ``j``), so that little
state moves and data-intensive executors stay on their home node ``I(j)`` (where the executor's
main process, receiver and emitter live). Problem (2) of the paper::

    minimise  C(X | X̃)   s.t.  (a) Σ_j x_ij ≤ c_i   (b) X_j ≥ k_j   (c) x_{I(j)j} = X_j ∀ j ∈ E(φ)

**Units.** ``state[j]`` = ``s_j`` in bytes; ``intensity[j]``: the executor's input plus output
data rate in bytes/s; its *per-core data intensity* is ``intensity[j] / k_j`` and ``E(φ)`` holds
the executors whose per-core intensity is above ``φ`` (bytes/s per core; the paper's default
``φ̄`` = 512 KB/s = 512,000). Migration costs are in bytes.

**Migration cost.** An executor's state is spread evenly over its cores, so node ``i`` holds
``σ_ij(X) = s_j·x_ij / X_j`` of it; an executor without cores keeps its state on its home node
(``σ = s_j`` there). The cost of a transition is the state leaving nodes,

    C(X | X̃) = Σ_j Σ_i max(0, σ_ij(X̃) − σ_ij(X)).

The paper prints the first term as ``s_j·x̃_ij / X_j``; dividing by the old total ``X̃_j`` is
what its own step costs ``C⁺_ij = s_j(X_j − x_ij)/(X_j(X_j+1))`` (one core more on node ``i``)
and ``C⁻_ij = s_j(X_j − x_ij)/(X_j(X_j−1))`` (one core fewer) follow from, so this module uses
it. At ``X_j = 0`` (a first core) and ``X_j = 1`` (a last core) the step costs follow from the
home-node convention: ``s_j`` unless the core is on the home node, else 0.

**Algorithm 1**, with the choices the paper leaves open (each tested):

- *Order of E⁺.* The text sorts the under-provisioned executors by data intensity *descending*,
  the pseudo-code says "non-descending". Descending is used: data-intensive executors can only
  take cores on their home node, so they go first, before others take those cores.
- *Donors.* Line 7 (data-intensive ``j``) takes a core on ``I(j)`` from the over-provisioned
  executor ``j' ∈ E⁻`` with the least ``C⁻``; the text says "among all the non-data-intensive
  executors", the pseudo-code "``j ∈ E⁻``". Every executor of ``E⁻`` may donate here: giving
  a core away never makes an executor's tasks remote. ``E⁻`` is kept current (an executor
  stops donating once it is down to ``k_j``).
- *Idle cores.* The paper's cluster has every core assigned; after the allocation (which uses
  as few cores as it can) some are idle. An idle core is a donor with ``C⁻ = 0``, and is
  preferred to an executor's core at equal cost.
- *Constraint (c) for executors Algorithm 1 does not touch.* A data-intensive executor that
  holds remote cores in ``X̃`` first gives them up (they become idle) and joins ``E⁺`` to be
  refilled at home, so that a returned assignment always satisfies (c).
- *Ties* (equal cost): idle cores first, then the lower node id, then the lower donor id.
- *FAIL* restarts from ``X̃`` with ``φ`` doubled (§4.2), until it succeeds; it does once ``φ``
  exceeds every executor's per-core intensity whenever ``Σ k_j ≤ Σ c_i``.

Executors that keep more cores than they need (``X_j > k_j``) keep them unless another
executor needs them, as in Algorithm 1.

**Status.** ``OPTIMAL`` when the assignment moves no state (``C = 0`` is the least cost);
``FEASIBLE`` when it moves some (Algorithm 1 is a heuristic: ``tests/test_elastic_assignment.py``
compares it with brute force); ``INFEASIBLE`` when ``Σ k_j > Σ c_i``: no assignment meets (b),
and the one returned is Algorithm 1's with ``φ = ∞`` run until the cores ran out (executors in
E⁺ order got theirs, the last one short).

``cost_aware=False`` replaces every cost by 0, so cores come by the tie order alone (the first
idle core in node order, then the first donor): the *naive EC* scheduler of §5.4, with
``phi=math.inf`` to drop locality (:mod:`~elastream.algorithms.elastic.naive_ec`).

Complexity: O(m·n) per core moved (one numpy pass over donors × nodes, no Python loop), at
most ``Σ k_j`` moves per run, and ``⌈log2(max intensity/φ)⌉ + 1`` runs.

References:
    L. Wang et al. Elasticutor, §4.2, problem (2), Algorithm 1.

>>> # Executor 0 (home node 0) grows from 2 to 5 cores; executor 1 shrinks from 4 to 2. It
>>> # takes executor 1's two cores on node 0 (cheaper than moving 0's state to node 1), then an
>>> # idle core of node 1: 1.6 MB of 0's state and 2 MB of 1's leave node 0.
>>> a = assign_cores([5, 2], [4, 4], [[2, 0], [2, 2]], state=[8e6, 4e6],
...                  intensity=[1e6, 1e6], home=[0, 1])
>>> a.status.value, a.assignment, a.migration_cost, a.phi
('feasible', ((4, 1), (0, 2)), 3600000.0, 512000.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from itertools import chain

import numpy as np
import numpy.typing as npt

from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.plan import PlanStatus

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

DEFAULT_PHI = 512_000.0
"""φ̄, bytes/s per core: below it the paper finds the benefit of locality negligible (§4.2)."""
IDLE = -1
"""The donor id of an idle core."""


@dataclass(frozen=True)
class CoreAssignment:
    """Cores of each node per executor, the state that moves, and the ``φ`` that succeeded.

    ``assignment[j][i]`` = ``x_ij``; ``migration_cost`` = ``C(X | X̃)`` in bytes;
    ``phi``: the locality threshold of the run returned (bytes/s per core).
    """

    status: PlanStatus
    assignment: tuple[tuple[int, ...], ...]
    migration_cost: float
    phi: float

    @property
    def cores(self) -> tuple[int, ...]:
        """``X_j``, each executor's cores."""
        return tuple(sum(row) for row in self.assignment)


def assign_cores(demand: Sequence[int], node_cores: Sequence[int],
                 current: Sequence[Sequence[int]] | None, *, state: Sequence[float],
                 intensity: Sequence[float], home: Sequence[int], phi: float = DEFAULT_PHI,
                 cost_aware: bool = True) -> CoreAssignment:
    """Algorithm 1 with φ doubling until it succeeds (module docstring).

    Args:
        demand: ``k_j``, cores each executor needs (integers ≥ 0).
        node_cores: ``c_i``, cores of each node (integers ≥ 0, at least one node).
        current: ``X̃``, executors × nodes (integers ≥ 0, no node over its cores); ``None``:
            no executor has cores yet.
        state: ``s_j`` in bytes.
        intensity: input + output bytes/s of each executor.
        home: ``I(j)``, each executor's home node.
        phi: the starting locality threshold ``φ̄`` in bytes/s per core (> 0; ``math.inf``
            drops locality).
        cost_aware: ``False`` for the naive scheduler (costs ignored, ties decide).

    Raises:
        OptionError: naming the argument (``current[1][0]``), the rule and the value.
    """
    k, c, x0, s, rate, h = _validated(demand, node_cores, current, state, intensity, home, phi)
    per_core = rate / np.maximum(k, 1)
    if k.sum() > c.sum():
        x = _algorithm1(k, c, x0, s, h, np.zeros(k.size, bool), per_core, cost_aware,
                        partial=True)
        assert x is not None
        return _result(PlanStatus.INFEASIBLE, x, x0, s, h, phi)
    threshold = phi
    while True:
        x = _algorithm1(k, c, x0, s, h, per_core > threshold, per_core, cost_aware)
        if x is not None:
            result = _result(PlanStatus.FEASIBLE, x, x0, s, h, threshold)
            return replace(result, status=PlanStatus.OPTIMAL) if result.migration_cost == 0 \
                else result
        threshold *= 2


def migration_cost(before: Sequence[Sequence[int]] | I64, after: Sequence[Sequence[int]] | I64,
                   state: Sequence[float] | F64, home: Sequence[int] | I64) -> float:
    """``C(X | X̃)``: the state (bytes) leaving nodes from ``before`` to ``after``."""
    b, a = np.asarray(before, np.int64), np.asarray(after, np.int64)
    s, h = np.asarray(state, np.float64), np.asarray(home, np.int64)
    return float(np.maximum(_spread(b, s, h) - _spread(a, s, h), 0.0).sum())


def step_cost(x: I64, j: int, node: int, delta: int, state: float, home: int) -> float:
    """``C⁺_ij`` (``delta = +1``) or ``C⁻_ij`` (``delta = −1``) of executor ``j`` in ``X``."""
    row = x[j]
    total = int(row.sum())
    if delta > 0:
        if total == 0:
            return 0.0 if node == home else state
        return state * (total - int(row[node])) / (total * (total + 1))
    if total == 1:
        return 0.0 if node == home else state
    return state * (total - int(row[node])) / (total * (total - 1))


def _spread(x: I64, s: F64, home: I64) -> F64:
    """``σ_ij``: the state of executor ``j`` on node ``i`` (even over its cores, else home)."""
    totals = x.sum(axis=1)
    out = np.zeros(x.shape)
    has = totals > 0
    out[has] = s[has, None] * x[has] / totals[has, None]
    idle = np.flatnonzero(~has)
    out[idle, home[idle]] = s[idle]
    return out


def _algorithm1(k: I64, c: I64, x0: I64, s: F64, home: I64, intensive: npt.NDArray[np.bool_],
                per_core: F64, cost_aware: bool, *, partial: bool = False) -> I64 | None:
    """One run of Algorithm 1 at a fixed ``E(φ)``: the assignment, or ``None`` for FAIL.

    ``partial``: on FAIL return the assignment so far instead (the infeasible case).
    """
    x = x0.copy()
    free = c - x.sum(axis=0)
    # (c): remote cores of data-intensive executors go
    remote = intensive[:, None] & (np.arange(c.size) != home[:, None])
    free += np.where(remote, x, 0).sum(axis=0)
    x[remote] = 0
    totals = x.sum(axis=1)  # X_j, kept current below
    under = np.flatnonzero(totals < k)
    for j in under[np.lexsort((under, -per_core[under]))]:
        nodes = slice(int(home[j]), int(home[j]) + 1) if intensive[j] else slice(None)
        while totals[j] < k[j]:
            best = _cheapest(x, totals, k, free, s, home, j, nodes, cost_aware)
            if best is None:
                return x if partial else None
            node, donor = best
            if donor == IDLE:
                free[node] -= 1
            else:
                x[donor, node] -= 1
                totals[donor] -= 1
            x[j, node] += 1
            totals[j] += 1
    return x


def _cheapest(x: I64, totals: I64, k: I64, free: I64, s: F64, home: I64, j: int,
              nodes: slice, cost_aware: bool) -> tuple[int, int] | None:
    """The (node, donor) of least ``C⁻ + C⁺`` (lines 7 and 9); ties: idle, node, donor.

    Every candidate at once: the idle core of each node in ``nodes`` (``C⁻`` = 0), then each
    (node, over-provisioned executor holding a core there), node by node. Each total is the
    float sum :func:`step_cost` gives, and the first least one in that order is the tie order.
    """
    ids = np.arange(x.shape[1])[nodes]
    held = x[:, nodes]
    valid = np.concatenate((free[nodes] > 0, ((held > 0) & (totals > k)[:, None]).T.ravel()))
    valid[ids.size + j::x.shape[0]] = False  # j does not donate to itself
    if not valid.any():
        return None
    if cost_aware:
        gain = _costs_in(x[j, nodes], int(totals[j]), s[j], int(home[j]), ids)
        offers = _costs_out(held, totals, s, home, ids) + gain
        costs = np.concatenate((gain, offers.T.ravel()))  # an idle core: 0 + C⁺
        first = int(np.flatnonzero(valid & (costs == costs[valid].min()))[0])
    else:
        first = int(np.argmax(valid))
    if first < ids.size:
        return int(ids[first]), IDLE
    i, donor = divmod(first - ids.size, x.shape[0])
    return int(ids[i]), donor


def _costs_in(row: I64, total: int, state: np.float64, home: int, ids: I64) -> F64:
    """``C⁺_ij`` on each node of ``ids`` (``row``: executor j's cores there); as step_cost."""
    if total == 0:  # a first core: the state moves unless the core is at home
        first: F64 = np.where(ids == home, 0.0, state)
        return first
    out: F64 = state * (total - row) / (total * (total + 1))
    return out


def _costs_out(held: I64, totals: I64, s: F64, home: I64, ids: I64) -> F64:
    """``C⁻_ij`` of every executor on each node of ``ids`` (``held``: their cores there).

    As :func:`step_cost`; rows of executors without cores are meaningless (never donors).
    """
    t = totals[:, None]
    out: F64 = s[:, None] * (t - held) / np.maximum(t * (t - 1), 1)
    last = totals == 1  # a last core: its state goes home
    if last.any():
        out[last] = np.where(ids == home[last, None], 0.0, s[last, None])
    return out


def _result(status: PlanStatus, x: I64, x0: I64, s: F64, home: I64, phi: float
            ) -> CoreAssignment:
    rows = tuple(map(tuple, x.tolist()))
    return CoreAssignment(status, rows, migration_cost(x0, x, s, home), float(phi))


def _validated(demand: Sequence[int], node_cores: Sequence[int],
               current: Sequence[Sequence[int]] | None, state: Sequence[float],
               intensity: Sequence[float], home: Sequence[int], phi: float
               ) -> tuple[I64, I64, I64, F64, F64, I64]:
    k = _integers("demand", demand, 0)
    c = _integers("node_cores", node_cores, 0)
    if k.size == 0 or c.size == 0:
        raise OptionError("demand" if k.size == 0 else "node_cores",
                          "must list at least one entry", [])
    m, n = k.size, c.size
    if current is None:
        x0 = np.zeros((m, n), np.int64)
    else:
        if len(current) != m:
            raise OptionError("current", f"must have one row per executor ({m})", len(current))
        flat = _counts(list(chain.from_iterable(current)), 0) \
            if all(len(row) == n for row in current) else None
        if flat is None:  # look at each entry to name the bad one
            rows = [_integers(f"current[{j}]", row, 0) for j, row in enumerate(current)]
            for j, row in enumerate(rows):
                if row.size != n:
                    raise OptionError(f"current[{j}]", f"must have one entry per node ({n})",
                                      row.size)
            flat = np.array(rows, np.int64)
        x0 = flat.reshape(m, n)
        used = x0.sum(axis=0)
        over = np.flatnonzero(used > c)
        if over.size:
            raise OptionError("current", f"must not use more cores of node {int(over[0])} than "
                              f"it has ({int(c[over[0]])})", int(used[over[0]]))
    s = _numbers("state", state, m)
    rate = _numbers("intensity", intensity, m)
    h = _integers("home", home, 0)
    if h.size != m:
        raise OptionError("home", f"must have one entry per executor ({m})", h.size)
    bad = np.flatnonzero(h >= n)
    if bad.size:
        raise OptionError(f"home[{int(bad[0])}]", f"must name a node in [0, {n})", int(h[bad[0]]))
    if not rules.is_number(phi) or math.isnan(phi) or phi <= 0:  # inf: no locality
        raise OptionError("phi", "must be a number of bytes/s per core > 0", phi)
    return k, c, x0, s, rate, h


def _integers(name: str, values: Sequence[int] | I64, low: int) -> I64:
    plain = _counts(values, low)
    if plain is not None:
        return plain
    return np.array([rules.integer(f"{name}[{i}]", v, low=low) for i, v in enumerate(values)],
                    np.int64)


def _counts(values: Sequence[int] | I64, low: int) -> I64 | None:
    """``values`` as an array if all are integers ``>= low`` (else ``None``: look closer).

    The same rule as :func:`~elastream.core.rules.integer`, checked once per distinct type
    (``current`` has executors × nodes entries; checking each one took longer than Algorithm 1).
    """
    if not all(kind is int or issubclass(kind, np.integer) for kind in set(map(type, values))):
        return None
    with suppress(OverflowError):  # an int beyond int64: the loop says which
        out = np.array(list(map(int, values)), np.int64)
        return out if out.size == 0 or out.min() >= low else None
    return None


def _numbers(name: str, values: Sequence[float], size: int) -> F64:
    if len(values) != size:
        raise OptionError(name, f"must have one entry per executor ({size})", len(values))
    if all(kind is float or kind is int or issubclass(kind, np.integer | np.floating)
           for kind in set(map(type, values))):  # as _counts: one check per type
        with suppress(OverflowError):  # an int beyond floats: the loop says which
            out = np.array(values, np.float64)
            if np.isfinite(out).all() and not (out < 0).any():
                return out
    return np.array([rules.number(f"{name}[{i}]", v) for i, v in enumerate(values)],
                    np.float64)
