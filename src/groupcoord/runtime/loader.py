"""Bulk replay of one ``__consumer_offsets`` partition into the group coordinator.

The general way to load is to decode every record (:func:`records.decode_record`) and hand it
to :meth:`GroupCoordinator.replay`, in log order. :class:`OffsetsLoader` reaches the same state
(same groups in the same order, same offsets in the same dict order, same values) with much
less work per record, because nearly every record is an offset commit:

* each batch's records block is walked in one loop (:meth:`OffsetsLoader._walk`) that reads the
  record framing inline, without a record tuple, a key or a value object per record;
* an offset commit whose key and value it can read with certainty (key v0/v1 of a well-formed
  group, topic and partition; a value of any version that decodes) becomes a ``CommittedOffset``
  at once: the commonest value (v3 without metadata, what every OffsetCommit v6+ writes) is read
  with one fixed struct, any other with the record codec's own decoder. Consecutive commits of
  one group are gathered and replayed together (:meth:`GroupCoordinatorShard.replay_offsets`,
  the bulk form of replaying each commit: the offsets-only group a commit creates when there is
  none, then each offset assigned in log order, so a later commit of a key replaces the earlier
  value and keeps its place, as assigning into the group's offsets dict does);
* after such a commit, the records that follow it laid out the same way (a :class:`Shape`: what
  one OffsetCommit request writes) are checked by one regular expression match and read by one
  ``struct.iter_unpack`` (:meth:`OffsetsLoader._run`), so that, interpreted, each costs little
  more than its offset object;
* every other record (an offset tombstone, a group record or tombstone, a consumer group's
  record of KIP-848, an unknown record type, a commit the walk does not read with certainty) is
  replayed by the general path, after the commits before it, so everything keeps its log-order
  meaning and a malformed record is logged and skipped exactly as the general path does;
* a record with headers, or framing the walk cannot read, hands the rest of its batch to the
  strict decoder (:func:`decode_record_tuples`), record by record through the general path: it
  reports a corrupt batch as the general loader does.

Transactional batches (TxnOffsetCommit) and control batches (transaction markers) go through
the general path too: their commits replay as pending for the batch's producer, and a marker
puts that producer's pending commits in place (COMMIT) or drops them (ABORT).

This module is compiled with the request path (setup.py): the walk is plain integer and bytes
indexing so that mypyc turns it into C; interpreted, it is the same code.
"""

from __future__ import annotations

import logging
import re
import struct
import types

from groupcoord.coordinator.consumer.records import RECORD_TYPES as CONSUMER_RECORD_TYPES
from groupcoord.coordinator.consumer.records import decode_record as decode_consumer_record
from groupcoord.coordinator.group import CommittedOffset
from groupcoord.coordinator.offset_messages import committed_offset
from groupcoord.coordinator.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
    decode_value,
    fast_offset_commit_value,
)
from groupcoord.formats.batch import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    decode_record_tuples,
    decompress,
)
from groupcoord.formats.varint import VarintError, read_varint
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.storage.control import ControlType, decode_marker

log = logging.getLogger(__name__)

__all__ = ["OffsetsLoader"]

# The 24 bytes of an OffsetCommitValue v3 with empty metadata, the record every OffsetCommit v6+
# writes: version, offset, leader epoch, metadata length (0), commit timestamp.
_V3_NO_METADATA = struct.Struct(">hqihq")
_I32 = struct.Struct(">i")
# An OffsetCommitKey whose only role is to select the offset-commit value layout.
_ANY_COMMIT_KEY = OffsetCommitKey(group="", topic="", partition=0)

#: a gathered commit: (topic, partition) -> its offset
Item = tuple[tuple[str, int], CommittedOffset]


def _interpreted_offsets() -> bool:
    """Whether ``CommittedOffset`` runs interpreted (a slotted class): the walk then makes the
    commonest committed offset (no metadata, no expiry) as a bare instance whose slots it sets
    itself, about a fifth of the cost of the keyword-only constructor. Compiled (mypyc), the
    class is native and its constructor is the fast way."""
    return isinstance(vars(CommittedOffset).get("offset"), types.MemberDescriptorType)


