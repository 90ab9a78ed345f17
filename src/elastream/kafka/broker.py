"""A one-node Kafka broker on this machine (KRaft: broker and controller in one JVM).

For tests, demos and benchmarks. :func:`start` writes ``server.properties`` into ``directory``,
formats the storage under ``directory/data`` the first time only, and launches ``java …
kafka.Kafka`` from the jars ``make jars`` fetched (:func:`~elastream.kafka.jars.broker_classpath`)
as the leader of its own process group, its output in ``broker.log``. It records
``broker.json`` there (PID, ports, bootstrap address), so that :func:`stop` — from any process —
ends it by PID, and returns once the port accepts connections and the broker answers for every
partition it has (a metadata request alone is answered before a restarted broker serves its
partitions); a timeout raises :class:`BrokerError` with the log's last lines.

A restart on the same directory keeps the topics, their messages and the consumer groups'
offsets, and listens on the same port as before, so running clients reconnect to it. The broker
logs nothing of its own (its jars bind no SLF4J backend): ``broker.log`` holds what the JVM
prints. Command line: ``elastream kafka start|stop``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from elastream.core import rules
from elastream.core.errors import ElastreamError, OptionError
from elastream.kafka.jars import broker_classpath

HOST = "127.0.0.1"
STATE_FILE = "broker.json"
PROPERTIES_FILE = "server.properties"
LOG_FILE = "broker.log"
MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
HEAP = "-Xmx512m"
ANSWER_SECONDS = 10.0
"""How long a client waits for the broker's first answer before it gives up."""
POLL_SECONDS = 0.25
TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
"""Kafka's rule for topic names."""

_CLIENT_LOG = logging.getLogger(__name__)
_CLIENT_LOG.addHandler(logging.NullHandler())  # librdkafka's retries stay off the terminal


class BrokerError(ElastreamError):
    """The broker did not start, did not answer, or could not be stopped."""


class MissingClient(ElastreamError):  # noqa: N818 (what is missing, as MissingJars)
    """The Python Kafka client is not installed."""


@dataclass(frozen=True)
class Broker:
    """A broker :func:`start` launched: its folder, ports and process."""

    directory: Path
    port: int
    """Where clients connect (the PLAINTEXT listener), on :data:`HOST`."""
    controller_port: int
    """The KRaft controller's listener, used by the broker alone."""
    pid: int

    @property
    def bootstrap(self) -> str:
        """``HOST:PORT``: what clients take as ``bootstrap.servers``."""
        return f"{HOST}:{self.port}"


def confluent() -> ModuleType:
    """The ``confluent_kafka`` module, or a one-line error saying how to install it."""
    try:
        import confluent_kafka
    except ImportError:
        raise MissingClient("the Kafka client confluent-kafka is not installed: "
                            "pip install 'elastream[kafka]'") from None
    return confluent_kafka


def client_config(bootstrap: str) -> dict[str, Any]:
    """Settings every client of :mod:`elastream.kafka` shares: where, how long to wait, logs.

    librdkafka's own log lines (a refused connection, a retry) go to this module's logger,
    which drops them unless the application configured logging.
    """
    return {"bootstrap.servers": bootstrap,
            "socket.connection.setup.timeout.ms": int(ANSWER_SECONDS * 1000 / 2),
            "logger": _CLIENT_LOG}


