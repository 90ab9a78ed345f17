"""Shared fixtures: one local SparkSession, one local S3-compatible server (moto), one
standalone cluster and one Kafka broker, each for the whole session."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

BUCKET = "elastream"

# No property test may fail on a busy machine: Hypothesis's 200 ms deadline per example and its
# too-slow health check measure wall time, so both are off for every test.
settings.register_profile("elastream", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("elastream")

# Every JVM the tests start (the session's driver, the elastream runs in subprocesses, the test
# cluster's daemons and executors) lives for seconds to minutes on tiny data: the JIT's
# optimising tier (C2) and a parallel collector cost them more CPU than they ever pay back.
os.environ.setdefault("JDK_JAVA_OPTIONS",
                      "-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:+UseSerialGC")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from elastream.runtimes.spark.session import get_spark

    session = get_spark()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[tuple[str, str]]:
    """An S3-compatible server (moto, in a thread) on 127.0.0.1 with bucket ``elastream``.

    Yields the URI of the bucket and the query naming the endpoint (dummy credentials).
    """
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    query = f"endpoint_override={host}:{port}&scheme=http&region=us-east-1"
    pafs.S3FileSystem(access_key="test", secret_key="test", endpoint_override=f"{host}:{port}",
                      scheme="http", region="us-east-1",
                      allow_bucket_creation=True).create_dir(BUCKET)
    yield f"s3://test:test@{BUCKET}", query
    server.stop()


@pytest.fixture
def s3_uri(s3_server: tuple[str, str]) -> str:
    """A fresh folder of the test server's bucket, as a URI."""
    bucket, query = s3_server
    return f"{bucket}/{uuid.uuid4().hex}?{query}"


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


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A one-node Kafka broker (KRaft) on this machine, from the jars of ``make jars``.

    A test may stop and start it again on its folder (``kafka_broker.directory``): the port,
    topics and messages stay. Stopped by PID at the end.
    """
    from elastream.kafka import broker

    running = broker.start(tmp_path_factory.mktemp("kafka"))
    yield running
    broker.stop(running.directory)


@pytest.fixture
def kafka_topic() -> str:
    """A topic name no other test uses (created by whoever first writes to it)."""
    return f"test-{uuid.uuid4().hex[:12]}"
