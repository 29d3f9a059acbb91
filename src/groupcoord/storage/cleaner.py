"""Compaction (``cleanup.policy=compact``): keep only the latest record of each key.

:class:`LogCleaner` runs one pass over a log's rolled segments. It reads them through descriptors
of its own and without the log's lock, writes each cleaned segment under ``.cleaned`` names, and
asks the log to swap it in (under the lock) only if that segment is still part of the log and
unchanged, so retention, truncation and record deletion may run meanwhile. At most one pass runs
at a time per log. Offsets never move: a batch that loses records is rewritten with its original
base offset and last offset delta; a batch that loses all its records is dropped. Tombstones stay
until ``delete.retention.ms`` after their timestamp.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from .batch import ATTR_COMPRESSION_MASK, Record, decode_records, encode_batch, parse_header
from .segment import CLEANED_SUFFIX, Segment, read_batches, write_all

log = logging.getLogger(__name__)

__all__ = ["CleanableLog", "CompactionReport", "LogCleaner", "clean_segment", "key_map"]


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

    def swap_cleaned(self, seg: Segment, size: int, new: Segment) -> bool:
        """Put ``new`` in place of ``seg`` if that is still a rolled segment of size ``size``."""
        ...


class LogCleaner:
    """Compaction passes over one log (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._lock = threading.Lock()
        # (delete.retention.ms, rolled segments' (base, size)) after the last complete pass, and
        # the time its oldest kept tombstone expires: a pass before either changes is skipped.
        self._mark: tuple[tuple[int, tuple[tuple[int, int], ...]], int | None] | None = None

    def compact(
        self, plog: CleanableLog, now_ms: int, *, delete_retention_ms: int, index_interval_bytes: int
    ) -> CompactionReport:
        """One pass; skipped when nothing changed since the last complete one."""
        nothing = CompactionReport(
            segments_cleaned=0, records_removed=0, tombstones_removed=0, bytes_before=0, bytes_after=0
        )
        with self._lock:
            snapshot = plog.rolled_segments(check_open=True)
            signature = (delete_retention_ms, tuple((s.base_offset, size) for s, size in snapshot))
            if not snapshot:
                return nothing
            mark = self._mark
            if mark is not None and mark[0] == signature and (mark[1] is None or now_ms < mark[1]):
                return replace(nothing, skipped=True)
            latest = key_map(snapshot)
            horizon = now_ms - delete_retention_ms
            cleaned = removed = tombstones = before = after = 0
            oldest_kept_tombstone: int | None = None
            complete = True
            for seg, size in snapshot:
                data, n_removed, n_tomb, oldest = clean_segment(seg, size, latest, horizon)
                if oldest is not None and (oldest_kept_tombstone is None or oldest < oldest_kept_tombstone):
                    oldest_kept_tombstone = oldest
                if data is None:
                    continue
                new = self._write_cleaned(seg, data, index_interval_bytes)
                if new is not None and plog.swap_cleaned(seg, size, new):
                    cleaned += 1
                    removed += n_removed
                    tombstones += n_tomb
                    before += size
                    after += len(data)
                else:
                    complete = False
            after_signature = (
                delete_retention_ms,
                tuple((s.base_offset, size) for s, size in plog.rolled_segments(check_open=False)),
            )
            expiry = None
            if oldest_kept_tombstone is not None:
                expiry = oldest_kept_tombstone + delete_retention_ms + 1
            self._mark = (after_signature, expiry) if complete else None
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


def key_map(snapshot: list[tuple[Segment, int]]) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for seg, size in snapshot:
        try:
            fd = os.open(seg.log_path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            for _pos, view in read_batches(fd, 0, size):
                h = parse_header(view)
                if h.is_control:
                    continue
                for r in decode_records(view):
                    if r.key is not None:
                        latest[r.key] = r.offset
        finally:
            os.close(fd)
    return latest


def clean_segment(
    seg: Segment, size: int, latest: dict[bytes, int], horizon: int
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
        for _pos, view in read_batches(fd, 0, size):
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
