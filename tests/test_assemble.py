"""Oracle tests of window assembly (Enorm's consolidate stage, §4.2 and §6.1).

The key test streams random rows through pane partials and :func:`assemble` the way the Spark
consolidate stage does (partials split across slots, several calls with increasing watermarks,
parts carried from call to call), and checks the windows against the pandas batch oracle
``window_oracle``. Hand-computed cases pin Fig. 7's merge count, expiry and ``finalize``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.oracle import compare_results, window_oracle
from tests.properties import examples

from elastream.algorithms.windows.assemble import (
    PART_KEYS,
    assemble,
    empty_parts,
    finalize,
    merge_rule,
)
from elastream.algorithms.windows.consolidation import ConsolidationPlan, plan_consolidation
from elastream.core.aggregates import AggSpec, partial_columns
from elastream.core.windows import WindowSpec

AGGS = tuple(AggSpec.parse(t) for t in ("count", "count:v", "sum:v", "avg:v", "min:v", "max:v"))
PARTIALS = partial_columns(AGGS)  # n, sum_v, cnt_v, min_v, max_v
WINDOW_KEYS = ["key", "start", "length", "slide"]
NOT_YET = None


# --------------------------------------------------------------------------------------------
# A streaming driver around assemble, as the Spark consolidate stage uses it
# --------------------------------------------------------------------------------------------


def pane_partials(rows: pd.DataFrame, pane: int) -> pd.DataFrame:
    """Partials per (slot, key, pane) with SQL semantics, computed directly with pandas."""
    frame = rows.assign(start=np.floor_divide(rows["t"].to_numpy(), pane) * pane)
    grouped = frame.groupby(["slot", "key", "start"], sort=True)
    out = grouped.agg(n=("v", "size"), sum_v=("v", "sum"), cnt_v=("v", "count"),
                      min_v=("v", "min"), max_v=("v", "max")).reset_index()
    out.loc[out["cnt_v"] == 0, "sum_v"] = np.nan  # SQL: sum of no value is null
    out["length"] = np.int64(pane)
    return out.astype({"n": np.int64, "cnt_v": np.int64, "start": np.int64})


@dataclass
class Run:
    """What a streamed run produced."""

    windows: pd.DataFrame
    calls: int
    merges: int
    max_parts: int


def count_consumed(parts: pd.DataFrame, windows: pd.DataFrame, plan: ConsolidationPlan) -> int:
    """Parts consumed to build ``windows``: recipe parts found among the input parts (with their
    multiplicity: one per slot that sent a pane) or among the reusable windows just built."""
    def rows(frame: pd.DataFrame) -> list[tuple[object, int, int]]:
        return [(k, int(s), int(n)) for k, s, n in frame[list(PART_KEYS)].itertuples(index=False)]

    have = Counter(rows(parts))
    reusable = {p.length_ms for r in plan.recipes for p in r.parts} - {plan.pane_ms}
    for row in set(rows(windows[windows["length"].isin(list(reusable))])):
        if row not in have:
            have[row] = 1
    total = 0
    for key, start, length, slide in windows[WINDOW_KEYS].itertuples(index=False):
        recipe = plan.recipe_for(WindowSpec(int(length), int(slide)), int(start))
        total += sum(have[(key, int(start) + p.offset_ms, p.length_ms)] for p in recipe.parts)
    return total


def stream(
    partials: pd.DataFrame,
    plan: ConsolidationPlan,
    watermarks: Sequence[int],
    order: Sequence[int] | np.ndarray | None = None,
) -> Run:
    """Feed partials to ``assemble`` call by call and check each call's bookkeeping.

    Before the call with watermark ``w``, every partial of a pane ending at or before ``w`` has
    arrived (in ``order``); the first call starts after the earliest pane start, later calls after
    the previous watermark; a call with no parts is skipped — as ``Consolidate`` does.
    """
    pane = plan.pane_ms
    longest = max(s.length_ms for s in plan.specs)
    if order is not None:
        partials = partials.iloc[list(order)].reset_index(drop=True)
    ends = partials["start"].to_numpy() + pane
    delivered = np.zeros(len(partials), dtype=bool)
    parts = empty_parts(PARTIALS)
    upto: int | None = NOT_YET
    outputs = []
    calls = merges = max_parts = 0
    for watermark in watermarks:
        arriving = ~delivered & (ends <= watermark)
        delivered |= arriving
        if arriving.any():
            new = partials.loc[arriving, ["key", "start", "length", *PARTIALS]]
            parts = new if parts.empty else pd.concat([parts, new], ignore_index=True)
        if parts.empty or (upto is not None and watermark <= upto):
            continue
        after = upto if upto is not None else int(parts["start"].min()) - 1
        done = assemble(parts, plan, after, watermark)
        calls += 1
        merges += done.merges
        assert done.merges == count_consumed(parts, done.windows, plan)
        assert list(done.windows.columns) == [*WINDOW_KEYS, *PARTIALS]
        # Expiry: nothing kept that no window ending after the watermark can use.
        assert (done.parts["start"] > watermark - longest).all()
        parts, upto = done.parts, watermark
        max_parts = max(max_parts, len(parts))
        outputs.append(done.windows)
    assert delivered.all(), "the last watermark must pass every pane"
    windows = pd.concat(outputs, ignore_index=True) if outputs else empty_parts(PARTIALS).assign(
        slide=pd.Series(dtype=np.int64))[[*WINDOW_KEYS, *PARTIALS]]
    return Run(windows, calls, merges, max_parts)


def as_result(windows: pd.DataFrame) -> pd.DataFrame:
    """Assembled windows in the oracle's format."""
    start = windows["start"].to_numpy(dtype=np.int64)
    length = windows["length"].to_numpy(dtype=np.int64)
    out = pd.DataFrame({
        "key": windows["key"].astype(str).to_numpy(),
        "window_start": pd.to_datetime(start, unit="ms", utc=True),
        "window_end": pd.to_datetime(start + length, unit="ms", utc=True),
        "window_length": length // 1000,
        "window_slide": windows["slide"].to_numpy(dtype=np.int64) // 1000,
    })
    finals = finalize(windows.reset_index(drop=True), AGGS)
    return pd.concat([out, finals], axis=1)


