"""The ``__consumer_offsets`` records of consumer groups, as Kafka 4.1 writes them.

Layouts from Kafka 4.1's ``group-coordinator/src/main/resources/common/message/ConsumerGroup*.json``.
A key is an int16 record type followed by the key fields, non-flexible (int16-length strings). A
value is an int16 version, 0 for every consumer-group value, followed by the fields in the
flexible encoding (compact strings and arrays, 16-byte uuids, a tagged-field section closing every
struct). A ``None`` value is a tombstone.

* type 3, ConsumerGroupMetadata (GroupId): Epoch int32; tagged 0: MetadataHash int64.
* type 4, ConsumerGroupPartitionMetadata (GroupId): Topics []{TopicId, TopicName, NumPartitions,
  PartitionMetadata []{Partition, Racks []}}. Written by 4.0; 4.1 only tombstones it.
* type 5, ConsumerGroupMemberMetadata (GroupId, MemberId): InstanceId?, RackId?, ClientId,
  ClientHost, SubscribedTopicNames [], SubscribedTopicRegex?, RebalanceTimeoutMs int32,
  ServerAssignor?; tagged 0: ClassicMemberMetadata? {SessionTimeoutMs, SupportedProtocols
  []{Name, Metadata bytes}}.
* type 6, ConsumerGroupTargetAssignmentMetadata (GroupId): AssignmentEpoch int32; tagged 0:
  AssignmentTimestamp int64 (Kafka 4.3, KAFKA-20266: when the last target computation finished;
  0, the default, means unknown, and a 4.1 reader skips the tag).
* type 7, ConsumerGroupTargetAssignmentMember (GroupId, MemberId): TopicPartitions []{TopicId
  uuid, Partitions []int32}.
* type 8, ConsumerGroupCurrentMemberAssignment (GroupId, MemberId): MemberEpoch int32,
  PreviousMemberEpoch int32, State int8, AssignedPartitions [], PartitionsPendingRevocation [].
* type 16, ConsumerGroupRegularExpression (GroupId, RegularExpression): Topics []string,
  Version int64, Timestamp int64.

A tagged field is written only when it differs from its default (hash 0, no classic metadata),
as Kafka's generated writers do. Kafka writes assignments from hash maps; we write topics in
``Uuid.compareTo`` order and partitions ascending, so our bytes are deterministic (a reader does
not depend on the order). Subscribed topic names are written sorted, as Kafka does.

Types 0-2 (offsets, classic groups) stay in ``coordinator/records.py``; :func:`decode_record` here
returns ``None`` for any type that is not a consumer-group record, so a loader can offer every
record to both. Decoding is strict: truncation, trailing bytes and nulls where the schema forbids
them raise :class:`~groupcoord.coordinator.records.RecordDecodeError`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.coordinator.consumer.assignment import Assignment, assignment_of, topic_id_order
from groupcoord.coordinator.consumer.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from groupcoord.coordinator.records import RecordDecodeError
from groupcoord.protocol.primitives import WireWriter

__all__ = [
    "RECORD_TYPES",
    "ConsumerGroupCurrentMemberAssignmentKey",
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupMemberMetadataKey",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupMetadataKey",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupPartitionMetadataKey",
    "ConsumerGroupPartitionMetadataValue",
    "ConsumerGroupRecord",
    "ConsumerGroupRegularExpressionKey",
    "ConsumerGroupRegularExpressionValue",
    "ConsumerGroupTargetAssignmentMemberKey",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupTargetAssignmentMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "PartitionMetadataTopic",
    "decode_key",
    "decode_record",
    "decode_value",
    "encode_key",
    "encode_record",
    "encode_value",
]


# ------------------------------------------------------------------------------------ keys


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupPartitionMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupRegularExpressionKey:
    group_id: str
    regular_expression: str


# ---------------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionMetadataTopic:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int
    #: (partition, racks) pairs; 4.0 wrote this empty.
    partition_metadata: tuple[tuple[int, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[PartitionMetadataTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: ClassicMemberMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: Assignment


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    #: The raw int8; :meth:`MemberState.from_value` maps unknown values to UNKNOWN.
    state: int
    assigned_partitions: Assignment
    partitions_pending_revocation: Assignment

    @property
    def member_state(self) -> MemberState:
        return MemberState.from_value(self.state)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    version: int
    timestamp: int


ConsumerGroupKey = (
    ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
)
ConsumerGroupValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupRecord:
    """One record; ``value`` None is a tombstone."""

    key: ConsumerGroupKey
    value: ConsumerGroupValue | None

    def encode(self) -> tuple[bytes, bytes | None]:
        """Key and value bytes as Kafka writes them (what the broker's record sink calls)."""
        return encode_record(self)


#: record type -> (key class, value class)
RECORD_TYPES: dict[int, tuple[type, type]] = {
    3: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    4: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    5: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    6: (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    7: (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    8: (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
    16: (ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
}
_TYPE_OF_KEY: dict[type, int] = {k: t for t, (k, _) in RECORD_TYPES.items()}
_TYPE_OF_VALUE: dict[type, int] = {v: t for t, (_, v) in RECORD_TYPES.items()}
VALUE_VERSION = 0


# ---------------------------------------------------------------------------------- encode


def encode_key(key: ConsumerGroupKey) -> bytes:
    w = WireWriter(flexible=False, checked=True)
    w.int16(_TYPE_OF_KEY[type(key)])
    w.string(key.group_id, "GroupId")
    if isinstance(
        key,
        ConsumerGroupMemberMetadataKey
        | ConsumerGroupTargetAssignmentMemberKey
        | ConsumerGroupCurrentMemberAssignmentKey,
    ):
        w.string(key.member_id, "MemberId")
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        w.string(key.regular_expression, "RegularExpression")
    return w.getvalue()


def _write_uuid(w: WireWriter, u: uuid.UUID) -> None:
    w.raw(u.bytes)


def _write_topic_partitions(w: WireWriter, assignment: Assignment) -> None:
    topics = sorted(assignment, key=topic_id_order)
    w.array_length(len(topics))
    for topic_id in topics:
        _write_uuid(w, topic_id)
        parts = sorted(assignment[topic_id])
        w.array_length(len(parts))
        for p in parts:
            w.int32(p)
        w.tagged_fields()


def _write_strings(w: WireWriter, items: tuple[str, ...], field: str) -> None:
    w.array_length(len(items))
    for s in items:
        w.string(s, field)


def _tagged(w: WireWriter, fields: list[tuple[int, bytes]]) -> None:
    w.uvarint(len(fields))
    for tag, data in fields:
        w.uvarint(tag)
        w.uvarint(len(data))
        w.raw(data)


def encode_value(value: ConsumerGroupValue | None) -> bytes | None:
    """Value bytes (version 0), or None for a tombstone."""
    if value is None:
        return None
    w = WireWriter(flexible=True, checked=True)
    w.int16(VALUE_VERSION)
    if isinstance(value, ConsumerGroupMetadataValue):
        w.int32(value.epoch)
        _tagged(w, [(0, struct.pack(">q", value.metadata_hash))] if value.metadata_hash != 0 else [])
        return w.getvalue()
    if isinstance(value, ConsumerGroupPartitionMetadataValue):
        w.array_length(len(value.topics))
        for t in value.topics:
            _write_uuid(w, t.topic_id)
            w.string(t.topic_name, "TopicName")
            w.int32(t.num_partitions)
            w.array_length(len(t.partition_metadata))
            for partition, racks in t.partition_metadata:
                w.int32(partition)
                _write_strings(w, racks, "Racks")
                w.tagged_fields()
            w.tagged_fields()
    elif isinstance(value, ConsumerGroupMemberMetadataValue):
        w.string(value.instance_id, "InstanceId")
        w.string(value.rack_id, "RackId")
        w.string(value.client_id, "ClientId")
        w.string(value.client_host, "ClientHost")
        _write_strings(w, value.subscribed_topic_names, "SubscribedTopicNames")
        w.string(value.subscribed_topic_regex, "SubscribedTopicRegex")
        w.int32(value.rebalance_timeout_ms)
        w.string(value.server_assignor, "ServerAssignor")
        classic = value.classic_member_metadata
        if classic is None:
            _tagged(w, [])
        else:
            cw = WireWriter(flexible=True, checked=True)
            cw.int32(classic.session_timeout_ms)
            cw.array_length(len(classic.supported_protocols))
            for name, metadata in classic.supported_protocols:
                cw.string(name, "Name")
                cw.bytes_(metadata)
                cw.tagged_fields()
            cw.tagged_fields()
            _tagged(w, [(0, cw.getvalue())])
        return w.getvalue()
    elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        w.int32(value.assignment_epoch)
        stamp = value.assignment_timestamp
        _tagged(w, [(0, struct.pack(">q", stamp))] if stamp != 0 else [])
        return w.getvalue()
    elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        _write_topic_partitions(w, value.topic_partitions)
    elif isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
        w.int32(value.member_epoch)
        w.int32(value.previous_member_epoch)
        w.int8(value.state)
        _write_topic_partitions(w, value.assigned_partitions)
        _write_topic_partitions(w, value.partitions_pending_revocation)
    elif isinstance(value, ConsumerGroupRegularExpressionValue):
        _write_strings(w, value.topics, "Topics")
        w.int64(value.version)
        w.int64(value.timestamp)
    else:
        raise TypeError(f"not a consumer group record value: {value!r}")
    w.tagged_fields()
    return w.getvalue()


def encode_record(record: ConsumerGroupRecord) -> tuple[bytes, bytes | None]:
    if record.value is not None and _TYPE_OF_VALUE[type(record.value)] != _TYPE_OF_KEY[type(record.key)]:
        raise TypeError(
            f"value {type(record.value).__name__} does not go with key {type(record.key).__name__}"
        )
    return encode_key(record.key), encode_value(record.value)


# ---------------------------------------------------------------------------------- decode


class _Reader:
    """Reads Kafka primitives from ``data``; every failure is a RecordDecodeError."""

    __slots__ = ("data", "flexible", "pos", "what")

    def __init__(self, data: bytes, what: str, *, flexible: bool) -> None:
        self.data = data
        self.pos = 0
        self.what = what
        self.flexible = flexible

    def fail(self, msg: str) -> RecordDecodeError:
        return RecordDecodeError(f"malformed {self.what} at byte {self.pos}: {msg}")

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise self.fail(f"need {n} bytes, {len(self.data) - self.pos} left")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def _int(self, fmt: str, size: int) -> int:
        v: int = struct.unpack(fmt, self.take(size))[0]
        return v

    def int8(self) -> int:
        return self._int(">b", 1)

    def int16(self) -> int:
        return self._int(">h", 2)

    def int32(self) -> int:
        return self._int(">i", 4)

    def int64(self) -> int:
        return self._int(">q", 8)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.take(16))

    def uvarint(self) -> int:
        result = 0
        for shift in range(0, 35, 7):
            (b,) = self.take(1)
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
        raise self.fail("unsigned varint longer than 5 bytes")

    def nullable_string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.int16()
        if n == -1:
            return None
        if n < 0:
            raise self.fail(f"negative string length {n}")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"string is not valid UTF-8 ({exc.reason})") from None

    def string(self, field: str) -> str:
        s = self.nullable_string()
        if s is None:
            raise self.fail(f"{field} is null but the schema does not allow null")
        return s

    def bytes_(self, field: str) -> bytes:
        n = self.uvarint() - 1
        if n < 0:
            raise self.fail(f"{field} is null but the schema does not allow null")
        return self.take(n)

    def array(self, field: str) -> int:
        n = self.uvarint() - 1
        if n < 0:
            raise self.fail(f"{field} is null but the schema does not allow null")
        return n

    def tagged(self, known: dict[int, Callable[[_Reader], None]] | None = None) -> None:
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            body = self.take(size)
            handler = (known or {}).get(tag)
            if handler is not None:
                sub = _Reader(body, f"{self.what} tag {tag}", flexible=True)
                handler(sub)
                sub.finish()

    def finish(self) -> None:
        if self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} trailing bytes")


def decode_key(data: bytes) -> ConsumerGroupKey | None:
    """The key, or None when ``data`` is not a consumer-group record type (0-2, share, streams)."""
    r = _Reader(bytes(data), "record key", flexible=False)
    record_type = r.int16()
    if record_type not in RECORD_TYPES:
        return None
    group_id = r.string("GroupId")
    key: ConsumerGroupKey
    if record_type == 3:
        key = ConsumerGroupMetadataKey(group_id=group_id)
    elif record_type == 4:
        key = ConsumerGroupPartitionMetadataKey(group_id=group_id)
    elif record_type == 5:
        key = ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=r.string("MemberId"))
    elif record_type == 6:
        key = ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id)
    elif record_type == 7:
        key = ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=r.string("MemberId"))
    elif record_type == 8:
        key = ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=r.string("MemberId"))
    else:
        key = ConsumerGroupRegularExpressionKey(
            group_id=group_id, regular_expression=r.string("RegularExpression")
        )
    r.finish()
    return key