_INTERPRETED = _interpreted_offsets()


class Shape:
    """The layout of an offset commit record as OffsetCommit writes it, its varying parts aside:
    record length, a one-byte timestamp delta, an offset delta of ``od_width`` bytes, a key of
    ``klen`` bytes (v0 or v1) whose group part (length field and string) is ``group_width``
    bytes, then a 24-byte v3 value without metadata and no headers. ``pattern`` matches a run of
    such records; ``layout`` reads each one's group part, topic-and-partition part, offset,
    leader epoch and commit timestamp."""

    __slots__ = ("layout", "pattern", "size")

    def __init__(self, length_bytes: bytes, od_width: int, klen: int, group_width: int) -> None:
        suffix_width = klen - 2 - group_width
        od = rb"[\x00-\x7f]" if od_width == 1 else rb"[\x80-\xff]{%d}[\x00-\x7f]" % (od_width - 1)
        record = (
            re.escape(length_bytes)
            + rb"[\x00-\xff][\x00-\x7f]"  # attributes, timestamp delta
            + od
            + re.escape(bytes([klen << 1]))  # zig-zag key length, one byte
            + rb"\x00[\x00\x01]"  # key version 0 or 1
            + rb"[\x00-\xff]{%d}" % (group_width + suffix_width)
            + rb"\x30\x00\x03[\x00-\xff]{12}\x00\x00[\x00-\xff]{8}"  # value: 24 bytes, v3, no metadata
            + rb"\x00"  # no headers
        )
        self.pattern = re.compile(b"(?:" + record + b")+")
        skip = len(length_bytes) + 2 + od_width + 1 + 2
        self.layout = struct.Struct(f">{skip}x{group_width}s{suffix_width}s3xqi2xqx")
        self.size = self.layout.size


