"""The ``fish`` planner: split the recent hot keys of a micro-batch engine over several slots.

FISH (Huang, *Efficient Time-Evolving Stream Processing at Scale*, §4) routes every tuple; a
micro-batch engine routes whole batches by a table published between them. This planner runs
FISH's three steps once per micro-batch, on what the engine observed about the batch — its
heaviest keys with their counts, and the load of every key group — and publishes the result as
the routing table's ``hot_keys`` (:class:`~elastream.core.routing.RoutingTable`):

1. **Algorithm 1** (:mod:`elastream.algorithms.hotkeys.epoch_counter`): the batch is one epoch.
   Its top-k key counts enter ``K`` (≤ ``kmax`` counters, ReplaceMin) after every counter decayed
   by ``α`` — the finest granularity a driver sees, so "recent" means the last few batches.
2. **Algorithm 2, CHK** (:mod:`elastream.algorithms.hotkeys.chk`): a key with recent frequency
   ``f_k > θ`` (default ``1/(4S)`` for ``S`` slots) gets ``d = ⌊S/2^⌊log2(f_top/f_k)⌋⌋`` slots
   (≥ ``d_min``, never fewer than it had before, ``M_k``). Every other key stays whole on its key
   group's slot — unlike per-tuple FISH, which gives cold keys PKG's two choices: here a split
   costs a partial per slot in the pane state, so only hot keys pay it.
3. **Candidates and Algorithm 3**: the key group's own slot first, then the next ``d − 1``
   distinct slots clockwise on the consistent-hash ring (:class:`~elastream.algorithms.grouping.
   consistent_hash.HashRing`), so a key keeps most of its state where it was and a changing
   slot count moves few candidates. The next batch's load is predicted from this one: every
   slot starts at the load of its cold key groups (the hot keys' counts taken out) divided by its
   capacity, the inferred ``C_w × P_w`` of Eq. 2; each hot key brings ``f_k × rows`` tuples, cut
   into ``resolution`` units in all that go, one by one, to the candidate with the lowest level
   (:func:`~elastream.algorithms.grouping.waterfill.route_block`, the blocked Algorithm 3 the
   simulator's FISH uses). A key's share of each slot becomes that many of its ``buckets``
   (largest remainders); keys whose buckets all land on their own slot are not listed.

Between steps 2 and 3 the cold key groups — key-group load with the hot keys' counts taken out,
the part that stays whole — are balanced by Flux (:mod:`.flux`, up to ``max_moves`` moves, left
alone below ``min_imbalance``): a skew of many medium keys is a key-group problem that splitting
hot keys cannot fix, and a hot key no key-group move can fix. ``max_moves = 0`` splits only.

Parameters: ``alpha`` 0.2 (FISH's default, per batch here), ``kmax`` 1000, ``theta`` None
(``1/(4S)``), ``d_min`` 2, ``buckets`` 64 per hot key (share resolution 1/64), ``resolution``
4096 units for Algorithm 3, ``virtual_nodes`` 100, ``seed`` 0, ``max_moves`` 4 and
``min_imbalance`` 0.0 (Flux's). The planner keeps Algorithm 1's
counters and ``M_k`` between batches (a restarted job starts them afresh; the published table
stays in force until the next plan). Cost per batch for ``k`` observed keys and ``h`` hot keys:
O(k log k + kmax + resolution + h·S) time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Final

import numpy as np
import numpy.typing as npt

from elastream.algorithms.balance import flux
from elastream.algorithms.balance.flux import FluxOptions
from elastream.algorithms.grouping.consistent_hash import DEFAULT_VIRTUAL_NODES, HashRing
from elastream.algorithms.grouping.waterfill import route_block
from elastream.algorithms.hotkeys.chk import ChoiceMemory, classify
from elastream.algorithms.hotkeys.epoch_counter import (
    DEFAULT_ALPHA,
    DEFAULT_KMAX,
    EpochCounter,
)
from elastream.core import rules
from elastream.core.errors import OptionError
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Capability, Move, Plan, PlanStatus
from elastream.core.routing import HotKeys, RoutingTable

NAME: Final = "fish"
CAN: Final[frozenset[Capability]] = frozenset({Capability.SPLIT_HOT_KEYS})
"""What it can do beyond moving key groups (:class:`~elastream.core.plan.Capability`)."""

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class FishSplitOptions:
    """Parameters of :class:`FishSplitPlanner` (see the module docstring).

    ``flux``: the options of Flux on the cold key groups (``max_moves``, ``min_imbalance``);
    flat settings of the registry, ``planner("fish", max_moves=2)``.
    """

    alpha: float = DEFAULT_ALPHA
    kmax: int = DEFAULT_KMAX
    theta: float | None = None
    d_min: int = 2
    buckets: int = 64
    resolution: int = 4096
    virtual_nodes: int = DEFAULT_VIRTUAL_NODES
    seed: int = 0
    flux: FluxOptions = field(default_factory=FluxOptions)

    def __post_init__(self) -> None:
        if not isinstance(self.flux, FluxOptions):
            raise OptionError("flux", "must be FluxOptions", self.flux)
        rules.number("alpha", self.alpha, high=1)
        for option in ("kmax", "d_min", "buckets", "resolution", "virtual_nodes"):
            rules.integer(option, getattr(self, option))
        if self.theta is not None:
            rules.number("theta", self.theta, above=0, below=1)


class FishSplitPlanner:
    """FISH per micro-batch; called like every planner, ``plan(snapshot, current, options=…)``.

    It keeps state between calls (Algorithm 1's counters and CHK's ``M_k``): use one instance
    per job.
    """

    def __init__(self, options: FishSplitOptions | None = None) -> None:
        self.options = options or FishSplitOptions()
        self.counter = EpochCounter(kmax=self.options.kmax, epoch=1, alpha=self.options.alpha)
        self.memory = ChoiceMemory()
        self._ring: HashRing | None = None

    def _ring_for(self, num_slots: int) -> HashRing:
        if self._ring is None or len(self._ring.workers) != num_slots:
            self._ring = HashRing(range(num_slots), virtual_nodes=self.options.virtual_nodes,
                                  seed=self.options.seed)
        return self._ring

    def __call__(self, snapshot: LoadSnapshot, current: RoutingTable, *,
                 options: FishSplitOptions | None = None) -> Plan:
        """Count the batch's keys, classify, and split the hot ones (module docstring)."""
        if options is not None and not isinstance(options, FishSplitOptions):
            raise OptionError("options", "must be FishSplitOptions for the fish planner",
                              type(options).__name__)
        if options is not None and options != self.options:
            raise OptionError("options", "must be the ones the planner was built with",
                              options)
        loads, capacity = snapshot.validated_for(current)
        hashes, counts = observed_keys(snapshot)
        self.counter.add_epoch(hashes, counts, float(loads.sum()))
        hot, freq, d = self._hot_keys(current.num_slots)
        moves: tuple[Move, ...] = ()
        routing = current
        if self.options.flux.max_moves > 0:  # Flux on what stays whole: the cold key groups
            cold = replace(snapshot, key_group_load=cold_key_group_load(hot, hashes, counts,
                                                                        loads))
            moves = flux.plan(cold, current, options=self.options.flux).moves
            routing = current.apply(moves) if moves else current
        table = self._split(hot, freq, d, hashes, counts, loads, capacity, routing)
        level = predicted_slot_load(table, hashes, counts, loads, routing)
        same = table == current.hot_keys
        return Plan(
            status=PlanStatus.UNCHANGED if same and not moves else PlanStatus.FEASIBLE,
            moves=moves,
            hot_keys=None if same else table,
            objective=load_distance(level, capacity),
            details={"hot_keys": float(len(table)),
                     "split_slots": float(sum(len(set(b)) for _, b in table))},
        )

    def _hot_keys(self, slots: int) -> tuple[I64, F64, I64]:
        """Algorithm 2 on the counters: the hot keys, their recent frequency and ``d``."""
        total, opts = self.counter.total, self.options
        if total <= 0 or slots < 2:
            return np.empty(0, dtype=np.int64), np.empty(0), np.empty(0, dtype=np.int64)
        theta = opts.theta if opts.theta is not None else 1.0 / (4 * slots)
        keys = self.counter.keys
        freq = self.counter.counts / total
        d = classify(keys, freq, self.counter.max_count / total, slots, theta=theta,
                     d_min=opts.d_min, memory=self.memory)
        hot = freq > theta
        return keys[hot], freq[hot], d[hot]

    def _split(self, keys: I64, freq: F64, d: I64, hashes: I64, counts: F64, loads: F64,
               capacity: F64, current: RoutingTable) -> HotKeys:
        """Candidates by the ring, then Algorithm 3 over ``resolution`` units (docstring)."""
        if len(keys) == 0:
            return ()
        slots, opts = current.num_slots, self.options
        owner = current.as_array()[np.mod(keys, current.num_key_groups)]
        ring = self._ring_for(slots).successors(self._ring_for(slots).point(keys), slots)
        rows = []
        for own, clockwise, want in zip(owner.tolist(), ring, d.tolist(), strict=True):
            rest = [int(s) for s in clockwise if s != own]
            rows.append([own, *rest[: max(want, 1) - 1]])
        cand_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=cand_ptr[1:])
        cand = np.fromiter((s for r in rows for s in r), dtype=np.int64, count=int(cand_ptr[-1]))
        volume = freq * float(loads.sum())
        cold = cold_key_group_load(keys, hashes, counts, loads)
        base = np.bincount(current.as_array(), weights=cold, minlength=slots)
        units = np.maximum(1, np.rint(volume / volume.sum() * opts.resolution)).astype(np.int64)
        per_unit = float(volume.sum()) / float(units.sum())
        group = np.repeat(np.arange(len(keys)), units)
        chosen = route_block(group, units, cand_ptr, cand, base / capacity, per_unit / capacity)
        share = np.bincount(group * slots + chosen, minlength=len(keys) * slots)
        buckets = largest_remainder(share.reshape(len(keys), slots), opts.buckets)
        table = []
        for key, own, row in zip(keys.tolist(), owner.tolist(), buckets, strict=True):
            if row[own] == opts.buckets:
                continue  # the whole key stays on its key group's slot: nothing to override
            table.append((int(key), tuple(int(s) for s in np.repeat(np.arange(slots), row))))
        return tuple(sorted(table))


