"""Where a micro-batch's time goes: the default job through the Python API with Spark's event log.

Runs the default flights job (key ``origin``, windows ``1h``, ``6h/1h``, ``24h/1h``) on the first
``--rows`` flights, 100,000 rows per micro-batch, results and dead letter into Parquet batch
sinks, with ``spark.eventLog.enabled``; then prints, per kind of stage, the stages' wall time
and summed task time (``executorRunTime``) per micro-batch, and the mean of each of the query
progress' ``durationMs`` parts. Stages are told apart by their RDDs and SQL metrics:

* ``read+parse+route`` — file scan, parse, key groups, routing join, observed histograms,
  shuffle write (the results query's map stage);
* ``panes`` — pane partials: read the shuffle by pin, reduce, write the shuffle by owner pin
  (before: a streaming aggregation with a state store read and write);
* ``consolidate`` — the ``transformWithStateInPandas`` stage (Python workers);
* ``routing source`` — a read of the routing (or owner) data source;
* ``dead letter`` — the dead-letter query's scan.

    python benchmarks/throughput/breakdown.py [--rows N]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import chunks, prepared_inputs


def stage_kind(info: dict[str, Any]) -> str:
    """What a completed stage did, from its RDD names and SQL metrics."""
    names = {r["Name"] for r in info["RDD Info"]}
    metrics = {a["Name"] for a in info.get("Accumulables", [])}
    if "ReadStateStoreRDD" in names:
        return "panes"
    if "StateStoreRDD" in names:
        return "consolidate"
    if "ShuffledRowRDD" in names and "shuffle bytes written" in metrics:
        return "panes"
    if "DataSourceRDD" in names:
        return "routing source"
    if "FileScanRDD" in names:
        return "read+parse+route" if "shuffle bytes written" in metrics else "dead letter"
    return "other"


def breakdown(event_log: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Per stage kind, for the first micro-batch and per later one: stages, wall and task ms.

    A stage's micro-batch is the ``streaming.sql.batchId`` property it was submitted with.
    """
    batch_of: dict[int, int] = {}
    sums: dict[bool, dict[str, list[float]]] = {
        first: collections.defaultdict(lambda: [0, 0.0, 0.0]) for first in (True, False)}
    for line in event_log.read_text().splitlines():
        event = json.loads(line)
        if event["Event"] == "SparkListenerStageSubmitted":
            batch = (event.get("Properties") or {}).get("streaming.sql.batchId")
            batch_of[event["Stage Info"]["Stage ID"]] = -1 if batch is None else int(batch)
        if event["Event"] != "SparkListenerStageCompleted":
            continue
        info = event["Stage Info"]
        batch = batch_of.get(info["Stage ID"], -1)
        if batch < 0:
            continue
        acc = {a["Name"]: a.get("Value") for a in info.get("Accumulables", [])}
        row = sums[batch == 0][stage_kind(info)]
        row[0] += 1
        row[1] += info["Completion Time"] - info["Submission Time"]
        row[2] += float(acc.get("internal.metrics.executorRunTime") or 0)
    later = max(batch_of.values(), default=0)
    return {name: {kind: {"stages": round(n / count, 2), "wall_ms": round(wall / count, 1),
                          "task_ms": round(task / count, 1)}
                   for kind, (n, wall, task) in sorted(sums[first].items(),
                                                       key=lambda kv: -kv[1][2])}
            for name, first, count in (("first_batch", True, 1),
                                       ("per_later_batch", False, max(1, later)))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--java-options", default="", help="more JVM options of the driver")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent
    folder = chunks(prepared_inputs(args.rows, here / "work")["default"], here / "work")
    logs = Path(tempfile.mkdtemp(prefix="elastream-profile-"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import elastream as es

    (SparkSession.builder.master("local[2]").config("spark.eventLog.enabled", "true")
     .config("spark.eventLog.compress", "false").config("spark.eventLog.dir", str(logs))
     .config("spark.eventLog.rolling.enabled", "false")
     .config("spark.driver.extraJavaOptions", args.java_options)
     .config("spark.executorEnv.SPARK_SIMPLIFIED_TRACEBACK", "1")
     .getOrCreate())
    spark = es.spark_session(4)
    schema = spark.read.parquet(str(folder)).schema
    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))
    out = logs / "job"
    job = es.windowed(df, key="origin", time="date", windows=["1h", "6h/1h", "24h/1h"],
                      aggs=["sum:delay", "count", "avg:delay"], state_dir=out / "state")
    started = time.time()
    queries = [getattr(job, name).writeStream.foreachBatch(es.ParquetBatchSink(out / name))
               .option("checkpointLocation", str(out / f"cp-{name}"))
               .trigger(availableNow=True).start() for name in ("results", "dead_letter")]
    for query in queries:
        query.awaitTermination()
    wall = time.time() - started
    job.stop()
    progress = [p for p in queries[0].recentProgress if p["numInputRows"] > 0]
    parts = collections.Counter[str]()
    state = collections.Counter[str]()
    for p in progress[1:]:
        parts.update(p["durationMs"])
        for op in p["stateOperators"]:
            state.update({f"{op['operatorName']}.{k}": v for k, v in op.items()
                          if k.endswith("TimeMs") or k in ("numRowsUpdated", "numRowsRemoved")})
            state.update({f"{op['operatorName']}.{k}": v
                          for k, v in op.get("customMetrics", {}).items()})
    spark.stop()
    log = next(p for p in logs.iterdir() if p.is_file())
    rows = sum(pq.read_metadata(f).num_rows for f in folder.iterdir())
    report = {"rows": rows, "batches": len(progress), "wall_seconds": round(wall, 1),
              "first_batch_ms": progress[0]["durationMs"]["triggerExecution"],
              "progress_ms_per_later_batch": {k: round(v / max(1, len(progress) - 1))
                                              for k, v in parts.items()},
              "state_per_later_batch": {k: round(v / max(1, len(progress) - 1))
                                        for k, v in sorted(state.items())},
              "stages": breakdown(log)}
    print(json.dumps(report, indent=1))
    shutil.rmtree(logs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
