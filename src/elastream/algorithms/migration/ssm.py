"""``ssm``: optimal single-step migration (Ding et al., §4.2–4.3, Figs. 5–7).

Find the target task intervals for ``n′`` nodes and their nodes that move the least state while
every node's work stays within ``(1+τ)·W/n′`` (Definition 4.1). This is the paper's dynamic
program, organised over the *right* end of each target interval rather than the sub-problems
``⟨[α, m), [γ, n), n_P⟩`` of Fig. 7; the same observations make it small:

- a target interval earns the state it shares with the one current node it is given
  (Lemma 4.1); only the intervals that straddle a boundary can compete for a current node;
- with intervals in task order, the nodes matched with non-zero gain are in task order as well
  (Lemmas 4.1–4.2), so the only memory the program needs at a cut ``x`` that falls *inside* a
  current interval is whether that interval's node has already been given to a target interval
  on the left (Lemma 4.3's "two possible values of y");
- a target interval ``[a, x)`` can then only earn: the left part of the node containing ``a``
  (if it starts before ``a`` and is still free), the right part of the node containing ``x−1``
  (if it runs past ``x``, which takes that node from the right), or the whole of one node lying
  inside — the largest such (Lemma 4.5), by a range-maximum table;
- empty target intervals are allowed ("we can always set a task interval to empty", Lemma 4.4),
  so using ``n′`` intervals is never worse than using fewer.

``G[k][x][c]`` is the largest gain of cutting tasks ``[0, x)`` into ``k`` intervals, each of work
``≤ (1+τ)·W/n′``, with ``c`` = "the current node straddling ``x`` is taken". The answer is
``G[n′][m][0]``; back-pointers give the intervals and the matched nodes, and the other target
intervals take the remaining nodes (:func:`~.matching.assign_nodes`). Nothing is left out, so
the result is optimal; the tests check it against exhaustive search over every partitioning
and every node assignment.

Complexity: the candidate starts ``a`` of an interval ending at ``x`` lie in a band of width
``b ≤ m + 1`` (the most tasks one interval can hold within the load bound), so time is
O(n′·m·b) ⊆ O(m²·n′) as in the paper, vectorised over ``(x, a)`` with numpy per ``k``; the
back-pointers take O(m·n′) space (the paper's bound) and the band's gain tables O(m·b) more.
The tests time nothing; ``benchmarks/migration`` reports m = 64, n′ = 16 at well under 2 ms.

Status: ``optimal``, or ``infeasible`` with the reason when no partitioning meets τ (a task
heavier than ``(1+τ)·W/n′``, or more intervals needed than ``n′``). No options.

References:
    J. Ding, T. Z. J. Fu, R. T. B. Ma, M. Winslett, Y. Yang, Z. Zhang, H. Chao. Efficient
    Operator State Migration for Cloud-Based Data Stream Management Systems. 2015, §4.

>>> from elastream.algorithms.migration.intervals import MigrationInstance
>>> inst = MigrationInstance(work=[1] * 20, state=[1] * 20, intervals=[(0, 13), (13, 20)],
...                          target_nodes=3, tau=0.4)
>>> p = plan(inst)  # Table 3, t_1 → t_2: at most 9 tasks a node
>>> p.status.value, p.cost, p.intervals, p.node_of_interval
('optimal', 4.0, ((0, 4), (4, 13), (13, 20)), (2, 0, 1))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from elastream.algorithms.migration.intervals import (
    F64,
    I64,
    LOAD_RTOL,
    MigrationInstance,
    MigrationPlan,
    assemble,
    fewest_intervals,
    no_plan,
)
from elastream.algorithms.migration.matching import assign_nodes
from elastream.core.plan import PlanStatus

NAME: Final = "ssm"
_NONE = -np.inf


@dataclass(frozen=True)
class Solution:
    """The program's answer: the gain, the target boundaries and the matched nodes."""

    gain: float
    bounds: I64
    pairs: dict[int, int]
    """``{target interval: current node}`` for the intervals matched with gain."""
    band: int