def top_keys(options: FishSplitOptions, slots: int) -> int:
    """How many heaviest keys a batch should observe for a job of ``slots`` slots.

    A key above the hot threshold θ is among a batch's 1/θ heaviest; 4/θ leaves room for keys
    on their way up (and for the sketch's error), at most ``kmax`` (the planner's counters).

    >>> top_keys(FishSplitOptions(), slots=4)  # θ = 1/16: 64
    64
    """
    theta = options.theta or 1.0 / (4 * slots)
    return int(min(options.kmax, max(64, math.ceil(4 / theta))))


def observed_keys(snapshot: LoadSnapshot) -> tuple[I64, F64]:
    """The snapshot's heaviest keys, distinct and ascending, with their summed counts."""
    if snapshot.key_hashes is None or snapshot.key_counts is None:
        return np.empty(0, dtype=np.int64), np.empty(0)
    hashes = np.asarray(snapshot.key_hashes, dtype=np.int64)
    counts = np.asarray(snapshot.key_counts, dtype=np.float64)
    if hashes.shape != counts.shape or hashes.ndim != 1:
        raise OptionError("snapshot.key_counts", "must hold one count per key hash",
                          (hashes.shape, counts.shape))
    if not (np.isfinite(counts).all() and (counts >= 0).all()):
        raise OptionError("snapshot.key_counts", "must be finite and non-negative",
                          counts.tolist()[:5])
    unique, inverse = np.unique(hashes, return_inverse=True)
    summed = np.bincount(inverse.reshape(-1), weights=counts, minlength=len(unique))
    return unique, summed.astype(np.float64)


