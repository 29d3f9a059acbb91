"""One partition's segmented log, in Kafka's on-disk layout.

A partition directory ``<topic>-<partition>/`` holds segments named by their base offset::

    00000000000000000000.log        record batches (v2), exactly as produced, offsets rewritten
    00000000000000000000.index      8-byte entries: int32 relative offset, int32 file position
    00000000000000000000.timeindex  12-byte entries: int64 timestamp, int32 relative offset

plus three small files of ours: ``.clean_shutdown`` (written by :meth:`PartitionLog.close`,
removed on open), ``log-start-offset.checkpoint`` (only when the log start moved inside a
segment) and ``recovery-point.checkpoint``: an offset below which every offset may have been given
to a client. A flush, a roll or a close that moves it rewrites it in place (an ``acks=all``
produce is answered only after its flush unless a flush policy is set, so it covers every such
answer); it is fsynced at close, when recovery changes it, and when
:meth:`PartitionLog.truncate_to` lowers it, not at every flush, so a process crash leaves it
current and a power loss can leave it behind the last flush. It plays the part of Kafka's
recovery point, per partition, and also bounds the log end offset from below.

Index rules (the same when appending and when rebuilding, so a rebuilt index equals the original):
before a batch is written, if at least ``index_interval_bytes`` were written since the last offset
index entry, the batch gets an entry ``(last offset of the batch, its position)``; at the same
moment, if the segment's max timestamp grew since the last time index entry, the time index gets
``(max timestamp so far, last offset of the batch that holds it)``. Rolling a segment and closing
the log add a final time index entry.

Recovery (:meth:`PartitionLog.open`) checks each segment on its own and changes only what is
damaged:

* With a ``.clean_shutdown`` marker that matches the files, segments are trusted: their indexes
  are loaded and checked against the log, and the batches after the last offset index entry are
  read. Without one, the active segment is read completely and every batch's framing, offsets
  and CRC-32C are checked (every rolled segment was fsynced when it was rolled, so only the
  active one can hold a torn write).
* A segment whose index is missing or disagrees with its log (a truncated file does) is read
  completely, every batch validated, and its indexes rebuilt (Kafka: ``LogLoader.loadSegmentFiles``
  recovers such a segment with ``LogSegment.recover``).
* A segment with a torn, corrupt or out-of-order batch is truncated at the first such batch; so
  is a segment whose batches run into the next segment's base offset. Later segments are kept
  as they are: each is checked on its own terms. (Kafka deletes the segments after a corrupt one
  only when they too lie after the recovery point, i.e. were never flushed; a rolled segment
  here was always flushed, so there are never any to delete.)
* The log end offset never falls below the recovery point or the log end offset the clean
  shutdown marker recorded: if the last segment now ends below it, a new empty segment is
  created at it. So the next produce never gets an offset already given out.
* Offsets lost inside the log stay a gap (:attr:`RecoveryReport.gaps`): they are never given
  out again, and a read at an offset in a gap returns the first batch after it, as Kafka's
  ``LocalLog.read`` moves on to the next segment; at the log end it returns nothing.
* Every file recovery changes is named in one log line saying why: truncated logs, rebuilt
  indexes, created segments, deleted leftovers of compaction and indexes without a log.

Damage that leaves a rolled segment's framing and index consistent (a byte flipped inside a batch
body, under its CRC) is not detected at open, as in Kafka: the batch is served as stored, and
clients that check CRCs reject it. Torn framing that recovery did not see is skipped by the
readers: a fetch or :meth:`PartitionLog.iter_batches_from` moves on to the next segment.

Concurrency rule: all methods except :meth:`PartitionLog.compact` are called by one owner thread
(the server's event loop). :meth:`PartitionLog.flush` and :meth:`PartitionLog.compact` may run in a
worker thread at the same time: both take the log's lock only for short moments (capturing file
descriptors; swapping a cleaned segment in), never while fsyncing or while reading and rewriting
segments. Compaction reads rolled segments through descriptors of its own and swaps a cleaned
segment in only if that segment is still part of the log and unchanged, so retention, truncation
and record deletion may run meanwhile. At most one compaction runs at a time per log.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import logging
import os
import struct
import threading
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from groupcoord.clock import Clock
from groupcoord.constants import INT32_MAX, LONG_MAX
from groupcoord.errors import ErrorCode, KafkaError

from .batch import (
    ATTR_COMPRESSION_MASK,
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    CorruptBatchError,
    Record,
    decode_records,
    encode_batch,
    parse_header,
    rewrite_base_offset,
    set_log_append_time,
    validate_batch,
)

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".clean_shutdown"
LOG_START_CHECKPOINT_FILE = "log-start-offset.checkpoint"
RECOVERY_POINT_FILE = "recovery-point.checkpoint"
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIMEINDEX_SUFFIX = ".timeindex"
CLEANED_SUFFIX = ".cleaned"

_I32 = struct.Struct(">i")
_Q = struct.Struct(">q")
_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_READ_CHUNK = 1 << 20
_FIND_CHUNK = 64 * 1024


# ----------------------------------------------------------------------------------------------
# Errors and values
# ----------------------------------------------------------------------------------------------


class OffsetOutOfRangeError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.OFFSET_OUT_OF_RANGE, message)


class RecordTooLargeError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.MESSAGE_TOO_LARGE, message)


class InvalidConfigError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_CONFIG, message)


class InvalidOffsetError(ValueError):
    """A batch appended with ``assign_offsets=False`` does not come after the log end."""


class LogClosedError(RuntimeError):
    """The log was closed (or its topic deleted)."""


#: Topic config names Kafka defines. Those we act on map to :class:`LogConfig` fields; the rest
#: are accepted (so admin tools that set them work) and reported back, but have no effect.
KAFKA_TOPIC_CONFIG_NAMES = frozenset(
    {
        "cleanup.policy",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "index.interval.bytes",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.difference.max.ms",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.storage.enable",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
        "unclean.leader.election.enable",
    }
)

#: Kafka topic config name -> LogConfig field, for the configs the log implements.
TOPIC_CONFIG_FIELDS: Mapping[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "flush.messages": "flush_interval_messages",
    "flush.ms": "flush_interval_ms",
    "max.message.bytes": "max_message_bytes",
    "cleanup.policy": "cleanup_policy",
    "delete.retention.ms": "delete_retention_ms",
    "message.timestamp.type": "message_timestamp_type",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """Per-partition log settings (Kafka's topic-level configs, snake_cased)."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    retention_ms: int = 604800000
    retention_bytes: int = -1
    index_interval_bytes: int = 4096
    flush_interval_messages: int = LONG_MAX
    flush_interval_ms: int | None = None
    max_message_bytes: int = 1048588
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 86400000
    message_timestamp_type: str = "CreateTime"

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:
            raise InvalidConfigError(f"segment.bytes must be at least 14, got {self.segment_bytes}")
        if self.segment_bytes > INT32_MAX:
            raise InvalidConfigError(f"segment.bytes must fit in an int32, got {self.segment_bytes}")
        if self.segment_ms < 1:
            raise InvalidConfigError(f"segment.ms must be at least 1, got {self.segment_ms}")
        if self.retention_ms < -1:
            raise InvalidConfigError(f"retention.ms must be -1 or more, got {self.retention_ms}")
        if self.retention_bytes < -1:
            raise InvalidConfigError(f"retention.bytes must be -1 or more, got {self.retention_bytes}")
        if self.index_interval_bytes < 0:
            raise InvalidConfigError(f"index.interval.bytes must be >= 0, got {self.index_interval_bytes}")
        if self.flush_interval_messages < 1:
            raise InvalidConfigError(f"flush.messages must be >= 1, got {self.flush_interval_messages}")
        if self.flush_interval_ms is not None and self.flush_interval_ms < 0:
            raise InvalidConfigError(f"flush.ms must be >= 0, got {self.flush_interval_ms}")
        if self.max_message_bytes < 0:
            raise InvalidConfigError(f"max.message.bytes must be >= 0, got {self.max_message_bytes}")
        if self.delete_retention_ms < 0:
            raise InvalidConfigError(f"delete.retention.ms must be >= 0, got {self.delete_retention_ms}")
        policies = {p.strip() for p in self.cleanup_policy.split(",") if p.strip()}
        if not policies or not policies <= {"delete", "compact"}:
            raise InvalidConfigError(
                f"cleanup.policy must be delete and/or compact, got {self.cleanup_policy!r}"
            )
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise InvalidConfigError(
                "message.timestamp.type must be CreateTime or LogAppendTime, "
                f"got {self.message_timestamp_type!r}"
            )

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def with_overrides(self, configs: Mapping[str, str]) -> LogConfig:
        """This config with Kafka topic-config overrides applied (``{"retention.ms": "1000"}``).

        Unknown names and bad values raise :class:`InvalidConfigError` naming the key.
        Known Kafka names that the log does not act on are accepted and ignored.
        """
        changes: dict[str, object] = {}
        for name, raw in configs.items():
            if name not in KAFKA_TOPIC_CONFIG_NAMES:
                raise InvalidConfigError(f"unknown topic config {name!r}")
            field = TOPIC_CONFIG_FIELDS.get(name)
            if field is None:
                continue
            value = raw.strip()
            if field in ("cleanup_policy", "message_timestamp_type"):
                changes[field] = value.replace(" ", "")
                continue
            try:
                number = int(value)
            except ValueError:
                raise InvalidConfigError(f"topic config {name!r} needs an integer, got {raw!r}") from None
            if field == "flush_interval_ms":
                changes[field] = None if number >= LONG_MAX else number
            else:
                changes[field] = number
        try:
            return replace(self, **changes)  # type: ignore[arg-type]
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"{exc.message} (from {dict(configs)})") from None

    def to_topic_configs(self) -> dict[str, str]:
        """The settings the log implements, under Kafka's topic config names."""
        out: dict[str, str] = {}
        for name, field in TOPIC_CONFIG_FIELDS.items():
            value = getattr(self, field)
            if field == "flush_interval_ms" and value is None:
                value = LONG_MAX
            out[name] = str(value)
        return out


