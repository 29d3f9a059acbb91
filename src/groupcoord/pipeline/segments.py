"""Spark-free planning and reading of log segments in Kafka's on-disk layout.

A data directory holds ``<topic>-<partition>/`` directories, each with segment files named by their
20-digit base offset (``00000000000000000000.log``) plus a sparse offset index (``.index``: 8-byte
entries of int32 relative offset, int32 byte position). Planning makes one :class:`SegmentSplit` per
segment; a segment larger than ``split_bytes`` is cut at offset-index positions (which are always batch
boundaries), so a split is a byte range holding whole batches.

Reading a split walks its batches with ``groupcoord.formats.batch``: headers, CRC validation and
record decoding (all compressions) live there. A torn or corrupt tail stops the walk of that split and
is reported as a :class:`CorruptTail` rather than raised, so a crashed broker's directory still reads.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from groupcoord.formats.batch import (
    BatchHeader,
    CorruptBatchError,
    Record,
    decode_records,
    iter_batches,
    iter_record_spans,
    validate_batch,
)
from groupcoord.storage.manager import PARTITION_METADATA_FILE, TOPICS_FILE, parse_partition_dir

log = logging.getLogger(__name__)

DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
_SEGMENT_FILE = re.compile(r"^(?P<base>\d{20})\.log$")
_INDEX_ENTRY = struct.Struct(">ii")


@dataclass(frozen=True, kw_only=True, slots=True)
class SegmentSplit:
    """A byte range [start, end) of one segment file holding whole batches."""

    topic: str
    partition: int
    path: str
    base_offset: int
    start: int
    end: int
    last_in_segment: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class CorruptTail:
    """Where a split stopped reading: the offset that would have come next and why."""

    topic: str
    partition: int
    path: str
    position: int
    next_offset: int
    reason: str


def list_partitions(data_dir: Path, topics: frozenset[str] | None = None) -> list[tuple[str, int, Path]]:
    """Every ``<topic>-<partition>`` directory under ``data_dir`` (optionally only the given topics)."""
    found: list[tuple[str, int, Path]] = []
    if not data_dir.is_dir():
        raise FileNotFoundError(f"data directory {data_dir} does not exist")
    for entry in sorted(data_dir.iterdir()):
        if not entry.is_dir():
            continue
        parsed = parse_partition_dir(entry.name)
        if parsed is None:
            continue
        if topics is not None and parsed[0] not in topics:
            continue
        found.append((parsed[0], parsed[1], entry))
    found.sort(key=lambda t: (t[0], t[1]))
    return found


def topic_names_by_id(data_dir: Path) -> dict[str, str]:
    """Topic id (``str(uuid)``, as the consumer-group records' decoded rows hold it) -> topic name,
    from what the broker persists: its topic registry ``__topics.json`` (name -> id, the source of
    truth) and, for topics it does not list, each partition directory's ``partition.metadata``
    (Kafka's file: ``topic_id`` in URL-safe base64 without padding). A deleted topic's partitions
    are renamed away, so its id maps to nothing and stays an id. Unreadable files are skipped with
    a warning: the id then stays unnamed (the storage layer's own parser raises instead, which a
    reader of someone else's directory must not)."""
    names: dict[str, str] = {}
    for topic, _partition, path in list_partitions(data_dir):
        meta = path / PARTITION_METADATA_FILE
        if topic in names.values() or not meta.is_file():
            continue
        try:
            fields = dict(line.split(":", 1) for line in meta.read_text().splitlines() if ":" in line)
            text = fields["topic_id"].strip()
            topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        except (OSError, KeyError, ValueError) as exc:
            log.warning("ignoring %s: unreadable (%s)", meta, exc)
            continue
        names[str(topic_id)] = topic
    registry = data_dir / TOPICS_FILE
    if registry.is_file():
        try:
            topics = json.loads(registry.read_text(encoding="utf-8")).get("topics", {})
            for name, entry in topics.items():
                names[str(uuid.UUID(entry["topic_id"]))] = str(name)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("ignoring %s: unreadable (%s)", registry, exc)
    return names


def read_index_positions(index_path: Path) -> list[int]:
    """Byte positions recorded in an offset index, ascending. Kafka preallocates index files with
    zeros, so the first all-zero entry after the first one ends the index."""
    try:
        data = index_path.read_bytes()
    except FileNotFoundError:
        return []
    positions: list[int] = []
    last = -1
    for i in range(0, len(data) - len(data) % 8, 8):
        rel, pos = _INDEX_ENTRY.unpack_from(data, i)
        if i > 0 and rel == 0 and pos == 0:
            break
        if pos > last:
            positions.append(pos)
            last = pos
    return positions


def plan_segment(topic: str, partition: int, log_path: Path, split_bytes: int) -> list[SegmentSplit]:
    """One split per segment, or several cut at offset-index positions when the segment is large."""
    m = _SEGMENT_FILE.match(log_path.name)
    base = int(m.group("base")) if m else 0
    size = log_path.stat().st_size
    cuts = [0]
    if size > split_bytes:
        for pos in read_index_positions(log_path.with_suffix(".index")):
            if pos - cuts[-1] >= split_bytes and pos < size:
                cuts.append(pos)
    bounds = [*cuts, size]
    return [
        SegmentSplit(
            topic=topic,
            partition=partition,
            path=str(log_path),
            base_offset=base,
            start=bounds[i],
            end=bounds[i + 1],
            last_in_segment=i == len(bounds) - 2,
        )
        for i in range(len(bounds) - 1)
    ]


def plan_splits(
    data_dir: Path,
    *,
    topics: frozenset[str] | None = None,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
) -> list[SegmentSplit]:
    """All splits of all segments of the selected topics, in (topic, partition, offset) order."""
    splits: list[SegmentSplit] = []
    for topic, partition, pdir in list_partitions(data_dir, topics):
        for seg in sorted(pdir.iterdir()):
            if _SEGMENT_FILE.match(seg.name) and seg.is_file():
                splits.extend(plan_segment(topic, partition, seg, split_bytes))
    return splits


def read_split_bytes(split: SegmentSplit) -> bytes:
    with open(split.path, "rb") as f:
        f.seek(split.start)
        return f.read(split.end - split.start)


@dataclass(slots=True)
class SplitWalk:
    """The batches of one split; ``tail`` is set when the walk stopped at a torn or corrupt batch."""

    split: SegmentSplit
    buf: bytes
    tail: CorruptTail | None = None

    def batches(self) -> Iterator[tuple[int, BatchHeader]]:
        split = self.split
        buf = self.buf
        consumed = 0
        next_offset = split.base_offset
        try:
            for pos, header in iter_batches(buf):
                try:
                    validate_batch(buf, pos)
                except CorruptBatchError as exc:
                    self._flag(pos, header.base_offset, f"corrupt batch: {exc}")
                    return
                consumed = pos + header.size
                next_offset = header.last_offset + 1
                yield pos, header
        except CorruptBatchError as exc:
            self._flag(consumed, next_offset, f"unreadable batch header: {exc}")
            return
        if consumed < len(buf):
            self._flag(consumed, next_offset, f"torn batch: {len(buf) - consumed} trailing bytes")

    def _flag(self, pos: int, next_offset: int, reason: str) -> None:
        s = self.split
        self.tail = CorruptTail(
            topic=s.topic,
            partition=s.partition,
            path=s.path,
            position=s.start + pos,
            next_offset=next_offset,
            reason=reason,
        )
        log.warning("corrupt tail in %s at byte %d: %s", s.path, s.start + pos, reason)


def walk_split(split: SegmentSplit) -> SplitWalk:
    return SplitWalk(split=split, buf=read_split_bytes(split))


def record_timestamp(header: BatchHeader, record: Record) -> int:
    """LogAppendTime batches carry the broker's time in max_timestamp; records keep their create time."""
    return header.max_timestamp if header.timestamp_type == 1 else record.timestamp


def iter_records(walk: SplitWalk) -> Iterator[tuple[BatchHeader, Record]]:
    for pos, header in walk.batches():
        for record in decode_records(walk.buf, pos):
            yield header, record


def iter_key_values(
    header: BatchHeader, data: bytes
) -> Iterator[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record in a batch's (decompressed) records block.

    The lean walk for ``consumer-offsets``: the storage walker's spans, record headers skipped by
    length. ``decode_records`` (storage) is the reference; the tests check the two agree on every
    codec.
    """
    base_offset = header.base_offset
    log_append = header.timestamp_type == 1
    base_ts = header.max_timestamp if log_append else header.base_timestamp
    for _attrs, ts_delta, off_delta, kp, klen, vp, vlen, _hp, _end in iter_record_spans(
        data, header.record_count
    ):
        yield (
            base_offset + off_delta,
            base_ts if log_append else base_ts + ts_delta,
            data[kp : kp + klen] if klen >= 0 else None,
            data[vp : vp + vlen] if vlen >= 0 else None,
        )
