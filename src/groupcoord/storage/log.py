"""One partition's segmented log, in Kafka's on-disk layout: append, read, retention, truncation.

A partition directory ``<topic>-<partition>/`` holds segments named by their base offset (their
files and index rules: :mod:`groupcoord.storage.segment`) plus three small files of ours, written
and read by :mod:`groupcoord.storage.recovery`, which also repairs a damaged log at open
(:meth:`PartitionLog.open`) and closes it cleanly (:meth:`PartitionLog.close`). Settings:
:mod:`groupcoord.storage.log_config`. Compaction: :mod:`groupcoord.storage.cleaner`. Which
segments retention deletes: :mod:`groupcoord.storage.retention`.

Torn framing that recovery did not see is skipped by the readers: a fetch or
:meth:`PartitionLog.iter_batches_from` moves on to the next segment.

Concurrency rule: all methods except :meth:`PartitionLog.compact` are called by one owner thread
(the server's event loop). :meth:`PartitionLog.flush` and :meth:`PartitionLog.compact` may run in a
worker thread at the same time: both take the log's lock only for short moments (capturing file
descriptors; swapping a cleaned segment in), never while fsyncing or while reading and rewriting
segments. Compaction reads rolled segments through descriptors of its own and swaps a cleaned
segment in only if that segment is still part of the log and unchanged, so retention, truncation
and record deletion may run meanwhile. At most one compaction runs at a time per log.

:class:`PartitionLog` is one object whose methods all work on the same segment list, offsets and
lock under the rule above; what can stand alone lives in the modules named above, the
producer state's rebuild at open and its tracking at append in
:mod:`groupcoord.storage.log_producers`, and the reads that walk the segments off the fetch path
(:meth:`PartitionLog.iter_batches_from`, the timestamp lookups) in
:mod:`groupcoord.storage.log_scans`.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from groupcoord.clock import Clock
from groupcoord.constants import INT32_MAX
from groupcoord.formats.batch import (
    ATTR_TIMESTAMP_TYPE,
    BatchHeader,
    CorruptBatchError,
    build_batch,
    rewrite_base_offset,
    set_log_append_time,
    validate_batch,
)
from groupcoord.handling import FileRegion

from .cleaner import CompactionReport, LogCleaner
from .journal import Journal
from .log_config import LogConfig
from .log_producers import load_producer_state, track_producers
from .log_results import (
    AppendInfo,
    InvalidOffsetError,
    LogClosedError,
    OffsetOutOfRangeError,
    ReadResult,
    RecordTooLargeError,
    RegionRead,
)
from .log_scans import max_timestamp_offset, offset_for_timestamp, scan_batches
from .producer_state import (
    ProducerStateManager,
    delete_snapshot,
    list_snapshots,
    write_snapshot,
)
from .recovery import RECOVERY_POINT_FILE, LogCheckpoints, RecoveryReport, close_cleanly, recover
from .retention import segments_to_delete
from .segment import (
    CLEANED_SUFFIX,
    Segment,
    find_batch_header,
    fsync_dir,
    fsync_if_present,
    whole_batches,
    whole_batches_in,
)
from .txnindex import AbortedTxn, write_txn_index

log = logging.getLogger(__name__)


class PartitionLog:
    """A partition's log: segments, indexes, offsets, retention, recovery and compaction."""

    def __init__(self, dir: Path, config: LogConfig, *, clock: Clock) -> None:
        """Open (creating when absent) the log in ``dir``; use :meth:`open` to also get the report."""
        self.dir = Path(dir)
        self.config = config
        self._clock = clock
        self._lock = threading.RLock()
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        self._log_start = 0
        self._closed = False
        self._unflushed_messages = 0
        self._last_flush_ms = clock.now_ms()
        self._flushed_offset = 0
        #: the shared write-ahead journal this log's appends also go to (see
        #: :mod:`groupcoord.storage.journal`), set by the log manager; None: fsync the segments
        self.journal: Journal | None = None
        self._journal_key = b""
        self._checkpoints = LogCheckpoints(self.dir)
        self._cleaner = LogCleaner(self.dir)
        self._segments, self._log_start, self.recovery_report = recover(
            self.dir,
            interval=config.index_interval_bytes,
            now=clock.now_ms(),
            checkpoints=self._checkpoints,
        )
        self._bases = [s.base_offset for s in self._segments]
        self._flushed_offset = self.log_end_offset
        #: producers, open transactions and aborted ones: loaded from the newest ``.snapshot``
        #: and the batches after it, here at open (``storage.log_producers``)
        try:
            with self._lock:
                self._pstate = load_producer_state(
                    self.dir, self._segments, self._bases, self._log_start, self.iter_batches_from
                )
        except BaseException:  # a log that could not be opened holds no descriptor
            for seg in self._segments:
                seg.close()
            raise

    @classmethod
    def open(cls, dir: Path, config: LogConfig, clock: Clock) -> tuple[PartitionLog, RecoveryReport]:
        plog = cls(dir, config, clock=clock)
        return plog, plog.recovery_report

    # -- properties --------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction, or the log end when none is open."""
        return self.producer_state().last_stable_offset(self.log_end_offset)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions a read_committed fetch of ``[fetch_offset, upper_bound)`` must
        skip (the ``aborted_transactions`` of a Fetch response)."""
        return self.producer_state().collect_aborted(fetch_offset, upper_bound)

    def producer_state(self) -> ProducerStateManager:
        """The partition's producers, open transactions and aborted transactions (built when
        the log was opened, kept current by appends)."""
        return self._pstate

    @property
    def flushed_offset(self) -> int:
        """Every offset below this one is on disk (fsynced)."""
        return self._flushed_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    def segment_base_offsets(self) -> list[int]:
        return list(self._bases)

    def segment_files(self) -> list[Path]:
        return [s.log_path for s in self._segments]

    # -- recovery ------------------------------------------------------------------------------

    def _write_log_start_checkpoint(self) -> None:
        self._checkpoints.write_log_start(self._log_start, self._bases[0])

    def attach_journal(self, journal: Journal, key: bytes) -> None:
        """From now on every append is also queued in ``journal`` under ``key``; a flush round
        then syncs the journal instead of this log's segments."""
        self.journal = journal
        self._journal_key = key

    # -- append ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"log {self.dir} is closed")

    def append(self, batches: bytes | bytearray | memoryview, *, assign_offsets: bool = True) -> AppendInfo:
        """Validate and append one or more batches; all are written or none is.

        With ``assign_offsets`` the batches get consecutive offsets from the log end (their base
        offsets are rewritten in place). Otherwise their own offsets are kept and must be at or
        past the log end (loaders, tests). Raises :class:`CorruptBatchError` (bad framing, CRC,
        offsets inside the batch), :class:`RecordTooLargeError` (a batch above max.message.bytes).
        """
        buf = bytearray(batches)
        n = len(buf)
        if n == 0:
            raise CorruptBatchError("empty record set")
        cfg = self.config
        headers: list[tuple[int, BatchHeader]] = []
        pos = 0
        while pos < n:
            h = validate_batch(buf, pos)
            size = h.size
            if size > cfg.max_message_bytes:
                raise RecordTooLargeError(
                    f"batch of {size} bytes is larger than max.message.bytes {cfg.max_message_bytes}"
                )
            if assign_offsets and (h.record_count < 1 or h.last_offset_delta != h.record_count - 1):
                raise CorruptBatchError(
                    f"batch has {h.record_count} records but last_offset_delta {h.last_offset_delta}"
                )
            headers.append((pos, h))
            pos += size
        with self._lock:
            self._check_open()
            now = self._clock.now_ms()
            log_append = cfg.log_append_time
            next_offset = self.log_end_offset
            planned: list[tuple[int, int, int, int, int]] = []  # pos, size, base, last, max_ts
            records = 0
            max_ts = -1
            for pos, h in headers:
                if assign_offsets:
                    rewrite_base_offset(buf, pos, next_offset)
                    base = next_offset
                elif h.base_offset < next_offset:
                    raise InvalidOffsetError(
                        f"batch base offset {h.base_offset} is below the log end offset {next_offset}"
                    )
                else:
                    base = h.base_offset
                batch_ts = h.max_timestamp
                if log_append:
                    set_log_append_time(buf, pos, now)
                    batch_ts = now
                last = base + h.last_offset_delta
                planned.append((pos, h.size, base, last, batch_ts))
                records += h.record_count
                max_ts = max(max_ts, batch_ts)
                next_offset = last + 1
            due = self._write(buf, planned, records, now, headers)
            info = AppendInfo(  # base, last, log append time, log start, records, max timestamp
                planned[0][2], planned[-1][3], now if log_append else -1, self._log_start, records, max_ts
            )
        if due:
            self.flush()
        return info

    def append_records(
        self,
        entries: Sequence[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]],
        timestamp_ms: int,
        timestamps: Sequence[int] | None = None,
    ) -> int:
        """Append ``entries`` (key, value, headers) as one batch that the log frames itself at its
        log end: the coordinators' writes (uncompressed, producer id -1). Returns the batch's
        size in bytes (what the fetches waiting on the partition learn of); its offsets run from
        the log end before the call to the log end after it.

        The bytes, offsets, checks and errors are those of :meth:`append` given
        ``build_batch(entries, timestamp_ms=timestamp_ms, timestamps=timestamps)``: LogAppendTime
        stamps the batch the same way (timestamp-type bit, max timestamp the append time), a
        batch above max.message.bytes raises the same :class:`RecordTooLargeError` and writes
        nothing, and no producer is tracked (there is none). Framed at its own offset by the log,
        the batch needs neither the validation pass nor the offset rewrite, and its CRC-32C is
        computed once instead of three times (build, validation, LogAppendTime stamp).
        """
        with self._lock:
            cfg = self.config
            now = self._clock.now_ms()
            log_append = cfg.log_append_time
            base = self.log_end_offset
            batch = build_batch(
                entries,
                base_offset=base,
                timestamp_ms=timestamp_ms,
                timestamps=timestamps,
                attributes=ATTR_TIMESTAMP_TYPE if log_append else 0,
                max_timestamp=now if log_append else None,
            )
            size = len(batch)
            if size > cfg.max_message_bytes:
                raise RecordTooLargeError(
                    f"batch of {size} bytes is larger than max.message.bytes {cfg.max_message_bytes}"
                )
            self._check_open()
            batch_ts = now if log_append else timestamp_ms if timestamps is None else max(timestamps)
            records = len(entries)
            due = self._write(batch, [(0, size, base, base + records - 1, batch_ts)], records, now, None)
        if due:
            self.flush()
        return size

    def roll(self) -> None:
        """Start a new active segment at the log end now (Kafka's ``UnifiedLog.roll``); nothing
        happens while the active segment is empty."""
        with self._lock:
            self._check_open()
            if self._segments[-1].size:
                self._roll(self.log_end_offset, self._clock.now_ms())

    def _write(
        self,
        buf: bytes | bytearray,
        planned: list[tuple[int, int, int, int, int]],
        records: int,
        now: int,
        headers: list[tuple[int, BatchHeader]] | None,
    ) -> bool:
        """Write the ``planned`` batches of ``buf`` (position, size, base offset, last offset,
        max timestamp; offsets already in place) at the log end, rolling first where a batch
        would not fit the active segment, then queue them in the journal; True when a flush is
        due. ``headers``: track the batches' producers (:meth:`append`); None: there are none
        (:meth:`append_records`). The caller holds the lock and has checked the log is open."""
        cfg = self.config
        view = memoryview(buf)
        n = len(planned)
        i = 0
        while i < n:
            first_pos, first_size, first_base, first_last, first_ts = planned[i]
            seg = self._segments[-1]
            if seg.size and (  # roll when full, old, or past the relative offsets' range
                seg.size + first_size > cfg.segment_bytes
                or now - seg.created_ms >= cfg.segment_ms
                or first_last - seg.base_offset > INT32_MAX
            ):
                seg = self._roll(first_base, now)
            if seg.size == 0:
                seg.created_ms = now  # segment.ms counts from the segment's first append
            if n == 1:  # one batch (a coordinator write, most produces): no splitting
                seg.append(view, [(0, first_size, first_last, first_ts)], cfg.index_interval_bytes)
                j = 1
            else:  # the batches that fit this segment, as one write
                j = i
                total = 0
                while j < n:
                    size, last = planned[j][1], planned[j][3]
                    if j > i and (
                        seg.size + total + size > cfg.segment_bytes or last - seg.base_offset > INT32_MAX
                    ):
                        break
                    total += size
                    j += 1
                seg.append(
                    view[first_pos : first_pos + total],
                    [(p - first_pos, s, last, ts) for p, s, _b, last, ts in planned[i:j]],
                    cfg.index_interval_bytes,
                )
            if headers is not None and (j > i + 1 or headers[i][1].producer_id >= 0):
                # before a roll snapshots it
                track_producers(self._pstate, self._segments, self._bases, buf, headers, planned, i, j)
            i = j
        if self.journal is not None:
            self.journal.record(self, self._journal_key, buf)
        self._unflushed_messages += records
        return self._unflushed_messages >= cfg.flush_interval_messages or (
            cfg.flush_interval_ms is not None and now - self._last_flush_ms >= cfg.flush_interval_ms
        )

    def _roll(self, base_offset: int, now: int) -> Segment:
        old = self._segments[-1]
        old.seal()
        old.fsync()
        old.release_index_fds()
        fsync_if_present(old.txnindex_path)
        try:  # Kafka snapshots producer state at every roll (UnifiedLog.roll)
            write_snapshot(self.dir, base_offset, self._pstate)
        except OSError as exc:  # the next roll or the close writes one; the open replays more
            log.warning("log %s: could not write a producer snapshot at a roll: %s", self.dir, exc)
        new = Segment(self.dir, base_offset, now)
        self._segments.append(new)
        self._bases.append(base_offset)
        fsync_dir(self.dir)
        self._flushed_offset = max(self._flushed_offset, base_offset)
        try:
            self._checkpoints.write_recovery_point(self._flushed_offset)
        except OSError as exc:  # the next flush writes it; the append goes on
            log.warning("log %s: could not write %s at a roll: %s", self.dir, RECOVERY_POINT_FILE, exc)
        log.debug("log %s rolled a new segment at offset %d", self.dir, base_offset)
        return new

    def maybe_flush(self, now_ms: int) -> bool:
        """Flush when flush.ms has passed since the last flush; for the server's periodic timer."""
        interval = self.config.flush_interval_ms
        if interval is None or self._unflushed_messages == 0 or now_ms - self._last_flush_ms < interval:
            return False
        self.flush()
        return True

    def flush(self) -> int:
        """fsync everything appended so far; returns the offset everything below is durable to.

        Safe to call from a worker thread: the lock is held only while descriptors are duplicated.
        """
        with self._lock:
            if self._closed:
                return self._flushed_offset
            target = self.log_end_offset
            dirty = [s for s in self._segments if s.dirty]
            # Only the .log files: an unclean open rebuilds the active segment's indexes anyway,
            # and rolled segments had theirs fsynced when they were rolled.
            fds = [os.dup(s.fd) for s in dirty]
            for s in dirty:
                s.dirty = False
            self._unflushed_messages = 0
            self._last_flush_ms = self._clock.now_ms()
        try:
            for fd in fds:
                os.fsync(fd)
        except OSError:
            with self._lock:
                for s in dirty:
                    s.dirty = True
            raise
        finally:
            for fd in fds:
                os.close(fd)
        with self._lock:
            self._flushed_offset = max(self._flushed_offset, min(target, self.log_end_offset))
            if not self._closed:
                self._checkpoints.write_recovery_point(self._flushed_offset)
        return target

    # -- read ------------------------------------------------------------------------------

    def _segment_index(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    def _readable_end(self, offset: int) -> int:
        """The log end offset, once ``offset`` is known to be readable (caller holds the lock)."""
        self._check_open()
        leo = self.log_end_offset
        if offset < self._log_start or offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self._log_start}, {leo}] of {self.dir.name}"
            )
        return leo

    def read(self, offset: int, max_bytes: int, *, min_one: bool = True) -> ReadResult:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` (at least one batch
        when ``min_one``), all from one segment."""
        with self._lock:
            leo = self._readable_end(offset)
            empty = ReadResult(data=b"", high_watermark=leo, log_start_offset=self._log_start, file=None)
            if offset == leo:
                return empty
            for seg in self._segments[self._segment_index(offset) :]:
                found = seg.find_batch(offset)
                if found is None:
                    continue
                pos, first_size = found
                want = min(max(max_bytes, 0), seg.size - pos)
                data = os.pread(seg.fd, want, pos) if want >= first_size else b""
                end = whole_batches(data)
                if end == 0:
                    if not min_one:
                        return empty
                    data = os.pread(seg.fd, first_size, pos)
                    end = first_size
                view = memoryview(data)[:end]
                return ReadResult(
                    data=view, high_watermark=leo, log_start_offset=self._log_start, file=(seg.fd, pos, end)
                )
            return empty

    def read_region(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one: bool = True,
        copy_below: int = 0,
        max_offset: int | None = None,
    ) -> RegionRead:
        """The same batches as :meth:`read` (same bounds, same errors), located by their batch
        headers only: a range of ``copy_below`` bytes or more comes back as a :class:`FileRegion`
        on a duplicated descriptor (for ``os.sendfile``), a shorter one as bytes.

        ``max_offset``: read only batches below it (a read_committed fetch passes the last
        stable offset, which is always a batch boundary)."""
        with self._lock:
            leo = self._readable_end(offset)
            empty = RegionRead(data=b"", high_watermark=leo, log_start_offset=self._log_start)
            if offset == leo or (max_offset is not None and offset >= max_offset):
                return empty
            for seg in self._segments[self._segment_index(offset) :]:
                found = find_batch_header(seg, offset)
                if found is None:
                    continue
                pos, first_size = found
                stop = seg.size
                if max_offset is not None and max_offset < seg.next_offset:
                    bound = find_batch_header(seg, max_offset)
                    if bound is not None:
                        stop = bound[0]
                    if stop <= pos:
                        return empty
                want = min(max(max_bytes, 0), stop - pos)
                end = whole_batches_in(seg, pos, pos + want) - pos if want >= first_size else 0
                if end == 0:
                    if not min_one:
                        return empty
                    end = first_size
                if end < copy_below:
                    data: bytes | FileRegion = os.pread(seg.fd, end, pos)
                else:
                    data = FileRegion(os.dup(seg.fd), pos, end)
                return RegionRead(data=data, high_watermark=leo, log_start_offset=self._log_start)
            return empty

    def iter_batches_from(self, offset: int) -> Iterator[tuple[BatchHeader, bytes]]:
        """``(header, batch bytes)`` of every batch whose last offset is >= ``offset``, in order.

        For loaders and tools (:func:`~groupcoord.storage.log_scans.scan_batches`). Segments are
        looked up one at a time, so segments rolled while the caller iterates are included; each
        segment is read up to its size when it is reached. Holds no lock between batches."""
        yield from scan_batches(self._next_scanned, max(offset, self._log_start), self.dir)

    def _next_scanned(self, offset: int, after_base: int | None) -> tuple[int, int, int, int] | None:
        """The next segment of :meth:`iter_batches_from` (see ``log_scans.NextSegment``)."""
        with self._lock:
            if self._closed:
                return None
            if after_base is None:
                i = self._segment_index(offset)
            else:
                i = bisect.bisect_right(self._bases, after_base)
            if i >= len(self._segments):
                return None
            seg = self._segments[i]
            return os.dup(seg.fd), seg.index_position(offset), seg.size, seg.base_offset

    # -- timestamps ------------------------------------------------------------------------

    def offset_for_timestamp(self, ts: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``ts``, or None."""
        with self._lock:
            self._check_open()
            return offset_for_timestamp(self._segments, self._log_start, ts)

    def max_timestamp_offset(self) -> tuple[int, int]:
        """(offset, timestamp) of the earliest record holding the largest timestamp; (-1, -1) if empty."""
        with self._lock:
            self._check_open()
            return max_timestamp_offset(self._segments)

    # -- retention, deletion, truncation ---------------------------------------------------

    def _drop_segment(self, seg: Segment) -> int:
        i = self._segments.index(seg)
        del self._segments[i]
        del self._bases[i]
        size = seg.size
        seg.delete_files()
        return size

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget the producers idle for ``producer.id.expiration.ms`` (see
        :meth:`ProducerStateManager.remove_expired`); their ids."""
        with self._lock:
            self._check_open()
            return self._pstate.remove_expired(now_ms, expiration_ms)

    def apply_retention(self, now_ms: int) -> int:
        """Delete rolled segments past retention.ms or beyond retention.bytes (and those wholly
        below the log start offset); returns the bytes deleted. Only for cleanup.policy delete
        (which segments: :mod:`groupcoord.storage.retention`)."""
        with self._lock:
            self._check_open()
            removed = segments_to_delete(self._segments, self._log_start, self.config, now_ms)
            if not removed:
                return 0
            deleted = 0
            for seg in self._segments[:removed]:
                deleted += self._drop_segment(seg)
            if self._log_start < self._bases[0]:
                self._log_start = self._bases[0]
            self._write_log_start_checkpoint()
            self._forget_below(self._bases[0])
            log.info(
                "log %s retention deleted %d segments (%d bytes); log start offset %d",
                self.dir,
                removed,
                deleted,
                self._log_start,
            )
            return deleted

    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset to ``offset`` (DeleteRecords); returns the new log start.

        Rolled segments wholly below it are deleted at once."""
        with self._lock:
            self._check_open()
            if offset > self.high_watermark or offset < 0:
                raise OffsetOutOfRangeError(
                    f"cannot delete records before {offset}: high watermark is {self.high_watermark}"
                )
            if offset <= self._log_start:
                return self._log_start
            self._log_start = offset
            while len(self._segments) > 1 and self._bases[1] <= offset:
                self._drop_segment(self._segments[0])
            self._write_log_start_checkpoint()
            self._forget_below(self._bases[0])
            return self._log_start

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding offsets >= ``offset``; a batch that straddles ``offset`` goes
        entirely (batches are never split). Returns the new log end offset."""
        if self.journal is not None and offset < self.log_end_offset:
            # The journal's entries past ``offset`` must not come back at a replay.
            self.journal.checkpoint()
        with self._lock:
            self._check_open()
            if offset >= self.log_end_offset:
                return self.log_end_offset
            now = self._clock.now_ms()
            if offset < self._log_start or offset <= self._bases[0]:
                for seg in list(self._segments):
                    self._drop_segment(seg)
                new = Segment(self.dir, offset, now)
                self._segments = [new]
                self._bases = [offset]
                self._log_start = offset
                self._write_log_start_checkpoint()
                self._checkpoints.write_recovery_point(offset, sync=True)
                fsync_dir(self.dir)
                self._flushed_offset = min(self._flushed_offset, offset)
                for _off, path in list_snapshots(self.dir):
                    delete_snapshot(path)
                self._pstate = ProducerStateManager()
                return offset
            while len(self._segments) > 1 and self._bases[-1] >= offset:
                self._drop_segment(self._segments[-1])
            seg = self._segments[-1]
            found = seg.find_batch(offset)
            if found is not None:
                seg.truncate_file(found[0])
            seg.rebuild(self.config.index_interval_bytes, validate=False)
            seg.created_ms = now
            self._flushed_offset = min(self._flushed_offset, seg.next_offset)
            if self._log_start > seg.next_offset:  # the straddling batch began below the log start
                self._log_start = seg.next_offset
                self._write_log_start_checkpoint()
            # A deliberate truncation lowers the recovery point, so a restart keeps it.
            self._checkpoints.write_recovery_point(seg.next_offset, sync=True)
            fsync_dir(self.dir)
            # Producer state from the newest snapshot at or below the new end (those past it
            # are deleted) and the batches after it; .txnindex entries past the end go.
            self._pstate = load_producer_state(
                self.dir, self._segments, self._bases, self._log_start, self.iter_batches_from
            )
            return seg.next_offset

    def _forget_below(self, base: int) -> None:
        """After segments below ``base`` were deleted: their snapshots and aborted transactions
        go (Kafka's ``deleteSnapshotsBefore``); the producers stay."""
        self._pstate.drop_aborted_below(base)
        for off, path in list_snapshots(self.dir):
            if off < base:
                delete_snapshot(path)

    # -- compaction ------------------------------------------------------------------------

    def compact(self, now_ms: int) -> CompactionReport:
        """Keep only the latest record per key in the rolled segments (see
        :mod:`groupcoord.storage.cleaner`, and the module docstring for the threading rule)."""
        if not self.config.compact:
            return CompactionReport(
                segments_cleaned=0, records_removed=0, tombstones_removed=0, bytes_before=0, bytes_after=0
            )
        return self._cleaner.compact(
            self,
            now_ms,
            delete_retention_ms=self.config.delete_retention_ms,
            index_interval_bytes=self.config.index_interval_bytes,
            min_compaction_lag_ms=self.config.min_compaction_lag_ms,
        )

    def rolled_segments(self, *, check_open: bool) -> list[tuple[Segment, int]]:
        """(segment, size) of every rolled segment wholly below the first open transaction,
        taken under the lock (for the cleaner: compaction never crosses the last stable offset,
        as Kafka's ``LogCleanerManager.cutOffsetToClean``)."""
        with self._lock:
            if check_open:
                self._check_open()
            unstable = self._pstate.first_unstable_offset()
            return [
                (seg, seg.size)
                for seg in self._segments[:-1]
                if unstable is None or seg.next_offset <= unstable
            ]

    def transactions_for_cleaner(self) -> tuple[list[AbortedTxn], dict[int, tuple[int | None, int]]]:
        """The aborted transactions and each producer's last data offset and epoch."""
        with self._lock:
            return self._pstate.aborted(), self._pstate.last_records()

    def swap_cleaned(self, seg: Segment, size: int, new: Segment, aborted: list[AbortedTxn]) -> bool:
        """Swap the cleaned segment ``new`` in for ``seg`` if ``seg`` is still a rolled segment
        of this log, unchanged; otherwise delete ``new``'s files. ``aborted``: the entries the
        cleaned segment's ``.txnindex`` keeps."""
        with self._lock:
            if self._closed or seg not in self._segments or seg.size != size or seg is self._segments[-1]:
                new.delete_files()
                return False
            i = self._segments.index(seg)
            seg.close()
            seg.index_path.unlink(missing_ok=True)
            seg.timeindex_path.unlink(missing_ok=True)
            new.promote(CLEANED_SUFFIX)
            fsync_dir(self.dir)
            self._segments[i] = new
            end = self._bases[i + 1]
            if [a for a in self._pstate.aborted() if seg.base_offset <= a.last_offset < end] != aborted:
                write_txn_index(new.txnindex_path, aborted)
                self._pstate.replace_aborted(seg.base_offset, end, aborted)
            return True

    # -- close -------------------------------------------------------------------------------

    def close(self) -> None:
        """Flush, close the files and leave a clean-shutdown marker for the next open
        (:func:`~groupcoord.storage.recovery.close_cleanly`)."""
        with self._lock:
            if self._closed:
                return
            close_cleanly(self.dir, self._segments, self._log_start, self._pstate, self._checkpoints)
            self._closed = True

    def delete(self) -> None:
        """Close without a marker and remove the directory (topic deletion)."""
        with self._lock:
            for seg in self._segments:
                seg.close()
            self._closed = True
        for p in sorted(self.dir.glob("*"), reverse=True):
            if p.is_file():
                p.unlink()
        with contextlib.suppress(OSError):
            self.dir.rmdir()

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.dir.name}, start={self._log_start}, end={self.log_end_offset}, "
            f"segments={len(self._segments)})"
        )


__all__ = [
    "AppendInfo",
    "FileRegion",
    "InvalidOffsetError",
    "LogClosedError",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "ReadResult",
    "RecordTooLargeError",
    "RegionRead",
]
