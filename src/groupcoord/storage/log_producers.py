"""A partition log's producer state: rebuilt when the log opens, kept current as it appends.

:class:`~groupcoord.storage.producer_state.ProducerStateManager` holds the producers, the open
transactions and the aborted ones; :class:`~groupcoord.storage.log.PartitionLog` calls
:func:`load_producer_state` once at open (with its lock held) and :func:`track_producers` for
the batches of each append. Both read the log's segment list as given; neither keeps it.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from groupcoord.formats.batch import BatchHeader, CorruptBatchError, decode_records, parse_header

from .control import EndTxnMarker, decode_marker
from .producer_state import (
    CorruptSnapshotError,
    ProducerStateManager,
    delete_snapshot,
    list_snapshots,
    read_snapshot,
    write_snapshot,
)
from .segment import Segment
from .txnindex import AbortedTxn, append_txn_index, read_txn_index, write_txn_index

#: The partition log's logger: these lines are the log's at open and append, as they were when
#: this code was part of ``storage.log`` (operators filter on that name).
log = logging.getLogger("groupcoord.storage.log")


def load_producer_state(
    dir: Path,
    segments: list[Segment],
    bases: list[int],
    log_start: int,
    iter_batches_from: Callable[[int], Iterator[tuple[BatchHeader, bytes]]],
) -> ProducerStateManager:
    """Producer state at open: the newest usable ``<offset>.snapshot`` (Kafka's
    ``ProducerStateManager.loadFromSnapshot``), then only the batches from its offset on
    (``LogLoader.rebuildProducerState``); the aborted transactions come from the segments'
    ``.txnindex`` files below that offset and from the replay after it. A snapshot that cannot
    be read is deleted with one WARNING line and the next older one (or the whole log) is
    used. Without any snapshot the whole partition is read from its log start. Each
    ``.txnindex`` in the replayed range is rewritten when it does not match, and a snapshot at
    the log end is written when anything was replayed.
    """
    leo = segments[-1].next_offset
    for leftover in dir.glob("*.snapshot.tmp"):
        leftover.unlink(missing_ok=True)
    usable: list[tuple[int, Path]] = []
    for off, path in list_snapshots(dir):
        if off > leo or off < log_start:
            delete_snapshot(path)  # past a truncated end, or below the log start
        else:
            usable.append((off, path))
    state = ProducerStateManager()
    start = log_start
    while usable:
        off, path = usable.pop()
        try:
            entries = read_snapshot(path)
        except CorruptSnapshotError as unusable:
            log.warning(
                "log %s: producer snapshot %s is unusable (%s); deleted, rebuilding from %s",
                dir,
                path.name,
                unusable,
                f"the snapshot at {usable[-1][0]}" if usable else f"the log start {log_start}",
            )
            delete_snapshot(path)
            continue
        prior = trusted_aborted(segments, off)
        if prior is None:
            log.warning(
                "log %s: a .txnindex below offset %d disagrees with its segment; reading the whole partition",
                dir,
                off,
            )
            break
        state.load_entries(entries)
        state.set_aborted(prior)
        start = off
        usable.append((off, path))
        break
    replayed = 0
    for h, data in iter_batches_from(start):
        state.update(h, marker_of(h, data))
        replayed += 1
    first_replayed = bisect.bisect_right(bases, start) - 1
    per_segment: dict[int, list[AbortedTxn]] = {}
    for a in state.aborted():
        i = bisect.bisect_right(bases, a.last_offset) - 1
        if i >= max(first_replayed, 0):
            per_segment.setdefault(i, []).append(a)
    for i in range(max(first_replayed, 0), len(segments)):
        seg = segments[i]
        want = per_segment.get(i, [])
        if read_txn_index(seg.txnindex_path) != want:
            write_txn_index(seg.txnindex_path, want)
    if replayed:
        try:  # so the next open reads nothing again (Kafka: rebuildProducerState)
            usable.append((leo, write_snapshot(dir, leo, state)))
        except OSError as exc:
            log.warning("log %s: could not write a producer snapshot at open: %s", dir, exc)
    # Kafka's removeStraySnapshots: keep those at segment bases and the newest one.
    kept = {off for off, _p in usable}
    newest = max(kept, default=None)
    at_bases = set(bases)
    for off, path in list_snapshots(dir):
        if off not in at_bases and off != newest:
            delete_snapshot(path)
    if replayed:
        log.info(
            "log %s: producer state rebuilt from offset %d (%d batches read, %d producers)",
            dir,
            start,
            replayed,
            len(state.producers()),
        )
    return state


def trusted_aborted(segments: list[Segment], offset: int) -> list[AbortedTxn] | None:
    """Entries of the ``.txnindex`` files whose markers lie below ``offset``, in marker
    order; None when an entry does not fit its segment (damage: read everything instead)."""
    out: list[AbortedTxn] = []
    for i, seg in enumerate(segments):
        if seg.base_offset >= offset:
            break
        end = segments[i + 1].base_offset if i + 1 < len(segments) else seg.next_offset
        for a in read_txn_index(seg.txnindex_path):
            if not (seg.base_offset <= a.last_offset < end and a.first_offset <= a.last_offset):
                return None
            if a.last_offset < offset:
                out.append(a)
    return out


def track_producers(
    pstate: ProducerStateManager,
    segments: list[Segment],
    bases: list[int],
    buf: bytes | bytearray,
    headers: list[tuple[int, BatchHeader]],
    planned: list[tuple[int, int, int, int, int]],
    lo: int,
    hi: int,
) -> None:
    """Bring the producer state up to date with the appended batches ``lo``..``hi`` of ``buf``
    (their ``headers`` and ``planned`` positions), adding each aborted transaction to its
    segment's ``.txnindex``."""
    for k in range(lo, hi):
        if headers[k][1].producer_id < 0:
            continue
        pos, size = planned[k][0], planned[k][1]
        h = parse_header(buf, pos)
        done = pstate.update(h, marker_of(h, bytes(buf[pos : pos + size])))
        if done is not None and done.aborted:
            seg = segments[bisect.bisect_right(bases, h.base_offset) - 1]
            append_txn_index(seg.txnindex_path, pstate.aborted()[-1])


def marker_of(h: BatchHeader, data: bytes) -> EndTxnMarker | None:
    """The transaction marker a control batch holds (None for data, or a control record that
    is not a marker)."""
    if not h.is_control:
        return None
    try:
        records = decode_records(data)
        return decode_marker(records[0].key, records[0].value) if records else None
    except (CorruptBatchError, ValueError):
        log.warning("control batch at offset %d is not a transaction marker", h.base_offset)
        return None
