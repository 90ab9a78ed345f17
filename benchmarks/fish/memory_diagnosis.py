"""Where FISH's replicated state comes from on the 50 M-tuple Zipf stream (z = 1, 128 workers).

Routes the cached stream of run.py with FISH alone (no queues: memory and tuple counts do not
depend on them, since FISH's queue estimate never drains within T = 10 s of simulated time)
and reports, for the paper's parameters and for a longer counting window:

* memory ÷ FG (distinct key–worker pairs ÷ distinct keys) on the first 5, 10, 25 and 50 M
  tuples, showing how it grows with the stream;
* how many keys were ever classified hot (``|M|``) and the histogram of their ``M_k``, against
  the keys that really are hot in some part of the stream (rank probability > θ = 1/4n);
* execution time ÷ SG (busiest worker's tuples ÷ ⌈tuples / n⌉);
* the same for the per-tuple algorithm (``block=1``, which the tests check tuple for tuple
  against a plain reference) and the default blocks, on a short prefix (``--per-tuple``), to
  show that blocking does not cause what the first table shows.

    nice -n 10 .venv/bin/python benchmarks/fish/memory_diagnosis.py [--z 1.0] [--workers 128]
        [--tuples 50000000] [--per-tuple 200000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from streams import Stream, zipf_keys

from elastream.algorithms.grouping.registry import make_scheme
from elastream.runtimes.sim.cluster import DEFAULT_SERVICE_TIME
from elastream.workloads.zipf import PAPER_NUM_KEYS, PAPER_PERIOD, zipf_probabilities

WORK = Path(__file__).resolve().parent / "work"
VARIANTS = {"paper (α=0.2, epoch 1000)": {}, "epoch 10000": {"epoch": 10_000},
            "α=0.8": {"alpha": 0.8}}
PREFIXES = (5_000_000, 10_000_000, 25_000_000, 50_000_000)
CHUNK = 1 << 20


def truly_hot_keys(z: float, workers: int, tuples: int) -> int:
    """Keys per part with probability above θ = 1/4n, times the parts of the stream."""
    hot = int((zipf_probabilities(z, PAPER_NUM_KEYS) > 1 / (4 * workers)).sum())
    return hot * 2 * math.ceil(tuples / PAPER_PERIOD)  # two rankings per period


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--z", type=float, default=1.0)
    p.add_argument("--workers", type=int, default=128)
    p.add_argument("--tuples", type=int, default=50_000_000)
    p.add_argument("--per-tuple", type=int, default=200_000,
                   help="tuples of a 5 M stream routed per tuple (block=1) and in blocks")
    args = p.parse_args()
    keys = zipf_keys(Stream("zipf", args.tuples, z=args.z), WORK)
    n = args.workers
    times = np.arange(len(keys)) * (DEFAULT_SERVICE_TIME / (0.9 * n))
    prefixes = [k for k in PREFIXES if k <= len(keys)]
    print(f"z={args.z:g}, {n} workers, {len(keys):,} tuples; truly hot keys (≤, rank "
          f"probability > 1/4n in some part): {truly_hot_keys(args.z, n, len(keys)):,}\n")
    print("| variant | " + " | ".join(f"mem ÷ FG @ {k / 1e6:g} M" for k in prefixes)
          + " | exec ÷ SG | keys ever hot | M_k histogram |")
    print("|---|" + "---:|" * (len(prefixes) + 3))
    for label, params in VARIANTS.items():
        _row(label, keys, times, n, prefixes, params)
    short = zipf_keys(Stream("zipf", min(PAPER_PERIOD, args.tuples), z=args.z), WORK)
    short = short[:args.per_tuple]
    print(f"\nThe first {len(short):,} tuples, routed per tuple and in blocks:\n")
    print("| variant | mem ÷ FG | exec ÷ SG | keys ever hot | M_k histogram |")
    print("|---|---:|---:|---:|---:|")
    for label, params in (("per tuple (block=1)", {"block": 1}), ("blocks of 16384", {})):
        _row(label, short, times[:len(short)], n, [], params)


def _row(label: str, keys: np.ndarray, times: np.ndarray, n: int, prefixes: list[int],
         params: dict[str, int | float]) -> None:
    """Route ``keys`` with FISH(``params``) and print one table row."""
    started = time.perf_counter()
    fish = make_scheme("fish", n, service_time=DEFAULT_SERVICE_TIME, **params)
    workers = np.concatenate([fish.route(keys[s:s + CHUNK], times[s:s + CHUNK])
                              for s in range(0, len(keys), CHUNK)])
    pairs = keys * n + workers
    ratios = [len(np.unique(pairs[:k])) / len(np.unique(keys[:k]))
              for k in prefixes or [len(keys)]]
    busiest = np.bincount(workers, minlength=n).max() / math.ceil(len(keys) / n)
    memory = fish.memory
    values, counts = np.unique(memory.lookup(np.arange(PAPER_NUM_KEYS)), return_counts=True)
    histogram = ", ".join(f"{v}: {c}" for v, c in zip(values.tolist(), counts.tolist(),
                                                      strict=True) if v)
    print(f"| {label} | " + " | ".join(f"{r:.2f}" for r in ratios)
          + f" | {busiest:.3f} | {len(memory):,} | {histogram} |", flush=True)
    print(f"{label}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
