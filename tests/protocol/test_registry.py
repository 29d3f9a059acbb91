import datetime

import pytest
from kio.schema.metadata.v12.request import MetadataRequest

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.entities import child, err, make, ms
from groupcoord.protocol.framing import FrameDecoder
from groupcoord.protocol.headers import decode_request_header
from groupcoord.protocol.registry import ApiRegistry, UnknownApiError, UnsupportedVersionError


def test_lookup_returns_kio_types_and_header_versions_by_flexibility() -> None:
    reg = ApiRegistry()
    reg.register(3, 0, 12)
    reg.register(18, 0, 4)
    m = reg.lookup(3, 12)
    assert m.request_type is MetadataRequest
    assert (m.request_header_version, m.response_header_version) == (2, 1)
    m = reg.lookup(3, 8)
    assert (m.request_header_version, m.response_header_version) == (1, 0)
    # ApiVersions v3 is flexible, yet its response header stays v0.
    m = reg.lookup(18, 3)
    assert (m.request_header_version, m.response_header_version) == (2, 0)


def test_unknown_key_and_unsupported_version_are_distinguished() -> None:
    reg = ApiRegistry()
    reg.register(3, 4, 12)
    with pytest.raises(UnknownApiError):
        reg.lookup(0, 9)
    with pytest.raises(UnsupportedVersionError) as info:
        reg.lookup(3, 13)
    assert info.value.supported == (4, 12)
    with pytest.raises(UnsupportedVersionError):
        reg.lookup(3, 3)


def test_ranges_list_exactly_what_was_registered() -> None:
    reg = ApiRegistry()
    reg.register(18, 0, 4)
    reg.register(0, 3, 10)
    assert reg.ranges() == [(0, 3, 10), (18, 0, 4)]


def test_registering_twice_or_outside_kio_fails() -> None:
    reg = ApiRegistry()
    reg.register(18, 0, 4)
    with pytest.raises(ValueError):
        reg.register(18, 0, 4)
    with pytest.raises(KeyError):
        reg.register(3, 0, 99)


def test_request_round_trips_through_client_encoder_and_server_decoder() -> None:
    reg = ApiRegistry()
    reg.register(3, 0, 12)
    m = reg.lookup(3, 12)
    topic_t = child(m.request_type, "topics")
    req = make(
        m.request_type,
        topics=(make(topic_t, name="orders", topic_id=None),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    frame_bytes = encode_request(m, 41, req, client_id="cid")
    dec = FrameDecoder(1 << 20)
    dec.feed(frame_bytes)
    frame = dec.next_frame()
    assert frame is not None
    header = decode_request_header(frame, m.request_header_version)
    assert (header.correlation_id, header.client_id) == (41, "cid")
    assert m.decode_request(frame, header.body_offset) == req


def test_response_encoding_frames_header_and_body() -> None:
    reg = ApiRegistry()
    reg.register(18, 0, 4)
    m = reg.lookup(18, 3)
    key_t = child(m.response_type, "api_keys")
    resp = make(
        m.response_type,
        error_code=err(0),
        api_keys=(make(key_t, api_key=18, min_version=0, max_version=4),),
        throttle_time=datetime.timedelta(0),
    )
    data = m.encode_response(99, resp)
    assert int.from_bytes(data[:4], "big") == len(data) - 4
    assert data[4:8] == (99).to_bytes(4, "big")
    assert decode_response(m, data[4:]) == (99, resp)


def test_encoding_a_response_of_another_version_is_refused() -> None:
    reg = ApiRegistry()
    reg.register(18, 0, 4)
    v3 = reg.lookup(18, 3)
    v2 = reg.lookup(18, 2)
    resp = make(v2.response_type, error_code=err(0), api_keys=(), throttle_time=datetime.timedelta(0))
    with pytest.raises(TypeError):
        v3.encode_response(1, resp)


def test_ms_converts_kio_timedeltas() -> None:
    assert ms(datetime.timedelta(milliseconds=1500)) == 1500
    assert ms(None) == 0