class OffsetsLoader:
    """Replays the batches of one partition, fed in log order; then :meth:`finish`."""

    def __init__(self, coordinator: GroupCoordinator, topic: str, partition: int) -> None:
        self._coordinator = coordinator
        self._topic = topic
        self._partition = partition
        #: validated commit key suffix (topic length, topic, partition) -> its (topic, partition).
        self._tp_cache: dict[bytes, tuple[str, int]] = {}
        #: (length varint bytes, offset delta width, key length, group width) -> its Shape.
        self._shapes: dict[tuple[bytes, int, int, int], Shape] = {}
        #: records replayed (superseded commits included; undecodable ones not).
        self.records = 0

    # ------------------------------------------------------------------ feeding
    def feed(self, header: BatchHeader, batch: bytes) -> None:
        """One batch of the partition (the whole batch's bytes, header included)."""
        if header.is_control or header.is_transactional:
            self._feed_transactional(header, batch)
            return
        codec = header.compression
        if codec == 0:
            done = self._walk(batch, BATCH_HEADER_SIZE, header.record_count, header.base_offset)
        else:
            block = decompress(codec, memoryview(batch)[BATCH_HEADER_SIZE:])
            done = self._walk(block, 0, header.record_count, header.base_offset)
        if done < header.record_count:
            self._slow_rest(batch, done)

    def finish(self) -> int:
        """The number of records loaded (every batch is applied as it is fed)."""
        return self.records

    def _walk(self, block: bytes, p: int, count: int, base_offset: int) -> int:
        """Replay the records of a records block starting at ``p``; the index of the first
        record left to the strict decoder (``count`` when none is)."""
        end = len(block)
        tp_cache = self._tp_cache
        interpreted = _INTERPRETED
        new = object.__new__
        unpack_v3 = _V3_NO_METADATA.unpack_from
        replay_offsets = self._coordinator.replay_offsets
        prefix = b""  # the group part of the current run's keys: its length field and its bytes
        group = ""
        items: list[Item] = []
        commits = 0
        #: the shape of the last commit read one by one, while the records after it may share it
        shape: Shape | None = None
        i = 0
        try:
            while i < count:
                if shape is not None:
                    n = self._run(block, p, count - i, shape, prefix, items)
                    if n:
                        p += n * shape.size
                        i += n
                        commits += n
                    shape = None
                    continue
                start = p
                # Varints of one byte (and, for the record length and the offset delta, of two:
                # a record over 63 bytes, a batch over 64 records) take the inline path.
                b = block[p]
                if b < 0x80:
                    length = (b >> 1) ^ -(b & 1)
                    p += 1
                elif block[p + 1] < 0x80:
                    v = (b & 0x7F) | (block[p + 1] << 7)
                    length = (v >> 1) ^ -(v & 1)
                    p += 2
                else:
                    length, p = read_varint(block, p)
                length_end = p
                rec_end = p + length
                if length < 0 or rec_end > end:
                    break  # the strict decoder reports it
                if block[p + 1] < 0x80:  # attributes, then the timestamp delta (unused)
                    p += 2
                else:
                    p = read_varint(block, p + 1)[1]
                od_at = p  # the offset delta, read only for a record of the general path
                if block[p] < 0x80:
                    p += 1
                elif block[p + 1] < 0x80:
                    p += 2
                else:
                    p = read_varint(block, p)[1]
                od_end = p
                b = block[p]
                if b < 0x80:
                    klen = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    klen, p = read_varint(block, p)
                kp = p
                if klen > 0:
                    p += klen
                b = block[p]
                if b < 0x80:
                    vlen = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    vlen, p = read_varint(block, p)
                vp = p
                if vlen > 0:
                    p += vlen
                if p + 1 != rec_end or block[p] != 0:
                    break  # record headers, or fields past the record: the strict decoder
                p = rec_end
                co: CommittedOffset | None = None
                tp: tuple[str, int] | None = None
                if klen >= 4 and vlen >= 0 and block[kp] == 0 and block[kp + 1] < 2:
                    # An offset commit (key v0 and v1 have one layout).
                    key_end = kp + klen
                    e = kp + 2 + len(prefix)
                    if not prefix or not block.startswith(prefix, kp + 2):
                        e = self._group_end(block, kp, key_end)
                        if e >= 0:
                            if items:
                                replay_offsets(group, items)
                                items = []
                            group = block[kp + 4 : e].decode("utf-8")
                            prefix = block[kp + 2 : e]
                    if e >= 0:
                        suffix = block[e:key_end]
                        tp = tp_cache.get(suffix)
                        if tp is None:
                            tp = self._topic_partition(suffix)
                    if tp is not None:
                        version = metadata_length = -1
                        if vlen == 24:
                            version, offset, epoch, metadata_length, commit_ts = unpack_v3(block, vp)
                        if version == 3 and metadata_length == 0:
                            if interpreted:
                                co = new(CommittedOffset)
                                co.offset = offset
                                co.leader_epoch = None if epoch == -1 else epoch
                                co.metadata = ""
                                co.commit_timestamp = commit_ts
                                co.expire_timestamp = None
                                if od_at - length_end == 2 and kp == od_end + 1 and vp == key_end + 1:
                                    # One-byte timestamp delta and key and value lengths: the
                                    # records after it may be laid out alike (_run).
                                    shape = self._shape(
                                        block[start:length_end], od_end - od_at, klen, len(prefix)
                                    )
                            else:
                                co = CommittedOffset(
                                    offset=offset,
                                    leader_epoch=None if epoch == -1 else epoch,
                                    metadata="",
                                    commit_timestamp=commit_ts,
                                    expire_timestamp=None,
                                )
                        else:
                            co = _committed_offset_or_none(block[vp : vp + vlen])
                if co is not None and tp is not None:
                    items.append((tp, co))
                    commits += 1
                elif klen >= 0:
                    # Any other record: the commits before it first, then the general path.
                    if items:
                        replay_offsets(group, items)
                        items = []
                    od = read_varint(block, od_at)[0]
                    key = block[kp : kp + klen]
                    self._replay_one(base_offset + od, key, None if vlen < 0 else block[vp : vp + vlen])
                i += 1
        except (IndexError, VarintError):
            pass  # bytes the walk cannot read: the strict decoder reports them
        if items:
            replay_offsets(group, items)
        self.records += commits
        return i

    def _shape(self, length_bytes: bytes, od_width: int, klen: int, group_width: int) -> Shape:
        key = (length_bytes, od_width, klen, group_width)
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = Shape(length_bytes, od_width, klen, group_width)
        return shape

    def _run(self, block: bytes, p: int, limit: int, shape: Shape, prefix: bytes, items: list[Item]) -> int:
        """The offset commits at ``p`` of the current group laid out exactly as ``shape`` (at most
        ``limit``), appended to ``items``; how many. Interpreted Python pays per byte code, so a
        run of commits is checked by one regular expression match (the framing of every record:
        its length, varint widths, key version and length, a 24-byte v3 value without metadata,
        no headers) and read by one ``struct.iter_unpack``; what is left per record is its group
        (compared), its topic and partition (cached) and the offset object."""
        size = shape.size
        match = shape.pattern.match(block, p, p + limit * size)
        if match is None:
            return 0
        tp_cache = self._tp_cache
        append = items.append
        first = len(items)
        rows = shape.layout.iter_unpack(memoryview(block)[p : match.end()])
        if _INTERPRETED:
            new = object.__new__
            for group_bytes, suffix, offset, epoch, commit_ts in rows:
                if group_bytes != prefix:
                    break  # another group: read one by one
                tp = tp_cache.get(suffix)
                if tp is None:
                    tp = self._topic_partition(suffix)
                    if tp is None:
                        break  # not a topic and partition: the general path decides
                co = new(CommittedOffset)
                co.offset = offset
                co.leader_epoch = None if epoch == -1 else epoch
                co.metadata = ""
                co.commit_timestamp = commit_ts
                co.expire_timestamp = None
                append((tp, co))
        else:
            for group_bytes, suffix, offset, epoch, commit_ts in rows:
                if group_bytes != prefix:
                    break
                tp = tp_cache.get(suffix)
                if tp is None:
                    tp = self._topic_partition(suffix)
                    if tp is None:
                        break
                append(
                    (
                        tp,
                        CommittedOffset(
                            offset=offset,
                            leader_epoch=None if epoch == -1 else epoch,
                            metadata="",
                            commit_timestamp=commit_ts,
                            expire_timestamp=None,
                        ),
                    )
                )
        return len(items) - first

    @staticmethod
    def _group_end(block: bytes, kp: int, key_end: int) -> int:
        """Where the group string of the commit key at ``kp`` ends, or -1 if the key cannot hold
        it and a topic and partition after it, or the group is not UTF-8."""
        if block[kp + 2] >= 0x80:
            return -1  # a negative length: a null string
        e = kp + 4 + ((block[kp + 2] << 8) | block[kp + 3])
        if e + 6 > key_end:
            return -1
        try:
            block[kp + 4 : e].decode("utf-8")
        except UnicodeDecodeError:
            return -1
        return e

    def _topic_partition(self, suffix: bytes) -> tuple[str, int] | None:
        """The (topic, partition) of a commit key's suffix (topic length, topic, partition), or
        None if it is not exactly that or the topic is not UTF-8."""
        if len(suffix) < 6 or suffix[0] >= 0x80:
            return None
        t_end = 2 + ((suffix[0] << 8) | suffix[1])
        if t_end + 4 != len(suffix):
            return None
        try:
            topic = suffix[2:t_end].decode("utf-8")
        except UnicodeDecodeError:
            return None
        tp = (topic, _I32.unpack_from(suffix, t_end)[0])
        self._tp_cache[suffix] = tp
        return tp

    def _feed_transactional(self, header: BatchHeader, batch: bytes) -> None:
        """A TxnOffsetCommit's batch (its commits pending for the producer) or a transaction
        marker (the producer's pending commits of this partition put in place or dropped), in
        log order after what came before (Kafka 4.x ``CoordinatorLoaderImpl``: a control batch
        replays as an end-transaction marker, a transactional one with its producer id)."""
        rows = decode_record_tuples(batch, 0)[1]
        if header.is_control:
            for offset, _ts, key, value, _headers, _attrs in rows:
                try:
                    marker = decode_marker(key, value)
                except ValueError as exc:
                    where = (self._topic, self._partition, offset)
                    log.warning("%s-%d offset %d: control record skipped: %s", *where, exc)
                    continue
                self._coordinator.replay_end_transaction(
                    self._partition, header.producer_id, marker.type is ControlType.COMMIT
                )
            return
        for offset, _ts, key, value, _headers, _attrs in rows:
            if key is None:
                continue
            try:
                record = decode_record(key, value)
            except ValueError as exc:
                where = (self._topic, self._partition, offset)
                log.warning("%s-%d offset %d: undecodable record skipped: %s", *where, exc)
                continue
            if record is not None:
                self._coordinator.replay_transactional(record, header.producer_id)
                self.records += 1

    def _slow_rest(self, batch: bytes, first: int) -> None:
        """Records ``first``.. of a batch the walk did not accept (record headers, or bytes it
        cannot read), through the strict decoder, which raises on a corrupt batch exactly as
        the general loader does, and the general path."""
        rows = decode_record_tuples(batch, 0)[1]
        for i in range(first, len(rows)):
            offset, _ts, key, value, _headers, _attrs = rows[i]
            if key is not None:
                self._replay_one(offset, key, value)

    def _replay_one(self, offset: int, key: bytes, value: bytes | None) -> None:
        """The general path: decode the record fully and replay it."""
        if len(key) >= 2 and int.from_bytes(key[:2], "big", signed=True) in CONSUMER_RECORD_TYPES:
            # A consumer group's record (KIP-848, types 3-8 and 16).
            try:
                consumer = decode_consumer_record(key, value)
            except ValueError as exc:
                log.warning(
                    "%s-%d offset %d: undecodable record skipped: %s",
                    self._topic,
                    self._partition,
                    offset,
                    exc,
                )
                return
            if consumer is not None:
                self._coordinator.replay_consumer_record(consumer)
                self.records += 1
            return
        try:
            record = decode_record(key, value)
        except ValueError as exc:
            log.warning(
                "%s-%d offset %d: undecodable record skipped: %s", self._topic, self._partition, offset, exc
            )
            return
        if record is None:
            log.warning("%s-%d offset %d: unknown record type skipped", self._topic, self._partition, offset)
            return
        self._coordinator.replay(record)
        self.records += 1


def _committed_offset_or_none(value: bytes) -> CommittedOffset | None:
    """Any OffsetCommitValue version as the stored offset, or None if it does not decode (the
    general path then logs and skips the record)."""
    try:
        return _committed_offset(value)
    except (ValueError, struct.error):
        return None


def _committed_offset(value: bytes) -> CommittedOffset:
    """Any OffsetCommitValue version (ValueError if malformed), as the stored offset."""
    fast = fast_offset_commit_value(value)
    if fast is not None:
        _version, offset, epoch, metadata, commit_ts, expire_ts = fast
        return CommittedOffset(
            offset=offset,
            leader_epoch=epoch,
            metadata=metadata,
            commit_timestamp=commit_ts,
            expire_timestamp=expire_ts,
        )
    decoded = decode_value(_ANY_COMMIT_KEY, value)
    assert isinstance(decoded, OffsetCommitValue)
    return committed_offset(decoded)
