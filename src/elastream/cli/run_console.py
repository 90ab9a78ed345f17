"""Where ``elastream run``'s console output goes while Spark works, and how a failure ends.

Spark's JVM and its Python workers write to descriptors 1 and 2, which they inherit when they
start: the JVM's warnings, log4j's lines (an ERROR with its Java stack trace when a query
fails), the workers' own logs. While ``elastream run`` works, :func:`spark_console_logged`
points both descriptors at ``OUTPUT/logs/spark.log`` and keeps ``sys.stderr`` on the terminal
for elastream's own lines (the start line, progress, stop notices). The terminal shows what
elastream says; the log keeps everything.

A failure inside Spark becomes a :class:`~elastream.core.errors.JobError` (exit status 1):
one line naming the root cause and ``OUTPUT/logs/error.log``, which holds the whole report
(:func:`~elastream.runtimes.spark.failure.failure_report`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from elastream.core.errors import JobError
from elastream.core.fd_redirect import STDERR_FD, STDOUT_FD, redirected

LOGS = "logs"
"""The log folder, under the output folder."""


def _stamp() -> str:
    return f"==== elastream run, {datetime.now().astimezone().isoformat(timespec='seconds')}, " \
           f"process {os.getpid()} ====\n"


@contextmanager
def spark_console_logged(output: Path, *, to_terminal: bool = False) -> Iterator[Path]:
    """Within the block, descriptors 1 and 2 append to ``output/logs/spark.log``.

    ``sys.stderr`` writes to the terminal's standard error meanwhile. Yields the log's path.
    ``to_terminal`` (``--verbose``): both descriptors stay on the terminal, the log gets only
    the run's stamp.
    """
    log = output / LOGS / "spark.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as handle:
        handle.write(_stamp() + ("(--verbose: this run's console went to the terminal)\n"
                                 if to_terminal else ""))
    if to_terminal:
        yield log
        return
    # Left open: a logging handler made meanwhile (PySpark makes them on first use) keeps it.
    terminal = os.fdopen(os.dup(STDERR_FD), "w", buffering=1, encoding=sys.stderr.encoding,
                         errors="backslashreplace")
    previous = sys.stderr
    with redirected(STDOUT_FD, log), redirected(STDERR_FD, log):
        sys.stderr = terminal
        try:
            yield log
        finally:
            terminal.flush()
            sys.stderr = previous


def job_failure(cause: str, report: str, output: Path) -> JobError:
    """Append ``report`` to ``output/logs/error.log``; the error naming ``cause`` and the log."""
    path = output / LOGS / "error.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(f"{_stamp()}{cause}\n\n{report}\nSpark's console output: "
                     f"{path.with_name('spark.log')}\n\n")
    return JobError(f"{cause} (full log: {path})")
