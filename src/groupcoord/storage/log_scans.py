"""A partition log's reads that walk its segments, off the fetch path: every batch from an offset
on (the loaders of ``__consumer_offsets`` and ``__transaction_state``, the producer state at open,
tools) and the ListOffsets lookups by timestamp.

Free functions over explicit arguments, as :mod:`groupcoord.storage.log_producers`:
:class:`~groupcoord.storage.log.PartitionLog` calls the timestamp lookups with its lock held and
its segment list as it stands, and hands :func:`scan_batches` a function that looks up the next
segment under that lock, so no lock is held between batches (the log's locking rule). The
fetches read through the log's own ``read_region``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from groupcoord.formats.batch import BatchHeader, decode_records, parse_header

from .segment import LOG_SUFFIX, Segment, TornBatch, read_batches, segment_name

#: The partition log's logger: these lines are the log's, as they were when this code was part
#: of ``storage.log`` (operators filter on that name).
log = logging.getLogger("groupcoord.storage.log")

#: The next segment of a scan, for (the scan's offset, the base offset of the segment read last,
#: None at first): a duplicated descriptor of its ``.log`` (the scan closes it), the position to
#: start at, its size when looked up, its base offset; None when there is none or the log closed.
NextSegment = Callable[[int, int | None], tuple[int, int, int, int] | None]


def scan_batches(
    next_segment: NextSegment, offset: int, directory: Path
) -> Iterator[tuple[BatchHeader, bytes]]:
    """``(header, batch bytes)`` of every batch whose last offset is >= ``offset``, in order,
    segment after segment as ``next_segment`` finds them (so segments rolled meanwhile are
    included; each is read up to its size when it is reached). Reads in 1 MiB chunks. The rest of
    a segment whose framing is torn is skipped with a warning naming the file (``directory``)."""
    after_base: int | None = None
    while True:
        found = next_segment(offset, after_base)
        if found is None:
            return
        fd, start, end, after_base = found
        try:
            for _pos, view in read_batches(fd, start, end):
                h = parse_header(view)
                if h.last_offset >= offset:
                    yield h, bytes(view)
        except TornBatch as exc:
            # Damage that recovery did not see (a rolled segment is trusted when its index
            # agrees with it): the rest of this segment is unreadable; go on with the next.
            log.warning(
                "log %s: skipping the rest of %s from byte %d: %s",
                directory,
                segment_name(after_base) + LOG_SUFFIX,
                exc.position,
                exc.reason,
            )
        finally:
            os.close(fd)


def offset_for_timestamp(segments: Sequence[Segment], log_start: int, ts: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or past ``log_start`` with timestamp >= ``ts``,
    or None: the first segment whose max timestamp reaches ``ts``, from its time index entry on
    (Kafka's ``UnifiedLog.fetchOffsetByTimestamp``)."""
    for seg in segments:
        if seg.max_ts < ts:
            continue
        start = seg.time_position(ts)
        with contextlib.suppress(TornBatch):  # unreadable rest of a damaged segment
            for _pos, view in read_batches(seg.fd, start, seg.size):
                h = parse_header(view)
                if h.max_timestamp < ts or h.last_offset < log_start:
                    continue
                for r in decode_records(view):
                    if r.timestamp >= ts and r.offset >= log_start:
                        return r.offset, r.timestamp
    return None


def max_timestamp_offset(segments: Sequence[Segment]) -> tuple[int, int]:
    """(offset, timestamp) of the earliest record holding the largest timestamp of ``segments``;
    (-1, -1) when none has a timestamp (ListOffsets' ``MAX_TIMESTAMP``)."""
    best: Segment | None = None
    for seg in segments:
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
