"""Scale events without Spark: routing history, scale targets, mini-migrations, the store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.properties import examples

from elastream.control.scaling import next_moves, ranges_table, scale_target
from elastream.core.errors import OptionError
from elastream.core.routing import RoutingTable
from elastream.core.spec import ScaleEvent
from elastream.stores.migration_store import HandOff, MigrationStore
from elastream.stores.routing_history import RoutingHistory, compact_history
from elastream.stores.routing_store import RoutingStore

histories = st.integers(1, 6).flatmap(lambda v: st.integers(1, 5).flatmap(
    lambda g: st.lists(st.lists(st.integers(0, 2), min_size=g, max_size=g),
                       min_size=v, max_size=v)))


@settings(max_examples=examples(200), deadline=None)
@given(histories)
def test_arrivals_and_departures_match_a_scan_of_the_versions(rows: list[list[int]]) -> None:
    h = RoutingHistory(np.array(rows))
    for kg, last in enumerate(h.last_moves().tolist()):
        changes = [v for v in range(1, len(rows)) if rows[v][kg] != rows[v - 1][kg]]
        assert last == (changes[-1] if changes else 0)
    for slot in range(3):
        arrivals, departures = h.arrivals(slot), h.departures(slot)
        for kg in range(len(rows[0])):
            column = [r[kg] for r in rows]
            if column[-1] == slot:
                v = len(column) - 1
                while v > 0 and column[v - 1] == slot:
                    v -= 1
                assert arrivals[kg] == v and departures[kg] == -1
            else:
                assert arrivals[kg] == -1
                held = [v for v, s in enumerate(column) if s == slot]
                assert departures[kg] == (held[-1] + 1 if held else -1)


def test_history_loads_only_new_versions(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path)
    table = RoutingTable.hashed(4, 2)
    store.publish(table)
    first = RoutingHistory.load(store)
    store.publish(RoutingTable(1, (1, 1, 0, 1), 2))
    later = RoutingHistory.load(store, first)
    assert later.slot_of.tolist() == [[0, 1, 0, 1], [1, 1, 0, 1]]
    assert later.last_moves().tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize(("text", "event"),
                         [("0:1", ScaleEvent(0, 1)), ("12:8", ScaleEvent(12, 8))])
def test_scale_event_parses(text: str, event: ScaleEvent) -> None:
    assert ScaleEvent.parse(text) == event


@pytest.mark.parametrize("text", ["", "3", "3:", ":4", "a:2", "-1:2", "2:0", "1:2:3"])
def test_scale_event_rejects_naming_option_and_value(text: str) -> None:
    with pytest.raises(OptionError, match=rf"^scale_at .* got {text!r}$"):
        ScaleEvent.parse(text)


@pytest.mark.parametrize(("slots", "target"), [(1, 1), (2, 4), (4, 2), (3, 5)])
def test_scale_target_keeps_ranges_and_only_new_ids_for_new_slots(slots: int, target: int) -> None:
    rng = np.random.default_rng(slots * 10 + target)
    table = ranges_table(16, slots, capacity=max(slots, target))
    work = rng.uniform(1, 2, 16)
    goal, plan = scale_target(table, work, work, slots=target, algo="ssm", tau=0.5)
    assert len(set(goal.tolist())) == target
    assert set(goal.tolist()) <= set(range(max(slots, target)))
    # Slots own consecutive ranges again, so the next event can be planned.
    assert sum(1 for i in range(1, 16) if goal[i] != goal[i - 1]) == target - 1
    assert plan.cost == pytest.approx(work[goal != table.as_array()].sum())


def test_scale_target_refuses_scattered_slots() -> None:
    with pytest.raises(OptionError, match=r"^scale_at needs every slot"):
        scale_target(RoutingTable.hashed(6, 2), np.ones(6), np.ones(6), slots=3, algo="ssm",
                     tau=0.2)


def test_next_moves_respects_the_limit_and_skips_key_groups_in_flight() -> None:
    table = RoutingTable(0, (0, 0, 0, 0), 2)
    goal = np.array([1, 1, 0, 1])
    assert [m.key_group for m in next_moves(table, goal, set(), limit=2)] == [0, 1]
    assert [m.key_group for m in next_moves(table, goal, {0}, limit=2)] == [1, 3]
    assert next_moves(table, np.zeros(4, dtype=int), set(), limit=2) == []


def test_store_hands_off_takes_over_and_collects(tmp_path: Path) -> None:
    store = MigrationStore(tmp_path / "m")
    parts = pd.DataFrame({"key": ["a", "b"], "start": [0, 60_000], "length": [60_000] * 2,
                          "n": [3, 4], "kg": [5, 5]})
    assert store.take_over(2, 5) is None
    store.hand_off(2, 5, parts, upto=59_999, slot=1, batch=7)
    written = (tmp_path / "m" / "v00000002" / "kg5.arrow").read_bytes()
    store.hand_off(2, 5, parts, upto=59_999, slot=1, batch=7)  # a retried batch
    assert (tmp_path / "m" / "v00000002" / "kg5.arrow").read_bytes() == written  # same file
    got, upto = store.take_over(2, 5)  # type: ignore[misc]
    pd.testing.assert_frame_equal(got, parts)
    assert upto == 59_999
    store.acknowledge(2, 5, slot=3, batch=8)
    assert store.receipts() == {(2, 5)} == store.acknowledged()
    where = [HandOff(2, 5, source=1, sent=7, target=3, taken=8)]
    assert store.hand_offs() == where
    store.collect(store.receipts())
    assert store.receipts() == set() and store.acknowledged() == {(2, 5)}
    assert store.hand_offs() == where  # kept in the ledger
    assert store.take_over(2, 5) is None


def test_history_reloads_when_the_folder_holds_another_job(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path / "a")
    store.publish(RoutingTable.hashed(4, 2))
    store.publish(RoutingTable(1, (1, 1, 0, 1), 2))
    cached = RoutingHistory.load(store)
    other = RoutingStore(tmp_path / "a")
    for path in other.directory.iterdir():
        path.unlink()
    other.publish(RoutingTable.hashed(4, 2))
    other.publish(RoutingTable(1, (0, 0, 0, 1), 2))
    assert RoutingHistory.load(other, cached).slot_of.tolist() == [[0, 1, 0, 1], [0, 0, 0, 1]]


@settings(max_examples=examples(200), deadline=None)
@given(histories, st.data())
def test_a_compacted_history_answers_as_the_whole_one_from_its_base_on(
        rows: list[list[int]], data: st.DataObject) -> None:
    full = RoutingHistory(np.array(rows))
    base = data.draw(st.integers(0, full.version))
    compacted = full.compacted(base)
    assert compacted.base == base and compacted.slot_of.shape[0] == full.version - base + 1
    start_at_base = full.upto(base).last_moves()
    for version in range(base, full.version + 1):
        whole, short = full.upto(version), compacted.upto(version)
        assert short.last_moves().tolist() == whole.last_moves().tolist()
        for slot in range(3):
            assert short.arrivals(slot).tolist() == whole.arrivals(slot).tolist()
            kept, every = short.departures(slot), whole.departures(slot)
            # Only hand-offs older than the last one before the base are forgotten (the
            # controller moves a key group again only once its last hand-off was written).
            differ = kept != every
            assert (kept[differ] == -1).all() and (every[differ] < start_at_base[differ]).all()
    assert compacted.compacted(base).base == base
    twice = full.compacted(base // 2).compacted(base)
    for field in ("slot_of", "start", "previous"):
        assert getattr(twice, field).tolist() == getattr(compacted, field).tolist()


def test_workers_read_the_compacted_history_and_the_versions_after_it(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path)
    rows = [[0, 1, 0, 1], [1, 1, 0, 1], [1, 0, 0, 1], [1, 0, 1, 1], [0, 0, 1, 1]]
    for version, row in enumerate(rows[:4]):
        store.publish(RoutingTable(version, tuple(row), 2))
    for batch, owner in ((0, 0), (3, 2)):
        store.set_owner(batch, owner)
    compact_history(store, below=3)
    assert RoutingHistory.snapshot(store).base == 2  # type: ignore[union-attr]
    store.publish(RoutingTable(4, tuple(rows[4]), 2))
    store.set_owner(5, 3)
    compact_history(store, below=5)  # base 3; versions before the previous base (2) go
    assert sorted(p.name for p in tmp_path.glob("v*.json")) == [
        f"v{v:08d}.json" for v in (2, 3, 4)]
    full = RoutingHistory(np.array(rows))
    fresh = RoutingHistory.load(store)
    assert fresh.base == 3 and fresh.version == 4
    stale = RoutingHistory.load(store, full.upto(1))  # a worker's cache from long ago
    for history in (fresh, stale, RoutingHistory.load(store, upto=3)):
        for slot in range(2):
            assert history.arrivals(slot).tolist() == full.upto(history.version).arrivals(
                slot).tolist()
        assert history.last_moves().tolist() == full.upto(history.version).last_moves().tolist()
