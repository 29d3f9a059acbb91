"""The consumer-group records of ``__consumer_offsets``, byte for byte.

The expected bytes are built here by hand from Kafka 4.1's schemas
(``group-coordinator/src/main/resources/common/message/ConsumerGroup*{Key,Value}.json``): a key is
the int16 record type and non-flexible fields; a value is int16 version 0 and flexible fields
(compact lengths + 1, 16-byte uuids, a tagged-field section per struct). Kafka's
``GroupCoordinatorRecordSerdeTest`` and ``GroupCoordinatorRecordHelpersTest`` are the tests mirrored.
"""

from __future__ import annotations

import struct
import uuid

import pytest

from groupcoord.coordinator.consumer.assignment import assignment_of
from groupcoord.coordinator.consumer.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRecord,
    PartitionMetadataTopic,
    decode_key,
    decode_record,
    decode_value,
    encode_key,
    encode_record,
    encode_value,
    new_current_assignment_record,
    new_current_assignment_tombstone,
    new_group_epoch_record,
    new_member_subscription_record,
    new_regular_expression_record,
    new_target_assignment_epoch_record,
    new_target_assignment_record,
)
from groupcoord.coordinator.records import RecordDecodeError

T1 = uuid.UUID("0123456789abcdef0123456789abcdef")
T2 = uuid.UUID("fedcba9876543210fedcba9876543210")


