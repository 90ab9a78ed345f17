"""Enorm's *combined* execution of windows: every tuple executed once per window it falls in.

Madsen, Zhou, Su, *Enorm* (DEBS 2016), §5.1. Split execution reduces a record to its pane once
(:mod:`.panes`) and builds windows from panes downstream (:mod:`.assemble`); combined execution
adds the record to each of the ``W`` window instances that contain it, over every requested
window spec, and the stateful stage only merges partials of one instance. Here a batch of
records becomes *window partials*: one row per group (key, …), window instance and spec.

A window partial is a part with a negative ``length``, a marker that names its spec (the index
in the :class:`~elastream.algorithms.windows.consolidation.ConsolidationPlan`) and whether it is
an *anchor*: every record is an anchor in exactly one partial — the instance that ends last
among all the windows holding it (first spec on ties). A window partial thus never mixes with
panes and reusable shorter windows: :func:`~.assemble.assemble` merges it into its own instance
only, so a window gathers exactly its rows whether they came split, combined, or both (a job
that switches between the two, live). Lateness is per instance, like Spark's window
aggregation: a record that reaches the stateful stage after some of its windows were emitted
counts in the others; it was dropped whole when its anchor instance was, which is how late
records are counted (:func:`late_records`).

Cost: ``W ≈ Σ_spec length / slide`` rows per record, then one hash aggregation: O(records · W).

>>> import pyarrow as pa
>>> from elastream.core.windows import WindowSpec
>>> from elastream.algorithms.windows.consolidation import plan_consolidation
>>> plan = plan_consolidation([WindowSpec(4, 2)], pane=2)
>>> records = pa.table({"key": ["a", "a"], "start": [2, 6], "v": [1.0, 2.0]})
>>> out = window_partials(records, plan, ["key", "start"], ["n", "sum_v"])
>>> sorted((r["start"], r["n"], r["sum_v"], bool(anchor_of(r["length"], 1)))
...        for r in out.to_pylist())
[(0, 1, 1.0, False), (2, 1, 1.0, True), (4, 1, 2.0, False), (6, 1, 2.0, True)]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from elastream.algorithms.windows.consolidation import ConsolidationPlan
from elastream.algorithms.windows.panes import pane_partials
from elastream.core.aggregates import RECORDS

LENGTH = "length"
"""The column that tells a pane (its length, > 0) from a window partial (a marker, < 0)."""


def marker(spec: int, anchor: bool, specs: int) -> int:
    """The ``length`` of a window partial of spec index ``spec`` (of ``specs``).

    >>> marker(0, False, 2), marker(1, False, 2), marker(0, True, 2)
    (-1, -2, -3)
    """
    return -(1 + spec + specs * int(anchor))


def spec_of(length: np.ndarray | int, specs: int) -> np.ndarray:
    """The spec index of window partials' markers."""
    return np.asarray((-np.asarray(length) - 1) % specs, dtype=np.int64)


