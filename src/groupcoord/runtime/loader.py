"""Bulk replay of one ``__consumer_offsets`` partition into the group coordinator.

The general way to load is to decode every record (:func:`records.decode_record`) and hand it
to :meth:`GroupCoordinator.replay`, in log order. :class:`OffsetsLoader` reaches the same state
(same groups in the same order, same offsets in the same dict order, same values) with much
less work per record, because nearly every record is an offset commit:

* it walks each batch's records block with the storage walker (:func:`iter_record_spans`),
  which yields where each record's key and value lie without copying them;
* an offset commit (key v0/v1 with a value that decodes) is only remembered, as raw key bytes (a v0 key
  rewritten as the v1 key it equals) -> raw value bytes in a dict in first-seen order (a later
  commit of the same key replaces the value and keeps the place, exactly what assigning into
  the group's offsets dict does);
* any other record (an offset tombstone, a group record or tombstone, an unknown record type)
  is a *barrier*: the remembered commits are applied first, then the record is replayed by
  the general path, so everything keeps its log-order meaning;
* applying the remembered commits decodes each key and value once, straight into
  ``CommittedOffset`` objects, and replays them group by group
  (:meth:`GroupCoordinatorShard.replay_offsets`, the bulk form of replaying each commit).

Between two barriers only commits occur, and replaying commits only ever creates an
offsets-only group (on the first commit of a group that has none) and assigns into its
offsets dict; applying the surviving value of each key in first-seen order therefore gives
the state a full replay gives. A commit whose value does not decode is treated as a barrier
(the general path logs and skips it), so it neither takes a place nor hides an earlier value.
If a remembered key does not decode, nothing of that stretch has been applied yet, and the
stretch is replayed record by record through the general path instead.

Transactional batches (TxnOffsetCommit) and control batches (transaction markers) are barriers:
their commits replay as pending for the batch's producer, and a marker puts that producer's
pending commits in place (COMMIT) or drops them (ABORT).
"""

from __future__ import annotations

import logging
import struct
import types
from collections.abc import Callable

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
    CorruptBatchError,
    decode_record_tuples,
    decompress,
    iter_record_spans,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.storage.control import ControlType, decode_marker

log = logging.getLogger(__name__)

__all__ = ["OffsetsLoader"]

#: Remembered commits applied at once when no barrier came for this many records.
MAX_PENDING = 100_000

# OffsetCommitValue v3 with empty metadata, the record every OffsetCommit v6+ writes:
# version, offset, leader epoch, metadata length (0), commit timestamp.
_V3_NO_METADATA = struct.Struct(">hqihq")
_I32 = struct.Struct(">i")
# An OffsetCommitKey whose only role is to select the offset-commit value layout.
_ANY_COMMIT_KEY = OffsetCommitKey(group="", topic="", partition=0)

_KEY_V1 = b"\x00\x01"


def _no_metadata_offset_maker() -> Callable[[int, int | None, int], CommittedOffset]:
    """A maker of the commonest committed offset (no metadata, no expiry) for the loader's hot loop.

    Interpreted, a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``;
    setting the slots through their descriptors on a bare instance costs a third of that. Compiled
    (mypyc), the class is native: its constructor is the fast way and its slots are not descriptors.
    """
    slots = vars(CommittedOffset)
    offset_slot = slots.get("offset")
    if not isinstance(offset_slot, types.MemberDescriptorType):
        return lambda offset, epoch, commit_ts: CommittedOffset(
            offset=offset, leader_epoch=epoch, metadata="", commit_timestamp=commit_ts, expire_timestamp=None
        )
    new = object.__new__
    set_offset = offset_slot.__set__
    set_epoch = slots["leader_epoch"].__set__
    set_metadata = slots["metadata"].__set__
    set_commit = slots["commit_timestamp"].__set__
    set_expire = slots["expire_timestamp"].__set__

    def make(offset: int, epoch: int | None, commit_ts: int) -> CommittedOffset:
        co: CommittedOffset = new(CommittedOffset)
        set_offset(co, offset)
        set_epoch(co, epoch)
        set_metadata(co, "")
        set_commit(co, commit_ts)
        set_expire(co, None)
        return co

    return make


