"""Routing versions bound to micro-batches (RoutingStore.bind): whenever versions are published
against batch boundaries, every read of a batch — any stage, any retry — gets one version."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples
from tests.routing_race import publish_next, race_for_bindings

from elastream.core.routing import RoutingTable
from elastream.stores.routing_store import RoutingStore

# One event of a run: publish a new version, read batch b's routing in some stage (a stage of
# the current batch, or a retry of it), or start the next batch.
EVENTS = st.lists(st.sampled_from(["publish", "read", "retry", "next"]), max_size=80)


@settings(max_examples=examples(200), deadline=None)
@given(EVENTS)
def test_each_batch_is_routed_by_exactly_one_version(events: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = RoutingStore(folder)
        store.publish(RoutingTable.hashed(4, 2))
        latest, batch = 0, 0
        seen: dict[int, set[int]] = {}
        current_at_first_read: dict[int, int] = {}
        for event in events:
            if event == "publish":
                latest = publish_next(store)
            elif event == "next":
                batch += 1
            else:
                current_at_first_read.setdefault(batch, latest)
                seen.setdefault(batch, set()).add(store.bind(batch).version)
        for b, versions in seen.items():
            # One version per batch: the one current when the batch was first read.
            assert versions == {current_at_first_read[b]}
            assert store.bound(b) == current_at_first_read[b]
        ordered = [seen[b].pop() for b in sorted(seen)]
        assert ordered == sorted(ordered)  # a later batch never routes by an older version


def test_readers_racing_for_a_batch_all_get_the_same_version(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path)
    store.publish(RoutingTable.hashed(8, 2))
    got = race_for_bindings(store, lambda batch: store.bind(batch).version, batches=20,
                            readers=6)
    for batch, versions in got.items():
        assert len(set(versions)) == 1, (batch, versions)
        assert store.bound(batch) == versions[0]
    firsts = [got[b][0] for b in range(20)]
    assert firsts == sorted(firsts)
    assert store.current().version > firsts[0]  # type: ignore[union-attr]


def test_forgotten_bindings_are_only_those_below(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path)
    store.publish(RoutingTable.hashed(4, 2))
    for batch in range(5):
        store.bind(batch)
    store.forget_bindings(below=3)
    assert sorted(store.bindings()) == [3, 4]


def test_the_owner_version_is_the_latest_record_at_or_before_a_batch(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path)
    store.publish(RoutingTable.hashed(4, 2))
    assert not store.has_owner()
    store.set_owner(0, 0)
    store.set_owner(3, 2)
    store.set_owner(3, 5)  # a retried batch: the first record stays
    store.set_owner(7, 4)
    assert [store.owner(b) for b in range(9)] == [0, 0, 0, 2, 2, 2, 2, 4, 4]
    store.forget_bindings(below=5)  # the record of batch 3 still counts for batches 5, 6
    assert [store.owner(b) for b in range(5, 9)] == [2, 2, 4, 4]
