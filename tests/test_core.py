"""Tests of the engine-free vocabulary in ``elastream.core``.

Tables of boundary cases (in the manner of Flink's ``KeyGroupRangeAssignmentTest``) for parsing and
validation, reference values computed by Spark for the two hashes, brute force for the pins, and
hypothesis properties for routing tables, routing stores and load distance.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from elastream.core.aggregates import (
    RECORDS,
    AggSpec,
    partial_columns,
    validate_aggs,
    value_columns,
)
from elastream.core.errors import ElastreamError, OptionError
from elastream.core.keygroups import MAX_KEY_GROUPS, key_group, key_groups, validate_key_groups
from elastream.core.load import LoadSnapshot, load_distance
from elastream.core.plan import Move, Plan, PlanStatus
from elastream.core.routing import RoutingTable
from elastream.core.spec import RunSpec
from elastream.core.windows import (
    WindowSpec,
    format_duration,
    pane_ms,
    parse_duration,
    unique_specs,
)
from elastream.runtimes.spark.pins import murmur3_int, partition_of, pins_for
from elastream.stores.routing_store import RoutingStore

S, M, H, D = 1_000, 60_000, 3_600_000, 86_400_000


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def test_option_error_names_option_rule_and_value() -> None:
    error = OptionError("--slots", "must be a positive integer", 0)
    assert str(error) == "--slots must be a positive integer, got 0"
    assert (error.option, error.rule, error.value) == ("--slots", "must be a positive integer", 0)
    assert isinstance(error, ElastreamError) and isinstance(error, ValueError)


# --------------------------------------------------------------------------------------------
# Durations and window specs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1s", S),
        ("90s", 90 * S),
        ("15m", 15 * M),
        ("6h", 6 * H),
        ("1d", D),
        ("01h", H),
        (" 2m ", 2 * M),
        ("3 h", 3 * H),
        ("100000d", 100_000 * D),
    ],
)
def test_parse_duration_accepts(text: str, ms: int) -> None:
    assert parse_duration(text, option="--window") == ms


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("", "whole number with a unit"),
        ("   ", "whole number with a unit"),
        ("5", "whole number with a unit"),
        ("h", "whole number with a unit"),
        ("5x", "whole number with a unit"),
        ("5ms", "whole number with a unit"),
        ("1.5h", "whole number with a unit"),
        ("-1h", "whole number with a unit"),
        ("+1h", "whole number with a unit"),
        ("1H", "whole number with a unit"),
        ("1h30m", "whole number with a unit"),
        ("0s", "positive duration"),
        ("0d", "positive duration"),
        ("000m", "positive duration"),
    ],
)
def test_parse_duration_rejects_naming_option_and_value(text: str, rule: str) -> None:
    with pytest.raises(OptionError) as caught:
        parse_duration(text, option="--lateness")
    message = str(caught.value)
    assert message.startswith("--lateness ")
    assert rule in message
    assert message.endswith(f"got {text!r}")
    assert caught.value.option == "--lateness"


@pytest.mark.parametrize(
    ("ms", "text"),
    [(S, "1s"), (90 * S, "90s"), (M, "1m"), (90 * M, "90m"), (6 * H, "6h"), (D, "1d"),
     (25 * H, "25h"), (2 * D, "2d"), (1500, "1500ms"), (1, "1ms")],
)
def test_format_duration_is_shortest_exact_text(ms: int, text: str) -> None:
    assert format_duration(ms) == text


@given(st.integers(1, 10_000), st.sampled_from(["s", "m", "h", "d"]))
def test_format_then_parse_round_trips(value: int, unit: str) -> None:
    ms = parse_duration(f"{value}{unit}", option="--window")
    assert parse_duration(format_duration(ms), option="--window") == ms


@pytest.mark.parametrize(
    ("text", "length", "slide"),
    [
        ("1h", H, H),
        ("24h/1h", D, H),
        ("6h/1h", 6 * H, H),
        ("1h/1h", H, H),
        ("5m/2m", 5 * M, 2 * M),
        ("90s/30s", 90 * S, 30 * S),
        (" 1h / 30m ", H, 30 * M),
        ("1d/1s", D, S),
        ("60m/1h", H, H),
    ],
)
def test_window_spec_parse_accepts(text: str, length: int, slide: int) -> None:
    spec = WindowSpec.parse(text)
    assert (spec.length_ms, spec.slide_ms) == (length, slide)
    assert spec.is_tumbling == (length == slide)


@pytest.mark.parametrize(
    ("text", "rule", "value"),
    [
        ("", "LENGTH or LENGTH/SLIDE", ""),
        (" ", "LENGTH or LENGTH/SLIDE", " "),
        ("/1h", "LENGTH or LENGTH/SLIDE", "/1h"),
        ("1h/1m/1s", "LENGTH or LENGTH/SLIDE", "1h/1m/1s"),
        ("1h//1m", "LENGTH or LENGTH/SLIDE", "1h//1m"),
        ("1h/", "whole number with a unit", ""),
        ("1x", "whole number with a unit", "1x"),
        ("1h/5", "whole number with a unit", "5"),
        ("0s", "positive duration", "0s"),
        ("1h/0m", "positive duration", "0m"),
        ("1h/2h", "slide no longer than its length", "1h/2h"),
        ("59m/1h", "slide no longer than its length", "59m/1h"),
    ],
)
def test_window_spec_parse_rejects(text: str, rule: str, value: str) -> None:
    with pytest.raises(OptionError) as caught:
        WindowSpec.parse(text)
    assert caught.value.option == "windows"
    assert rule in str(caught.value)
    assert str(caught.value).startswith("windows ")
    assert caught.value.value == value


@pytest.mark.parametrize(("length", "slide"), [(0, 0), (-1000, 1000), (1000, 0), (1000, 2000)])
def test_window_spec_constructor_validates(length: int, slide: int) -> None:
    with pytest.raises(OptionError, match=r"^windows "):
        WindowSpec(length, slide)


@pytest.mark.parametrize("text", ["1h", "6h/1h", "90s/30s", "5m/2m", "1d", "36h/12h"])
def test_window_spec_str_round_trips(text: str) -> None:
    spec = WindowSpec.parse(text)
    assert WindowSpec.parse(str(spec)) == spec


@pytest.mark.parametrize(
    ("texts", "pane"),
    [
        (["1h"], H),
        (["1h", "6h/1h", "24h/1h"], H),
        (["5m", "10m", "15m", "20m"], 5 * M),
        (["5m/2m"], M),
        (["90s", "1h"], 90 * S),
        (["90s", "1m"], 30 * S),
        (["1d/6h", "8h"], 2 * H),
    ],
)
def test_pane_is_gcd_of_lengths_and_slides(texts: list[str], pane: int) -> None:
    assert pane_ms([WindowSpec.parse(t) for t in texts]) == pane


def test_pane_of_no_windows_is_an_option_error() -> None:
    with pytest.raises(OptionError, match=r"^windows needs at least one window"):
        pane_ms([])


def test_unique_specs_drops_duplicates_shortest_first() -> None:
    a, b, c = WindowSpec.parse("6h/1h"), WindowSpec.parse("1h"), WindowSpec.parse("6h/2h")
    assert unique_specs([a, b, a, c, b]) == (b, a, c)


def _starts_brute_force(length: int, slide: int, after: int, upto: int) -> list[int]:
    """Starts k·slide of the instances [k·slide, k·slide + length) ending in (after, upto]."""
    return [s for s in range(after - length - slide, upto + 1)
            if s % slide == 0 and after < s + length <= upto]


@pytest.mark.parametrize(
    ("length", "slide", "after", "upto", "starts"),
    [
        # instances [k·2, k·2 + 4): ends 4, 6, 8, ... when k = 0, 1, 2
        (4, 2, -1, 10, [-4, -2, 0, 2, 4, 6]),
        (4, 2, 0, 1, []),
        (4, 2, 0, 2, [-2]),
        (4, 2, 1, 2, [-2]),
        (4, 2, 2, 3, []),
        (4, 2, 2, 4, [0]),
        (4, 4, 0, 4, [0]),
        (4, 4, 4, 7, []),
        (4, 4, 3, 8, [0, 4]),
        (4, 4, -9, -4, [-12, -8]),
        (6, 3, 5, 5, []),
        (6, 3, 5, 6, [0]),
        (1, 1, 0, 3, [0, 1, 2]),
    ],
)
def test_starts_ending_in_table(
    length: int, slide: int, after: int, upto: int, starts: list[int]
) -> None:
    assert _starts_brute_force(length, slide, after, upto) == starts  # the table itself is right
    assert list(WindowSpec(length, slide).starts_ending_in(after, upto)) == starts


@given(st.integers(1, 12), st.integers(1, 6), st.integers(-60, 60), st.integers(0, 60))
def test_starts_ending_in_matches_brute_force_when_slide_divides_length(
    slide: int, multiple: int, after: int, span: int
) -> None:
    length, upto = slide * multiple, after + span
    expected = _starts_brute_force(length, slide, after, upto)
    assert list(WindowSpec(length, slide).starts_ending_in(after, upto)) == expected


@pytest.mark.parametrize(
    ("length", "slide", "after", "upto", "starts"),
    [
        # instances [k·2, k·2 + 5): starts are even, ends 1, 3, 5, ... are odd
        (5, 2, -1, 10, [-4, -2, 0, 2, 4]),  # returns [-5, -3, -1, 1, 3, 5]
        (5, 2, 0, 1, [-4]),  # returns []: the instance [-4, 1) ends in (0, 1]
        (5, 2, 2, 3, [-2]),  # returns []
        (3, 2, 0, 1, [-2]),  # returns []
    ],
)
def test_starts_ending_in_when_slide_does_not_divide_length(
    length: int, slide: int, after: int, upto: int, starts: list[int]
) -> None:
    assert _starts_brute_force(length, slide, after, upto) == starts
    assert list(WindowSpec(length, slide).starts_ending_in(after, upto)) == starts


# --------------------------------------------------------------------------------------------
# Aggregates
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "func", "column", "output", "partials"),
    [
        ("count", "count", None, "count", ("n",)),
        ("COUNT", "count", None, "count", ("n",)),
        (" count: ", "count", None, "count", ("n",)),
        ("count:v", "count", "v", "count_v", ("cnt_v",)),
        ("sum:delay", "sum", "delay", "sum_delay", ("sum_delay", "cnt_delay")),
        ("Sum : delay", "sum", "delay", "sum_delay", ("sum_delay", "cnt_delay")),
        ("avg:delay", "avg", "delay", "avg_delay", ("sum_delay", "cnt_delay")),
        ("min:_x1", "min", "_x1", "min__x1", ("min__x1",)),
        ("max:X", "max", "X", "max_X", ("max_X",)),
    ],
)
def test_agg_spec_parse_accepts(
    text: str, func: str, column: str | None, output: str, partials: tuple[str, ...]
) -> None:
    agg = AggSpec.parse(text)
    assert (agg.func, agg.column) == (func, column)
    assert agg.output_name == output
    assert agg.partials == partials


@pytest.mark.parametrize(
    ("text", "rule", "value"),
    [
        ("", "function must be one of", ""),
        ("median:v", "function must be one of", "median"),
        ("mean:v", "function must be one of", "mean"),
        (":v", "function must be one of", ""),
        ("sum", "sum needs a column", "sum"),
        ("avg:", "avg needs a column", "avg"),
        ("min", "min needs a column", "min"),
        ("max", "max needs a column", "max"),
        ("sum:1v", "plain identifier", "1v"),
        ("sum:a-b", "plain identifier", "a-b"),
        ("sum:a b", "plain identifier", "a b"),
        ("sum:v:w", "plain identifier", "v:w"),
        ("count:a.b", "plain identifier", "a.b"),
    ],
)
def test_agg_spec_parse_rejects(text: str, rule: str, value: str) -> None:
    with pytest.raises(OptionError) as caught:
        AggSpec.parse(text)
    assert caught.value.option == "aggs"
    assert rule in str(caught.value)
    assert caught.value.value == value


def test_validate_aggs_rejects_empty_and_duplicates() -> None:
    with pytest.raises(OptionError, match=r"^aggs needs at least one aggregate"):
        validate_aggs([])
    with pytest.raises(OptionError, match=r"^aggs must not repeat an aggregate, got 'sum_v'"):
        validate_aggs([AggSpec.parse("sum:v"), AggSpec.parse("count"), AggSpec.parse("SUM:v")])
    with pytest.raises(OptionError, match="got 'count'"):
        validate_aggs([AggSpec.parse("count"), AggSpec.parse("count:")])


def test_validate_aggs_accepts_distinct_outputs_of_one_column() -> None:
    aggs = [AggSpec.parse(t) for t in ("count", "count:v", "sum:v", "avg:v", "min:v", "max:v")]
    assert validate_aggs(aggs) == tuple(aggs)


def test_partial_and_value_columns_in_first_use_order_without_duplicates() -> None:
    aggs = [AggSpec.parse(t) for t in ("avg:b", "count", "sum:a", "max:b", "count:b", "sum:b")]
    assert value_columns(aggs) == ("b", "a")
    assert partial_columns(aggs) == (RECORDS, "sum_b", "cnt_b", "sum_a", "cnt_a", "max_b")
    assert partial_columns([AggSpec.parse("count")]) == (RECORDS,)


# --------------------------------------------------------------------------------------------
# Job spec
# --------------------------------------------------------------------------------------------


def _job(**changes: Any) -> RunSpec:
    fields: dict[str, Any] = {
        "input": Path("in.parquet"),
        "output": Path("out"),
        "time_col": "t",
        "key_col": "k",
        "aggs": (AggSpec.parse("sum:v"), AggSpec.parse("count")),
        "windows": (WindowSpec.parse("1h"),),
    }
    fields.update(changes)
    return RunSpec.of(**fields)


def test_job_spec_defaults_are_valid_and_windows_are_normalised() -> None:
    h1, h6 = WindowSpec.parse("1h"), WindowSpec.parse("6h/1h")
    job = _job(windows=(h6, h1, h6))
    assert job.windowing.windows == (h1, h6)
    assert job.pane_ms == H
    assert job.longest_ms == 6 * H
    assert _job(slots=128, key_groups=128).scaling.slots == 128
    assert _job(slots=1, key_groups=1).routing.key_groups == 1
    assert _job(lateness_ms=0, max_moves=0, max_batches=1).files.max_batches == 1


@pytest.mark.parametrize(
    ("changes", "option", "value"),
    [
        ({"aggs": ()}, "aggs", "none"),
        ({"aggs": (AggSpec.parse("sum:v"), AggSpec.parse("sum:v"))}, "aggs", "sum_v"),
        ({"aggs": (AggSpec.parse("sum:t"),)}, "aggs", "t"),
        ({"aggs": (AggSpec.parse("max:k"),)}, "aggs", "k"),
        ({"windows": ()}, "windows", "none"),
        ({"format": "xml"}, "format", "xml"),
        ({"format": "CSV"}, "format", "CSV"),
        ({"mode": "tail"}, "mode", "tail"),
        ({"slots": 0}, "slots", 0),
        ({"slots": -1}, "slots", -1),
        ({"slots": True}, "slots", True),
        ({"slots": 2.0}, "slots", 2.0),
        ({"slots": 129, "key_groups": 128}, "slots", 129),
        ({"slots": 2, "key_groups": 1}, "slots", 2),
        ({"key_groups": 0}, "key_groups", 0),
        ({"key_groups": MAX_KEY_GROUPS + 1}, "key_groups", MAX_KEY_GROUPS + 1),
        ({"rows_per_batch": 0}, "rows_per_batch", 0),
        ({"lateness_ms": -1}, "lateness", -1),
        ({"max_batches": 0}, "max_batches", 0),
        ({"max_moves": -1}, "max_moves", -1),
        ({"time_col": "k"}, "key", "k"),
    ],
)
def test_job_spec_rejects(changes: dict[str, Any], option: str, value: object) -> None:
    with pytest.raises(OptionError) as caught:
        _job(**changes)
    assert caught.value.option == option
    assert caught.value.value == value
    assert str(caught.value).startswith(option)


# --------------------------------------------------------------------------------------------
# Key groups
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "groups", "expected"), [
    # Spark: SELECT pmod(xxhash64('ORD'), 128), pmod(xxhash64('LAS'), 128)
    ("ORD", 128, 51),
    ("LAS", 128, 11),
    ("ORD", 1, 0),
    ("LAS", 1, 0),
])
def test_key_group_matches_spark(key: str, groups: int, expected: int) -> None:
    assert key_group(key, groups) == expected


@pytest.mark.parametrize("groups", [1, 2, 128, MAX_KEY_GROUPS])
def test_validate_key_groups_accepts_the_whole_range(groups: int) -> None:
    assert validate_key_groups(groups) == groups


@pytest.mark.parametrize(
    ("groups", "rule"),
    [(0, "an integer in [1, 32768]"), (-1, "an integer in [1, 32768]"),
     (MAX_KEY_GROUPS + 1, "an integer in [1, 32768]"), (True, "must be an integer"),
     (128.0, "must be an integer"), ("128", "must be an integer")],
)
def test_validate_key_groups_rejects(groups: object, rule: str) -> None:
    with pytest.raises(OptionError) as caught:
        validate_key_groups(groups, option="--max-groups")  # type: ignore[arg-type]
    assert caught.value.option == "--max-groups"
    assert rule in str(caught.value)
    assert caught.value.value == groups


@given(st.lists(st.text(max_size=8), max_size=20), st.integers(1, 1000))
def test_key_groups_agree_with_key_group_and_are_in_range(keys: list[str], groups: int) -> None:
    many = key_groups(keys, groups)
    assert many.tolist() == [key_group(k, groups) for k in keys]
    assert ((many >= 0) & (many < groups)).all()


# --------------------------------------------------------------------------------------------
# Murmur3 and pins
# --------------------------------------------------------------------------------------------


def _murmur3_hash_int_reference(value: int, seed: int = 42) -> int:
    """Murmur3_x86_32.hashInt written out on Python ints, one value at a time."""
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    k1 = value & mask
    k1 = (k1 * 0xCC9E2D51) & mask
    k1 = rotl(k1, 15)
    k1 = (k1 * 0x1B873593) & mask
    h1 = seed ^ k1
    h1 = rotl(h1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & mask
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & mask
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & mask
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


# Spark: SELECT hash(0), hash(1), hash(2), hash(-1)
SPARK_HASH_INT = {0: 933211791, 1: -559580957, 2: 1765031574, -1: -1604776387}


def test_murmur3_int_matches_spark() -> None:
    values = np.array(list(SPARK_HASH_INT))
    assert murmur3_int(values).tolist() == list(SPARK_HASH_INT.values())
    # The reference used below is checked against Spark too.
    assert [_murmur3_hash_int_reference(v) for v in SPARK_HASH_INT] == list(
        SPARK_HASH_INT.values())


@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=50))
def test_murmur3_int_matches_scalar_reference(values: list[int]) -> None:
    out = murmur3_int(np.array(values, dtype=np.int64))
    assert out.dtype == np.int32
    assert out.tolist() == [_murmur3_hash_int_reference(v) for v in values]


def test_partition_of_is_pmod_of_hash() -> None:
    values = np.array(list(SPARK_HASH_INT))
    for partitions in (1, 2, 3, 7, 200):
        expected = [h % partitions for h in SPARK_HASH_INT.values()]  # Python % is pmod
        assert partition_of(values, partitions).tolist() == expected


@pytest.mark.parametrize("partitions", range(1, 17))
def test_pins_are_smallest_ints_per_partition_by_brute_force(partitions: int) -> None:
    candidates = np.arange(0, 10_000)
    parts = partition_of(candidates, partitions)
    expected = [int(candidates[parts == p][0]) for p in range(partitions)]
    pins = pins_for(partitions)
    assert pins.tolist() == expected
    assert partition_of(pins, partitions).tolist() == list(range(partitions))


def test_pins_for_small_table() -> None:
    assert pins_for(1).tolist() == [0]
    assert pins_for(4).tolist() == [12, 6, 2, 0]


@pytest.mark.parametrize("partitions", [200, 1000])
def test_pins_cover_large_partition_counts(partitions: int) -> None:
    pins = pins_for(partitions)
    assert partition_of(pins, partitions).tolist() == list(range(partitions))
    assert len(set(pins.tolist())) == partitions


@pytest.mark.parametrize("partitions", [0, -3])
def test_pins_for_rejects_non_positive(partitions: int) -> None:
    with pytest.raises(ValueError, match=str(partitions)):
        pins_for(partitions)


# --------------------------------------------------------------------------------------------
# Routing tables
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "slots", "slot_of"),
    [(1, 1, (0,)), (4, 2, (0, 1, 0, 1)), (5, 3, (0, 1, 2, 0, 1)), (2, 4, (0, 1)), (0, 1, ())],
)
def test_hashed_table(groups: int, slots: int, slot_of: tuple[int, ...]) -> None:
    table = RoutingTable.hashed(groups, slots, version=7)
    assert (table.version, table.slot_of, table.num_slots) == (7, slot_of, slots)
    assert table.num_key_groups == groups
    assert table.as_array().tolist() == list(slot_of)


@pytest.mark.parametrize(
    ("slot_of", "slots", "option", "value"),
    [((0,), 0, "num_slots", 0), ((0, 2), 2, "slot_of", 2), ((-1, 0), 2, "slot_of", -1)],
)
def test_table_rejects_bad_slots(
    slot_of: tuple[int, ...], slots: int, option: str, value: int
) -> None:
    with pytest.raises(OptionError) as caught:
        RoutingTable(0, slot_of, slots)
    assert (caught.value.option, caught.value.value) == (option, value)


def test_apply_moves_and_bumps_version() -> None:
    table = RoutingTable.hashed(6, 3)  # (0, 1, 2, 0, 1, 2)
    moved = table.apply([Move(0, 0, 2), Move(4, 1, 0), Move(0, 2, 1)])
    assert moved.slot_of == (1, 1, 2, 0, 0, 2)
    assert moved.version == 1 and moved.num_slots == 3
    assert table.slot_of == (0, 1, 2, 0, 1, 2)  # immutable
    assert table.apply([]).slot_of == table.slot_of
    assert table.apply([]).version == 1


def test_apply_can_grow_and_shrink_slots() -> None:
    table = RoutingTable.hashed(4, 2)  # (0, 1, 0, 1)
    grown = table.apply([Move(3, 1, 2)], num_slots=3)
    assert (grown.slot_of, grown.num_slots) == ((0, 1, 0, 2), 3)
    shrunk = grown.apply([Move(3, 2, 0)], num_slots=2)
    assert (shrunk.slot_of, shrunk.num_slots) == ((0, 1, 0, 0), 2)
    with pytest.raises(OptionError, match="slot_of"):
        grown.apply([], num_slots=2)  # key group 3 still on slot 2


@pytest.mark.parametrize(
    "moves",
    [
        [Move(0, 1, 0)],  # key group 0 is on slot 0
        [Move(1, 1, 0), Move(1, 1, 0)],  # second move's source is stale
        [Move(2, 0, 5)],  # target beyond the slots
        [Move(2, 0, -1)],
        [Move(4, 0, 1)],  # no key group 4
    ],
)
def test_apply_rejects_bad_moves(moves: list[Move]) -> None:
    table = RoutingTable.hashed(4, 2)
    with pytest.raises((ValueError, IndexError)):
        table.apply(moves)


def test_apply_rejects_wrong_source_with_a_message() -> None:
    with pytest.raises(ValueError, match="key group 0 names source 1, but its slot is 0"):
        RoutingTable.hashed(4, 2).apply([Move(0, 1, 0)])


def test_apply_rejects_negative_key_group() -> None:
    table = RoutingTable.hashed(4, 2)  # (0, 1, 0, 1): slot_of[-1] == 1
    with pytest.raises((ValueError, IndexError)):
        table.apply([Move(-1, 1, 0)])


def test_apply_rejects_zero_slots() -> None:
    table = RoutingTable.hashed(4, 2)
    with pytest.raises(OptionError):
        table.apply_plan(Plan(PlanStatus.FEASIBLE, moves=(), num_slots=0))


def test_apply_plan() -> None:
    table = RoutingTable.hashed(4, 2)
    assert table.apply_plan(Plan(PlanStatus.UNCHANGED)) is table
    after = table.apply_plan(Plan(PlanStatus.FEASIBLE, moves=(Move(1, 1, 0),)))
    assert (after.version, after.slot_of) == (1, (0, 0, 0, 1))
    grown = table.apply_plan(Plan(PlanStatus.FEASIBLE, num_slots=3))
    assert (grown.version, grown.slot_of, grown.num_slots) == (1, table.slot_of, 3)


@st.composite
def tables(draw: st.DrawFn) -> RoutingTable:
    slots = draw(st.integers(1, 8))
    slot_of = draw(st.lists(st.integers(0, slots - 1), max_size=64))
    hot = draw(st.dictionaries(st.integers(-2**63, 2**63 - 1),
                               st.lists(st.integers(0, slots - 1), min_size=1, max_size=8),
                               max_size=3))
    return RoutingTable(draw(st.integers(0, 2**40)), tuple(slot_of), slots,
                        tuple((k, tuple(b)) for k, b in hot.items()))


@given(tables())
def test_json_round_trip(table: RoutingTable) -> None:
    text = table.to_json()
    assert RoutingTable.from_json(text) == table
    assert json.loads(text) == {"version": table.version, "num_slots": table.num_slots,
                                "slot_of": list(table.slot_of),
                                "hot_keys": [[k, list(b)] for k, b in table.hot_keys]}


def test_from_json_validates() -> None:
    with pytest.raises(OptionError, match="slot_of"):
        RoutingTable.from_json('{"version": 1, "num_slots": 2, "slot_of": [0, 2]}')


@given(tables(), st.data())
def test_apply_random_valid_moves(table: RoutingTable, data: st.DataObject) -> None:
    if table.num_key_groups == 0:
        return
    slots = list(table.slot_of)
    moves = []
    for _ in range(data.draw(st.integers(0, 10))):
        kg = data.draw(st.integers(0, table.num_key_groups - 1))
        target = data.draw(st.integers(0, table.num_slots - 1))
        moves.append(Move(kg, slots[kg], target))
        slots[kg] = target
    after = table.apply(moves)
    assert after.slot_of == tuple(slots)
    assert after.version == table.version + 1


# --------------------------------------------------------------------------------------------
# Routing store
# --------------------------------------------------------------------------------------------


def test_store_current_is_none_before_publish(tmp_path: Path) -> None:
    assert RoutingStore(tmp_path / "routing").current() is None
    assert not (tmp_path / "routing").exists()  # reading creates nothing


def test_store_publish_then_current(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path / "a" / "b")
    first = RoutingTable.hashed(8, 2)
    store.publish(first)
    assert store.current() == first
    second = first.apply([Move(0, 0, 1)])
    store.publish(second)
    assert store.current() == second
    assert RoutingStore(tmp_path / "a" / "b").current() == second  # a fresh reader agrees
    assert sorted(p.name for p in store.directory.iterdir()) == [
        "CURRENT", "v00000000.json", "v00000001.json"]


def test_store_publishing_same_version_twice_is_a_no_op(tmp_path: Path) -> None:
    store = RoutingStore(tmp_path)
    table = RoutingTable.hashed(8, 2, version=3)
    store.publish(table)
    listing = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    store.publish(table)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == listing
    assert store.current() == table
    # Version files are immutable: a different table under a published version is not written.
    store.publish(dataclasses.replace(table, slot_of=(1,) * 8))
    assert store.current() == table


def _check_pointer_names_complete_file(directory: Path) -> None:
    """The invariant readers rely on: CURRENT is absent or names a whole, valid version file."""
    pointer = directory / RoutingStore.POINTER
    if pointer.exists():
        name = pointer.read_text().strip()
        table = RoutingTable.from_json((directory / name).read_text())
        assert name == f"v{table.version:08d}.json"


def test_store_publish_is_atomic_at_every_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Check the invariant before and after each rename publish makes, and after a crash there."""
    store = RoutingStore(tmp_path)
    real_replace = os.replace
    steps: list[str] = []

    def checked_replace(src: Any, dst: Any) -> None:
        _check_pointer_names_complete_file(tmp_path)
        real_replace(src, dst)
        steps.append(Path(dst).name)
        _check_pointer_names_complete_file(tmp_path)

    monkeypatch.setattr(os, "replace", checked_replace)
    table = RoutingTable.hashed(16, 4)
    for _ in range(5):
        store.publish(table)
        table = table.apply([Move(table.version % 16, table.slot_of[table.version % 16], 3)])
    # Version file first, pointer second, every time.
    assert steps == [n for v in range(5) for n in (f"v{v:08d}.json", "CURRENT")]

    # A crash at any rename leaves the previous version current.
    for crash_at in (1, 2):
        calls = {"n": 0}

        def crashing_replace(
            src: Any, dst: Any, crash_at: int = crash_at, calls: dict[str, int] = calls
        ) -> None:
            calls["n"] += 1
            if calls["n"] == crash_at:
                raise OSError("simulated crash")
            real_replace(src, dst)

        monkeypatch.setattr(os, "replace", crashing_replace)
        before = store.current()
        with pytest.raises(OSError, match="simulated crash"):
            store.publish(RoutingTable.hashed(16, 4, version=100 + crash_at))
        _check_pointer_names_complete_file(tmp_path)
        assert store.current() == before


