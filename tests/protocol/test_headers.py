import io
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from groupcoord.protocol.headers import (
    MalformedRequestError,
    decode_request_header,
    encode_response_header,
    peek_request,
)


def test_request_header_v1_fields_and_body_offset() -> None:
    # api_key=3, version=5, correlation 7, client_id "abc", then body bytes
    frame = b"\x00\x03\x00\x05\x00\x00\x00\x07\x00\x03abc" + b"BODY"
    assert peek_request(frame) == (3, 5, 7)
    h = decode_request_header(frame, 1)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (3, 5, 7, "abc")
    assert h.body_offset == 13
    assert frame[h.body_offset :] == b"BODY"


def test_request_header_v2_skips_tagged_fields() -> None:
    # same, plus an empty tagged-field section (0x00)
    frame = b"\x00\x03\x00\x0c\x00\x00\x00\x07\x00\x03abc\x00" + b"BODY"
    h = decode_request_header(frame, 2)
    assert h.api_version == 12
    assert h.body_offset == 14


def test_request_header_null_client_id() -> None:
    frame = b"\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff"
    h = decode_request_header(frame, 1)
    assert h.client_id is None
    assert h.body_offset == 10


def test_truncated_header_is_malformed() -> None:
    with pytest.raises(MalformedRequestError):
        peek_request(b"\x00\x03\x00")
    with pytest.raises(MalformedRequestError):
        decode_request_header(b"\x00\x03\x00\x05\x00\x00\x00\x07\x00\x09ab", 1)


def test_response_headers_v0_and_v1_bytes() -> None:
    assert encode_response_header(258, 0) == b"\x00\x00\x01\x02"
    assert encode_response_header(258, 1) == b"\x00\x00\x01\x02\x00"


# ---------------------------------------------------------------- against kio's header codecs
# The struct readers and writers above replaced kio's entity codecs on the request path; kio
# stays the reference they must agree with, byte for byte and field for field.
_kio_read_v1 = entity_reader(RequestHeaderV1)
_kio_read_v2 = entity_reader(RequestHeaderV2)


def _kio_response_header(correlation_id: int, version: int) -> bytes:
    buf = io.BytesIO()
    if version == 1:
        entity_writer(ResponseHeaderV1)(buf, ResponseHeaderV1(correlation_id=i32(correlation_id)))
    else:
        entity_writer(ResponseHeaderV0)(buf, ResponseHeaderV0(correlation_id=i32(correlation_id)))
    return buf.getvalue()


_client_ids = st.one_of(st.none(), st.text(max_size=40))
_tags = st.lists(st.tuples(st.integers(0, 300), st.binary(max_size=20)), max_size=3, unique_by=lambda t: t[0])


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _request_header(
    key: int, version: int, corr: int, client_id: str | None, tags: list[tuple[int, bytes]] | None
) -> bytes:
    head = struct.pack(">hhi", key, version, corr)
    if client_id is None:
        head += b"\xff\xff"
    else:
        raw = client_id.encode("utf-8")
        head += struct.pack(">h", len(raw)) + raw
    if tags is not None:
        head += _uvarint(len(tags))
        for tag, data in sorted(tags):
            head += _uvarint(tag) + _uvarint(len(data)) + data
    return head


@settings(max_examples=300, deadline=None)
@given(
    key=st.integers(0, 80),
    version=st.integers(0, 20),
    corr=st.integers(-(2**31), 2**31 - 1),
    client_id=_client_ids,
    body=st.binary(max_size=8),
)
def test_request_header_struct_reader_agrees_with_kio(
    key: int, version: int, corr: int, client_id: str | None, body: bytes
) -> None:
    for header_version, reader in ((1, _kio_read_v1), (2, _kio_read_v2)):
        frame = _request_header(key, version, corr, client_id, [] if header_version == 2 else None) + body
        ours = decode_request_header(frame, header_version)
        theirs, size = reader(frame, 0)
        assert (ours.api_key, ours.api_version, ours.correlation_id, ours.client_id, ours.body_offset) == (
            theirs.request_api_key,
            theirs.request_api_version,
            theirs.correlation_id,
            theirs.client_id,
            size,
        )


@settings(max_examples=200, deadline=None)
@given(client_id=_client_ids, tags=_tags, body=st.binary(max_size=8))
def test_request_header_v2_unknown_tagged_fields_are_skipped(
    client_id: str | None, tags: list[tuple[int, bytes]], body: bytes
) -> None:
    # Header v2 defines no tagged field; Kafka keeps unknown ones aside and reads on, so the
    # body starts right after the last of them (kio's reader raises on them instead).
    head = _request_header(11, 9, 5, client_id, tags)
    h = decode_request_header(head + body, 2)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (11, 9, 5, client_id)
    assert h.body_offset == len(head)


@given(corr=st.integers(-(2**31), 2**31 - 1))
def test_response_header_bytes_agree_with_kio(corr: int) -> None:
    for version in (0, 1):
        assert encode_response_header(corr, version) == _kio_response_header(corr, version)


def test_header_with_invalid_utf8_client_id_is_malformed() -> None:
    frame = b"\x00\x03\x00\x05\x00\x00\x00\x07\x00\x02\xff\xfe"
    with pytest.raises(MalformedRequestError):
        decode_request_header(frame, 1)


def test_header_with_client_id_length_below_minus_one_is_malformed() -> None:
    frame = b"\x00\x03\x00\x05\x00\x00\x00\x07\xff\xfe" + b"x" * 10
    with pytest.raises(MalformedRequestError):
        decode_request_header(frame, 1)


def test_header_v2_with_tag_overrunning_the_frame_is_malformed() -> None:
    frame = b"\x00\x03\x00\x0c\x00\x00\x00\x07\x00\x03abc\x01\x00\x09ab"
    with pytest.raises(MalformedRequestError):
        decode_request_header(frame, 2)