def s16(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def cs(s: str | None) -> bytes:
    """compact (nullable) string"""
    return b"\x00" if s is None else bytes([len(s.encode()) + 1]) + s.encode()


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def test_group_metadata_key_and_value() -> None:
    """Type 3: the hash is tagged field 0, written only when non-zero."""
    rec = new_group_epoch_record("grp", 10, 0)
    key, value = encode_record(rec)
    assert key == b"\x00\x03" + s16("grp")
    assert value == b"\x00\x00" + i32(10) + b"\x00"
    _, with_hash = encode_record(new_group_epoch_record("grp", 10, -2))
    assert with_hash == b"\x00\x00" + i32(10) + b"\x01\x00\x08" + struct.pack(">q", -2)
    assert decode_value(ConsumerGroupMetadataKey(group_id="grp"), with_hash) == ConsumerGroupMetadataValue(
        epoch=10, metadata_hash=-2
    )


def test_member_metadata_value() -> None:
    """Type 5: subscribed names sorted; regex "" when none; classic metadata tagged 0."""
    member = ConsumerGroupMember(
        member_id="m1",
        instance_id=None,
        rack_id="r1",
        client_id="cid",
        client_host="/127.0.0.1",
        subscribed_topic_names=frozenset({"zeta", "alpha"}),
        rebalance_timeout_ms=300000,
        server_assignor_name="range",
    )
    key, value = encode_record(new_member_subscription_record("grp", member))
    assert key == b"\x00\x05" + s16("grp") + s16("m1")
    assert value == (
        b"\x00\x00"
        + cs(None)
        + cs("r1")
        + cs("cid")
        + cs("/127.0.0.1")
        + b"\x03"
        + cs("alpha")
        + cs("zeta")
        + cs("")
        + i32(300000)
        + cs("range")
        + b"\x00"
    )
    classic = member.replace(
        classic_member_metadata=ClassicMemberMetadata(
            session_timeout_ms=10000, supported_protocols=(("range", b"\x01"),)
        )
    )
    _, value2 = encode_record(new_member_subscription_record("grp", classic))
    assert value2 is not None and value is not None
    body = i32(10000) + b"\x02" + cs("range") + b"\x02\x01" + b"\x00" + b"\x00"
    assert value2 == value[:-1] + b"\x01\x00" + bytes([len(body)]) + body
    decoded = decode_record(*encode_record(new_member_subscription_record("grp", classic)))
    assert decoded is not None and isinstance(decoded.value, ConsumerGroupMemberMetadataValue)
    assert decoded.value.classic_member_metadata == classic.classic_member_metadata


def test_target_assignment_records() -> None:
    """Types 6 and 7: topics in ``Uuid.compareTo`` order (signed: T2's high bit set sorts it
    first), partitions ascending."""
    rec = new_target_assignment_record("grp", "m1", assignment_of({T2: [3, 1], T1: [0]}))
    key, value = encode_record(rec)
    assert key == b"\x00\x07" + s16("grp") + s16("m1")
    t1 = T1.bytes + b"\x02" + i32(0) + b"\x00"
    t2 = T2.bytes + b"\x03" + i32(1) + i32(3) + b"\x00"
    assert value == b"\x00\x00\x03" + t2 + t1 + b"\x00"
    key, value = encode_record(new_target_assignment_epoch_record("grp", 7))
    assert (key, value) == (b"\x00\x06" + s16("grp"), b"\x00\x00" + i32(7) + b"\x00")


def test_current_member_assignment_record() -> None:
    """Type 8: epochs, state int8, assigned and pending-revocation partitions."""
    member = ConsumerGroupMember(
        member_id="m1",
        member_epoch=11,
        previous_member_epoch=10,
        state=MemberState.UNREVOKED_PARTITIONS,
        assigned_partitions=assignment_of({T1: [0]}),
        partitions_pending_revocation=assignment_of({T1: [1]}),
    )
    key, value = encode_record(new_current_assignment_record("grp", member))
    assert key == b"\x00\x08" + s16("grp") + s16("m1")
    assert value == (
        b"\x00\x00" + i32(11) + i32(10) + b"\x01"
        + b"\x02" + T1.bytes + b"\x02" + i32(0) + b"\x00"
        + b"\x02" + T1.bytes + b"\x02" + i32(1) + b"\x00"
        + b"\x00"
    )  # fmt: skip


def test_unknown_member_state_decodes_as_unknown() -> None:
    """MemberState.UNKNOWN for any state value a broker does not know (ConsumerGroupMemberTest)."""
    value = b"\x00\x00" + i32(1) + i32(0) + b"\x05" + b"\x01" + b"\x01" + b"\x00"
    decoded = decode_value(ConsumerGroupCurrentMemberAssignmentKey(group_id="g", member_id="m"), value)
    assert decoded is not None and decoded.member_state is MemberState.UNKNOWN  # type: ignore[union-attr]


def test_regular_expression_record() -> None:
    """Type 16: topics, metadata version, timestamp."""
    key, value = encode_record(
        new_regular_expression_record("grp", "foo.*", frozenset({"foo", "fob"}), 42, 1000)
    )
    assert key == b"\x00\x10" + s16("grp") + s16("foo.*")
    assert value == b"\x00\x00\x03" + cs("fob") + cs("foo") + struct.pack(">qq", 42, 1000) + b"\x00"


def test_partition_metadata_written_by_4_0_is_read() -> None:
    """Type 4 (4.0's ConsumerGroupPartitionMetadata): 4.1 reads it and writes only its tombstone."""
    value = ConsumerGroupPartitionMetadataValue(
        topics=(
            PartitionMetadataTopic(
                topic_id=T1, topic_name="foo", num_partitions=2, partition_metadata=((0, ("r1",)),)
            ),
        )
    )
    rec = ConsumerGroupRecord(key=ConsumerGroupPartitionMetadataKey(group_id="grp"), value=value)
    key, raw = encode_record(rec)
    assert key == b"\x00\x04" + s16("grp")
    assert raw == (
        b"\x00\x00\x02"
        + T1.bytes
        + cs("foo")
        + i32(2)
        + b"\x02"
        + i32(0)
        + b"\x02"
        + cs("r1")
        + b"\x00"
        + b"\x00"
        + b"\x00"
    )
    assert decode_record(key, raw) == rec


def test_tombstones_have_no_value_and_decode_back() -> None:
    rec = new_current_assignment_tombstone("grp", "m1")
    key, value = encode_record(rec)
    assert value is None
    assert decode_record(key, None) == rec


def test_other_record_types_are_not_ours() -> None:
    """Offsets (0, 1), classic groups (2) and share/streams records are left to others."""
    for record_type in (0, 1, 2, 9, 10, 17):
        assert decode_key(struct.pack(">h", record_type) + s16("g")) is None


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x00",
        b"\x00\x00\x00\x00\x00",
        b"\x00\x00" + i32(1) + b"\x00\x00",
        b"\x00\x01" + i32(1) + b"\x00",
    ],
    ids=["truncated", "short-int", "trailing", "bad-version"],
)
def test_malformed_values_raise_record_decode_error(data: bytes) -> None:
    with pytest.raises(RecordDecodeError):
        decode_value(ConsumerGroupMetadataKey(group_id="g"), data)


def test_unknown_tagged_fields_are_skipped() -> None:
    """A newer writer's tagged field (tag 7 here) does not stop an older reader."""
    value = b"\x00\x00" + i32(3) + b"\x01\x07\x02ab"
    assert decode_value(ConsumerGroupMetadataKey(group_id="g"), value) == ConsumerGroupMetadataValue(epoch=3)


def test_key_roundtrip_with_unicode() -> None:
    key = ConsumerGroupCurrentMemberAssignmentKey(group_id="grüppe", member_id="m")
    assert decode_key(encode_key(key)) == key
    assert encode_value(None) is None