def cold_key_group_load(keys: I64, hashes: I64, counts: F64, loads: F64) -> F64:
    """Key group loads with the observed counts of ``keys`` (the hot ones) taken out."""
    at = np.searchsorted(hashes, keys)
    seen = at < len(hashes)
    seen[seen] = hashes[at[seen]] == keys[seen]
    hot = np.bincount(np.mod(keys[seen], len(loads)), weights=counts[at[seen]],
                      minlength=len(loads))
    cold: F64 = np.maximum(loads - hot, 0.0)
    return cold


def predicted_slot_load(table: HotKeys, hashes: I64, counts: F64, loads: F64,
                        current: RoutingTable) -> F64:
    """Each slot's load had this batch been routed by ``table``: cold key groups plus splits."""
    keys = np.array([k for k, _ in table], dtype=np.int64)
    cold = cold_key_group_load(keys, hashes, counts, loads)
    level = np.bincount(current.as_array(), weights=cold,
                        minlength=current.num_slots).astype(np.float64)
    at = np.searchsorted(hashes, keys)
    for (key, buckets), i in zip(table, at.tolist(), strict=True):
        if i < len(hashes) and hashes[i] == key:
            level += np.bincount(buckets, minlength=current.num_slots) * counts[i] / len(buckets)
    return level


def largest_remainder(share: npt.NDArray[np.int64], buckets: int) -> I64:
    """Each row of ``share`` scaled to ``buckets`` whole buckets by largest remainders.

    >>> largest_remainder(np.array([[3, 1, 0], [1, 1, 1]]), 4).tolist()
    [[3, 1, 0], [2, 1, 1]]
    """
    exact = share / share.sum(axis=1, keepdims=True) * buckets
    out: I64 = np.floor(exact).astype(np.int64)
    missing = buckets - out.sum(axis=1)
    order = np.argsort(-(exact - out), axis=1, kind="stable")
    for row, extra in enumerate(missing.tolist()):
        out[row, order[row, :extra]] += 1
    return out