def test_store_recovers_after_crash_between_file_and_pointer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RoutingStore(tmp_path)
    old = RoutingTable.hashed(4, 2)
    store.publish(old)
    new = old.apply([Move(0, 0, 1)])
    real_replace = os.replace

    def crash_on_pointer(src: Any, dst: Any) -> None:
        if Path(dst).name == RoutingStore.POINTER:
            raise OSError("simulated crash")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_pointer)
    with pytest.raises(OSError):
        store.publish(new)
    assert store.current() == old
    monkeypatch.setattr(os, "replace", real_replace)
    store.publish(new)  # retry: the version file exists, only the pointer moves
    assert store.current() == new


# --------------------------------------------------------------------------------------------
# Loads
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loads", "capacity", "distance"),
    [
        ([10.0, 10.0], None, 0.0),
        ([15.0, 5.0], None, 50.0),
        ([0.0, 0.0], None, 0.0),
        ([], None, 0.0),
        ([42.0], None, 0.0),
        ([20.0, 0.0, 0.0, 0.0], None, 300.0),  # mean 5, slot 0 is 15 above it
        ([30.0, 10.0], [3.0, 1.0], 0.0),  # utilisation 10 and 10
        ([10.0, 10.0], [2.0, 1.0], 50.0),  # utilisation 5 and 10, mean 20/3: |10 - 20/3| / (20/3)
        ([6.0, 3.0, 3.0], None, 50.0),  # mean 4: both 6 and 3 deviate, 6 by more
    ],
)
def test_load_distance_table(
    loads: list[float], capacity: list[float] | None, distance: float
) -> None:
    cap = None if capacity is None else np.array(capacity)
    assert load_distance(np.array(loads, dtype=float), cap) == pytest.approx(distance)


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=10), st.floats(1e-3, 1e3),
       st.randoms(use_true_random=False))
