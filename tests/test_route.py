"""Slots looked up in a task: key groups through the routing table, split hot keys by bucket."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from elastream.core.routing import RoutingTable
from elastream.runtimes.spark.pins import pins_for
from elastream.runtimes.spark.route import route_batches, slots_of, with_owner
from elastream.stores.routing_store import RoutingStore


def _table() -> RoutingTable:
    return RoutingTable(4, (0, 1, 2, 0, 1, 2), 3, hot_keys=((-7, (0, 2)), (11, (1, 2, 0))))


def test_key_groups_go_to_their_slots_without_hashes() -> None:
    kg = np.array([5, 0, 3, 1, 1])
    assert slots_of(_table(), kg).tolist() == [2, 0, 0, 1, 1]


def test_split_hot_keys_go_to_the_bucket_their_record_hash_picks() -> None:
    rng = np.random.default_rng(3)
    kh = rng.choice([-7, 11, 5, 6], 400)
    kg = rng.integers(0, 6, 400)
    record_hash = rng.integers(-(1 << 62), 1 << 62, 400)
    got = slots_of(_table(), kg, kh, record_hash)
    buckets = dict(_table().hot_keys)
    for k, g, h, slot in zip(kh, kg, record_hash, got, strict=True):
        # Spark's pmod: a non-negative remainder, as Python's % for a positive divisor.
        want = buckets[int(k)][int(h) % len(buckets[int(k)])] if k in buckets \
            else _table().slot_of[g]
        assert slot == want
    assert set(got[kh == 11]) == {0, 1, 2}


def test_route_batches_appends_slot_pin_version_and_drops_the_hash(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path)
    store.publish(_table())
    batch = pa.RecordBatch.from_pydict({"kg": [0, 2, 4], "kh": [-7, 3, 4],
                                        "_h": [5, 0, 0], "x": ["a", "b", "c"]})
    out = list(route_batches(iter([batch.slice(0, 0), batch]), routing_dir=str(tmp_path),
                             partitions=3, record_hash="_h"))
    assert len(out) == 1
    assert out[0].schema.names == ["kg", "kh", "x", "slot", "pin", "version"]
    assert out[0].column(3).to_pylist() == [2, 2, 1]  # bucket 5 % 2 of (0, 2); slots of 2, 4
    assert out[0].column(4).to_pylist() == pins_for(3)[[2, 2, 1]].tolist()
    assert out[0].column(5).to_pylist() == [4, 4, 4]


def test_with_owner_adds_the_owner_slots_pin(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path)
    store.publish(_table())
    table = with_owner(pa.table({"kg": [1, 2, 3]}), routing_dir=str(tmp_path), partitions=3)
    assert table.column("owner_pin").to_pylist() == pins_for(3)[[1, 2, 0]].tolist()
    assert table.column("owner_version").to_pylist() == [4, 4, 4]
