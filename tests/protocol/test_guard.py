"""The structural pre-check that keeps forged counts away from kio's native decoder."""

from __future__ import annotations

import random
import warnings

import pytest
from hypothesis import strategies as st
from kio.static.primitive import Records

from groupcoord.protocol.client import encode_request
from groupcoord.protocol.guard import check_request
from groupcoord.protocol.headers import MalformedRequestError, decode_request_header
from groupcoord.protocol.registry import load_messages

# Every (api, version) the broker serves, including the group APIs.
SERVED = [(0, 3, 10), (1, 4, 16), (2, 1, 9), (3, 0, 12), (8, 2, 9), (9, 1, 9), (10, 0, 6), (11, 0, 9),
          (12, 0, 4), (13, 0, 5), (14, 0, 5), (15, 0, 5), (16, 0, 5), (18, 0, 4), (19, 2, 7), (20, 1, 6),
          (22, 0, 4), (32, 1, 4), (37, 0, 3), (42, 0, 2), (47, 0, 0)]  # fmt: skip

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))


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


@pytest.mark.parametrize(("key", "lo", "hi"), SERVED, ids=[str(k) for k, _, _ in SERVED])
def test_valid_requests_pass_and_mutated_ones_never_reach_an_unbacked_count(
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
                        b[rng.randrange(len(b))] = rng.choice([0xFF, 0x7F, 0x80, 0x00, rng.randrange(256)])
                    try:
                        h = decode_request_header(bytes(b), m.request_header_version)
                        m.decode_request(bytes(b), h.body_offset)
                    except MalformedRequestError:
                        pass  # refused cleanly; an abort would have killed the test process
