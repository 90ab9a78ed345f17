"""elastream: elastic, skew-aware stateful stream processing for Apache Spark.

The Python API (:mod:`elastream.runtimes.spark.api`), loaded on first use so that the
simulators and planners never import Spark:

* :func:`windowed` — an elastic windowed aggregation of a streaming DataFrame, returning a
  :class:`WindowedJob` (``results`` and ``dead_letter`` DataFrames, ``metrics``, ``scale``,
  ``stop``);
* :func:`configure` — set the session settings a job needs; :func:`spark_session` — a local
  session with them;
* :class:`ParquetBatchSink` — a ``foreachBatch`` sink exactly-once for every Parquet reader;
* :func:`watch_folder` — a folder files arrive in as a stream whose unreadable files are
  quarantined, not fatal (:class:`WatchedFolder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from elastream.runtimes.spark.api import WindowedJob, configure, spark_session, windowed
    from elastream.runtimes.spark.sink import ParquetBatchSink
    from elastream.runtimes.spark.watch import WatchedFolder, watch_folder

__all__ = ["ParquetBatchSink", "WatchedFolder", "WindowedJob", "configure", "spark_session",
           "watch_folder", "windowed"]

_EXPORTS = {"windowed": "api", "WindowedJob": "api", "configure": "api",
            "spark_session": "api", "ParquetBatchSink": "sink", "WatchedFolder": "watch",
            "watch_folder": "watch"}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'elastream' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(f"elastream.runtimes.spark.{_EXPORTS[name]}")
    return getattr(module, name)
