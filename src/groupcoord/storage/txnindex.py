"""The aborted-transaction index: ``<base offset>.txnindex`` beside each segment, Kafka's layout.

Each entry is 34 bytes, big-endian (Kafka's ``AbortedTxn``): version int16 (0), producer id
int64, first offset int64, last offset int64 (the ABORT marker's offset), last stable offset
int64 (the partition's LSO once the transaction was complete). An entry lives in the index of
the segment that holds its ABORT marker. Fetch with ``isolation_level=1`` returns the
(producer id, first offset) of each aborted transaction that overlaps the fetched range, so
the client drops that producer's records from the first offset until the marker.
"""

from __future__ import annotations

import contextlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TXN_INDEX_SUFFIX", "AbortedTxn", "read_txn_index", "write_txn_index"]

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(0, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


def read_txn_index(path: Path) -> list[AbortedTxn]:
    """The entries of ``path`` (none if absent); a torn last entry is ignored."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out: list[AbortedTxn] = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != 0:
            break
        out.append(AbortedTxn(producer_id=pid, first_offset=first, last_offset=last, last_stable_offset=lso))
    return out


def append_txn_index(path: Path, entry: AbortedTxn) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, entry.encode())
    finally:
        os.close(fd)


def write_txn_index(path: Path, entries: list[AbortedTxn]) -> None:
    """Replace ``path`` with ``entries`` (removed when there are none)."""
    if not entries:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(b"".join(e.encode() for e in entries))
    os.replace(tmp, path)
