"""Golden bytes for the ``__consumer_offsets`` record codecs.

Every expected byte string below was written out by hand from the record schemas, one field
per line, so a change in the codec that moves a single byte fails here. Conventions used in
the comments:

* classic encoding (value versions 0-3, all keys): int16 string length, int32 bytes length,
  int32 array count, -1 (ffff / ffffffff) for null;
* flexible encoding (value version 4): unsigned-varint length + 1 (00 = null), unsigned-varint
  array count + 1, and an unsigned-varint tagged-field count closing every struct.
"""

from __future__ import annotations

import struct

import pytest

from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordDecodeError,
    UnknownKey,
    decode_key,
    decode_record,
    decode_value,
    encode_key,
    encode_record,
    encode_value,
    encoded_size,
    fast_offset_commit_value,
)


def hx(*parts: str) -> bytes:
    """Join hex fragments (spaces allowed) into bytes."""
    return bytes.fromhex("".join(parts).replace(" ", ""))


# Shared field values and their encodings.
T_COMMIT = 1_700_000_000_000  # 0000018bcfe56800
T_EXPIRE = 1_700_086_400_000  # 0000018bd50bc400 (commit + 1 day)

OC_KEY = OffsetCommitKey(group="g1", topic="t", partition=3)
GM_KEY = GroupMetadataKey(group="g1")


# --------------------------------------------------------------------------- keys

OC_KEY_V1 = hx(
    "0001",  # key version 1 = offset commit
    "0002 6731",  # group "g1"
    "0001 74",  # topic "t"
    "00000003",  # partition 3
)
GM_KEY_V2 = hx(
    "0002",  # key version 2 = group metadata
    "0002 6731",  # group "g1"
)


def test_offset_commit_key_is_written_as_version_1() -> None:
    assert encode_key(OC_KEY) == OC_KEY_V1
    assert decode_key(OC_KEY_V1) == OC_KEY


def test_offset_commit_key_version_0_has_the_same_layout_and_decodes() -> None:
    v0 = hx("0000", "0002 6731", "0001 74", "00000003")
    assert decode_key(v0) == OC_KEY


def test_group_metadata_key_is_written_as_version_2() -> None:
    assert encode_key(GM_KEY) == GM_KEY_V2
    assert decode_key(GM_KEY_V2) == GM_KEY


def test_offset_commit_key_with_non_ascii_names_uses_utf8_byte_lengths() -> None:
    key = OffsetCommitKey(group="é", topic="日", partition=0)
    golden = hx(
        "0001",
        "0002 c3a9",  # "é" is 2 bytes in UTF-8
        "0003 e697a5",  # "日" is 3 bytes in UTF-8
        "00000000",
    )
    assert encode_key(key) == golden
    assert decode_key(golden) == key


@pytest.mark.parametrize("version", [3, 4, 9, 15, 0x7FFF])
def test_key_versions_3_and_above_decode_as_unknown_keys(version: int) -> None:
    raw = version.to_bytes(2, "big") + hx("0002 6731", "deadbeef")
    assert decode_key(raw) == UnknownKey(version=version, raw=raw)


def test_unknown_key_record_is_skipped_by_decode_record() -> None:
    raw_key = hx("0005", "0002 6731")
    assert decode_record(raw_key, hx("0000 01")) is None
    assert decode_record(raw_key, None) is None


# --------------------------------------------------------------------------- OffsetCommitValue

OCV_BASE = OffsetCommitValue(
    offset=100, leader_epoch=None, metadata="m", commit_timestamp=T_COMMIT, expire_timestamp=None
)
OCV_EPOCH = OffsetCommitValue(
    offset=100, leader_epoch=7, metadata="m", commit_timestamp=T_COMMIT, expire_timestamp=None
)
OCV_EXPIRE = OffsetCommitValue(
    offset=100, leader_epoch=None, metadata="m", commit_timestamp=T_COMMIT, expire_timestamp=T_EXPIRE
)

