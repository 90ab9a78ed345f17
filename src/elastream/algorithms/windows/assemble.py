"""Assemble complete windows from partials, vectorised over keys and window instances.

The consolidate stage of Enorm (§4.2, §6.1): it holds *parts* — panes from the compute stage
(possibly several per key and pane, one from each slot that processed the key) and complete
instances of shorter windows — and, when the watermark passes window ends, merges parts into
complete windows following a :class:`~elastream.algorithms.windows.consolidation.ConsolidationPlan`.

Parts are a pandas DataFrame with columns ``key``, ``start`` and ``length`` (int64 ms) and the
job's partial columns (see :mod:`elastream.core.aggregates`). Merging is exact: counts and sums
add, minima and maxima combine, nulls are skipped (SQL semantics).

Cost per call: one filter per recipe part and one ``groupby`` per window spec, over the parts
kept for the longest window, whatever the number of keys and window instances.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from elastream.algorithms.windows.consolidation import ConsolidationPlan
from elastream.core.aggregates import RECORDS, AggSpec

PART_KEYS = ("key", "start", "length")


@dataclass(frozen=True)
class Assembled:
    """Output of one :func:`assemble` call."""

    windows: pd.DataFrame
    """One row per (key, spec, instance): key, start, length, slide, and the partial columns."""
    parts: pd.DataFrame
    """Parts to keep for later windows (input parts plus new reusable windows, minus expired)."""
    merges: int
    """Parts consumed (Enorm's consolidation count)."""


def merge_rule(column: str) -> str:
    """How a partial column combines: ``sum``, ``min`` or ``max``."""
    if column.startswith("min_"):
        return "min"
    if column.startswith("max_"):
        return "max"
    return "sum"


def empty_parts(partials: Sequence[str]) -> pd.DataFrame:
    """A parts table with no rows and the right dtypes."""
    frame = pd.DataFrame({"key": pd.Series(dtype=object),
                          "start": pd.Series(dtype=np.int64),
                          "length": pd.Series(dtype=np.int64)})
    for column in partials:
        frame[column] = pd.Series(dtype=np.int64 if _is_count(column) else np.float64)
    return frame


def merge_parts(frame: pd.DataFrame, by: Sequence[str], partials: Sequence[str]) -> pd.DataFrame:
    """Merge rows that share ``by`` (e.g. the same pane of a key sent by two slots)."""
    rules = {c: merge_rule(c) for c in partials}
    grouped = frame.groupby(list(by), sort=False, as_index=False)
    sums = [c for c, r in rules.items() if r == "sum" and not _is_count(c)]
    out = grouped.agg({c: r for c, r in rules.items()})
    if sums:
        # pandas sums an all-NaN group to 0; SQL gives null. Count non-nulls to restore it.
        non_null = grouped[sums].count()
        for column in sums:
            out.loc[non_null[column].to_numpy() == 0, column] = np.nan
    return out


def assemble(
    parts: pd.DataFrame, plan: ConsolidationPlan, after_ms: int, upto_ms: int
) -> Assembled:
    """Build every instance whose end lies in ``(after_ms, upto_ms]`` and expire old parts.

    Instances with no rows are not produced. Parts that no future window (ending after
    ``upto_ms``) can use are dropped from the returned ``parts``.
    """
    partials = [c for c in parts.columns if c not in PART_KEYS]
    reusable = {r_part.length_ms for r in plan.recipes for r_part in r.parts}
    outputs: list[pd.DataFrame] = []
    merges = 0
    for spec in plan.specs:
        starts = spec.starts_ending_in(after_ms, upto_ms)
        if len(starts) == 0 or parts.empty:
            continue
        pieces = []
        for recipe in plan.recipes_of(spec):
            for part in recipe.parts:
                rows = parts[parts["length"].to_numpy() == part.length_ms]
                wstart = rows["start"].to_numpy() - part.offset_ms
                keep = ((wstart % plan.period_ms) == recipe.phase_ms) & (
                    wstart >= starts.start) & (wstart < starts.stop)
                if keep.any():
                    piece = rows.loc[keep, ["key", *partials]]
                    pieces.append(piece.assign(start=wstart[keep]))
        if not pieces:
            continue
        used = pd.concat(pieces, ignore_index=True)
        merges += len(used)
        windows = merge_parts(used, ("key", "start"), partials)
        windows["length"] = np.int64(spec.length_ms)
        windows["slide"] = np.int64(spec.slide_ms)
        outputs.append(windows)
        if spec.length_ms in reusable and spec.length_ms > plan.pane_ms:
            # Another spec of the same length may have added these instances already.
            same = parts[parts["length"].to_numpy() == spec.length_ms]
            known = pd.MultiIndex.from_frame(same[["key", "start"]])
            fresh = windows[~pd.MultiIndex.from_frame(windows[["key", "start"]]).isin(known)]
            parts = pd.concat([parts, fresh[["key", "start", "length", *partials]]],
                              ignore_index=True)
    longest = max(s.length_ms for s in plan.specs)
    parts = parts[parts["start"].to_numpy() > upto_ms - longest].reset_index(drop=True)
    columns = ["key", "start", "length", "slide", *partials]
    windows = (pd.concat(outputs, ignore_index=True) if outputs
               else empty_parts(partials).assign(slide=pd.Series(dtype=np.int64)))[columns]
    return Assembled(windows, parts, merges)


def finalize(windows: pd.DataFrame, aggs: Sequence[AggSpec]) -> pd.DataFrame:
    """Turn merged partials into the requested aggregates (one column per ``output_name``).

    >>> w = pd.DataFrame({"n": [2], "sum_v": [3.0], "cnt_v": [2]})
    >>> finalize(w, [AggSpec("avg", "v"), AggSpec("count")]).to_dict("records")
    [{'avg_v': 1.5, 'count': 2}]
    """
    out: dict[str, Any] = {}
    for agg in aggs:
        c = agg.column
        if c is None:
            out[agg.output_name] = windows[RECORDS].astype(np.int64)
        elif agg.func == "count":
            out[agg.output_name] = windows[f"cnt_{c}"].astype(np.int64)
        elif agg.func == "avg":
            cnt = windows[f"cnt_{c}"].to_numpy(dtype=float)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[agg.output_name] = np.where(cnt > 0, windows[f"sum_{c}"] / cnt, np.nan)
        else:
            out[agg.output_name] = windows[f"{agg.func}_{c}"].astype(np.float64)
    return pd.DataFrame(out, index=windows.index)


def _is_count(column: str) -> bool:
    return column == RECORDS or column.startswith("cnt_")