def _read_topic_partitions(r: _Reader, field: str) -> Assignment:
    out: dict[uuid.UUID, list[int]] = {}
    for _ in range(r.array(field)):
        topic_id = r.uuid()
        parts = [r.int32() for _ in range(r.array("Partitions"))]
        r.tagged()
        out.setdefault(topic_id, []).extend(parts)
    return assignment_of(out)


def _read_strings(r: _Reader, field: str) -> tuple[str, ...]:
    return tuple(r.string(field) for _ in range(r.array(field)))


def decode_value(key: ConsumerGroupKey, data: bytes | None) -> ConsumerGroupValue | None:
    if data is None:
        return None
    record_type = _TYPE_OF_KEY[type(key)]
    name = RECORD_TYPES[record_type][1].__name__
    r = _Reader(bytes(data), name, flexible=True)
    version = r.int16()
    if version != VALUE_VERSION:
        raise r.fail(f"unsupported value version {version}")
    value: ConsumerGroupValue
    if record_type == 3:
        epoch = r.int32()
        found: dict[str, int] = {}

        def _hash(sub: _Reader) -> None:
            found["hash"] = sub.int64()

        r.tagged({0: _hash})
        value = ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=found.get("hash", 0))
        r.finish()
        return value
    if record_type == 4:
        topics = []
        for _ in range(r.array("Topics")):
            topic_id = r.uuid()
            topic_name = r.string("TopicName")
            num_partitions = r.int32()
            pm = []
            for _ in range(r.array("PartitionMetadata")):
                partition = r.int32()
                racks = _read_strings(r, "Racks")
                r.tagged()
                pm.append((partition, racks))
            r.tagged()
            topics.append(
                PartitionMetadataTopic(
                    topic_id=topic_id,
                    topic_name=topic_name,
                    num_partitions=num_partitions,
                    partition_metadata=tuple(pm),
                )
            )
        value = ConsumerGroupPartitionMetadataValue(topics=tuple(topics))
    elif record_type == 5:
        instance_id = r.nullable_string()
        rack_id = r.nullable_string()
        client_id = r.string("ClientId")
        client_host = r.string("ClientHost")
        names = _read_strings(r, "SubscribedTopicNames")
        regex = r.nullable_string()
        rebalance_timeout = r.int32()
        assignor = r.nullable_string()
        classic: list[ClassicMemberMetadata] = []

        def _classic(sub: _Reader) -> None:
            session = sub.int32()
            protocols = []
            for _ in range(sub.array("SupportedProtocols")):
                pname = sub.string("Name")
                pdata = sub.bytes_("Metadata")
                sub.tagged()
                protocols.append((pname, pdata))
            sub.tagged()
            classic.append(
                ClassicMemberMetadata(session_timeout_ms=session, supported_protocols=tuple(protocols))
            )

        r.tagged({0: _classic})
        r.finish()
        return ConsumerGroupMemberMetadataValue(
            instance_id=instance_id,
            rack_id=rack_id,
            client_id=client_id,
            client_host=client_host,
            subscribed_topic_names=names,
            subscribed_topic_regex=regex,
            rebalance_timeout_ms=rebalance_timeout,
            server_assignor=assignor,
            classic_member_metadata=classic[0] if classic else None,
        )
    elif record_type == 6:
        assignment_epoch = r.int32()
        stamps: dict[str, int] = {}

        def _timestamp(sub: _Reader) -> None:
            stamps["timestamp"] = sub.int64()

        r.tagged({0: _timestamp})
        r.finish()
        return ConsumerGroupTargetAssignmentMetadataValue(
            assignment_epoch=assignment_epoch, assignment_timestamp=stamps.get("timestamp", 0)
        )
    elif record_type == 7:
        value = ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=_read_topic_partitions(r, "TopicPartitions")
        )
    elif record_type == 8:
        value = ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=r.int32(),
            previous_member_epoch=r.int32(),
            state=r.int8(),
            assigned_partitions=_read_topic_partitions(r, "AssignedPartitions"),
            partitions_pending_revocation=_read_topic_partitions(r, "PartitionsPendingRevocation"),
        )
    else:
        value = ConsumerGroupRegularExpressionValue(
            topics=_read_strings(r, "Topics"), version=r.int64(), timestamp=r.int64()
        )
    r.tagged()
    r.finish()
    return value


