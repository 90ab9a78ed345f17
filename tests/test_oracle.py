"""Tests of the pandas batch oracle (tests/oracle.py) and of compare_results.

Hand-computed cases pin window membership at its bounds (start inclusive, end exclusive), the
length-not-a-multiple-of-slide case and SQL null semantics; a hypothesis test checks the
vectorised oracle against a row-by-row, window-by-window brute force.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.oracle import WINDOW_COLUMNS, compare_results, window_oracle
from tests.properties import examples

from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec

BASE = pd.Timestamp("2001-01-01T00:00:00Z")  # a whole day (and hour) since the epoch
H = 3600


def at(minutes: float) -> pd.Timestamp:
    return BASE + pd.Timedelta(minutes=minutes)


def aggs(*texts: str) -> list[AggSpec]:
    return [AggSpec.parse(t) for t in texts]


def specs(*texts: str) -> list[WindowSpec]:
    return [WindowSpec.parse(t) for t in texts]


def frame(rows: list[tuple[object, ...]], columns: str = "time key v") -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns.split())


def expected(rows: list[tuple[object, ...]], agg_names: list[str]) -> pd.DataFrame:
    """Rows of (key, start minute, end minute, length s, slide s, *aggregates)."""
    out = pd.DataFrame(rows, columns=[*WINDOW_COLUMNS, *agg_names])
    out["window_start"] = [at(m) for m in out["window_start"]]
    out["window_end"] = [at(m) for m in out["window_end"]]
    return out


def run(df: pd.DataFrame, agg_texts: tuple[str, ...], windows: tuple[str, ...]) -> pd.DataFrame:
    return window_oracle(df, time_col="time", key_col="key", aggs=aggs(*agg_texts),
                         windows=specs(*windows))


# --------------------------------------------------------------------------------------------
# Hand-computed cases
# --------------------------------------------------------------------------------------------


def test_tumbling_start_inclusive_end_exclusive() -> None:
    # [00:00, 01:00) holds 00:00:00.000 and 00:59:59.999; 01:00:00.000 opens [01:00, 02:00).
    df = frame([
        (at(0), "a", 1.0),
        (at(60) - pd.Timedelta(milliseconds=1), "a", 2.0),
        (at(60), "a", 4.0),
        (at(150), "b", 8.0),
    ])
    out = run(df, ("count", "sum:v"), ("1h",))
    compare_results(out, expected([
        ("a", 0, 60, H, H, 2, 3.0),
        ("a", 60, 120, H, H, 1, 4.0),
        ("b", 120, 180, H, H, 1, 8.0),
    ], ["count", "sum_v"]))


def test_hopping_row_in_every_overlapping_instance() -> None:
    # 2h/1h: instances [k h, k h + 2h). 00:30 lies in [-1h, 1h) and [0h, 2h); 01:00 lies in
    # [0h, 2h) and [1h, 3h) — not in [-1h, 1h), whose end is exclusive.
    df = frame([(at(30), "a", 1.0), (at(60), "a", 10.0)])
    out = run(df, ("count", "sum:v"), ("2h/1h",))
    compare_results(out, expected([
        ("a", -60, 60, 2 * H, H, 1, 1.0),
        ("a", 0, 120, 2 * H, H, 2, 11.0),
        ("a", 60, 180, 2 * H, H, 1, 10.0),
    ], ["count", "sum_v"]))


def test_length_not_a_multiple_of_slide() -> None:
    # 90m/1h: instances [60k, 60k + 90) in minutes. Membership s <= t < s + 90, s = 60k:
    #   t = 20 → s = -60 (ends 30) and s = 0;   t = 30 → s = 0 only (-60 ends at 30);
    #   t = 60 → s = 0 (ends 90) and s = 60;    t = 90 → s = 60 only (0 ends at 90).
    df = frame([(at(20), "a", 1.0), (at(30), "a", 10.0), (at(60), "a", 100.0),
                (at(90), "a", 1000.0)])
    out = run(df, ("count", "sum:v"), ("90m/1h",))
    compare_results(out, expected([
        ("a", -60, 30, 90 * 60, H, 1, 1.0),
        ("a", 0, 90, 90 * 60, H, 3, 111.0),
        ("a", 60, 150, 90 * 60, H, 2, 1100.0),
    ], ["count", "sum_v"]))


def test_sql_null_semantics() -> None:
    # Hour 0: v = 1, null, 3 → count 3, count_v 2, sum 4, avg 2, min 1, max 3.
    # Hour 1: v = null, null → count 2, count_v 0, sum/avg/min/max null (NaN).
    df = frame([(at(1), "a", 1.0), (at(2), "a", None), (at(3), "a", 3.0),
                (at(61), "a", None), (at(62), "a", np.nan)])
    names = ("count", "count:v", "sum:v", "avg:v", "min:v", "max:v")
    out = run(df, names, ("1h",))
    nan = math.nan
    compare_results(out, expected([
        ("a", 0, 60, H, H, 3, 2, 4.0, 2.0, 1.0, 3.0),
        ("a", 60, 120, H, H, 2, 0, nan, nan, nan, nan),
    ], [AggSpec.parse(n).output_name for n in names]))
    assert out["count"].dtype == np.int64
    assert out["count_v"].dtype == np.int64
    assert all(out[c].dtype == np.float64 for c in ("sum_v", "avg_v", "min_v", "max_v"))


def test_columns_dtypes_and_order() -> None:
    df = frame([(at(5), "b", 1), (at(5), "a", 2), (at(65), "a", 3)])
    out = run(df, ("count", "max:v"), ("2h/1h", "1h"))
    assert list(out.columns) == [*WINDOW_COLUMNS, "count", "max_v"]
    assert out["window_start"].dtype == "datetime64[ns, UTC]"
    assert out["window_end"].dtype == "datetime64[ns, UTC]"
    assert out["window_length"].dtype == np.int64
    assert out["window_slide"].dtype == np.int64
    assert all(isinstance(k, str) for k in out["key"])
    # Sorted by key, length, slide, start; counts without a column count rows.
    assert list(zip(out["key"], out["window_length"], out["window_start"], out["count"],
                    strict=True)) == [
        ("a", H, at(0), 1), ("a", H, at(60), 1),
        ("a", 2 * H, at(-60), 1), ("a", 2 * H, at(0), 2), ("a", 2 * H, at(60), 1),
        ("b", H, at(0), 1),
        ("b", 2 * H, at(-60), 1), ("b", 2 * H, at(0), 1),
    ]
    assert out.index.tolist() == list(range(len(out)))


def test_only_instances_with_rows_are_output() -> None:
    # Rows at 00:10 and 05:10; a 1h tumbling window has nothing in hours 1–4.
    out = run(frame([(at(10), "a", 1), (at(310), "a", 1)]), ("count",), ("1h",))
    assert out["window_start"].tolist() == [at(0), at(300)]


def test_time_column_forms_agree() -> None:
    naive = [BASE.tz_localize(None) + pd.Timedelta(minutes=m) for m in (0, 59.99, 61)]
    ms = [int(t.value // 1_000_000) for t in naive]
    forms = {
        "naive": pd.Series(naive),
        "utc": pd.Series(naive).dt.tz_localize("UTC"),
        "paris": pd.Series(naive).dt.tz_localize("UTC").dt.tz_convert("Europe/Paris"),
        "micros": pd.Series(naive).astype("datetime64[us]"),
        "int_ms": pd.Series(ms, dtype=np.int64),
    }
    results = [
        run(pd.DataFrame({"time": t, "key": ["a", "a", "a"], "v": [1, 2, 3]}),
            ("count",), ("1h",))
        for t in forms.values()
    ]
    for result in results:
        compare_results(result, results[0])
    assert results[0]["count"].tolist() == [2, 1]


def test_sub_millisecond_times_stay_before_the_bound() -> None:
    # 00:59:59.999999 floors to 00:59:59.999, still in [00:00, 01:00); rounding would not.
    t = pd.Series([BASE + pd.Timedelta(hours=1) - pd.Timedelta(microseconds=1)])
    out = run(pd.DataFrame({"time": t, "key": ["a"], "v": [1]}), ("count",), ("1h",))
    assert out["window_start"].tolist() == [at(0)]


def test_rows_with_null_time_or_key_are_skipped() -> None:
    df = frame([(at(1), "a", 1), (pd.NaT, "a", 2), (at(2), None, 4), (at(3), 7, 8)])
    out = run(df, ("count", "sum:v"), ("1h",))
    assert out["key"].tolist() == ["7", "a"]
    assert out["sum_v"].tolist() == [8.0, 1.0]


def test_keys_are_compared_as_strings() -> None:
    # 1 and "1" are the same key once written as text.
    out = run(frame([(at(1), 1, 1), (at(2), "1", 2)]), ("count",), ("1h",))
    assert out["key"].tolist() == ["1"]
    assert out["count"].tolist() == [2]


def test_empty_input_gives_empty_typed_result() -> None:
    df = frame([]).astype({"time": "datetime64[ns]", "key": object, "v": float})
    out = run(df, ("count", "sum:v"), ("1h", "2h/1h"))
    assert list(out.columns) == [*WINDOW_COLUMNS, "count", "sum_v"]
    assert len(out) == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"windows": [WindowSpec(1500, 1500)]}, "whole seconds"),
        ({"windows": []}, "at least one"),
        ({"aggs": aggs("sum:w")}, "missing column"),
        ({"time_col": "v"}, "datetime64 or integer"),
    ],
)
def test_oracle_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"time_col": "time", "key_col": "key", "aggs": aggs("count"),
                               "windows": specs("1h")}
    args.update(kwargs)
    df = frame([(at(1), "a", 1.5)])
    with pytest.raises(ValueError, match=message):
        window_oracle(df, **args)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Against a brute force
# --------------------------------------------------------------------------------------------

BRUTE_SPECS = ("1s", "2s/1s", "3s/2s", "5s/3s", "4s/4s", "7s/2s")
BRUTE_AGGS = ("count", "count:v", "sum:v", "avg:v", "min:v", "max:v")


def brute_force(df: pd.DataFrame, windows: list[WindowSpec]) -> pd.DataFrame:
    """Every row against every candidate instance, one at a time."""
    groups: dict[tuple[str, int, int, int], list[float]] = defaultdict(list)
    for t, key, v in zip(df["time"], df["key"], df["v"], strict=True):
        for w in windows:
            length, slide = w.length_ms, w.slide_ms
            for k in range((t - length) // slide - 1, t // slide + 2):
                if k * slide <= t < k * slide + length:
                    groups[(key, length, slide, k * slide)].append(v)
    rows = []
    for (key, length, slide, start), vs in groups.items():
        present = [v for v in vs if not math.isnan(v)]
        total = sum(present) if present else math.nan
        rows.append((key, pd.Timestamp(start, unit="ms", tz="UTC"),
                     pd.Timestamp(start + length, unit="ms", tz="UTC"), length // 1000,
                     slide // 1000, len(vs), len(present), total,
                     total / len(present) if present else math.nan,
                     min(present, default=math.nan), max(present, default=math.nan)))
    names = [AggSpec.parse(a).output_name for a in BRUTE_AGGS]
    return pd.DataFrame(rows, columns=[*WINDOW_COLUMNS, *names])


@given(
    rows=st.lists(
        st.tuples(
            st.integers(BASE.value // 10**6 - 20_000, BASE.value // 10**6 + 20_000),
            st.sampled_from(["a", "b", "c"]),
            st.none() | st.integers(-50, 50).map(float),
        ),
        min_size=1, max_size=40,
    ),
    windows=st.lists(st.sampled_from(BRUTE_SPECS), min_size=1, max_size=3, unique=True),
)
@settings(max_examples=examples(150), deadline=None)
def test_oracle_matches_brute_force(
    rows: list[tuple[int, str, float | None]], windows: list[str]
) -> None:
    df = pd.DataFrame(rows, columns=["time", "key", "v"]).astype({"v": float})
    windows_ = specs(*windows)
    actual = window_oracle(df, time_col="time", key_col="key", aggs=aggs(*BRUTE_AGGS),
                           windows=windows_)
    compare_results(actual, brute_force(df, windows_))


# --------------------------------------------------------------------------------------------
# compare_results
# --------------------------------------------------------------------------------------------


@pytest.fixture
def result() -> pd.DataFrame:
    df = frame([(at(m), k, float(m)) for m in (1, 30, 61, 125) for k in ("a", "b")]
               + [(at(200), "c", None)])
    return run(df, ("count", "avg:v"), ("1h", "2h/1h"))


def test_compare_accepts_any_row_and_column_order(result: pd.DataFrame) -> None:
    shuffled = result.sample(frac=1, random_state=3)[list(reversed(result.columns))]
    compare_results(shuffled, result)


def test_compare_treats_nan_as_equal_and_uses_relative_tolerance(result: pd.DataFrame) -> None:
    assert result["avg_v"].isna().any()
    nudged = result.assign(avg_v=result["avg_v"] * (1 + 1e-12))
    compare_results(nudged, result)
    off = result.assign(avg_v=result["avg_v"] * (1 + 1e-6))
    with pytest.raises(AssertionError, match="differ in 'avg_v'"):
        compare_results(off, result)


def test_compare_reports_missing_and_extra_windows(result: pd.DataFrame) -> None:
    with pytest.raises(AssertionError, match=r"1 window\(s\) missing") as missing:
        compare_results(result.drop(index=2), result)
    assert str(result.loc[2, "window_start"]) in str(missing.value)
    shifted = result.copy()
    assert result.loc[0, "window_start"] == at(0)
    shifted.loc[0, "window_start"] = at(30)
    with pytest.raises(AssertionError, match=r"1 window\(s\) missing") as moved:
        compare_results(shifted, result)
    assert "1 window(s) extra" in str(moved.value)
    assert str(at(30)) in str(moved.value)


def test_compare_reports_value_and_end_mismatches(result: pd.DataFrame) -> None:
    with pytest.raises(AssertionError, match="differ in 'count'"):
        compare_results(result.assign(count=result["count"] + 1), result)
    wrong_end = result.assign(window_end=result["window_end"] + pd.Timedelta(seconds=1))
    with pytest.raises(AssertionError, match="differ in 'window_end'"):
        compare_results(wrong_end, result)
    nan_count = result.assign(avg_v=result["avg_v"].fillna(0.0))
    with pytest.raises(AssertionError, match="differ in 'avg_v'"):
        compare_results(nan_count, result)


def test_compare_rejects_wrong_columns_naive_times_and_duplicates(result: pd.DataFrame) -> None:
    with pytest.raises(AssertionError, match=r"missing.*avg_v"):
        compare_results(result.drop(columns="avg_v"), result)
    naive = result.assign(window_start=result["window_start"].dt.tz_localize(None))
    with pytest.raises(AssertionError, match="tz-aware"):
        compare_results(naive, result)
    with pytest.raises(AssertionError, match="repeats"):
        compare_results(pd.concat([result, result.head(1)]), result)