def start(directory: Path | str, *, port: int | None = None, timeout: float = 120.0) -> Broker:
    """Launch the broker of ``directory`` (created if needed) and wait until it serves.

    ``port``: the clients' port; default the one ``broker.json`` recorded (a restart keeps
    it), else a free one. ``timeout`` (seconds) bounds the wait for the broker to serve its
    partitions; on failure the process is ended.
    """
    if port is not None:
        rules.integer("port", port, high=65535)
    confluent()  # the readiness check needs the client: refuse before launching anything
    classpath, java = broker_classpath(), _java()
    root = Path(directory).resolve()
    root.mkdir(parents=True, exist_ok=True)
    previous = load(root) if (root / STATE_FILE).exists() else None
    if previous is not None and _running(previous):
        raise BrokerError(f"the broker of {root} still runs (pid {previous.pid}): stop it first")
    port = port or (previous.port if previous else _free_port())
    controller = previous.controller_port if previous else _free_port(other_than=port)
    for taken in (port, controller):
        if not _bindable(taken):
            raise BrokerError(f"port {taken} on {HOST} is in use: the broker of {root} needs it")
    properties = root / PROPERTIES_FILE
    properties.write_text(_server_properties(root, port, controller))
    if not (root / "data" / "meta.properties").exists():
        _format(root, java, classpath, properties)
    with (root / LOG_FILE).open("ab") as log:
        process = subprocess.Popen([java, HEAP, "-cp", classpath, MAIN_CLASS, str(properties)],
                                   stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    broker = Broker(root, port, controller, process.pid)
    (root / STATE_FILE).write_text(json.dumps(
        {"pid": broker.pid, "port": port, "controller_port": controller,
         "bootstrap": broker.bootstrap, "directory": str(root)}, indent=1) + "\n")
    try:
        _await_answer(broker, process, timeout)
    except BaseException:
        _end(broker, timeout=30.0, process=process)
        raise
    return broker


def load(directory: Path | str) -> Broker:
    """The broker :func:`start` recorded in ``directory`` (running or not)."""
    path = Path(directory) / STATE_FILE
    if not path.exists():
        raise BrokerError(f"no broker was started in {directory} (no {STATE_FILE})")
    saved = json.loads(path.read_text())
    return Broker(Path(saved["directory"]), int(saved["port"]), int(saved["controller_port"]),
                  int(saved["pid"]))


def running(directory: Path | str) -> bool:
    """Whether the broker recorded in ``directory`` runs."""
    return (Path(directory) / STATE_FILE).exists() and _running(load(directory))


def stop(directory: Path | str, *, timeout: float = 30.0) -> None:
    """End the broker of ``directory``: SIGTERM (a clean shutdown), SIGKILL after ``timeout``.

    A broker that already ended is fine; a folder where none was started is an error.
    """
    broker = load(directory)
    _end(broker, timeout=timeout)
    if _running(broker):
        raise BrokerError(f"the broker of {broker.directory} (pid {broker.pid}) survived SIGKILL")


def create_topic(bootstrap: str, topic: str, partitions: int) -> int:
    """Create ``topic`` with ``partitions`` partitions unless it exists; return its partitions.

    An existing topic is left as it is (its own partition count is returned).
    """
    check_topic(topic)
    rules.integer("partitions", partitions)
    kafka = confluent()
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient(client_config(bootstrap))
    if topic not in _topics(admin, bootstrap):
        future = admin.create_topics([NewTopic(topic, partitions, 1)],
                                     operation_timeout=ANSWER_SECONDS)[topic]
        try:
            future.result(timeout=2 * ANSWER_SECONDS)
        except kafka.KafkaException as error:
            if error.args[0].code() != kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                raise BrokerError(f"cannot create topic {topic!r} at {bootstrap}: "
                                  f"{error.args[0].str()}") from None
    deadline = time.monotonic() + ANSWER_SECONDS
    while True:  # a new topic reaches the broker's metadata a moment after its creation
        found = _topics(admin, bootstrap).get(topic)
        if found is not None and found.partitions:
            return len(found.partitions)
        if time.monotonic() > deadline:
            raise BrokerError(f"topic {topic!r} was created but {bootstrap} does not list it")
        time.sleep(POLL_SECONDS / 5)


def check_topic(topic: object) -> str:
    """``topic`` if it is a name Kafka takes.

    >>> check_topic("flights.v1")
    'flights.v1'
    >>> check_topic("my topic")
    Traceback (most recent call last):
    ...
    elastream.core.errors.OptionError: topic must be 1 to 249 of the characters \
a-z A-Z 0-9 . _ -, got 'my topic'
    """
    if not isinstance(topic, str) or not TOPIC_NAME.fullmatch(topic):
        raise OptionError("topic", "must be 1 to 249 of the characters a-z A-Z 0-9 . _ -",
                          topic)
    return topic


def _topics(admin: Any, bootstrap: str) -> dict[str, Any]:
    """The broker's topics, or a one-line error if it does not answer within a bounded time."""
    kafka = confluent()
    try:
        topics: dict[str, Any] = admin.list_topics(timeout=ANSWER_SECONDS).topics
    except kafka.KafkaException as error:
        raise BrokerError(f"no Kafka broker answers at {bootstrap} within "
                          f"{ANSWER_SECONDS:.0f} s ({error.args[0].str()})") from None
    return topics


def _server_properties(root: Path, port: int, controller: int) -> str:
    """One node as broker and controller; every internal topic with one replica."""
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{HOST}:{controller}",
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(root / "data"),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",  # a lone consumer starts at once
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _format(root: Path, java: str, classpath: str, properties: Path) -> None:
    """Format the storage under ``root/data`` for a new cluster id (first start only)."""
    with (root / LOG_FILE).open("ab") as log:
        done = subprocess.run([java, "-cp", classpath, STORAGE_TOOL, "format",
                               "-t", _cluster_id(), "-c", str(properties)],
                              stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=300, check=False)
    if done.returncode != 0:
        raise BrokerError(f"formatting the broker's storage failed (status {done.returncode}):"
                          f"\n{_log_tail(root)}")


def _cluster_id() -> str:
    """A cluster id as Kafka's ``random-uuid`` makes one: 16 random bytes, base64url.

    Like Kafka, never one starting with ``-``, which a command line would take for an option.
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _await_answer(broker: Broker, process: subprocess.Popen[bytes], timeout: float) -> None:
    """Until the port accepts and the broker serves its partitions, or the process ended."""
    from confluent_kafka.admin import AdminClient

    kafka = confluent()
    deadline = time.monotonic() + timeout
    admin = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BrokerError(f"the broker ended while starting (status {process.returncode});"
                              f" {broker.directory / LOG_FILE}:\n{_log_tail(broker.directory)}")
        if admin is None and _accepts(broker.port):
            admin = AdminClient(client_config(broker.bootstrap))
        if admin is not None:
            with contextlib.suppress(kafka.KafkaException):
                _check_served(admin)
                return
        time.sleep(POLL_SECONDS)
    raise BrokerError(f"the broker at {broker.bootstrap} did not serve its partitions within "
                      f"{timeout:.0f} s; {broker.directory / LOG_FILE}:\n"
                      f"{_log_tail(broker.directory)}")


def _check_served(admin: Any) -> None:
    """Ask for the latest offset of every partition; a KafkaException says one is not served.

    A restarted broker answers metadata requests (naming itself the leader) a moment before
    it serves its partitions again; until then an offset request gets NOT_LEADER_FOR_PARTITION
    or UNKNOWN_LEADER_EPOCH.
    """
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    topics = admin.list_topics(timeout=2.0).topics
    wanted = {TopicPartition(name, p): OffsetSpec.latest()  # type: ignore[no-untyped-call]
              for name, topic in topics.items() for p in topic.partitions}
    if wanted:
        for future in admin.list_offsets(wanted, request_timeout=2.0).values():
            future.result()


def _end(broker: Broker, timeout: float,
         process: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM the broker's process group, then SIGKILL what is left after ``timeout``.

    ``process``: the broker this process launched, if it did: its own state says whether it
    runs (:func:`_running` could miss a process still in ``exec``).
    """
    def alive() -> bool:
        return process.poll() is None if process is not None else _running(broker)

    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        if not alive():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(broker.pid, sig)
        deadline = time.monotonic() + wait
        while alive() and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS / 5)


