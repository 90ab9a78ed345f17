"""Ctrl-C and SIGTERM as a request to stop gracefully, for a job that runs until stopped."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm


class StopSignals:
    """The first Ctrl-C (or SIGTERM) asks for a graceful stop; a second Ctrl-C aborts.

    Call it to know whether a stop was asked. :meth:`install` replaces the handlers, PySpark's
    own SIGINT handler among them (it cancels the running Spark jobs, and a SparkContext
    installs it when it starts: install again after that). Outside the main thread signals
    cannot be caught, so nothing changes there.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __call__(self) -> bool:
        """Whether a stop was asked."""
        return self.requested

    def _handle(self, signum: int, frame: object) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        # tqdm.write clears a progress bar drawn on stderr first, so the notice gets a line
        # of its own; with no bar it is a plain print.
        tqdm.write("elastream: stopping (Ctrl-C again to abort)", file=sys.stderr)

    def install(self) -> None:
        """Handle SIGINT and SIGTERM from now on (again, if something replaced the handlers)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in self.SIGNALS:
            old = signal.signal(sig, self._handle)
            self._previous.setdefault(sig, old)

    def restore(self) -> None:
        """The handlers there were before the first :meth:`install`."""
        for sig, old in self._previous.items():
            signal.signal(sig, old)
        self._previous.clear()


@contextmanager
def stop_on_signal() -> Iterator[StopSignals]:
    """:class:`StopSignals` installed within the block."""
    signals = StopSignals()
    signals.install()
    try:
        yield signals
    finally:
        signals.restore()
