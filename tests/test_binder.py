"""The driver's binder survives a store's passing I/O errors and gives up on lasting ones."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from elastream.control.binder import Binder
from elastream.core.routing import RoutingTable
from elastream.stores.routing_store import RoutingStore


class FlakyStore(RoutingStore):
    """A routing store whose first ``failures`` binding rounds fail as a dropped connection."""

    def __init__(self, directory: Path, failures: int) -> None:
        super().__init__(directory)
        self.failures = failures

    def bind_requested(self) -> list[int]:
        if self.failures > 0:
            self.failures -= 1
            raise OSError("AWS Error INTERNAL_FAILURE during GetObject operation")
        return super().bind_requested()


def test_passing_errors_are_retried_and_the_request_is_bound(tmp_path: Path) -> None:
    store = FlakyStore(tmp_path / "routing", failures=3)
    store.publish(RoutingTable.hashed(4, 2))
    (store.folder / store.REQUESTS).write(f"{7:012d}", b"")  # a reader asks for micro-batch 7
    binder = Binder(store, interval=0.001)
    binder.start()
    deadline = time.monotonic() + 600  # a bound on a stuck thread, not a timing requirement
    while store.bound(7) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    binder.stop()  # no error: every failure was retried
    assert store.bound(7) == 0 and binder.failed_tries == 3


def test_errors_lasting_past_the_limit_stop_the_binder_and_are_raised(tmp_path: Path) -> None:
    store = FlakyStore(tmp_path / "routing", failures=10**9)
    store.publish(RoutingTable.hashed(4, 2))
    binder = Binder(store, interval=0.001, give_up_after=0.0)
    binder.start()
    binder._thread.join(timeout=600)
    with pytest.raises(OSError, match="INTERNAL_FAILURE"):
        binder.stop()
    assert binder.failed_tries == 1
