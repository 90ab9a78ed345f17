"""Allocation instances for the round simulator: ALBIC's synthetic jobs (§5.1, §5.3) and drift.

An :class:`Instance` is a cluster of nodes and the key groups of a job: each key group's load
(in percent of a node of capacity 1, ALBIC's load values), state size, operator and node, plus
the traffic between key groups of consecutive operators. :mod:`elastream.runtimes.sim.rounds`
re-plans it round after round.

:func:`albic_instance` is ALBIC §5.1's generator:

* "Key groups are evenly allocated, such that each node has the same number of key groups":
  a seeded random permutation of the key groups dealt round-robin to the nodes (±1 when ``N``
  does not divide ``K``). Random rather than ``kg mod N`` so that key groups that talk to each
  other start apart (ALBIC §5.4: "the initial allocation ... such that the initial collocation
  is as little as possible").
* "The load of each key group is initially set to the mean, which is then adjusted by a
  percentage, randomly chosen from the range [−5%, 5%]": the mean is chosen so that a node
  carries ``utilisation`` percent (default 50; the paper does not say).
* "Now we further adjust the load on 20% of the nodes, which is controlled by a variable called
  varies. Half of the nodes whose load are changed gets a reduction of 0.5·varies in their load
  and the other half gets an increase in load of 0.5·varies. The load changes are done by
  modifying the load of a randomly selected set of key groups on a node." Read here as: round(20%)
  of the nodes (at least 2 when there are 2 or more), ⌊half⌋ of them lose ``varies / 2`` percent
  of their load, the others gain it; the change is spread over a random, non-empty set of the
  node's key groups in proportion to their loads (the set is grown until it holds at least twice
  a reduction, so no key group loses more than half its load).

:func:`drift` is §5.3's per-round change: "for each iteration of solving, the load of 20% of the
nodes is adjusted by a percentage, randomly chosen from the range [−2%, 2%]" — here ``[−p, p]``,
on round(20%) (at least one) of the nodes, each spread as above (a node without key groups, e.g.
a new one, has nothing to change).

Jobs and traffic (§5.3: "we control the maximum obtainable collocation by ensuring x% of the
key groups to have 1-1 communication"): the ``K`` key groups are split into ``O`` operators of
consecutive ids (key group ``k`` belongs to operator ``k·O // K``); operator ``o`` sends to
operator ``o + 1``. With ``collocation = x``, round(x%) of each upstream operator's key groups
(at most as many as downstream has) send all their output to one distinct downstream key group
each (One-To-One); every other key group spreads its output evenly over all downstream key groups
(Full Partitioning, where collocation buys almost nothing). A key group sends as many tuples as it
processes (selectivity 1), so at most about x% of the traffic can stay inside a node. Without
``collocation`` there is no traffic (the MILP's setting, §4.3.1).

State sizes (the paper gives none for its synthetic jobs): uniform in [0.5, 1.5] per key group, in
units of an average key group's state, fixed over rounds.

>>> inst = albic_instance(nodes=4, key_groups=8, operators=2, varies=20, collocation=50, seed=1)
>>> np.bincount(inst.slot_of).tolist(), inst.operator.tolist()
([2, 2, 2, 2], [0, 0, 0, 0, 1, 1, 1, 1])
>>> round(float(inst.load.sum() / 4), 1), inst.traffic.shape
(49.9, (10, 3))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from elastream.core import rules
from elastream.core.errors import OptionError

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

BASE_SPREAD = 0.05
"""§5.1: every key group's load starts at the mean ± up to 5%."""
CHANGED_SHARE = 0.2
"""§5.1 and §5.3: the share of nodes whose load changes."""