assert {f.name for f in fields(LogConfig)} == set(TOPIC_CONFIG_FIELDS.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveryReport:
    truncated_bytes: int
    truncated_from_offset: int | None
    segments_checked: int
    indexes_rebuilt: int
    clean_shutdown: bool = False
    #: Offset ranges ``[start, end)`` found missing where recovery found damage (a cut segment,
    #: a segment whose index disagreed with it, a last segment that ends below the recovery
    #: point). They stay holes in the offsets: never given out again; a fetch inside one returns
    #: the first batch after it.
    gaps: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendInfo:
    base_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    max_timestamp: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    data: memoryview | bytes
    high_watermark: int
    log_start_offset: int
    #: (fd, position, length) of ``data`` in its segment file, for os.sendfile. The descriptor is
    #: valid only until the log is next changed (retention, truncation, compaction swap, close).
    file: tuple[int, int, int] | None


class FileRegion:
    """A byte range of a segment file, held open on its own descriptor until :meth:`close`.

    The descriptor is a duplicate taken under the log's lock, so the range stays readable
    after retention deletes the file or compaction swaps it; an in-place truncation of the
    active segment (``truncate_to``) can still shorten it, which a sender detects as a short
    read. Positional I/O only: the duplicate shares the file offset with the segment's own
    descriptor, which the log never uses.
    """

    __slots__ = ("_fd", "length", "position")

    def __init__(self, fd: int, position: int, length: int) -> None:
        self._fd = fd
        self.position = position
        self.length = length

    @property
    def fd(self) -> int:
        if self._fd < 0:
            raise ValueError("file region is closed")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def advance(self, n: int) -> None:
        """Drop the first ``n`` bytes of the range (they were sent)."""
        if not 0 <= n <= self.length:
            raise ValueError(f"cannot advance {n} bytes in a region of {self.length}")
        self.position += n
        self.length -= n

    def read(self) -> bytes:
        """The bytes of the range (a copy); short if the file was truncated meanwhile."""
        parts: list[bytes] = []
        pos, left = self.position, self.length
        while left > 0:
            chunk = os.pread(self.fd, left, pos)
            if not chunk:
                break
            parts.append(chunk)
            pos += len(chunk)
            left -= len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FileRegion(fd={self._fd}, position={self.position}, length={self.length})"


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionRead:
    """What :meth:`PartitionLog.read_region` found: the batches as bytes (empty, or shorter than
    ``copy_below``) or as a :class:`FileRegion` the caller must close."""

    data: bytes | FileRegion
    high_watermark: int
    log_start_offset: int


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


# ----------------------------------------------------------------------------------------------
# Reading batches out of a file
# ----------------------------------------------------------------------------------------------


class _TornBatch(Exception):
    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason


def _read_batches(
    fd: int, start: int, end: int, chunk: int = _READ_CHUNK
) -> Iterator[tuple[int, memoryview]]:
    """``(file position, batch bytes)`` of each batch in ``[start, end)``, read in chunks.

    Raises :class:`_TornBatch` at the first batch that is cut short or has an impossible length.
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
                raise _TornBatch(pos, f"{end - pos} trailing bytes are not a batch header")
        (length,) = _I32.unpack_from(buf, off + 8)
        if length < MIN_BATCH_LENGTH:
            raise _TornBatch(pos, f"impossible batch length {length}")
        size = length + LOG_OVERHEAD
        if pos + size > end:
            raise _TornBatch(pos, f"batch of {size} bytes cut at {end - pos}")
        if len(buf) - off < size:
            buf = os.pread(fd, min(max(chunk, size), end - pos), pos)
            buf_start, off = pos, 0
            if len(buf) < size:
                raise _TornBatch(pos, "short read")
        yield pos, memoryview(buf)[off : off + size]
        pos += size


def _write_all(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
    view = memoryview(data)
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


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


# ----------------------------------------------------------------------------------------------
# Segment
# ----------------------------------------------------------------------------------------------


class _Segment:
    """One ``.log`` file with its two indexes, kept in memory as arrays and appended on disk."""

    __slots__ = (
        "base_offset",
        "bytes_since_index",
        "created_ms",
        "dirty",
        "fd",
        "idx_off",
        "idx_pos",
        "index_fd",
        "index_path",
        "indexes_missing",
        "log_path",
        "max_ts",
        "max_ts_offset",
        "next_offset",
        "size",
        "tidx_off",
        "tidx_ts",
        "timeindex_fd",
        "timeindex_path",
    )

    def __init__(self, directory: Path, base_offset: int, created_ms: int, suffix: str = "") -> None:
        name = segment_name(base_offset)
        self.base_offset = base_offset
        self.log_path = directory / (name + LOG_SUFFIX + suffix)
        self.index_path = directory / (name + INDEX_SUFFIX + suffix)
        self.timeindex_path = directory / (name + TIMEINDEX_SUFFIX + suffix)
        self.indexes_missing = not (self.index_path.exists() and self.timeindex_path.exists())
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self.fd).st_size
        # Index descriptors are open only while the segment is written (active, or rebuilt);
        # a rolled segment keeps just its .log descriptor, and its indexes in memory.
        self.index_fd = -1
        self.timeindex_fd = -1
        if self.size == 0:
            self.open_index_fds()
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
        _write_all(self.fd, data, start)
        for rel_pos, size, last, max_ts in batches:
            self._note_batch(start + rel_pos, size, last, max_ts, interval)
        self.size = start + len(data)
        self.dirty = True
        if len(self.idx_off) > n_idx:
            self.open_index_fds()
            out = b"".join(
                _INDEX_ENTRY.pack(self.idx_off[i], self.idx_pos[i]) for i in range(n_idx, len(self.idx_off))
            )
            _write_all(self.index_fd, out, n_idx * 8)
        if len(self.tidx_ts) > n_tidx:
            self._write_time_entries(n_tidx)

    def open_index_fds(self) -> None:
        if self.index_fd < 0:
            self.index_fd = os.open(self.index_path, os.O_RDWR | os.O_CREAT, 0o644)
        if self.timeindex_fd < 0:
            self.timeindex_fd = os.open(self.timeindex_path, os.O_RDWR | os.O_CREAT, 0o644)

    def release_index_fds(self) -> None:
        """Close the index descriptors of a segment that is no longer written."""
        for fd in (self.index_fd, self.timeindex_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.index_fd = self.timeindex_fd = -1

    def index_fds(self) -> list[int]:
        return [fd for fd in (self.index_fd, self.timeindex_fd) if fd >= 0]

    def _write_time_entries(self, first: int) -> None:
        self.open_index_fds()
        out = b"".join(
            _TIME_ENTRY.pack(self.tidx_ts[i], self.tidx_off[i]) for i in range(first, len(self.tidx_ts))
        )
        _write_all(self.timeindex_fd, out, first * 12)

    def seal(self) -> None:
        """Final time index entry (on roll and close)."""
        n = len(self.tidx_ts)
        if self._maybe_time_entry():
            self._write_time_entries(n)

    def fsync(self) -> None:
        os.fsync(self.fd)
        for fd in self.index_fds():
            os.fsync(fd)
        self.dirty = False

    def promote(self, suffix: str) -> None:
        """Rename a segment built under ``suffix`` names to its real names: the log first, so
        a crash in between leaves the real log with missing indexes (rebuilt at open)."""
        for attr in ("log_path", "index_path", "timeindex_path"):
            path: Path = getattr(self, attr)
            final = path.with_name(path.name[: -len(suffix)])
            os.replace(path, final)
            setattr(self, attr, final)

    def close(self) -> None:
        self.release_index_fds()
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
        self.fd = -1

    def delete_files(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path, self.timeindex_path):
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
        indexing rule would have made. Raises :class:`_TornBatch` on a bad tail or index."""
        start = self.idx_pos[-1] if self.idx_pos else 0
        if self.tidx_ts:
            self.max_ts = self.tidx_ts[-1]
            self.max_ts_offset = self.base_offset + self.tidx_off[-1]
        self.bytes_since_index = 0
        for pos, view in _read_batches(self.fd, start, self.size):
            h = parse_header(view)
            if pos > start and self.bytes_since_index >= interval:
                raise _TornBatch(pos, "offset index lacks an entry")
            if h.max_timestamp > self.max_ts:
                self.max_ts = h.max_timestamp
                self.max_ts_offset = h.last_offset
            self.next_offset = h.last_offset + 1
            self.bytes_since_index += h.size
        last = self.next_offset - 1
        if self.idx_off and last < self.base_offset + self.idx_off[-1]:
            raise _TornBatch(start, "offset index points past the last batch")
        if self.tidx_off and last < self.base_offset + self.tidx_off[-1]:
            raise _TornBatch(start, "time index points past the last batch")

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
            for pos, view in _read_batches(self.fd, 0, self.size):
                try:
                    h = validate_batch(view, 0) if validate else parse_header(view)
                except CorruptBatchError as exc:
                    raise _TornBatch(pos, str(exc)) from None
                if h.base_offset < expected_next or h.last_offset - self.base_offset > INT32_MAX:
                    raise _TornBatch(pos, f"batch base offset {h.base_offset} is out of order")
                self._note_batch(pos, h.size, h.last_offset, h.max_timestamp, interval)
                expected_next = h.last_offset + 1
        except _TornBatch as exc:
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
        self.open_index_fds()
        raw = b"".join(_INDEX_ENTRY.pack(o, p) for o, p in zip(self.idx_off, self.idx_pos, strict=True))
        os.ftruncate(self.index_fd, 0)
        _write_all(self.index_fd, raw, 0)
        traw = b"".join(_TIME_ENTRY.pack(t, o) for t, o in zip(self.tidx_ts, self.tidx_off, strict=True))
        os.ftruncate(self.timeindex_fd, 0)
        _write_all(self.timeindex_fd, traw, 0)
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
            for pos, view in _read_batches(self.fd, self.index_position(offset), limit, _FIND_CHUNK):
                base, length = _Q.unpack_from(view, 0)[0], _I32.unpack_from(view, 8)[0]
                (delta,) = _I32.unpack_from(view, 23)
                if base + delta >= offset:
                    return pos, length + LOG_OVERHEAD
        except _TornBatch:
            return None
        return None

    def time_position(self, ts: int) -> int:
        i = bisect.bisect_left(self.tidx_ts, ts) - 1
        if i < 0:
            return 0
        return self.index_position(self.base_offset + self.tidx_off[i])

    def batch_size_at(self, position: int) -> int:
        (length,) = _I32.unpack(os.pread(self.fd, 4, position + 8))
        return int(length) + LOG_OVERHEAD


def _whole_batches(data: bytes | memoryview) -> int:
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


def _find_batch_header(seg: _Segment, offset: int) -> tuple[int, int] | None:
    """Like ``_Segment.find_batch`` but reading only batch headers: (position, size) of the first
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


def _whole_batches_in(seg: _Segment, start: int, limit: int) -> int:
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


# ----------------------------------------------------------------------------------------------
# PartitionLog
# ----------------------------------------------------------------------------------------------


class PartitionLog:
    """A partition's log: segments, indexes, offsets, retention, recovery and compaction."""

    def __init__(self, dir: Path, config: LogConfig, *, clock: Clock) -> None:
        """Open (creating when absent) the log in ``dir``; use :meth:`open` to also get the report."""
        self.dir = Path(dir)
        self.config = config
        self._clock = clock
        self._lock = threading.RLock()
        self._compact_lock = threading.Lock()
        self._segments: list[_Segment] = []
        self._bases: list[int] = []
        self._log_start = 0
        self._closed = False
        self._unflushed_messages = 0
        self._last_flush_ms = clock.now_ms()
        self._flushed_offset = 0
        # The offset the recovery point file holds (-1: no file, -2: unreadable).
        self._recovery_point_on_disk = -1
        # (delete.retention.ms, rolled segments' (base, size)) after the last complete compaction,
        # and the time its oldest kept tombstone expires: a pass before either changes is skipped.
        self._compaction_mark: tuple[tuple[int, tuple[tuple[int, int], ...]], int | None] | None = None
        self.recovery_report = self._recover()

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
        return self.log_end_offset

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

    def _recover(self) -> RecoveryReport:
        self.dir.mkdir(parents=True, exist_ok=True)
        now = self._clock.now_ms()
        interval = self.config.index_interval_bytes
        for leftover in self.dir.glob("*" + CLEANED_SUFFIX):
            leftover.unlink()
            log.warning("log %s: deleted %s, left by an interrupted compaction", self.dir, leftover.name)
        bases = sorted(
            int(p.name[: -len(LOG_SUFFIX)])
            for p in self.dir.glob("*" + LOG_SUFFIX)
            if p.name[: -len(LOG_SUFFIX)].isdigit() and len(p.name) == 20 + len(LOG_SUFFIX)
        )
        for suffix in (INDEX_SUFFIX, TIMEINDEX_SUFFIX):
            for p in self.dir.glob("*" + suffix):
                stem = p.name[: -len(suffix)]
                if stem.isdigit() and int(stem) not in bases:
                    p.unlink()
                    log.warning("log %s: deleted %s, an index without its log file", self.dir, p.name)
        marker = self._read_marker()
        clean = marker is not None and bool(bases) and marker.get("active_base") == bases[-1]
        # Every offset below the floor may have been given to a client: the recovery point
        # (written with every flush) and the log end offset recorded at a clean shutdown.
        floor = self._read_recovery_point()
        marker_end = marker.get("log_end_offset") if marker is not None else None
        if isinstance(marker_end, int) and marker_end > floor:
            floor = marker_end
        truncated_bytes = 0
        truncated_from: int | None = None
        checked = 0
        rebuilt = 0
        gaps: list[tuple[int, int]] = []
        segments: list[_Segment] = []
        for i, base in enumerate(bases):
            seg = _Segment(self.dir, base, now)
            segments.append(seg)
            active = i == len(bases) - 1
            if active and clean and marker is not None and marker.get("active_size") != seg.size:
                clean = False
            damage: str | None = None
            repaired = False  # the index disagreed with the log: something may be missing
            if active and not clean:
                # The only segment that can hold a torn write: every batch is validated.
                had_index = seg.load_indexes()
                old = seg.index_state()
                cut, damage = seg.rebuild(interval, validate=True)
                checked += 1
                state = seg.index_state()
                if (
                    had_index
                    and cut == seg.size
                    and old[:2] == state[:2]
                    and len(old[2]) == len(state[2]) + 8
                ):
                    seg.seal()  # the final time index entry a clean close added stays
                if not had_index or old != seg.index_state():
                    rebuilt += 1
                    self._log_index_rebuild(seg, "missing" if not had_index else "inconsistent with the log")
            else:
                cut = seg.size
                try:
                    if not seg.load_indexes():
                        raise _TornBatch(0, "missing" if seg.indexes_missing else "inconsistent with the log")
                    seg.scan_tail(interval)
                except _TornBatch as exc:
                    # A segment whose index disagrees with its log is read completely, every
                    # batch validated (Kafka's LogSegment.recover).
                    rebuilt += 1
                    repaired = True
                    cut, damage = seg.rebuild(interval, validate=True)
                    checked += 1
                    if not active:
                        seg.seal()
                    self._log_index_rebuild(seg, exc.reason)
            next_base = bases[i + 1] if not active else None
            overlap = False
            if cut == seg.size and next_base is not None and seg.next_offset > next_base:
                found = seg.find_batch(next_base)
                cut = found[0] if found is not None else 0
                damage = (
                    f"batches reach offset {seg.next_offset - 1}, past the next segment's base {next_base}"
                )
                overlap = True
            if cut < seg.size:
                old_size = seg.size
                seg.truncate_file(cut)
                if overlap:
                    seg.rebuild(interval, validate=False)
                    seg.seal()  # never the active segment: it has no next segment
                    rebuilt += 1
                    self._log_index_rebuild(seg, "batches cut")
                truncated_bytes += old_size - cut
                if truncated_from is None:
                    truncated_from = seg.next_offset
                gap_end = next_base if next_base is not None and next_base > seg.next_offset else None
                log.warning(
                    "log %s: truncated %s from %d to %d bytes (%s at byte %d); it now ends at offset %d%s",
                    self.dir,
                    seg.log_path.name,
                    old_size,
                    cut,
                    damage,
                    cut,
                    seg.next_offset,
                    "" if gap_end is None else f", offsets {seg.next_offset}..{gap_end - 1} stay a gap",
                )
                if gap_end is not None:
                    gaps.append((seg.next_offset, gap_end))
            elif repaired and next_base is not None and next_base > seg.next_offset:
                # Cut at a batch boundary: nothing to truncate, but batches are missing.
                log.warning(
                    "log %s: %s ends at offset %d, before the next segment's base %d; offsets %d..%d "
                    "stay a gap",
                    self.dir,
                    seg.log_path.name,
                    seg.next_offset,
                    next_base,
                    seg.next_offset,
                    next_base - 1,
                )
                gaps.append((seg.next_offset, next_base))
        if not segments:
            base = max(floor, self._read_log_start_checkpoint())
            segments.append(_Segment(self.dir, base, now))
            clean = True  # a new log (or one whose files are all gone): nothing to recover
        if segments[-1].next_offset < floor:
            # Offsets below the floor were handed out: a new active segment starts there, and
            # the offsets in between stay a gap (they are never given out again).
            last = segments[-1]
            entries = len(last.tidx_ts)
            last.seal()
            if len(last.tidx_ts) > entries:
                log.warning(
                    "log %s: added the final entry to %s, as a roll does", self.dir, last.timeindex_path.name
                )
            name = segment_name(floor)
            log.warning(
                "log %s: the last segment %s ends at offset %d, below offset %d that clients may "
                "have been given; created %s, %s and %s so offsets %d..%d stay a gap",
                self.dir,
                last.log_path.name,
                last.next_offset,
                floor,
                name + LOG_SUFFIX,
                name + INDEX_SUFFIX,
                name + TIMEINDEX_SUFFIX,
                last.next_offset,
                floor - 1,
            )
            gaps.append((last.next_offset, floor))
            segments.append(_Segment(self.dir, floor, now))
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        start = self._read_log_start_checkpoint()
        self._log_start = min(max(start, self._bases[0]), self.log_end_offset)
        for seg in self._segments:
            if seg.dirty:
                seg.fsync()
            if seg is not self._segments[-1]:
                seg.release_index_fds()
        self._flushed_offset = self.log_end_offset
        self._write_recovery_point(self.log_end_offset, sync=True)
        marker_path = self.dir / CLEAN_SHUTDOWN_FILE
        if marker_path.exists():
            marker_path.unlink()
        fsync_dir(self.dir)
        report = RecoveryReport(
            truncated_bytes=truncated_bytes,
            truncated_from_offset=truncated_from,
            segments_checked=checked,
            indexes_rebuilt=rebuilt,
            clean_shutdown=clean,
            gaps=tuple(gaps),
        )
        if truncated_bytes or rebuilt or gaps or (bases and not clean):
            log.log(
                logging.WARNING if truncated_bytes or rebuilt or gaps else logging.DEBUG,
                "log %s recovered: clean_shutdown=%s segments_checked=%d indexes_rebuilt=%d "
                "truncated_bytes=%d truncated_from_offset=%s gaps=%s log_end_offset=%d",
                self.dir,
                clean,
                checked,
                rebuilt,
                truncated_bytes,
                truncated_from,
                list(gaps),
                self.log_end_offset,
            )
        return report

    def _read_marker(self) -> dict[str, int] | None:
        path = self.dir / CLEAN_SHUTDOWN_FILE
        try:
            data = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _read_recovery_point(self) -> int:
        """The offset in the recovery point file (0 when there is none); see the module docstring."""
        path = self.dir / RECOVERY_POINT_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            self._recovery_point_on_disk = -1
            return 0
        try:
            value = int(raw.decode("ascii").strip())
        except (UnicodeDecodeError, ValueError):
            value = -1
        if value < 0:
            log.warning(
                "log %s: ignoring %s, which does not hold an offset: %r", self.dir, path.name, raw[:40]
            )
            self._recovery_point_on_disk = -2  # rewritten at the next write
            return 0
        self._recovery_point_on_disk = value
        return value

    def _write_recovery_point(self, offset: int, *, sync: bool = False) -> None:
        """Record that offsets below ``offset`` may have been given to clients (caller holds the
        lock, or is recovery). One ``pwrite`` in place; fsynced only when ``sync``."""
        if offset == self._recovery_point_on_disk or (offset == 0 and self._recovery_point_on_disk == -1):
            return
        # Opened for each write (flushes and rolls are rare next to appends): a log holds no
        # descriptor for it.
        fd = os.open(self.dir / RECOVERY_POINT_FILE, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            data = b"%020d\n" % offset
            _write_all(fd, data, 0)
            if self._recovery_point_on_disk < 0:
                os.ftruncate(fd, len(data))
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._recovery_point_on_disk = offset

    def _log_index_rebuild(self, seg: _Segment, reason: str) -> None:
        for path in (seg.index_path, seg.timeindex_path):
            log.warning(
                "log %s: rebuilt %s from the batches of %s (%s)",
                self.dir,
                path.name,
                seg.log_path.name,
                reason,
            )

    def _read_log_start_checkpoint(self) -> int:
        try:
            return int((self.dir / LOG_START_CHECKPOINT_FILE).read_text().strip())
        except (FileNotFoundError, ValueError):
            return 0

    def _write_log_start_checkpoint(self) -> None:
        path = self.dir / LOG_START_CHECKPOINT_FILE
        if self._log_start == self._bases[0]:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(f"{self._log_start}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

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
            if h.size > cfg.max_message_bytes:
                raise RecordTooLargeError(
                    f"batch of {h.size} bytes is larger than max.message.bytes {cfg.max_message_bytes}"
                )
            if assign_offsets and (h.record_count < 1 or h.last_offset_delta != h.record_count - 1):
                raise CorruptBatchError(
                    f"batch has {h.record_count} records but last_offset_delta {h.last_offset_delta}"
                )
            headers.append((pos, h))
            pos += h.size
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
            view = memoryview(buf)
            i = 0
            while i < len(planned):
                seg = self._segments[-1]
                first_pos, first_size, first_base, first_last, _ = planned[i]
                if self._should_roll(seg, first_size, first_last, now):
                    seg = self._roll(first_base, now)
                if seg.size == 0:
                    seg.created_ms = now  # segment.ms counts from the segment's first append
                j = i
                total = 0
                while j < len(planned):
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
                i = j
            self._unflushed_messages += records
            info = AppendInfo(
                base_offset=planned[0][2],
                last_offset=planned[-1][3],
                log_append_time=now if log_append else -1,
                log_start_offset=self._log_start,
                record_count=records,
                max_timestamp=max_ts,
            )
            due = self._unflushed_messages >= cfg.flush_interval_messages or (
                cfg.flush_interval_ms is not None and now - self._last_flush_ms >= cfg.flush_interval_ms
            )
        if due:
            self.flush()
        return info

    def _should_roll(self, seg: _Segment, size: int, last_offset: int, now: int) -> bool:
        if seg.size == 0:
            return False
        return (
            seg.size + size > self.config.segment_bytes
            or now - seg.created_ms >= self.config.segment_ms
            or last_offset - seg.base_offset > INT32_MAX
        )

    def _roll(self, base_offset: int, now: int) -> _Segment:
        old = self._segments[-1]
        old.seal()
        old.fsync()
        old.release_index_fds()
        new = _Segment(self.dir, base_offset, now)
        self._segments.append(new)
        self._bases.append(base_offset)
        fsync_dir(self.dir)
        self._flushed_offset = max(self._flushed_offset, base_offset)
        try:
            self._write_recovery_point(self._flushed_offset)
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
                self._write_recovery_point(self._flushed_offset)
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
                end = _whole_batches(data)
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
        self, offset: int, max_bytes: int, *, min_one: bool = True, copy_below: int = 0
    ) -> RegionRead:
        """The same batches as :meth:`read` (same bounds, same errors), located by their batch
        headers only: a range of ``copy_below`` bytes or more comes back as a :class:`FileRegion`
        on a duplicated descriptor (for ``os.sendfile``), a shorter one as bytes."""
        with self._lock:
            leo = self._readable_end(offset)
            empty = RegionRead(data=b"", high_watermark=leo, log_start_offset=self._log_start)
            if offset == leo:
                return empty
            for seg in self._segments[self._segment_index(offset) :]:
                found = _find_batch_header(seg, offset)
                if found is None:
                    continue
                pos, first_size = found
                want = min(max(max_bytes, 0), seg.size - pos)
                end = _whole_batches_in(seg, pos, pos + want) - pos if want >= first_size else 0
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

        For loaders and tools; reads in 1 MiB chunks. Segments are looked up one at a time, so
        segments rolled while the caller iterates are included; each segment is read up to its
        size when it is reached. Holds no lock between batches."""
        offset = max(offset, self._log_start)
        after_base: int | None = None
        while True:
            with self._lock:
                if self._closed:
                    return
                if after_base is None:
                    i = self._segment_index(offset)
                else:
                    i = bisect.bisect_right(self._bases, after_base)
                if i >= len(self._segments):
                    return
                seg = self._segments[i]
                fd = os.dup(seg.fd)
                end = seg.size
                start = seg.index_position(offset)
                after_base = seg.base_offset
            try:
                for _pos, view in _read_batches(fd, start, end):
                    h = parse_header(view)
                    if h.last_offset >= offset:
                        yield h, bytes(view)
            except _TornBatch as exc:
                # Damage that recovery did not see (a rolled segment is trusted when its index
                # agrees with it): the rest of this segment is unreadable; go on with the next.
                log.warning(
                    "log %s: skipping the rest of %s from byte %d: %s",
                    self.dir,
                    segment_name(after_base) + LOG_SUFFIX,
                    exc.position,
                    exc.reason,
                )
            finally:
                os.close(fd)

    # -- timestamps ------------------------------------------------------------------------

    def offset_for_timestamp(self, ts: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``ts``, or None."""
        with self._lock:
            self._check_open()
            for seg in self._segments:
                if seg.max_ts < ts:
                    continue
                start = seg.time_position(ts)
                with contextlib.suppress(_TornBatch):  # unreadable rest of a damaged segment
                    for _pos, view in _read_batches(seg.fd, start, seg.size):
                        h = parse_header(view)
                        if h.max_timestamp < ts or h.last_offset < self._log_start:
                            continue
                        for r in decode_records(view):
                            if r.timestamp >= ts and r.offset >= self._log_start:
                                return r.offset, r.timestamp
            return None

    def max_timestamp_offset(self) -> tuple[int, int]:
        """(offset, timestamp) of the earliest record holding the largest timestamp; (-1, -1) if empty."""
        with self._lock:
            self._check_open()
            best: _Segment | None = None
            for seg in self._segments:
                if seg.max_ts >= 0 and (best is None or seg.max_ts > best.max_ts):
                    best = seg
            if best is None:
                return -1, -1
            found = best.find_batch(best.max_ts_offset)
            if found is not None:
                pos, size = found
                for r in decode_records(os.pread(best.fd, size, pos)):
                    if r.timestamp == best.max_ts:
                        return r.offset, r.timestamp
            return best.max_ts_offset, best.max_ts

    # -- retention, deletion, truncation ---------------------------------------------------

    def _drop_segment(self, seg: _Segment) -> int:
        i = self._segments.index(seg)
        del self._segments[i]
        del self._bases[i]
        size = seg.size
        seg.delete_files()
        return size

    def apply_retention(self, now_ms: int) -> int:
        """Delete rolled segments past retention.ms or beyond retention.bytes (and those wholly
        below the log start offset); returns the bytes deleted. Only for cleanup.policy delete."""
        with self._lock:
            self._check_open()
            cfg = self.config
            deleted = 0
            removed = 0
            while len(self._segments) > 1 and self._bases[1] <= self._log_start:
                deleted += self._drop_segment(self._segments[0])
                removed += 1
            if cfg.delete and cfg.retention_ms >= 0:
                while len(self._segments) > 1:
                    seg = self._segments[0]
                    newest = seg.max_ts if seg.max_ts >= 0 else int(os.fstat(seg.fd).st_mtime * 1000)
                    if now_ms - newest <= cfg.retention_ms:
                        break
                    deleted += self._drop_segment(seg)
                    removed += 1
            if cfg.delete and cfg.retention_bytes >= 0:
                excess = self.size_bytes - cfg.retention_bytes
                while len(self._segments) > 1 and excess - self._segments[0].size >= 0:
                    excess -= self._segments[0].size
                    deleted += self._drop_segment(self._segments[0])
                    removed += 1
            if removed:
                if self._log_start < self._bases[0]:
                    self._log_start = self._bases[0]
                self._write_log_start_checkpoint()
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
            return self._log_start

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding offsets >= ``offset``; a batch that straddles ``offset`` goes
        entirely (batches are never split). Returns the new log end offset."""
        with self._lock:
            self._check_open()
            if offset >= self.log_end_offset:
                return self.log_end_offset
            now = self._clock.now_ms()
            if offset < self._log_start or offset <= self._bases[0]:
                for seg in list(self._segments):
                    self._drop_segment(seg)
                new = _Segment(self.dir, offset, now)
                self._segments = [new]
                self._bases = [offset]
                self._log_start = offset
                self._write_log_start_checkpoint()
                self._write_recovery_point(offset, sync=True)
                fsync_dir(self.dir)
                self._flushed_offset = min(self._flushed_offset, offset)
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
            self._write_recovery_point(seg.next_offset, sync=True)
            fsync_dir(self.dir)
            return seg.next_offset

    # -- compaction ------------------------------------------------------------------------

    def compact(self, now_ms: int) -> CompactionReport:
        """Keep only the latest record per key in the rolled segments (see the module docstring
        for the threading rule). Tombstones stay until delete.retention.ms after their timestamp.
        Offsets never move: a batch that loses records is rewritten with its original base offset
        and last offset delta; a batch that loses all its records is dropped."""
        nothing = CompactionReport(
            segments_cleaned=0, records_removed=0, tombstones_removed=0, bytes_before=0, bytes_after=0
        )
        if not self.config.compact:
            return nothing
        with self._compact_lock:
            delete_retention = self.config.delete_retention_ms
            with self._lock:
                self._check_open()
                snapshot = [(seg, seg.size) for seg in self._segments[:-1]]
                signature = (delete_retention, tuple((s.base_offset, s.size) for s, _ in snapshot))
            if not snapshot:
                return nothing
            mark = self._compaction_mark
            if mark is not None and mark[0] == signature and (mark[1] is None or now_ms < mark[1]):
                return replace(nothing, skipped=True)
            latest = self._key_map(snapshot)
            horizon = now_ms - delete_retention
            cleaned = removed = tombstones = before = after = 0
            oldest_kept_tombstone: int | None = None
            complete = True
            for seg, size in snapshot:
                data, n_removed, n_tomb, oldest = self._clean_segment(seg, size, latest, horizon)
                if oldest is not None and (oldest_kept_tombstone is None or oldest < oldest_kept_tombstone):
                    oldest_kept_tombstone = oldest
                if data is None:
                    continue
                if self._swap_cleaned(seg, size, data):
                    cleaned += 1
                    removed += n_removed
                    tombstones += n_tomb
                    before += size
                    after += len(data)
                else:
                    complete = False
            with self._lock:
                after_signature = (
                    delete_retention,
                    tuple((s.base_offset, s.size) for s in self._segments[:-1]),
                )
            expiry = None if oldest_kept_tombstone is None else oldest_kept_tombstone + delete_retention + 1
            self._compaction_mark = (after_signature, expiry) if complete else None
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

    def _key_map(self, snapshot: list[tuple[_Segment, int]]) -> dict[bytes, int]:
        latest: dict[bytes, int] = {}
        for seg, size in snapshot:
            try:
                fd = os.open(seg.log_path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                for _pos, view in _read_batches(fd, 0, size):
                    h = parse_header(view)
                    if h.is_control:
                        continue
                    for r in decode_records(view):
                        if r.key is not None:
                            latest[r.key] = r.offset
            finally:
                os.close(fd)
        return latest

    def _clean_segment(
        self, seg: _Segment, size: int, latest: dict[bytes, int], horizon: int
    ) -> tuple[bytes | None, int, int, int | None]:
        """(cleaned bytes or None when nothing goes, records removed, tombstones removed,
        timestamp of the oldest tombstone kept)."""
        try:
            fd = os.open(seg.log_path, os.O_RDONLY)
        except FileNotFoundError:
            return None, 0, 0, None
        out = bytearray()
        removed = tombstones = 0
        oldest_tombstone: int | None = None
        try:
            for _pos, view in _read_batches(fd, 0, size):
                h = parse_header(view)
                if h.is_control:
                    out += view
                    continue
                records = decode_records(view)
                kept: list[Record] = []
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
                if len(kept) == len(records):
                    out += view
                    continue
                removed += len(records) - len(kept)
                if kept:
                    out += encode_batch(
                        kept,
                        base_offset=h.base_offset,
                        base_timestamp=h.base_timestamp,
                        last_offset_delta=h.last_offset_delta,
                        max_timestamp=h.max_timestamp
                        if h.timestamp_type == 1
                        else max(r.timestamp for r in kept),
                        compression=h.compression,
                        attributes=h.attributes & ~ATTR_COMPRESSION_MASK,
                        partition_leader_epoch=h.partition_leader_epoch,
                        producer_id=h.producer_id,
                        producer_epoch=h.producer_epoch,
                        base_sequence=h.base_sequence,
                    )
        finally:
            os.close(fd)
        if removed == 0:
            return None, 0, 0, oldest_tombstone
        return bytes(out), removed, tombstones, oldest_tombstone

    def _swap_cleaned(self, seg: _Segment, size: int, data: bytes) -> bool:
        """Write the cleaned segment and its indexes under ``.cleaned`` names (no lock held), then
        swap them in under the lock if ``seg`` is still a rolled segment of this log, unchanged."""
        try:
            new = _Segment(self.dir, seg.base_offset, seg.created_ms, suffix=CLEANED_SUFFIX)
        except FileNotFoundError:
            return False  # the partition was deleted meanwhile
        try:
            os.ftruncate(new.fd, 0)
            _write_all(new.fd, data, 0)
            new.size = len(data)
            new.rebuild(self.config.index_interval_bytes, validate=False)
            new.seal()
            new.fsync()
            new.release_index_fds()
        except BaseException:
            new.delete_files()
            raise
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
            return True

    # -- close -------------------------------------------------------------------------------

    def close(self) -> None:
        """Flush, close the files and leave a clean-shutdown marker for the next open."""
        with self._lock:
            if self._closed:
                return
            active = self._segments[-1]
            active.seal()
            for seg in self._segments:
                if seg.dirty or seg is active:
                    seg.fsync()
                seg.close()
            marker = {
                "active_base": active.base_offset,
                "active_size": active.size,
                "log_end_offset": active.next_offset,
            }
            tmp = self.dir / (CLEAN_SHUTDOWN_FILE + ".tmp")
            with open(tmp, "w") as f:
                json.dump(marker, f)
                f.flush()
                os.fsync(f.fileno())
            self._write_recovery_point(active.next_offset, sync=True)
            os.replace(tmp, self.dir / CLEAN_SHUTDOWN_FILE)
            fsync_dir(self.dir)
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
    "BATCH_HEADER_SIZE",
    "AppendInfo",
    "CompactionReport",
    "CorruptBatchError",
    "InvalidConfigError",
    "InvalidOffsetError",
    "LogClosedError",
    "LogConfig",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "ReadResult",
    "RecordTooLargeError",
    "RecoveryReport",
]
