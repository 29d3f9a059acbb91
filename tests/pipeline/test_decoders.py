"""The Spark-free decoders: ``__consumer_offsets`` records and group events to rows."""

from __future__ import annotations

import dataclasses
import json
import struct

from groupcoord.coordinator.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from groupcoord.formats.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.pipeline import decoders

KEY = OffsetCommitKey(group="billing", topic="orders", partition=3)


def _commit(version: int, **over: object) -> bytes:
    fields: dict[str, object] = {
        "offset": 1234,
        "leader_epoch": None,
        "metadata": "m",
        "commit_timestamp": 1_700_000_000_123,
        "expire_timestamp": None,
    }
    fields.update(over)
    return encode_value(OffsetCommitValue(**fields), version=version)  # type: ignore[arg-type]


def test_offset_commit_value_v0_to_v4_decode_to_the_same_columns() -> None:
    for version in (0, 2, 3, 4):
        row = decoders.offsets_record_row(7, 42, 1_700_000_000_200, encode_key(KEY), _commit(version))
        assert row["record_type"] == "offset_commit"
        assert row["value_version"] == version
        assert row["key_version"] == 1
        assert (row["group_id"], row["topic"], row["partition"]) == ("billing", "orders", 3)
        assert row["committed_offset"] == 1234
        assert row["metadata"] == "m"
        assert row["commit_time"] == 1_700_000_000_123
        assert (row["log_partition"], row["log_offset"], row["record_time"]) == (7, 42, 1_700_000_000_200)
        assert row["tombstone"] is False and row["corrupt"] is False and row["decode_error"] is None


def test_offset_commit_v1_carries_expire_time_and_v3_leader_epoch() -> None:
    v1 = decoders.offsets_record_row(0, 0, 0, encode_key(KEY), _commit(1, expire_timestamp=1_700_000_999_000))
    assert v1["expire_time"] == 1_700_000_999_000
    v3 = decoders.offsets_record_row(0, 0, 0, encode_key(KEY), _commit(3, leader_epoch=9))
    assert v3["leader_epoch"] == 9
    assert v3["expire_time"] is None


def test_offset_commit_key_version_0_is_an_offset_commit() -> None:
    key_v0 = struct.pack(">h", 0) + encode_key(KEY)[2:]
    row = decoders.offsets_record_row(0, 5, 0, key_v0, _commit(3))
    assert row["key_version"] == 0
    assert row["record_type"] == "offset_commit"
    assert row["committed_offset"] == 1234


def test_offset_tombstone_keeps_the_key_columns() -> None:
    row = decoders.offsets_record_row(1, 9, 5, encode_key(KEY), None)
    assert row["tombstone"] is True
    assert row["record_type"] == "offset_commit"
    assert (row["group_id"], row["topic"], row["partition"]) == ("billing", "orders", 3)
    assert row["committed_offset"] is None
    assert row["value_version"] is None


def _member(
    mid: str, instance: str | None, parts: tuple[tuple[str, tuple[int, ...]], ...]
) -> MemberMetadataRecord:
    return MemberMetadataRecord(
        member_id=mid,
        group_instance_id=instance,
        client_id="app",
        client_host="/10.1.2.3",
        rebalance_timeout=300_000,
        session_timeout=45_000,
        subscription=encode_subscription(Subscription(topics=("orders", "payments"))),
        assignment=encode_assignment(Assignment(partitions=parts)),
    )


def test_group_metadata_every_version_decodes_members_and_assignments() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=4,
        protocol="range",
        leader="m-1",
        current_state_timestamp=1_700_000_000_000,
        members=(
            _member("m-1", None, (("orders", (2, 0)), ("payments", (1,)))),
            _member("m-2", "pod-2", (("orders", (1,)),)),
        ),
    )
    for version in (3, 4):
        row = decoders.offsets_record_row(
            0, 1, 0, encode_key(GroupMetadataKey(group="billing")), encode_value(value, version=version)
        )
        assert row["record_type"] == "group_metadata"
        assert row["value_version"] == version
        assert (row["group_id"], row["generation"], row["protocol"], row["leader"]) == (
            "billing",
            4,
            "range",
            "m-1",
        )
        assert row["state_time"] == 1_700_000_000_000
        assert row["members"] == [
            {
                "member_id": "m-1",
                "group_instance_id": None,
                "client_id": "app",
                "client_host": "/10.1.2.3",
                "rebalance_timeout_ms": 300_000,
                "session_timeout_ms": 45_000,
                "subscribed_topics": ["orders", "payments"],
                "assignment": [
                    {"topic": "orders", "partitions": [0, 2]},
                    {"topic": "payments", "partitions": [1]},
                ],
                "decode_error": None,
            },
            {
                "member_id": "m-2",
                "group_instance_id": "pod-2",
                "client_id": "app",
                "client_host": "/10.1.2.3",
                "rebalance_timeout_ms": 300_000,
                "session_timeout_ms": 45_000,
                "subscribed_topics": ["orders", "payments"],
                "assignment": [{"topic": "orders", "partitions": [1]}],
                "decode_error": None,
            },
        ]


