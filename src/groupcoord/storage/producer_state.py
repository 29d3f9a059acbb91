"""Per-partition producer state: epochs, sequences, open transactions, the last stable offset.

Kafka's ``ProducerStateManager`` in small. For every producer id that wrote to the partition it
keeps the epoch, the last sequence and offset of its latest data batch, the coordinator epoch of
its latest marker, the first offset of its open transaction, if any, and its last five data
batches with sequences (what the broker's duplicate detection starts from after a restart,
:meth:`groupcoord.broker.state.Broker.producers_for`). From the open
transactions follows the **last stable offset** (LSO): the first offset of the earliest open
transaction, or the log end when none is open (a single node: the high watermark is the log
end). A read_committed consumer reads only below it.

A COMMIT or ABORT marker closes the producer's open transaction and yields a
:class:`CompletedTxn`; an aborted one becomes an :class:`~.txnindex.AbortedTxn` entry of the
segment holding the marker.

Snapshots: :func:`write_snapshot` stores the producers (not the aborted transactions, which live
in the ``.txnindex`` files) in ``<offset>.snapshot`` in Kafka's format (version 1), where the
offset is the log end offset the state is current at; :func:`read_snapshot` reads one back and
raises :class:`CorruptSnapshotError` for anything it cannot trust (short, bad version, bad
CRC-32C). The log writes one at each segment roll and at a clean close and, when it opens, loads
the newest and replays only the batches after it (see :mod:`groupcoord.storage.log`).

Kafka's snapshot layout (``ProducerStateManager.writeSnapshot``), big-endian: version int16 (1),
crc uint32 (CRC-32C of everything after it), then an int32 count of producer entries, each:
producer id int64, epoch int16, last sequence int32, last offset int64, offset delta int32
(last minus first sequence of the producer's last batch), timestamp int64, coordinator epoch
int32, first offset of the open transaction int64 (-1: none).
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import crc32c as _crc32c

from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import BatchHeader

from .control import ControlType, EndTxnMarker
from .txnindex import AbortedTxn

__all__ = [
    "RECENT_BATCHES",
    "SNAPSHOT_SUFFIX",
    "BatchSeq",
    "CompletedTxn",
    "CorruptSnapshotError",
    "ProducerEntry",
    "ProducerStateManager",
    "list_snapshots",
    "read_snapshot",
    "snapshot_path",
    "write_snapshot",
]

_SEQ_WRAP = 1 << 31
SNAPSHOT_SUFFIX = ".snapshot"
_SNAPSHOT_VERSION = 1
_SNAP_HEAD = struct.Struct(">hI")
_SNAP_COUNT = struct.Struct(">i")
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")  # 46 bytes
#: Data batches of its current epoch kept per producer for duplicate detection (Kafka's
#: ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``).
RECENT_BATCHES = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchSeq:
    """One data batch of an idempotent producer: its sequences, offsets and timestamp."""

    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(slots=True, kw_only=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    last_sequence: int = -1
    #: last offset of the producer's latest data batch (-1: none since its epoch began)
    last_offset: int = -1
    #: last minus first sequence of that batch (Kafka's ``offset_delta``)
    offset_delta: int = 0
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    #: first offset of the producer's open transaction on this partition
    current_txn_first_offset: int | None = None
    #: the producer's latest data batches with sequences, oldest first (at most
    #: :data:`RECENT_BATCHES`): every one appended or replayed since the log was opened; a
    #: snapshot holds only the last one (Kafka's format), so after a load from a snapshot that
    #: one alone is known, as in Kafka
    recent: deque[BatchSeq] = field(default_factory=lambda: deque(maxlen=RECENT_BATCHES), compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerStateManager:
    __slots__ = ("_aborted", "_ongoing", "_producers")

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._aborted: list[AbortedTxn] = []  # in marker order

    # -- queries -------------------------------------------------------------------------------
    def producer(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def producers(self) -> list[ProducerEntry]:
        return list(self._producers.values())

    def first_unstable_offset(self) -> int | None:
        return min(self._ongoing.values()) if self._ongoing else None

    def last_stable_offset(self, log_end_offset: int) -> int:
        first = self.first_unstable_offset()
        return log_end_offset if first is None else min(first, log_end_offset)

    def ongoing(self) -> dict[int, int]:
        return dict(self._ongoing)

    def aborted(self) -> list[AbortedTxn]:
        return list(self._aborted)

    def last_records(self) -> dict[int, tuple[int | None, int]]:
        """Per producer id: (last offset of its latest data batch or None, epoch), what the
        cleaner keeps so the producer's state survives compaction (Kafka's
        ``lastRecordsOfActiveProducers``)."""
        out: dict[int, tuple[int | None, int]] = {}
        for pid, e in self._producers.items():
            out[pid] = (e.last_offset if e.last_offset >= 0 else None, e.epoch)
        return out

    # -- loading -------------------------------------------------------------------------------
    def load_entries(self, entries: list[ProducerEntry]) -> None:
        """Start from a snapshot's producers (their open transactions included)."""
        for e in entries:
            if not e.recent and e.last_offset >= 0 and e.last_sequence >= 0:
                e.recent.append(
                    BatchSeq(
                        first_seq=(e.last_sequence - e.offset_delta) % _SEQ_WRAP,
                        last_seq=e.last_sequence,
                        base_offset=e.last_offset - e.offset_delta,
                        last_offset=e.last_offset,
                        max_timestamp=e.last_timestamp,
                    )
                )
            self._producers[e.producer_id] = e
            if e.current_txn_first_offset is not None:
                self._ongoing[e.producer_id] = e.current_txn_first_offset

    def set_aborted(self, aborted: list[AbortedTxn]) -> None:
        """The aborted transactions known before replay (read from the ``.txnindex`` files)."""
        self._aborted = list(aborted)

    def replace_aborted(self, lo: int, hi: int, keep: list[AbortedTxn]) -> None:
        """Replace the entries whose marker lies in ``[lo, hi)`` by ``keep`` (a cleaned
        segment's new index), keeping marker order."""
        out = [a for a in self._aborted if not lo <= a.last_offset < hi]
        out.extend(keep)
        out.sort(key=lambda a: a.last_offset)
        self._aborted = out

    def drop_aborted_below(self, offset: int) -> None:
        """Forget entries whose marker is below ``offset`` (their segment was deleted)."""
        self._aborted = [a for a in self._aborted if a.last_offset >= offset]

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[fetch_offset, upper_bound)`` (Kafka's
        ``collectAbortedTxns``): the marker at or past the fetch offset, the first offset below
        the bound."""
        return [a for a in self._aborted if a.last_offset >= fetch_offset and a.first_offset < upper_bound]

    # -- validation ----------------------------------------------------------------------------
    def check(self, h: BatchHeader) -> ErrorCode:
        """Whether a batch may be appended as far as epochs go (Kafka's ``ProducerAppendInfo``).

        A batch (data or marker) from an epoch older than the producer's current one is
        INVALID_PRODUCER_EPOCH: its producer has been fenced. Sequence numbers of idempotent
        producers are checked by the broker before the append.
        """
        if h.producer_id < 0:
            return ErrorCode.NONE
        entry = self._producers.get(h.producer_id)
        if entry is not None and h.producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        return ErrorCode.NONE

    # -- expiration ----------------------------------------------------------------------------
    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget the producers idle for ``expiration_ms`` or more at ``now_ms``; their ids.

        Kafka's ``ProducerStateManager.removeExpiredProducers`` for ``producer.id.expiration.ms``:
        a producer's age counts from the timestamp of its last batch or marker (the batch's max
        timestamp, not the time of the append), and a producer with a transaction open on this
        partition never expires. A forgotten producer's next batch is accepted at any sequence,
        as an unknown producer's is.
        """
        expired = [
            pid
            for pid, e in self._producers.items()
            if e.current_txn_first_offset is None and now_ms - e.last_timestamp >= expiration_ms
        ]
        for pid in expired:
            del self._producers[pid]
        return expired

    # -- updates -------------------------------------------------------------------------------
    def update(self, h: BatchHeader, marker: EndTxnMarker | None = None) -> CompletedTxn | None:
        """Account for a batch appended at ``h.base_offset`` (``marker``: its control record)."""
        pid = h.producer_id
        if pid < 0:
            return None
        entry = self._producers.get(pid)
        if entry is None:
            entry = self._producers[pid] = ProducerEntry(producer_id=pid, epoch=h.producer_epoch)
        elif h.producer_epoch > entry.epoch:
            entry.epoch = h.producer_epoch
            entry.last_sequence = -1  # a new epoch starts its sequences again
            entry.last_offset = -1  # and has written no data batch yet (Kafka clears its batches)
            entry.offset_delta = 0
            entry.recent.clear()
        entry.last_timestamp = h.max_timestamp
        if h.is_control:
            if marker is None:
                return None
            entry.coordinator_epoch = marker.coordinator_epoch
            first = entry.current_txn_first_offset
            entry.current_txn_first_offset = None
            if first is None:
                return None
            del self._ongoing[pid]
            done = CompletedTxn(
                producer_id=pid,
                first_offset=first,
                last_offset=h.base_offset,
                aborted=marker.type is ControlType.ABORT,
            )
            if done.aborted:
                lso = self.first_unstable_offset()
                self._aborted.append(
                    AbortedTxn(
                        producer_id=pid,
                        first_offset=first,
                        last_offset=h.base_offset,
                        last_stable_offset=h.base_offset + 1 if lso is None else lso,
                    )
                )
            return done
        if h.base_sequence >= 0:
            entry.last_sequence = (h.base_sequence + h.last_offset_delta) % _SEQ_WRAP
            entry.recent.append(
                BatchSeq(
                    first_seq=h.base_sequence,
                    last_seq=entry.last_sequence,
                    base_offset=h.base_offset,
                    last_offset=h.last_offset,
                    max_timestamp=h.max_timestamp,
                )
            )
        entry.last_offset = h.last_offset
        entry.offset_delta = h.last_offset_delta
        if h.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = h.base_offset
            self._ongoing[pid] = h.base_offset
        return None


# ----------------------------------------------------------------------------------------------
# Snapshots
# ----------------------------------------------------------------------------------------------


class CorruptSnapshotError(ValueError):
    """A ``.snapshot`` file that cannot be trusted."""


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def list_snapshots(directory: Path) -> list[tuple[int, Path]]:
    """(offset, path) of every snapshot file in ``directory``, oldest first."""
    out = []
    for p in directory.glob("*" + SNAPSHOT_SUFFIX):
        stem = p.name[: -len(SNAPSHOT_SUFFIX)]
        if stem.isdigit():
            out.append((int(stem), p))
    return sorted(out)


def encode_snapshot(producers: list[ProducerEntry]) -> bytes:
    body = bytearray(_SNAP_COUNT.pack(len(producers)))
    for e in sorted(producers, key=lambda e: e.producer_id):
        body += _SNAP_ENTRY.pack(
            e.producer_id,
            e.epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.last_timestamp,
            e.coordinator_epoch,
            -1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
        )
    return _SNAP_HEAD.pack(_SNAPSHOT_VERSION, _crc32c.crc32c(bytes(body))) + bytes(body)


def decode_snapshot(data: bytes) -> list[ProducerEntry]:
    if len(data) < _SNAP_HEAD.size + _SNAP_COUNT.size:
        raise CorruptSnapshotError(f"{len(data)} bytes is too short")
    version, crc = _SNAP_HEAD.unpack_from(data)
    if version != _SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"unknown version {version}")
    body = data[_SNAP_HEAD.size :]
    actual = _crc32c.crc32c(body)
    if actual != crc:
        raise CorruptSnapshotError(f"CRC-32C mismatch: stored {crc:#010x}, computed {actual:#010x}")
    (count,) = _SNAP_COUNT.unpack_from(body)
    if count < 0 or len(body) != _SNAP_COUNT.size + count * _SNAP_ENTRY.size:
        raise CorruptSnapshotError(f"{count} entries do not fit {len(body)} bytes")
    out = []
    for i in range(count):
        pid, epoch, seq, last, delta, ts, coord, txn_first = _SNAP_ENTRY.unpack_from(
            body, _SNAP_COUNT.size + i * _SNAP_ENTRY.size
        )
        out.append(
            ProducerEntry(
                producer_id=pid,
                epoch=epoch,
                last_sequence=seq,
                last_offset=last,
                offset_delta=delta,
                last_timestamp=ts,
                coordinator_epoch=coord,
                current_txn_first_offset=None if txn_first < 0 else txn_first,
            )
        )
    return out


def write_snapshot(directory: Path, offset: int, state: ProducerStateManager) -> Path:
    """Write ``<offset>.snapshot`` (fsynced, then renamed into place) and return its path."""
    path = snapshot_path(directory, offset)
    tmp = path.with_name(path.name + ".tmp")
    data = encode_snapshot(state.producers())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def read_snapshot(path: Path) -> list[ProducerEntry]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CorruptSnapshotError(str(exc)) from None
    return decode_snapshot(data)


def delete_snapshot(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
