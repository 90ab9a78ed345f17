"""Two faults in one job on a standalone cluster: first an executor JVM SIGKILLed mid-stream
(its worker launches another, Spark retries what was lost); then a worker lost while key groups
move: the other standalone worker, with its executor and Python workers, SIGKILLed (a machine
gone) while a hand-off is in flight — its state cut by the sending slot, not yet merged by the
receiving one. The job goes on with the worker left, and stays exact.

The cluster is this module's own (master and two workers of one core): the session's cluster
keeps both its workers for the other tests.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cluster_jobs import (
    WATCH_ARGS,
    app_id,
    await_commit,
    elastream_run,
    finish,
    oracle,
    stateful_tasks,
)
from tests.live import every_reader_sees, split, write_part
from tests.spark_jobs import random_stream

from elastream.runtimes.spark import standalone
from elastream.stores.migration_store import MigrationStore

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

PARTS = 6


@pytest.fixture(scope="module")
def doomed_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[standalone.Cluster]:
    """A cluster of its own, one of whose workers the test kills."""
    running = standalone.start(tmp_path_factory.mktemp("doomed"), workers=2, cores=1,
                               memory="2g")
    yield running
    standalone.stop(running)


def _in_flight(store: MigrationStore) -> set[tuple[int, int]]:
    """``(version, kg)`` of the hand-offs written and not yet merged."""
    written = {(int(path.parent.name[1:]), int(path.stem[2:]))
               for path in Path(store.directory).glob("v*/kg*.arrow")}
    return written - store.acknowledged()


def _app_when_running(cluster: standalone.Cluster, job: Any) -> str:
    """The job's application id, once both its executors run."""
    while True:
        assert job.poll() is None, job.communicate()[1][-4000:]
        try:
            app = app_id(cluster, "test-worker-loss")
        except AssertionError:
            app = ""
        if app and len(standalone.executors(cluster, app)) == 2:
            return app
        time.sleep(0.2)


def test_an_executor_killed_then_a_worker_lost_during_a_hand_off_leave_the_job_exact(
        doomed_cluster: standalone.Cluster, tmp_path: Path) -> None:
    """Scale 2 -> 4 live, two key groups a micro-batch; a file of the stream per micro-batch, the
    next one written only once the last committed. Once micro-batch 0 committed, worker 1's
    executor JVM is SIGKILLed as micro-batch 1's file arrives. At the first later commit that
    leaves a hand-off in flight (written, not merged), worker 0's whole process group — worker,
    executor, Python workers — is SIGKILLed; the rest of the stream then arrives at once."""
    df = random_stream(seed=34, rows=600)
    parts = split(df, PARTS)
    folder, out, events = tmp_path / "in", tmp_path / "out", tmp_path / "events"
    folder.mkdir()
    write_part(folder, 0, parts[0])
    job = elastream_run(doomed_cluster, "test-worker-loss", events, [
        "--input", str(folder), *WATCH_ARGS, "--slots", "2", "--scale-at", "1:4",
        "--max-moves", "2", "--max-batches", str(PARTS), "--output", str(out)])
    store = MigrationStore(out / "_migration")
    app = _app_when_running(doomed_cluster, job)
    lost = {e.executor_id for e in standalone.executors(doomed_cluster, app)
            if os.getpgid(e.pid) == doomed_cluster.worker_pids[0]}
    assert len(lost) == 1  # worker 0 runs one of the two executors
    await_commit(job, out, 0)
    victim, = (e for e in standalone.executors(doomed_cluster, app) if e.executor_id not in lost)
    write_part(folder, 1, parts[1])
    os.kill(victim.pid, signal.SIGKILL)  # as micro-batch 1 starts; worker 1 launches another
    written = 2
    while True:
        await_commit(job, out, written - 1)
        flying = _in_flight(store)
        if flying or written == PARTS:
            break
        write_part(folder, written, parts[written])
        written += 1
    assert flying, "no commit left a hand-off in flight"
    os.killpg(doomed_cluster.worker_pids[0], signal.SIGKILL)
    # Micro-batches after this one started once the worker was gone.
    started = max(int(p.name) for p in (out / "_checkpoints" / "results" / "offsets").iterdir()
                  if p.name.isdigit())
    for i in range(written, PARTS):
        write_part(folder, i, parts[i])
    summary = finish(job)

    assert summary["input_rows"] == len(df) and summary["nothing_lost"]
    expected = oracle(df)
    expected = expected[expected["window_end"] <= df["ts"].max()]  # what the watermark closed
    every_reader_sees(out / "results", expected)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    loaded = [m for m in metrics if m["valid_rows"]]
    assert loaded[-1]["active_slots"] == 4 and loaded[-1]["key_groups_to_move"] == 0
    # The hand-offs in flight were merged, and the migration went on after the loss.
    merged = {(h.version, h.kg): h for h in store.hand_offs()}
    assert flying <= set(merged)
    assert any(h.taken > started for h in merged.values())
    # Worker 0's executor ran state partitions before the loss, none after.
    ran = stateful_tasks(events)
    assert lost & set(ran[ran["batch"] <= started]["executor"])
    assert not lost & set(ran[ran["batch"] > started]["executor"])
    # Worker 1 replaced the executor killed first; worker 0's was not replaced.
    launched = standalone.launched_executors(doomed_cluster, app)
    assert victim.executor_id in launched and len(launched) == 3