def assert_matches_oracle(rows: pd.DataFrame, windows: Sequence[WindowSpec], run: Run) -> None:
    dup = run.windows.duplicated(WINDOW_KEYS, keep=False)
    assert not dup.any(), f"windows emitted twice:\n{run.windows[dup]}"
    expected = window_oracle(rows, time_col="t", key_col="key", aggs=AGGS, windows=windows)
    compare_results(as_result(run.windows), expected)


# --------------------------------------------------------------------------------------------
# Random streams
# --------------------------------------------------------------------------------------------


@dataclass
class Case:
    rows: pd.DataFrame
    windows: list[WindowSpec]
    watermarks: list[int]
    order_seed: int


@st.composite
def cases(draw: st.DrawFn, *, max_slots: int, slide_divides_length: bool) -> Case:
    unit = 1000  # whole seconds: the oracle reports lengths in seconds
    windows = []
    for _ in range(draw(st.integers(1, 3))):
        slide = draw(st.sampled_from([1, 2, 3, 4, 6]))
        if slide_divides_length:
            length = slide * draw(st.integers(1, max(1, 8 // slide)))
        else:
            length = draw(st.integers(slide, 8))
        windows.append(WindowSpec(length * unit, slide * unit))
    n = draw(st.integers(0, 25))
    times = draw(st.lists(st.integers(-5_000, 30_000), min_size=n, max_size=n))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    values = draw(st.lists(st.one_of(st.none(), st.integers(-9, 9).map(float)),
                           min_size=n, max_size=n))
    slots = draw(st.lists(st.integers(0, max_slots - 1), min_size=n, max_size=n))
    rows = pd.DataFrame({"t": pd.Series(times, dtype=np.int64),
                         "key": pd.Series(keys, dtype=object),
                         "v": pd.Series(values, dtype=np.float64),
                         "slot": pd.Series(slots, dtype=np.int64)})
    longest = max(w.length_ms for w in windows)
    last = max(times, default=0) + longest + unit
    between = draw(st.lists(st.integers(-5_000, last), max_size=6))
    watermarks = [*sorted(set(between)), last]
    return Case(rows, windows, watermarks, draw(st.integers(0, 2**16)))


def run_case(case: Case) -> None:
    plan = plan_consolidation(case.windows)
    partials = pane_partials(case.rows, plan.pane_ms)
    order = np.random.default_rng(case.order_seed).permutation(len(partials))
    run = stream(partials, plan, case.watermarks, order)
    assert_matches_oracle(case.rows, case.windows, run)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_slots=1, slide_divides_length=True))
def test_assemble_matches_oracle_one_slot(case: Case) -> None:
    """One partial per (key, pane); windows may reuse shorter windows as parts."""
    run_case(case)


@settings(max_examples=examples(150), deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_slots=3, slide_divides_length=False))
def test_assemble_matches_oracle(case: Case) -> None:
    """The key oracle test: any window set, partials split across 1–3 slots."""
    run_case(case)


