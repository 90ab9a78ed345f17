"""``elastream run`` rejects every invalid option before it downloads, starts Spark or writes.

Nothing of elastream is replaced. The data folder (``ELASTREAM_DATA_DIR``) and the working
folder are empty temporary folders, and ``PATH`` holds no ``npm``, ``java`` or shell: an
option that slipped through validation would reach the download (and fail there, with another
message) or Spark (which cannot start). Each case must exit with status 2 and one line naming
the option, the rule and the value, and leave both folders as they were.
``test_a_valid_command_gets_as_far_as_the_download`` shows the set-up catches a slip.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from elastream.cli.main import main
from elastream.core.aggregates import AggSpec
from elastream.core.identity import IDENTITY, identity
from elastream.core.spec import RunSpec
from elastream.core.windows import WindowSpec
from elastream.workloads.replay import STAGED, prepare_replay

CSV = "t,k,v\n2024-01-01 00:00:00,a,1\n2024-01-01 00:30:00,b,2\n"
WITH_CSV = ["--input", "in.csv", "--time-col", "t", "--key-col", "k", "--agg", "sum:v",
            "--window", "1h"]
KAFKA = ["--input", "kafka://127.0.0.1:9/flights", "--time-col", "t", "--key-col", "k",
         "--agg", "sum:v", "--window", "1h"]
"""A Kafka input where no broker answers (port 9: discard, nothing listens)."""
KAFKA_SCHEMA = "t timestamp, k string, v double"
WATCH_EMPTY = ["--input", "empty", "--mode", "watch", "--time-col", "t", "--key-col", "k",
               "--agg", "sum:v", "--window", "1h"]


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with a small CSV, an empty folder and a plain file; no npm, no Spark."""
    work, data, no_tools = tmp_path / "work", tmp_path / "data", tmp_path / "bin"
    for folder in (work, data, no_tools, work / "empty"):
        folder.mkdir()
    (work / "in.csv").write_text(CSV)
    (work / "afile").write_text("not a folder\n")
    (work / "chain.json").write_text('{"operators": [{"id": "per_origin", "keys": ["origin"], '
                                     '"aggs": ["max:sum_delay"]}]}')
    monkeypatch.chdir(work)
    monkeypatch.setenv("ELASTREAM_DATA_DIR", str(data))
    monkeypatch.setenv("PATH", str(no_tools))
    monkeypatch.setenv("JAVA_HOME", str(no_tools))
    monkeypatch.setattr("elastream.cli.run_checks.BROKER_SECONDS", 1.0)  # none answers here
    return tmp_path


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def rejected(argv: list[str], place: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``elastream run ARGV``: it must fail with status 2, in one line, touching nothing."""
    before = listing(place)
    code = main(["run", "--quiet", *argv])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert len(err.strip().splitlines()) == 1, err
    assert listing(place) == before
    return err.strip()


INVALID = [
    # (options, flag, value as the message shows it)
    (["--window", "0h"], "--window", "'0h'"),
    (["--window", "1h/2h"], "--window", "'1h/2h'"),
    (["--agg", "median:delay"], "--agg", "'median'"),
    (["--agg", "sum:nope"], "--agg", "'nope'"),
    (["--agg", "sum:origin"], "--agg", "'origin'"),
    (["--slots", "0"], "--slots", "0"),
    (["--slots", "9", "--key-groups", "8"], "--slots", "9"),
    (["--key-groups", "0"], "--key-groups", "0"),
    (["--planner", "nope"], "--planner", "'nope'"),
    (["--then", "origin,destination", "--planner", "fish"], "--planner", "'fish'"),
    (["--max-moves", "-1"], "--max-moves", "-1"),
    (["--min-imbalance", "-1"], "--min-imbalance", "-1.0"),
    (["--min-imbalance", "nan", "--planner", "hash"], "--min-imbalance", "nan"),
    (["--serialisation", "-0.5", "--planner", "hash"], "--serialisation", "-0.5"),
    (["--scale-at", "3:0"], "--scale-at", "'3:0'"),
    (["--scale-at", "3:8", "--planner", "elasticutor"], "--scale-at", "['3:8']"),
    (["--scale-at", "3:8", "--scale-at", "1:4", "--planner", "hash"], "--scale-at", "[3, 1]"),
    (["--tau", "-1"], "--tau", "-1.0"),
    (["--rows-per-batch", "0"], "--rows-per-batch", "0"),
    (["--rate", "0"], "--rate", "0.0"),
    (["--rate", "inf"], "--rate", "inf"),
    (["--schema", "ts timestamp"], "--schema", "'ts timestamp'"),
    (["--lateness", "5x"], "--lateness", "'5x'"),
    (["--lateness=-1h"], "--lateness", "'-1h'"),
    (["--max-batches", "0"], "--max-batches", "0"),
    (["--then", "nope"], "--then", "'nope'"),
    (["--then", "origin"], "--then", "['origin', 'origin']"),
    (["--time-col", "nope"], "--time-col", "'nope'"),
    (["--key-col", "nope"], "--key-col", "'nope'"),
    (["--key-col", "date"], "--key-col", "'date'"),
    (["--mode", "watch"], "--mode", "'watch'"),
    (["--format", "csv"], "--format", "'csv'"),
    (["--output", "afile"], "--output", "'afile'"),
    (["--output", "afile/sub"], "--output", "'afile/sub'"),
    (["--input", "nothere", "--time-col", "t", "--key-col", "k"], "--input", "'nothere'"),
    (["--input", "in.csv"], "--time-col/--key-col", "'missing'"),
    ([*WITH_CSV, "--format", "parquet"], "--input", "'in.csv'"),
    ([*WITH_CSV, "--mode", "watch"], "--input", "'in.csv'"),
    ([*WITH_CSV, "--agg", "max:w"], "--agg", "'w'"),
    ([*WITH_CSV, "--then", "k,x"], "--then", "'x'"),
    (["--input", "empty", "--time-col", "t", "--key-col", "k"], "--input", "'empty'"),
    ([*WATCH_EMPTY, "--schema", "t timestamp, k strin"], "--schema", "'k strin'"),
    ([*WATCH_EMPTY, "--schema", "t timestamp, k string"], "--agg", "'v'"),
    ([*WATCH_EMPTY, "--schema", "t timestamp, k string, v double", "--rate", "9"], "--rate",
     "9.0"),
    (["--latency-target", "0", "--planner", "elasticutor"], "--latency-target", "0.0"),
    (["--latency-target", "2"], "--latency-target", "2.0"),  # flux takes no latency target
    (["--elastic-executors", "5", "--slots", "4", "--planner", "elasticutor"],
     "--elastic-executors", "5"),
    (["--spark-executors", "2", "--planner", "elasticutor"], "--spark-executors", "'2'"),
    (["--spark-executors", "1:4", "--planner", "elasticutor"], "--spark-executors",
     "'local[2]'"),
    (["--spark-executors", "3:2", "--planner", "elasticutor", "--master", "spark://h:1"],
     "--spark-executors", "'3:2'"),
    (["--spark-executors", "1:2", "--master", "spark://h:1"], "--spark-executors", "'flux'"),
    (["--fused", "1"], "--fused", "1"),
    (["--chain", "nothere.json"], "--chain", "'nothere.json'"),
    (["--chain", "afile"], "--chain", "'afile'"),
    (["--chain", "chain.json", "--window", "1h", "--fused", "2"], "--fused", "2"),
    (["--chain", "chain.json", "--window", "1h", "--agg", "count"], "--chain",
     "'max_sum_delay'"),
    (["--chain", "chain.json", "--window", "1h", "--window", "2h"], "--window",
     "['1h', '2h']"),
    (["--graph", "chain.json", "--window", "1h"], "--graph", "'chain.json'"),
    (["--graph", "chain.json", "--chain", "chain.json"], "--graph", "'chain.json'"),
    (["--key-col", "origin,destination", "--partition-by", "dest"], "--partition-by",
     "['dest']"),
    ([*WITH_CSV, "--key-col", "k,x"], "--key-col", "'x'"),
    (["--input", "kafka://nohost/flights", "--time-col", "t", "--key-col", "k"], "--input",
     "'kafka://nohost/flights'"),
    (KAFKA, "--schema", "'missing'"),
    ([*KAFKA, "--schema", KAFKA_SCHEMA, "--format", "parquet"], "--format", "'parquet'"),
    ([*KAFKA, "--schema", KAFKA_SCHEMA, "--rate", "5"], "--rate", "5.0"),
    ([*KAFKA, "--schema", KAFKA_SCHEMA, "--mode", "watch"], "--mode", "'watch'"),
    ([*KAFKA, "--schema", "t timestamp, k string"], "--agg", "'v'"),
    ([*KAFKA, "--schema", KAFKA_SCHEMA], "--input", "'kafka://127.0.0.1:9/flights'"),
    ([*WITH_CSV, "--starting-offsets", "earliest"], "--starting-offsets", "'earliest'"),
    ([*WITH_CSV, "--sink", "kafka"], "--sink", "'kafka'"),
    ([*WITH_CSV, "--sink", "s3"], "--sink", "'s3'"),
    ([*WITH_CSV, "--sink", "kafka://127.0.0.1:9/windows"], "--sink",
     "'kafka://127.0.0.1:9/windows'"),
]


@pytest.mark.parametrize(("argv", "flag", "value"), INVALID,
                         ids=[" ".join(case[0]) for case in INVALID])
def test_an_invalid_option_fails_fast(argv: list[str], flag: str, value: str, place: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    line = rejected(argv, place, capsys)
    assert line.startswith(f"elastream run: error: {flag} "), line
    assert line.endswith(f"got {value}"), line


@pytest.mark.parametrize(("argv", "flag", "value"), [
    (["--slots", "two"], "--slots", "'two'"),
    (["--tau", "x"], "--tau", "'x'"),
    (["--mode", "stream"], "--mode", "'stream'"),
    (["--format", "avro"], "--format", "'avro'"),
    (["--migration", "mtm"], "--migration", "'mtm'"),
    (["--scale-mode", "pause"], "--scale-mode", "'pause'"),
])
def test_a_malformed_option_fails_in_argparse(argv: list[str], flag: str, value: str,
                                              place: Path, capsys: pytest.CaptureFixture[str]
                                              ) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", *argv])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2
    assert err.startswith(f"elastream run: error: argument {flag}: ") and value in err, err
    assert len(err.strip().splitlines()) == 1


def started(place: Path, **options: object) -> Path:
    """An output folder holding the job of ``WITH_CSV --output out`` (with ``options``)."""
    work = place / "work"
    spec = RunSpec.of(input=work / "in.csv", output=work / "out", time_col="t", key_col="k",
                      aggs=(AggSpec.parse("sum:v"),), windows=(WindowSpec.parse("1h"),),
                      format="csv", **options)  # type: ignore[arg-type]
    spec.files.output.mkdir()
    (spec.files.output / IDENTITY).write_text(json.dumps(identity(spec)))
    return spec.files.output


def test_resuming_another_job_names_each_difference_with_both_values(
        place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started(place)
    line = rejected([*WITH_CSV, "--output", "out", "--window", "5m", "--agg", "max:v",
                     "--key-groups", "64"], place, capsys)
    assert line.startswith("elastream run: error: --output holds a job started with other "
                           "options: --window was 1h, now 5m, 1h; --agg was sum:v, now sum:v, "
                           "max:v; --key-groups was 128, now 64 (use a new --output, or the "
                           "job's options), got ")
    line = rejected(["--input", "empty/../in.csv", "--time-col", "k", "--key-col", "t",
                     "--agg", "sum:v", "--window", "1h", "--output", "out"], place, capsys)
    assert "--time-col was t, now k; --key-col was k, now t" in line
    line = rejected(["--output", "out", "--window", "1h"], place, capsys)  # the flights
    assert "--input was " in line and "flights-3m.parquet; --format was csv, now parquet" in line


def test_a_slot_count_is_refused_unless_the_job_moves_to_it_live(
        place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started(place)  # 4 slots, planner flux, not to scale: 4 state partitions
    line = rejected([*WITH_CSV, "--output", "out", "--slots", "2"], place, capsys)
    assert line == ("elastream run: error: --slots must be 4, as the job in --output has (a "
                    "job started to scale moves to another count live, up to 4), got 2")
    line = rejected([*WITH_CSV, "--output", "out", "--scale-at", "3:8"], place, capsys)
    assert line.startswith("elastream run: error: --scale-at must be at most 4: the job in "
                           "--output has 4 state partitions")


def test_an_output_of_an_earlier_elastream_is_refused(
        place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = place / "work"
    prepare_replay(work / "in.csv", "csv", "t", 10, work / "out" / STAGED, 3_600_000)
    line = rejected([*WITH_CSV, "--output", "out"], place, capsys)
    assert line.startswith("elastream run: error: --output holds a job of an earlier elastream "
                           "(no job.json); use a new --output")


def test_a_valid_command_gets_as_far_as_the_download(place: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--quiet", "--window", "2h"]) == 2
    assert "npm is not installed" in capsys.readouterr().err


def test_the_command_as_a_user_runs_it(place: Path) -> None:
    # The example, in a fresh process: exit status 2, one line, nothing fetched.
    done = subprocess.run([sys.executable, "-m", "elastream.cli.main", "run", "--window", "0h"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr == "elastream run: error: --window must be a positive duration, " \
                          "got '0h'\n"
    assert done.stdout == ""
    assert listing(place) == ["bin", "data", "work", "work/afile", "work/chain.json",
                             "work/empty", "work/in.csv"]
