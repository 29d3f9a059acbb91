"""Compaction (``cleanup.policy=compact``): keep only the latest record of each key.

:class:`LogCleaner` runs one pass over a log's rolled segments. It reads them through descriptors
of its own and without the log's lock, writes each cleaned segment under ``.cleaned`` names, and
asks the log to swap it in (under the lock) only if that segment is still part of the log and
unchanged, so retention, truncation and record deletion may run meanwhile. At most one pass runs
at a time per log. Offsets never move: a batch that loses records is rewritten with its original
base offset and last offset delta; a batch that loses all its records is dropped. Tombstones stay
until ``delete.retention.ms`` after their timestamp.

Transactions (Kafka's ``LogCleaner.cleanInto`` / ``CleanedTransactionMetadata``):

* Only rolled segments wholly below the first open transaction (the last stable offset) are
  cleaned, so every transaction in them is decided.
* Records of aborted transactions (known from the aborted-transaction index) are removed and
  never enter the key map, so they cannot shadow an older committed value.
* A COMMIT or ABORT marker stays while the pass still reads any batch of its transaction. The
  first pass that reads none sets the batch's delete horizon (now + ``delete.retention.ms``, in
  the base timestamp with attribute bit 6, Kafka's KIP-534 layout); a pass after the horizon
  removes the marker. So an aborted transaction's data goes in one pass and its marker at least
  ``delete.retention.ms`` later, and a read_committed consumer that read the data before the
  clean still finds the marker.
* The batch holding a producer's last data offset (or, when its epoch has none, its last marker)
  is kept even when all its records go, as a header with no records, so the producer's epoch and
  sequence survive a reload.
* A cleaned segment's ``.txnindex`` keeps only the aborted transactions whose data the pass still
  read there.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from groupcoord.formats.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    BatchHeader,
    CorruptBatchError,
    Record,
    decode_records,
    encode_batch,
    parse_header,
)

from .control import ControlType, EndTxnMarker, decode_marker
from .segment import CLEANED_SUFFIX, Segment, read_batches, write_all
from .txnindex import AbortedTxn

log = logging.getLogger(__name__)

__all__ = [
    "ATTR_DELETE_HORIZON",
    "CleanableLog",
    "CompactionReport",
    "LogCleaner",
    "TxnCleanState",
    "clean_segment",
    "delete_horizon",
    "key_map",
]

#: Batch attribute bit 6: the base timestamp holds the batch's delete horizon (KIP-534).
ATTR_DELETE_HORIZON = 0x40


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionReport:
    segments_cleaned: int
    records_removed: int
    tombstones_removed: int
    bytes_before: int
    bytes_after: int
    #: True when the pass was skipped: no segment rolled, changed or had a tombstone expire since
    #: the last complete pass.
    skipped: bool = False


class CleanableLog(Protocol):
    """What a pass needs from the log it cleans."""

    def rolled_segments(self, *, check_open: bool) -> list[tuple[Segment, int]]:
        """(segment, size) of every rolled segment, taken under the log's lock."""
        ...

    def transactions_for_cleaner(self) -> tuple[list[AbortedTxn], dict[int, tuple[int | None, int]]]:
        """Aborted transactions, and per producer (last data offset or None, epoch)."""
        ...

    def swap_cleaned(self, seg: Segment, size: int, new: Segment, aborted: list[AbortedTxn]) -> bool:
        """Put ``new`` in place of ``seg`` if that is still a rolled segment of size ``size``;
        ``aborted`` are the entries its ``.txnindex`` keeps."""
        ...


class TxnCleanState:
    """What one pass knows about transactions as it reads batches in offset order (Kafka's
    ``CleanedTransactionMetadata``)."""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self._pending = sorted(aborted, key=lambda a: a.first_offset)
        self._next = 0
        self._committed: set[int] = set()  # producers with a (non-aborted) batch read, marker not yet
        self._aborted: dict[int, tuple[AbortedTxn, bool]] = {}  # pid -> (entry, data read?)

    def _reach(self, offset: int) -> None:
        while self._next < len(self._pending) and self._pending[self._next].first_offset <= offset:
            a = self._pending[self._next]
            self._aborted.setdefault(a.producer_id, (a, False))
            self._next += 1

    def on_batch(self, h: BatchHeader) -> bool:
        """A data batch: True when it belongs to an aborted transaction (its records go)."""
        self._reach(h.last_offset)
        if not h.is_transactional:
            return False
        found = self._aborted.get(h.producer_id)
        if found is not None:
            self._aborted[h.producer_id] = (found[0], True)
            return True
        self._committed.add(h.producer_id)
        return False

    def on_marker(
        self, h: BatchHeader, marker: EndTxnMarker | None, *, empty: bool = False
    ) -> tuple[bool, AbortedTxn | None]:
        """A control batch: (may it go, the index entry the cleaned segment keeps for it). An
        empty one was cleaned before and may go; an unknown control record stays."""
        self._reach(h.last_offset)
        if empty:
            return True, None
        if marker is None:
            return False, None
        if marker.type is ControlType.ABORT:
            found = self._aborted.pop(h.producer_id, None)
            if found is not None and found[1]:
                return False, found[0]  # data of the transaction is still there
            return True, None
        if h.producer_id in self._committed:
            self._committed.discard(h.producer_id)
            return False, None
        return True, None


