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
