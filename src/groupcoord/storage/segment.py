"""One segment of a partition's log: a ``.log`` file of record batches and its two indexes.

Files, named by the segment's base offset::

    00000000000000000000.log        record batches (v2), exactly as produced, offsets rewritten
    00000000000000000000.index      8-byte entries: int32 relative offset, int32 file position
    00000000000000000000.timeindex  12-byte entries: int64 timestamp, int32 relative offset

Index rules (the same when appending and when rebuilding, so a rebuilt index equals the original):
before a batch is written, if at least ``index_interval_bytes`` were written since the last offset
index entry, the batch gets an entry ``(last offset of the batch, its position)``; at the same
moment, if the segment's max timestamp grew since the last time index entry, the time index gets
``(max timestamp so far, last offset of the batch that holds it)``. Rolling a segment and closing
the log add a final time index entry (:meth:`Segment.seal`).

Descriptors: a segment holds one, its ``.log``'s, for as long as it is part of the log (rolled
segments too, as in Kafka). The index files are written and fsynced through the shared, bounded
set of :mod:`groupcoord.storage.index_files` (each write reaches the file at once, as before),
so a partition costs one descriptor per segment however many partitions there are.

Also here: reading whole batches out of a file in chunks (:func:`read_batches`), and the
header-only walks the log's readers use to find batch boundaries.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import struct
from array import array
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Protocol

from groupcoord.constants import INT32_MAX
from groupcoord.formats.batch import (
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    CorruptBatchError,
    parse_header,
    validate_batch,
)

from .index_files import INDEX_FILES
from .txnindex import TXN_INDEX_SUFFIX

log = logging.getLogger(__name__)

__all__ = [
    "CLEANED_SUFFIX",
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "TIMEINDEX_SUFFIX",
    "Segment",
    "TornBatch",
    "find_batch_header",
    "fsync_dir",
    "read_batches",
    "segment_name",
    "whole_batches",
    "whole_batches_in",
    "write_all",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIMEINDEX_SUFFIX = ".timeindex"
#: A segment being written by compaction, swapped in under the plain names when complete.
CLEANED_SUFFIX = ".cleaned"

_I32 = struct.Struct(">i")
_Q = struct.Struct(">q")
_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
#: the two kinds of index file, as keys in :data:`INDEX_FILES`
_OFFSETS = 0
_TIMES = 1
_BOTH = (_OFFSETS, _TIMES)
_READ_CHUNK = 1 << 20
_FIND_CHUNK = 64 * 1024


class TornBatch(Exception):
    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason


def read_batches(fd: int, start: int, end: int, chunk: int = _READ_CHUNK) -> Iterator[tuple[int, memoryview]]:
    """``(file position, batch bytes)`` of each batch in ``[start, end)``, read in chunks.

    Raises :class:`TornBatch` at the first batch that is cut short or has an impossible length.
    """
    pos = start
    buf = b""
    buf_start = start
    while pos < end:
        off = pos - buf_start
        if len(buf) - off < LOG_OVERHEAD:
            buf = os.pread(fd, min(chunk, end - pos), pos)
            buf_start, off = pos, 0
            if len(buf) < LOG_OVERHEAD:
                raise TornBatch(pos, f"{end - pos} trailing bytes are not a batch header")
        (length,) = _I32.unpack_from(buf, off + 8)
        if length < MIN_BATCH_LENGTH:
            raise TornBatch(pos, f"impossible batch length {length}")
        size = length + LOG_OVERHEAD
        if pos + size > end:
            raise TornBatch(pos, f"batch of {size} bytes cut at {end - pos}")
        if len(buf) - off < size:
            buf = os.pread(fd, min(max(chunk, size), end - pos), pos)
            buf_start, off = pos, 0
            if len(buf) < size:
                raise TornBatch(pos, "short read")
        yield pos, memoryview(buf)[off : off + size]
        pos += size


def write_all(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
    n = os.pwrite(fd, data, position)
    if n == len(data):  # the usual case: no view, no loop
        return
    view = memoryview(data)[n:]
    position += n
    while view:
        n = os.pwrite(fd, view, position)
        view = view[n:]
        position += n


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_if_present(path: Path) -> None:
    """fsync the file at ``path`` if it exists."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Flushable(Protocol):
    def flush(self) -> object: ...


