"""A shared write-ahead journal: one ``fdatasync`` makes many partitions' appends durable.

Offset commits of many small groups land on many partitions of ``__consumer_offsets`` at once.
Making each of them durable by fsyncing its segment costs one journal commit of the file system
per partition (about 60 µs of CPU and, even when they run at once, 2-3 ms per round over 50
partitions on this project's test machine), while one ``fdatasync`` of a file that is overwritten
in place costs about 0.13 ms. So the partitions of the journaled topics (the broker passes the
coordinators' topics) are made durable through this journal instead:

* every append to a journaled partition is written to the segment as before (page cache, no
  fsync) and its bytes are also queued here (:meth:`Journal.record`), tagged with the topic id and
  partition;
* a flush round writes the queued entries with one ``pwrite`` to the journal, opened with
  ``O_DSYNC`` (so the write returns once the data is durable; elsewhere a ``fdatasync`` follows)
  (:meth:`Journal.flush`); the round's waiters are released after that, as before;
* when the file would pass its capacity, the journal is **checkpointed** instead: every partition
  that has entries in the current generation is fsynced (at once, on helper threads), the
  generation number in the file's header goes up, and writing starts again at the front, over the
  old entries (:meth:`Journal.checkpoint`); a deliberate truncation of a journaled partition
  checkpoints first, so a replay cannot bring truncated batches back;
* at open, after every partition was recovered, :meth:`Journal.replay` appends the batches of
  the current generation that a partition lacks (those at or past its log end; the ones below are
  there already), fsyncs those partitions and starts a new generation.

Layout (big-endian): a 16-byte header, ``b"GCJ1"``, the generation (u64) and the CRC-32C of
those 12 bytes; then entries, each ``length u32 | crc u32 | topic id (16 bytes) | partition i32 |
batches``, where ``length`` counts from the topic id and the CRC-32C covers the generation and
everything after the CRC. A replay stops at the first entry that does not check (a torn last
round, or an older generation's entry past the current end), which is safe because no waiter of
a round is released before the whole round is written and synced.

A partition's ``recovery-point.checkpoint`` still advances only when its segment is fsynced, so
the recovery of a partition never assumes more than its own files hold; the journal supplies the
rest.

Threads: :meth:`record` runs on the event loop; :meth:`flush` and :meth:`checkpoint` on the
broker's flusher thread (or the caller's, for a truncation or at close); one lock guards the
queue and one more serialises the writers of the file.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import crc32c as _crc32c

from groupcoord.errors import DataDirError
from groupcoord.formats.batch import iter_batches

from .segment import flush_at_once, fsync_dir, write_all

log = logging.getLogger(__name__)

#: The journal's file name in the data directory.
JOURNAL_FILE = "write-ahead.journal"
#: Bytes the journal may hold before a write checkpoints it instead (the file never grows past
#: this plus one round).
DEFAULT_CAPACITY = 32 * 1024 * 1024
#: The journal file grows by at least this much at a time (see :meth:`Journal._grow`).
GROW_STEP = 1024 * 1024
#: Most partition fsyncs one checkpoint runs at the same time.
CHECKPOINT_PARALLELISM = 8

_MAGIC = b"GCJ1"
_HEADER = struct.Struct(">4sQI")
_ENTRY = struct.Struct(">II")
_KEY = struct.Struct(">16si")
HEADER_SIZE = _HEADER.size
_O_DSYNC: int = getattr(os, "O_DSYNC", 0)
L = TypeVar("L", bound="JournaledLog")
ENTRY_OVERHEAD = _ENTRY.size + _KEY.size


class JournaledLog(Protocol):
    """What the journal needs of a partition log."""

    @property
    def log_end_offset(self) -> int: ...

    def flush(self) -> object: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class ReplayReport:
    """What :meth:`Journal.replay` found and did."""

    generation: int
    entries: int
    batches_appended: int
    partitions: int
    unknown_partition_entries: int
    stopped_at: int  # file position of the first entry that did not check (or the file's end)


class Journal:
    def __init__(self, path: Path, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self.path = Path(path)
        self.capacity = capacity
        self._lock = threading.Lock()  # the queue below
        self._io_lock = threading.Lock()  # the file: one writer at a time
        self._buf = bytearray()
        self._buf_logs: dict[int, JournaledLog] = {}
        # Guarded by _io_lock:
        self._gen_logs: dict[int, JournaledLog] = {}  # logs with entries in this generation
        self._generation = 0
        self._pos = HEADER_SIZE
        self._broken = False  # a failed write: the next flush checkpoints instead
        self._closed = False
        self._helpers: ThreadPoolExecutor | None = None
        self._crc_prefix = 0
        # O_DSYNC: each write returns once its data is durable, so a round is one system call
        # (and the flusher thread takes the GIL back once, not twice: under load that wait is
        # part of every round's latency).
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _O_DSYNC, 0o644)
        #: bytes of the file already written (zeros past the entries): a round that stays below
        #: this overwrites blocks in place, so its sync commits no file-system metadata
        self._allocated = os.fstat(self.fd).st_size
        #: journal syncs and checkpoints done (read by tests and benchmarks)
        self.syncs = 0
        self.checkpoints = 0

    # ------------------------------------------------------------------ event-loop side
    @staticmethod
    def key(topic_id: uuid.UUID, partition: int) -> bytes:
        """The 20 bytes naming a partition in an entry."""
        return _KEY.pack(topic_id.bytes, partition)

    def record(self, plog: JournaledLog, key: bytes, batches: bytes | bytearray | memoryview) -> None:
        """Queue the batches just written to ``plog``'s segment (offsets already assigned)."""
        n = len(key) + len(batches)
        with self._lock:
            buf = self._buf
            buf += _ENTRY.pack(n, 0)  # the CRC is filled in by the flush that writes it
            buf += key
            buf += batches
            self._buf_logs[id(plog)] = plog

    @property
    def pending_bytes(self) -> int:
        return len(self._buf)

    @property
    def end(self) -> int:
        """Where the next round's entries go: the header plus this generation's entries."""
        return self._pos

    # ------------------------------------------------------------------ flusher side
    def flush(self) -> None:
        """Make every entry queued so far durable: one ``O_DSYNC`` write (or a checkpoint, when
        the file would pass its capacity). Raises the OSError of a failed write
        or sync; the round that called it fails, and the next flush checkpoints."""
        with self._io_lock:
            with self._lock:
                data, self._buf = self._buf, bytearray()
                logs, self._buf_logs = self._buf_logs, {}
            self._gen_logs.update(logs)
            if self._closed:
                raise OSError(f"journal {self.path} is closed")
            if not data:
                return
            if self._broken or self._pos + len(data) > self.capacity:
                self._checkpoint_locked()
                return
            _seal(data, self._crc_prefix)
            try:
                if self._pos + len(data) > self._allocated:
                    self._grow(self._pos + len(data))
                write_all(self.fd, data, self._pos)
                if not _O_DSYNC:
                    os.fdatasync(self.fd)
            except OSError:
                self._broken = True
                raise
            self._pos += len(data)
            self.syncs += 1

    def _grow(self, needed: int) -> None:
        """Extend the file with zeros in steps of :data:`GROW_STEP` (one synchronous write).

        A write that extends the file changes its size, and syncing that is a file-system
        journal commit, which also holds up every other writer on the file system (the event
        loop's segment appends among them). Extending ahead of need makes the following rounds
        plain overwrites of written blocks, which sync without a commit."""
        target = min(max(needed, self._allocated + GROW_STEP), max(needed, self.capacity + HEADER_SIZE))
        write_all(self.fd, bytes(target - self._allocated), self._allocated)
        if not _O_DSYNC:
            os.fdatasync(self.fd)
        self._allocated = target

    def checkpoint(self) -> None:
        """fsync every partition with entries in this generation (and those queued), then start
        a new, empty generation."""
        with self._io_lock:
            with self._lock:
                self._buf = bytearray()
                logs, self._buf_logs = self._buf_logs, {}
            self._gen_logs.update(logs)
            if not self._closed:
                self._checkpoint_locked()

    def _checkpoint_locked(self) -> None:
        logs = list(self._gen_logs.values())
        if len(logs) > 1 and self._helpers is None:
            self._helpers = ThreadPoolExecutor(
                CHECKPOINT_PARALLELISM - 1, thread_name_prefix="groupcoord-journal"
            )
        try:
            flush_at_once(logs, self._helpers)
        except Exception:
            self._broken = True
            raise
        self._start_generation(self._generation + 1)
        self._gen_logs = {}
        self.checkpoints += 1

    def _start_generation(self, generation: int) -> None:
        head = _MAGIC + struct.pack(">Q", generation)
        header = _HEADER.pack(_MAGIC, generation, _crc32c.crc32c(head))
        try:
            write_all(self.fd, header, 0)
            os.fdatasync(self.fd)
        except OSError:
            self._broken = True
            raise
        self._generation = generation
        self._crc_prefix = _crc32c.crc32c(struct.pack(">Q", generation))
        self._allocated = max(self._allocated, HEADER_SIZE)
        self._pos = HEADER_SIZE
        self._broken = False

    # ------------------------------------------------------------------ open and close
    def replay(
        self, resolve: Callable[[bytes], L | None], append: Callable[[L, bytes], object]
    ) -> ReplayReport:
        """Bring every partition up to the journal's current generation, then start a new one.

        ``resolve`` finds the partition log an entry names (None: its topic is gone);
        ``append(plog, batch)`` appends one batch keeping its offsets."""
        with self._io_lock:
            size = os.fstat(self.fd).st_size
            data = os.pread(self.fd, size, 0) if size else b""
            generation, entries, stopped = _read_entries(data)
            appended = unknown = 0
            touched: dict[int, L] = {}
            for key, batches in entries:
                plog = resolve(key)
                if plog is None:
                    unknown += 1
                    continue
                for pos, h in iter_batches(batches):
                    end = plog.log_end_offset
                    if h.last_offset < end:
                        continue  # already in the partition's own files
                    if h.base_offset < end:  # recovery never splits a batch; stay safe anyway
                        log.warning(
                            "journal: batch %d-%d straddles a log end %d; skipped",
                            h.base_offset,
                            h.last_offset,
                            end,
                        )
                        continue
                    try:
                        append(plog, batches[pos : pos + h.size])
                    except Exception as exc:  # the entry checked, so its batch should append
                        raise DataDirError(
                            f"journal {self.path}: could not replay batch {h.base_offset}-{h.last_offset} "
                            f"({type(exc).__name__}: {exc}); the journal is left as it is"
                        ) from None
                    touched[id(plog)] = plog
                    appended += 1
            for plog in touched.values():
                plog.flush()
            with self._lock:  # the appends above queued their batches again: they are durable now
                self._buf, self._buf_logs = bytearray(), {}
            fresh = generation == 0
            self._start_generation(generation + 1)
            if fresh:
                fsync_dir(self.path.parent)
            self._gen_logs = {}
        report = ReplayReport(
            generation=generation,
            entries=len(entries),
            batches_appended=appended,
            partitions=len(touched),
            unknown_partition_entries=unknown,
            stopped_at=stopped,
        )
        if appended or unknown:
            log.info(
                "journal %s: replayed %d batches into %d partitions from %d entries "
                "(%d for partitions that no longer exist)",
                self.path,
                appended,
                len(touched),
                len(entries),
                unknown,
            )
        return report

    def close(self) -> None:
        """After every journaled partition was fsynced and closed: leave an empty generation
        (nothing to replay) and close the file."""
        with self._io_lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._start_generation(self._generation + 1)
            except OSError as exc:
                log.warning("journal %s: could not reset it at close: %s", self.path, exc)
            os.close(self.fd)
        if self._helpers is not None:
            self._helpers.shutdown()

    def abandon(self) -> None:
        """As in a crash: close the file as it is."""
        with self._io_lock:
            if self._closed:
                return
            self._closed = True
            os.close(self.fd)
        if self._helpers is not None:
            self._helpers.shutdown(wait=False)


