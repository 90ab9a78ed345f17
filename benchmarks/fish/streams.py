"""The key streams the FISH benchmark routes: time-evolving Zipf (cached) and the real flights.

Zipf: :func:`elastream.workloads.zipf.time_evolving_zipf` over 10^5 keys with the paper's
period N = 5 M tuples (0.8 N tuples under one ranking of the keys, 0.2 N under another, then a
new period). A stream shorter than N is one shortened period (switch at 0.8 of its length).
Since each period draws from the generator in order, the first 5 M tuples of the 50 M stream of
a seed *are* the 5 M stream of that seed. Generated arrays are cached as int32 ``.npy`` files
under ``work/`` and checked against a freshly generated prefix when loaded, so a cache written
by another version of the generator is regenerated rather than silently reused.

Flights: the 3 M US flights of January–June 2001 in time order (``common.flights_file()``),
keyed by ``origin`` (229 airports) or by ``route`` = origin + destination (3 399 routes).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from elastream.workloads.zipf import PAPER_NUM_KEYS, PAPER_PERIOD, time_evolving_zipf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import flights_file

FLIGHT_KEYS = ("origin", "route")
CHECKED_PREFIX = 1000


@dataclass(frozen=True)
class Stream:
    """One key stream: ``zipf`` (skew ``z``, ``seed``) or ``flights`` (key column ``key``)."""

    kind: str
    tuples: int
    z: float | None = None
    seed: int = 0
    key: str | None = None

    @property
    def label(self) -> str:
        if self.kind == "flights":
            return f"flights:{self.key}"
        return f"zipf z={self.z:g} n={self.tuples:,} seed={self.seed}"


def zipf_period(tuples: int) -> int:
    """The paper's N = 5 M, or the whole stream when it is shorter."""
    return min(tuples, PAPER_PERIOD)


def _generate(stream: Stream, tuples: int) -> np.ndarray:
    assert stream.z is not None
    return time_evolving_zipf(tuples, z=stream.z, num_keys=PAPER_NUM_KEYS, seed=stream.seed,
                              period=zipf_period(stream.tuples))


def zipf_keys(stream: Stream, work: Path) -> np.ndarray:
    """The Zipf stream's keys (int64), from the cache in ``work`` or generated and cached."""
    path = work / f"zipf-z{stream.z:g}-n{stream.tuples}-s{stream.seed}.npy"
    prefix = _generate(stream, min(CHECKED_PREFIX, stream.tuples))
    if path.exists():
        cached = np.load(path)
        if len(cached) == stream.tuples and np.array_equal(cached[:len(prefix)], prefix):
            return cached.astype(np.int64)
    keys = _generate(stream, stream.tuples)
    work.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part.npy")
    np.save(partial, keys.astype(np.int32))  # 10^5 keys fit; half the disk and load time
    os.replace(partial, path)
    return keys


def flight_keys(key: str) -> np.ndarray:
    """Integer codes (first appearance order) of the flights' ``origin`` or ``route``."""
    table = pq.read_table(flights_file(), columns=["date", "origin", "destination"])
    frame = table.to_pandas()
    if not frame["date"].is_monotonic_increasing:
        frame = frame.sort_values("date", kind="stable")
    values = frame["origin"] if key == "origin" else frame["origin"] + "-" + frame["destination"]
    codes, _ = pd.factorize(values)
    return codes.astype(np.int64)


class Streams:
    """Loads streams on demand and keeps only the last one in memory (50 M keys = 400 MB)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self._last: tuple[Stream, np.ndarray] | None = None

    def keys(self, stream: Stream) -> np.ndarray:
        if self._last is None or self._last[0] != stream:
            self._last = None  # free the previous array before building the next
            if stream.kind == "flights":
                assert stream.key is not None
                keys = flight_keys(stream.key)
            else:
                keys = zipf_keys(stream, self.work)
            self._last = (stream, keys)
        return self._last[1]
