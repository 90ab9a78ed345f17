"""Batch oracle for windowed aggregates, and the comparison every streaming result must pass.

:func:`window_oracle` computes, with plain pandas/numpy over the whole input at once, what the
streaming pipeline (Spark or simulator) must emit for each key and window instance;
:func:`compare_results` checks an actual result against it and explains any difference.

Semantics (those of Spark's ``window()`` with no offset, and of SQL aggregates):

* Instances of a spec with length ``L`` and slide ``S`` (ms) are ``[k·S, k·S + L)`` for every
  integer ``k``, aligned to the Unix epoch. A row at time ``t`` belongs to every instance with
  ``k·S <= t < k·S + L`` — ``ceil(L/S)`` or ``floor(L/S)`` of them when ``L`` is not a multiple of
  ``S``. Only instances holding at least one row are output.
* ``count`` counts rows; ``count:c`` counts non-null ``c``; ``sum``/``min``/``max``/``avg`` skip
  nulls and are NaN when a window holds no non-null value.

Inputs and limits: the time column is datetime64 (naive values are read as UTC) or integer
milliseconds since the epoch; sub-millisecond parts are floored, which keeps window membership
exact since every window bound is a whole millisecond. Rows with a null time or key are skipped.
Keys are compared as strings (``str(key)``). Value columns are read as float64, so NaN in the
input counts as null (in Spark, NaN is a value). Lengths and slides must be whole seconds, because
the ``window_length``/``window_slide`` columns hold seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from elastream.core.aggregates import RECORDS, AggSpec, partial_columns, validate_aggs
from elastream.core.windows import WindowSpec

WINDOW_COLUMNS = ("key", "window_start", "window_end", "window_length", "window_slide")
"""Leading columns of every result, in this order; the aggregates follow."""

SORT_COLUMNS = ["key", "window_length", "window_slide", "window_start"]
"""A window instance of a key is identified by these; results are sorted by them."""

_REDUCE = {"n": "sum", "cnt": "sum", "sum": "sum", "min": "min", "max": "max"}
_PARTIAL_FUNC = {"cnt": "count", "sum": "sum", "min": "min", "max": "max"}


def window_oracle(
    df: pd.DataFrame,
    *,
    time_col: str,
    key_col: str,
    aggs: Sequence[AggSpec],
    windows: Sequence[WindowSpec],
) -> pd.DataFrame:
    """Every (key, window instance) with at least one row, and its aggregates.

    Columns, in order: ``key`` (str), ``window_start``, ``window_end`` (datetime64[ns, UTC]),
    ``window_length``, ``window_slide`` (int64 seconds), then one column per aggregate named
    ``AggSpec.output_name`` — int64 for ``count``/``count:c``, float64 otherwise. Rows are sorted
    by key, window length, slide and start; the index is 0..n-1.

    Vectorised: per spec and per offset ``j < ceil(L/S)`` one pass assigns each row to the
    instance starting ``j`` slides before its own slide bucket, groups by (key, start), and the
    per-offset partials (count, sum, min, max) are merged per instance.
    """
    aggs = validate_aggs(aggs)
    specs = tuple(dict.fromkeys(windows))
    if not specs:
        raise ValueError("windows: needs at least one WindowSpec")
    for spec in specs:
        if spec.length_ms % 1000 or spec.slide_ms % 1000:
            raise ValueError(f"windows: lengths and slides must be whole seconds, got {spec}")
    needed = [time_col, key_col, *(a.column for a in aggs if a.column is not None)]
    missing = [c for c in dict.fromkeys(needed) if c not in df.columns]
    if missing:
        raise ValueError(f"df: missing column(s) {missing}; it has {list(df.columns)}")

    t_ms, keep = _epoch_ms(df[time_col])
    raw_codes, uniques = pd.factorize(df[key_col])
    keep &= raw_codes >= 0
    # Distinct raw keys can print the same (1 and "1"): merge them, as a string column would.
    key_codes, keys = pd.factorize(pd.Index([str(u) for u in uniques], dtype=object))
    codes = key_codes[raw_codes[keep]] if len(uniques) else raw_codes[keep]
    values = {c: _floats(df[c], c)[keep] for c in dict.fromkeys(
        a.column for a in aggs if a.column is not None)}
    partials = [p for p in partial_columns(aggs) if p != RECORDS]

    frames = [
        _one_spec(t_ms[keep], codes, np.asarray(keys, dtype=object), values, partials, spec, aggs)
        for spec in specs
    ]
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values(SORT_COLUMNS, kind="stable", ignore_index=True)


def compare_results(
    actual: pd.DataFrame,
    expected: pd.DataFrame,
    *,
    rel_tol: float = 1e-9,
    abs_tol: float = 0.0,
    show: int = 5,
) -> None:
    """Raise ``AssertionError`` unless ``actual`` holds the same windows and aggregates.

    Both frames must have the columns of :func:`window_oracle` (any order) with tz-aware window
    bounds (and ``operator``, where several operators' windows are). Windows are matched on
    (operator, key, window_length, window_slide, window_start); missing and
    extra windows are reported with the first ``show`` of each. Aggregates match when
    ``|a - e| <= max(rel_tol · max(|a|, |e|), abs_tol)``, or both are NaN.
    """
    if set(actual.columns) != set(expected.columns):
        raise AssertionError(
            f"columns differ: missing {sorted(set(expected.columns) - set(actual.columns))}, "
            f"extra {sorted(set(actual.columns) - set(expected.columns))}"
        )
    if "operator" in expected.columns:  # several operators' windows: a key is an operator's
        actual, expected = (f.assign(key=f["operator"] + "/" + f["key"].astype(str))
                            .drop(columns="operator") for f in (actual, expected))
    a, e = _normalised(actual, "actual"), _normalised(expected, "expected")
    merged = a.merge(e, on=SORT_COLUMNS, how="outer", suffixes=("_actual", "_expected"),
                     indicator=True, sort=True)
    problems = []
    for side, label in (("right_only", "missing (expected, not in actual)"),
                        ("left_only", "extra (in actual, not expected)")):
        rows = merged.loc[merged["_merge"] == side, SORT_COLUMNS]
        if len(rows):
            problems.append(f"{len(rows)} window(s) {label}; first {show}:\n"
                            f"{_show(rows.head(show))}")
    both = merged[merged["_merge"] == "both"]
    value_cols = [c for c in expected.columns if c not in SORT_COLUMNS]
    for col in value_cols:
        x, y = both[f"{col}_actual"], both[f"{col}_expected"]
        if col == "window_end":
            bad = (x != y).to_numpy()
        else:
            bad = ~_close(x.to_numpy(dtype=float, na_value=np.nan),
                          y.to_numpy(dtype=float, na_value=np.nan), rel_tol, abs_tol)
        if bad.any():
            rows = both.loc[bad, [*SORT_COLUMNS, f"{col}_actual", f"{col}_expected"]]
            problems.append(f"{int(bad.sum())} window(s) differ in {col!r}; first {show}:\n"
                            f"{_show(rows.head(show))}")
    if problems:
        raise AssertionError(
            f"results differ ({len(a)} actual rows, {len(e)} expected rows):\n"
            + "\n".join(problems)
        )


def _epoch_ms(times: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer milliseconds since the epoch (floored) and a mask of non-null rows."""
    if pd.api.types.is_integer_dtype(times.dtype):
        keep = times.notna().to_numpy()
        return times.to_numpy(dtype="int64", na_value=0), keep
    if not pd.api.types.is_datetime64_any_dtype(times.dtype):
        raise ValueError(f"time column {times.name!r}: needs datetime64 or integer milliseconds, "
                         f"got dtype {times.dtype}")
    utc = pd.to_datetime(times, utc=True).dt.as_unit("ns")
    keep = utc.notna().to_numpy()
    ns = utc.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").view("int64")
    return np.floor_divide(np.where(keep, ns, 0), 1_000_000), keep


def _floats(column: pd.Series, name: str) -> np.ndarray:
    try:
        return column.to_numpy(dtype="float64", na_value=np.nan)
    except (TypeError, ValueError) as err:
        raise ValueError(f"value column {name!r}: must be numeric, got dtype {column.dtype}"
                         ) from err


def _one_spec(
    t_ms: np.ndarray,
    codes: np.ndarray,
    keys: np.ndarray,
    values: dict[str, np.ndarray],
    partials: list[str],
    spec: WindowSpec,
    aggs: Sequence[AggSpec],
) -> pd.DataFrame:
    length, slide = spec.length_ms, spec.slide_ms
    offsets = -(-length // slide)  # ceil(L / S): instances a row can belong to, at most
    bucket = np.floor_divide(t_ms, slide)  # k0: the latest start k·S <= t
    if len(t_ms):
        k_min = int(bucket.min()) - (offsets - 1)
        span = int(bucket.max()) - k_min + 1
    else:
        k_min, span = 0, 1
    if (int(codes.max()) + 1 if len(codes) else 1) * span >= 2**62:
        raise ValueError(f"window {spec}: too many (key, instance) pairs to index")
    group_base = codes.astype(np.int64) * span - k_min

    pieces = []
    for j in range(offsets):
        k = bucket - j
        member = t_ms - k * slide < length  # start k·S <= t holds for every j >= 0
        frame = pd.DataFrame({c: v[member] for c, v in values.items()})
        frame["g"] = group_base[member] + k[member]
        grouped = frame.groupby("g", sort=False)
        piece = grouped.agg(**{p: (p.split("_", 1)[1], _PARTIAL_FUNC[p.split("_", 1)[0]])
                               for p in partials}) if partials else pd.DataFrame(
            index=grouped.size().index)
        piece[RECORDS] = grouped.size()
        pieces.append(piece)
    parts = pd.concat(pieces)
    merged = parts.groupby(level=0, sort=False).agg(
        {p: _REDUCE[p.split("_", 1)[0]] for p in parts.columns})

    gid = merged.index.to_numpy(dtype=np.int64)
    start_ms = (gid % span + k_min) * slide
    out = pd.DataFrame({
        "key": keys[gid // span] if len(gid) else np.array([], dtype=object),
        "window_start": pd.to_datetime(start_ms, unit="ms", utc=True),
        "window_end": pd.to_datetime(start_ms + length, unit="ms", utc=True),
        "window_length": np.full(len(gid), length // 1000, dtype=np.int64),
        "window_slide": np.full(len(gid), slide // 1000, dtype=np.int64),
    })
    for agg in aggs:
        out[agg.output_name] = _final(agg, merged)
    return out


def _final(agg: AggSpec, merged: pd.DataFrame) -> np.ndarray:
    """One aggregate from the merged partials, with SQL null semantics."""
    if agg.column is None:
        return merged[RECORDS].to_numpy(dtype=np.int64)
    c = agg.column
    count = merged[f"cnt_{c}"].to_numpy(dtype=np.int64) if f"cnt_{c}" in merged else None
    if agg.func == "count":
        assert count is not None
        return count
    if agg.func in ("min", "max"):
        return merged[f"{agg.func}_{c}"].to_numpy(dtype=np.float64)
    assert count is not None
    total = merged[f"sum_{c}"].to_numpy(dtype=np.float64)
    if agg.func == "avg":
        with np.errstate(invalid="ignore", divide="ignore"):
            total = total / count
    return np.where(count > 0, total, np.nan)


def _normalised(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """Key as str, lengths as int64, window bounds as UTC; sorted by :data:`SORT_COLUMNS`."""
    out = frame.copy()
    for col in ("window_start", "window_end"):
        if not isinstance(out[col].dtype, pd.DatetimeTZDtype):
            raise AssertionError(f"{name}.{col} must hold tz-aware (UTC) timestamps, "
                                 f"got dtype {out[col].dtype}")
        out[col] = out[col].dt.tz_convert("UTC").dt.as_unit("ns")
    out["key"] = out["key"].astype(str)
    for col in ("window_length", "window_slide"):
        out[col] = out[col].astype(np.int64)
    dup = out.duplicated(SORT_COLUMNS, keep=False)
    if dup.any():
        raise AssertionError(f"{name} repeats {int(dup.sum())} window row(s); first few:\n"
                             f"{_show(out.loc[dup, SORT_COLUMNS].head(5))}")
    return out.sort_values(SORT_COLUMNS, kind="stable", ignore_index=True)


def _close(x: np.ndarray, y: np.ndarray, rel_tol: float, abs_tol: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        near = np.abs(x - y) <= np.maximum(rel_tol * np.maximum(np.abs(x), np.abs(y)), abs_tol)
    return np.asarray(near | (x == y) | (np.isnan(x) & np.isnan(y)))


def _show(rows: pd.DataFrame) -> str:
    return rows.to_string(index=False)
