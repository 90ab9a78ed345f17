"""Spark alone on the same input, one process per run: native ``window()`` or a single tumbling
aggregation (the ceiling).

* ``--engine native``: what a Spark user writes for the job's windows — per window spec a
  streaming ``groupBy(window(ts, length, slide), key).agg(...)`` in append mode, the specs
  unioned into one query (one read of the input, one checkpoint).
* ``--engine builtin``: one ``groupBy(window(ts, "1h"), key)`` with the same aggregates.

Input: the chunk files of a folder, one per micro-batch (``maxFilesPerTrigger=1``), watermark
0 s, RocksDB state, the results written by elastream's own Parquet sink (one file per batch),
so only the window technique differs from an elastream run. Prints one JSON line: input rows,
batch durations (Spark's ``triggerExecution``) and the query's wall time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import functions as F  # noqa: N812

from elastream.api import spark_session
from elastream.core.aggregates import AggSpec
from elastream.core.windows import WindowSpec
from elastream.runtimes.spark.sink import ParquetBatchSink

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import native_windowed

TIME_COL = "date"
AGGS = ("sum:delay", "count", "avg:delay")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("native", "builtin"), required=True)
    parser.add_argument("--chunks", type=Path, required=True, help="folder of chunk files")
    parser.add_argument("--key", required=True)
    parser.add_argument("--window", action="append", default=[])
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    specs = [WindowSpec.parse(w) for w in args.window or ["1h", "6h/1h", "24h/1h"]]
    if args.engine == "builtin":
        specs = [WindowSpec.parse("1h")]
    spark = spark_session(args.slots)
    schema = spark.read.parquet(str(args.chunks)).schema
    stream = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
              .parquet(str(args.chunks))
              .withColumn(TIME_COL, F.col(TIME_COL).cast("timestamp"))  # NTZ in the file
              .withWatermark(TIME_COL, "0 seconds"))
    aggs = [AggSpec.parse(a) for a in AGGS]
    branches = [native_windowed(stream, s, aggs, time_col=TIME_COL, key_col=args.key)
                for s in specs]
    results = branches[0]
    for branch in branches[1:]:
        results = results.unionByName(branch)
    started = time.time()
    query = (results.writeStream.foreachBatch(ParquetBatchSink(args.output / "results"))
             .option("checkpointLocation", str(args.output / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    wall = time.time() - started
    progress = query.recentProgress
    print(json.dumps({
        # Each unioned branch reads the source: count the files' rows, not numInputRows.
        "input_rows": sum(pq.read_metadata(f).num_rows for f in args.chunks.iterdir()),
        "batch_ms_each": [int(p["durationMs"].get("triggerExecution", 0)) for p in progress],
        "query_wall_seconds": round(wall, 3),
    }))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
