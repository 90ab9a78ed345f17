"""Traffic between key groups: cross-slot cost, collocation factor, load index."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.core.errors import OptionError
from elastream.core.traffic import (
    collocation_factor,
    cross_traffic,
    load_index,
    slot_loads,
)


def brute_force_loads(slot_of: list[int], load: list[float], traffic: list[list[float]],
                      cost: float, slots: int) -> list[float]:
    out = [0.0] * slots
    for kg, slot in enumerate(slot_of):
        out[slot] += load[kg]
    for a, b, rate in traffic:
        if slot_of[int(a)] != slot_of[int(b)]:
            out[slot_of[int(a)]] += cost * rate
            out[slot_of[int(b)]] += cost * rate
    return out


def test_slot_loads_equal_a_loop_on_random_jobs() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        groups, slots = int(rng.integers(1, 12)), int(rng.integers(1, 5))
        slot_of = rng.integers(0, slots, groups).tolist()
        load = rng.random(groups).tolist()
        traffic = [[int(rng.integers(groups)), int(rng.integers(groups)), float(rng.random())]
                   for _ in range(int(rng.integers(0, 10)))]
        got = slot_loads(slot_of, load, np.array(traffic).reshape(-1, 3), serialisation=0.3,
                         num_slots=slots)
        assert got == pytest.approx(brute_force_loads(slot_of, load, traffic, 0.3, slots))


def test_collocation_and_cross_traffic() -> None:
    traffic = np.array([[0, 1, 3.0], [2, 3, 1.0]])
    assert collocation_factor([0, 0, 0, 1], traffic) == 75.0
    assert cross_traffic([0, 0, 0, 1], traffic) == 1.0
    assert collocation_factor([0, 1], None) == 100.0
    assert load_index([5.0, 15.0], 20.0) == 50.0


@pytest.mark.parametrize("traffic", [[[0, 9, 1.0]], [[0, 1, -1.0]], [[0.5, 1, 1.0]], [[0, 1]]])
def test_bad_traffic_is_named(traffic: list[list[float]]) -> None:
    with pytest.raises(OptionError, match="traffic"):
        collocation_factor([0, 1], traffic)
