"""Tests of replaying a static data set as an event-time ordered chunk stream (no Spark).

For Parquet, CSV (with malformed rows) and JSON lines (with broken lines): chunks come in event
time order, no timestamp spans two chunks, every input row is written exactly once, and the last
chunk holds the timestamp punctuation. Then the manifest is reused, and the feeder moves chunks
one at a time and resumes after a restart.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.core.errors import DataError, OptionError
from elastream.workloads import replay
from elastream.workloads.replay import (
    CORRUPT,
    MANIFEST,
    PUNCT,
    Feeder,
    ReplayManifest,
    event_times,
    prepare_replay,
    read_static,
)

BASE = pd.Timestamp("2024-03-01T00:00:00Z")


def read_chunks(staging: Path, manifest: ReplayManifest) -> list[pd.DataFrame]:
    return [pq.read_table(staging / name).to_pandas() for name in manifest.chunks]


def chunk_times(frames: list[pd.DataFrame], time_col: str, kind: pa.DataType) -> list[pd.Series]:
    return [event_times(pa.chunked_array([pa.array(f[time_col], type=kind)])) for f in frames]


def check_stream(
    staging: Path, manifest: ReplayManifest, time_col: str, input_rows: int, punct_after_ms: int
) -> list[pd.DataFrame]:
    """The invariants every replay must hold; returns the data chunks (punctuation excluded)."""
    assert (staging / MANIFEST).exists()
    assert manifest.chunks == [f"chunk-{i:06d}.parquet" for i in range(len(manifest.chunks))]
    frames = read_chunks(staging, manifest)
    kind = pq.read_schema(staging / manifest.chunks[0]).field(time_col).type
    *data, punct, again = frames
    times = chunk_times(frames, time_col, kind)
    # Every input row exactly once; only the last two chunks are (identical) punctuations.
    assert sum(len(f) for f in data) == input_rows == manifest.rows
    assert all(not f[PUNCT].any() for f in data)
    assert len(punct) == 1 and bool(punct[PUNCT].iloc[0])
    pd.testing.assert_frame_equal(punct, again)
    times = times[:-1]
    # Event-time order within and across chunks; unparsable times last.
    flat = pd.concat(times[:-1], ignore_index=True)
    valid = flat.dropna()
    assert flat.notna().tolist() == sorted(flat.notna().tolist(), reverse=True)
    assert valid.is_monotonic_increasing
    # No timestamp split across chunks.
    for left, right in itertools.pairwise(times[:-1]):
        if left.notna().any() and right.notna().any():
            assert left.dropna().iloc[-1] < right.dropna().iloc[0]
    # The punctuation lies punct_after_ms past the last time; the manifest says the same.
    last = valid.iloc[-1]
    assert manifest.punct_time and manifest.last_time and manifest.first_time
    assert times[-1].iloc[0] == last + pd.Timedelta(milliseconds=punct_after_ms)
    assert pd.Timestamp(manifest.punct_time) == last + pd.Timedelta(milliseconds=punct_after_ms)
    assert pd.Timestamp(manifest.last_time) == last
    assert pd.Timestamp(manifest.first_time) == valid.iloc[0]
    # Only the punctuation's time is set in the punctuation row.
    others = punct.drop(columns=[time_col, PUNCT])
    assert others.isna().all(axis=None)
    return data


# --------------------------------------------------------------------------------------------
# Parquet
# --------------------------------------------------------------------------------------------


def write_parquet(path: Path, rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    seconds = rng.integers(0, 40, rows)
    frame = pd.DataFrame({
        "time": (BASE + pd.to_timedelta(seconds, unit="s")).tz_localize(None),  # naive
        "key": rng.choice(["ORD", "LAS", "SFO"], rows),
        "v": np.where(rng.random(rows) < 0.2, np.nan, rng.normal(size=rows)),
        "row": np.arange(rows),
    })
    frame.to_parquet(path)
    return frame


@pytest.mark.parametrize("rows_per_batch", [1, 3, 7, 100, 1000])
def test_parquet_replay(tmp_path: Path, rows_per_batch: int) -> None:
    source = tmp_path / "in.parquet"
    frame = write_parquet(source, 100)
    manifest = prepare_replay(source, "parquet", "time", rows_per_batch, tmp_path / "st", 90_000)
    data = check_stream(tmp_path / "st", manifest, "time", 100, 90_000)
    # Rows are kept whole, ordered stably (equal times keep input order).
    out = pd.concat(data, ignore_index=True)
    expected = frame.assign(time=frame["time"].dt.tz_localize("UTC")).sort_values(
        "time", kind="stable", ignore_index=True)
    assert out["row"].tolist() == expected["row"].tolist()
    assert out["key"].tolist() == expected["key"].tolist()
    # Naive timestamps are marked UTC, in microseconds (what Spark reads as TIMESTAMP).
    assert pq.read_schema(tmp_path / "st" / manifest.chunks[0]).field("time").type == pa.timestamp(
        "us", tz="UTC")
    # Chunks hold about rows_per_batch rows: a cut only moves forward past equal times.
    sizes = [len(f) for f in data]
    assert all(size >= rows_per_batch for size in sizes[:-1])
    if rows_per_batch >= 100:
        assert len(data) == 1


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 12), min_size=1, max_size=40), st.integers(1, 8))
def test_equal_times_never_split(tmp_path: Path, seconds: list[int], rows_per_batch: int) -> None:
    # Integer seconds since the epoch: the chunks' time column stays an integer.
    case = Path(tempfile.mkdtemp(dir=tmp_path))
    pq.write_table(pa.table({"time": pa.array(seconds, pa.int64()),
                             "key": ["k"] * len(seconds)}), case / "in.parquet")
    manifest = prepare_replay(case / "in.parquet", "parquet", "time", rows_per_batch,
                              case / "st", 5_000)
    data = check_stream(case / "st", manifest, "time", len(seconds), 5_000)
    chunks = [f["time"].tolist() for f in data]
    assert [t for chunk in chunks for t in chunk] == sorted(seconds)
    for left, right in itertools.pairwise(chunks):
        assert left[-1] < right[0]
    assert read_chunks(case / "st", manifest)[-1]["time"].tolist() == [max(seconds) + 5]


def test_parquet_folder_and_nulls(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    pq.write_table(pa.table({"time": pa.array([BASE + pd.Timedelta(seconds=5), None],
                                              pa.timestamp("ns", tz="UTC")),
                             "key": ["a", "b"]}), folder / "sub" / "b.parquet")
    pq.write_table(pa.table({"time": pa.array([BASE + pd.Timedelta(seconds=1)],
                                              pa.timestamp("ns", tz="UTC")),
                             "key": ["c"]}), folder / "a.parquet")
    (folder / "notes.csv").write_text("ignored\n")
    manifest = prepare_replay(folder, "parquet", "time", 10, tmp_path / "st", 1000)
    data = check_stream(tmp_path / "st", manifest, "time", 3, 1000)
    assert data[0]["key"].tolist() == ["c", "a", "b"]  # the null time goes last
    assert data[0][CORRUPT].isna().all()


def test_missing_time_column_and_missing_input(tmp_path: Path) -> None:
    source = tmp_path / "in.parquet"
    write_parquet(source, 5)
    with pytest.raises(OptionError, match=r"^time must name a column of the input "
                       r"\(time, key, v, row\), got 'when'"):
        prepare_replay(source, "parquet", "when", 10, tmp_path / "st", 1000)
    with pytest.raises(DataError, match="does not exist"):
        prepare_replay(tmp_path / "nope.parquet", "parquet", "time", 10, tmp_path / "st2", 1000)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"holds no \.parquet files"):
        read_static(tmp_path / "empty", "parquet")
    with pytest.raises(OptionError, match=r"^format"):
        read_static(source, "xml")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match="cannot read"):
        read_static(tmp_path / "bad.parquet", "parquet")


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------

CSV = """time,key,v
2024-03-01 00:00:05,ORD,1.5
2024-03-01 00:00:01,LAS,2
2024-03-01 00:00:05,SFO,
not a time,ORD,3
2024-03-01 00:00:03,LAS,abc
2024-03-01 00:00:02,ORD,4,extra
2024-03-01 00:00:02,SFO
2024-03-01 00:00:01,ORD,-1
"""


@pytest.mark.parametrize("rows_per_batch", [1, 2, 100])
def test_csv_replay_keeps_malformed_rows(tmp_path: Path, rows_per_batch: int) -> None:
    source = tmp_path / "in.csv"
    source.write_text(CSV)
    manifest = prepare_replay(source, "csv", "time", rows_per_batch, tmp_path / "st", 60_000)
    data = check_stream(tmp_path / "st", manifest, "time", 8, 60_000)
    out = pd.concat(data, ignore_index=True)
    assert set(out.columns) == {"time", "key", "v", CORRUPT, PUNCT}
    good = out[out[CORRUPT].isna()]
    # Raw cells are kept as text (the stream's parser reports bad ones), empty cells as null.
    assert good["key"].tolist() == ["LAS", "ORD", "LAS", "ORD", "SFO", "ORD"]
    assert good["v"].tolist() == ["2", "-1", "abc", "1.5", None, "3"]
    assert good["time"].iloc[-1] == "not a time"  # unparsable time: after every parsable one
    # Rows with the wrong number of fields become one _corrupt row each, other columns null.
    bad = out[out[CORRUPT].notna()]
    assert len(bad) == 2
    assert bad[["time", "key", "v"]].isna().all(axis=None)
    assert sorted(bad[CORRUPT].str.extract(r"got (\d+)")[0].tolist()) == ["2", "4"]
    assert any("ORD,4,extra" in text for text in bad[CORRUPT])
    assert pq.read_schema(tmp_path / "st" / manifest.chunks[0]).field(CORRUPT).type == pa.string()


def test_csv_without_header_is_a_data_error(tmp_path: Path) -> None:
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="has no header row"):
        read_static(tmp_path / "empty.csv", "csv")


# --------------------------------------------------------------------------------------------
# JSON lines
# --------------------------------------------------------------------------------------------

JSON_LINES = [
    '{"time": "2024-03-01 00:00:04", "key": "ORD", "v": 1}',
    '{"time": "2024-03-01 00:00:02", "key": "LAS", "v": null}',
    '{"time": "2024-03-01 00:00:02", "key": "SFO", "v": "x"}',
    '{"time": "2024-03-01T00:00:01Z", "key": "ORD", "v": 2.5',  # broken: no closing brace
    "",
    '[1, 2, 3]',
    '{"time": "later", "key": "LAS", "v": 7}',
    '{"time": "2024-03-01 00:00:03", "key": "ORD"}',
]


@pytest.mark.parametrize("rows_per_batch", [1, 3, 100])
def test_json_lines_replay_keeps_broken_lines(tmp_path: Path, rows_per_batch: int) -> None:
    source = tmp_path / "in.json"
    source.write_text("\n".join(JSON_LINES) + "\n")
    manifest = prepare_replay(source, "json", "time", rows_per_batch, tmp_path / "st", 3_600_000)
    data = check_stream(tmp_path / "st", manifest, "time", 7, 3_600_000)  # blank line skipped
    out = pd.concat(data, ignore_index=True)
    good = out[out[CORRUPT].isna()]
    assert good["key"].tolist() == ["LAS", "SFO", "ORD", "ORD", "LAS"]
    assert good["v"].tolist() == [None, "x", None, "1", "7"]
    bad = out[out[CORRUPT].notna()]
    assert sorted(bad[CORRUPT].str.extract(r"^line (\d+)")[0].astype(int).tolist()) == [4, 6]
    assert bad[["time", "key", "v"]].isna().all(axis=None)


def test_json_integers_are_kept_as_written(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text('{"time": "2024-03-01 00:00:01", "key": 7}\n'
                      '{"time": "2024-03-01 00:00:02", "key": 9007199254740993}\n'
                      '{"time": "2024-03-01 00:00:03"}\n')
    table = read_static(source, "json")
    assert table.column("key").to_pylist() == ["7", "9007199254740993", None]


@pytest.mark.parametrize("fmt", ["csv", "parquet-int"])
def test_punctuation_time_is_exact_for_sub_second_offsets(tmp_path: Path, fmt: str) -> None:
    if fmt == "csv":
        source = tmp_path / "in.csv"
        source.write_text("time,key\n2024-03-01 00:00:01,a\n")
    else:
        source = tmp_path / "in.parquet"
        pq.write_table(pa.table({"time": pa.array([100], pa.int64()), "key": ["a"]}), source)
    manifest = prepare_replay(source, fmt.split("-")[0], "time", 10, tmp_path / "st", 1_500)
    kind = pq.read_schema(tmp_path / "st" / manifest.chunks[-1]).field("time").type
    punct = chunk_times(read_chunks(tmp_path / "st", manifest)[-1:], "time", kind)[0]
    assert manifest.punct_time is not None
    assert punct.iloc[0] == pd.Timestamp(manifest.punct_time)


# --------------------------------------------------------------------------------------------
# Manifest reuse and the feeder
# --------------------------------------------------------------------------------------------


def test_preparing_twice_reuses_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in.parquet"
    write_parquet(source, 20)
    staging = tmp_path / "st"
    first = prepare_replay(source, "parquet", "time", 4, staging, 1000)
    stamps = {p.name: p.stat().st_mtime_ns for p in staging.iterdir()}

    def must_not_read(*args: object) -> None:
        raise AssertionError("the data set was read again")

    monkeypatch.setattr(replay, "read_static", must_not_read)
    again = prepare_replay(source, "parquet", "time", 4, staging, 1000)
    assert again == first
    assert {p.name: p.stat().st_mtime_ns for p in staging.iterdir()} == stamps
    assert json.loads((staging / MANIFEST).read_text())["chunks"] == first.chunks
    # Another source, or another time column, is refused rather than silently mixed.
    other = tmp_path / "other.parquet"
    write_parquet(other, 3)
    with pytest.raises(DataError, match="already replays"):
        prepare_replay(other, "parquet", "time", 4, staging, 1000)
    with pytest.raises(DataError, match="already replays"):
        prepare_replay(source, "parquet", "row", 4, staging, 1000)


def test_feeder_moves_one_chunk_at_a_time_and_resumes(tmp_path: Path) -> None:
    source = tmp_path / "in.parquet"
    write_parquet(source, 30)
    staging, watched = tmp_path / "st", tmp_path / "watched"
    manifest = prepare_replay(source, "parquet", "time", 5, staging, 1000)
    total = len(manifest.chunks)
    assert total >= 4
    feeder = Feeder(staging, watched, manifest)
    assert watched.is_dir() and (feeder.fed(), feeder.remaining()) == (0, total)
    contents = {name: (staging / name).read_bytes() for name in manifest.chunks}
    assert feeder.feed_next() == manifest.chunks[0]
    assert feeder.feed_next() == manifest.chunks[1]
    assert sorted(p.name for p in watched.iterdir()) == manifest.chunks[:2]
    assert not (staging / manifest.chunks[0]).exists()
    # Restart: a new feeder (and a re-prepared manifest) continues with the next staged chunk.
    resumed = Feeder(staging, watched, prepare_replay(source, "parquet", "time", 5, staging, 1000))
    assert (resumed.fed(), resumed.remaining()) == (2, total - 2)
    names = []
    while (name := resumed.feed_next()) is not None:
        names.append(name)
        assert resumed.fed() == 2 + len(names)
    assert names == manifest.chunks[2:]
    assert resumed.feed_next() is None and resumed.remaining() == 0
    # Moved, not copied or rewritten: byte for byte, and the last one is the punctuation.
    assert {name: (watched / name).read_bytes() for name in manifest.chunks} == contents
    assert pq.read_table(watched / manifest.chunks[-1]).column(PUNCT).to_pylist() == [True]


def test_no_valid_time_means_no_punctuation(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("time,key\nnope,a\nnever,b\n")
    manifest = prepare_replay(source, "csv", "time", 10, tmp_path / "st", 1000)
    assert manifest.rows == 2 and manifest.punct_time is None
    assert manifest.first_time is None and manifest.last_time is None
    frames = read_chunks(tmp_path / "st", manifest)
    assert [len(f) for f in frames] == [2]
    assert not frames[0][PUNCT].any()


def test_corrupt_column_is_text_for_clean_json(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text('{"time": "2024-03-01 00:00:01", "key": "a"}\n')
    manifest = prepare_replay(source, "json", "time", 10, tmp_path / "st", 1000)
    for name in manifest.chunks:
        assert pq.read_schema(tmp_path / "st" / name).field(CORRUPT).type == pa.string()
