"""The driver's binder: micro-batches bound to routing versions where no exclusive create exists.

On a local disk the first reader of a micro-batch binds it by an exclusive create
(:meth:`~elastream.core.routing.RoutingStore.bind`). HDFS and object stores offer none through
pyarrow, so there a reader asks and waits, and this thread on the driver — the one writer of
bindings — binds what was asked to the version current then. It runs apart from the control
loop, whose steps may plan for seconds while a batch waits for its binding.
"""

from __future__ import annotations

import threading

from elastream.core.routing import RoutingStore


class Binder:
    """Binds requested micro-batches of ``store`` every ``interval`` seconds until stopped."""

    def __init__(self, store: RoutingStore, interval: float = 0.02) -> None:
        self.store = store
        self.interval = interval
        self.error: BaseException | None = None
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
        try:
            while not self._stop.is_set():
                self.store.bind_requested()
                self._stop.wait(self.interval)
        except BaseException as error:  # reported by stop()
            self.error = error
