"""Pandas oracle of an operator graph (:mod:`elastream.core.chain`): each operator, literally.

The source operator's windows come from :func:`tests.oracle.window_oracle`; each other operator
then groups the union of its inputs' windows by its key columns and by its window (the upstream
window itself, or the tumbling window holding the upstream window's start) with SQL aggregate
semantics (nulls skipped; a sum, min, max or avg of no value is null). No fusion, no panes, no
consolidation: what a reader of the job's description expects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from tests.oracle import window_oracle

from elastream.core.chain import SOURCE, sinks
from elastream.core.spec import KEY_SEPARATOR, PipelineSpec

BOUNDS = ["window_start", "window_end", "window_length", "window_slide"]


def chain_oracle(df: pd.DataFrame, spec: PipelineSpec) -> pd.DataFrame:
    """The windows of the graph's sinks (the source's when nothing is chained).

    With several sinks, their rows unioned with an ``operator`` column.
    """
    keys = spec.source_keys
    joined = df.copy()
    if len(keys) > 1:
        valid = joined[list(keys)].notna().all(axis=1)
        joined = joined[valid]
        joined["_key"] = joined[list(keys)].astype(str).agg(KEY_SEPARATOR.join, axis=1)
    windows = window_oracle(joined, time_col=spec.source.time_col,
                            key_col="_key" if len(keys) > 1 else keys[0], aggs=spec.windowing.aggs,
                            windows=spec.windowing.windows)
    if not spec.chaining.chain:
        return windows
    parts = windows["key"].str.split(KEY_SEPARATOR, n=len(keys) - 1, expand=True)
    parts.columns = list(keys)
    frames = {SOURCE: pd.concat([parts, windows.drop(columns="key")], axis=1)}
    for op in spec.chaining.chain:
        frame = pd.concat([frames[name] for name in op.inputs], ignore_index=True)
        if op.window is not None:
            length = pd.Timedelta(milliseconds=op.window.length_ms)
            epoch = pd.Timestamp(0, tz="UTC")
            frame["window_start"] = epoch + ((frame["window_start"] - epoch) // length) * length
            frame["window_end"] = frame["window_start"] + length
            frame["window_length"] = op.window.length_ms // 1000
            frame["window_slide"] = op.window.length_ms // 1000
        grouped = frame.groupby([*op.keys, *BOUNDS], sort=True)
        out = pd.DataFrame({a.output_name: _agg(grouped[a.column], a.func) for a in op.aggs})
        frames[op.id] = out.reset_index()
    ends = sinks(spec.chaining.chain)
    results = []
    for op in ends:
        frame = frames[op.id]
        key = frame[list(op.keys)].astype(str).agg(KEY_SEPARATOR.join, axis=1)
        out = pd.concat([key.rename("key"), frame.drop(columns=list(op.keys))], axis=1)
        results.append(out.assign(operator=op.id) if len(ends) > 1 else out)
    return pd.concat(results, ignore_index=True)


def _agg(column: pd.core.groupby.SeriesGroupBy, func: str) -> pd.Series:
    if func == "count":
        return column.count().astype(np.int64)
    if func == "sum":
        return column.sum(min_count=1)
    return getattr(column, {"min": "min", "max": "max", "avg": "mean"}[func])()
