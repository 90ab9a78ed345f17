"""Assemble complete windows from partials, vectorised over keys and window instances.

The consolidate stage of Enorm (§4.2, §6.1): it holds *parts* — panes from the compute stage
(possibly several per key and pane, one from each slot that processed the key) and complete
instances of shorter windows — and, when the watermark passes window ends, merges parts into
complete windows following a :class:`~elastream.algorithms.windows.consolidation.ConsolidationPlan`.

Parts are a pandas DataFrame with columns ``key``, ``start`` and ``length`` (int64 ms) and the
job's partial columns (see :mod:`elastream.core.aggregates`). Merging is exact: counts and sums
add, minima and maxima combine, nulls are skipped (SQL semantics). Parts with a negative
``length`` are window partials of a combined execution (:mod:`.combine`): each merges into its
own window instance only, beside what the panes give it.

Cost per call: one vectorised filter per recipe part and one ``bincount``-style merge per window
spec, over the parts kept for the longest window, whatever the number of keys and instances.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from elastream.algorithms.windows.combine import part_ends, spec_of, split_parts
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


def _merge(groups: np.ndarray, size: int, column: str, values: np.ndarray) -> np.ndarray:
    """Combine ``values`` into ``size`` groups (``groups[i]`` is row i's group), SQL-style."""
    rule = merge_rule(column)
    if _is_count(column):
        return np.bincount(groups, weights=values, minlength=size).astype(np.int64)
    if rule == "sum":
        present = ~np.isnan(values)
        total = np.bincount(groups, weights=np.where(present, values, 0.0), minlength=size)
        seen = np.bincount(groups, weights=present, minlength=size)
        return np.where(seen > 0, total, np.nan)
    out = np.full(size, np.nan)
    (np.fmin if rule == "min" else np.fmax).at(out, groups, values)
    return out


class _Parts:
    """Parts as arrays: key codes, starts, lengths and one array per partial column."""

    def __init__(self, frame: pd.DataFrame, partials: Sequence[str]) -> None:
        codes, self.keys = pd.factorize(frame["key"])
        self.code = codes.astype(np.int64)
        self.start = frame["start"].to_numpy(dtype=np.int64)
        self.length = frame["length"].to_numpy(dtype=np.int64)
        self.values = {c: frame[c].to_numpy() for c in partials}

    def append(self, code: np.ndarray, start: np.ndarray, length: int,
               values: dict[str, np.ndarray]) -> None:
        self.code = np.concatenate([self.code, code])
        self.start = np.concatenate([self.start, start])
        self.length = np.concatenate([self.length, np.full(len(code), length, dtype=np.int64)])
        for column, array in values.items():
            self.values[column] = np.concatenate([self.values[column], array])

    def frame(self, keep: np.ndarray) -> pd.DataFrame:
        out = pd.DataFrame({"key": self.keys.take(self.code[keep]), "start": self.start[keep],
                            "length": self.length[keep]})
        for column, array in self.values.items():
            out[column] = array[keep]
        return out


def assemble(
    parts: pd.DataFrame, plan: ConsolidationPlan, after_ms: int, upto_ms: int
) -> Assembled:
    """Build every instance whose end lies in ``(after_ms, upto_ms]`` and expire old parts.

    Instances with no rows are not produced. Parts that no future window (ending after
    ``upto_ms``) can use are dropped from the returned ``parts``.
    """
    partials = [c for c in parts.columns if c not in PART_KEYS]
    parts, windowed = split_parts(parts)
    reusable = {part.length_ms for r in plan.recipes for part in r.parts}
    held = _Parts(parts, partials)
    outputs: list[pd.DataFrame] = []
    merges = 0
    for spec in plan.specs:
        starts = spec.starts_ending_in(after_ms, upto_ms)
        if len(starts) == 0 or len(held.code) == 0:
            continue
        rows, slots = [], []
        for recipe in plan.recipes_of(spec):
            for part in recipe.parts:
                wstart = held.start - part.offset_ms
                keep = np.flatnonzero(
                    (held.length == part.length_ms) & (wstart % plan.period_ms == recipe.phase_ms)
                    & (wstart >= starts.start) & (wstart < starts.stop))
                rows.append(keep)
                slots.append((wstart[keep] - starts.start) // spec.slide_ms)
        used = np.concatenate(rows)
        if used.size == 0:
            continue
        merges += used.size
        # Window instances of a key are dense: key code × number of starts + start index.
        cell = held.code[used] * len(starts) + np.concatenate(slots)
        cells, groups = np.unique(cell, return_inverse=True)
        merged = {c: _merge(groups, len(cells), c, held.values[c][used]) for c in partials}
        code, start = cells // len(starts), starts.start + (cells % len(starts)) * spec.slide_ms
        outputs.append(_windows(held.keys.take(code), start, spec.length_ms, spec.slide_ms,
                                merged))
        if spec.length_ms in reusable and spec.length_ms > plan.pane_ms:
            # Another spec of the same length may have added these instances already.
            same = held.length == spec.length_ms
            fresh = ~_pairs_in(code, start, held.code[same], held.start[same])
            held.append(code[fresh], start[fresh], spec.length_ms,
                        {c: v[fresh] for c, v in merged.items()})
    longest = max(s.length_ms for s in plan.specs)
    kept = held.frame(held.start > upto_ms - longest)
    columns = ["key", "start", "length", "slide", *partials]
    if not windowed.empty:
        ends = part_ends(windowed, plan)
        due = windowed[(ends > after_ms) & (ends <= upto_ms)]
        merges += len(due)
        if not due.empty:
            outputs = [_merged_windows([*outputs, _instances(due, plan)], partials)]
        kept = pd.concat([kept, windowed[ends > upto_ms]], ignore_index=True)
    windows = (pd.concat(outputs, ignore_index=True) if outputs
               else empty_parts(partials).assign(slide=pd.Series(dtype=np.int64)))[columns]
    return Assembled(windows, kept, merges)


def _instances(windowed: pd.DataFrame, plan: ConsolidationPlan) -> pd.DataFrame:
    """Window partials as (unmerged) window rows: the spec's length and slide for the marker."""
    spec = spec_of(windowed["length"].to_numpy(), len(plan.specs))
    lengths = np.array([s.length_ms for s in plan.specs], dtype=np.int64)
    slides = np.array([s.slide_ms for s in plan.specs], dtype=np.int64)
    return windowed.assign(length=lengths[spec], slide=slides[spec])


def _merged_windows(frames: list[pd.DataFrame], partials: Sequence[str]) -> pd.DataFrame:
    """One row per (key, start, length, slide) of ``frames``, its partials merged."""
    rows = pd.concat(frames, ignore_index=True)
    keys = ["key", "start", "length", "slide"]
    # Groups numbered in order of first appearance, as drop_duplicates keeps them.
    groups = rows.groupby(keys, sort=False).ngroup().to_numpy()
    out = rows.drop_duplicates(keys)[keys].reset_index(drop=True)
    size = len(out)
    for column in partials:
        out[column] = _merge(groups, size, column, rows[column].to_numpy())
    return out


def _pairs_in(code: np.ndarray, start: np.ndarray, codes: np.ndarray, starts: np.ndarray
              ) -> np.ndarray:
    """Which (code, start) pairs of the first two arrays occur among the last two."""
    if codes.size == 0:
        return np.zeros(code.size, dtype=bool)
    base = min(start.min(), starts.min())
    span = max(start.max(), starts.max()) - base + 1
    return np.isin(code * span + (start - base), codes * span + (starts - base))


def _windows(keys: pd.Index, start: np.ndarray, length: int, slide: int,
             merged: dict[str, np.ndarray]) -> pd.DataFrame:
    out = pd.DataFrame({"key": np.asarray(keys, dtype=object), "start": start,
                        "length": np.int64(length), "slide": np.int64(slide)})
    for column, array in merged.items():
        out[column] = array
    return out


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
