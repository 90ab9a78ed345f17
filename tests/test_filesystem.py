"""The filesystem layer: one contract on the local disk, an object store (moto's S3) and a
renaming filesystem (pyarrow's local one, standing in for HDFS's code path), and how each
stays atomic."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs
import pytest

from elastream.cli.main import build_parser
from elastream.cli.run import job_from_args
from elastream.core.errors import OptionError
from elastream.stores.filesystem import ArrowFolder, Folder, LocalFolder, folder, local_path

KINDS = ["local", "s3", "renaming"]


@pytest.fixture(params=KINDS)
def any_folder(request: pytest.FixtureRequest, tmp_path: Path) -> Folder:
    if request.param == "local":
        return folder(tmp_path / "f")
    if request.param == "s3":
        return folder(request.getfixturevalue("s3_uri"))
    path = str(tmp_path / "f")
    return ArrowFolder(pafs.LocalFileSystem(), path, urlsplit(f"file://{path}"), renames=True)


def test_files_are_written_read_listed_and_deleted(any_folder: Folder) -> None:
    assert any_folder.names() == [] and not any_folder.exists("a")  # nothing yet, no error
    with pytest.raises(FileNotFoundError):
        any_folder.read_bytes("a")
    any_folder.write("a", "text")
    (any_folder / "sub").write("b", b"\x00bytes")
    assert sorted(any_folder.names()) == ["a", "sub"]
    assert any_folder.read_text("a") == "text"
    assert (any_folder / "sub").read_bytes("b") == b"\x00bytes"
    assert any_folder.exists("a") and any_folder.exists("sub")
    any_folder.delete("a")
    any_folder.delete("a")  # gone already: nothing happens
    assert any_folder.names() == ["sub"]


def test_a_published_value_is_replaced_whole(any_folder: Folder) -> None:
    assert any_folder.latest("P") is None
    for value in ("v1", "v2", "v3"):
        any_folder.publish("P", value)
        assert any_folder.latest("P") == value.encode()
    # Local disk: one file renamed over; elsewhere: only the newest immutable object stays.
    assert any_folder.names() == (["P"] if isinstance(any_folder, LocalFolder)
                                  else ["P.000000000003"])


def test_create_once_keeps_the_first_content(any_folder: Folder) -> None:
    assert any_folder.create_once("b", "3") == b"3"
    assert any_folder.create_once("b", "4") == b"3"
    assert any_folder.read_text("b") == "3"


def test_appends_keep_their_order(any_folder: Folder) -> None:
    for line in ("one\n", "two\n", "three\n"):
        any_folder.append("log", line)
    if isinstance(any_folder, LocalFolder):
        assert any_folder.read_text("log") == "one\ntwo\nthree\n"
        return
    assert isinstance(any_folder, ArrowFolder)  # one immutable object per append
    resumed = ArrowFolder(any_folder.fs, any_folder.path, any_folder.location,
                          renames=any_folder.renames)  # a writer started again goes on after
    resumed.append("log", "four\n")
    assert [any_folder.read_text(f"log.{n:012d}") for n in (1, 2, 3, 4)] == [
        "one\n", "two\n", "three\n", "four\n"]


def test_only_the_local_disk_creates_exclusively(any_folder: Folder) -> None:
    assert any_folder.exclusive == isinstance(any_folder, LocalFolder)


def test_rewriting_a_name_replaces_it_except_where_rename_never_overwrites(
        any_folder: Folder) -> None:
    any_folder.write("part", "first")
    any_folder.write("part", "again")
    renames_never_over = isinstance(any_folder, ArrowFolder) and any_folder.renames
    assert any_folder.read_text("part") == ("first" if renames_never_over else "again")
    assert any_folder.names() == ["part"]  # no temporary file left behind


def test_an_object_store_write_is_one_upload_with_no_temporary_object(s3_uri: str) -> None:
    store = folder(s3_uri)
    assert isinstance(store, ArrowFolder) and not store.renames
    moves: list[tuple[str, str]] = []
    real = store.fs

    class Watched:  # every call goes to the real filesystem; moves are recorded
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def move(self, src: str, dest: str) -> None:
            moves.append((src, dest))
            real.move(src, dest)

    store.fs = Watched()
    store.write("a", "x")
    store.publish("P", "1")
    store.publish("P", "2")
    assert moves == []  # no rename: an object appears whole when its upload completes
    assert sorted(store.names()) == ["P.000000000002", "a"]


def test_a_reader_whose_newest_value_is_replaced_meanwhile_lists_again(s3_uri: str) -> None:
    reader, writer = folder(s3_uri), folder(s3_uri)
    writer.publish("P", "1")
    real_read = reader.read_bytes
    calls: list[str] = []

    def read_after_a_newer_publish(name: str) -> bytes:
        if not calls:  # between the reader's listing and its read, the writer publishes
            writer.publish("P", "2")  # ... which deletes P.000000000001
        calls.append(name)
        return real_read(name)

    reader.read_bytes = read_after_a_newer_publish  # type: ignore[method-assign]
    assert reader.latest("P") == b"2"
    assert calls == ["P.000000000001", "P.000000000002"]


def test_a_leftover_older_value_does_not_hide_the_newest(s3_uri: str) -> None:
    store = folder(s3_uri)
    store.write("P.000000000001", "old")  # a writer died before deleting it
    store.write("P.000000000002", "new")
    assert store.latest("P") == b"new"
    store.publish("P", "newer")
    assert store.names() == ["P.000000000003"]


def test_locations_become_folders(tmp_path: Path, s3_uri: str) -> None:
    assert isinstance(folder(tmp_path), LocalFolder)
    assert folder(f"file://{tmp_path}").path == tmp_path  # type: ignore[attr-defined]
    assert folder(f"file:{tmp_path}").path == tmp_path  # type: ignore[attr-defined]
    remote = folder(s3_uri) / "_routing"
    again = folder(str(remote))  # a folder travels to Spark's workers as text
    assert isinstance(again, ArrowFolder) and isinstance(remote, ArrowFolder)
    assert again.path == remote.path and again.path.endswith("/_routing")
    assert again.fs is remote.fs  # one client per bucket and options


@pytest.mark.parametrize("uri", ["ftp://host/x", "abfs://c@a.dfs.core.windows.net/x",
                                 "http://host/x"])
def test_other_schemes_are_refused_naming_option_rule_and_value(uri: str) -> None:
    with pytest.raises(OptionError, match=r"^state_dir must be a local path or a file://, "
                       r"hdfs://, viewfs://, s3://, s3a://, gs://, gcs:// URI, got '"
                       rf"{uri}'$"):
        folder(uri, option="state_dir")


def test_a_local_only_option_refuses_remote_locations(tmp_path: Path) -> None:
    assert local_path(f"file://{tmp_path}", option="--output") == tmp_path
    with pytest.raises(OptionError, match=r"^--output must be a local path or a file:// URI, "
                       r"got 's3://b/x'$"):
        local_path("s3://b/x", option="--output")


def _run_args(tmp_path: Path, output: str) -> argparse.Namespace:
    data = tmp_path / "in.csv"
    data.write_text("t,k,v\n2001-01-01 00:00:00,a,1\n")
    return build_parser().parse_args(["run", "--input", str(data), "--time-col", "t",
                                      "--key-col", "k", "--agg", "sum:v", "--output", output])


def test_run_output_takes_a_file_uri_and_refuses_an_object_store(tmp_path: Path) -> None:
    assert job_from_args(_run_args(tmp_path, f"file://{tmp_path}/out")).files.output == \
        tmp_path / "out"
    assert job_from_args(_run_args(tmp_path, "out")).files.output == Path("out")
    with pytest.raises(OptionError, match=r"^--output must be a local path or a file:// URI"):
        job_from_args(_run_args(tmp_path, "s3://bucket/out"))