def test_load_distance_is_scale_and_order_invariant(
    loads: list[float], scale: float, rnd: Any
) -> None:
    arr = np.array(loads)
    base = load_distance(arr)
    assert base >= 0.0
    shuffled = list(loads)
    rnd.shuffle(shuffled)
    assert load_distance(np.array(shuffled)) == pytest.approx(base, rel=1e-9, abs=1e-9)
    if arr.sum() > 0:
        assert load_distance(arr * scale) == pytest.approx(base, rel=1e-6, abs=1e-6)
        mean = arr.mean()
        assert base == pytest.approx(np.abs(arr - mean).max() / mean * 100, rel=1e-9)


def test_snapshot_slot_load_and_capacity() -> None:
    snap = LoadSnapshot(batch_id=3, key_group_load=np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    table = RoutingTable(0, (0, 2, 2, 0, 2), num_slots=4)
    assert snap.num_key_groups == 5
    assert snap.slot_load(table).tolist() == [5.0, 0.0, 10.0, 0.0]
    assert snap.slot_capacity(4).tolist() == [1.0] * 4
    fast = dataclasses.replace(snap, capacity=np.array([2.0, 1.0]))
    assert fast.slot_capacity(2).tolist() == [2.0, 1.0]


def test_plan_changes_routing() -> None:
    assert not Plan(PlanStatus.UNCHANGED).changes_routing
    assert Plan(PlanStatus.FEASIBLE, moves=(Move(0, 0, 1),)).changes_routing
    assert Plan(PlanStatus.FEASIBLE, num_slots=3).changes_routing
    assert math.isclose(Plan(PlanStatus.OPTIMAL).objective, 0.0)
