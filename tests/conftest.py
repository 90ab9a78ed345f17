"""Shared fixtures: one local SparkSession for the whole test session."""

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
