"""The migration store: key-group state in flight between consolidate slots, beside the checkpoint.

Spark gives Python no way to move one key group's state between state partitions of a running
query (DESIGN.md), so the consolidate stage moves it itself (Ding et al. §3, the state store
serving states): the slot that loses key group ``kg`` at routing version ``v`` writes
``v{v}/kg{kg}.arrow`` — the group's pane partials and how far its windows were emitted — and
drops them from its state; the slot that gains it reads the file, merges it, and writes the
receipt ``receipts/v{v}-kg{kg}``. Each hand-off records where it went: the sending slot and the
micro-batch that cut the state (in the file), the receiving slot and the micro-batch that merged
it (in the receipt, and then in the ledger): :meth:`MigrationStore.hand_offs`.

Exactly once, across retries and restarts: a file's bytes depend only on the committed state it
was cut from, and it is written whole or not at all (:meth:`elastream.stores.filesystem.Folder.
write`: a temporary file renamed into place, or one upload to an object store), so a retried
batch writes the same file; the sender's state drops the group in the same batch (a failed batch
rolls both back). The receiver may read a file any number of times until its batch commits, so
files are deleted only by the driver, and only those whose receipt it saw *before* a batch that
then committed (:meth:`MigrationStore.collect`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from elastream.stores.filesystem import Folder, LocalFolder, folder

UPTO = b"elastream.upto"
"""Schema metadata: windows ending at or before this (epoch ms) were emitted by the sender."""
SENDER = b"elastream.sender"
"""Schema metadata: ``"slot batch"`` of the sender (batch -1 outside a streaming query)."""
FAULT = "FAULT"
"""Fault injection trigger (:meth:`MigrationStore.fault_point`)."""
TARGET = "target.json"
"""Where a scaling job's key groups are headed (survives a restart)."""
LEDGER = "acknowledged.txt"
"""Collected receipts, one ``version kg source sent target taken`` line each (published whole by
each collection)."""
_RECEIPT = re.compile(r"^v(\d+)-kg(\d+)$")


@dataclass(frozen=True)
class HandOff:
    """A completed hand-off, and where it went.

    Key group ``kg``, moved at routing ``version``, left slot ``source`` with the state cut in
    micro-batch ``sent`` and was merged by slot ``target`` in micro-batch ``taken`` (-1: not
    known, e.g. outside a streaming query), carrying ``rows`` parts (-1: not recorded).
    """

    version: int
    kg: int
    source: int = -1
    sent: int = -1
    target: int = -1
    taken: int = -1
    rows: int = -1