def plan(instance: MigrationInstance, *, options: None = None) -> MigrationPlan:
    """The least-cost plan meeting τ (module docstring); never returns nothing."""
    del options
    reason = infeasibility(instance.work, instance.capacity, instance.target_nodes,
                           instance.tau)
    if reason:
        return no_plan(NAME, reason)
    found = solve(instance.work, np.r_[0.0, np.cumsum(instance.state)], instance.bounds,
                  instance.target_nodes, instance.capacity)
    if found is None:  # pragma: no cover - infeasibility() catches every case first
        return no_plan(NAME, "no partitioning meets tau")
    nodes = assign_nodes(instance.n, instance.target_nodes, found.pairs)
    return assemble(instance, NAME, bounds=found.bounds, nodes=nodes,
                    status=PlanStatus.OPTIMAL,
                    details={"gain": found.gain, "band": float(found.band)})


def infeasibility(work: F64, capacity: float, target: int, tau: float) -> str:
    """Why no partitioning of the tasks into ``target`` intervals meets τ (``""`` if one does)."""
    heavy = work > capacity * (1 + LOAD_RTOL)
    if heavy.any():
        j = int(np.argmax(work))
        return (f"task {j} alone has work {work[j]:.6g} > (1+tau)*W/n' = {capacity:.6g} "
                f"(tau = {tau:g}, n' = {target})")
    need = fewest_intervals(work, capacity)
    if need > target:
        return (f"the tasks need at least {need} intervals of work <= (1+tau)*W/n' = "
                f"{capacity:.6g}, more than n' = {target} (tau = {tau:g})")
    return ""


def solve(work: F64, state_prefix: F64, current: I64, target: int,
          capacity: float) -> Solution | None:
    """Run the program for ``current`` boundaries (``n + 1``) and ``target`` = n′.

    ``None`` when no partitioning into ``target`` intervals of work ``≤ capacity`` exists.
    """
    table = _Tables(work, state_prefix, np.asarray(current, dtype=np.int64), capacity)
    m, width = table.m, table.width
    # value[x, c] = G[k][x][c]; row m + 1 stays −inf, the start of every band slot not allowed
    value = np.full((m + 2, 2), _NONE)
    value[0, 0] = 0.0
    back = np.empty((target, m + 1, 2), dtype=np.int64)
    for k in range(target):
        # candidates[x, c_x, c_a * width + d]: G[x − d][c_a] + gain of [x − d, x)
        before = value[table.start].transpose(0, 2, 1)  # (m+1, 2, width)
        flat = (before[:, None, :, :] + table.gain).reshape(m + 1, 2, 2 * width)
        back[k] = np.argmax(flat, axis=2)
        value[: m + 1] = np.max(flat, axis=2)
    if not np.isfinite(value[m, 0]):
        return None
    return _trace(table, back, float(value[m, 0]))