OCV_V0 = hx(
    "0000",  # value version 0
    "0000000000000064",  # offset 100
    "0001 6d",  # metadata "m"
    "0000018bcfe56800",  # commitTimestamp
)
OCV_V1 = hx(
    "0001",  # value version 1
    "0000000000000064",  # offset 100
    "0001 6d",  # metadata "m"
    "0000018bcfe56800",  # commitTimestamp
    "0000018bd50bc400",  # expireTimestamp (v1 only)
)
OCV_V1_NO_EXPIRE = hx(
    "0001",
    "0000000000000064",
    "0001 6d",
    "0000018bcfe56800",
    "ffffffffffffffff",  # expireTimestamp -1 = none
)
OCV_V2 = hx(
    "0002",  # value version 2: same fields as v0
    "0000000000000064",
    "0001 6d",
    "0000018bcfe56800",
)
OCV_V3 = hx(
    "0003",  # value version 3
    "0000000000000064",  # offset 100
    "00000007",  # leaderEpoch 7 (between offset and metadata)
    "0001 6d",  # metadata "m"
    "0000018bcfe56800",  # commitTimestamp
)
OCV_V3_NO_EPOCH = hx(
    "0003",
    "0000000000000064",
    "ffffffff",  # leaderEpoch -1 = none
    "0001 6d",
    "0000018bcfe56800",
)
OCV_V4 = hx(
    "0004",  # value version 4 (flexible)
    "0000000000000064",  # offset 100
    "00000007",  # leaderEpoch 7
    "02 6d",  # metadata "m": compact length 1+1
    "0000018bcfe56800",  # commitTimestamp
    "00",  # no tagged fields
)


@pytest.mark.parametrize(
    ("value", "version", "golden"),
    [
        pytest.param(OCV_BASE, 0, OCV_V0, id="v0"),
        pytest.param(OCV_EXPIRE, 1, OCV_V1, id="v1"),
        pytest.param(OCV_BASE, 1, OCV_V1_NO_EXPIRE, id="v1-no-expire"),
        pytest.param(OCV_BASE, 2, OCV_V2, id="v2"),
        pytest.param(OCV_EPOCH, 3, OCV_V3, id="v3"),
        pytest.param(OCV_BASE, 3, OCV_V3_NO_EPOCH, id="v3-no-epoch"),
        pytest.param(OCV_EPOCH, 4, OCV_V4, id="v4"),
    ],
)
def test_offset_commit_value_golden_bytes(value: OffsetCommitValue, version: int, golden: bytes) -> None:
    assert encode_value(value, version=version) == golden
    assert decode_value(OC_KEY, golden) == value


def test_offset_commit_value_default_version_is_3() -> None:
    assert encode_value(OCV_EPOCH) == OCV_V3
    assert encode_value(OCV_BASE) == OCV_V3_NO_EPOCH


def test_offset_commit_value_with_expire_timestamp_defaults_to_version_1() -> None:
    assert encode_value(OCV_EXPIRE) == OCV_V1


def test_default_version_1_drops_leader_epoch_like_kafka() -> None:
    both = OffsetCommitValue(
        offset=100, leader_epoch=7, metadata="m", commit_timestamp=T_COMMIT, expire_timestamp=T_EXPIRE
    )
    assert encode_value(both) == OCV_V1
    assert decode_value(OC_KEY, OCV_V1) == OCV_EXPIRE


def test_offset_commit_value_v4_skips_unknown_tagged_fields() -> None:
    with_tags = hx(
        "0004",
        "0000000000000064",  # offset 100
        "00000007",  # leaderEpoch 7
        "02 6d",  # metadata "m"
        "0000018bcfe56800",  # commitTimestamp
        "02",  # two tagged fields
        "00 02 abcd",  # tag 0, size 2, payload abcd
        "8101 03 010203",  # tag 129 (varint 81 01), size 3, payload 010203
    )
    assert decode_value(OC_KEY, with_tags) == OCV_EPOCH


