"""Pandas oracle of a chained job (:mod:`elastream.core.chain`): each operator in turn, literally.

The source operator's windows come from :func:`tests.oracle.window_oracle`; each chained
operator then groups its upstream's windows by its key columns and by its window (the upstream
window itself, or the tumbling window holding the upstream window's start) with SQL aggregate
semantics (nulls skipped; a sum, min, max or avg of no value is null). No fusion, no panes, no
consolidation: what a reader of the job's description expects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from tests.oracle import window_oracle

from elastream.core.spec import KEY_SEPARATOR, PipelineSpec


def chain_oracle(df: pd.DataFrame, spec: PipelineSpec) -> pd.DataFrame:
    """The windows of the chain's last operator (the source's when nothing is chained)."""
    keys = spec.source_keys
    joined = df.copy()
    if len(keys) > 1:
        valid = joined[list(keys)].notna().all(axis=1)
        joined = joined[valid]
        joined["_key"] = joined[list(keys)].astype(str).agg(KEY_SEPARATOR.join, axis=1)
    windows = window_oracle(joined, time_col=spec.source.time_col,
                            key_col="_key" if len(keys) > 1 else keys[0], aggs=spec.windowing.aggs,
                            windows=spec.windowing.windows)
    for op in spec.chaining.chain:
        parts = windows["key"].str.split(KEY_SEPARATOR, n=len(keys) - 1, expand=True)
        parts.columns = list(keys)
        frame = pd.concat([parts, windows.drop(columns="key")], axis=1)
        if op.window is not None:
            length = pd.Timedelta(milliseconds=op.window.length_ms)
            epoch = pd.Timestamp(0, tz="UTC")
            frame["window_start"] = epoch + ((frame["window_start"] - epoch) // length) * length
            frame["window_end"] = frame["window_start"] + length
            frame["window_length"] = op.window.length_ms // 1000
            frame["window_slide"] = op.window.length_ms // 1000
        grouped = frame.groupby([*op.keys, "window_start", "window_end", "window_length",
                                 "window_slide"], sort=True)
        out = pd.DataFrame({a.output_name: _agg(grouped[a.column], a.func) for a in op.aggs})
        out = out.reset_index()
        key = out[list(op.keys)].astype(str).agg(KEY_SEPARATOR.join, axis=1)
        windows = pd.concat([key.rename("key"), out.drop(columns=list(op.keys))], axis=1)
        keys = op.keys
    return windows.reset_index(drop=True)


def _agg(column: pd.core.groupby.SeriesGroupBy, func: str) -> pd.Series:
    if func == "count":
        return column.count().astype(np.int64)
    if func == "sum":
        return column.sum(min_count=1)
    return getattr(column, {"min": "min", "max": "max", "avg": "mean"}[func])()
