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
was cut from, and it is written to a temporary name and renamed into place, so a retried batch
writes the same file; the sender's state drops the group in the same batch (a failed batch
rolls both back). The receiver may read a file any number of times until its batch commits, so
files are deleted only by the driver, and only those whose receipt it saw *before* a batch that
then committed (:meth:`MigrationStore.collect`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

UPTO = b"elastream.upto"
"""Schema metadata: windows ending at or before this (epoch ms) were emitted by the sender."""
SENDER = b"elastream.sender"
"""Schema metadata: ``"slot batch"`` of the sender (batch -1 outside a streaming query)."""
FAULT = "FAULT"
"""Fault injection trigger (:meth:`MigrationStore.fault_point`)."""
TARGET = "target.json"
"""Where a scaling job's key groups are headed (survives a restart)."""
LEDGER = "acknowledged.txt"
"""Collected receipts, one ``version kg`` line each."""
_RECEIPT = re.compile(r"^v(\d+)-kg(\d+)$")


@dataclass(frozen=True)
class HandOff:
    """A completed hand-off, and where it went.

    Key group ``kg``, moved at routing ``version``, left slot ``source`` with the state cut in
    micro-batch ``sent`` and was merged by slot ``target`` in micro-batch ``taken`` (-1: not
    known, e.g. outside a streaming query, or taken over before these were recorded).
    """

    version: int
    kg: int
    source: int = -1
    sent: int = -1
    target: int = -1
    taken: int = -1


class MigrationStore:
    """Hand-off files and receipts under one directory (``<output>/_migration``)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path(self, version: int, kg: int) -> Path:
        """The hand-off file of ``kg`` moved at ``version``."""
        return self.directory / f"v{version:08d}" / f"kg{kg}.arrow"

    def receipt(self, version: int, kg: int) -> Path:
        """The receipt the receiver writes once it merged that hand-off."""
        return self.directory / "receipts" / f"v{version}-kg{kg}"

    def hand_off(self, version: int, kg: int, parts: pd.DataFrame, upto: int, *,
                 slot: int = -1, batch: int | None = None) -> None:
        """Write ``kg``'s partials (and its emitted-up-to mark) atomically.

        ``slot``, ``batch``: the sender and its micro-batch (a retry writes the same bytes).
        """
        table = pa.Table.from_pandas(parts, preserve_index=False)
        sender = f"{slot} {-1 if batch is None else batch}"
        table = table.replace_schema_metadata({UPTO: str(upto).encode(),
                                               SENDER: sender.encode()})
        target = self.path(version, kg)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, target)

    def fault_point(self) -> None:
        """Fail once here if the file ``FAULT`` exists (it is removed): fault injection.

        Lets a test (or a chaos run) crash a batch right after a hand-off was written and before
        the sender's state dropped it — the worst moment for exactly-once.
        """
        trigger = self.directory / FAULT
        if trigger.exists():
            trigger.unlink(missing_ok=True)
            raise RuntimeError(f"elastream: injected fault after a hand-off ({trigger})")

    def take_over(self, version: int, kg: int) -> tuple[pd.DataFrame, int] | None:
        """The hand-off's partials and emitted-up-to mark, or ``None`` while it is not there."""
        source = self.path(version, kg)
        if not source.exists():
            return None
        with pa.OSFile(str(source), "rb") as handle, pa.ipc.open_stream(handle) as reader:
            table = reader.read_all()
        return table.to_pandas(), int((table.schema.metadata or {})[UPTO])

    def acknowledge(self, version: int, kg: int, *, slot: int = -1,
                    batch: int | None = None) -> None:
        """Write the receipt of a merged hand-off: sender, and receiver ``slot``, ``batch``."""
        path = self.receipt(version, kg)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_text(f"{self._sender(version, kg)} {slot} {-1 if batch is None else batch}")
        os.replace(tmp, path)

    def _sender(self, version: int, kg: int) -> str:
        """``"slot batch"`` of a hand-off's sender, read off its file's schema."""
        with contextlib.suppress(OSError, pa.ArrowInvalid):
            with pa.OSFile(str(self.path(version, kg)), "rb") as handle:
                metadata = pa.ipc.open_stream(handle).schema.metadata or {}
            return str(metadata.get(SENDER, b"-1 -1").decode())
        return "-1 -1"

    def hand_offs(self) -> list[HandOff]:
        """Every hand-off taken over, with where it went (receipts present, then the ledger)."""
        lines = []
        folder = self.directory / "receipts"
        for path in sorted(folder.iterdir()) if folder.exists() else ():
            name = _RECEIPT.match(path.name)
            if name:
                with contextlib.suppress(OSError):  # collected meanwhile: in the ledger now
                    lines.append(f"{name[1]} {name[2]} {path.read_text()}")
        lines += self._ledger()
        found: set[HandOff] = set()
        for line in lines:
            fields = [int(f) for f in line.split()]
            found.add(HandOff(*fields) if len(fields) == 6 else HandOff(*fields[:2]))
        return sorted(found, key=lambda h: (h.version, h.kg))

    def _ledger(self) -> list[str]:
        ledger = self.directory / LEDGER
        return ledger.read_text().splitlines() if ledger.exists() else []

    def receipts(self) -> set[tuple[int, int]]:
        """``(version, kg)`` of every receipt present."""
        folder = self.directory / "receipts"
        if not folder.exists():
            return set()
        found = (_RECEIPT.match(p.name) for p in folder.iterdir())
        return {(int(m[1]), int(m[2])) for m in found if m}

    def target(self) -> dict[str, Any] | None:
        """The driver's scaling target (``events`` planned so far, ``slot_of``), if any."""
        path = self.directory / TARGET
        return json.loads(path.read_text()) if path.exists() else None

    def save_target(self, target: dict[str, Any]) -> None:
        """Replace the scaling target atomically."""
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{TARGET}.tmp"
        tmp.write_text(json.dumps(target))
        os.replace(tmp, self.directory / TARGET)

    def acknowledged(self) -> set[tuple[int, int]]:
        """``(version, kg)`` of every hand-off taken over: receipts present or collected."""
        done = set()
        for line in self._ledger():
            version, kg = line.split()[:2]
            done.add((int(version), int(kg)))
        return done | self.receipts()

    def collect(self, receipts: set[tuple[int, int]]) -> None:
        """Delete these hand-offs and their receipts (call only after a later batch committed).

        They are first appended to the ledger (``version kg`` and the receipt's ``source sent
        target taken``), which keeps :meth:`acknowledged` and :meth:`hand_offs` complete.
        """
        if not receipts:
            return
        lines = []
        for version, kg in sorted(receipts):
            try:
                where = self.receipt(version, kg).read_text()
            except OSError:
                where = ""
            lines.append(f"{version} {kg} {where}".strip())
        with (self.directory / LEDGER).open("a") as ledger:
            ledger.writelines(f"{line}\n" for line in lines)
        for version, kg in receipts:
            self.path(version, kg).unlink(missing_ok=True)
            self.receipt(version, kg).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # other hand-offs of that version are in flight
                self.path(version, kg).parent.rmdir()
