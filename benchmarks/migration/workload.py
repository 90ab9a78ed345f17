"""The flights stream as Ding et al. use their tweets: tasks, node counts and the MTM (§6).

- *Tasks.* The operator keeps one aggregate per route (origin → destination), as word count keeps
  one counter per word. A route's id (its rank among the sorted route names) is hashed to one of
  ``m`` tasks with elastream's splitmix64 (``hashing.choice``, seed 0). A task's *work* is the
  flights of its routes per hour over the training month (tuples/hour); its *state* is the
  number of distinct routes seen in it that month (aggregates held; the migration cost unit).
- *Node counts.* "We partition time into intervals, each with the duration of one hour. Then, we
  count the number of tweets in each time interval, and allocate nodes proportional to the
  number of tweets. The number of nodes is normalized into the range of [8, 16]": hourly flight
  counts of May and June 2001 mapped linearly onto 8–16 (rounded; the minimum and maximum over
  both months). A change between adjacent hours is a migration.
- *MTM.* "For each possible number of nodes n, we count the number of times we migrate from n
  nodes to n′ nodes, for all n′, using data from the previous month": May's migrations, rows
  normalised; a count May never migrates from gets a uniform row over the other counts.
  Row/column ``i`` is ``i + 1`` nodes (16 × 16, rows 1–7 empty).
- *Evaluation.* The first ``migrations`` (default 100, the paper's) migrations of June.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from elastream.algorithms.grouping.hashing import choice
from elastream.workloads.flights import flights_path, verify_flights

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/common.py
from common import data_dir

TRAIN_MONTH = 5
EVAL_MONTH = 6
LOW, HIGH = 8, 16


@dataclass(frozen=True)
class Stream:
    """The flights reduced to what the benchmark needs (loaded once)."""

    route: np.ndarray
    """Route id of every flight of the training month."""
    routes: int
    hours_train: int
    nodes_train: np.ndarray
    nodes_eval: np.ndarray
    hourly_counts: pd.Series


def load(folder: str | None = None) -> Stream:
    """Read and verify ``flights-3m.parquet`` in ``folder`` (default: the one cache,
    ``common.data_dir()``; never downloads); May and June 2001."""
    path = flights_path(folder if folder is not None else data_dir())
    verify_flights(path)
    table = pq.read_table(path, columns=["date", "origin", "destination"]).to_pandas()
    month = table["date"].dt.month
    table = table[month.isin([TRAIN_MONTH, EVAL_MONTH])]
    names = table["origin"].astype(str) + "-" + table["destination"].astype(str)
    codes, _ = pd.factorize(names, sort=True)
    hours = table["date"].dt.floor("h")
    span = pd.date_range(f"2001-{TRAIN_MONTH:02d}-01", f"2001-{EVAL_MONTH + 1:02d}-01",
                         freq="h", inclusive="left")
    counts = hours.value_counts().reindex(span, fill_value=0).sort_index()
    low, high = counts.min(), counts.max()
    nodes = (LOW + np.rint((HIGH - LOW) * (counts - low) / (high - low))).astype(np.int64)
    train = (counts.index.month == TRAIN_MONTH)
    in_train = (table["date"].dt.month == TRAIN_MONTH).to_numpy()
    return Stream(route=codes[in_train], routes=int(codes.max()) + 1,
                  hours_train=int(train.sum()), nodes_train=nodes[train].to_numpy(),
                  nodes_eval=nodes[~train].to_numpy(), hourly_counts=counts)


def tasks(stream: Stream, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(work, state)`` of ``m`` tasks: flights per hour and distinct routes of each."""
    task_of_route = choice(np.arange(stream.routes), m, seed=0)
    flights = np.bincount(stream.route, minlength=stream.routes)
    work = np.bincount(task_of_route, weights=flights, minlength=m) / stream.hours_train
    seen = flights > 0
    state = np.bincount(task_of_route[seen], minlength=m).astype(float)
    return work, state


def transition_matrix(nodes: np.ndarray, size: int = HIGH) -> np.ndarray:
    """MTM of the migrations in an hourly node-count sequence (module docstring)."""
    counts = np.zeros((size, size))
    change = np.flatnonzero(nodes[1:] != nodes[:-1])
    np.add.at(counts, (nodes[change] - 1, nodes[change + 1] - 1), 1)
    for c in range(LOW, HIGH + 1):
        if counts[c - 1].sum() == 0:
            counts[c - 1, LOW - 1:HIGH] = 1
            counts[c - 1, c - 1] = 0
    rows = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, rows, out=np.zeros_like(counts), where=rows > 0)


def migrations(nodes: np.ndarray, limit: int) -> tuple[int, list[int]]:
    """The starting count and the next ``limit`` counts the sequence migrates to."""
    change = np.flatnonzero(nodes[1:] != nodes[:-1]) + 1
    return int(nodes[0]), [int(nodes[i]) for i in change[:limit]]
