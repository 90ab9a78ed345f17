"""A Spark standalone cluster on this machine, from the installed pyspark: a master and workers.

For tests, benchmarks and trying elastream on a cluster. :func:`start` launches
``spark-class org.apache.spark.deploy.master.Master`` and ``…deploy.worker.Worker`` processes
from pyspark's own folder (its ``bin/spark-class``; ``SPARK_HOME`` is that folder), each the
leader of its own process group, on free ports, with logs, work and scratch folders under one
``directory``; it returns once every worker registered with the master (polled on the master's
JSON page; a timeout raises :class:`ClusterError` with the logs' last lines) and writes
``cluster.json`` there, so that :func:`stop` — from any process — ends them by PID. A worker's
executors, and their Python workers, belong to its process group and end with it.

Everything is on one machine, so local paths (checkpoints, routing and migration stores) are
shared by every executor. Command line: ``python -m elastream.runtimes.spark.standalone
start|stop|status [--dir DIR] [--workers N] [--cores C] [--memory M]``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from elastream.core.errors import ElastreamError

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
STATE_FILE = "cluster.json"
POLL_SECONDS = 0.25


class ClusterError(ElastreamError):
    """The cluster did not start, or a process of it could not be stopped."""


@dataclass(frozen=True)
class Cluster:
    """A running standalone cluster: where to reach it and the PIDs of its daemons."""

    directory: Path
    master_url: str
    """``spark://HOST:PORT``: what ``--master`` takes."""
    web_url: str
    """The master's web UI; its state as JSON at ``web_url + "/json/"``."""
    master_pid: int
    worker_pids: tuple[int, ...]

    def state(self) -> dict[str, Any]:
        """The master's view: workers (``aliveworkers``), cores, applications."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as response:
            state: dict[str, Any] = json.load(response)
        return state


@dataclass(frozen=True)
class Executor:
    """An executor JVM the cluster's workers launched."""

    pid: int
    executor_id: str
    app_id: str


def spark_home() -> Path:
    """The installed pyspark's folder, which holds ``bin/spark-class`` and ``jars/``."""
    spec = importlib.util.find_spec("pyspark")  # finds it without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ClusterError("pyspark is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def start(directory: Path | str | None = None, *, workers: int = 2, cores: int = 1,
          memory: str = "2g", host: str = "127.0.0.1", timeout: float = 180.0) -> Cluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each, registered.

    ``directory`` (default: a new temporary folder) holds ``cluster.json``, the daemons' logs
    and the workers' folders (executors' logs and scratch space). ``timeout`` (seconds) bounds
    the wait for the workers to register; on any failure what started is stopped.
    """
    if workers < 1 or cores < 1:
        raise ClusterError(f"workers and cores must be positive, got {workers}, {cores}")
    root = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="elastream-cluster-"))
    root.mkdir(parents=True, exist_ok=True)
    if (root / STATE_FILE).exists() and _alive(load(root)):
        raise ClusterError(f"a cluster from {root} still runs: stop it first")
    properties = root / "spark-daemons.conf"
    properties.write_text("spark.master.rest.enabled false\n")
    port, web_port = _free_port(host), _free_port(host)
    master_url, web_url = f"spark://{host}:{port}", f"http://{host}:{web_port}"
    master = _launch(root, "master", [MASTER_CLASS, "--host", host, "--port", str(port),
                                      "--webui-port", str(web_port),
                                      "--properties-file", str(properties)])
    pids = [master]
    try:
        for i in range(workers):
            work = root / f"worker-{i}"
            pids.append(_launch(root, f"worker-{i}", [
                WORKER_CLASS, "--host", host, "--cores", str(cores), "--memory", memory,
                "--webui-port", str(_free_port(host)), "--work-dir", str(work),
                "--properties-file", str(properties), master_url]))
        cluster = Cluster(root, master_url, web_url, master, tuple(pids[1:]))
        (root / STATE_FILE).write_text(json.dumps({**asdict(cluster), "directory": str(root)},
                                                  indent=1) + "\n")
        _await_workers(cluster, workers, timeout)
    except BaseException:
        _end(pids, timeout=30.0)
        raise
    return cluster


def load(directory: Path | str) -> Cluster:
    """The cluster :func:`start` recorded in ``directory``."""
    path = Path(directory) / STATE_FILE
    if not path.exists():
        raise ClusterError(f"no cluster was started in {directory} (no {STATE_FILE})")
    saved = json.loads(path.read_text())
    return Cluster(Path(saved["directory"]), saved["master_url"], saved["web_url"],
                   int(saved["master_pid"]), tuple(int(p) for p in saved["worker_pids"]))


def stop(cluster: Cluster, timeout: float = 30.0) -> None:
    """End the workers (with their executors) and the master; raise if a process survives.

    SIGTERM to each process group, SIGKILL to what is left after ``timeout`` seconds.
    """
    _end([*cluster.worker_pids, cluster.master_pid], timeout=timeout)
    left = _alive(cluster)
    if left:
        raise ClusterError(f"processes {left} of the cluster in {cluster.directory} survived")


def executors(cluster: Cluster, app_id: str | None = None) -> list[Executor]:
    """The executor JVMs running on the cluster's workers (of application ``app_id``)."""
    found = []
    for pid in _group_members(cluster.worker_pids):
        argv = _cmdline(pid)
        if EXECUTOR_CLASS not in argv:
            continue
        executor = Executor(pid, _argument(argv, "--executor-id"), _argument(argv, "--app-id"))
        if app_id is None or executor.app_id == app_id:
            found.append(executor)
    return sorted(found, key=lambda e: (e.app_id, e.executor_id))