def test_duplicate_pane_partials_survive_reuse() -> None:
    plan = plan_consolidation([WindowSpec(2000, 2000), WindowSpec(3000, 3000)])
    # Pane [2000, 3000) of key a came from two slots (its key group moved mid-pane).
    parts = pd.DataFrame({"key": ["a"] * 4, "start": [0, 1000, 2000, 2000],
                          "length": [1000] * 4, "n": [1, 1, 1, 1]})
    done = assemble(parts, plan, -1, 3000)
    three = done.windows[done.windows["length"] == 3000]
    assert three["n"].tolist() == [4]
    assert len(done.parts[done.parts["start"] == 2000]) == 2  # both partials kept for [2s, 4s)


def test_window_not_multiple_of_slide_is_emitted_across_calls() -> None:
    spec = WindowSpec(3000, 2000)  # instances [2k s, 2k s + 3 s); pane 1 s
    plan = plan_consolidation([spec])
    rows = pd.DataFrame({"t": [500], "key": ["a"], "v": [1.0], "slot": [0]})
    partials = pane_partials(rows, plan.pane_ms)
    run = stream(partials, plan, [2500, 5000])
    # Row at 0.5 s is in [-2 s, 1 s) and [0 s, 3 s).
    assert sorted(run.windows["start"].tolist()) == [-2000, 0]


# --------------------------------------------------------------------------------------------
# Hand-computed cases
# --------------------------------------------------------------------------------------------


def _dense(minutes: int, keys: Sequence[str] = ("a",)) -> pd.DataFrame:
    """One row per key and minute, value 1.0."""
    t = np.repeat(np.arange(minutes, dtype=np.int64) * 60_000, len(keys))
    return pd.DataFrame({"t": t, "key": np.tile(np.array(keys, dtype=object), minutes),
                         "v": 1.0, "slot": 0})


def test_fig7_merges_in_one_call_and_many() -> None:
    """Fig. 7: 5, 10, 15, 20-minute windows over 1-minute panes cost 86 merges per hour."""
    windows = [WindowSpec.parse(w) for w in ("5m", "10m", "15m", "20m")]
    plan = plan_consolidation(windows, pane=60_000)
    rows = _dense(60)
    partials = pane_partials(rows, 60_000)
    parts = partials[["key", "start", "length", *PARTIALS]]
    done = assemble(parts, plan, -1, 3_600_000)
    assert done.merges == 86
    assert sorted(done.windows.groupby("length").size().tolist()) == [3, 4, 6, 12]
    # Minute by minute, as a stream: the same 86 merges in total, and the oracle's windows.
    run = stream(partials, plan, [m * 60_000 for m in range(1, 61)])
    assert run.calls == 60
    assert run.merges == 86
    assert_matches_oracle(rows, windows, run)


def test_parts_are_expired_over_a_long_stream() -> None:
    windows = [WindowSpec.parse(w) for w in ("2s", "4s", "12s/4s")]
    plan = plan_consolidation(windows)  # pane 2 s; 12s/4s is built from three 4 s windows
    assert {p.length_ms for r in plan.recipes for p in r.parts} == {2000, 4000}
    seconds = 100
    rows = pd.DataFrame({"t": np.arange(0, seconds * 1000, 500, dtype=np.int64),
                         "key": np.tile(np.array(["k", "j"], dtype=object), seconds),
                         "v": 2.0, "slot": 0})
    partials = pane_partials(rows, plan.pane_ms)
    run = stream(partials, plan, list(range(1000, seconds * 1000 + 14_000, 1000)))
    # Per key, parts starting in the last 12 s: at most 6 panes and 3 four-second windows.
    assert run.max_parts <= 2 * (6 + 3)
    assert run.calls > seconds
    assert_matches_oracle(rows, windows, run)