@dataclass(frozen=True)
class Instance:
    """Nodes, key groups, their loads, state and traffic, and where each key group starts.

    ``load[k]``: key group ``k``'s own work, in percent of a node of capacity 1 (cross-node
    serialisation comes on top, see :mod:`elastream.runtimes.sim.rounds`). ``slot_of[k]``: the
    index into ``node_ids`` of its node. ``traffic``: rows ``(kg_from, kg_to, rate)`` over key-group
    indices at these loads. ``operator[k]``: its operator (0 when the job is not known).
    ``remove``: ids of nodes already marked for removal (ALBIC's B).
    """

    node_ids: tuple[str, ...]
    capacity: F64
    key_group_ids: tuple[str, ...]
    load: F64
    state_size: F64
    slot_of: I64
    traffic: F64 = field(default_factory=lambda: np.empty((0, 3)))
    operator: I64 | None = None
    remove: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        nodes, kgs = len(self.node_ids), len(self.key_group_ids)
        if nodes < 1:
            raise OptionError("nodes", "must hold at least one node", nodes)
        for name, ids in (("nodes", self.node_ids), ("key_groups", self.key_group_ids)):
            if len(set(ids)) != len(ids):
                raise OptionError(name, "must name each id once",
                                  next(i for i in ids if ids.count(i) > 1))
        _check_array("capacity", self.capacity, (nodes,), positive=True)
        _check_array("load", self.load, (kgs,))
        _check_array("state_size", self.state_size, (kgs,))
        if self.slot_of.shape != (kgs,) or (kgs and (self.slot_of.min() < 0
                                                     or self.slot_of.max() >= nodes)):
            raise OptionError("slot_of", f"must give every key group a node in [0, {nodes})",
                              self.slot_of.tolist()[:5])
        if self.traffic.ndim != 2 or self.traffic.shape[1] != 3:
            raise OptionError("traffic", "must be rows (kg_from, kg_to, rate)",
                              self.traffic.shape)
        operator = np.zeros(kgs, dtype=np.int64) if self.operator is None else self.operator
        object.__setattr__(self, "operator", operator)
        unknown = sorted(self.remove - set(self.node_ids))
        if unknown:
            raise OptionError("remove", "must name nodes of the instance", unknown[0])
        if len(self.remove) >= nodes:
            raise OptionError("remove", "must leave at least one node", sorted(self.remove))

    @property
    def num_nodes(self) -> int:
        """N."""
        return len(self.node_ids)

    @property
    def num_key_groups(self) -> int:
        """K."""
        return len(self.key_group_ids)

    def node_load(self) -> F64:
        """Each node's load from its key groups (no serialisation)."""
        return np.bincount(self.slot_of, weights=self.load,
                           minlength=self.num_nodes).astype(np.float64)

    def marked(self, nodes: Sequence[str]) -> Instance:
        """The same instance with ``nodes`` also marked for removal."""
        return replace(self, remove=self.remove | frozenset(nodes))


def _check_array(name: str, values: F64, shape: tuple[int], *, positive: bool = False) -> None:
    if values.shape != shape:
        raise OptionError(name, f"must hold {shape[0]} values", values.shape)
    bad = ~np.isfinite(values) | ((values <= 0) if positive else (values < 0))
    if bad.any():
        rule = "must be finite and > 0" if positive else "must be finite and >= 0"
        raise OptionError(name, rule, float(values[bad][0]))


def albic_instance(
    *,
    nodes: int,
    key_groups: int,
    operators: int = 1,
    varies: float = 0.0,
    collocation: float | None = None,
    utilisation: float = 50.0,
    seed: int = 0,
) -> Instance:
    """ALBIC §5.1's synthetic instance (module docstring); deterministic under ``seed``.

    Args:
        nodes: N ≥ 1, all of capacity 1.
        key_groups: K ≥ N.
        operators: O in [1, K].
        varies: percent in [0, 200]; 20% of the nodes lose or gain ``varies / 2`` percent.
        collocation: percent in [0, 100] of One-To-One key groups, or ``None``: no traffic.
        utilisation: mean node load in percent (> 0).
        seed: the generator's seed.
    """
    rules.integer("nodes", nodes)
    rules.integer("key_groups", key_groups, low=nodes)
    rules.integer("operators", operators)
    if operators > key_groups:
        raise OptionError("operators", f"must be at most key_groups ({key_groups})", operators)
    rules.number("varies", varies, high=200, unit="percent")
    if collocation is not None:
        rules.number("collocation", collocation, high=100, unit="percent")
    rules.number("utilisation", utilisation, above=0, unit="percent")
    rng = np.random.default_rng(seed)
    slot_of = np.empty(key_groups, dtype=np.int64)
    slot_of[rng.permutation(key_groups)] = np.arange(key_groups) % nodes
    mean = utilisation * nodes / key_groups
    load = mean * (1 + rng.uniform(-BASE_SPREAD, BASE_SPREAD, key_groups))
    changed = _changed_count(nodes, minimum=2 if nodes >= 2 else 1) if varies > 0 else 0
    picked = rng.choice(nodes, size=changed, replace=False)
    for i, node in enumerate(picked):
        sign = -1.0 if i < changed // 2 else 1.0
        own = np.flatnonzero(slot_of == node)
        _adjust(load, rng.permutation(own), sign * varies / 200.0 * float(load[own].sum()),
                float(rng.random()))
    operator = (np.arange(key_groups) * operators) // key_groups
    traffic = (np.empty((0, 3)) if collocation is None
               else _traffic(load, operator, operators, collocation, rng))
    return Instance(
        node_ids=tuple(f"n{i}" for i in range(nodes)),
        capacity=np.ones(nodes),
        key_group_ids=tuple(f"kg{k}" for k in range(key_groups)),
        load=load,
        state_size=rng.uniform(0.5, 1.5, key_groups),
        slot_of=slot_of,
        traffic=traffic,
        operator=operator,
    )


