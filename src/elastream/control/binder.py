"""The driver's binder: micro-batches bound to routing versions where no exclusive create exists.

On a local disk the first reader of a micro-batch binds it by an exclusive create
(:meth:`~elastream.stores.routing_store.RoutingStore.bind`). HDFS and object stores offer
none through pyarrow, so there a reader asks and waits, and this thread on the driver — the
one writer of bindings — binds what was asked to the version current then. It runs apart from
the control loop, whose steps may plan for seconds while a batch waits for its binding.

A store's I/O can fail for a moment (an object store's 500, a dropped connection): the binder
tries again, backing off, and gives up only when every try failed for ``give_up_after``
seconds. A retry is safe: binding a micro-batch again keeps its first binding.
"""

from __future__ import annotations

import threading
import time

from elastream.stores.routing_store import RoutingStore

MIN_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS = 0.01, 1.0


class Binder:
    """Binds requested micro-batches of ``store`` every ``interval`` seconds until stopped."""

    def __init__(self, store: RoutingStore, interval: float = 0.02,
                 give_up_after: float = 60.0) -> None:
        self.store = store
        self.interval = interval
        self.give_up_after = give_up_after
        self.error: BaseException | None = None
        self.failed_tries = 0
        """Tries that met an I/O error and were retried (or gave up)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="elastream-binder", daemon=True)

    def start(self) -> None:
        """Start binding in a daemon thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread; re-raise an error it met."""
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        failing_since: float | None = None
        wait = self.interval
        try:
            while not self._stop.is_set():
                try:
                    self.store.bind_requested()
                except OSError:
                    self.failed_tries += 1
                    now = time.monotonic()
                    failing_since = now if failing_since is None else failing_since
                    if now - failing_since >= self.give_up_after:
                        raise
                    wait = min(MAX_BACKOFF_SECONDS, max(wait, MIN_BACKOFF_SECONDS) * 2)
                else:
                    failing_since, wait = None, self.interval
                self._stop.wait(wait)
        except BaseException as error:  # reported by stop()
            self.error = error