def delete_horizon(h: BatchHeader) -> int | None:
    """The delete horizon a batch carries (KIP-534), or None."""
    return h.base_timestamp if h.attributes & ATTR_DELETE_HORIZON else None


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanedSegment:
    """What :func:`clean_segment` made of one segment."""

    #: the cleaned bytes, or None when nothing changes
    data: bytes | None
    records_removed: int
    tombstones_removed: int
    #: timestamp of the oldest tombstone kept
    oldest_tombstone: int | None
    #: entries the segment's ``.txnindex`` keeps
    aborted: list[AbortedTxn]
    #: earliest delete horizon of a marker kept, when one is set
    next_horizon: int | None
    #: the pass removed transactional data or set a horizon: a later pass can remove markers
    txn_progress: bool


class LogCleaner:
    """Compaction passes over one log (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._lock = threading.Lock()
        # (delete.retention.ms, rolled segments' (base, size), producers' last batches) after
        # the last complete pass, and the time its oldest kept tombstone or marker expires: a
        # pass before either changes is skipped.
        self._mark: tuple[object, int | None] | None = None

    def compact(
        self,
        plog: CleanableLog,
        now_ms: int,
        *,
        delete_retention_ms: int,
        index_interval_bytes: int,
        min_compaction_lag_ms: int = 0,
    ) -> CompactionReport:
        """One pass; skipped when nothing changed since the last complete one.

        With ``min_compaction_lag_ms``, the pass stops before the first rolled segment holding a
        record younger than that (:meth:`Segment.largest_timestamp`): neither that segment nor
        any after it is cleaned or read for the key map, so no record is removed for a newer one
        still inside the lag (Kafka's ``LogCleanerManager.cleanableOffsets``, the first
        uncleanable dirty offset).
        """
        nothing = CompactionReport(
            segments_cleaned=0, records_removed=0, tombstones_removed=0, bytes_before=0, bytes_after=0
        )
        with self._lock:
            rolled = plog.rolled_segments(check_open=True)
            if not rolled:
                return nothing
            aborted, last_records = plog.transactions_for_cleaner()
            producers = frozenset(last_records.items())  # a newer batch frees a producer's old one
            signature = (
                delete_retention_ms,
                min_compaction_lag_ms,
                tuple((s.base_offset, size) for s, size in rolled),
                producers,
            )
            mark = self._mark
            if mark is not None and mark[0] == signature and (mark[1] is None or now_ms < mark[1]):
                return replace(nothing, skipped=True)
            snapshot, ripe = _outside_lag(rolled, now_ms, min_compaction_lag_ms)
            due: int | None = ripe  # when a kept tombstone or marker may go, or a young segment ages
            if not snapshot:
                self._mark = (signature, due)
                return nothing
            latest = key_map(snapshot, aborted)
            horizon = now_ms - delete_retention_ms
            txn = TxnCleanState(aborted)
            cleaned = removed = tombstones = before = after = 0
            complete = True
            for seg, size in snapshot:
                end = seg.next_offset
                out = clean_segment(
                    seg,
                    size,
                    latest,
                    horizon,
                    txn=txn,
                    last_records=last_records,
                    now_ms=now_ms,
                    delete_retention_ms=delete_retention_ms,
                    indexed=[a for a in aborted if seg.base_offset <= a.last_offset < end],
                )
                for when in (
                    None if out.oldest_tombstone is None else out.oldest_tombstone + delete_retention_ms + 1,
                    out.next_horizon,
                ):
                    if when is not None and (due is None or when < due):
                        due = when
                if out.txn_progress:
                    complete = False  # markers may go on the next pass (Kafka's two passes)
                if out.data is None:
                    continue
                new = self._write_cleaned(seg, out.data, index_interval_bytes)
                if new is not None and plog.swap_cleaned(seg, size, new, out.aborted):
                    cleaned += 1
                    removed += out.records_removed
                    tombstones += out.tombstones_removed
                    before += size
                    after += len(out.data)
                else:
                    complete = False
            rolled_after = plog.rolled_segments(check_open=False)
            if {s.base_offset for s, _ in rolled_after} - {s.base_offset for s, _ in rolled}:
                # a segment rolled while this pass ran: it is in the log's signature but was not
                # cleaned, so the pass must not mark that signature as done
                complete = False
            after_signature = (
                delete_retention_ms,
                min_compaction_lag_ms,
                tuple((s.base_offset, size) for s, size in rolled_after),
                producers,
            )
            self._mark = (after_signature, due) if complete else None
            if cleaned:
                log.info(
                    "log %s compacted %d segments: %d records removed (%d tombstones), %d -> %d bytes",
                    self.dir,
                    cleaned,
                    removed,
                    tombstones,
                    before,
                    after,
                )
            return CompactionReport(
                segments_cleaned=cleaned,
                records_removed=removed,
                tombstones_removed=tombstones,
                bytes_before=before,
                bytes_after=after,
            )

    def _write_cleaned(self, seg: Segment, data: bytes, interval: int) -> Segment | None:
        """The cleaned segment and its indexes, written and fsynced under ``.cleaned`` names (no
        lock held); None when the partition was deleted meanwhile."""
        try:
            new = Segment(self.dir, seg.base_offset, seg.created_ms, suffix=CLEANED_SUFFIX)
        except FileNotFoundError:
            return None
        try:
            os.ftruncate(new.fd, 0)
            write_all(new.fd, data, 0)
            new.size = len(data)
            new.rebuild(interval, validate=False)
            new.seal()
            new.fsync()
            new.release_index_fds()
        except BaseException:
            new.delete_files()
            raise
        return new


def _outside_lag(
    rolled: list[tuple[Segment, int]], now_ms: int, min_compaction_lag_ms: int
) -> tuple[list[tuple[Segment, int]], int | None]:
    """The rolled segments a pass may clean under ``min.compaction.lag.ms``: those before the
    first one whose newest record is younger than the lag; and when that one ages out of it."""
    if min_compaction_lag_ms <= 0:
        return rolled, None
    for i, (seg, _size) in enumerate(rolled):
        newest = seg.largest_timestamp()
        if newest > now_ms - min_compaction_lag_ms:
            return rolled[:i], newest + min_compaction_lag_ms
    return rolled, None


def key_map(snapshot: list[tuple[Segment, int]], aborted: list[AbortedTxn] | None = None) -> dict[bytes, int]:
    """Latest offset of each key in the segments; records of aborted transactions and control
    records do not count (Kafka's ``buildOffsetMapForSegment``)."""
    latest: dict[bytes, int] = {}
    txn = TxnCleanState(aborted or [])
    for seg, size in snapshot:
        try:
            fd = os.open(seg.log_path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            for _pos, view in read_batches(fd, 0, size):
                h = parse_header(view)
                if h.is_control:
                    txn.on_marker(h, _marker(h, view))
                    continue
                if txn.on_batch(h):
                    continue
                for r in decode_records(view):
                    if r.key is not None:
                        latest[r.key] = r.offset
        finally:
            os.close(fd)
    return latest


def _marker(h: BatchHeader, view: memoryview | bytes) -> EndTxnMarker | None:
    try:
        records = decode_records(view)
        return decode_marker(records[0].key, records[0].value) if records else None
    except (CorruptBatchError, ValueError):
        return None


def _is_last_of_producer(h: BatchHeader, last_records: dict[int, tuple[int | None, int]]) -> bool:
    """Kafka's ``isBatchLastRecordOfProducer``: the batch holding the producer's last data
    offset, or (no data batch in its epoch) a marker of its current epoch."""
    if h.producer_id < 0:
        return False
    found = last_records.get(h.producer_id)
    if found is None:
        return False
    last_data, epoch = found
    if last_data is not None:
        return h.last_offset == last_data
    return h.is_control and h.producer_epoch == epoch


def _empty_batch(h: BatchHeader) -> bytes:
    """The header of ``h`` with no records (Kafka's ``DefaultRecordBatch.writeEmptyHeader``)."""
    return encode_batch(
        [],
        base_offset=h.base_offset,
        base_timestamp=-1,
        last_offset_delta=h.last_offset_delta,
        max_timestamp=h.max_timestamp,
        attributes=h.attributes & (ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL),
        partition_leader_epoch=h.partition_leader_epoch,
        producer_id=h.producer_id,
        producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence,
    )


def clean_segment(
    seg: Segment,
    size: int,
    latest: dict[bytes, int],
    horizon: int,
    *,
    txn: TxnCleanState | None = None,
    last_records: dict[int, tuple[int | None, int]] | None = None,
    now_ms: int = 0,
    delete_retention_ms: int = 0,
    indexed: list[AbortedTxn] | None = None,
) -> CleanedSegment:
    """Clean one segment (see the module docstring). ``horizon``: tombstones older than this go;
    ``txn`` carries what the pass knows about transactions from segment to segment; ``indexed``:
    the entries the segment's ``.txnindex`` holds now."""
    txn = txn if txn is not None else TxnCleanState([])
    last_records = last_records or {}
    indexed = indexed or []
    nothing = CleanedSegment(
        data=None,
        records_removed=0,
        tombstones_removed=0,
        oldest_tombstone=None,
        aborted=indexed,
        next_horizon=None,
        txn_progress=False,
    )
    try:
        fd = os.open(seg.log_path, os.O_RDONLY)
    except FileNotFoundError:
        return nothing
    out = bytearray()
    removed = tombstones = 0
    oldest_tombstone: int | None = None
    next_horizon: int | None = None
    changed = progress = False
    keep_index: list[AbortedTxn] = []
    try:
        for _pos, view in read_batches(fd, 0, size):
            h = parse_header(view)
            set_horizon = False
            if h.is_control:
                may_go, entry = txn.on_marker(h, _marker(h, view), empty=h.record_count == 0)
                if entry is not None:
                    keep_index.append(entry)
                horizon_ms = delete_horizon(h)
                set_horizon = may_go and horizon_ms is None
                drop_all = may_go and horizon_ms is not None and horizon_ms <= now_ms
            else:
                drop_all = txn.on_batch(h)
            records = decode_records(view)
            kept: list[Record] = []
            if drop_all:
                pass
            elif h.is_control:
                kept = records
            else:
                for r in records:
                    if r.key is not None and latest.get(r.key) != r.offset:
                        continue
                    if r.value is None:
                        if r.timestamp < horizon:
                            tombstones += 1
                            continue
                        if oldest_tombstone is None or r.timestamp < oldest_tombstone:
                            oldest_tombstone = r.timestamp
                    kept.append(r)
            if not kept:
                last = _is_last_of_producer(h, last_records)
                if last and not records:
                    out += view  # already an empty header
                    continue
                changed = True
                removed += len(records)
                if h.is_transactional:
                    progress = True  # its marker, or this marker, is gone or may go next pass
                if last:
                    out += _empty_batch(h)  # keeps the producer's epoch and sequence
                continue
            if len(kept) == len(records) and not set_horizon:
                out += view
                when = delete_horizon(h) if h.is_control else None
                if when is not None and (next_horizon is None or when < next_horizon):
                    next_horizon = when
                continue
            changed = True
            removed += len(records) - len(kept)
            base_timestamp = h.base_timestamp
            attributes = h.attributes & ~ATTR_COMPRESSION_MASK
            if set_horizon:
                base_timestamp = now_ms + delete_retention_ms
                attributes |= ATTR_DELETE_HORIZON
                progress = True
                if next_horizon is None or base_timestamp < next_horizon:
                    next_horizon = base_timestamp
            out += encode_batch(
                kept,
                base_offset=h.base_offset,
                base_timestamp=base_timestamp,
                last_offset_delta=h.last_offset_delta,
                max_timestamp=h.max_timestamp if h.timestamp_type == 1 else max(r.timestamp for r in kept),
                compression=h.compression,
                attributes=attributes,
                partition_leader_epoch=h.partition_leader_epoch,
                producer_id=h.producer_id,
                producer_epoch=h.producer_epoch,
                base_sequence=h.base_sequence,
            )
    finally:
        os.close(fd)
    if keep_index != indexed:
        changed = True
    if not changed:
        return replace(nothing, oldest_tombstone=oldest_tombstone, next_horizon=next_horizon)
    return CleanedSegment(
        data=bytes(out),
        records_removed=removed,
        tombstones_removed=tombstones,
        oldest_tombstone=oldest_tombstone,
        aborted=keep_index,
        next_horizon=next_horizon,
        txn_progress=progress,
    )