def test_group_metadata_v0_without_instance_ids_or_state_time() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=1,
        protocol="range",
        leader="m-1",
        current_state_timestamp=None,
        members=(dataclasses.replace(_member("m-1", None, (("orders", (0,)),)), rebalance_timeout=45_000),),
    )
    row = decoders.offsets_record_row(
        0, 1, 0, encode_key(GroupMetadataKey(group="g")), encode_value(value, version=0)
    )
    assert row["value_version"] == 0
    assert row["state_time"] is None
    assert row["members"][0]["assignment"] == [{"topic": "orders", "partitions": [0]}]
    # v0 has no rebalance timeout: the codec reports the session timeout in its place
    assert row["members"][0]["rebalance_timeout_ms"] == 45_000


def test_empty_group_and_empty_assignment_bytes() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=7,
        protocol=None,
        leader=None,
        current_state_timestamp=5,
        members=(),
    )
    row = decoders.offsets_record_row(0, 1, 0, encode_key(GroupMetadataKey(group="g")), encode_value(value))
    assert row["members"] == []
    member = MemberMetadataRecord(
        member_id="m",
        group_instance_id=None,
        client_id="c",
        client_host="/h",
        rebalance_timeout=1,
        session_timeout=1,
        subscription=encode_subscription(Subscription(topics=("t",))),
        assignment=b"",
    )
    assert decoders.member_row(member, "consumer")["assignment"] == []


def test_non_consumer_protocol_members_keep_raw_fields_only() -> None:
    member = MemberMetadataRecord(
        member_id="w",
        group_instance_id=None,
        client_id="connect",
        client_host="/h",
        rebalance_timeout=1,
        session_timeout=1,
        subscription=b"\x00\x01opaque",
        assignment=b"\x00\x01opaque",
    )
    row = decoders.member_row(member, "connect")
    assert row["subscribed_topics"] is None and row["assignment"] is None and row["decode_error"] is None


def test_garbled_assignment_is_reported_not_raised() -> None:
    member = MemberMetadataRecord(
        member_id="m",
        group_instance_id=None,
        client_id="c",
        client_host="/h",
        rebalance_timeout=1,
        session_timeout=1,
        subscription=encode_subscription(Subscription(topics=("t",))),
        assignment=b"\x00\x00\x00",
    )
    row = decoders.member_row(member, "consumer")
    assert row["assignment"] is None
    assert row["decode_error"] is not None and row["decode_error"].startswith("consumer protocol:")


def test_unknown_key_versions_and_garbage_become_unknown_rows() -> None:
    share_group = struct.pack(">h", 10) + b"\x00\x01g"  # a share group's record: not decoded
    row = decoders.offsets_record_row(0, 3, 0, share_group, b"\x00\x00")
    assert (row["record_type"], row["key_version"], row["decode_error"]) == ("unknown", 10, None)
    truncated = struct.pack(">h", 5) + b"\x00\x01g"  # a member metadata key without its member id
    row = decoders.offsets_record_row(0, 3, 0, truncated, b"\x00\x00")
    assert (row["record_type"], row["key_version"]) == ("unknown", 5)
    assert row["decode_error"] is not None and row["decode_error"].startswith("key:")
    bad = decoders.offsets_record_row(0, 4, 0, b"\x00\x01\x00", b"")
    assert bad["record_type"] == "unknown"
    assert bad["decode_error"] is not None and bad["decode_error"].startswith("key:")
    bad_value = decoders.offsets_record_row(0, 4, 0, encode_key(KEY), b"\x00\x03\x00")
    assert bad_value["record_type"] == "offset_commit"
    assert bad_value["committed_offset"] is None
    assert bad_value["decode_error"] is not None and bad_value["decode_error"].startswith("value:")
    assert decoders.offsets_record_row(0, 4, 0, None, b"x")["decode_error"] == "record without key"


def test_corrupt_row_marks_the_offset_where_reading_stopped() -> None:
    row = decoders.corrupt_row(2, 77, "torn batch: 9 trailing bytes")
    assert (row["log_partition"], row["log_offset"], row["corrupt"]) == (2, 77, True)
    assert row["decode_error"] == "torn batch: 9 trailing bytes"


def test_group_event_json_becomes_a_row_with_every_field() -> None:
    event = {
        "time_ms": 1_700_000_001_000,
        "group_id": "billing",
        "generation": 3,
        "type": "state_change",
        "from_state": "Stable",
        "to_state": "PreparingRebalance",
        "reason": "member_left",
        "member_id": "m-2",
        "group_instance_id": None,
        "client_id": "app",
        "client_host": "/10.0.0.2",
        "client_reason": "consumer poll timeout has expired.",
        "protocol_type": "consumer",
        "protocol_name": "range",
        "member_count": 1,
    }
    assert decoders.group_event_row(json.dumps(event).encode()) == event
    assert decoders.group_event_row(None) is None
    assert decoders.group_event_row(b"{not json") is None
    assert decoders.group_event_row(b"[1, 2]") is None