class _Undecodable(Exception):
    """A remembered commit whose key or value does not decode."""


class OffsetsLoader:
    """Replays the batches of one partition, fed in log order; then :meth:`finish`."""

    def __init__(self, coordinator: GroupCoordinator, topic: str, partition: int) -> None:
        self._coordinator = coordinator
        self._topic = topic
        self._partition = partition
        #: raw key -> raw value of the commits since the last barrier, first-seen order.
        self._pending: dict[bytes, bytes] = {}
        #: commit records behind ``_pending`` (superseded ones included).
        self._npending = 0
        #: (batch bytes, index of its first record not yet applied) since the last barrier,
        #: for the record-by-record fallback.
        self._window: list[tuple[bytes, int]] = []
        #: validated key suffix (topic string + partition) -> its dict key.
        self._tp_cache: dict[bytes, tuple[str, int]] = {}
        #: records replayed or applied (superseded commits included; undecodable ones not).
        self.records = 0

    # ------------------------------------------------------------------ feeding
    def feed(self, header: BatchHeader, batch: bytes) -> None:
        """One batch of the partition (the whole batch's bytes, header included)."""
        if header.is_control or header.is_transactional:
            self._feed_transactional(header, batch)
            return
        codec = header.compression
        if codec == 0:
            block = batch[BATCH_HEADER_SIZE:]
        else:
            block = decompress(codec, memoryview(batch)[BATCH_HEADER_SIZE:])
        self._window.append((batch, 0))
        pending = self._pending
        commits = 0
        i = 0
        slow = walking = False
        try:
            walking = True
            for _attrs, _ts, od, kp, klen, vp, vlen, hp, rec_end in iter_record_spans(
                block, header.record_count
            ):
                if block[hp] != 0 or hp + 1 != rec_end:
                    slow = True  # record headers: rare here, left to the strict decoder
                    break
                if klen >= 2 and vlen >= 0 and block[kp] == 0 and block[kp + 1] < 2:
                    value = block[vp : vp + vlen]
                    # The value must decode: a commit that does not is skipped by a replay,
                    # so it must neither take a place in the dict nor hide the previous value.
                    if (
                        vlen == 24 and value[1] == 3 and value[0] == 0 and value[14] == 0 and value[15] == 0
                    ) or _decodes(value):
                        if block[kp + 1]:
                            pending[block[kp : kp + klen]] = value
                        else:  # key v0 names the same offset as key v1 with the same fields
                            pending[_KEY_V1 + block[kp + 2 : kp + klen]] = value
                        commits += 1
                        i += 1
                        continue
                if klen >= 0:  # a barrier, an undecodable commit included
                    walking = False
                    self._npending += commits
                    commits = 0
                    self.flush(end_index=i)
                    pending = self._pending
                    key = block[kp : kp + klen]
                    raw = None if vlen < 0 else block[vp : vp + vlen]
                    self._replay_one(header.base_offset + od, key, raw)
                    self._window = [(batch, i + 1)]
                    walking = True
                i += 1
        except CorruptBatchError:
            if not walking:
                raise
            slow = True  # bytes the walker cannot read: the strict decoder reports them
        self._npending += commits
        if slow:
            self._slow_rest(header, batch, i)
        if self._npending >= MAX_PENDING:
            self.flush(end_index=None)

    def _feed_transactional(self, header: BatchHeader, batch: bytes) -> None:
        """A TxnOffsetCommit's batch (its commits pending for the producer) or a transaction
        marker (the producer's pending commits of this partition put in place or dropped), in
        log order after what came before (Kafka 4.x ``CoordinatorLoaderImpl``: a control batch
        replays as an end-transaction marker, a transactional one with its producer id)."""
        self.flush(end_index=None)
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

    def finish(self) -> int:
        """Apply what is left; the number of records loaded."""
        self.flush(end_index=None)
        return self.records

    def _slow_rest(self, header: BatchHeader, batch: bytes, first: int) -> None:
        """Records ``first``.. of a batch the inline walk did not accept (record headers, or
        bytes it cannot read), through the strict decoder, which raises on a corrupt batch
        exactly as the general loader does."""
        rows = decode_record_tuples(batch, 0)[1]
        for i in range(first, len(rows)):
            offset, _ts, key, value, _headers, _attrs = rows[i]
            if key is None:
                continue
            if value is not None and key[:1] == b"\0" and key[1:2] in (b"\0", b"\1") and _decodes(value):
                self._pending[_KEY_V1 + key[2:]] = value
                self._npending += 1
                continue
            self.flush(end_index=i)
            self._replay_one(offset, key, value)
            self._window = [(batch, i + 1)]

    # ------------------------------------------------------------------ applying
    def flush(self, end_index: int | None) -> None:
        """Apply the remembered commits. ``end_index``: the record of the window's last batch
        at which the stretch ends (a barrier), or None for the end of that batch."""
        pending = self._pending
        if pending:
            try:
                segments = self._decode_pending(pending)
            except _Undecodable:
                self._replay_window(end_index)
            else:
                replay_offsets = self._coordinator.replay_offsets
                for group_id, items in segments:
                    replay_offsets(group_id, items)
                self.records += self._npending
            self._pending = {}
        self._npending = 0
        self._window = []

    def _decode_pending(
        self, pending: dict[bytes, bytes]
    ) -> list[tuple[str, list[tuple[tuple[str, int], CommittedOffset]]]]:
        """The remembered commits decoded, as runs of consecutive keys of one group."""
        make = _no_metadata_offset_maker()
        unpack_v3 = _V3_NO_METADATA.unpack
        tp_cache = self._tp_cache
        segments: list[tuple[str, list[tuple[tuple[str, int], CommittedOffset]]]] = []
        items: list[tuple[tuple[str, int], CommittedOffset]] = []
        last_prefix = b""
        try:
            for k, v in pending.items():
                e = 4 + ((k[2] << 8) | k[3])
                prefix = k[:e]
                if prefix != last_prefix:
                    if k[2] >= 0x80 or len(k) < e:
                        raise _Undecodable
                    items = []
                    segments.append((k[4:e].decode("utf-8"), items))
                    last_prefix = prefix
                tp = tp_cache.get(k[e:])
                if tp is None:
                    tp = self._topic_partition(k, e)
                # Values were checked by _scan: 24 bytes of version 3 is the no-metadata layout.
                if len(v) == 24 and v[1] == 3:
                    _version, offset, epoch, _mlen, commit_ts = unpack_v3(v)
                    co = make(offset, None if epoch == -1 else epoch, commit_ts)
                else:
                    co = _committed_offset(v)
                items.append((tp, co))
        except (IndexError, ValueError, struct.error) as exc:  # UnicodeDecodeError is a ValueError
            raise _Undecodable from exc
        return segments

    def _topic_partition(self, key: bytes, e: int) -> tuple[str, int]:
        """The (topic, partition) of a commit key whose topic length field is at ``e``."""
        if len(key) < e + 6 or key[e] >= 0x80:
            raise _Undecodable
        t_end = e + 2 + ((key[e] << 8) | key[e + 1])
        if t_end + 4 != len(key):
            raise _Undecodable
        tp = (key[e + 2 : t_end].decode("utf-8"), _I32.unpack_from(key, t_end)[0])
        self._tp_cache[key[e:]] = tp
        return tp

    def _replay_window(self, end_index: int | None) -> None:
        """Replay the stretch since the last barrier record by record (a remembered commit
        did not decode): the general loader's behaviour, including its warnings."""
        last = len(self._window) - 1
        for n, (batch, first) in enumerate(self._window):
            rows = decode_record_tuples(batch, 0)[1]
            stop = end_index if n == last and end_index is not None else len(rows)
            for offset, _ts, key, value, _headers, _attrs in rows[first:stop]:
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


def _decodes(value: bytes) -> bool:
    """Whether ``value`` is a well-formed OffsetCommitValue (of any version)."""
    try:
        _committed_offset(value)
    except (ValueError, struct.error):
        return False
    return True


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
