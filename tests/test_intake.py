"""A watched folder's intake (workloads/intake.py): files checked, converted or quarantined."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from elastream.workloads.intake import FolderIntake

STREAM = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("user", pa.string()),
                    ("amount", pa.float64())])


def rows(n: int = 3, **columns: object) -> pd.DataFrame:
    frame = pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=n, freq="min"),
                          "user": [f"u{i}" for i in range(n)], "amount": [1.5] * n})
    for name, values in columns.items():
        frame[name] = values
    return frame


@pytest.fixture
def place(tmp_path: Path) -> Path:
    (tmp_path / "in").mkdir()
    return tmp_path


def intake(place: Path, schema: pa.Schema | None = STREAM, fmt: str = "parquet") -> FolderIntake:
    return FolderIntake(place / "in", place / "work", fmt, place / "quarantine.jsonl", schema)


def write(place: Path, name: str, frame: pd.DataFrame, age: int = 0) -> Path:
    """``frame`` as ``in/name`` (pandas' defaults: nanosecond timestamps), ``age`` s old."""
    path = place / "in" / name
    frame.to_parquet(path)
    stamp = 1_700_000_000 - age
    os.utime(path, (stamp, stamp))
    return path


def test_nanosecond_timestamps_are_taken_as_microseconds_in_file_order(place: Path) -> None:
    write(place, "b.parquet", rows(), age=10)
    write(place, "a.parquet", rows(2), age=5)
    assert pq.ParquetFile(place / "in" / "b.parquet").schema_arrow.field("ts").type.unit == "ns"
    folder = intake(place)
    assert folder.take() == []
    assert [p.name for p in folder.taken()] == ["b.parquet", "a.parquet"]  # oldest first
    taken = pq.read_table(place / "work" / "input" / "b.parquet")
    assert taken.schema.field("ts").type == pa.timestamp("us")
    assert taken.to_pandas()["ts"].tolist() == rows()["ts"].tolist()
    # The converted file keeps the source's modification time: Spark orders files by it.
    assert os.stat(place / "work" / "input" / "b.parquet").st_mtime == 1_700_000_000 - 10


def test_a_file_spark_reads_as_it_is_is_linked_not_copied(place: Path) -> None:
    path = place / "in" / "us.parquet"
    rows().to_parquet(path, coerce_timestamps="us")
    intake(place).take()
    assert os.path.samefile(path, place / "work" / "input" / "us.parquet")


def test_unreadable_files_are_quarantined_with_their_reason_and_the_rest_taken(
        place: Path) -> None:
    write(place, "1-good.parquet", rows(), age=30)
    (place / "in" / "2-garbage.parquet").write_bytes(b"PAR1 not really")
    (place / "in" / "3-empty.parquet").write_bytes(b"")
    write(place, "4-text.parquet", rows(amount=["1.5", "2", "x"]), age=10)
    write(place, "5-widened.parquet", rows(amount=[1, 2, 3]), age=5)
    folder = intake(place)
    quarantined = {q.file: q.reason for q in folder.take()}
    assert set(quarantined) == {"2-garbage.parquet", "3-empty.parquet", "4-text.parquet"}
    assert quarantined["2-garbage.parquet"].startswith("not a readable Parquet file (")
    assert quarantined["4-text.parquet"] == "column amount is string, the stream's is double"
    assert [p.name for p in folder.taken()] == ["1-good.parquet", "5-widened.parquet"]
    widened = pq.read_table(place / "work" / "input" / "5-widened.parquet")
    assert widened.schema.field("amount").type == pa.float64()
    listed = [json.loads(line) for line in (place / "quarantine.jsonl").read_text().splitlines()]
    assert {e["file"] for e in listed} == set(quarantined)
    assert {q.file for q in folder.quarantined()} == set(quarantined)


def test_a_restarted_intake_takes_nothing_twice_and_retakes_a_fixed_file(place: Path) -> None:
    write(place, "a.parquet", rows(), age=20)
    (place / "in" / "b.parquet").write_bytes(b"broken")
    assert [q.file for q in intake(place).take()] == ["b.parquet"]
    again = intake(place)  # a new process: the books say what was done
    assert again.pending() == [] and again.take() == []
    write(place, "b.parquet", rows(4), age=0)  # fixed in place
    assert again.take() == []
    assert [p.name for p in again.taken()] == ["a.parquet", "b.parquet"]
    assert again.quarantined() == []


def test_hidden_and_underscored_files_are_left_alone(place: Path) -> None:
    write(place, ".part.parquet", rows())
    write(place, "_SUCCESS.parquet", rows())
    assert intake(place).pending() == []


def test_a_csv_file_must_carry_the_streams_columns_in_order(place: Path) -> None:
    (place / "in" / "a.csv").write_text("ts,user,amount\n2024-01-01,u,1\n")
    (place / "in" / "b.csv").write_text("user,ts,amount\nu,2024-01-01,1\n")
    quarantined = intake(place, fmt="csv").take()
    assert [(q.file, q.reason) for q in quarantined] == [
        ("b.csv", "its header (user, ts, amount) is not the stream's columns in order "
                  "(ts, user, amount)")]


def test_without_a_schema_only_the_timestamps_are_converted(place: Path) -> None:
    write(place, "a.parquet", rows(amount=["x", "y", "z"]))
    folder = intake(place, schema=None)
    assert folder.take() == []
    taken = pq.read_table(folder.taken()[0])
    assert taken.schema.field("ts").type == pa.timestamp("us")
    assert taken.schema.field("amount").type == pa.string()