def test_offset_commit_value_empty_metadata() -> None:
    value = OffsetCommitValue(
        offset=0, leader_epoch=0, metadata="", commit_timestamp=0, expire_timestamp=None
    )
    v3 = hx("0003", "0000000000000000", "00000000", "0000", "0000000000000000")
    v4 = hx("0004", "0000000000000000", "00000000", "01", "0000000000000000", "00")
    assert encode_value(value) == v3
    assert decode_value(OC_KEY, v3) == value
    assert encode_value(value, version=4) == v4
    assert decode_value(OC_KEY, v4) == value


@pytest.mark.parametrize(
    ("value", "version"),
    [
        pytest.param(OCV_EPOCH, 0, id="epoch-in-v0"),
        pytest.param(OCV_EPOCH, 1, id="epoch-in-v1"),
        pytest.param(OCV_EPOCH, 2, id="epoch-in-v2"),
        pytest.param(OCV_EXPIRE, 0, id="expire-in-v0"),
        pytest.param(OCV_EXPIRE, 2, id="expire-in-v2"),
        pytest.param(OCV_EXPIRE, 3, id="expire-in-v3"),
        pytest.param(OCV_EXPIRE, 4, id="expire-in-v4"),
    ],
)
def test_explicit_version_that_cannot_carry_a_field_is_refused(
    value: OffsetCommitValue, version: int
) -> None:
    with pytest.raises(ValueError, match=f"v{version} cannot carry"):
        encode_value(value, version=version)


@pytest.mark.parametrize("version", [-1, 5])
def test_value_versions_outside_0_to_4_are_refused_on_encode(version: int) -> None:
    with pytest.raises(ValueError, match=r"outside 0\.\.4"):
        encode_value(OCV_BASE, version=version)


# --------------------------------------------------------------------------- GroupMetadataValue

MEMBER_V0 = MemberMetadataRecord(
    member_id="m1",
    group_instance_id=None,
    client_id="c",
    client_host="/127.0.0.1",
    rebalance_timeout=10000,  # v0 cannot carry it: readers use the session timeout
    session_timeout=10000,
    subscription=b"\x01\x02",
    assignment=b"\x03",
)
MEMBER_V1 = MemberMetadataRecord(
    member_id="m1",
    group_instance_id=None,
    client_id="c",
    client_host="/127.0.0.1",
    rebalance_timeout=300000,
    session_timeout=45000,
    subscription=b"\x01\x02",
    assignment=b"\x03",
)
MEMBER_V3 = MemberMetadataRecord(
    member_id="m1",
    group_instance_id="i1",
    client_id="c",
    client_host="/127.0.0.1",
    rebalance_timeout=300000,
    session_timeout=45000,
    subscription=b"\x01\x02",
    assignment=b"\x03",
)


def gmv(members: tuple[MemberMetadataRecord, ...], ts: int | None) -> GroupMetadataValue:
    return GroupMetadataValue(
        protocol_type="consumer",
        generation=2,
        protocol="range",
        leader="m1",
        current_state_timestamp=ts,
        members=members,
    )


GMV_HEAD_CLASSIC = (
    "0008 636f6e73756d6572",  # protocolType "consumer"
    "00000002",  # generation 2
    "0005 72616e6765",  # protocol "range"
    "0002 6d31",  # leader "m1"
)