def _running(broker: Broker) -> bool:
    """Whether ``broker.pid`` is alive (not a zombie) and runs this folder's broker.

    A PID an unrelated process recycled does not count; a zombie child of this process is
    reaped. A process still in ``exec`` (just launched) has no command line yet: not for
    :func:`start`'s own child, which asks its ``Popen``.
    """
    with contextlib.suppress(ChildProcessError):
        os.waitpid(broker.pid, os.WNOHANG)
    try:
        stat = Path(f"/proc/{broker.pid}/stat").read_text()
        argv = Path(f"/proc/{broker.pid}/cmdline").read_text().split("\0")
    except OSError:
        return False
    state = stat[stat.rindex(")") + 2:].split()[0]
    return state != "Z" and MAIN_CLASS in argv \
        and str(broker.directory / PROPERTIES_FILE) in argv


def _java() -> str:
    """``$JAVA_HOME/bin/java``, else ``java`` on the path."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).exists():
        raise BrokerError("java is not installed (the broker needs Java 17 or newer): "
                          "install it or set JAVA_HOME")
    return found


def _free_port(other_than: int = 0) -> int:
    """A port nothing listens on now (``other_than`` excluded: it is spoken for)."""
    while True:
        with socket.socket() as probe:
            probe.bind((HOST, 0))
            port: int = probe.getsockname()[1]
        if port != other_than:
            return port


def _bindable(port: int) -> bool:
    """Whether the broker could listen on ``port`` (as Java does, with SO_REUSEADDR)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def _accepts(port: int) -> bool:
    try:
        socket.create_connection((HOST, port), timeout=1.0).close()
    except OSError:
        return False
    return True


def _log_tail(root: Path, lines: int = 12) -> str:
    path = root / LOG_FILE
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:]) or "(the log is empty)"