def drift(load: F64, slot_of: I64, percent: float, rng: np.random.Generator,
          num_nodes: int | None = None) -> F64:
    """§5.3's per-round change: 20% of the nodes each by a percentage in ±``percent``.

    ``num_nodes`` (default: the highest node index in ``slot_of`` + 1) nodes exist; round(20%)
    of them (at least one) are drawn, and each one that holds key groups changes as
    :func:`albic_instance`'s do. The random numbers drawn do not depend on ``slot_of``, so two
    planners run from the same seed see the same draws (common random numbers). Returns new
    loads; ``load`` is not modified.

    >>> rng = np.random.default_rng(0)
    >>> before = np.full(10, 10.0)
    >>> after = drift(before, np.arange(10) % 5, 2.0, rng)
    >>> int((after != before).sum()) > 0, bool(abs(after.sum() - 100.0) <= 0.4)
    (True, True)
    """
    rules.number("drift", percent, high=100, unit="percent")
    out = np.array(load, dtype=np.float64)
    nodes = int(slot_of.max()) + 1 if num_nodes is None and slot_of.size else (num_nodes or 0)
    if percent == 0 or out.size == 0 or nodes == 0:
        return out
    count = _changed_count(nodes, minimum=1)
    picked = rng.choice(nodes, size=count, replace=False)
    changes = rng.uniform(-percent, percent, count) / 100.0
    sizes = rng.random(count)
    priority = rng.random(out.size)
    for node, change, size in zip(picked, changes, sizes, strict=True):
        own = np.flatnonzero(slot_of == node)
        _adjust(out, own[np.argsort(priority[own], kind="stable")],
                change * float(out[own].sum()), size)
    return out


def overload(instance: Instance, nodes: Sequence[int], level: float = 100.0) -> Instance:
    """The instance with each node in ``nodes`` loaded to ``level`` percent of its capacity.

    ALBIC §5.1's scale-in experiment: "one and five nodes are overloaded (100% loaded)". The
    node's key groups are scaled by the same factor.
    """
    rules.number("level", level, above=0, unit="percent")
    load = instance.load.copy()
    node_load = instance.node_load()
    for node in nodes:
        if not 0 <= node < instance.num_nodes:
            raise OptionError("nodes", f"must be node indices in [0, {instance.num_nodes})",
                              node)
        own = instance.slot_of == node
        if node_load[node] > 0:
            load[own] *= level * instance.capacity[node] / node_load[node]
    scale = np.divide(load, instance.load, out=np.ones_like(load), where=instance.load > 0)
    traffic = instance.traffic.copy()
    if traffic.size:
        traffic[:, 2] *= scale[traffic[:, 0].astype(np.int64)]
    return replace(instance, load=load, traffic=traffic)


def _changed_count(nodes: int, *, minimum: int) -> int:
    return min(nodes, max(minimum, round(CHANGED_SHARE * nodes)))


def _adjust(load: F64, order: I64, delta: float, size_fraction: float) -> None:
    """Add ``delta`` to a node's key groups ``order[:m]``, pro rata to their loads.

    ``m = 1 + ⌊size_fraction · len(order)⌋``: a random, non-empty set when ``order`` is a random
    permutation of the node's key groups; a reduction takes enough of them that none loses more
    than half its load.
    """
    if order.size == 0 or delta == 0:
        return
    size = min(order.size, 1 + int(size_fraction * order.size))
    if delta < 0:
        held = np.cumsum(load[order])
        size = max(size, min(order.size, int(np.searchsorted(held, -2 * delta)) + 1))
    chosen = order[:size]
    total = float(load[chosen].sum())
    if total > 0:
        load[chosen] *= 1 + delta / total
    else:
        load[chosen] += delta / size
    np.maximum(load, 0.0, out=load)


def _traffic(load: F64, operator: I64, operators: int, collocation: float,
             rng: np.random.Generator) -> F64:
    rows: list[F64] = []
    for o in range(operators - 1):
        up, down = np.flatnonzero(operator == o), np.flatnonzero(operator == o + 1)
        pairs = min(round(collocation / 100.0 * up.size), down.size)
        one = rng.choice(up, size=pairs, replace=False)
        rows.append(np.column_stack([one, rng.choice(down, size=pairs, replace=False),
                                     load[one]]))
        spread = np.setdiff1d(up, one)
        src = np.repeat(spread, down.size)
        dst = np.tile(down, spread.size)
        rows.append(np.column_stack([src, dst, load[src] / down.size]))
    return np.concatenate(rows) if rows else np.empty((0, 3))