GMV_V0 = hx(
    "0000",  # value version 0
    *GMV_HEAD_CLASSIC,
    "00000001",  # members: 1
    "0002 6d31",  # memberId "m1"
    "0001 63",  # clientId "c"
    "000a 2f3132372e302e302e31",  # clientHost "/127.0.0.1"
    "00002710",  # sessionTimeout 10000
    "00000002 0102",  # subscription
    "00000001 03",  # assignment
)
GMV_V1 = hx(
    "0001",  # value version 1
    *GMV_HEAD_CLASSIC,
    "00000001",  # members: 1
    "0002 6d31",  # memberId
    "0001 63",  # clientId
    "000a 2f3132372e302e302e31",  # clientHost
    "000493e0",  # rebalanceTimeout 300000 (v1+)
    "0000afc8",  # sessionTimeout 45000
    "00000002 0102",  # subscription
    "00000001 03",  # assignment
)
GMV_V2 = hx(
    "0002",  # value version 2
    *GMV_HEAD_CLASSIC,
    "0000018bcfe56800",  # currentStateTimestamp (v2+)
    "00000001",
    "0002 6d31",
    "0001 63",
    "000a 2f3132372e302e302e31",
    "000493e0",
    "0000afc8",
    "00000002 0102",
    "00000001 03",
)
GMV_V3 = hx(
    "0003",  # value version 3
    *GMV_HEAD_CLASSIC,
    "0000018bcfe56800",  # currentStateTimestamp
    "00000001",  # members: 1
    "0002 6d31",  # memberId "m1"
    "0002 6931",  # groupInstanceId "i1" (v3+, between memberId and clientId)
    "0001 63",  # clientId "c"
    "000a 2f3132372e302e302e31",  # clientHost
    "000493e0",  # rebalanceTimeout
    "0000afc8",  # sessionTimeout
    "00000002 0102",  # subscription
    "00000001 03",  # assignment
)
GMV_V4 = hx(
    "0004",  # value version 4 (flexible)
    "09 636f6e73756d6572",  # protocolType "consumer": compact length 8+1
    "00000002",  # generation 2
    "06 72616e6765",  # protocol "range"
    "03 6d31",  # leader "m1"
    "0000018bcfe56800",  # currentStateTimestamp
    "02",  # members: compact count 1+1
    "03 6d31",  # memberId "m1"
    "03 6931",  # groupInstanceId "i1"
    "02 63",  # clientId "c"
    "0b 2f3132372e302e302e31",  # clientHost (10+1)
    "000493e0",  # rebalanceTimeout
    "0000afc8",  # sessionTimeout
    "03 0102",  # subscription: compact bytes 2+1
    "02 03",  # assignment: compact bytes 1+1
    "00",  # member: no tagged fields
    "00",  # value: no tagged fields
)


@pytest.mark.parametrize(
    ("value", "version", "golden"),
    [
        pytest.param(gmv((MEMBER_V0,), None), 0, GMV_V0, id="v0"),
        pytest.param(gmv((MEMBER_V1,), None), 1, GMV_V1, id="v1"),
        pytest.param(gmv((MEMBER_V1,), T_COMMIT), 2, GMV_V2, id="v2"),
        pytest.param(gmv((MEMBER_V3,), T_COMMIT), 3, GMV_V3, id="v3"),
        pytest.param(gmv((MEMBER_V3,), T_COMMIT), 4, GMV_V4, id="v4"),
    ],
)
def test_group_metadata_value_golden_bytes(value: GroupMetadataValue, version: int, golden: bytes) -> None:
    assert encode_value(value, version=version) == golden
    assert decode_value(GM_KEY, golden) == value


def test_group_metadata_value_default_version_is_3() -> None:
    assert encode_value(gmv((MEMBER_V3,), T_COMMIT)) == GMV_V3


EMPTY_GROUP = GroupMetadataValue(
    protocol_type="consumer",
    generation=3,
    protocol=None,
    leader=None,
    current_state_timestamp=T_COMMIT,
    members=(),
)


def test_empty_group_has_null_protocol_and_leader_in_v3() -> None:
    golden = hx(
        "0003",
        "0008 636f6e73756d6572",  # protocolType "consumer"
        "00000003",  # generation 3
        "ffff",  # protocol null
        "ffff",  # leader null
        "0000018bcfe56800",  # currentStateTimestamp
        "00000000",  # members: 0
    )
    assert encode_value(EMPTY_GROUP) == golden
    assert decode_value(GM_KEY, golden) == EMPTY_GROUP


def test_empty_group_has_null_protocol_and_leader_in_v4() -> None:
    golden = hx(
        "0004",
        "09 636f6e73756d6572",  # protocolType "consumer"
        "00000003",  # generation 3
        "00",  # protocol null (compact 0)
        "00",  # leader null
        "0000018bcfe56800",  # currentStateTimestamp
        "01",  # members: compact count 0+1
        "00",  # no tagged fields
    )
    assert encode_value(EMPTY_GROUP, version=4) == golden
    assert decode_value(GM_KEY, golden) == EMPTY_GROUP