def anchor_of(length: np.ndarray | int, specs: int) -> np.ndarray:
    """Whether window partials' markers are anchors."""
    return np.asarray((-np.asarray(length) - 1) // specs == 1)


def window_partials(records: pa.Table, plan: ConsolidationPlan, group: Sequence[str],
                    partials: Sequence[str], *, prefix: str = "",
                    start: str = "start") -> pa.Table:
    """One partial per ``group`` value, window instance and spec, with ``length`` markers.

    ``records``: one row per record, with ``start`` its pane's start (ms; pane boundaries are
    window boundaries, so a record's windows follow from its pane). The output has the
    ``group`` columns (``start`` now each window's start), ``length`` and ``partials``.
    """
    pane_start = records.column(start).to_numpy()
    at = records.schema.get_field_index(start)
    copies = []
    for first, inside, length in _instances(pane_start, plan):
        copy = records.set_column(at, start, pa.array(first, pa.int64()))
        copy = copy.append_column(LENGTH, pa.array(length, pa.int64()))
        copies.append(copy if inside.all() else copy.filter(pa.array(inside)))
    return pane_partials(pa.concat_tables(copies), [*group, LENGTH], partials, prefix=prefix)


def window_partial_count(panes: pa.Table, plan: ConsolidationPlan, group: Sequence[str],
                         start: str = "start") -> int:
    """How many window partials :func:`window_partials` would make of these panes' records.

    ``panes``: pane partials (or records), ``group`` columns with ``start`` the pane's start.
    What combined execution would send the consolidate stage, measured while split. Below,
    the window [2, 6) twice: anchor of the first pane's records, not of the second's.

    >>> from elastream.core.windows import WindowSpec
    >>> from elastream.algorithms.windows.consolidation import plan_consolidation
    >>> plan = plan_consolidation([WindowSpec(4, 2)], pane=2)
    >>> window_partial_count(pa.table({"key": ["a", "a"], "start": [2, 4]}), plan,
    ...                      ["key", "start"])
    4
    """
    return int(window_partials(panes.select(list(group)), plan, group, [], start=start).num_rows)


def pane_partial_count(records: pa.Table, group: Sequence[str]) -> int:
    """How many pane partials split execution would make of ``records``, measured combined."""
    return int(pane_partials(records.select(list(group)), group, []).num_rows)


def executions(pane_start: np.ndarray, plan: ConsolidationPlan) -> int:
    """How many times combined execution runs records of these panes: their window count.

    >>> from elastream.core.windows import WindowSpec
    >>> from elastream.algorithms.windows.consolidation import plan_consolidation
    >>> executions(np.array([0, 5]), plan_consolidation([WindowSpec(10, 5), WindowSpec(5, 5)]))
    6
    """
    return sum(int(inside.sum()) for _, inside, _ in _instances(pane_start, plan))


def _instances(pane_start: np.ndarray, plan: ConsolidationPlan
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The window instances of records of these panes, spec by spec, newest first.

    Each: the window starts, which records that window holds, and their markers (the anchor:
    the window that ends last of all).
    """
    specs = plan.specs
    last = [pane_start - pane_start % s.slide_ms for s in specs]
    anchor_spec = np.argmax(np.stack([first + s.length_ms for first, s in
                                      zip(last, specs, strict=True)]), axis=0)
    pane_end = pane_start + plan.pane_ms
    for index, spec in enumerate(specs):
        for back in range(-(-spec.length_ms // spec.slide_ms)):
            first = last[index] - back * spec.slide_ms
            anchored = (anchor_spec == index) if back == 0 else np.zeros(len(first), bool)
            yield (first, first + spec.length_ms >= pane_end,
                   np.where(anchored, marker(index, True, len(specs)),
                            marker(index, False, len(specs))))


def split_parts(parts: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``parts`` as (panes and reusable windows, window partials)."""
    windowed = parts[LENGTH].to_numpy() < 0
    if not windowed.any():
        return parts, parts.iloc[:0]
    return parts[~windowed], parts[windowed]


def part_ends(parts: pd.DataFrame, plan: ConsolidationPlan) -> np.ndarray:
    """Where each part ends (ms): a pane's or shorter window's end, a window partial's window's."""
    length = parts[LENGTH].to_numpy()
    lengths = np.array([s.length_ms for s in plan.specs], dtype=np.int64)
    spans = np.where(length < 0, lengths[spec_of(np.minimum(length, -1), len(lengths))], length)
    return np.asarray(parts["start"].to_numpy() + spans, dtype=np.int64)


def late_records(parts: pd.DataFrame, plan: ConsolidationPlan) -> int:
    """Records dropped whole with ``parts`` (all late): those of panes, and of anchors."""
    length = parts[LENGTH].to_numpy()
    whole = (length > 0) | anchor_of(length, len(plan.specs))
    return int(parts.loc[whole, RECORDS].sum())
