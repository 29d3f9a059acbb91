"""The one request codec of every wire client groupcoord ships: the member client
(:mod:`groupcoord.client`), the admin tools (:mod:`groupcoord.admin`), the testing toolkit
(:mod:`groupcoord.testing`, through the admin client), the raw wire clients of
:mod:`groupcoord.protocol.client` and the benchmarks.

The broker decodes requests and encodes responses (:meth:`ApiMessages.decode_request`,
:meth:`ApiMessages.encode_response`); a client does the reverse, with the same
:class:`~groupcoord.protocol.registry.ApiMessages` of one (api key, version), so both sides take
their classes and header versions from one place (kio's schemas, plus the versions kio dropped,
:mod:`groupcoord.protocol.old_versions`):

* :func:`request_messages`: the (cached) messages of one API version;
* :func:`build_request`: a kio request entity of any version from one version-neutral mapping
  of Kafka's field names (nested entities as mappings, durations as milliseconds);
* :func:`encode_request`: the complete request frame (size, header v1 or v2, body);
* :func:`peek_correlation_id` and :func:`decode_response`: read an answer frame (size removed);
* :class:`ApiVersionTable` and :func:`decode_api_versions`: the ApiVersions negotiation - for
  each API the highest version both the broker and this client speak, and KIP-511's retry at a
  lower ApiVersions version.

Sans-I/O: bytes and entities in, bytes and entities out; the sockets are the callers'.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.index import api_key_map
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.registry import ApiMessages, load_messages

__all__ = [
    "ApiVersionTable",
    "ProtocolDecodeError",
    "UnsupportedApiError",
    "api_versions_request",
    "build_request",
    "decode_api_versions",
    "decode_response",
    "encode_request",
    "peek_correlation_id",
    "request_messages",
]

_SIZE = struct.Struct(">i")
_I16 = struct.Struct(">h")
_HEADER_V1 = entity_writer(RequestHeaderV1)
_HEADER_V2 = entity_writer(RequestHeaderV2)


class ProtocolDecodeError(Exception):
    """An answer frame could not be decoded; the connection is unusable."""


class UnsupportedApiError(Exception):
    """The broker and this client have no version of an API in common."""

    def __init__(self, api_key: int, client: tuple[int, int] | None, broker: tuple[int, int] | None) -> None:
        name = api_key_map.get(api_key, str(api_key))
        super().__init__(f"no common version of {name} (client {client}, broker {broker})")
        self.api_key = api_key


_MESSAGES: dict[tuple[int, int], ApiMessages] = {}


def request_messages(api_key: int, version: int) -> ApiMessages:
    """The classes and header versions of one API version (built once, then cached)."""
    found = _MESSAGES.get((api_key, version))
    if found is None:
        found = _MESSAGES[(api_key, version)] = load_messages(api_key, version)
    return found


# -- frames ------------------------------------------------------------------------------------


def encode_request(
    messages: ApiMessages, correlation_id: int, request: Any, client_id: str | None = "t"
) -> bytes:
    """A complete request frame (size prefix included) for ``request``, an entity of
    ``messages.request_type``."""
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    fields: dict[str, Any] = {
        "request_api_key": i16(messages.api_key),
        "request_api_version": i16(messages.version),
        "correlation_id": i32(correlation_id),
        "client_id": client_id,
    }
    if messages.request_header_version == 2:
        _HEADER_V2(buf, RequestHeaderV2(**fields))
    else:
        _HEADER_V1(buf, RequestHeaderV1(**fields))
    entity_writer(messages.request_type)(buf, request)  # kio caches its writers
    data = buf.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return buf.getvalue()


def peek_correlation_id(frame: bytes) -> int:
    """The correlation id of an answer frame (size prefix removed)."""
    if len(frame) < 4:
        raise ProtocolDecodeError(f"response frame of {len(frame)} bytes has no header")
    (cid,) = _SIZE.unpack_from(frame, 0)
    return int(cid)


def _skip_tagged_fields(frame: bytes, pos: int) -> int:
    # Hand-written: kio reads entities, not the bare tagged-field section of a response header.
    def uvarint(p: int) -> tuple[int, int]:
        shift = value = 0
        while True:
            if p >= len(frame):
                raise ProtocolDecodeError("truncated tagged fields in response header")
            b = frame[p]
            p += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value, p
            shift += 7

    count, pos = uvarint(pos)
    for _ in range(count):
        _, pos = uvarint(pos)
        size, pos = uvarint(pos)
        pos += size
    return pos


def decode_response(messages: ApiMessages, frame: bytes) -> tuple[int, Any]:
    """(correlation id, response entity) of an answer frame (size prefix removed) to a request
    made with ``messages``. Raises :class:`ProtocolDecodeError` on a truncated or invalid frame."""
    correlation_id = peek_correlation_id(frame)
    pos = 4
    if messages.response_header_version == 1:
        pos = _skip_tagged_fields(frame, pos)
    try:
        entity, _ = entity_reader(messages.response_type)(frame, pos)  # kio caches its readers
    except Exception as exc:  # truncated or invalid body
        raise ProtocolDecodeError(f"bad {messages.name} v{messages.version} response: {exc!r}") from exc
    return correlation_id, entity


# -- building requests from version-neutral field mappings ------------------------------------


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    nested: type[Any] | None  #: the entity class inside the field (a tuple of them, or optional)
    is_tuple: bool
    is_timedelta: bool


_PLANS: dict[type[Any], tuple[_Field, ...]] = {}


def _nested_type(tp: Any) -> type[Any] | None:
    """The kio entity class inside ``tuple[Entity, ...]``, ``Entity | None`` or ``Entity``."""
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return tp
    if typing.get_origin(tp) in (tuple, typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            found = _nested_type(arg)
            if found is not None:
                return found
    return None


def _has(tp: Any, test: typing.Callable[[Any], bool]) -> bool:
    if test(tp):
        return True
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return any(_has(arg, test) for arg in typing.get_args(tp))
    return False


def _plan(cls: type[Any]) -> tuple[_Field, ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        plan = _PLANS[cls] = tuple(
            _Field(
                name=f.name,
                nested=_nested_type(hints[f.name]),
                is_tuple=_has(hints[f.name], lambda t: typing.get_origin(t) is tuple),
                is_timedelta=_has(
                    hints[f.name], lambda t: isinstance(t, type) and issubclass(t, datetime.timedelta)
                ),
            )
            for f in dataclasses.fields(cls)
        )
    return plan


def build_request(cls: type[Any], values: Mapping[str, Any]) -> Any:
    """An instance of the kio class ``cls`` (any version) from a superset mapping of field values.

    Nested entities are given as mappings (or sequences of them; an entity already built is kept);
    durations as milliseconds; lists become tuples. Fields the class lacks are ignored, so one call
    site builds a request at every version; fields the mapping lacks take the schema's default (a
    missing field without one is a bug in the caller: TypeError).
    """
    kwargs: dict[str, Any] = {}
    for f in _plan(cls):
        if f.name not in values:
            continue
        value = values[f.name]
        if value is None:
            kwargs[f.name] = None
        elif f.nested is not None:
            nested = f.nested
            if f.is_tuple:
                kwargs[f.name] = tuple(
                    build_request(nested, v) if isinstance(v, Mapping) else v for v in value
                )
            else:
                kwargs[f.name] = build_request(nested, value) if isinstance(value, Mapping) else value
        elif f.is_timedelta and isinstance(value, int):
            kwargs[f.name] = datetime.timedelta(milliseconds=value)
        elif f.is_tuple and isinstance(value, list):
            kwargs[f.name] = tuple(value)
        else:
            kwargs[f.name] = value
    return cls(**kwargs)


# -- ApiVersions negotiation -------------------------------------------------------------------


def api_versions_request(version: int, *, software: str = "groupcoord-client") -> Any:
    """An ApiVersions request of ``version`` (v3+ names the client software, KIP-511)."""
    return build_request(
        request_messages(ApiKey.API_VERSIONS, version).request_type,
        {"client_software_name": software, "client_software_version": "1"},
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionTable:
    """What a broker speaks and what this client builds, per API; :meth:`version` is the highest
    version both support."""

    broker: Mapping[int, tuple[int, int]]
    client: Mapping[int, tuple[int, int]]

    @classmethod
    def from_response(cls, response: Any, client: Mapping[int, tuple[int, int]]) -> ApiVersionTable:
        ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
        return cls(broker=ranges, client=client)

    def version(self, api_key: int) -> int:
        mine = self.client.get(api_key)
        theirs = self.broker.get(api_key)
        if mine is None or theirs is None:
            raise UnsupportedApiError(api_key, mine, theirs)
        hi = min(mine[1], theirs[1])
        if hi < max(mine[0], theirs[0]):
            raise UnsupportedApiError(api_key, mine, theirs)
        return hi

    def supports(self, api_key: int) -> bool:
        try:
            self.version(api_key)
        except UnsupportedApiError:
            return False
        return True

    def messages(self, api_key: int) -> ApiMessages:
        return request_messages(api_key, self.version(api_key))


def decode_api_versions(
    frame: bytes, sent_version: int, client: Mapping[int, tuple[int, int]]
) -> tuple[ApiVersionTable | None, int | None]:
    """Read an ApiVersions answer (size prefix removed) to a request of ``sent_version``.

    Returns (table, None) on success, or (None, retry_version) when the broker answered
    UNSUPPORTED_VERSION (KIP-511: the answer is then in the v0 layout and lists what the broker
    speaks, so the client retries at the highest ApiVersions version both know). Another error
    code raises :class:`ProtocolDecodeError`.
    """
    if len(frame) >= 6 and _I16.unpack_from(frame, 4)[0] == ErrorCode.UNSUPPORTED_VERSION:
        _, response = decode_response(request_messages(ApiKey.API_VERSIONS, 0), frame)
        theirs = ApiVersionTable.from_response(response, client).broker.get(ApiKey.API_VERSIONS, (0, 0))
        return None, min(theirs[1], client[ApiKey.API_VERSIONS][1])
    _, response = decode_response(request_messages(ApiKey.API_VERSIONS, sent_version), frame)
    if int(response.error_code) != ErrorCode.NONE:
        try:
            name = ErrorCode(int(response.error_code)).name
        except ValueError:
            name = f"error {int(response.error_code)}"
        raise ProtocolDecodeError(f"ApiVersions failed with {name}")
    return ApiVersionTable.from_response(response, client), None
