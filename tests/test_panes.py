"""Pane partials of a batch of records against pandas' grouped aggregation (SQL null rules)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from elastream.algorithms.windows.panes import pane_partials, value_column

PARTIALS = ["n", "sum_v", "cnt_v", "min_v", "max_v", "sum_w"]


def _oracle(frame: pd.DataFrame) -> pd.DataFrame:
    grouped = frame.groupby(["kg", "key", "start"], sort=True)
    out = pd.DataFrame({
        "n": grouped.size(),
        "sum_v": grouped["v"].sum(min_count=1),
        "cnt_v": grouped["v"].count(),
        "min_v": grouped["v"].min(),
        "max_v": grouped["v"].max(),
        "sum_w": grouped["w"].sum(min_count=1),
    })
    return out.reset_index()


@pytest.mark.parametrize("seed", range(5))
def test_partials_equal_a_grouped_aggregation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = 2_000
    v = rng.normal(size=rows)
    v[rng.random(rows) < 0.3] = np.nan  # nulls, and groups whose values are all null
    frame = pd.DataFrame({
        "kg": rng.integers(0, 4, rows), "key": rng.choice(["a", "b", "c", "d", "e"], rows),
        "start": rng.integers(0, 6, rows) * 3_600_000, "v": v,
        "w": np.where(rng.random(rows) < 0.9, np.nan, 1.0)})
    table = pa.Table.from_pandas(frame.rename(columns={"v": "x_v", "w": "x_w"}),
                                 preserve_index=False)
    got = (pane_partials(table, ["kg", "key", "start"], PARTIALS, prefix="x_").to_pandas()
           .sort_values(["kg", "key", "start"]).reset_index(drop=True))
    expected = _oracle(frame)
    assert list(got.columns) == ["kg", "key", "start", *PARTIALS]
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert got["n"].sum() == rows
    assert got["sum_w"].isna().any()  # all-null groups give null sums, as SQL does


def test_value_column_names_the_input() -> None:
    assert value_column("sum_delay") == "delay"
    assert value_column("max_dep_delay", "_el_v_") == "_el_v_dep_delay"
