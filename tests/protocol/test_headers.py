import pytest

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
