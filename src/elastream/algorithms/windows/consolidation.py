"""Enorm's efficient consolidation: build every requested window from the fewest partials.

Madsen, Zhou, Su, *Enorm* (DEBS 2016), §6.1 and Figs. 7–8. The compute stage emits panes (the
gcd of all lengths and slides). A window instance may be assembled from panes *or from complete
instances of other, shorter requested windows* ("compatible" windows), since those are computed
anyway. Choosing the parts is a shortest path over pane boundaries inside the window: an edge
from ``t`` to ``t + len`` exists for a pane and for every shorter spec whose instances start at
``t``; the fewest edges is the fewest merges. Enorm counts one merge per partial consumed, so a
window of ``k`` parts costs ``k`` (Fig. 7: windows 5, 10, 15 and 20 minutes over 1-minute panes
need 86 merges per hour instead of the naive 240).

Which parts fit depends on where the window starts relative to the other specs' slides, so a
recipe is computed per *phase*: the window's start modulo the lcm of all slides.

Complexity: per spec and phase, a breadth-first search over ``L/pane`` points with one edge per
shorter spec: O(Σ_spec phases · L/pane · #specs). Recipes are built once per job.

>>> from elastream.core.windows import WindowSpec
>>> specs = [WindowSpec.parse(w) for w in ("5m", "10m", "15m", "20m")]
>>> plan = plan_consolidation(specs, pane=60_000)  # Fig. 7 uses 1-minute partials
>>> plan.merges(horizon_ms=3_600_000), naive_merges(specs, 3_600_000, pane=60_000)
(86, 240)
>>> plan.recipe_for(specs[2], start_ms=0).parts
(Part(offset_ms=0, length_ms=600000), Part(offset_ms=600000, length_ms=300000))
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from elastream.core.windows import WindowSpec, pane_ms, unique_specs


@dataclass(frozen=True, order=True)
class Part:
    """A partial result used to build a window: ``length_ms`` long, ``offset_ms`` after its start.

    A part as long as the pane is a pane; a longer part is a complete instance of the shorter
    requested window of that length.
    """

    offset_ms: int
    length_ms: int


@dataclass(frozen=True)
class Recipe:
    """How to build the instances of ``spec`` whose start is ``phase_ms`` modulo the period."""

    spec: WindowSpec
    phase_ms: int
    parts: tuple[Part, ...]


@dataclass(frozen=True)
class ConsolidationPlan:
    """Recipes for every spec and phase of a job, shortest spec first."""

    pane_ms: int
    period_ms: int
    specs: tuple[WindowSpec, ...]
    recipes: tuple[Recipe, ...]

    def recipes_of(self, spec: WindowSpec) -> tuple[Recipe, ...]:
        """One recipe per phase of ``spec`` (``period / slide`` of them)."""
        return tuple(r for r in self.recipes if r.spec == spec)

    def recipe_for(self, spec: WindowSpec, start_ms: int) -> Recipe:
        """The recipe for the instance of ``spec`` that starts at ``start_ms``."""
        phase = start_ms % self.period_ms
        return next(r for r in self.recipes_of(spec) if r.phase_ms == phase)

    def merges(self, horizon_ms: int) -> int:
        """Partials consumed to build every instance starting in ``[0, horizon_ms)``."""
        total = 0
        for spec in self.specs:
            for start in range(0, horizon_ms, spec.slide_ms):
                total += len(self.recipe_for(spec, start).parts)
        return total


def naive_merges(specs: Sequence[WindowSpec], horizon_ms: int, pane: int | None = None) -> int:
    """Partials consumed when every instance is built from panes alone (Enorm Fig. 8)."""
    pane = _checked_pane(specs, pane)
    specs = unique_specs(specs)
    return sum(
        len(range(0, horizon_ms, s.slide_ms)) * (s.length_ms // pane) for s in specs
    )


def plan_consolidation(specs: Sequence[WindowSpec], pane: int | None = None) -> ConsolidationPlan:
    """Recipes with the fewest parts for every spec and phase (ties: longer parts first).

    ``pane`` defaults to the gcd of all lengths and slides; a smaller pane must divide it.
    """
    ordered = unique_specs(specs)
    pane = _checked_pane(ordered, pane)
    period = math.lcm(*(s.slide_ms for s in ordered))
    recipes: list[Recipe] = []
    for spec in ordered:
        shorter = [s for s in ordered if s.length_ms < spec.length_ms]
        for phase in range(0, period, spec.slide_ms):
            recipes.append(Recipe(spec, phase, _fewest_parts(spec.length_ms, phase, pane, shorter)))
    return ConsolidationPlan(pane, period, ordered, tuple(recipes))


def _checked_pane(specs: Sequence[WindowSpec], pane: int | None) -> int:
    largest = pane_ms(specs)
    if pane is None:
        return largest
    if pane <= 0 or largest % pane:
        raise ValueError(f"pane must divide every window length and slide ({largest} ms), "
                         f"got {pane}")
    return pane


def _fewest_parts(
    length: int, start: int, pane: int, shorter: Sequence[WindowSpec]
) -> tuple[Part, ...]:
    """Breadth-first search from offset 0 to ``length``; edges are panes and shorter windows."""
    came_from: dict[int, Part] = {}
    frontier = deque([0])
    seen = {0}
    while frontier:
        at = frontier.popleft()
        if at == length:
            break
        # Longest parts first, so among equally short paths the one with longer parts wins.
        edges = sorted(
            (s.length_ms for s in shorter if (start + at) % s.slide_ms == 0), reverse=True
        )
        for part_len in [*edges, pane]:
            nxt = at + part_len
            if nxt <= length and nxt not in seen:
                seen.add(nxt)
                came_from[nxt] = Part(at, part_len)
                frontier.append(nxt)
    parts: list[Part] = []
    at = length
    while at > 0:
        part = came_from[at]
        parts.append(part)
        at = part.offset_ms
    return tuple(reversed(parts))
