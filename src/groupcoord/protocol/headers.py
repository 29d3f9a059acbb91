"""Request headers v1/v2 and response headers v0/v1, via kio's header schemas.

A request header is v2 when the request's API version is "flexible" (tagged fields), v1
otherwise; likewise a response header is v1 for flexible versions and v0 otherwise, with one
exception kept by Kafka for bootstrapping: ApiVersions responses always use header v0.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from groupcoord.protocol.framing import FrameError

_PEEK = struct.Struct(">hhi")

_read_v1 = entity_reader(RequestHeaderV1)
_read_v2 = entity_reader(RequestHeaderV2)
_write_resp_v0 = entity_writer(ResponseHeaderV0)
_write_resp_v1 = entity_writer(ResponseHeaderV1)


class MalformedRequestError(FrameError):
    """A frame whose header or body does not parse."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestHeaderInfo:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int
    body_offset: int


def peek_request(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the fixed prefix shared by every header version."""
    if len(frame) < _PEEK.size:
        raise MalformedRequestError(f"frame of {len(frame)} bytes is too short for a request header")
    key, version, correlation_id = _PEEK.unpack_from(frame, 0)
    return int(key), int(version), int(correlation_id)


def _check_header_bounds(frame: bytes, header_version: int) -> None:
    """Bounds of the client id and (v2) of the tagged fields, before the native reader runs."""
    if len(frame) < 10:
        raise MalformedRequestError(f"frame of {len(frame)} bytes is too short for a request header")
    (length,) = struct.unpack_from(">h", frame, 8)
    pos = 10 + max(length, 0)
    if length < -1 or pos > len(frame):
        raise MalformedRequestError(f"client id of {length} bytes overruns the frame")
    if header_version == 2:
        from groupcoord.protocol.guard import check_header_tags

        check_header_tags(frame, pos)


def decode_request_header(frame: bytes, header_version: int) -> RequestHeaderInfo:
    _check_header_bounds(frame, header_version)
    reader = _read_v2 if header_version == 2 else _read_v1
    try:
        header: Any
        header, size = reader(frame, 0)
    except Exception as exc:  # kio raises assorted errors on truncated input
        raise MalformedRequestError(f"bad request header v{header_version}: {exc!r}") from exc
    return RequestHeaderInfo(
        api_key=int(header.request_api_key),
        api_version=int(header.request_api_version),
        correlation_id=int(header.correlation_id),
        client_id=header.client_id,
        header_version=header_version,
        body_offset=size,
    )


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    buf = io.BytesIO()
    if header_version == 1:
        _write_resp_v1(buf, ResponseHeaderV1(correlation_id=i32(correlation_id)))
    else:
        _write_resp_v0(buf, ResponseHeaderV0(correlation_id=i32(correlation_id)))
    return buf.getvalue()
