"""A consolidation slot's window state, one entry per key group, read and written as needed.

The parts of each key group (pane partials and reusable shorter windows, see
:mod:`elastream.algorithms.windows.assemble`) are one Arrow IPC blob in a ``MapState`` keyed by
the key group. A micro-batch reads only the key groups it needs (those that received
partials, have windows to emit, or move) and writes back only those it changed, so with
RocksDB's changelog checkpoints a batch costs what changed, not what the slot holds. Within
one handler call, entries are read at most once and written at most once (:meth:`flush`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming.stateful_processor import MapState
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

KEY_SCHEMA = StructType([StructField("kg", LongType())])
VALUE_SCHEMA = StructType([StructField("blob", BinaryType())])


def to_blob(parts: pd.DataFrame | pa.Table) -> bytes:
    """One key group's parts as Arrow IPC bytes."""
    table = parts if isinstance(parts, pa.Table) else pa.Table.from_pandas(
        parts, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def from_blobs(blobs: Iterable[bytes]) -> pa.Table | None:
    """The parts of several key groups as one table (``None`` for none)."""
    tables = [pa.ipc.open_stream(blob).read_all() for blob in blobs]
    return pa.concat_tables(tables) if tables else None


class KeyGroupParts:
    """The ``MapState`` of one slot's key-group parts, with a per-call cache.

    ``reads`` / ``writes`` count entries fetched from and written to (or removed from) the
    state store in this call.
    """

    def __init__(self, state: MapState, empty: pd.DataFrame) -> None:
        self.state = state
        self.empty = empty
        self.cache: dict[int, pd.DataFrame] = {}
        self.dirty: set[int] = set()
        self.reads = 0
        self.writes = 0

    def begin(self) -> None:
        """Start a handler call: nothing cached."""
        self.cache.clear()
        self.dirty.clear()
        self.reads = self.writes = 0

    def get(self, kgs: Iterable[int], held: set[int]) -> pd.DataFrame:
        """The parts of ``kgs`` (with ``kg``), reading those in ``held`` not yet cached."""
        wanted = [int(k) for k in kgs]
        missing = [k for k in wanted if k in held and k not in self.cache]
        if missing:
            self.reads += len(missing)
            blobs = self._blobs(missing, held)
            table = from_blobs(blobs)
            frame = self.empty if table is None else table.to_pandas()
            self.cache.update(split_by_kg(frame, missing, self.empty))
        frames = [self.cache[k] for k in wanted if k in self.cache and not self.cache[k].empty]
        return pd.concat(frames, ignore_index=True) if frames else self.empty.copy()

    def _blobs(self, kgs: list[int], held: set[int]) -> list[bytes]:
        """The stored blobs of ``kgs``: one lookup each, or, for most of ``held``, one scan.

        (A scan fetches the entries in a few Arrow batches; a lookup is a round trip each.)
        """
        if 2 * len(kgs) < len(held):
            values = (self.state.getValue((kg,)) for kg in kgs)
            return [value[0] for value in values if value is not None]
        wanted = set(kgs)
        return [value[0] for key, value in self.state.iterator() if int(key[0]) in wanted]

    def append(self, new: pd.DataFrame, held: set[int]) -> None:
        """Add ``new`` parts to the entries of their key groups."""
        kgs = np.unique(new["kg"].to_numpy())
        self.put(pd.concat([self.get(kgs, held), new], ignore_index=True), kgs)

    def put(self, parts: pd.DataFrame, kgs: Iterable[int]) -> None:
        """Replace the parts of every key group of ``kgs`` by its rows of ``parts``."""
        kgs = [int(k) for k in kgs]
        self.cache.update(split_by_kg(parts, kgs, self.empty))
        self.dirty.update(kgs)

    def flush(self, held: set[int]) -> None:
        """Write the changed entries (remove the emptied ones); ``held`` follows.

        The changed key groups' parts become one Arrow table, written per key group as slices.
        """
        changed = sorted(self.dirty)
        kept = [kg for kg in changed if not self.cache[kg].empty]
        table = pa.Table.from_pandas(pd.concat([self.cache[kg] for kg in kept],
                                               ignore_index=True), preserve_index=False
                                     ) if kept else None
        offset = 0
        for kg in changed:
            rows = len(self.cache[kg])
            if rows == 0:
                if kg in held:
                    self.state.removeKey((kg,))
                    self.writes += 1
                held.discard(kg)
                continue
            assert table is not None
            self.state.updateValue((kg,), (to_blob(table.slice(offset, rows)),))
            offset += rows
            self.writes += 1
            held.add(kg)
        self.dirty.clear()


def split_by_kg(parts: pd.DataFrame, kgs: list[int], empty: pd.DataFrame
                ) -> dict[int, pd.DataFrame]:
    """``parts`` split into one frame per key group of ``kgs`` (empty where it has no rows)."""
    out = {kg: empty for kg in kgs}
    if parts.empty:
        return out
    order = np.argsort(parts["kg"].to_numpy(), kind="stable")
    ordered = parts.iloc[order].reset_index(drop=True)
    values = ordered["kg"].to_numpy()
    bounds = np.flatnonzero(np.diff(values)) + 1
    for start, stop in zip(np.r_[0, bounds], np.r_[bounds, len(values)], strict=True):
        kg = int(values[start])
        if kg in out:
            out[kg] = ordered.iloc[start:stop].reset_index(drop=True)
    return out