class _Tables:
    """The band of candidate starts of every interval end and the gain of each transition."""

    def __init__(self, work: F64, prefix: F64, current: I64, capacity: float) -> None:
        m = work.size
        self.m, self.prefix = m, prefix
        load = np.r_[0.0, np.cumsum(work)]
        lowest = np.searchsorted(load, load - capacity * (1 + LOAD_RTOL), "left")
        self.width = width = int((np.arange(m + 1) - lowest).max()) + 1
        ends = np.arange(m + 1)[:, None]
        starts = ends - np.arange(width)[None, :]
        self.valid = starts >= lowest[:, None]
        self.start = np.where(self.valid, starts, m + 1)  # m + 1: the −inf row of the DP
        self.lb, self.ub = current[:-1], current[1:]
        self.node = np.repeat(np.arange(current.size - 1), np.diff(current))  # of each task
        self.split = np.zeros(m + 1, dtype=bool)  # the cut falls inside a current interval
        self.split[1:m] = self.node[:-1] == self.node[1:]
        self.node_state = prefix[self.ub] - prefix[self.lb]
        self.gain = self._gains(ends, starts)

    def _gains(self, x: I64, a: I64) -> F64:
        """``gain[x, c_x, c_a, d]`` for the interval ``[x − d, x)`` (``−inf`` if not allowed)."""
        m, p = self.m, self.prefix
        a = np.clip(a, 0, m)
        x = np.broadcast_to(x, a.shape)
        left_node = self.node[np.minimum(a, m - 1)]
        right_node = self.node[np.maximum(x - 1, 0)]
        split_a, split_x = self.split[a], self.split[x]
        empty = a == x
        inside = ~empty & split_a & split_x & (left_node == right_node)
        whole = self._inner(np.searchsorted(self.lb, a, "left"),
                            np.searchsorted(self.ub, x, "right") - 1)
        left = np.where(split_a, p[self.ub[left_node]] - p[a], _NONE)
        right = np.where(split_x, p[x] - p[self.lb[right_node]], _NONE)
        g = np.empty((*a.shape, 2, 2))  # [..., c_x, c_a]
        g[..., 0, 0] = np.maximum.reduce([np.zeros(a.shape), whole, left])
        g[..., 0, 1] = np.maximum(0.0, whole)
        g[..., 1, 0] = right
        g[..., 1, 1] = right
        g[inside] = [[0.0, _NONE], [0.0, 0.0]]
        g[inside, 1, 0] = (p[x] - p[a])[inside]
        g[empty] = [[0.0, _NONE], [_NONE, 0.0]]
        g[empty & ~split_x, 1, 1] = _NONE
        g[~self.valid] = _NONE
        result: F64 = g.transpose(0, 2, 3, 1)  # [x, c_x, c_a, d], the candidates' layout
        return result

    def _inner(self, first: I64, last: I64) -> F64:
        """Largest state of a current interval among nodes ``first … last`` (``−inf`` if none)."""
        size = self.node_state.size
        levels = [self.node_state]
        while (1 << len(levels)) <= size:
            prev, half = levels[-1], 1 << (len(levels) - 1)
            levels.append(np.maximum(prev[:-half], prev[half:]))
        length = last - first + 1
        ok = length > 0
        level = np.zeros_like(length)
        level[ok] = np.floor(np.log2(length[ok])).astype(np.int64)
        out = np.full(length.shape, _NONE)
        for k, row in enumerate(levels):
            at = ok & (level == k)
            if at.any():
                lo, hi = first[at], last[at] - (1 << k) + 1
                out[at] = np.maximum(row[lo], row[hi])
        return out

    def claim(self, a: int, x: int, c_a: int, c_x: int) -> tuple[int, float] | None:
        """The node interval ``[a, x)`` takes under transition ``c_a → c_x``, and its gain."""
        if a == x:
            return None
        p = self.prefix
        left, right = int(self.node[a]), int(self.node[x - 1])
        if self.split[a] and self.split[x] and left == right:
            return (left, float(p[x] - p[a])) if c_x and not c_a else None
        if c_x:
            return right, float(p[x] - p[self.lb[right]])
        options: list[tuple[float, int]] = []
        if self.split[a] and not c_a:
            options.append((float(p[self.ub[left]] - p[a]), left))
        first = int(np.searchsorted(self.lb, a, "left"))
        last = int(np.searchsorted(self.ub, x, "right")) - 1
        if first <= last:
            z = first + int(np.argmax(self.node_state[first:last + 1]))
            options.append((float(self.node_state[z]), z))
        if not options:
            return None
        gain, node = max(options)
        return (node, gain) if gain > 0 else None


def _trace(table: _Tables, back: I64, gain: float) -> Solution:
    target, width = back.shape[0], table.width
    x, c = table.m, 0
    cuts = [x]
    pairs: dict[int, int] = {}
    for k in range(target - 1, -1, -1):
        code = int(back[k, x, c])
        c_a, d = divmod(code, width)
        a = x - d
        claimed = table.claim(a, x, c_a, c)
        if claimed is not None:
            pairs[k] = claimed[0]
        x, c = a, c_a
        cuts.append(x)
    return Solution(gain=gain, bounds=np.array(cuts[::-1], dtype=np.int64), pairs=pairs,
                    band=width)
