"""Property test: random small streams and window sets, Spark results equal the oracle."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.oracle import compare_results, window_oracle
from tests.spark_jobs import make_spec, random_stream, run_job

pytestmark = pytest.mark.spark

HALF_HOURS = st.integers(min_value=1, max_value=8)


@st.composite
def window_sets(draw: Any) -> list[str]:
    specs = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        length = draw(HALF_HOURS)
        slide = draw(st.integers(min_value=1, max_value=length))
        specs.append(f"{length * 30}m/{slide * 30}m")
    return specs


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(min_value=0, max_value=10_000),
    rows=st.integers(min_value=30, max_value=400),
    rows_per_batch=st.integers(min_value=40, max_value=200),
    windows=window_sets(),
    aggs=st.lists(st.sampled_from(["sum:v", "count", "count:v", "min:v", "max:v", "avg:v"]),
                  min_size=1, max_size=4, unique=True),
    force_moves=st.booleans(),
    slots=st.integers(min_value=1, max_value=3),
)
def test_random_streams_equal_the_oracle(spark: Any, seed: int, rows: int, rows_per_batch: int,
                                         windows: list[str], aggs: list[str], force_moves: bool,
                                         slots: int) -> None:
    df = random_stream(seed, rows, keys=7, hours=20)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        df.to_parquet(root / "in.parquet")
        spec = make_spec(root / "in.parquet", root / "out", aggs=aggs, windows=windows,
                         rows_per_batch=rows_per_batch, slots=slots)
        run = run_job(spark, spec, force_moves=force_moves)
        expected = window_oracle(df, time_col="ts", key_col="key", aggs=spec.windowing.aggs,
                                 windows=spec.windowing.windows)
        compare_results(run.results, expected)
        assert run.summary["nothing_lost"]
        assert run.summary["input_rows"] == rows
