"""The run report on output folders written by hand: what it draws, what it skips and why.

A real run's folder is checked in test_spark_report.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.report_runs import busy_steps, drawn_and_skipped, step, write_run

from elastream.cli.main import main
from elastream.core.aggregates import AggSpec
from elastream.core.errors import DataError
from elastream.core.identity import identity
from elastream.core.spec import RunSpec
from elastream.core.windows import WindowSpec
from elastream.report import PLOTS, render
from elastream.report.run_folder import read_run_folder

ALL = {plot.id for plot in PLOTS}
SUMMARY = {"input_rows": 303, "dead_letter_rows": 3, "batches": 3, "moves": 2,
           "quarantined_files": 0, "nothing_lost": True}
# version kg source sent target taken: kg 4 in flight over batches 1-2, kg 5 over batch 1.
LEDGER = "1 4 0 1 2 3\n1 5 1 1 2 2 17\n"


def job() -> dict[str, Any]:
    return identity(RunSpec.of(input=Path("clicks"), output=Path("out"), time_col="ts",
                               key_col="user", aggs=(AggSpec.parse("sum:amount"),),
                               windows=(WindowSpec.parse("10m"), WindowSpec.parse("30m/10m")),
                               mode="watch", planner="fish", slots=4))


def test_a_run_with_every_feature_draws_every_plot(tmp_path: Path) -> None:
    out = write_run(tmp_path / "out", busy_steps(), summary=SUMMARY, ledger=LEDGER,
                    reasons=["key: missing key", "v: not a number 'abc'",
                             "v: not a number 'x'"], job=job())
    report = render(out, png_dir=tmp_path / "png")
    html = report.html.read_text()
    assert report.html == out / "report.html"
    assert drawn_and_skipped(html) == (ALL, set())
    assert set(report.plots) == ALL and report.skipped == {}
    assert sorted(p.name for p in report.pngs) == sorted(f"{i}.png" for i in ALL)
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in report.pngs)
    for key, value in SUMMARY.items():
        assert f'data-key="{key}">{json.dumps(value)}<' in html
    assert "p50 500 ms, p95 680 ms over 3 batches" in html  # numpy's linear p95 of 500,500,700
    assert "combine costs less" in html  # the decisions table
    # What the job is, and the hot key it split, by name.
    for label, value in (("input", str(Path("clicks").resolve())), ("key", "user"),
                         ("windows", "10m, 30m/10m"), ("aggregates", "sum:amount"),
                         ("planner", "fish")):
        assert f'<th>{label}</th><td class="num" data-key="{label}">{value}<' in html
    assert 'data-key="slots">4<' in html
    assert "at most 1 hot key split: user-42 (batches 1-1)" in html
    assert ("1 scale event: to 3 at batch 0 (not done: the job ended with 2 key groups still "
            "to move)") in html
    # Nothing to fetch: no scripts, no linked files, images inline.
    assert not any(tag in html for tag in ("<script", "<link", "url(", 'src="http'))
    assert html.count('src="data:image/png;base64,') == len(ALL)


def test_dead_letter_reasons_count_alike_and_keep_examples(tmp_path: Path) -> None:
    reasons = ["v: not a number 'abc'", "v: not a number 'x'", "v: not a number 'y'",
               "v: not a number 'z'", "key: missing key"]
    run = read_run_folder(write_run(tmp_path, [step(0)], reasons=reasons))
    assert run.reasons == {"v: not a number": 4, "key: missing key": 1}
    assert list(run.examples["reason"]) == [*reasons[:3], "key: missing key"]


def test_hand_offs_from_the_ledger_and_uncollected_receipts(tmp_path: Path) -> None:
    out = write_run(tmp_path, [step(0)], ledger=LEDGER)
    (out / "_migration" / "receipts").mkdir()
    (out / "_migration" / "receipts" / "v2-kg1").write_text("0 3 1 4 9")
    (out / "_migration" / "receipts" / "v1-kg5").write_text("9 9 9 9")  # already in ledger
    table = read_run_folder(out).hand_offs
    assert table.values.tolist() == [[1, 4, 0, 1, 2, 3], [1, 5, 1, 1, 2, 2],
                                     [2, 1, 0, 3, 1, 4]]


def test_empty_metrics_skip_every_plot_with_a_note(tmp_path: Path) -> None:
    report = render(write_run(tmp_path, []))
    drawn, skipped = drawn_and_skipped(report.html.read_text())
    assert drawn == set()
    assert skipped == ALL | {"summary", "job"}
    assert all(report.skipped.values())


def test_a_run_without_a_dead_letter_says_so(tmp_path: Path) -> None:
    empty = render(write_run(tmp_path / "empty", [step(0)], reasons=[]))
    assert empty.skipped["dead-letter"] == "no malformed records: the dead letter is empty"
    api = render(write_run(tmp_path / "api", [step(0, dead_letter_rows=2)]))
    assert api.skipped["dead-letter"].startswith("no dead_letter/ folder (2 dead-letter rows")


def test_records_missing_optional_fields_draw_what_they_have(tmp_path: Path) -> None:
    old = {"batch_id": 0, "batches": 1, "input_rows": 10, "valid_rows": 10, "wall_seconds": 1.0}
    out = write_run(tmp_path, [old, {**old, "batch_id": 1}])
    with (out / "metrics.jsonl").open("a") as metrics:
        metrics.write('{"batch_id": 2, "batc')  # torn by a kill: skipped
    report = render(out)
    assert report.plots == ("rates",)
    assert set(report.skipped) == ALL - {"rates"}


def test_not_an_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(DataError, match="not a run's output folder"):
        render(tmp_path)
    assert main(["report", str(tmp_path)]) == 2
    assert main(["report", str(tmp_path / "missing")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"elastream report: error: {tmp_path} is not a run's output folder: it holds neither "
        "metrics.jsonl nor summary.json",
        f"elastream report: error: OUTPUT must be a run's output folder, got "
        f"'{tmp_path / 'missing'}'"]


def test_cli_writes_where_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = write_run(tmp_path / "out", [step(0), step(1)])
    page, pngs = tmp_path / "pages" / "r.html", tmp_path / "png"
    assert main(["report", str(out), "--html", str(page), "--png", str(pngs)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == str(page)
    assert sorted(printed[1:]) == sorted(str(p) for p in pngs.iterdir())
    assert not (out / "report.html").exists()


@pytest.mark.parametrize(("option", "bad", "rule"), [
    ("--html", "folder", "must be a file path, not a folder"),
    ("--png", "file", "must be a folder (made if missing), not a file"),
])
def test_cli_options_fail_fast(option: str, bad: str, rule: str, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    out = write_run(tmp_path / "out", [step(0)])
    value = out if bad == "folder" else out / "metrics.jsonl"
    assert main(["report", str(out), option, str(value)]) == 2
    assert capsys.readouterr().err == f"elastream report: error: {option} {rule}, " \
                                      f"got '{value}'\n"
    assert not (out / "report.html").exists()


def test_live_view_draws_the_folder_anew_at_each_load(tmp_path: Path) -> None:
    """``--serve``: before any metrics a waiting page; then each load shows the batches so
    far, and every page reloads itself."""
    import threading
    import urllib.request

    from elastream.report.live import serve

    out = tmp_path / "out"
    out.mkdir()
    server = serve(out, port=0, refresh_seconds=3)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        def load() -> str:
            with urllib.request.urlopen(url) as answer:
                return str(answer.read().decode())

        assert 'data-waiting="1"' in load()
        write_run(out, [step(0)])
        first = load()
        write_run(out, [step(0), step(1), step(2)])
        then = load()
        for page in (first, then):
            assert '<meta http-equiv="refresh" content="3">' in page
            assert 'data-plot="batch-duration"' in page
        assert "over 1 batches" in first and "over 3 batches" in then
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(url + "other")
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("args", "option", "rule", "value"), [
    (["--serve", "--port", "70000"], "--port", "must be an integer in [0, 65535]", "70000"),
    (["--serve", "--refresh", "0"], "--refresh", "must be a whole number of seconds >= 1", "0"),
    (["--serve", "--json"], "--serve", "writes no files: not with --html, --png or --json",
     "'--serve'"),
])
def test_live_view_options_fail_fast(args: list[str], option: str, rule: str, value: str,
                                     tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = write_run(tmp_path / "out", [step(0)])
    assert main(["report", str(out), *args]) == 2
    assert capsys.readouterr().err == f"elastream report: error: {option} {rule}, " \
                                      f"got {value}\n"
