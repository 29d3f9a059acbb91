"""Fast paths of the offset-commit path give the same bytes (or the same error) as the checked code."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    _encode_key_checked,
    decode_key,
    encode_key,
)
from groupcoord.storage.batch import _encode_record, _encode_record_general, build_batch, decode_records

names = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=0, max_size=12),
    st.integers(min_value=32_700, max_value=32_800).map(lambda n: "é" * (n // 2) + "x" * (n % 2)),
)
partitions = st.one_of(
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.sampled_from([-(2**31), 2**31 - 1, 0, -1]),
)


@settings(max_examples=400, deadline=None)
@given(group=names, topic=names, partition=partitions)
def test_offset_commit_key_bytes_match_the_checked_writer_and_read_back(
    group: str, topic: str, partition: int
) -> None:
    key = OffsetCommitKey(group=group, topic=topic, partition=partition)
    try:
        expected = _encode_key_checked(key)
    except Exception as exc:
        with pytest.raises(type(exc)):
            encode_key(key)
        return
    assert encode_key(key) == expected
    assert decode_key(expected) == key


@pytest.mark.parametrize("partition", [2**31, -(2**31) - 1])
def test_a_partition_outside_int32_fails_like_the_checked_writer(partition: int) -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=partition)
    with pytest.raises(Exception) as checked:
        _encode_key_checked(key)
    with pytest.raises(checked.type):
        encode_key(key)


def test_a_group_name_utf8_cannot_carry_fails_like_the_checked_writer() -> None:
    key = OffsetCommitKey(group="bad\udc80", topic="t", partition=0)
    with pytest.raises(Exception) as checked:
        _encode_key_checked(key)
    with pytest.raises(checked.type):
        encode_key(key)


def test_group_metadata_key_still_takes_the_checked_writer() -> None:
    assert encode_key(GroupMetadataKey(group="g")) == b"\x00\x02\x00\x01g"


small_ints = st.integers(min_value=-3, max_value=1030)
blobs = st.one_of(st.none(), st.binary(max_size=1030))


@settings(max_examples=400, deadline=None)
@given(
    offset_delta=st.one_of(small_ints, st.integers(min_value=-(2**40), max_value=2**40)),
    ts_delta=st.one_of(small_ints, st.integers(min_value=-(2**40), max_value=2**40)),
    key=blobs,
    value=blobs,
    headers=st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2),
)
def test_record_bytes_of_the_small_record_path_match_the_general_encoder(
    offset_delta: int,
    ts_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]],
) -> None:
    fast, general = bytearray(b"prefix"), bytearray(b"prefix")
    _encode_record(fast, offset_delta, ts_delta, key, value, headers)
    _encode_record_general(general, offset_delta, ts_delta, key, value, headers)
    assert fast == general


def test_a_built_batch_of_offset_commits_reads_back_record_for_record() -> None:
    records = [(b"k" * n, b"v" * (1100 - n), ()) for n in (0, 1, 63, 64, 1022, 1023)]
    batch = build_batch(records, base_offset=7, timestamp_ms=1_700_000_000_000)
    got = [(r.offset, r.key, r.value, r.headers) for r in decode_records(batch)]
    assert got == [(7 + i, k, v, ()) for i, (k, v, _h) in enumerate(records)]
