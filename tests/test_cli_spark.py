"""``elastream run``'s Spark options (--master, --conf, --driver-memory, --executor-memory):
mistakes are one-line errors before Spark starts (the guard of test_cli stands in for it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.test_cli import WouldStartError, base, data, no_spark, run_main  # noqa: F401

from elastream.cli import run as run_cli
from elastream.cli.main import build_parser, main


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--master", "spark:/h:7077"], "--master must be local, local[N], local[*], "
         "spark://HOST:PORT, yarn or k8s://URL, got 'spark:/h:7077'"),
        (["--master", "local[two]"], "--master must be local"),
        (["--conf", "spark.cores.max"], "--conf must look like KEY=VALUE with KEY starting "
         "with spark., e.g. spark.cores.max=2, got 'spark.cores.max'"),
        (["--conf", "cores.max=2"], "--conf must look like KEY=VALUE"),
        (["--conf", "spark.cores.max="], "--conf must look like KEY=VALUE"),
        (["--conf", "spark.master=local[4]"], "--conf must not set spark.master: use --master"),
        (["--conf", "spark.executor.memory=4g"], "--conf must not set spark.executor.memory: "
         "use --executor-memory"),
        (["--conf", "spark.sql.shuffle.partitions=8"], "--conf must not set "
         "spark.sql.shuffle.partitions: the job sets it, one per slot"),
        (["--conf", "spark.sql.streaming.statefulOperator.useStrictDistribution=true"],
         "spark.sql.streaming.statefulOperator.useStrictDistribution must be 'false' for "
         "elastream (a slot's pin decides its state partition), got 'true'"),
        (["--driver-memory", "2 GB"], "--driver-memory must be a size like 2g or 512m, "
         "got '2 GB'"),
        (["--executor-memory", "1.5g"], "--executor-memory must be a size like 2g or 512m"),
    ],
)
def test_invalid_spark_options_are_one_line_errors(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],  # noqa: F811
        message: str) -> None:
    code, out, err = run_main(base(data, tmp_path) + extra, capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"elastream run: error: {message}")
    assert not (tmp_path / "out").exists()


def test_valid_spark_options_reach_the_session(data: Path, tmp_path: Path) -> None:  # noqa: F811
    args = build_parser().parse_args([
        *base(data, tmp_path), "--master", "spark://10.0.0.1:7077,10.0.0.2:7077",
        "--conf", "spark.cores.max=2", "--conf", "spark.eventLog.dir=/tmp/a=b",
        "--driver-memory", "4g", "--executor-memory", "1536m"])
    assert run_cli.spark_conf(args) == {
        "spark.cores.max": "2", "spark.eventLog.dir": "/tmp/a=b",
        "spark.master": "spark://10.0.0.1:7077,10.0.0.2:7077", "spark.driver.memory": "4g",
        "spark.executor.memory": "1536m"}
    with pytest.raises(WouldStartError):
        main([*base(data, tmp_path), "--master", "local[*]"])
