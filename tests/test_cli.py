"""Tests of ``elastream run`` argument validation: user mistakes are one-line errors, exit code 2.

Every case fails validation before Spark would start; a guard replaces the Spark runtime modules
(and the flights download) so that a case that slipped through fails loudly instead of starting a
job. ``test_guard_catches_a_valid_command`` shows the guard works.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from elastream.cli import run as run_cli
from elastream.cli.main import build_parser, main


class WouldStartError(BaseException):
    """Raised if a test reaches the point where the CLI would start Spark.

    Not an ``Exception``: nothing on the way (such as the CLI's handling of Spark failures)
    may take it for a failure of a job.
    """


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise WouldStartError("validation passed: the CLI would start a Spark job")

    for name in ("elastream.runtimes.spark.file_run", "elastream.runtimes.spark.session"):
        stub = types.ModuleType(name)
        stub.FileRun = refuse  # type: ignore[attr-defined]
        stub.get_spark = refuse  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, stub)
    monkeypatch.setitem(sys.modules, "pyspark", None)  # any real pyspark import fails
    import elastream.workloads.flights as flights

    monkeypatch.setattr(flights, "fetch_flights", refuse)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "in.csv"
    path.write_text("t,k,v\n2024-01-01 00:00:00,a,1\n")
    return path


def base(data: Path, tmp_path: Path) -> list[str]:
    return ["run", "--input", str(data), "--time-col", "t", "--key-col", "k", "--agg", "sum:v",
            "--window", "1h", "--output", str(tmp_path / "out"), "--quiet"]


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_guard_catches_a_valid_command(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(WouldStartError):
        main(base(data, tmp_path))
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["logs"]  # Spark's log, to come


@pytest.mark.parametrize(
    ("extra", "option", "value"),
    [
        (["--window", "1x"], "--window", "'1x'"),
        (["--window", "1h/2h"], "--window", "'1h/2h'"),
        (["--window", "0s"], "--window", "'0s'"),
        (["--window", "/1h"], "--window", "'/1h'"),
        (["--window", "1h/1m/1s"], "--window", "'1h/1m/1s'"),
        (["--agg", "median:v"], "--agg", "'median'"),
        (["--agg", "sum"], "--agg", "'sum'"),
        (["--agg", "sum:1v"], "--agg", "'1v'"),
        (["--agg", "sum:v"], "--agg", "'sum_v'"),  # repeats the base command's sum:v
        (["--agg", "max:t"], "--agg", "'t'"),
        (["--slots", "0"], "--slots", "0"),
        (["--slots", "-2"], "--slots", "-2"),
        (["--slots", "9", "--key-groups", "8"], "--slots", "9"),
        (["--key-groups", "0"], "--key-groups", "0"),
        (["--key-groups", "40000"], "--key-groups", "40000"),
        (["--rows-per-batch", "0"], "--rows-per-batch", "0"),
        (["--max-batches", "0"], "--max-batches", "0"),
        (["--max-moves", "-1"], "--max-moves", "-1"),
        (["--lateness", "5x"], "--lateness", "'5x'"),
        (["--lateness=-1s"], "--lateness", "'-1s'"),
        (["--planner", "greedy"], "--planner", "'greedy'"),
        (["--key-col", "t"], "--key-col", "'t'"),
        (["--then", "k,"], "--then", "'k,'"),
        (["--then", "k/"], "--then", "'k/'"),
        (["--then", "k,k"], "--then", "'k,k'"),
        (["--then", "k/v"], "--then", "'v'"),
        (["--then", "t"], "--then", "'t'"),
        (["--then", "k"], "--then", "['k', 'k']"),
        (["--then", "k,v"], "--agg", "'v'"),
        (["--then", "k,x", "--planner", "fish"], "--planner", "'fish'"),
        (["--scale-at", "3"], "--scale-at", "'3'"),
        (["--scale-at", "3:0"], "--scale-at", "'3:0'"),
        (["--scale-at", "3:2", "--scale-at", "1:3"], "--scale-at", "[3, 1]"),
        (["--scale-at", "3:9", "--key-groups", "8"], "--scale-at", "9"),
        (["--scale-at", "3:2", "--planner", "elasticutor"], "--scale-at", "['3:2']"),
        (["--scale-at", "3:2", "--max-moves", "0"], "--max-moves", "0"),
        (["--autoscale", "3"], "--autoscale", "'3'"),
        (["--scale-at", "3:2", "--planner", "flux", "--scale-mode", "stop"], "--scale-mode",
         "'stop'"),
        (["--autoscale", "9:12"], "--autoscale", "'9:12'"),
        (["--autoscale", "1:8", "--planner", "elasticutor"], "--autoscale", "(1, 8)"),
        (["--autoscale", "1:8", "--latency-target", "0"], "--latency-target", "0.0"),
        (["--latency-target", "2"], "--latency-target", "2.0"),
        (["--scale-at", "3:2", "--scale-at", "5:3", "--migration", "ch"], "--migration", "'ch'"),
        (["--tau", "-0.1"], "--tau", "-0.1"),
        (["--rate", "0"], "--rate", "0.0"),
        (["--rate", "500", "--mode", "watch"], "--rate", "500.0"),
        (["--schema", "t timestamp"], "--schema", "'t timestamp'"),
    ],
)
def test_invalid_options_are_one_line_errors(
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    option: str,
    value: str,
) -> None:
    code, out, err = run_main(base(data, tmp_path) + extra, capsys)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"elastream run: error: {option} ")
    assert lines[0].endswith(f"got {value}")
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_missing_input_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.parquet"
    code, out, err = run_main(["run", "--input", str(missing), "--time-col", "t", "--key-col", "k"],
                              capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"elastream run: error: --input must be an existing file or folder, got {str(missing)!r}"]


def test_input_needs_time_and_key_columns(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["run", "--input", str(data)], ["run", "--input", str(data), "--time-col", "t"],
                 ["run", "--input", str(data), "--key-col", "k"]):
        code, out, err = run_main(argv, capsys)
        assert code == 2 and out == ""
        assert err.strip().splitlines() == [
            "elastream run: error: --time-col/--key-col are required with --input, got 'missing'"]


def test_time_col_equal_to_key_col_names_both(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main(["run", "--input", str(data), "--time-col", "c", "--key-col", "c"],
                            capsys)
    assert code == 2
    assert err.strip() == ("elastream run: error: --key-col must differ from the time column, "
                           "got 'c'")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--slots", "two"], "elastream run: error: argument --slots: --slots must be an "
         "integer, got 'two'"),
        (["--key-groups", "1.5"], "elastream run: error: argument --key-groups: --key-groups "
         "must be an integer"),
        (["--format", "xml"], "elastream run: error: argument --format: invalid choice: 'xml'"),
        (["--mode", "tail"], "elastream run: error: argument --mode: invalid choice: 'tail'"),
        (["--bogus"], "elastream: error: unrecognized arguments: --bogus"),
    ],
)
def test_argparse_errors_exit_2_without_traceback(
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(base(data, tmp_path) + extra)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(message)


def test_zero_lateness_spellings(data: Path, tmp_path: Path) -> None:
    parser = build_parser()
    for text in ("0", "0s", " 0s "):
        args = parser.parse_args([*base(data, tmp_path), "--lateness", text])
        assert run_cli.job_from_args(args).source.lateness_ms == 0
    args = parser.parse_args([*base(data, tmp_path), "--lateness", "90s"])
    assert run_cli.job_from_args(args).source.lateness_ms == 90_000


def test_zero_lateness_in_other_units(data: Path, tmp_path: Path) -> None:
    parser = build_parser()
    args = parser.parse_args([*base(data, tmp_path), "--lateness", "0m"])
    assert run_cli.job_from_args(args).source.lateness_ms == 0


def test_job_from_args_builds_the_spec(data: Path, tmp_path: Path) -> None:
    parser = build_parser()
    args = parser.parse_args([*base(data, tmp_path), "--window", "6h/1h", "--agg", "count",
                              "--slots", "3", "--key-groups", "64", "--planner", "hash"])
    spec = run_cli.job_from_args(args)
    assert spec.files.format == "csv"  # from the file name
    assert [str(w) for w in spec.windowing.windows] == ["1h", "6h/1h"]
    assert [a.output_name for a in spec.windowing.aggs] == ["sum_v", "count"]
    assert (spec.scaling.slots, spec.routing.key_groups, spec.routing.planner) == (3, 64, "hash")
    assert (spec.source.time_col, spec.source.key_col) == ("t", "k")


def test_data_zipf_writes_a_replayable_stream(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "zipf.parquet"
    assert main(["data", "zipf", str(out), "--tuples", "5000", "--z", "1.5", "--keys", "100",
                 "--seed", "3"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    frame = pd.read_parquet(out)
    assert list(frame.columns) == ["ts", "key", "value"] and len(frame) == 5000
    assert frame["ts"].is_monotonic_increasing and str(frame["ts"].dt.tz) == "UTC"
    # Skewed: within the first part (the hot keys change every 400 tuples here), the most
    # frequent key of z=1.5 over 100 keys holds about 40%, far more than 1/100.
    assert frame["key"].iloc[:400].value_counts().iloc[0] > 0.25 * 400


def test_version_and_the_commands_help(capsys: pytest.CaptureFixture[str]) -> None:
    import elastream

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"elastream {elastream.__version__}\n"
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "plan plan without running a job: key-group balance, a migration, cores" in text
    assert "data input data sets: fetch the flights, or generate a Zipf stream" in text
