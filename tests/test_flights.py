"""The flight data set: fetched for real with npm, verified, cached, replaced atomically."""

from __future__ import annotations

import argparse
import io
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from elastream.cli import data as data_cli
from elastream.core.errors import DataError, OptionError
from elastream.workloads import flights
from elastream.workloads.flights import (
    FLIGHTS_FILE,
    default_data_dir,
    fetch_flights,
    flights_path,
    verify_flights,
)


@pytest.fixture(scope="module")
def fetched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real download, shared by the tests that only read or copy it."""
    return fetch_flights(tmp_path_factory.mktemp("flights"), quiet=True)


def copy_of(fetched: Path, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(fetched, directory / FLIGHTS_FILE))


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != FLIGHTS_FILE)


def test_fetch_gives_the_documented_file(fetched: Path) -> None:
    verify_flights(fetched)
    assert fetched.name == "flights-3m.parquet"
    table = pq.read_table(fetched)
    assert table.num_rows == 3_000_000
    assert table.column_names == ["date", "delay", "distance", "origin", "destination"]
    bounds = pc.min_max(table["date"]).as_py()
    assert bounds["min"].year == 2001 and bounds["min"].month == 1
    assert (bounds["max"].year, bounds["max"].month) <= (2001, 7)
    assert leftovers(fetched.parent) == []  # no temporary file left beside it


def test_fetch_creates_missing_directories_and_reports_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = fetch_flights(tmp_path / "a" / "b")
    assert target == tmp_path / "a" / "b" / FLIGHTS_FILE
    verify_flights(target)
    err = capsys.readouterr().err
    assert "missing" in err and "vega-datasets@3.2.1" in err


def test_second_fetch_is_a_no_op(
    fetched: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = copy_of(fetched, tmp_path)
    before = target.stat()
    assert fetch_flights(tmp_path) == target
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("damage", ["flip_byte", "truncate", "empty"])
def test_corrupt_file_is_detected(fetched: Path, tmp_path: Path, damage: str) -> None:
    target = copy_of(fetched, tmp_path)
    content = bytearray(target.read_bytes())
    if damage == "flip_byte":
        content[len(content) // 2] ^= 0xFF
    elif damage == "truncate":
        content = content[: len(content) // 2]
    else:
        content = bytearray()
    target.write_bytes(bytes(content))
    with pytest.raises(DataError, match="corrupt"):
        verify_flights(target)


def test_corrupt_file_is_fetched_again(
    fetched: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = copy_of(fetched, tmp_path)
    with target.open("r+b") as stream:
        stream.seek(1000)
        stream.write(b"not parquet")
    assert fetch_flights(tmp_path) == target
    verify_flights(target)
    assert "corrupt" in capsys.readouterr().err
    assert leftovers(tmp_path) == []


def test_verify_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        verify_flights(tmp_path / FLIGHTS_FILE)


class BreaksHalfway(io.RawIOBase):
    """A download that dies after some bytes, as when the process is interrupted."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload[: len(payload) // 2]
        self.sent = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.sent == len(self.payload):
            raise OSError("connection reset")
        size = min(len(buffer), len(self.payload) - self.sent)
        buffer[:size] = self.payload[self.sent : self.sent + size]
        self.sent += size
        return size


def test_interrupted_write_keeps_the_old_file_and_no_partial(fetched: Path, tmp_path: Path) -> None:
    target = copy_of(fetched, tmp_path)
    before = target.stat().st_mtime_ns
    with pytest.raises(OSError, match="connection reset"):
        flights._write_atomically(io.BufferedReader(BreaksHalfway(fetched.read_bytes())), target)
    assert target.stat().st_mtime_ns == before
    verify_flights(target)
    assert leftovers(tmp_path) == []


def test_interrupted_write_leaves_no_file_at_all(fetched: Path, tmp_path: Path) -> None:
    target = tmp_path / FLIGHTS_FILE
    with pytest.raises(OSError):
        flights._write_atomically(io.BufferedReader(BreaksHalfway(fetched.read_bytes())), target)
    assert list(tmp_path.iterdir()) == []


def test_wrong_download_is_never_put_in_place(fetched: Path, tmp_path: Path) -> None:
    target = copy_of(fetched, tmp_path)
    with pytest.raises(DataError, match="corrupt"):
        flights._write_atomically(io.BytesIO(b"PAR1 something else PAR1"), target)
    verify_flights(target)
    assert leftovers(tmp_path) == []


def test_missing_npm_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(DataError, match="npm is not installed or not on PATH"):
        fetch_flights(tmp_path / "data", quiet=True)
    assert not (tmp_path / "data" / FLIGHTS_FILE).exists()


def test_failing_npm_pack_shows_npm_s_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flights, "NPM_PACKAGE", "vega-datasets@99.0.0")
    with pytest.raises(
        DataError, match=r"npm pack vega-datasets@99\.0\.0 failed \(exit \d+\): npm"
    ):
        fetch_flights(tmp_path, quiet=True)
    assert list(tmp_path.iterdir()) == []


def test_default_data_dir_follows_env_then_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ELASTREAM_DATA_DIR", str(tmp_path / "env"))
    assert default_data_dir() == tmp_path / "env"
    assert flights_path() == tmp_path / "env" / FLIGHTS_FILE
    monkeypatch.setenv("ELASTREAM_DATA_DIR", "")
    monkeypatch.chdir(tmp_path)
    assert default_data_dir() == tmp_path / "data"
    monkeypatch.delenv("ELASTREAM_DATA_DIR")
    assert flights_path() == tmp_path / "data" / FLIGHTS_FILE
    assert flights_path(tmp_path / "x") == tmp_path / "x" / FLIGHTS_FILE


def cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="elastream")
    data_cli.register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_cli_fetch_prints_the_verified_path(
    fetched: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy_of(fetched, tmp_path)
    args = cli(["data", "fetch", "flights", "--data-dir", str(tmp_path)])
    assert args.handler(args) == 0
    out = capsys.readouterr()
    assert out.out.strip() == str(tmp_path / FLIGHTS_FILE)
    assert out.err == ""


def test_cli_data_dir_falls_back_to_env(
    fetched: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    copy_of(fetched, tmp_path / "env")
    monkeypatch.setenv("ELASTREAM_DATA_DIR", str(tmp_path / "env"))
    args = cli(["data", "fetch", "flights"])
    assert args.handler(args) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "env" / FLIGHTS_FILE)


def test_cli_rejects_unknown_dataset(tmp_path: Path) -> None:
    args = cli(["data", "fetch", "zipf", "--data-dir", str(tmp_path)])
    with pytest.raises(OptionError, match="DATASET must be one of flights, got 'zipf'"):
        args.handler(args)
    assert list(tmp_path.iterdir()) == []
