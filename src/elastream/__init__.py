"""elastream: elastic, skew-aware stateful stream processing for Apache Spark.

The Python API is :mod:`elastream.api` (``windowed``, ``WindowedJob``, ``configure``,
``spark_session``, the sinks, ``kafka_records``, ``watch_folder``, ``WatchedFolder``); its names are
here too, loaded on first use so that the simulators and planners never import Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from elastream.api import (
        DeltaBatchSink,
        KafkaBatchSink,
        KafkaTopic,
        ParquetBatchSink,
        WatchedFolder,
        WindowedJob,
        configure,
        kafka_records,
        spark_session,
        watch_folder,
        windowed,
    )

__all__ = ["DeltaBatchSink", "KafkaBatchSink", "KafkaTopic", "ParquetBatchSink",
           "WatchedFolder", "WindowedJob", "configure", "kafka_records", "spark_session",
           "watch_folder", "windowed"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'elastream' has no attribute {name!r}")
    from elastream import api

    return getattr(api, name)
