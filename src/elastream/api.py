"""elastream's Python API, where a reader looks for it: each entry point of the Spark runtime.

``import elastream as es`` gives the same names, loaded on first use (so that the simulators
and planners never import Spark); ``from elastream.api import windowed`` loads them at once.

* :func:`windowed` — an elastic windowed aggregation of a streaming DataFrame, returning a
  :class:`WindowedJob` (``results`` and ``dead_letter`` DataFrames, ``metrics``, ``scale``,
  ``report``, ``stop``); its arguments are the options of :mod:`elastream.core.options`;
* :func:`configure` — set the session settings a job needs; :func:`spark_session` — a session
  with them;
* :class:`ParquetBatchSink` — a ``foreachBatch`` sink exactly-once for every Parquet reader;
  :class:`DeltaBatchSink` — exactly-once into a Delta table; :class:`KafkaBatchSink` — at least
  once into a Kafka topic, each window keyed so that a consumer can deduplicate;
* :func:`kafka_records` — a Kafka DataFrame's JSON or CSV values as the columns of a DDL
  schema, the unparsable kept for the dead letter with their topic, partition and offset;
* :func:`watch_folder` — a folder files arrive in as a stream whose unreadable files are
  quarantined, not fatal (:class:`WatchedFolder`).
"""

from __future__ import annotations

from elastream.core.kafka_topic import KafkaTopic
from elastream.runtimes.spark.api import WindowedJob, configure, spark_session, windowed
from elastream.runtimes.spark.delta_sink import DeltaBatchSink
from elastream.runtimes.spark.kafka_sink import KafkaBatchSink
from elastream.runtimes.spark.kafka_source import kafka_records
from elastream.runtimes.spark.sink import ParquetBatchSink
from elastream.runtimes.spark.watch import WatchedFolder, watch_folder

__all__ = ["DeltaBatchSink", "KafkaBatchSink", "KafkaTopic", "ParquetBatchSink",
           "WatchedFolder", "WindowedJob", "configure", "kafka_records", "spark_session",
           "watch_folder", "windowed"]