def decode_record(key_bytes: bytes, value_bytes: bytes | None) -> ConsumerGroupRecord | None:
    """One log record, or None when it is not a consumer-group record."""
    key = decode_key(key_bytes)
    if key is None:
        return None
    return ConsumerGroupRecord(key=key, value=decode_value(key, value_bytes))


# -------------------------------------------------------------------------- record factories
# One per record kind and tombstone, named after Kafka's GroupCoordinatorRecordHelpers.


def new_member_subscription_record(group_id: str, member: ConsumerGroupMember) -> ConsumerGroupRecord:
    """``newConsumerGroupMemberSubscriptionRecord``: the member's metadata (names sorted)."""
    return ConsumerGroupRecord(
        key=ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id),
        value=ConsumerGroupMemberMetadataValue(
            instance_id=member.instance_id,
            rack_id=member.rack_id,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
            subscribed_topic_regex=member.subscribed_topic_regex,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            server_assignor=member.server_assignor_name,
            classic_member_metadata=member.classic_member_metadata,
        ),
    )


def new_member_subscription_tombstone(group_id: str, member_id: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        key=ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id), value=None
    )


def new_group_epoch_record(group_id: str, epoch: int, metadata_hash: int) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        key=ConsumerGroupMetadataKey(group_id=group_id),
        value=ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash),
    )


