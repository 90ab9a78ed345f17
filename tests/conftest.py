"""Shared fixtures: one local SparkSession, and one standalone cluster, for the whole session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from elastream.runtimes.spark.session import get_spark

    session = get_spark()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Spark standalone master and two workers of one core and 2 GB each, on this machine,
    started from the installed pyspark and stopped by PID (stop raises if a process survives).
    """
    from elastream.runtimes.spark import standalone

    running = standalone.start(tmp_path_factory.mktemp("cluster"), workers=2, cores=1,
                               memory="2g")
    yield running
    standalone.stop(running)