def flush_at_once(parts: Sequence[Flushable], helpers: Executor | None) -> None:
    """Call ``flush`` on every part at once (the first on this thread, the others on
    ``helpers``, needed only for more than one part) and return when all have; the first error
    wins. A file system with a journal commits concurrent fsyncs of different files together,
    so this costs about one fsync."""
    if len(parts) > 1 and helpers is None:
        raise ValueError("flushing several parts at once needs helper threads")
    others = [helpers.submit(part.flush) for part in parts[1:]] if helpers is not None else []
    error: BaseException | None = None
    try:
        if parts:
            parts[0].flush()
    except Exception as exc:
        error = exc
    for fut in others:
        try:
            fut.result()
        except Exception as exc:
            error = error or exc
    if error is not None:
        raise error


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class Segment:
    """One ``.log`` file with its two indexes, kept in memory as arrays and appended on disk
    (through :data:`INDEX_FILES`: the segment holds no index descriptor of its own)."""

    __slots__ = (
        "base_offset",
        "bytes_since_index",
        "created_ms",
        "dirty",
        "fd",
        "idx_off",
        "idx_pos",
        "index_path",
        "index_unsynced",
        "indexes_missing",
        "log_path",
        "max_ts",
        "max_ts_offset",
        "next_offset",
        "size",
        "tidx_off",
        "tidx_ts",
        "timeindex_path",
        "txnindex_path",
    )

    def __init__(self, directory: Path, base_offset: int, created_ms: int, suffix: str = "") -> None:
        name = segment_name(base_offset)
        self.base_offset = base_offset
        self.log_path = directory / (name + LOG_SUFFIX + suffix)
        self.index_path = directory / (name + INDEX_SUFFIX + suffix)
        self.timeindex_path = directory / (name + TIMEINDEX_SUFFIX + suffix)
        #: the aborted-transaction index (:mod:`groupcoord.storage.txnindex`); it exists only
        #: once the segment holds an ABORT marker, and a cleaned copy keeps the original's
        self.txnindex_path = directory / (name + TXN_INDEX_SUFFIX + suffix)
        self.indexes_missing = not (self.index_path.exists() and self.timeindex_path.exists())
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        #: the index files were written since the last fsync
        self.index_unsynced = False
        try:
            self.size = os.fstat(self.fd).st_size
            if self.size == 0:  # a new segment's index files exist from the start, as Kafka's
                INDEX_FILES.create(self, _OFFSETS, self.index_path)
                INDEX_FILES.create(self, _TIMES, self.timeindex_path)
                self.index_unsynced = True
        except BaseException:
            self.close()  # a segment that could not be opened holds no descriptor
            raise
        self.next_offset = base_offset
        self.max_ts = -1
        self.max_ts_offset = -1
        self.bytes_since_index = 0
        self.created_ms = created_ms
        self.dirty = False
        self.idx_off: array[int] = array("i")
        self.idx_pos: array[int] = array("i")
        self.tidx_ts: array[int] = array("q")
        self.tidx_off: array[int] = array("i")

    # -- index maintenance ---------------------------------------------------------------------

    def _note_batch(self, position: int, size: int, last_offset: int, max_ts: int, interval: int) -> None:
        """Account for a batch written at ``position`` (in memory only)."""
        if max_ts > self.max_ts:
            self.max_ts = max_ts
            self.max_ts_offset = last_offset
        if self.bytes_since_index >= interval and position > 0:
            self.idx_off.append(last_offset - self.base_offset)
            self.idx_pos.append(position)
            self.bytes_since_index = 0
            self._maybe_time_entry()
        self.bytes_since_index += size
        self.next_offset = last_offset + 1

    def largest_timestamp(self) -> int:
        """The newest record timestamp, or the file's modification time (ms) when no batch has
        one (Kafka's ``LogSegment.largestTimestamp``): what retention and the compaction lag age."""
        if self.max_ts >= 0:
            return self.max_ts
        return int(os.fstat(self.fd).st_mtime * 1000)

    def _maybe_time_entry(self) -> bool:
        if self.max_ts >= 0 and (not self.tidx_ts or self.max_ts > self.tidx_ts[-1]):
            self.tidx_ts.append(self.max_ts)
            self.tidx_off.append(self.max_ts_offset - self.base_offset)
            return True
        return False

    def append(
        self,
        data: memoryview,
        batches: list[tuple[int, int, int, int]],
        interval: int,
    ) -> None:
        """Write ``data`` (whole batches) at the end; ``batches`` = (offset in data, size, last, max_ts)."""
        start = self.size
        n_idx = len(self.idx_off)
        n_tidx = len(self.tidx_ts)
        write_all(self.fd, data, start)
        for rel_pos, size, last, max_ts in batches:
            self._note_batch(start + rel_pos, size, last, max_ts, interval)
        self.size = start + len(data)
        self.dirty = True
        if len(self.idx_off) > n_idx:
            out = b"".join(
                _INDEX_ENTRY.pack(self.idx_off[i], self.idx_pos[i]) for i in range(n_idx, len(self.idx_off))
            )
            with INDEX_FILES.lock:
                write_all(INDEX_FILES.fd_for(self, _OFFSETS, self.index_path), out, n_idx * 8)
            self.index_unsynced = True
        if len(self.tidx_ts) > n_tidx:
            self._write_time_entries(n_tidx)

    def release_index_fds(self) -> None:
        """Give back the index descriptors of a segment that is no longer written (rolled,
        closed, or built by compaction): the next write, if any, opens the file again."""
        INDEX_FILES.release(self, _BOTH)

    def _write_time_entries(self, first: int) -> None:
        out = b"".join(
            _TIME_ENTRY.pack(self.tidx_ts[i], self.tidx_off[i]) for i in range(first, len(self.tidx_ts))
        )
        with INDEX_FILES.lock:
            write_all(INDEX_FILES.fd_for(self, _TIMES, self.timeindex_path), out, first * 12)
        self.index_unsynced = True

    def seal(self) -> None:
        """Final time index entry (on roll and close)."""
        n = len(self.tidx_ts)
        if self._maybe_time_entry():
            self._write_time_entries(n)

    def fsync(self) -> None:
        """fsync the ``.log``, and the index files when they were written since the last one
        (their descriptors leave the shared set: the next write, if any, opens them again)."""
        os.fsync(self.fd)
        if self.index_unsynced:
            for kind, path in ((_OFFSETS, self.index_path), (_TIMES, self.timeindex_path)):
                fd = INDEX_FILES.detach(self, kind, path)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            self.index_unsynced = False
        self.dirty = False

    def promote(self, suffix: str) -> None:
        """Rename a segment built under ``suffix`` names to its real names: the log first, so
        a crash in between leaves the real log with missing indexes (rebuilt at open)."""
        for attr in ("log_path", "index_path", "timeindex_path"):
            path: Path = getattr(self, attr)
            final = path.with_name(path.name[: -len(suffix)])
            os.replace(path, final)
            setattr(self, attr, final)
        # The cleaner keeps transactions' offsets, so the original's .txnindex stays valid.
        self.txnindex_path = self.txnindex_path.with_name(self.txnindex_path.name[: -len(suffix)])

    def close(self) -> None:
        self.release_index_fds()
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
        self.fd = -1

    def delete_files(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path, self.timeindex_path, self.txnindex_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    # -- loading and rebuilding ------------------------------------------------------------------

    def reset_state(self) -> None:
        self.next_offset = self.base_offset
        self.max_ts = -1
        self.max_ts_offset = -1
        self.bytes_since_index = 0
        self.idx_off = array("i")
        self.idx_pos = array("i")
        self.tidx_ts = array("q")
        self.tidx_off = array("i")

    def load_indexes(self) -> bool:
        """Read both index files; False if either is missing-shaped or inconsistent with the log."""
        if self.indexes_missing:
            return False
        try:
            raw = self.index_path.read_bytes()
            traw = self.timeindex_path.read_bytes()
        except FileNotFoundError:
            return False
        if len(raw) % 8 or len(traw) % 12:
            return False
        offs = array("i")
        poss = array("i")
        for rel, p in _INDEX_ENTRY.iter_unpack(raw):
            if rel < 0 or p <= 0 or p >= self.size or (offs and (rel <= offs[-1] or p <= poss[-1])):
                return False
            offs.append(rel)
            poss.append(p)
        tss = array("q")
        toffs = array("i")
        for ts, rel in _TIME_ENTRY.iter_unpack(traw):
            if rel < 0 or (tss and (ts <= tss[-1] or rel < toffs[-1])):
                return False
            tss.append(ts)
            toffs.append(rel)
        self.idx_off, self.idx_pos, self.tidx_ts, self.tidx_off = offs, poss, tss, toffs
        return True

    def scan_tail(self, interval: int) -> None:
        """After :meth:`load_indexes`: read the batches from the last index entry on for the
        segment's next offset and max timestamp, checking that the index misses no entry the
        indexing rule would have made. Raises :class:`TornBatch` on a bad tail or index."""
        start = self.idx_pos[-1] if self.idx_pos else 0
        if self.tidx_ts:
            self.max_ts = self.tidx_ts[-1]
            self.max_ts_offset = self.base_offset + self.tidx_off[-1]
        self.bytes_since_index = 0
        for pos, view in read_batches(self.fd, start, self.size):
            h = parse_header(view)
            if pos > start and self.bytes_since_index >= interval:
                raise TornBatch(pos, "offset index lacks an entry")
            if h.max_timestamp > self.max_ts:
                self.max_ts = h.max_timestamp
                self.max_ts_offset = h.last_offset
            self.next_offset = h.last_offset + 1
            self.bytes_since_index += h.size
        last = self.next_offset - 1
        if self.idx_off and last < self.base_offset + self.idx_off[-1]:
            raise TornBatch(start, "offset index points past the last batch")
        if self.tidx_off and last < self.base_offset + self.tidx_off[-1]:
            raise TornBatch(start, "time index points past the last batch")

    def rebuild(self, interval: int, *, validate: bool) -> tuple[int, str | None]:
        """Rescan the whole segment and rebuild its indexes in memory and on disk.

        With ``validate`` every batch's CRC is checked too. Returns the position of the first
        batch that is torn, corrupt or out of offset order (== size when all are sound) and
        what is wrong with it (None when all are sound); the in-memory state then describes
        the batches before it. The file itself is not changed.
        """
        self.reset_state()
        cut_at = self.size
        reason: str | None = None
        expected_next = self.base_offset
        try:
            for pos, view in read_batches(self.fd, 0, self.size):
                try:
                    h = validate_batch(view, 0) if validate else parse_header(view)
                except CorruptBatchError as corrupt:
                    raise TornBatch(pos, str(corrupt)) from None
                if h.base_offset < expected_next or h.last_offset - self.base_offset > INT32_MAX:
                    raise TornBatch(pos, f"batch base offset {h.base_offset} is out of order")
                self._note_batch(pos, h.size, h.last_offset, h.max_timestamp, interval)
                expected_next = h.last_offset + 1
        except TornBatch as exc:
            cut_at = exc.position
            reason = exc.reason
            log.debug("segment %s: %s at position %d", self.log_path, exc.reason, exc.position)
        if cut_at < self.size:
            # Index entries describe only the batches kept.
            while self.idx_pos and self.idx_pos[-1] >= cut_at:
                self.idx_pos.pop()
                self.idx_off.pop()
        self.write_indexes()
        return cut_at, reason

    def index_state(self) -> tuple[bytes, bytes, bytes, bytes]:
        return bytes(self.idx_off), bytes(self.idx_pos), bytes(self.tidx_ts), bytes(self.tidx_off)

    def write_indexes(self) -> None:
        raw = b"".join(_INDEX_ENTRY.pack(o, p) for o, p in zip(self.idx_off, self.idx_pos, strict=True))
        traw = b"".join(_TIME_ENTRY.pack(t, o) for t, o in zip(self.tidx_ts, self.tidx_off, strict=True))
        for kind, path, data in ((_OFFSETS, self.index_path, raw), (_TIMES, self.timeindex_path, traw)):
            with INDEX_FILES.lock:
                fd = INDEX_FILES.fd_for(self, kind, path)
                os.ftruncate(fd, 0)
                write_all(fd, data, 0)
        self.index_unsynced = True
        self.dirty = True

    def truncate_file(self, position: int) -> None:
        os.ftruncate(self.fd, position)
        self.size = position
        self.dirty = True

    # -- lookups -----------------------------------------------------------------------------

    def index_position(self, offset: int) -> int:
        """A position at or before the batch holding ``offset`` (from the sparse index)."""
        # Entries are (last offset of a batch, its position): the last entry at or below the
        # target names a batch that holds the target or ends before it.
        i = bisect.bisect_right(self.idx_off, offset - self.base_offset) - 1
        return self.idx_pos[i] if i >= 0 else 0

    def find_batch(self, offset: int, end: int | None = None) -> tuple[int, int] | None:
        """(position, size) of the first batch whose last offset is >= ``offset``."""
        limit = self.size if end is None else end
        try:
            for pos, view in read_batches(self.fd, self.index_position(offset), limit, _FIND_CHUNK):
                base, length = _Q.unpack_from(view, 0)[0], _I32.unpack_from(view, 8)[0]
                (delta,) = _I32.unpack_from(view, 23)
                if base + delta >= offset:
                    return pos, length + LOG_OVERHEAD
        except TornBatch:
            return None
        return None

    def time_position(self, ts: int) -> int:
        i = bisect.bisect_left(self.tidx_ts, ts) - 1
        if i < 0:
            return 0
        return self.index_position(self.base_offset + self.tidx_off[i])


def whole_batches(data: bytes | memoryview) -> int:
    """Length of the prefix of ``data`` made of complete batches."""
    pos = 0
    n = len(data)
    while n - pos >= LOG_OVERHEAD:
        (length,) = _I32.unpack_from(data, pos + 8)
        size = length + LOG_OVERHEAD
        if length < MIN_BATCH_LENGTH or pos + size > n:
            break
        pos += size
    return pos


_HEADER_PREFIX = 27  # base offset, length, leader epoch, magic, crc, attributes, last offset delta


def find_batch_header(seg: Segment, offset: int) -> tuple[int, int] | None:
    """Like ``Segment.find_batch`` but reading only batch headers: (position, size) of the first
    batch whose last offset is >= ``offset``, or None (none, or a torn batch first)."""
    pos = seg.index_position(offset)
    end = seg.size
    fd = seg.fd
    while end - pos >= LOG_OVERHEAD:
        head = os.pread(fd, _HEADER_PREFIX, pos)
        if len(head) < _HEADER_PREFIX:
            return None
        base, length = _Q.unpack_from(head, 0)[0], _I32.unpack_from(head, 8)[0]
        size = length + LOG_OVERHEAD
        if length < MIN_BATCH_LENGTH or pos + size > end:
            return None
        if base + _I32.unpack_from(head, 23)[0] >= offset:
            return pos, size
        pos += size
    return None


def whole_batches_in(seg: Segment, start: int, limit: int) -> int:
    """End of the run of complete batches that begins at ``start`` (a batch boundary) and ends
    at or before ``limit``; jumps over indexed batches instead of reading them."""
    i = bisect.bisect_right(seg.idx_pos, limit) - 1
    pos = seg.idx_pos[i] if i >= 0 and seg.idx_pos[i] > start else start
    fd = seg.fd
    while limit - pos >= LOG_OVERHEAD:
        head = os.pread(fd, LOG_OVERHEAD, pos)
        if len(head) < LOG_OVERHEAD:
            break
        (length,) = _I32.unpack_from(head, 8)
        size = length + LOG_OVERHEAD
        if length < MIN_BATCH_LENGTH or pos + size > limit:
            break
        pos += size
    return pos
