"""Enorm's split-or-combine decision: run a windowed component as panes + consolidate, or not.

Madsen, Zhou, Su, *Enorm* (DEBS 2016), §5.1 and §5.1.1–5.1.2. A *combined* component executes
every tuple once per overlapping window (a rigid stateful component: moving one of its key groups
pauses it while the state moves). A *split* component executes every tuple once, into a partial
window (pane), and a downstream consolidate merges the panes into every window (a flexible
component: a key group moves instantly, its old partials are merged downstream). Per period ``p``
(the longest window) the cost model of §5.1.1 gives, with the terms of :class:`CostTerms`:

=========  ===============================================  ===================
component  CPU seconds per period                           pause per period
=========  ===============================================  ===================
split      ``T_p·E + PW_p·K_1·#keygroups + MK_p·K_1``         0 (negligible)
combine    ``T_p·W·E + MK_p·K_1·PW_p``                        ``MK_p·L``
=========  ===============================================  ===================

and §5.1.2 picks, after every period, the component with the lower CPU cost whose latency stays
within a user threshold (:func:`decide`). Split's latency is taken as 0: its partials are
serialised by a separate thread once they no longer change (§5.1.1, "Split - Latency").

Units: every time term is in seconds, counts are per period ``p``; both CPU costs are seconds of
CPU per period and the latency is seconds of pause per period (the moves of a period add up).
:func:`estimate_terms` averages the terms over measured periods.

Complexity: O(1) per decision; O(n) to estimate from ``n`` periods.

>>> terms = CostTerms(T_p=600_000, E=1e-5, W=2, PW_p=10, MK_p=0, K_1=0.002, L=0.1,
...                   key_groups=128)
>>> round(terms.split_cpu, 2), round(terms.combine_cpu, 2), terms.combine_latency
(8.56, 12.0, 0.0)
>>> decide(terms, latency_threshold=1.0, current="combine").choice
<Execution.SPLIT: 'split'>

References:
    K. G. S. Madsen, Y. Zhou, L. Su. Enorm: Efficient window-based computation in large-scale
    distributed stream processing systems. DEBS 2016, §5.1. Its §2 and §3.3 cite an earlier
    cost model for sharing computation between overlapping windows: K. G. S. Madsen, Y. Zhou,
    L. Su, Grand challenge: MapReduce-style processing of fast sensor data, DEBS 2013.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from elastream.core import rules
from elastream.core.errors import OptionError


class Execution(StrEnum):
    """How a windowed component runs."""

    SPLIT = "split"
    """Panes (one execution per tuple) and a downstream consolidate; moves are instant."""
    COMBINE = "combine"
    """Every tuple executed once per overlapping window; moves pause the component."""


@dataclass(frozen=True)
class CostTerms:
    """The terms of Enorm §5.1.1 for one component over one period ``p`` (the longest window).

    ``T_p`` (tuples): tuples arriving within ``p``. ``E`` (s): average seconds to execute the user
    logic for one tuple in one window. ``W`` (≥ 1): overlapping windows, i.e. executions of a tuple
    in a combined component. ``PW_p`` (≥ 1): partial windows (panes) needed within ``p``.
    ``MK_p`` (key groups, ≥ 0, may be fractional as an average): key groups migrated for load
    balance within ``p``. ``K_1`` (s): cost of migrating a key group holding one copy of state —
    serialising, sending, deserialising and merging one key group's partial (``K_x = x·K_1``).
    ``L`` (s): pause of migrating one key group with its state (disruptive migration).
    ``key_groups`` (≥ 1): the component's key groups. ``combine_consolidation`` (s, ≥ 0): not
    Enorm's; seconds per period a combined component spends merging its window partials in a
    separate stateful stage, as elastream's does (0, the default, is the paper's model, whose
    combined operator holds its windows itself).

    >>> CostTerms(T_p=1, E=1.0, W=0, PW_p=1, MK_p=0, K_1=0, L=0, key_groups=1)
    Traceback (most recent call last):
    ...
    elastream.core.errors.OptionError: W must be an integer >= 1, got 0
    """

    T_p: float
    E: float
    W: int
    PW_p: int
    MK_p: float
    K_1: float
    L: float
    key_groups: int
    combine_consolidation: float = 0.0

    def __post_init__(self) -> None:
        for name in ("W", "PW_p", "key_groups"):
            rules.integer(name, getattr(self, name))
        for name in ("T_p", "E", "MK_p", "K_1", "L", "combine_consolidation"):
            rules.number(name, getattr(self, name))

    @property
    def split_cpu(self) -> float:
        """``T_p·E + PW_p·K_1·#keygroups + MK_p·K_1`` seconds of CPU per period."""
        return self.T_p * self.E + self.PW_p * self.K_1 * self.key_groups + self.MK_p * self.K_1

    @property
    def combine_cpu(self) -> float:
        """``T_p·W·E + MK_p·K_1·PW_p + combine_consolidation`` CPU seconds per period.

        ``K_{PW_p} = PW_p·K_1``.
        """
        return (self.T_p * self.W * self.E + self.MK_p * self.K_1 * self.PW_p
                + self.combine_consolidation)

    @property
    def split_latency(self) -> float:
        """0 s: a split component moves key groups instantly (§5.1.1, "Split - Latency")."""
        return 0.0

    @property
    def combine_latency(self) -> float:
        """``MK_p·L`` seconds of pause per period for the disruptive moves."""
        return self.MK_p * self.L


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` chose for the next period, with the costs it compared.

    ``split_cpu`` and ``combine_cpu`` are CPU seconds per period; ``combine_latency`` is the pause
    in seconds per period (split's is 0); ``current`` is how the component ran before.
    """

    choice: Execution
    current: Execution
    split_cpu: float
    combine_cpu: float
    combine_latency: float
    latency_threshold: float
    reason: str

    @property
    def switch(self) -> bool:
        """Whether the component must be split or combined (the choice differs from now)."""
        return self.choice != self.current


def decide(terms: CostTerms, *, latency_threshold: float,
           current: Execution | str) -> Decision:
    """The lower-CPU execution whose pause per period is within ``latency_threshold`` (§5.1.2).

    Split's pause is 0, so split is always allowed; combine only when ``MK_p·L <=
    latency_threshold`` (met exactly counts as within). Among the allowed ones the lower CPU cost
    wins; on equal costs the component stays as it is (``current``), since a change has a cost of
    its own that the model leaves out (combine cannot use instant migration, §5.1.2).

    Args:
        terms: the component's :class:`CostTerms` for the period just ended.
        latency_threshold: seconds of pause per period the user accepts (``>= 0``; ``math.inf``:
            no bound).
        current: ``"split"`` or ``"combine"``, how the component runs now.

    >>> moving = CostTerms(T_p=600_000, E=1e-5, W=6, PW_p=30, MK_p=20, K_1=0.02, L=0.1,
    ...                    key_groups=128)
    >>> d = decide(moving, latency_threshold=1.0, current="split")
    >>> d.choice.value, round(d.split_cpu, 1), round(d.combine_cpu, 1), d.combine_latency, d.switch
    ('split', 83.2, 48.0, 2.0, False)
    >>> d.reason
    'combine would pause 2 s per period (MK_p·L), above the threshold of 1 s'
    >>> decide(moving, latency_threshold=float("inf"), current="split").choice.value
    'combine'
    """
    now = _execution(current)
    if not (isinstance(latency_threshold, int | float) and latency_threshold >= 0):
        raise OptionError("latency_threshold", "must be a number of seconds >= 0 (inf: no bound)",
                          latency_threshold)
    split, combine, pause = terms.split_cpu, terms.combine_cpu, terms.combine_latency
    if pause > latency_threshold:
        choice = Execution.SPLIT
        reason = (f"combine would pause {pause:.3g} s per period (MK_p·L), above the threshold "
                  f"of {latency_threshold:.3g} s")
    elif combine < split:
        choice = Execution.COMBINE
        reason = (f"combine costs {combine:.3g} CPU s per period, split {split:.3g}; combine's "
                  f"pause {pause:.3g} s is within {latency_threshold:.3g} s")
    elif split < combine:
        choice = Execution.SPLIT
        reason = f"split costs {split:.3g} CPU s per period, combine {combine:.3g}"
    else:
        choice = now
        reason = f"equal CPU cost ({split:.3g} s per period): stay {now.value}"
    return Decision(choice=choice, current=now, split_cpu=split, combine_cpu=combine,
                    combine_latency=pause, latency_threshold=float(latency_threshold),
                    reason=reason)


@dataclass(frozen=True)
class PeriodObservation:
    """What was measured over one period ``p`` (the longest window) of a running component.

    ``rows``: tuples that arrived. ``seconds_per_row``: seconds to execute the user logic for one
    tuple in one window. ``windows``: overlapping windows (W). ``panes_per_window``: panes in the
    longest window (PW_p). ``moved_key_groups``: key groups migrated for load balance.
    ``seconds_per_partial``: seconds to serialise, send and merge one key group's partial (K_1).
    ``move_seconds``: average pause of one disruptive move of a key group with its state (L;
    ignored when nothing moved).
    """

    rows: int
    seconds_per_row: float
    windows: int
    panes_per_window: int
    moved_key_groups: int
    seconds_per_partial: float
    move_seconds: float = 0.0

    def __post_init__(self) -> None:
        for name in ("windows", "panes_per_window"):
            rules.integer(name, getattr(self, name))
        for name in ("rows", "moved_key_groups"):
            rules.integer(name, getattr(self, name), low=0)
        for name in ("seconds_per_row", "seconds_per_partial", "move_seconds"):
            rules.number(name, getattr(self, name))


def estimate_terms(observations: Sequence[PeriodObservation], *, key_groups: int) -> CostTerms:
    """Average :class:`CostTerms` over measured periods of one component.

    ``T_p`` and ``MK_p`` are means per period; ``E`` is weighted by rows (a busier period says
    more; the plain mean when no period had rows); ``K_1`` is the mean; ``L`` is weighted by the
    key groups moved, 0 when none moved (then ``MK_p = 0`` and the pause is 0 whatever ``L``).
    ``W`` and ``PW_p`` come from the job and must agree across periods.

    >>> obs = [PeriodObservation(rows=100, seconds_per_row=1e-4, windows=2, panes_per_window=10,
    ...                          moved_key_groups=0, seconds_per_partial=0.01),
    ...        PeriodObservation(rows=300, seconds_per_row=2e-4, windows=2, panes_per_window=10,
    ...                          moved_key_groups=4, seconds_per_partial=0.03, move_seconds=0.5)]
    >>> t = estimate_terms(obs, key_groups=8)
    >>> t.T_p, round(t.E, 6), t.MK_p, round(t.K_1, 3), t.L
    (200.0, 0.000175, 2.0, 0.02, 0.5)
    """
    if not observations:
        raise OptionError("observations", "must hold at least one period", observations)
    for name in ("windows", "panes_per_window"):
        values = sorted({getattr(o, name) for o in observations})
        if len(values) > 1:
            raise OptionError(name, "must be the same in every observed period", values)
    n = len(observations)
    rows = sum(o.rows for o in observations)
    moved = sum(o.moved_key_groups for o in observations)
    e = (sum(o.rows * o.seconds_per_row for o in observations) / rows if rows
         else sum(o.seconds_per_row for o in observations) / n)
    pause = (sum(o.moved_key_groups * o.move_seconds for o in observations) / moved if moved
             else 0.0)
    return CostTerms(T_p=rows / n, E=e, W=observations[0].windows,
                     PW_p=observations[0].panes_per_window, MK_p=moved / n,
                     K_1=sum(o.seconds_per_partial for o in observations) / n, L=pause,
                     key_groups=key_groups)


def _execution(value: Execution | str) -> Execution:
    return Execution(rules.choice("current", value, tuple(Execution)))
