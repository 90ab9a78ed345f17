"""The throughput job on Apache Flink (PyFlink SQL window TVFs), run by ``run.py``.

    .venv-flink/bin/python benchmarks/throughput/flink_job.py --input FLIGHTS.csv --key origin
        --output DIR [--parallelism 2] [--state hashmap|rocksdb] [--checkpoint-interval-s N]

Adapted from the peer benchmark's ``flink_job.py`` (its ``direct`` variant): streaming mode, a
local mini-cluster in PyFlink's JVM, a STATEMENT SET of three INSERTs, one per window spec
(``TUMBLE`` 1h, ``HOP`` 6h/1h, ``HOP`` 24h/1h), each ``count(*)``, ``sum(delay)`` and
``avg(delay)`` per (key, window) over one CSV filesystem source (the planner shares its scan);
event time ``date``, watermark = max event time - 0 s. A window TVF aggregation emits each
window once, when the watermark passes its end; the end of the bounded input passes them all.

Input: CSV without a header, ``date`` ('YYYY-MM-DD HH:MM:SS', UTC), ``delay``, ``distance``,
``origin``, ``destination``, then the key column when it is none of these (``run.py`` writes
it). Output: ``DIR/w1h``, ``DIR/w6h``, ``DIR/w24h`` (CSV: key, window_start, window_end, count,
sum_delay, avg_delay) and ``DIR/summary.json``, whose ``net_runtime_s`` (Flink's
``JobExecutionResult.get_net_runtime``: the job's run in the cluster, submission to end) is the
processing time ``run.py`` divides the rows by.

State ``hashmap`` keeps it on the JVM heap; ``rocksdb`` in RocksDB, checkpointed incrementally
into ``DIR/_checkpoints`` when ``--checkpoint-interval-s`` is above 0 (default: no checkpoints).
PyFlink is a benchmark dependency only: ``make bench-flink`` installs it into ``.venv-flink``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

FLIGHT_COLUMNS = {"date": "TIMESTAMP(3)", "delay": "INT", "distance": "INT",
                  "origin": "STRING", "destination": "STRING"}
SPECS = {"w1h": (1, 1), "w6h": (6, 1), "w24h": (24, 1)}
"""Sink table -> window (length, slide) in hours."""


def window_tvf(length_h: int, slide_h: int) -> str:
    """The window table function of one spec over the source table."""
    if length_h == slide_h:
        return f"TUMBLE(TABLE flights, DESCRIPTOR(`date`), INTERVAL '{length_h}' HOUR)"
    return (f"HOP(TABLE flights, DESCRIPTOR(`date`), INTERVAL '{slide_h}' HOUR, "
            f"INTERVAL '{length_h}' HOUR)")


def main() -> None:
    began = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, required=True)
    parser.add_argument("--key", required=True, help="key column (origin, or route)")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--state", choices=("hashmap", "rocksdb"), default="hashmap")
    parser.add_argument("--checkpoint-interval-s", type=int, default=0,
                        help="checkpoint every N s into DIR/_checkpoints (default 0: none)")
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)

    from pyflink.table import EnvironmentSettings, TableEnvironment

    table_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = table_env.get_config()
    config.set("parallelism.default", str(args.parallelism))
    config.set("table.local-time-zone", "UTC")
    config.set("pipeline.name", f"throughput-{args.key}")
    config.set("state.backend.type", args.state)
    checkpoints = args.output / "_checkpoints"
    if args.checkpoint_interval_s:
        config.set("execution.checkpointing.interval", f"{args.checkpoint_interval_s} s")
        config.set("execution.checkpointing.dir", f"file://{checkpoints.resolve()}")
        config.set("execution.checkpointing.incremental", "true")
        # Keep the last checkpoint after the job ends: its number tells how many were taken.
        config.set("execution.checkpointing.externalized-checkpoint-retention",
                   "RETAIN_ON_CANCELLATION")

    columns = {**FLIGHT_COLUMNS, args.key: "STRING"}
    schema = ", ".join(f"`{name}` {kind}" for name, kind in columns.items())
    table_env.execute_sql(f"""
        CREATE TABLE flights ({schema},
          WATERMARK FOR `date` AS `date` - INTERVAL '0' SECOND
        ) WITH ('connector' = 'filesystem', 'path' = 'file://{args.input.resolve()}',
                'format' = 'csv')""")
    statements = table_env.create_statement_set()
    for name, (length_h, slide_h) in SPECS.items():
        table_env.execute_sql(f"""
            CREATE TABLE {name} (
              `key` STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
              `count` BIGINT, sum_delay BIGINT, avg_delay DOUBLE
            ) WITH ('connector' = 'filesystem',
                    'path' = 'file://{(args.output / name).resolve()}', 'format' = 'csv')""")
        statements.add_insert_sql(f"""
            INSERT INTO {name}
            SELECT `{args.key}`, window_start, window_end, COUNT(*),
                   SUM(CAST(delay AS BIGINT)), AVG(CAST(delay AS DOUBLE))
            FROM {window_tvf(length_h, slide_h)}
            GROUP BY `{args.key}`, window_start, window_end""")
    submitted = time.perf_counter()
    job = statements.execute().get_job_client().get_job_execution_result().result()
    done = time.perf_counter()
    taken = [int(p.name[4:]) for p in checkpoints.glob("*/chk-*")]
    summary = {
        "input": str(args.input), "key": args.key, "parallelism": args.parallelism,
        "state": args.state, "checkpoint_interval_s": args.checkpoint_interval_s,
        "net_runtime_s": job.get_net_runtime() / 1000,
        "submit_to_done_s": round(done - submitted, 3),
        "startup_s": round(submitted - began, 3),
        "last_checkpoint": max(taken, default=0),
    }
    (args.output / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
