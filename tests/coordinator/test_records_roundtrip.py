"""Property tests: every value a version can carry survives encode -> decode unchanged."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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
)

INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
NOT_MINUS_ONE_32 = INT32.filter(lambda v: v != -1)  # -1 means "absent" on the wire
NOT_MINUS_ONE_64 = INT64.filter(lambda v: v != -1)
TEXT = st.text(st.characters(codec="utf-8"), max_size=20)
BLOB = st.binary(max_size=40)

offset_keys = st.builds(OffsetCommitKey, group=TEXT, topic=TEXT, partition=INT32)
group_keys = st.builds(GroupMetadataKey, group=TEXT)


def offset_values(version: int) -> st.SearchStrategy[OffsetCommitValue]:
    return st.builds(
        OffsetCommitValue,
        offset=INT64,
        leader_epoch=st.none() | NOT_MINUS_ONE_32 if version >= 3 else st.none(),
        metadata=TEXT,
        commit_timestamp=INT64,
        expire_timestamp=st.none() | NOT_MINUS_ONE_64 if version == 1 else st.none(),
    )


@st.composite
def members(draw: st.DrawFn, version: int) -> MemberMetadataRecord:
    session = draw(INT32)
    rebalance = draw(NOT_MINUS_ONE_32) if version >= 1 else session
    return MemberMetadataRecord(
        member_id=draw(TEXT),
        group_instance_id=draw(st.none() | TEXT) if version >= 3 else None,
        client_id=draw(TEXT),
        client_host=draw(TEXT),
        rebalance_timeout=rebalance,
        session_timeout=session,
        subscription=draw(BLOB),
        assignment=draw(BLOB),
    )


def group_values(version: int) -> st.SearchStrategy[GroupMetadataValue]:
    return st.builds(
        GroupMetadataValue,
        protocol_type=TEXT,
        generation=INT32,
        protocol=st.none() | TEXT,
        leader=st.none() | TEXT,
        current_state_timestamp=st.none() | NOT_MINUS_ONE_64 if version >= 2 else st.none(),
        members=st.lists(members(version), max_size=4).map(tuple),
    )


versioned_offset_values = st.integers(0, 4).flatmap(lambda v: st.tuples(st.just(v), offset_values(v)))
versioned_group_values = st.integers(0, 4).flatmap(lambda v: st.tuples(st.just(v), group_values(v)))


@given(offset_keys)
@settings(deadline=None)
def test_offset_commit_key_round_trip(key: OffsetCommitKey) -> None:
    assert decode_key(encode_key(key)) == key


@given(group_keys)
@settings(deadline=None)
def test_group_metadata_key_round_trip(key: GroupMetadataKey) -> None:
    assert decode_key(encode_key(key)) == key


@given(offset_keys, versioned_offset_values)
@settings(deadline=None)
def test_offset_commit_value_round_trip_in_every_version(
    key: OffsetCommitKey, vv: tuple[int, OffsetCommitValue]
) -> None:
    version, value = vv
    raw = encode_value(value, version=version)
    assert raw is not None
    assert int.from_bytes(raw[:2], "big") == version
    assert decode_value(key, raw) == value


@given(group_keys, versioned_group_values)
@settings(deadline=None, max_examples=200)
def test_group_metadata_value_round_trip_in_every_version(
    key: GroupMetadataKey, vv: tuple[int, GroupMetadataValue]
) -> None:
    version, value = vv
    raw = encode_value(value, version=version)
    assert raw is not None
    assert int.from_bytes(raw[:2], "big") == version
    assert decode_value(key, raw) == value


@given(
    st.one_of(
        st.builds(CoordinatorRecord, key=offset_keys, value=st.none() | offset_values(3) | offset_values(1)),
        st.builds(CoordinatorRecord, key=group_keys, value=st.none() | group_values(3)),
    )
)
@settings(deadline=None)
def test_records_round_trip_with_default_versions(rec: CoordinatorRecord) -> None:
    key_bytes, value_bytes = encode_record(rec)
    assert decode_record(key_bytes, value_bytes) == rec
    assert encoded_size(rec) == len(key_bytes) + (0 if value_bytes is None else len(value_bytes))


@given(versioned_group_values, st.data())
@settings(deadline=None)
def test_any_truncation_of_a_group_value_is_a_decode_error(
    vv: tuple[int, GroupMetadataValue], data: st.DataObject
) -> None:
    version, value = vv
    raw = encode_value(value, version=version)
    assert raw is not None
    cut = data.draw(st.integers(0, len(raw) - 1))
    try:
        decode_value(GroupMetadataKey(group="g"), raw[:cut])
    except RecordDecodeError:
        return
    raise AssertionError(f"truncated v{version} value at {cut}/{len(raw)} decoded without error")


@given(st.binary(max_size=64))
@settings(deadline=None)
def test_arbitrary_bytes_decode_or_raise_record_decode_error(blob: bytes) -> None:
    for key in (OffsetCommitKey(group="g", topic="t", partition=0), GroupMetadataKey(group="g")):
        try:
            decoded = decode_value(key, blob)
        except RecordDecodeError:
            continue
        assert isinstance(decoded, OffsetCommitValue | GroupMetadataValue)
    try:
        decoded_key = decode_key(blob)
    except RecordDecodeError:
        return
    assert isinstance(decoded_key, OffsetCommitKey | GroupMetadataKey | UnknownKey)