def test_assemble_keeps_parts_for_future_windows_and_merges_count_parts() -> None:
    plan = plan_consolidation([WindowSpec(3000, 1000)])  # 3 s hopping by 1 s, pane 1 s
    parts = pd.DataFrame({"key": ["a", "a", "a", "b"], "start": [0, 1000, 2000, 2000],
                          "length": [1000] * 4, "n": [1, 2, 3, 4]})
    done = assemble(parts, plan, 0, 3000)
    got = {(k, s): n for k, s, n in done.windows[["key", "start", "n"]].itertuples(index=False)}
    # Instances ending in (0, 3 s]: starts -2, -1, 0 s.
    assert got == {("a", -2000): 1, ("a", -1000): 3, ("a", 0): 6,
                   ("b", 0): 4}
    assert done.merges == 1 + 2 + 3 + 1
    # Windows ending after 3 s start after 0: pane 0 is no longer needed.
    assert sorted(done.parts["start"].tolist()) == [1000, 2000, 2000]


def test_assemble_with_nothing_to_do() -> None:
    plan = plan_consolidation([WindowSpec(2000, 2000)])
    done = assemble(empty_parts(["n"]), plan, 0, 10_000)
    assert done.windows.empty and done.parts.empty and done.merges == 0
    assert list(done.windows.columns) == ["key", "start", "length", "slide", "n"]
    parts = pd.DataFrame({"key": ["a"], "start": [4000], "length": [1000], "n": [1]})
    early = assemble(parts, plan, 0, 3000)  # the pane's window ends at 6 s
    assert early.windows.empty and early.merges == 0
    assert len(early.parts) == 1


def test_merging_partials_of_one_pane_follows_sql_semantics() -> None:
    frame = pd.DataFrame({
        "key": ["a", "a", "b", "b", "c"],
        "start": [0, 0, 0, 0, 0],
        "length": [1000] * 5,
        "n": [1, 2, 1, 1, 3],
        "cnt_v": [0, 2, 0, 0, 1],
        "sum_v": [np.nan, 5.0, np.nan, np.nan, -1.0],
        "min_v": [np.nan, 2.0, np.nan, np.nan, -1.0],
        "max_v": [np.nan, 3.0, np.nan, np.nan, -1.0],
    })
    plan = plan_consolidation([WindowSpec(1000, 1000)])
    out = assemble(frame, plan, 0, 1000).windows.set_index("key").sort_index()
    assert out["n"].tolist() == [3, 2, 3]
    assert out["cnt_v"].tolist() == [2, 0, 1]
    assert out.loc["a", "sum_v"] == 5.0 and out.loc["a", "min_v"] == 2.0
    assert out.loc["a", "max_v"] == 3.0
    assert pd.isna(out.loc["b", "sum_v"])  # SQL: sum of only nulls is null, not 0
    assert pd.isna(out.loc["b", "min_v"]) and pd.isna(out.loc["b", "max_v"])
    assert out.loc["c", "sum_v"] == -1.0


@pytest.mark.parametrize(("column", "rule"), [
    ("n", "sum"), ("cnt_v", "sum"), ("sum_v", "sum"), ("min_v", "min"), ("max_v", "max"),
    ("min_max", "min"), ("max_min", "max")])
def test_merge_rule(column: str, rule: str) -> None:
    assert merge_rule(column) == rule


def test_finalize_table() -> None:
    windows = pd.DataFrame({
        "n": [3, 2, 1],
        "cnt_v": [2, 0, 1],
        "sum_v": [5.0, np.nan, -4.0],
        "min_v": [1.0, np.nan, -4.0],
        "max_v": [4.0, np.nan, -4.0],
    }, index=[7, 8, 9])
    out = finalize(windows, AGGS)
    assert list(out.columns) == ["count", "count_v", "sum_v", "avg_v", "min_v", "max_v"]
    assert out.index.tolist() == [7, 8, 9]
    assert out["count"].tolist() == [3, 2, 1] and out["count"].dtype == np.int64
    assert out["count_v"].tolist() == [2, 0, 1] and out["count_v"].dtype == np.int64
    assert out["avg_v"].tolist()[0] == 2.5 and out["avg_v"].tolist()[2] == -4.0
    for column in ("sum_v", "avg_v", "min_v", "max_v"):
        assert pd.isna(out.loc[8, column]), column
        assert out[column].dtype == np.float64