def test_event_columns_match_the_coordinators_group_event_fields() -> None:
    from groupcoord.coordinator.events import GroupEvent

    # every field of the JSON; ``encoded`` is that JSON itself, not one of its fields
    json_fields = [f.name for f in dataclasses.fields(GroupEvent) if f.init]
    assert json_fields == [n for n, _ in decoders.EVENT_COLUMNS]


def test_column_buffer_hands_out_columns_and_starts_over() -> None:
    buf = decoders.ColumnBuffer(names=("a", "b"))
    buf.add({"a": 1, "b": "x"})
    buf.add({"a": 2, "b": None})
    assert len(buf) == 2
    assert buf.take() == {"a": [1, 2], "b": ["x", None]}
    assert len(buf) == 0


def test_fast_commit_path_agrees_with_the_records_codec_for_every_version() -> None:
    cases = [
        _commit(0),
        _commit(1, expire_timestamp=1_700_000_999_000),
        _commit(1, metadata="héllo", expire_timestamp=5),
        _commit(2),
        _commit(3),
        _commit(3, leader_epoch=17, metadata="x" * 300),
        _commit(3, offset=-1, leader_epoch=0),
        _commit(4, leader_epoch=2, metadata="flex"),
    ]
    for value in cases:
        fast = decoders.OffsetsColumns()
        fast.add(3, 99, 1_000, encode_key(KEY), value)
        reference = decoders.offsets_record_row(3, 99, 1_000, encode_key(KEY), value)
        got = fast.take()
        assert {name: col[0] for name, col in got.items()} == reference
    # v0/v2/v4 are not the fixed layouts: the fast reader declines them, the codec reads them
    assert decoders.fast_offset_commit_value(_commit(0)) is None
    assert decoders.fast_offset_commit_value(_commit(4)) is None
    assert decoders.fast_offset_commit_value(_commit(3) + b"\x00") is None
    assert decoders.fast_offset_commit_value(_commit(3, metadata="ab")) == (
        3,
        1234,
        None,
        "ab",
        1_700_000_000_123,
        None,
    )


def test_offsets_columns_mixes_fast_and_full_rows_in_order() -> None:
    cols = decoders.OffsetsColumns()
    gm_key = encode_key(GroupMetadataKey(group="g"))
    gm_value = encode_value(
        GroupMetadataValue(
            protocol_type="consumer",
            generation=2,
            protocol="range",
            leader="m-1",
            current_state_timestamp=7,
            members=(_member("m-1", None, (("orders", (0,)),)),),
        )
    )
    records = [
        (encode_key(KEY), _commit(3)),
        (gm_key, gm_value),
        (encode_key(KEY), None),
        (encode_key(KEY), _commit(3, offset=1300)),
    ]
    for i, (k, v) in enumerate(records):
        cols.add(0, i, 10 + i, k, v)
    got = cols.take()
    assert len(got["log_offset"]) == 4
    for i, (k, v) in enumerate(records):
        assert {name: col[i] for name, col in got.items()} == decoders.offsets_record_row(0, i, 10 + i, k, v)
    assert len(cols) == 0


def test_consumer_group_records_become_rows_in_the_group_metadata_columns() -> None:
    """KIP-848 records (Kafka 4.1's ConsumerGroup*.json layouts, the coordinator's codec)."""
    import uuid

    from groupcoord.coordinator.consumer import records as cg

    topic = uuid.UUID("00000000-0000-0000-0000-000000000007")

    def row(key: object, value: object) -> dict[str, object]:
        k = cg.encode_key(key)  # type: ignore[arg-type]
        return decoders.offsets_record_row(0, 1, 5, k, cg.encode_value(value))  # type: ignore[arg-type]

    epoch = row(cg.ConsumerGroupMetadataKey(group_id="g"), cg.ConsumerGroupMetadataValue(epoch=7))
    assert (epoch["record_type"], epoch["group_id"], epoch["generation"]) == (
        "consumer_group_metadata",
        "g",
        7,
    )
    target = row(
        cg.ConsumerGroupTargetAssignmentMemberKey(group_id="g", member_id="m"),
        cg.ConsumerGroupTargetAssignmentMemberValue(topic_partitions={topic: frozenset({2, 0})}),
    )
    assert (target["record_type"], target["leader"]) == ("consumer_group_target_assignment_member", "m")
    members = target["members"]
    assert isinstance(members, list)
    assert (members[0]["member_id"], members[0]["assignment"]) == (
        "m",
        [{"topic": str(topic), "partitions": [0, 2]}],
    )
    meta = row(
        cg.ConsumerGroupTargetAssignmentMetadataKey(group_id="g"),
        cg.ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=6),
    )
    assert (meta["record_type"], meta["generation"]) == ("consumer_group_target_assignment_metadata", 6)
    gone = decoders.offsets_record_row(
        0, 2, 5, cg.encode_key(cg.ConsumerGroupCurrentMemberAssignmentKey(group_id="g", member_id="m")), None
    )
    assert (gone["record_type"], gone["tombstone"], gone["leader"], gone["members"]) == (
        "consumer_group_current_member_assignment",
        True,
        "m",
        None,
    )