def launched_executors(cluster: Cluster, app_id: str) -> list[str]:
    """Every executor id the workers ever launched for ``app_id`` (running or ended)."""
    return sorted((d.name for i in range(len(cluster.worker_pids))
                   for d in (cluster.directory / f"worker-{i}" / app_id).glob("*")
                   if d.is_dir()), key=int)


def _launch(root: Path, name: str, arguments: list[str]) -> int:
    """``spark-class ARGUMENTS`` as the leader of a new process group, logging to NAME.log."""
    home = spark_home()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(root / "logs"),
           "SPARK_LOCAL_DIRS": str(root / "scratch")}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    with (root / f"{name}.log").open("ab") as log:
        process = subprocess.Popen([str(home / "bin" / "spark-class"), *arguments], env=env,
                                   stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    return process.pid


def _await_workers(cluster: Cluster, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    alive = 0
    while time.monotonic() < deadline:
        dead = [p for p in (cluster.master_pid, *cluster.worker_pids) if not _running(p)]
        if dead:
            raise ClusterError(f"a cluster process ended while starting (pid {dead[0]}):\n"
                               + _log_tails(cluster.directory))
        try:
            alive = int(cluster.state()["aliveworkers"])
        except (OSError, urllib.error.URLError, ValueError, KeyError):
            alive = 0  # the master's web UI is not up yet
        if alive >= count:
            return
        time.sleep(POLL_SECONDS)
    raise ClusterError(f"{alive} of {count} workers registered within {timeout:.0f} s:\n"
                       + _log_tails(cluster.directory))


def _end(leaders: Sequence[int], timeout: float) -> None:
    """SIGTERM the Spark processes of the leaders' process groups, SIGKILL after timeout.

    Only processes running Spark or PySpark code are signalled (:func:`_spark_members`), also
    an executor whose worker died; an unrelated process that recycled a PID is left alone.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _spark_members(leaders):
            _signal(pid, sig)
        deadline = time.monotonic() + timeout
        while _spark_members(leaders) and time.monotonic() < deadline:
            _reap(leaders)
            time.sleep(POLL_SECONDS)
        _reap(leaders)
        if not _spark_members(leaders):
            return


def _alive(cluster: Cluster) -> list[int]:
    return _spark_members([cluster.master_pid, *cluster.worker_pids])


def _spark_members(groups: Sequence[int]) -> list[int]:
    """Members of the process groups that run Spark (JVMs) or PySpark (daemons, workers)."""
    return [pid for pid in _group_members(groups)
            if any("org.apache.spark" in arg or "pyspark" in arg for arg in _cmdline(pid))]


def _group_members(groups: Sequence[int]) -> list[int]:
    """Running (not zombie) processes whose process group is one of ``groups``."""
    wanted, members = set(groups), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None and stat[0] != "Z" and int(stat[2]) in wanted:
            members.append(int(entry.name))
    return members


def _stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/PID/stat`` after the command name: state, ppid, pgrp and so on."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def _running(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []


def _argument(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1] if flag in argv else ""


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _reap(pids: Sequence[int]) -> None:
    """Collect the exit status of those that are this process's children (no zombies)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
    return port


def _log_tails(root: Path, lines: int = 8) -> str:
    return "\n".join(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace")
                                                     .splitlines()[-lines:])
                     for log in sorted(root.glob("*.log")))


def main(argv: Sequence[str] | None = None) -> int:
    """``start`` prints the master URL (and the folder to pass to ``stop`` and ``status``)."""
    parser = argparse.ArgumentParser(prog="python -m elastream.runtimes.spark.standalone",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("start", "stop", "status"))
    parser.add_argument("--dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "elastream-cluster",
                        help="the cluster's folder (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2, help="workers (default 2)")
    parser.add_argument("--cores", type=int, default=1, help="cores per worker (default 1)")
    parser.add_argument("--memory", default="2g", help="memory per worker (default 2g)")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            cluster = start(args.dir, workers=args.workers, cores=args.cores,
                            memory=args.memory)
            print(f"{cluster.master_url}  (web UI {cluster.web_url}, folder {cluster.directory})")
        elif args.command == "stop":
            stop(load(args.dir))
        else:
            cluster = load(args.dir)
            state: dict[str, Any] = cluster.state() if _alive(cluster) else {
                "url": cluster.master_url, "status": "STOPPED"}
            shown: dict[str, Any] = {k: state[k] for k in
                     ("url", "status", "aliveworkers", "cores", "coresused") if k in state}
            shown["applications"] = [app["id"] for app in state.get("activeapps", [])]
            print(json.dumps(shown))
    except (ClusterError, OSError) as error:
        print(f"cluster {args.command}: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
