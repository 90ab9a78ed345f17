"""The compute stage's packed rows: a row per (compute pin, owner pin), the partials inside."""

from __future__ import annotations

import pyarrow as pa

from elastream.runtimes.spark.compute import PACKED_ARROW, packed
from elastream.runtimes.spark.keygroup_state import from_blobs


def test_partials_are_packed_per_pin_pair_and_read_back_whole() -> None:
    partials = pa.table({
        "pin": pa.array([3, 1, 3, 1, 1], pa.int32()), "kg": [5, 6, 7, 8, 9],
        "_el_key": ["a", "b", "c", "d", "e"], "start": [0, 0, 0, 0, 60], "length": [60] * 5,
        "n": [1, 2, 3, 4, 5], "owner_pin": pa.array([3, 3, 3, 1, 3], pa.int32()),
        "owner_version": [7] * 5})
    rows = packed(partials)
    assert rows.schema == PACKED_ARROW
    got = rows.to_pydict()
    assert list(zip(got["pin"], got["owner_pin"], got["partials"], strict=True)) == \
        [(1, 1, 1), (1, 3, 2), (3, 3, 2)]
    assert got["owner_version"] == [7, 7, 7]
    inside = [from_blobs([blob]).to_pydict() for blob in got["blob"]]
    assert [part["kg"] for part in inside] == [[8], [6, 9], [5, 7]]
    assert inside[1] == {"kg": [6, 9], "_el_key": ["b", "e"], "start": [0, 60],
                         "length": [60, 60], "n": [2, 5]}
