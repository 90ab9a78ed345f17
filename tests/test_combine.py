"""Oracle tests of combined execution (Enorm §5.1) and of switching it with split, batch by batch.

Records stream in micro-batches; each batch runs split (pane partials) or combined (window
partials, :func:`window_partials`), chosen at random per batch as the controller would switch
live; the parts go through :func:`assemble` the way the Spark consolidate stage carries them.
Whatever the mix, every window must equal the pandas batch oracle's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.oracle import compare_results, window_oracle
from tests.properties import examples
from tests.test_assemble import AGGS, PARTIALS, WINDOW_KEYS, Case, as_result, cases

from elastream.algorithms.windows.assemble import assemble, empty_parts
from elastream.algorithms.windows.combine import (
    anchor_of,
    late_records,
    part_ends,
    spec_of,
    window_partials,
)
from elastream.algorithms.windows.consolidation import ConsolidationPlan, plan_consolidation
from elastream.algorithms.windows.panes import pane_partials
from elastream.core.windows import WindowSpec


def _partials(rows: pd.DataFrame, plan: ConsolidationPlan, combined: bool) -> pd.DataFrame:
    """One micro-batch's partials per (slot, key): panes, or window partials."""
    records = pa.table({"slot": rows["slot"].to_numpy(), "key": rows["key"].astype(str),
                        "start": rows["t"].to_numpy() // plan.pane_ms * plan.pane_ms,
                        "v": pa.array(rows["v"].to_numpy(), from_pandas=True)})
    group = ["slot", "key", "start"]
    if combined:
        out = window_partials(records, plan, group, PARTIALS)
    else:
        out = pane_partials(records, group, PARTIALS)
        out = out.append_column("length", pa.array(np.full(out.num_rows, plan.pane_ms),
                                                    pa.int64()))
    return out.to_pandas()[["key", "start", "length", *PARTIALS]]


def _stream(case: Case, modes: Sequence[bool]) -> pd.DataFrame:
    """Feed the records batch by batch, batch ``i`` split or combined as ``modes[i]`` says.

    A record arrives in the batch of the first watermark its pane ends by (so none is late); the
    parts are carried from call to call as the consolidate stage does.
    """
    plan = plan_consolidation(case.windows)
    pane_end = (case.rows["t"] // plan.pane_ms + 1) * plan.pane_ms
    batch = np.searchsorted(np.asarray(case.watermarks), pane_end.to_numpy())
    parts = empty_parts(PARTIALS)
    upto: int | None = None
    out = []
    for i, watermark in enumerate(case.watermarks):
        arriving = case.rows[batch == i]
        if len(arriving):
            new = _partials(arriving, plan, modes[i % len(modes)])
            parts = new if parts.empty else pd.concat([parts, new], ignore_index=True)
        if parts.empty or (upto is not None and watermark <= upto):
            continue
        after = upto if upto is not None else int(parts["start"].min()) - 1
        done = assemble(parts, plan, after, watermark)
        # Expiry: a window partial is kept only while its window has not ended.
        kept = done.parts
        assert (part_ends(kept[kept["length"] < 0], plan) > watermark).all()
        parts, upto = kept, watermark
        out.append(done.windows)
    assert batch.max(initial=0) < len(case.watermarks)
    return pd.concat(out, ignore_index=True) if out else empty_parts(PARTIALS).assign(
        slide=pd.Series(dtype=np.int64))[[*WINDOW_KEYS, *PARTIALS]]


def _check(case: Case, windows: pd.DataFrame) -> None:
    dup = windows.duplicated(WINDOW_KEYS, keep=False)
    assert not dup.any(), f"windows emitted twice:\n{windows[dup]}"
    expected = window_oracle(case.rows, time_col="t", key_col="key", aggs=AGGS,
                             windows=case.windows)
    compare_results(as_result(windows), expected)


@settings(max_examples=examples(120), derandomize=True, database=None)
@given(cases(max_slots=3, slide_divides_length=False), st.lists(st.booleans(), min_size=1,
                                                                  max_size=7))
def test_split_and_combined_batches_mixed_at_random_equal_the_oracle(
        case: Case, modes: list[bool]) -> None:
    _check(case, _stream(case, modes))


@settings(max_examples=examples(40), derandomize=True, database=None)
@given(cases(max_slots=2, slide_divides_length=True))
def test_combined_alone_equals_the_oracle(case: Case) -> None:
    _check(case, _stream(case, [True]))


def test_window_partials_execute_each_record_once_per_window() -> None:
    # 10 s windows sliding by 5 s, and 5 s tumbling; pane 5 s. A record at 12 s is in
    # [5, 15) and [10, 20) of the first spec and [10, 15) of the second: W = 3.
    plan = plan_consolidation([WindowSpec(10_000, 5_000), WindowSpec(5_000, 5_000)])
    records = pa.table({"key": ["a"], "start": [10_000], "v": [2.0]})
    out = window_partials(records, plan, ["key", "start"], ["n", "sum_v"]).to_pandas()
    lengths = [plan.specs[i].length_ms for i in spec_of(out["length"].to_numpy(), 2)]
    assert sorted(zip(out["start"], lengths, strict=True)) == [
        (5_000, 10_000), (10_000, 5_000), (10_000, 10_000)]
    assert out["n"].tolist() == [1, 1, 1] and out["sum_v"].tolist() == [2.0] * 3
    # The anchor is the instance that ends last: [10, 20) of the 10 s spec.
    anchor = out[anchor_of(out["length"].to_numpy(), 2)]
    assert anchor[["start"]].to_numpy().ravel().tolist() == [10_000]
    assert plan.specs[int(spec_of(anchor["length"].to_numpy(), 2)[0])].length_ms == 10_000


@pytest.mark.parametrize(("upto", "late"), [(10_000, 0), (15_000, 0), (20_000, 1)])
def test_a_late_record_counts_once_when_its_last_window_was_emitted(upto: int, late: int
                                                                      ) -> None:
    # The record at 12 s: its windows end at 15 s, 15 s and 20 s. Emitted up to ``upto``, its
    # partials whose window ended are dropped; the record is late when all of them are.
    plan = plan_consolidation([WindowSpec(10_000, 5_000), WindowSpec(5_000, 5_000)])
    records = pa.table({"key": ["a"], "start": [10_000], "v": [2.0]})
    parts = window_partials(records, plan, ["key", "start"], ["n", "sum_v"]).to_pandas()
    dropped = parts[part_ends(parts, plan) <= upto]
    assert len(dropped) == {10_000: 0, 15_000: 2, 20_000: 3}[upto]
    assert late_records(dropped, plan) == late
