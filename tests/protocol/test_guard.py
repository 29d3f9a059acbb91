"""The structural pre-check that keeps forged counts away from kio's native decoder."""

from __future__ import annotations

import dataclasses
import datetime
import random
import warnings
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

import pytest
from hypothesis import strategies as st
from kio.static.primitive import Records, i64Timedelta

from groupcoord.protocol.codec import encode_request
from groupcoord.protocol.guard import check_request
from groupcoord.protocol.headers import MalformedRequestError, decode_request_header
from groupcoord.protocol.registry import load_messages

# Every (api, version) the broker serves, including the group APIs.
SERVED = [(0, 3, 10), (1, 4, 16), (2, 1, 9), (3, 0, 12), (8, 2, 9), (9, 1, 9), (10, 0, 6), (11, 0, 9),
          (12, 0, 4), (13, 0, 5), (14, 0, 5), (15, 0, 5), (16, 0, 5), (18, 0, 4), (19, 2, 7), (20, 1, 6),
          (22, 0, 4), (32, 1, 4), (37, 0, 3), (42, 0, 2), (47, 0, 0)]  # fmt: skip

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
# kio's i64Timedelta admits timedelta.min..max, but its decoder cannot turn every such millisecond
# count back into a timedelta (it raises "timedelta milliseconds overflow", which the registry
# reports as a malformed body). Real clients send -1 or retention times of days; generating inside
# +-100,000 days keeps the round-trip check about our guard, not about that kio limit.
# Whole milliseconds, as on the wire.
_MS = 100_000 * 86_400_000
st.register_type_strategy(
    i64Timedelta, st.integers(-_MS, _MS).map(lambda ms: i64Timedelta(datetime.timedelta(milliseconds=ms)))
)


def test_compact_array_count_bomb_is_refused_before_decoding() -> None:
    # Metadata v11: header v2, then a topics compact-array count of 2^32-2 with 25 bytes behind it.
    # kio's native reader would try to allocate ~34 GB for it and abort the process.
    frame = bytes.fromhex("0003000b0cbba1ac00016300ffffffff0fffffffff0fffffffff0fffffffff0fffffffff0f")
    m = load_messages(3, 11)
    h = decode_request_header(frame, m.request_header_version)
    with pytest.raises(MalformedRequestError, match="overruns"):
        m.decode_request(frame, h.body_offset)


def test_legacy_array_and_string_lengths_beyond_the_frame_are_refused() -> None:
    m = load_messages(3, 4)  # non-flexible: int32 array count, int16 string lengths
    topics_count_bomb = b"\x7f\xff\xff\xff" + b"\x00" * 8
    with pytest.raises(MalformedRequestError):
        check_request(topics_count_bomb, 0, m.request_type)
    name_too_long = b"\x00\x00\x00\x01" + b"\x7f\xff" + b"abc" + b"\x01"
    with pytest.raises(MalformedRequestError):
        check_request(name_too_long, 0, m.request_type)


def test_tagged_field_sizes_beyond_the_frame_are_refused() -> None:
    m = load_messages(3, 12)
    # topics: null (0); allow_auto_topic_creation; include_topic_authorized_operations; 1 tag of 2^20 bytes
    body = b"\x00\x01\x00" + b"\x01\x05\x80\x80\x40"
    with pytest.raises(MalformedRequestError, match="tagged"):
        check_request(body, 0, m.request_type)


def _nulls_the_schema_forbids(entity: Any, path: str = "") -> list[str]:
    """The paths of every ``None`` in ``entity`` whose field's type does not admit ``None``."""
    found = []
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        where = f"{path}{f.name}"
        admits_none = get_origin(f.type) in (UnionType, Union) and NoneType in get_args(f.type)
        if value is None:
            if not admits_none:
                found.append(where)
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                if dataclasses.is_dataclass(item):
                    found += _nulls_the_schema_forbids(item, f"{where}[{i}].")
        elif dataclasses.is_dataclass(value):
            found += _nulls_the_schema_forbids(value, f"{where}.")
    return found


