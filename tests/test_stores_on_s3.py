"""The stores on an object store (moto's S3 server, for real over HTTP) and on the local disk:
the same answers, with no rename and no overwritten object on S3, and micro-batches bound by the
driver there (no exclusive create)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tests.routing_race import publish_next, race_for_bindings

from elastream.control.binder import Binder
from elastream.core.plan import Move
from elastream.core.routing import RoutingTable
from elastream.stores.filesystem import ArrowFolder, folder
from elastream.stores.migration_store import MigrationStore
from elastream.stores.routing_history import RoutingHistory, compact_history
from elastream.stores.routing_store import RoutingStore


@pytest.fixture(params=["local", "s3"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "state") if request.param == "local" else request.getfixturevalue(
        "s3_uri")


def test_publish_and_current_with_hot_keys(location: str) -> None:
    store = RoutingStore(location)
    assert store.current() is None
    first = RoutingTable(0, (0, 1, 0, 1), 2, hot_keys=((-7, (0, 1, 1)), (42, (1,))))
    store.publish(first)
    second = first.apply([Move(0, 0, 1)])
    store.publish(second)
    store.publish(second)  # again: a no-op
    assert RoutingStore(location).current() == second  # a fresh reader agrees
    assert store.get(0) == first and store.get(1).hot_keys == first.hot_keys
    with pytest.raises(ValueError, match="version 1 is already current"):
        store.publish(first)
    names = sorted(store.folder.names())
    # The pointer: a file renamed over on the local disk, a new object per version on S3.
    pointer = "CURRENT" if store.folder.exclusive else "CURRENT.000000000002"
    assert names == sorted([pointer, "v00000000.json", "v00000001.json"])


def test_owner_records_and_forgetting(location: str) -> None:
    store = RoutingStore(location)
    store.publish(RoutingTable.hashed(4, 2))
    assert not store.has_owner()
    for batch, version in ((0, 0), (3, 2), (3, 5), (7, 4)):  # (3, 5): a retry, first stays
        store.set_owner(batch, version)
    assert [store.owner(b) for b in range(9)] == [0, 0, 0, 2, 2, 2, 2, 4, 4]
    store.forget_bindings(below=5)
    assert [store.owner(b) for b in range(3, 9)] == [2, 2, 2, 2, 4, 4]
    with pytest.raises(ValueError, match="no owner version recorded for batch 2"):
        store.owner(2)


def test_the_driver_binds_what_readers_ask_for_on_s3(s3_uri: str) -> None:
    store = RoutingStore(s3_uri)
    assert not store.folder.exclusive
    store.publish(RoutingTable.hashed(4, 2))
    assert store.bind_requested() == []  # nothing asked
    for batch in (5, 6):  # what a reader writes before it waits
        (store.folder / store.REQUESTS).write(f"{batch:012d}", b"")
    assert store.bind_requested() == [5, 6]
    assert (store.bound(5), store.bound(6)) == (0, 0)
    publish_next(store)
    (store.folder / store.REQUESTS).write(f"{5:012d}", b"")  # a retry of batch 5 asks again
    assert store.bind_requested() == [] and store.bound(5) == 0  # bound once, for good
    assert (store.folder / store.REQUESTS).names() == []
    store.forget_bindings(below=6)
    assert store.bindings() == {6: 0}


def test_readers_racing_on_s3_all_get_the_version_the_driver_bound(s3_uri: str) -> None:
    store = RoutingStore(s3_uri)
    store.publish(RoutingTable.hashed(8, 2))
    binder = Binder(RoutingStore(s3_uri), interval=0.005)
    binder.start()
    try:
        got = race_for_bindings(store, lambda batch: RoutingStore(s3_uri).bind(batch).version,
                                batches=6, readers=4)
    finally:
        binder.stop()
    for batch, versions in got.items():
        assert len(versions) == 4 and len(set(versions)) == 1, (batch, versions)
        assert store.bound(batch) == versions[0]
    firsts = [got[b][0] for b in sorted(got)]
    assert firsts == sorted(firsts)  # a later batch never routes by an older version


def test_a_reader_without_a_driver_gives_up_naming_the_rule(s3_uri: str) -> None:
    store = RoutingStore(s3_uri)
    store.publish(RoutingTable.hashed(4, 2))
    store.WAIT_LIMIT_SECONDS = 0.0  # type: ignore[misc]
    with pytest.raises(TimeoutError, match="the job's driver binds micro-batches"):
        store.bind(0)


def test_the_compacted_history_is_published_and_read_back(location: str) -> None:
    store = RoutingStore(location)
    rows = [[0, 1, 0, 1], [1, 1, 0, 1], [1, 0, 0, 1], [1, 0, 1, 1], [0, 0, 1, 1]]
    for version, row in enumerate(rows[:4]):
        store.publish(RoutingTable(version, tuple(row), 2))
    store.set_owner(0, 0)
    store.set_owner(3, 2)
    compact_history(store, below=3)
    assert RoutingHistory.snapshot(store).base == 2  # type: ignore[union-attr]
    store.publish(RoutingTable(4, tuple(rows[4]), 2))
    store.set_owner(5, 3)
    compact_history(store, below=5)
    assert sorted(n for n in store.folder.names() if n.startswith("v")) == [
        f"v{v:08d}.json" for v in (2, 3, 4)]
    snapshots = [n for n in store.folder.names() if n.startswith("history")]
    assert snapshots == (["history.npz"] if store.folder.exclusive else
                         ["history.npz.000000000002"])
    full = RoutingHistory(np.array(rows))
    fresh = RoutingHistory.load(RoutingStore(location))
    assert (fresh.base, fresh.version) == (3, 4)
    for slot in range(2):
        assert fresh.arrivals(slot).tolist() == full.arrivals(slot).tolist()
    assert fresh.last_moves().tolist() == full.last_moves().tolist()


PARTS = pd.DataFrame({"key": ["a", "b"], "start": [0, 60_000], "n": [3, 4], "kg": [5, 5]})


def test_hand_off_take_over_acknowledge_collect(location: str) -> None:
    store = MigrationStore(location)
    assert store.take_over(2, 5) is None and not store.handed_off(2, 5)
    store.hand_off(2, 5, PARTS, upto=59_999)
    store.hand_off(2, 5, PARTS, upto=59_999)  # a retried batch writes the same file again
    store.hand_off(2, 6, PARTS.assign(kg=6), upto=59_999)
    got, upto = store.take_over(2, 5)  # type: ignore[misc]
    pd.testing.assert_frame_equal(got, PARTS)
    assert upto == 59_999 and store.handed_off(2, 5)
    store.acknowledge(2, 5)
    assert store.receipts() == {(2, 5)} == store.acknowledged()
    store.collect(store.receipts())
    assert store.receipts() == set() and store.acknowledged() == {(2, 5)}
    assert store.take_over(2, 5) is None
    assert store.take_over(2, 6) is not None  # another hand-off of that version stays
    store.acknowledge(2, 6)
    store.collect({(2, 6)})
    assert MigrationStore(location).acknowledged() == {(2, 5), (2, 6)}  # the whole ledger


def test_the_scaling_target_and_the_fault_trigger(location: str) -> None:
    store = MigrationStore(location)
    assert store.target() is None
    store.save_target({"events": 1, "slot_of": [0, 1]})
    store.save_target({"events": 2, "slot_of": [1, 1]})
    assert MigrationStore(location).target() == {"events": 2, "slot_of": [1, 1]}
    store.fault_point()  # no trigger: nothing happens
    store.folder.write("FAULT", b"")
    with pytest.raises(RuntimeError, match="injected fault"):
        store.fault_point()
    store.fault_point()  # it fired once


def test_nothing_on_s3_is_renamed_or_overwritten(s3_uri: str) -> None:
    """Every object the stores write on S3 is written once (immutable), whole, by one PUT."""
    root = folder(s3_uri)
    assert isinstance(root, ArrowFolder)
    written: list[str] = []
    real = root.fs

    class Watched:
        def __getattr__(self, name: str) -> object:
            assert name != "move", "an object store has no rename"
            return getattr(real, name)

        def open_output_stream(self, path: str) -> object:
            written.append(path)
            return real.open_output_stream(path)

    root.fs = Watched()
    routing = RoutingStore(root / "_routing")
    migration = MigrationStore(root / "_migration")
    routing.publish(RoutingTable.hashed(4, 2))
    routing.set_owner(0, 0)
    publish_next(routing)
    (routing.folder / routing.REQUESTS).write(f"{0:012d}", b"")
    routing.bind_requested()
    RoutingHistory.load(routing).compacted(1).save(routing)
    migration.hand_off(1, 0, PARTS, upto=0)
    migration.acknowledge(1, 0)
    migration.collect({(1, 0)})
    migration.save_target({"events": 1})
    assert len(set(written)) == len(written)  # each object written once
    assert [p.split("/", 2)[2] for p in written] == [
        "_routing/v00000000.json", "_routing/CURRENT.000000000001", "_routing/owners/000000000000",
        "_routing/v00000001.json", "_routing/CURRENT.000000000002",
        "_routing/requests/000000000000", "_routing/batches/000000000000",
        "_routing/history.npz.000000000001", "_migration/v00000001/kg0.arrow",
        "_migration/receipts/v1-kg0", "_migration/acknowledged.txt.000000000001",
        "_migration/target.json.000000000001"]
