"""What the routing-binding tests share: publishing the next version, and readers racing it."""

from __future__ import annotations

import threading
from collections.abc import Callable

from elastream.core.plan import Move
from elastream.stores.routing_store import RoutingStore


def publish_next(store: RoutingStore) -> int:
    """Publish a version that moves one key group to the other of two slots; its number."""
    table = store.current()
    assert table is not None
    kg = table.version % table.num_key_groups
    moved = table.apply([Move(kg, table.slot_of[kg], 1 - table.slot_of[kg])])
    store.publish(moved)
    return moved.version


def race_for_bindings(store: RoutingStore, bind: Callable[[int], int], batches: int,
                      readers: int) -> dict[int, list[int]]:
    """Batch by batch, ``readers`` threads ``bind`` it while another publishes new versions.

    The versions each batch's readers got.
    """
    got: dict[int, list[int]] = {b: [] for b in range(batches)}
    stop = threading.Event()

    def publisher() -> None:
        while not stop.is_set():
            publish_next(store)

    def reader(batch: int) -> None:
        got[batch].append(bind(batch))

    background = threading.Thread(target=publisher)
    background.start()
    try:
        for batch in got:
            threads = [threading.Thread(target=reader, args=(batch,)) for _ in range(readers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        stop.set()
        background.join()
    return got