class MigrationStore:
    """Hand-off files and receipts under one folder (``<state>/_migration``): a path or a URI."""

    def __init__(self, directory: str | os.PathLike[str] | Folder) -> None:
        self.folder = folder(directory, option="directory")
        self.receipts_folder = self.folder / "receipts"

    @property
    def directory(self) -> Path | str:
        """The store's folder: a ``Path`` on the local disk, else its URI."""
        return self.folder.path if isinstance(self.folder, LocalFolder) else str(self.folder)

    def _version(self, version: int) -> Folder:
        return self.folder / f"v{version:08d}"

    def hand_off(self, version: int, kg: int, parts: pd.DataFrame, upto: int, *,
                 slot: int = -1, batch: int | None = None) -> None:
        """Write ``kg``'s partials (and its emitted-up-to mark) atomically.

        ``slot``, ``batch``: the sender and its micro-batch (a retry writes the same bytes).
        """
        table = pa.Table.from_pandas(parts, preserve_index=False)
        sender = f"{slot} {-1 if batch is None else batch}"
        table = table.replace_schema_metadata({UPTO: str(upto).encode(),
                                               SENDER: sender.encode()})
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        self._version(version).write(f"kg{kg}.arrow", sink.getvalue())

    def handed_off(self, version: int, kg: int) -> bool:
        """Whether the hand-off of ``kg`` moved at ``version`` is there."""
        return self._version(version).exists(f"kg{kg}.arrow")

    def fault_point(self) -> None:
        """Fail once here if the file ``FAULT`` exists (it is removed): fault injection.

        Lets a test (or a chaos run) crash a batch right after a hand-off was written and before
        the sender's state dropped it — the worst moment for exactly-once.
        """
        if self.folder.exists(FAULT):
            self.folder.delete(FAULT)
            raise RuntimeError(f"elastream: injected fault after a hand-off ({self.folder}/"
                               f"{FAULT})")

    def take_over(self, version: int, kg: int) -> tuple[pd.DataFrame, int] | None:
        """The hand-off's partials and emitted-up-to mark, or ``None`` while it is not there."""
        try:
            data = self._version(version).read_bytes(f"kg{kg}.arrow")
        except FileNotFoundError:
            return None
        with pa.ipc.open_stream(data) as reader:
            table = reader.read_all()
        return table.to_pandas(), int((table.schema.metadata or {})[UPTO])

    def acknowledge(self, version: int, kg: int, *, slot: int = -1,
                    batch: int | None = None, rows: int = -1) -> None:
        """Write the receipt of a merged hand-off: sender, receiver ``slot``, ``batch``, ``rows``.

        ``rows``: the parts the hand-off carried.
        """
        self.receipts_folder.write(
            f"v{version}-kg{kg}", f"{self._sender(version, kg)} {slot} "
                                  f"{-1 if batch is None else batch} {rows}")

    def _sender(self, version: int, kg: int) -> str:
        """``"slot batch"`` of a hand-off's sender, read off its file's schema."""
        try:
            data = self._version(version).read_bytes(f"kg{kg}.arrow")
        except FileNotFoundError:
            return "-1 -1"
        with pa.ipc.open_stream(data) as reader:
            return str((reader.schema.metadata or {}).get(SENDER, b"-1 -1").decode())

    def hand_offs(self) -> list[HandOff]:
        """Every hand-off taken over, with where it went (receipts present, then the ledger)."""
        found = dict(self._ledger_lines())
        for version, kg in self.receipts():
            try:
                found[(version, kg)] = self.receipts_folder.read_text(f"v{version}-kg{kg}")
            except FileNotFoundError:  # collected meanwhile: in the ledger now
                found.update(self._ledger_lines())
        return [HandOff(version, kg, *(int(f) for f in where.split()))
                for (version, kg), where in sorted(found.items())]

    def receipts(self) -> set[tuple[int, int]]:
        """``(version, kg)`` of every receipt present."""
        found = (_RECEIPT.match(name) for name in self.receipts_folder.names())
        return {(int(m[1]), int(m[2])) for m in found if m}

    def target(self) -> dict[str, Any] | None:
        """The driver's scaling target (``events`` planned so far, ``slot_of``), if any."""
        published = self.folder.latest(TARGET)
        return None if published is None else dict(json.loads(published))

    def save_target(self, target: dict[str, Any]) -> None:
        """Replace the scaling target atomically."""
        self.folder.publish(TARGET, json.dumps(target))

    def acknowledged(self) -> set[tuple[int, int]]:
        """``(version, kg)`` of every hand-off taken over: receipts present or collected."""
        return self._ledger() | self.receipts()

    def _ledger(self) -> set[tuple[int, int]]:
        return set(self._ledger_lines())

    def _ledger_lines(self) -> dict[tuple[int, int], str]:
        """``(version, kg)`` → ``"source sent target taken"`` of every collected hand-off."""
        published = self.folder.latest(LEDGER)
        lines = published.decode().splitlines() if published is not None else []
        return {(int(v), int(kg)): rest.strip() for v, kg, rest in
                (f"{line}  ".split(" ", 2) for line in lines)}

    def collect(self, receipts: set[tuple[int, int]]) -> None:
        """Delete these hand-offs and their receipts (call only after a later batch committed).

        They are first added to the ledger (published whole, by the driver alone), which keeps
        :meth:`acknowledged` complete.
        """
        if not receipts:
            return
        ledger = self._ledger_lines()
        for version, kg in receipts:
            try:
                ledger[(version, kg)] = self.receipts_folder.read_text(f"v{version}-kg{kg}")
            except FileNotFoundError:
                ledger.setdefault((version, kg), "")
        self.folder.publish(LEDGER, "".join(f"{v} {kg} {where}".rstrip() + "\n"
                                            for (v, kg), where in sorted(ledger.items())))
        for version, kg in receipts:
            self._version(version).delete(f"kg{kg}.arrow")
            self.receipts_folder.delete(f"v{version}-kg{kg}")
            self._version(version).prune()  # unless other hand-offs of it are in flight