def _seal(data: bytearray, prefix: int) -> None:
    """Fill in the CRC of every entry in ``data`` for the generation whose CRC prefix is given."""
    view = memoryview(data)
    pos = 0
    try:
        while pos < len(data):
            n = _ENTRY.unpack_from(data, pos)[0]
            start = pos + _ENTRY.size
            struct.pack_into(">I", data, pos + 4, _crc32c.crc32c(view[start : start + n], prefix))
            pos = start + n
    finally:
        view.release()


def _read_entries(data: bytes) -> tuple[int, list[tuple[bytes, bytes]], int]:
    """(generation, [(key, batches)], position where reading stopped) of a journal file's bytes;
    generation 0 when the header is absent or damaged (a new journal)."""
    if len(data) < HEADER_SIZE:
        return 0, [], len(data)
    magic, generation, crc = _HEADER.unpack_from(data, 0)
    if magic != _MAGIC or crc != _crc32c.crc32c(data[:12]):
        log.warning("journal: the header does not check; nothing to replay")
        return 0, [], 0
    prefix = _crc32c.crc32c(struct.pack(">Q", generation))
    out: list[tuple[bytes, bytes]] = []
    pos = HEADER_SIZE
    view = memoryview(data)
    while pos + ENTRY_OVERHEAD <= len(data):
        n, crc = _ENTRY.unpack_from(data, pos)
        start = pos + _ENTRY.size
        if n < _KEY.size or start + n > len(data):
            break
        if _crc32c.crc32c(view[start : start + n], prefix) != crc:
            break
        out.append((data[start : start + _KEY.size], data[start + _KEY.size : start + n]))
        pos = start + n
    return generation, out, pos
