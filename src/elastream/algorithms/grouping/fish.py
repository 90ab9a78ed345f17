"""FISH: epoch-based recent hot keys, CHK, heuristic worker assignment, consistent hashing.

Yu Huang, *Efficient Time-Evolving Stream Processing at Scale* (§4–5). Per tuple of key ``k``
at time ``t`` (seconds):

1. **Algorithm 1** (§4.1.1, :mod:`elastream.algorithms.hotkeys.epoch_counter`): count ``k``
   in ``K`` (≤ ``kmax`` counters, ReplaceMin), decaying every counter by ``α`` every
   ``epoch`` tuples. ``f_k`` = counter / decayed total, ``f_top`` the largest.
2. **Algorithm 2, CHK** (§4.1.2, :mod:`elastream.algorithms.hotkeys.chk`): ``d`` candidate
   workers — ``⌊W/2^⌊log2(f_top/f_k)⌋⌋`` (≥ ``d_min``, never below the remembered ``M_k``)
   for a hot key (``f_k > θ``), else 2.
3. **Candidates by consistent hashing** (§4.1.2 "we assign workers for each key through a
   consistent hash", §5): the first ``d`` distinct workers met clockwise from ``k``'s position
   on the ring of virtual nodes (:mod:`.consistent_hash`).
4. **Algorithm 3** (§4.2): every source infers each worker's unprocessed tuples ``C_w``
   instead of asking for them. When more than ``T`` seconds passed since the last estimate
   (``t − t_pri > T``) every ``C_w`` drains by the tuples the worker processed meanwhile; the
   tuple goes to the candidate with the least estimated waiting time ``C_w × P_w`` (Eq. 2;
   ties: the first candidate in ring order), and ``C_w += 1``.

Two switches replace a part of FISH by what it is compared with in the paper's breakdown:

* ``assignment="count"`` (default ``"heuristic"``, step 4): the "traditional worker
  assignment in previous studies [14], [15]" of §6.4 / Fig. 16, "simply based on the number of
  assigned tuples" (§4.2.3): the candidate that was sent the fewest tuples so far, ignoring
  speeds and elapsed time (PKG's local load estimation). ``service_time``, ``capacities`` and
  ``interval`` then have no effect on routing.
* ``candidates="hash"`` (default ``"ring"``, step 3): FISH without consistent hashing (§5,
  Fig. 17): ``F = HASH(k) mod n`` over the live workers, and a key with ``d`` candidates gets
  the ``d`` live workers from that position on (``(F + j) mod n``, ``j < d``; the first is
  field grouping's worker). Like the ring walk, the list for ``d`` is a prefix of the list for
  any larger ``d``; unlike it, a change of ``n`` moves almost every key's candidates.

Choices where the paper is loose, all documented at the parameter:

* ``P_w`` "the average processing time of a tuple" = ``service_time / capacities[w]``.
  Without ``service_time`` the scheme knows only relative speeds, so it never drains: ``C_w``
  counts every tuple sent and the choice is the least ``C_w / capacity`` (the paper's
  "traditional" assignment, ``assignment="count"``, when all capacities are equal).
* The drain. Eq. 1 reads ``C_w ← ((C_w + N_w)·P_w − T)/P_w``; since line 18 already adds
  each sent tuple to ``C_w``, ``N_w`` is not added again, and the drain is by the time that
  actually elapsed (``t − t_pri``, which the paper's check makes ≈ ``T`` on a dense stream)
  so that a sparse stream (the flights replay) is not under-drained:
  ``C_w ← max(0, C_w − (t − t_pri)/P_w)``.
* ``M_k`` is kept for every key that was ever hot, for the whole run.

**Blocks** (``block`` tuples, default 16384; ``block = 1`` is the per-tuple algorithm
exactly, which the tests check tuple for tuple):

* Algorithm 1 counts the whole block as one batch (:mod:`.epoch_counter`: decays at the right
  tuples, replacement decisions once per batch; exact while ``kmax`` covers every key).
* CHK runs for each distinct key of the block at the end of every epoch the block touches
  where the key occurs (counters at earlier epoch ends are the block-start counters decayed
  and increased by the block's exact per-epoch counts; the last uses the counters after the
  batch), and the key gets the largest ``d`` it earned in the block, remembered in ``M_k``.
  A key hot at the start of a block and cold by its end thus keeps its workers for the
  block (per tuple it would drop to 2 when it cools); one hot only at the end gets them
  from the block's start (per tuple only once hot). Both only within one block.
* Algorithm 3's drain is checked at the block's first tuple, and the block is placed by
  :func:`.waterfill.route_block` on the levels ``C_w × P_w`` with step ``P_w``.

Parameters (defaults from the paper where it gives one): ``alpha`` 0.2, ``epoch`` 1000
tuples, ``kmax`` 1000 counters, ``theta`` 1/(4n), ``d_min`` 2 (no number in the paper; see
:mod:`~elastream.algorithms.hotkeys.chk`), ``interval`` T = 10 s, ``service_time`` None,
``capacities`` None (all 1; relative speeds indexed by worker id, as in the simulator),
``virtual_nodes`` 100, ``assignment`` ``"heuristic"``, ``candidates`` ``"ring"``, ``block``
16384, ``seed`` 0. ``kmax`` should exceed ``1/θ = 4n`` so
that no hot key can be missed (unmonitored keys have frequency ≤ 1/kmax). Cost per block of
``b`` tuples: O(b log b + kmax + Σ d) time; memory O(kmax + |M| + n·V·n) (the ring's
successor table, int16).

>>> fish = FishGrouping(range(8), seed=1, block=1)
>>> w = fish.route(np.zeros(16, dtype=np.int64), np.arange(16.0))
>>> sorted(np.bincount(w, minlength=8).tolist())  # the only key is hot: d = W = 8
[2, 2, 2, 2, 2, 2, 2, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.blocked import DEFAULT_BLOCK, BlockedScheme, Candidates
from elastream.algorithms.grouping.consistent_hash import DEFAULT_VIRTUAL_NODES, HashRing
from elastream.algorithms.grouping.hashing import choice
from elastream.algorithms.hotkeys.chk import ChoiceMemory, arithmetic_choices, remember
from elastream.algorithms.hotkeys.epoch_counter import (
    DEFAULT_ALPHA,
    DEFAULT_EPOCH,
    DEFAULT_KMAX,
    EpochCounter,
)
from elastream.core import rules
from elastream.core.errors import OptionError

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

DEFAULT_D_MIN = 2
DEFAULT_INTERVAL = 10.0
ASSIGNMENTS = ("heuristic", "count")
"""Values of ``assignment``: Algorithm 3, or the fewest tuples sent (§6.4, Fig. 16)."""
CANDIDATES = ("ring", "hash")
"""Values of ``candidates``: consistent hashing (§5), or ``HASH(k) mod n`` (Fig. 17)."""


def check_capacities(capacities: npt.ArrayLike | None) -> F64 | None:
    """Relative speeds indexed by worker id (each finite and > 0), or None.

    >>> check_capacities([1, 2]).tolist()
    [1.0, 2.0]
    """
    if capacities is None:
        return None
    array = np.asarray(capacities, dtype=np.float64)
    if array.ndim != 1 or len(array) == 0:
        raise OptionError("capacities", "must be a non-empty 1-D array of speeds", array.shape)
    if not (np.isfinite(array).all() and (array > 0).all()):
        raise OptionError("capacities", "must all be positive", array.tolist())
    return array


class FishGrouping(BlockedScheme):
    """FISH (see the module docstring)."""

    name = "fish"

    def __init__(
        self,
        workers: Sequence[int],
        *,
        seed: int = 0,
        block: int = DEFAULT_BLOCK,
        alpha: float = DEFAULT_ALPHA,
        epoch: int = DEFAULT_EPOCH,
        kmax: int = DEFAULT_KMAX,
        theta: float | None = None,
        d_min: int = DEFAULT_D_MIN,
        interval: float = DEFAULT_INTERVAL,
        service_time: float | None = None,
        capacities: npt.ArrayLike | None = None,
        virtual_nodes: int = DEFAULT_VIRTUAL_NODES,
        assignment: str = "heuristic",
        candidates: str = "ring",
    ) -> None:
        self.assignment = rules.choice("assignment", assignment, ASSIGNMENTS)
        self.candidates = rules.choice("candidates", candidates, CANDIDATES)
        self.counter = EpochCounter(kmax=kmax, epoch=epoch, alpha=alpha)
        self.memory = ChoiceMemory()
        self._theta = None if theta is None else rules.number("theta", theta, above=0, high=1)
        self.d_min = rules.integer("d_min", d_min)
        self.interval = rules.number("interval", interval, above=0, unit="seconds")
        self.service_time = None if service_time is None else rules.number(
            "service_time", service_time, above=0, unit="seconds")
        self.capacities = check_capacities(capacities)
        self.virtual_nodes = rules.integer("virtual_nodes", virtual_nodes)
        self._last_estimate: float | None = None
        self.last_choices: tuple[I64, I64] = (np.empty(0, np.int64), np.empty(0, np.int64))
        """(distinct keys, CHK's ``d`` for each) of the last block routed."""
        super().__init__(workers, seed=seed, block=block)
        self._workers_changed()

    @property
    def theta(self) -> float:
        """The hot-key threshold in force: as given, or 1/(4n) for the live workers."""
        return self._theta if self._theta is not None else 1.0 / (4 * len(self._workers))

    def _initial_load(self, surviving: F64) -> float:
        """A new worker's queue is empty."""
        return 0.0

    def set_workers(self, workers: Sequence[int]) -> None:
        """Change the live workers.

        Survivors keep their inferred queues, new ones start empty, and the ring gains or loses
        only the changed workers' virtual nodes.
        """
        ids = np.asarray(workers)
        if self.capacities is not None and ids.size and int(ids.max()) >= len(self.capacities):
            raise OptionError("capacities", "must give a speed for every worker id",
                              f"{len(self.capacities)} speeds, worker {int(ids.max())}")
        super().set_workers(workers)

    def _workers_changed(self) -> None:
        self.ring = HashRing(self._workers, virtual_nodes=self.virtual_nodes, seed=self.seed)
        speed = np.ones(len(self._workers))
        if self.assignment == "count":  # every tuple weighs the same, whatever the worker
            self._step = speed
            return
        if self.capacities is not None:
            if int(self._workers.max()) >= len(self.capacities):
                raise OptionError("capacities", "must give a speed for every worker id",
                                  f"{len(self.capacities)} speeds, worker {self._workers.max()}")
            speed = self.capacities[self._workers]
        self._step = (self.service_time or 1.0) / speed

    def _plan(self, unique: I64, inverse: I64, times: F64) -> Candidates:
        if self.assignment == "heuristic":
            self._drain(float(times[0]))
        d = self._classify(unique, inverse)
        self.last_choices = (unique, d)
        ptr = np.zeros(len(unique) + 1, dtype=np.int64)
        np.cumsum(d, out=ptr[1:])
        if self.candidates == "hash":
            cand = self._hashed(unique, d, ptr)
        else:
            cand = self._clockwise(unique, d, ptr)
        return Candidates(np.arange(len(unique), dtype=np.int64), ptr, cand)

    def _hashed(self, unique: I64, d: I64, ptr: I64) -> I64:
        """``(HASH(k) + j) mod n`` for ``j < d`` of each key, flattened by ``ptr``."""
        n = len(self._workers)
        start = np.repeat(choice(unique, n, self.seed), d)
        offset = np.arange(int(ptr[-1]), dtype=np.int64) - np.repeat(ptr[:-1], d)
        hashed: I64 = (start + offset) % n
        return hashed

    def _clockwise(self, unique: I64, d: I64, ptr: I64) -> I64:
        """The first ``d`` distinct workers clockwise from each key on the ring, by ``ptr``."""
        points = self.ring.point(unique)
        cand = np.empty(int(ptr[-1]), dtype=np.int64)
        few = d <= 2
        if few.any():
            pair = self.ring.successors(points[few], 2)
            starts = ptr[:-1][few]
            cand[starts] = pair[:, 0]
            second = d[few] == 2
            if second.any():
                cand[starts[second] + 1] = pair[second, 1]
        many = np.flatnonzero(~few)
        if len(many):
            rows = self.ring.successors(points[many], int(d[many].max()))
            sizes = d[many]
            row = np.repeat(np.arange(len(many)), sizes)
            col = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            cand[np.repeat(ptr[:-1][many], sizes) + col] = rows[row, col]
        return cand

    def _classify(self, unique: I64, inverse: I64) -> I64:
        """Algorithms 1 and 2 for a block: count it, then CHK's ``d`` for each distinct key.

        Per tuple, CHK runs on the counters right after the tuple is counted. A block spanning
        several epochs is classified at the end of every epoch it touches (each key only where
        it occurs), and a key gets the largest ``d`` it earned in the block: the counters at
        earlier epoch ends come from the counters at the block's start, decayed and increased
        by the block's exact per-epoch counts (replacements inside the block are ignored for
        this); the last epoch uses the counters after the block. So a key that is hot early
        in a block and cold by its end keeps its workers for the whole block (per tuple it
        would keep them while hot, then drop to 2), instead of losing them for the whole block.
        """
        counter, n = self.counter, len(self._workers)
        segment = (counter.in_epoch + np.arange(len(inverse))) // counter.epoch
        first = int(segment[0])
        segment -= first
        segments = int(segment[-1]) + 1
        size = len(unique)
        cells = np.bincount(segment * size + inverse, minlength=segments * size)
        cells = cells.reshape(segments, size)
        count = np.empty((segments, size))
        total, top = np.empty(segments), np.empty(segments)
        if segments > 1:  # counters at the ends of the block's earlier epochs
            alpha = counter.alpha
            now = counter.estimate(unique) * alpha**first
            mass = counter.total * alpha**first
            others = counter.max_count * alpha**first
            for e in range(segments - 1):
                now = now + cells[e]
                mass += float(cells[e].sum())
                count[e], total[e], top[e] = now, mass, max(float(now.max()), others)
                now, mass, others = now * alpha, mass * alpha, others * alpha
        counter.add(unique, inverse)
        count[-1], total[-1], top[-1] = counter.estimate(unique), counter.total, counter.max_count
        freq = count / total[:, None]
        here = (cells > 0) & (freq > self.theta)
        wanted = np.zeros((segments, size), dtype=np.int64)
        if here.any():
            rows = np.nonzero(here)[0]
            wanted[here] = arithmetic_choices(freq[here], top[rows] / total[rows], n, self.d_min)
        hot = np.asarray(here.any(axis=0), dtype=bool)
        return remember(unique, hot, wanted.max(axis=0), n, self.memory)

    def _drain(self, now: float) -> None:
        """Algorithm 3 lines 3–10: every ``T`` seconds, subtract what each worker processed."""
        if self._last_estimate is None:
            self._last_estimate = now
        elif now - self._last_estimate > self.interval:
            if self.service_time is not None:
                done = (now - self._last_estimate) / self._step
                self._load = np.maximum(self._load - done, 0.0)
            self._last_estimate = now