def new_group_epoch_tombstone(group_id: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(key=ConsumerGroupMetadataKey(group_id=group_id), value=None)


def new_partition_metadata_tombstone(group_id: str) -> ConsumerGroupRecord:
    """4.1 writes only this tombstone of the 4.0 ConsumerGroupPartitionMetadata record."""
    return ConsumerGroupRecord(key=ConsumerGroupPartitionMetadataKey(group_id=group_id), value=None)


def new_target_assignment_record(
    group_id: str, member_id: str, assignment: Assignment
) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        key=ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
        value=ConsumerGroupTargetAssignmentMemberValue(topic_partitions=assignment),
    )


def new_target_assignment_tombstone(group_id: str, member_id: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        key=ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), value=None
    )


def new_target_assignment_epoch_record(
    group_id: str, assignment_epoch: int, assignment_timestamp: int = 0
) -> ConsumerGroupRecord:
    """Kafka 4.3's ``newConsumerGroupTargetAssignmentMetadataRecord``: the epoch and the time the
    computation finished (0 where none was made: a classic group's upgrade)."""
    return ConsumerGroupRecord(
        key=ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
        value=ConsumerGroupTargetAssignmentMetadataValue(
            assignment_epoch=assignment_epoch, assignment_timestamp=assignment_timestamp
        ),
    )


def new_target_assignment_epoch_tombstone(group_id: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(key=ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id), value=None)


def new_current_assignment_record(group_id: str, member: ConsumerGroupMember) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        key=ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member.member_id),
        value=ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=member.member_epoch,
            previous_member_epoch=member.previous_member_epoch,
            state=int(member.state),
            assigned_partitions=member.assigned_partitions,
            partitions_pending_revocation=member.partitions_pending_revocation,
        ),
    )


def new_current_assignment_tombstone(group_id: str, member_id: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        key=ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), value=None
    )


def new_regular_expression_record(
    group_id: str, regex: str, topics: frozenset[str], version: int, timestamp: int
) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        key=ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex),
        value=ConsumerGroupRegularExpressionValue(
            topics=tuple(sorted(topics)), version=version, timestamp=timestamp
        ),
    )


def new_regular_expression_tombstone(group_id: str, regex: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        key=ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex), value=None
    )
