"""Run elastream on the test cluster as a user would, and read back where Spark ran its tasks.

Jobs run in their own processes — ``elastream run --master …`` or ``spark-submit
…/elastream/__main__.py run …`` — since this process holds the local test session. Each writes
Spark's event log (``--conf spark.eventLog.*``), from which :func:`stateful_tasks` reads which
executor ran each state partition of each micro-batch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
from tests.oracle import window_oracle

import elastream
from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec

TIMEOUT_S = 900
"""A hung job fails its test instead of stalling the suite; never a measure of speed."""

AGGS, WINDOWS = ("sum:v", "count"), ("2h", "6h/2h")
"""What the test jobs over :func:`tests.spark_jobs.random_stream` compute."""
TEST_ARGS = ["--time-col", "ts", "--key-col", "key", "--agg", AGGS[0], "--agg", AGGS[1],
             "--window", WINDOWS[0], "--window", WINDOWS[1], "--key-groups", "8"]
"""``elastream run`` options of those jobs."""
WATCH_ARGS = ["--mode", "watch", "--schema", "ts timestamp, key string, v double", *TEST_ARGS]
"""The same, watching a folder that parts of the stream arrive in."""


def oracle(df: pd.DataFrame, aggs: Any = AGGS, windows: Any = WINDOWS, time_col: str = "ts",
           key_col: str = "key") -> pd.DataFrame:
    """The pandas oracle of a test job over ``df``."""
    return window_oracle(df, time_col=time_col, key_col=key_col,
                         aggs=[AggSpec.parse(a) for a in aggs],
                         windows=[WindowSpec.parse(w) for w in windows])


def env() -> dict[str, str]:
    """Executors' Python workers run this interpreter (the venv's)."""
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def spark_conf(name: str, events: Path) -> dict[str, str]:
    """Settings of a test job: its name, both cores, an event log in ``events``."""
    events.mkdir(parents=True, exist_ok=True)
    return {"spark.app.name": name, "spark.cores.max": "2", "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": str(events), "spark.eventLog.compress": "false"}


def spark_options(name: str, events: Path) -> list[str]:
    """:func:`spark_conf` as ``--conf`` options."""
    return [option for key, value in spark_conf(name, events).items()
            for option in ("--conf", f"{key}={value}")]


def elastream_run(cluster: Any, name: str, events: Path, args: list[str]) -> subprocess.Popen[str]:
    """``elastream run --master <the cluster> ARGS`` in a new process (stdout: the summary)."""
    command = [sys.executable, "-m", "elastream", "run", "--master", cluster.master_url,
               "--executor-memory", "1g", *spark_options(name, events), *args,
               "--quiet"]
    return subprocess.Popen(command, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def spark_submit(cluster: Any, name: str, events: Path, args: list[str]
                 ) -> subprocess.CompletedProcess[str]:
    """``spark-submit --master <the cluster> …/elastream/__main__.py run ARGS``."""
    entry = Path(elastream.__file__).with_name("__main__.py")
    command = [str(Path(sys.executable).with_name("spark-submit")), "--master",
               cluster.master_url, "--driver-memory", "2g", "--executor-memory", "1g",
               *spark_options(name, events), str(entry), "run", *args, "--quiet"]
    return subprocess.run(command, env=env(), capture_output=True, text=True, timeout=TIMEOUT_S)


def await_commit(job: subprocess.Popen[str], output: Path, batch: int) -> None:
    """Return once ``job`` (writing into ``output``) committed micro-batch ``batch``; fail if it
    ended first."""
    commit = output / "_checkpoints" / "results" / "commits" / str(batch)
    while not commit.exists():
        assert job.poll() is None, job.communicate()[1][-4000:]
        time.sleep(0.2)


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    """Wait for a job; its JSON summary (the job must have succeeded)."""
    out, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, err[-4000:]
    summary: dict[str, Any] = json.loads(out)
    return summary


def app_id(cluster: Any, name: str) -> str:
    """The id the master gave the application called ``name`` (running or completed)."""
    state = cluster.state()
    apps = [a for a in state["activeapps"] + state["completedapps"] if a["name"] == name]
    assert len(apps) == 1, [a["name"] for a in state["activeapps"] + state["completedapps"]]
    return str(apps[0]["id"])


def stateful_tasks(events: Path) -> pd.DataFrame:
    """The successful tasks of the stateful (consolidate) stage: ``batch``, ``partition`` (the
    slot) and ``executor``, read off the event logs in ``events``; the last success counts.

    ``elastream run``'s stage also unions the dead letter's partitions after the state
    partitions: only the first ones, as many as the stateful RDD has, are slots.
    """
    records = [json.loads(line) for path in sorted(events.rglob("events_*"))
               for line in path.read_text().splitlines() if line.strip()]
    stateful = {r["Stage Info"]["Stage ID"]: min(
        rdd["Number of Partitions"] for rdd in r["Stage Info"]["RDD Info"]
        if "TransformWithState" in str(rdd.get("Scope", "")))
        for r in records if r["Event"] == "SparkListenerStageSubmitted"
        and any("TransformWithState" in str(rdd.get("Scope", ""))
                for rdd in r["Stage Info"]["RDD Info"])}
    batch_of = {stage: int(r["Properties"]["streaming.sql.batchId"]) for r in records
                if r["Event"] == "SparkListenerJobStart"
                and "streaming.sql.batchId" in r.get("Properties", {})
                for stage in r["Stage IDs"]}
    rows = [(batch_of[r["Stage ID"]], r["Task Info"]["Partition ID"],
             r["Task Info"]["Executor ID"], r["Task Info"]["Finish Time"]) for r in records
            if r["Event"] == "SparkListenerTaskEnd" and r["Stage ID"] in stateful
            and r["Task Info"]["Partition ID"] < stateful[r["Stage ID"]]
            and r["Task End Reason"]["Reason"] == "Success"]
    tasks = pd.DataFrame(rows, columns=["batch", "partition", "executor", "finished"])
    return (tasks.sort_values("finished").drop_duplicates(["batch", "partition"], keep="last")
            .drop(columns="finished").reset_index(drop=True))
