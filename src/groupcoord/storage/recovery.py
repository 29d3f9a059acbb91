"""Recovery of a partition's log at open, and the small files it relies on.

Three files of ours sit beside the segments: ``.clean_shutdown`` (written by a clean close,
removed on open), ``log-start-offset.checkpoint`` (only when the log start moved inside a
segment) and ``recovery-point.checkpoint``: an offset below which every offset may have been given
to a client. A flush, a roll or a close that moves it rewrites it in place (an ``acks=all``
produce is answered only after its flush unless a flush policy is set, so it covers every such
answer); it is fsynced at close, when recovery changes it, and when the log is truncated on
purpose, not at every flush, so a process crash leaves it current and a power loss can leave it
behind the last flush. It plays the part of Kafka's recovery point, per partition, and also
bounds the log end offset from below.

:func:`recover` checks each segment on its own and changes only what is damaged:

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
clients that check CRCs reject it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from .producer_state import ProducerStateManager, list_snapshots, write_snapshot
from .segment import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIMEINDEX_SUFFIX,
    Segment,
    TornBatch,
    fsync_dir,
    fsync_if_present,
    segment_name,
    write_all,
)

log = logging.getLogger(__name__)
#: The partition log's logger, for what a close reports (as when it was part of ``storage.log``).
_log = logging.getLogger("groupcoord.storage.log")

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LOG_START_CHECKPOINT_FILE",
    "RECOVERY_POINT_FILE",
    "LogCheckpoints",
    "RecoveryReport",
    "close_cleanly",
    "recover",
]

CLEAN_SHUTDOWN_FILE = ".clean_shutdown"
LOG_START_CHECKPOINT_FILE = "log-start-offset.checkpoint"
RECOVERY_POINT_FILE = "recovery-point.checkpoint"


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


class LogCheckpoints:
    """The clean-shutdown marker, the recovery point and the log start checkpoint of one log."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        # The offset the recovery point file holds (-1: no file, -2: unreadable).
        self._recovery_point_on_disk = -1

    def read_marker(self) -> dict[str, int] | None:
        path = self.dir / CLEAN_SHUTDOWN_FILE
        try:
            data = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write_marker(self, *, active_base: int, active_size: int, log_end_offset: int) -> None:
        """Leave the clean-shutdown marker (the last step of a close), then the recovery point."""
        marker = {"active_base": active_base, "active_size": active_size, "log_end_offset": log_end_offset}
        tmp = self.dir / (CLEAN_SHUTDOWN_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(marker, f)
            f.flush()
            os.fsync(f.fileno())
        self.write_recovery_point(log_end_offset, sync=True)
        os.replace(tmp, self.dir / CLEAN_SHUTDOWN_FILE)

    def remove_marker(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.dir / CLEAN_SHUTDOWN_FILE).unlink()

    def read_recovery_point(self) -> int:
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

    def write_recovery_point(self, offset: int, *, sync: bool = False) -> None:
        """Record that offsets below ``offset`` may have been given to clients (caller holds the
        log's lock, or is recovery). One ``pwrite`` in place; fsynced only when ``sync``."""
        if offset == self._recovery_point_on_disk or (offset == 0 and self._recovery_point_on_disk == -1):
            return
        # Opened for each write (flushes and rolls are rare next to appends): a log holds no
        # descriptor for it.
        fd = os.open(self.dir / RECOVERY_POINT_FILE, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            data = b"%020d\n" % offset
            write_all(fd, data, 0)
            if self._recovery_point_on_disk < 0:
                os.ftruncate(fd, len(data))
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._recovery_point_on_disk = offset

    def read_log_start(self) -> int:
        try:
            return int((self.dir / LOG_START_CHECKPOINT_FILE).read_text().strip())
        except (FileNotFoundError, ValueError):
            return 0

    def write_log_start(self, log_start: int, first_base: int) -> None:
        """Record the log start offset; no file when it is the first segment's base."""
        path = self.dir / LOG_START_CHECKPOINT_FILE
        if log_start == first_base:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(f"{log_start}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def close_cleanly(
    directory: Path,
    segments: list[Segment],
    log_start: int,
    pstate: ProducerStateManager,
    checkpoints: LogCheckpoints,
) -> None:
    """Close a log's ``segments`` so that the next open may trust them (the first case of the
    module docstring): the active segment sealed, every segment written since its last fsync
    fsynced and closed, a producer snapshot at the log end (Kafka snapshots producer state at a
    clean close, so the next open replays nothing), and last the ``.clean_shutdown`` marker."""
    active = segments[-1]
    active.seal()
    for seg in segments:
        if seg.dirty or seg is active:
            seg.fsync()
        seg.close()
    fsync_if_present(active.txnindex_path)
    leo = active.next_offset
    # (an empty log needs none: there is nothing to read at the next open)
    if leo > log_start and not any(off == leo for off, _p in list_snapshots(directory)):
        try:
            write_snapshot(directory, leo, pstate)
        except OSError as exc:
            _log.warning("log %s: could not write a producer snapshot at close: %s", directory, exc)
    checkpoints.write_marker(active_base=active.base_offset, active_size=active.size, log_end_offset=leo)
    fsync_dir(directory)


def _log_index_rebuild(directory: Path, seg: Segment, reason: str) -> None:
    for path in (seg.index_path, seg.timeindex_path):
        log.warning(
            "log %s: rebuilt %s from the batches of %s (%s)",
            directory,
            path.name,
            seg.log_path.name,
            reason,
        )


def recover(
    directory: Path, *, interval: int, now: int, checkpoints: LogCheckpoints
) -> tuple[list[Segment], int, RecoveryReport]:
    """Open every segment of the log in ``directory``, repairing what is damaged (see the module
    docstring): the segments, the log start offset and what was found. When it fails (the OS
    refuses a file: too many open files, a full disk), the segments it opened are closed again."""
    segments: list[Segment] = []
    try:
        return _recover(directory, interval=interval, now=now, checkpoints=checkpoints, segments=segments)
    except BaseException:
        for seg in segments:
            seg.close()
        raise


def _recover(
    directory: Path, *, interval: int, now: int, checkpoints: LogCheckpoints, segments: list[Segment]
) -> tuple[list[Segment], int, RecoveryReport]:
    directory.mkdir(parents=True, exist_ok=True)
    for leftover in directory.glob("*" + CLEANED_SUFFIX):
        leftover.unlink()
        log.warning("log %s: deleted %s, left by an interrupted compaction", directory, leftover.name)
    bases = sorted(
        int(p.name[: -len(LOG_SUFFIX)])
        for p in directory.glob("*" + LOG_SUFFIX)
        if p.name[: -len(LOG_SUFFIX)].isdigit() and len(p.name) == 20 + len(LOG_SUFFIX)
    )
    for suffix in (INDEX_SUFFIX, TIMEINDEX_SUFFIX):
        for p in directory.glob("*" + suffix):
            stem = p.name[: -len(suffix)]
            if stem.isdigit() and int(stem) not in bases:
                p.unlink()
                log.warning("log %s: deleted %s, an index without its log file", directory, p.name)
    marker = checkpoints.read_marker()
    clean = marker is not None and bool(bases) and marker.get("active_base") == bases[-1]
    # Every offset below the floor may have been given to a client: the recovery point
    # (written with every flush) and the log end offset recorded at a clean shutdown.
    floor = checkpoints.read_recovery_point()
    marker_end = marker.get("log_end_offset") if marker is not None else None
    if isinstance(marker_end, int) and marker_end > floor:
        floor = marker_end
    truncated_bytes = 0
    truncated_from: int | None = None
    checked = 0
    rebuilt = 0
    gaps: list[tuple[int, int]] = []
    for i, base in enumerate(bases):
        seg = Segment(directory, base, now)
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
            if had_index and cut == seg.size and old[:2] == state[:2] and len(old[2]) == len(state[2]) + 8:
                seg.seal()  # the final time index entry a clean close added stays
            if not had_index or old != seg.index_state():
                rebuilt += 1
                reason = "missing" if not had_index else "inconsistent with the log"
                _log_index_rebuild(directory, seg, reason)
        else:
            cut = seg.size
            try:
                if not seg.load_indexes():
                    raise TornBatch(0, "missing" if seg.indexes_missing else "inconsistent with the log")
                seg.scan_tail(interval)
            except TornBatch as exc:
                # A segment whose index disagrees with its log is read completely, every
                # batch validated (Kafka's LogSegment.recover).
                rebuilt += 1
                repaired = True
                cut, damage = seg.rebuild(interval, validate=True)
                checked += 1
                if not active:
                    seg.seal()
                _log_index_rebuild(directory, seg, exc.reason)
        next_base = bases[i + 1] if not active else None
        overlap = False
        if cut == seg.size and next_base is not None and seg.next_offset > next_base:
            found = seg.find_batch(next_base)
            cut = found[0] if found is not None else 0
            damage = f"batches reach offset {seg.next_offset - 1}, past the next segment's base {next_base}"
            overlap = True
        if cut < seg.size:
            old_size = seg.size
            seg.truncate_file(cut)
            if overlap:
                seg.rebuild(interval, validate=False)
                seg.seal()  # never the active segment: it has no next segment
                rebuilt += 1
                _log_index_rebuild(directory, seg, "batches cut")
            truncated_bytes += old_size - cut
            if truncated_from is None:
                truncated_from = seg.next_offset
            gap_end = next_base if next_base is not None and next_base > seg.next_offset else None
            log.warning(
                "log %s: truncated %s from %d to %d bytes (%s at byte %d); it now ends at offset %d%s",
                directory,
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
                "log %s: %s ends at offset %d, before the next segment's base %d; offsets %d..%d stay a gap",
                directory,
                seg.log_path.name,
                seg.next_offset,
                next_base,
                seg.next_offset,
                next_base - 1,
            )
            gaps.append((seg.next_offset, next_base))
    if not segments:
        base = max(floor, checkpoints.read_log_start())
        segments.append(Segment(directory, base, now))
        clean = True  # a new log (or one whose files are all gone): nothing to recover
    if segments[-1].next_offset < floor:
        # Offsets below the floor were handed out: a new active segment starts there, and
        # the offsets in between stay a gap (they are never given out again).
        last = segments[-1]
        entries = len(last.tidx_ts)
        last.seal()
        if len(last.tidx_ts) > entries:
            log.warning(
                "log %s: added the final entry to %s, as a roll does", directory, last.timeindex_path.name
            )
        name = segment_name(floor)
        log.warning(
            "log %s: the last segment %s ends at offset %d, below offset %d that clients may "
            "have been given; created %s, %s and %s so offsets %d..%d stay a gap",
            directory,
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
        segments.append(Segment(directory, floor, now))
    start = checkpoints.read_log_start()
    log_end = segments[-1].next_offset
    log_start = min(max(start, segments[0].base_offset), log_end)
    for seg in segments:
        if seg.dirty:
            seg.fsync()
        if seg is not segments[-1]:
            seg.release_index_fds()
    checkpoints.write_recovery_point(log_end, sync=True)
    checkpoints.remove_marker()
    fsync_dir(directory)
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
            directory,
            clean,
            checked,
            rebuilt,
            truncated_bytes,
            truncated_from,
            list(gaps),
            log_end,
        )
    return segments, log_start, report