@pytest.mark.parametrize(("key", "lo", "hi"), SERVED, ids=[str(k) for k, _, _ in SERVED])
def test_valid_requests_pass_and_mutated_ones_never_reach_an_unbacked_count_or_a_forbidden_null(
    key: int, lo: int, hi: int
) -> None:
    rng = random.Random(key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for version in range(lo, hi + 1):
            m = load_messages(key, version)
            strategy = st.from_type(m.request_type)
            for _ in range(3):
                req = strategy.example()
                frame = encode_request(m, 1, req)[4:]
                h = decode_request_header(frame, m.request_header_version)
                assert m.decode_request(frame, h.body_offset) == req
                for _ in range(20):
                    b = bytearray(frame)
                    for _ in range(rng.randint(1, 4)):
                        at = rng.randrange(len(b))
                        if rng.random() < 0.3:  # a null count or length: -1 (legacy) or 0 (compact)
                            b[at : at + 4] = rng.choice([b"\xff\xff", b"\xff\xff\xff\xff", b"\x00"])
                        else:
                            b[at] = rng.choice([0xFF, 0x7F, 0x80, 0x00, rng.randrange(256)])
                    try:
                        h = decode_request_header(bytes(b), m.request_header_version)
                        decoded = m.decode_request(bytes(b), h.body_offset)
                    except MalformedRequestError:
                        continue  # refused cleanly; an abort would have killed the test process
                    assert _nulls_the_schema_forbids(decoded) == []


# Wire pieces for hand-built bodies: legacy (int16 string / int32 count) and compact (uvarint n+1).
def _s(text: str) -> bytes:
    return len(text).to_bytes(2, "big") + text.encode()


def _cs(text: str) -> bytes:
    return bytes([len(text) + 1]) + text.encode()


_I32_0 = b"\x00\x00\x00\x00"
_NULL_STR, _NULL_ARR, _NULL_COMPACT, _TAGS = b"\xff\xff", b"\xff\xff\xff\xff", b"\x00", b"\x00"
_JOIN_V5_HEAD = _s("g") + _I32_0 + _I32_0 + _s("") + _NULL_STR + _s("consumer")
_JOIN_V7_HEAD = _cs("g") + _I32_0 + _I32_0 + _cs("") + _NULL_COMPACT + _cs("consumer")
_COMMIT_V2_HEAD = _s("g") + _I32_0 + _s("") + b"\x00" * 8
_SYNC_V3_HEAD = _s("g") + _I32_0 + _s("m") + _NULL_STR

# (api, version, body with the field empty, the same body with the field null, field, nullable)
# Nullability is Kafka's ``nullableVersions`` in clients/src/main/resources/common/message/*.json,
# which kio's types carry as ``| None``.
_NULL_CASES = [
    # JoinGroupRequest.json: Protocols is not nullable at any version.
    (11, 5, _JOIN_V5_HEAD + _I32_0, _JOIN_V5_HEAD + _NULL_ARR, "protocols", False),
    (11, 7, _JOIN_V7_HEAD + b"\x01" + _TAGS, _JOIN_V7_HEAD + _NULL_COMPACT + _TAGS, "protocols", False),
    # ... nor a protocol's Metadata bytes.
    (
        11, 5,
        _JOIN_V5_HEAD + b"\x00\x00\x00\x01" + _s("range") + _I32_0,
        _JOIN_V5_HEAD + b"\x00\x00\x00\x01" + _s("range") + _NULL_ARR,
        "metadata", False,
    ),
    # ... nor GroupId (a null string).
    (11, 5, _s("") + _JOIN_V5_HEAD[3:] + _I32_0, _NULL_STR + _JOIN_V5_HEAD[3:] + _I32_0, "group_id", False),
    # OffsetCommitRequest.json: Topics is not nullable.
    (8, 2, _COMMIT_V2_HEAD + _I32_0, _COMMIT_V2_HEAD + _NULL_ARR, "topics", False),
    # SyncGroupRequest.json: Assignments is not nullable, nor an assignment's bytes.
    (14, 3, _SYNC_V3_HEAD + _I32_0, _SYNC_V3_HEAD + _NULL_ARR, "assignments", False),
    (
        14, 3,
        _SYNC_V3_HEAD + b"\x00\x00\x00\x01" + _s("m") + _I32_0,
        _SYNC_V3_HEAD + b"\x00\x00\x00\x01" + _s("m") + _NULL_ARR,
        "assignment", False,
    ),
    # MetadataRequest.json: Topics is nullable from v1 ("all topics"), not at v0.
    (3, 0, _I32_0, _NULL_ARR, "topics", False),
    (3, 1, _I32_0, _NULL_ARR, "topics", True),
    (3, 9, b"\x01\x00\x00\x00" + _TAGS, _NULL_COMPACT + b"\x00\x00\x00" + _TAGS, "topics", True),
    # OffsetFetchRequest.json: Topics is nullable from v2 ("all committed offsets"), not at v1.
    (9, 1, _s("g") + _I32_0, _s("g") + _NULL_ARR, "topics", False),
    (9, 2, _s("g") + _I32_0, _s("g") + _NULL_ARR, "topics", True),
    # JoinGroupRequest.json: GroupInstanceId is nullable (v5+): the heads above already carry null.
]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "version", "empty", "null", "field", "nullable"),
    _NULL_CASES,
    ids=[f"{k}v{v}-{f}-{'nullable' if n else 'not-nullable'}" for k, v, _, _, f, n in _NULL_CASES],
)
def test_null_is_refused_exactly_where_the_schema_does_not_allow_it(
    key: int, version: int, empty: bytes, null: bytes, field: str, nullable: bool
) -> None:
    """Kafka's generated readers (MessageDataGenerator) throw "non-nullable field ... was
    serialized as null" for these, and the request fails to parse (the connection is closed);
    a null where ``nullableVersions`` allows it is read as null."""
    m = load_messages(key, version)
    check_request(empty, 0, m.request_type)
    m.reader(empty, 0)  # the empty form is a valid body: the null one differs only in that field
    if nullable:
        check_request(null, 0, m.request_type)
        assert getattr(m.reader(null, 0)[0], field) is None
    else:
        with pytest.raises(MalformedRequestError, match=f"null .*'{field}'.* not allow"):
            check_request(null, 0, m.request_type)