def test_empty_protocol_type_of_a_simple_group() -> None:
    value = GroupMetadataValue(
        protocol_type="", generation=0, protocol=None, leader=None, current_state_timestamp=None, members=()
    )
    golden = hx("0003", "0000", "00000000", "ffff", "ffff", "ffffffffffffffff", "00000000")
    assert encode_value(value) == golden
    assert decode_value(GM_KEY, golden) == value


def test_group_metadata_value_v4_skips_tagged_fields_in_member_and_value() -> None:
    with_tags = hx(
        "0004",
        "09 636f6e73756d6572",
        "00000002",
        "06 72616e6765",
        "03 6d31",
        "0000018bcfe56800",
        "02",  # one member
        "03 6d31",
        "03 6931",
        "02 63",
        "0b 2f3132372e302e302e31",
        "000493e0",
        "0000afc8",
        "03 0102",
        "02 03",
        "01 07 01 ff",  # member: one tagged field, tag 7, 1 byte
        "01 00 00",  # value: one tagged field, tag 0, empty
    )
    assert decode_value(GM_KEY, with_tags) == gmv((MEMBER_V3,), T_COMMIT)


def test_v0_member_takes_session_timeout_as_rebalance_timeout() -> None:
    decoded = decode_value(GM_KEY, GMV_V0)
    assert isinstance(decoded, GroupMetadataValue)
    assert decoded.members[0].rebalance_timeout == 10000
    assert decoded.members[0].session_timeout == 10000


def test_rebalance_timeout_minus_one_falls_back_to_session_timeout() -> None:
    golden = hx(
        "0001",
        *GMV_HEAD_CLASSIC,
        "00000001",
        "0002 6d31",
        "0001 63",
        "000a 2f3132372e302e302e31",
        "ffffffff",  # rebalanceTimeout -1
        "0000afc8",  # sessionTimeout 45000
        "00000002 0102",
        "00000001 03",
    )
    decoded = decode_value(GM_KEY, golden)
    assert isinstance(decoded, GroupMetadataValue)
    assert decoded.members[0].rebalance_timeout == 45000


def test_two_members_keep_their_order() -> None:
    m2 = MemberMetadataRecord(
        member_id="m2",
        group_instance_id=None,
        client_id="c",
        client_host="/127.0.0.1",
        rebalance_timeout=300000,
        session_timeout=45000,
        subscription=b"",
        assignment=b"",
    )
    value = gmv((MEMBER_V3, m2), T_COMMIT)
    golden = hx(
        "0003",
        *GMV_HEAD_CLASSIC,
        "0000018bcfe56800",
        "00000002",  # members: 2
        "0002 6d31 0002 6931 0001 63 000a 2f3132372e302e302e31 000493e0 0000afc8 00000002 0102 00000001 03",
        "0002 6d32",  # memberId "m2"
        "ffff",  # groupInstanceId null
        "0001 63",
        "000a 2f3132372e302e302e31",
        "000493e0",
        "0000afc8",
        "00000000",  # subscription empty (not null)
        "00000000",  # assignment empty (not null)
    )
    assert encode_value(value) == golden
    assert decode_value(GM_KEY, golden) == value


