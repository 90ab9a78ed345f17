"""``get_spark`` on a process that already has a session, and under ``spark-submit``: what it
keeps, what it sets, what it refuses (each refusal names the setting)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import elastream
from elastream.core.errors import SessionError
from elastream.runtimes.spark.session import get_spark
from elastream.runtimes.spark.settings import OPERATOR_DISTRIBUTION, SHUFFLE_PARTITIONS

pytestmark = pytest.mark.spark


def test_the_running_session_is_reused_with_a_jobs_settings(spark: Any) -> None:
    before = spark.conf.get(SHUFFLE_PARTITIONS)
    try:
        again = get_spark(conf={"spark.sql.session.timeZone": "UTC"}, partitions=3)
        assert again is spark
        assert spark.conf.get(SHUFFLE_PARTITIONS) == "3"
        assert spark.conf.get(OPERATOR_DISTRIBUTION) == "false"
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, before)


@pytest.mark.parametrize(("master", "conf", "message"), [
    ("spark://127.0.0.1:7077", {}, "spark.master cannot be 'spark://127.0.0.1:7077': this "
     "process already runs a SparkContext on 'local[2]'; stop it first"),
    (None, {"spark.executor.memory": "3g"}, "spark.executor.memory cannot be '3g' in the "
     "running SparkContext"),
])
def test_what_a_running_session_cannot_take_is_refused(spark: Any, master: str | None,
                                                       conf: dict[str, str],
                                                       message: str) -> None:
    with pytest.raises(SessionError) as caught:
        get_spark(master, conf=conf)
    assert str(caught.value).startswith(message)


def test_spark_submit_settings_elastream_cannot_work_with_are_refused(tmp_path: Path) -> None:
    """spark-submit's --conf reaches the program through the driver's JVM; elastream reads it
    there and refuses it before any job starts."""
    data = tmp_path / "in.csv"
    data.write_text("t,k,v\n2024-01-01 00:00:00,a,1\n")
    entry = Path(elastream.__file__).with_name("__main__.py")
    command = [str(Path(sys.executable).with_name("spark-submit")), "--master", "local[1]",
               "--conf", f"{OPERATOR_DISTRIBUTION}=true", str(entry), "run", "--input",
               str(data), "--time-col", "t", "--key-col", "k", "--agg", "sum:v", "--window",
               "1h", "--output", str(tmp_path / "out"), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 2, done.stderr[-3000:]
    # spark-submit's PythonRunner merges the program's stderr into its own stdout.
    assert (f"elastream run: error: {OPERATOR_DISTRIBUTION} must be 'false' for elastream (a "
            "slot's pin decides its state partition), got 'true'; remove it or set it to "
            "'false'") in done.stdout.splitlines()
    assert not (tmp_path / "out" / "results").exists()
