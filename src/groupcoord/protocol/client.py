"""The client side of the codec: encode requests and decode responses.

The broker never needs this; tests, tools and benchmarks that talk to the broker over a raw
socket do.
"""

from __future__ import annotations

import io
import struct
from typing import Any

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from groupcoord.protocol.registry import ApiMessages

_write_v1 = entity_writer(RequestHeaderV1)
_write_v2 = entity_writer(RequestHeaderV2)
_SIZE = struct.Struct(">i")


def encode_request(
    messages: ApiMessages, correlation_id: int, request: Any, client_id: str | None = "t"
) -> bytes:
    """A complete request frame (size prefix included)."""
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    fields: dict[str, Any] = {
        "request_api_key": i16(messages.api_key),
        "request_api_version": i16(messages.version),
        "correlation_id": i32(correlation_id),
        "client_id": client_id,
    }
    if messages.request_header_version == 2:
        _write_v2(buf, RequestHeaderV2(**fields))
    else:
        _write_v1(buf, RequestHeaderV1(**fields))
    entity_writer(messages.request_type)(buf, request)
    data = buf.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return buf.getvalue()


def decode_response(messages: ApiMessages, frame: bytes) -> tuple[int, Any]:
    """(correlation_id, response entity) of a response frame without its size prefix."""
    (correlation_id,) = struct.unpack_from(">i", frame, 0)
    offset = 4 + (1 if messages.response_header_version == 1 else 0)
    entity, _ = entity_reader(messages.response_type)(frame, offset)
    return correlation_id, entity