@pytest.mark.parametrize(
    ("value", "version", "match"),
    [
        pytest.param(gmv((MEMBER_V1,), T_COMMIT), 0, "v0 cannot carry currentStateTimestamp", id="ts-v0"),
        pytest.param(gmv((MEMBER_V1,), T_COMMIT), 1, "v1 cannot carry currentStateTimestamp", id="ts-v1"),
        pytest.param(gmv((MEMBER_V3,), None), 2, "v2 cannot carry groupInstanceId", id="instance-v2"),
        pytest.param(gmv((MEMBER_V3,), None), 0, "v0 cannot carry groupInstanceId", id="instance-v0"),
        pytest.param(gmv((MEMBER_V1,), None), 0, "v0 has no rebalanceTimeout", id="rebalance-v0"),
    ],
)
def test_group_metadata_explicit_version_that_cannot_carry_a_field_is_refused(
    value: GroupMetadataValue, version: int, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        encode_value(value, version=version)


# --------------------------------------------------------------------------- tombstones and records


def test_tombstones_encode_and_decode_as_none() -> None:
    assert encode_value(None) is None
    assert decode_value(OC_KEY, None) is None
    assert decode_value(GM_KEY, None) is None


def test_offset_tombstone_record() -> None:
    rec = CoordinatorRecord(key=OC_KEY, value=None)
    assert encode_record(rec) == (OC_KEY_V1, None)
    assert decode_record(OC_KEY_V1, None) == rec
    assert encoded_size(rec) == len(OC_KEY_V1) == 13  # 2 version + 4 group + 3 topic + 4 partition


def test_group_tombstone_record() -> None:
    rec = CoordinatorRecord(key=GM_KEY, value=None)
    assert encode_record(rec) == (GM_KEY_V2, None)
    assert decode_record(GM_KEY_V2, None) == rec


def test_full_records_round_trip_through_bytes() -> None:
    offset_rec = CoordinatorRecord(key=OC_KEY, value=OCV_EPOCH)
    assert encode_record(offset_rec) == (OC_KEY_V1, OCV_V3)
    assert decode_record(OC_KEY_V1, OCV_V3) == offset_rec
    assert encoded_size(offset_rec) == 13 + 25  # value: 2 + 8 + 4 + 3 + 8

    group_rec = CoordinatorRecord(key=GM_KEY, value=gmv((MEMBER_V3,), T_COMMIT))
    assert encode_record(group_rec) == (GM_KEY_V2, GMV_V3)
    assert decode_record(GM_KEY_V2, GMV_V3) == group_rec
    assert encoded_size(group_rec) == len(GM_KEY_V2) + len(GMV_V3)


def test_offset_value_under_group_key_is_read_with_the_group_layout() -> None:
    # The key decides the layout; an offset value under a group key is malformed.
    with pytest.raises(RecordDecodeError):
        decode_value(GM_KEY, OCV_V3)


# --------------------------------------------------------------------------- malformed input


@pytest.mark.parametrize("cut", range(1, len(OC_KEY_V1)))
def test_truncated_offset_key_raises_record_decode_error(cut: int) -> None:
    with pytest.raises(RecordDecodeError, match="malformed record key"):
        decode_key(OC_KEY_V1[:cut])


@pytest.mark.parametrize("cut", range(0, len(GMV_V4)))
def test_truncated_group_value_v4_raises_record_decode_error(cut: int) -> None:
    with pytest.raises(RecordDecodeError, match="malformed GroupMetadataValue"):
        decode_value(GM_KEY, GMV_V4[:cut])


@pytest.mark.parametrize("cut", range(0, len(GMV_V3)))
def test_truncated_group_value_v3_raises_record_decode_error(cut: int) -> None:
    with pytest.raises(RecordDecodeError, match="malformed GroupMetadataValue"):
        decode_value(GM_KEY, GMV_V3[:cut])


@pytest.mark.parametrize("cut", range(0, len(OCV_V3)))
def test_truncated_offset_value_raises_record_decode_error(cut: int) -> None:
    with pytest.raises(RecordDecodeError, match="malformed OffsetCommitValue"):
        decode_value(OC_KEY, OCV_V3[:cut])


def test_trailing_bytes_after_a_value_are_rejected() -> None:
    with pytest.raises(RecordDecodeError, match="1 trailing bytes"):
        decode_value(OC_KEY, OCV_V3 + b"\x00")


def test_trailing_bytes_after_a_key_are_rejected() -> None:
    with pytest.raises(RecordDecodeError, match="2 trailing bytes"):
        decode_key(GM_KEY_V2 + b"\x00\x00")


def test_value_version_5_is_rejected() -> None:
    with pytest.raises(RecordDecodeError, match="unsupported value version 5"):
        decode_value(OC_KEY, hx("0005") + OCV_V4[2:])


def test_negative_key_version_is_rejected() -> None:
    with pytest.raises(RecordDecodeError, match="negative key version -1"):
        decode_key(hx("ffff 0002 6731"))


def test_null_metadata_string_is_rejected() -> None:
    bad = hx("0003", "0000000000000064", "00000007", "ffff", "0000018bcfe56800")
    with pytest.raises(RecordDecodeError, match="metadata is null"):
        decode_value(OC_KEY, bad)


def test_negative_string_length_other_than_minus_one_is_rejected() -> None:
    bad = hx("0003", "0000000000000064", "00000007", "fffe", "0000018bcfe56800")
    with pytest.raises(RecordDecodeError, match="negative length -2"):
        decode_value(OC_KEY, bad)


def test_invalid_utf8_in_a_string_is_rejected() -> None:
    bad = hx("0002", "0002 c328")  # c3 28 is not UTF-8
    with pytest.raises(RecordDecodeError, match="not valid UTF-8"):
        decode_key(bad)


def test_null_members_array_is_rejected() -> None:
    bad = hx("0003", *GMV_HEAD_CLASSIC, "0000018bcfe56800", "ffffffff")
    with pytest.raises(RecordDecodeError, match="members is null"):
        decode_value(GM_KEY, bad)


def test_huge_member_count_fails_on_truncation_not_memory() -> None:
    bad = hx("0003", *GMV_HEAD_CLASSIC, "0000018bcfe56800", "7fffffff")
    with pytest.raises(RecordDecodeError, match="need 2 bytes, 0 left"):
        decode_value(GM_KEY, bad)


def test_overlong_varint_is_rejected() -> None:
    bad = hx("0004", "0000000000000064", "00000007", "ffffffffff01")
    with pytest.raises(RecordDecodeError, match="varint longer than 32 bits"):
        decode_value(OC_KEY, bad)


def test_null_subscription_bytes_is_rejected_in_v4() -> None:
    bad = hx(
        "0004", "09 636f6e73756d6572", "00000002", "06 72616e6765", "03 6d31", "0000018bcfe56800",
        "02", "03 6d31", "03 6931", "02 63", "0b 2f3132372e302e302e31", "000493e0", "0000afc8",
        "00",  # subscription null (compact 0): not allowed
        "02 03", "00", "00",
    )  # fmt: skip
    with pytest.raises(RecordDecodeError, match="subscription is null"):
        decode_value(GM_KEY, bad)


def test_value_of_unknown_key_cannot_be_decoded() -> None:
    with pytest.raises(RecordDecodeError, match="no value layout for record key version 4"):
        decode_value(UnknownKey(version=4, raw=b"\x00\x04"), b"\x00\x00")


def test_record_decode_error_is_a_value_error() -> None:
    assert issubclass(RecordDecodeError, ValueError)


def test_metadata_longer_than_a_kafka_string_is_refused_on_encode() -> None:
    value = OffsetCommitValue(
        offset=0, leader_epoch=None, metadata="x" * 32768, commit_timestamp=0, expire_timestamp=None
    )
    with pytest.raises(ValueError, match="at most 32767"):
        encode_value(value)


@pytest.mark.parametrize(
    "value",
    [
        struct.pack(">hqih", 3, 5, -1, 2) + b"\xff\xfe" + struct.pack(">q", 7),
        struct.pack(">hqh", 1, 5, 2) + b"\xc3\x28" + struct.pack(">qq", 7, 9),
    ],
    ids=["v3", "v1"],
)
def test_fast_commit_reader_leaves_metadata_that_is_not_utf8_to_the_full_codec(value: bytes) -> None:
    assert fast_offset_commit_value(value) is None
    with pytest.raises(RecordDecodeError, match="not valid UTF-8"):
        decode_value(OffsetCommitKey(group="g", topic="t", partition=0), value)
