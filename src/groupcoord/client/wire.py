"""The client's wire layer: kio encoding and decoding, and ApiVersions negotiation.

Everything version-specific in the client lives here. A connection first sends ApiVersions;
:class:`ApiVersionTable` then picks, for each API, the highest version both the broker and
this client support. Requests are described once, version-neutrally, as a mapping of
Kafka's field names (a superset over every version); :func:`build` keeps the fields the
chosen version's kio class has and fills the rest with the schema's defaults. Responses are
read with ``getattr(entity, name, default)`` for the same reason.

Nothing here knows about groupcoord's broker: only the wire formats (kio's schemas,
:mod:`groupcoord.protocol.framing`, the API numbers of
:class:`groupcoord.protocol.api_keys.ApiKey`) are used, so the client works against any
Kafka-compatible broker.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import struct
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.index import api_key_map, schema_name_map
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from groupcoord.client import messages as m
from groupcoord.client.types import TopicPartition
from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey

#: The versions this client can build and read, per API. The request builders below give
#: every field any of these versions needs; the readers accept every shape they return.
CLIENT_RANGES: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 9),
    ApiKey.FETCH: (4, 16),
    ApiKey.LIST_OFFSETS: (1, 9),
    ApiKey.METADATA: (1, 12),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    68: (1, 1),  # ConsumerGroupHeartbeat (KIP-848; v1 only, as librdkafka): consumer_group_wire.py
    69: (0, 1),  # ConsumerGroupDescribe
}

_SIZE = struct.Struct(">i")
_HEADER_V1 = entity_writer(RequestHeaderV1)
_HEADER_V2 = entity_writer(RequestHeaderV2)


class UnsupportedApiError(Exception):
    """The broker and this client have no version of an API in common."""

    def __init__(self, api_key: int, broker: tuple[int, int] | None) -> None:
        name = api_key_map.get(api_key, str(api_key))
        super().__init__(
            f"no common version of {name} (client {CLIENT_RANGES.get(api_key)}, broker {broker})"
        )
        self.api_key = api_key


class ProtocolDecodeError(Exception):
    """A response frame could not be decoded; the connection is unusable."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Codec:
    """The kio classes and header versions of one (api key, version)."""

    api_key: int
    version: int
    request_type: type[Any]
    response_type: type[Any]
    flexible: bool
    writer: Any
    reader: Any

    @property
    def response_header_version(self) -> int:
        # ApiVersions answers always use header v0 so a client can read them before it
        # knows what the broker speaks.
        return 1 if self.flexible and self.api_key != ApiKey.API_VERSIONS else 0


_CODECS: dict[tuple[int, int], Codec] = {}


def _load(name: str, version: int, kind: EntityType) -> type[Any]:
    path = schema_name_map[name][version][kind]  # type: ignore[index]
    module, _, attr = path.partition(":")
    cls: type[Any] = getattr(importlib.import_module(module), attr)
    return cls


def codec(api_key: int, version: int) -> Codec:
    """The (cached) codec of one API version, straight from kio's schemas."""
    found = _CODECS.get((api_key, version))
    if found is not None:
        return found
    name = api_key_map[api_key]
    req = _load(name, version, EntityType.request)
    resp = _load(name, version, EntityType.response)
    made = Codec(
        api_key=api_key,
        version=version,
        request_type=req,
        response_type=resp,
        flexible=bool(req.__flexible__),
        writer=entity_writer(req),
        reader=entity_reader(resp),
    )
    _CODECS[(api_key, version)] = made
    return made


def encode_request(c: Codec, correlation_id: int, client_id: str | None, request: Any) -> bytes:
    """A complete request frame, size prefix included."""
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    header: dict[str, Any] = {
        "request_api_key": c.api_key,
        "request_api_version": c.version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    if c.flexible:
        _HEADER_V2(buf, RequestHeaderV2(**header))
    else:
        _HEADER_V1(buf, RequestHeaderV1(**header))
    c.writer(buf, request)
    data = buf.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return buf.getvalue()


def peek_correlation_id(frame: bytes) -> int:
    if len(frame) < 4:
        raise ProtocolDecodeError(f"response frame of {len(frame)} bytes has no header")
    (cid,) = _SIZE.unpack_from(frame, 0)
    return int(cid)


def _skip_tagged_fields(frame: bytes, pos: int) -> int:
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


def decode_response(c: Codec, frame: bytes) -> Any:
    """The response entity of a frame (size prefix removed) answering a request made with ``c``."""
    pos = 4
    if c.response_header_version == 1:
        pos = _skip_tagged_fields(frame, pos)
    try:
        entity, _ = c.reader(frame, pos)
    except Exception as exc:  # truncated or invalid body
        raise ProtocolDecodeError(f"bad {api_key_map[c.api_key]} v{c.version} response: {exc!r}") from exc
    return entity


# -- building requests from version-neutral field mappings ------------------------------------

_PLANS: dict[type[Any], list[tuple[str, Any, bool, bool]]] = {}


def _nested_type(tp: Any) -> type[Any] | None:
    """The kio entity class inside ``tuple[Entity, ...]``, ``Entity | None`` or ``Entity``."""
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        return _nested_type(args[0]) if args else None
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            found = _nested_type(arg)
            if found is not None:
                return found
        return None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return tp
    return None


def _plan(cls: type[Any]) -> list[tuple[str, Any, bool, bool]]:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = []
        for f in dataclasses.fields(cls):
            nested = _nested_type(f.type)
            is_tuple = typing.get_origin(f.type) is tuple or (
                typing.get_origin(f.type) in (typing.Union, types.UnionType)
                and any(typing.get_origin(a) is tuple for a in typing.get_args(f.type))
            )
            timedelta = str(f.metadata.get("kafka_type", "")).startswith("timedelta")
            plan.append((f.name, nested, is_tuple, timedelta))
        _PLANS[cls] = plan
    return plan


def build(cls: type[Any], values: Mapping[str, Any]) -> Any:
    """An instance of the kio class ``cls`` from a superset mapping of field values.

    Nested entities are given as mappings (or sequences of mappings); durations as
    milliseconds. Fields the class lacks are ignored; fields the mapping lacks take the
    schema's default (a missing field without a default is a bug in the caller: TypeError).
    """
    kwargs: dict[str, Any] = {}
    for name, nested, is_tuple, timedelta in _plan(cls):
        if name not in values:
            continue
        value = values[name]
        if value is None:
            kwargs[name] = None
        elif nested is not None:
            if is_tuple:
                kwargs[name] = tuple(build(nested, v) for v in value)
            else:
                kwargs[name] = build(nested, value)
        elif timedelta:
            kwargs[name] = datetime.timedelta(milliseconds=int(value))
        elif is_tuple:
            kwargs[name] = tuple(value)
        else:
            kwargs[name] = value
    return cls(**kwargs)


def error_code(value: Any) -> ErrorCode:
    """groupcoord's ErrorCode for a kio error code (unknown codes become UNKNOWN_SERVER_ERROR)."""
    raw = int(value)
    try:
        return ErrorCode(raw)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


# -- ApiVersions negotiation -------------------------------------------------------------------


def api_versions_request(version: int) -> Any:
    return build(
        codec(ApiKey.API_VERSIONS, version).request_type,
        {"client_software_name": "groupcoord-client", "client_software_version": "1"},
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionTable:
    """The version chosen per API: the highest one both sides support."""

    broker: Mapping[int, tuple[int, int]]

    @classmethod
    def from_response(cls, response: Any) -> ApiVersionTable:
        ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
        return cls(broker=ranges)

    def version(self, api_key: int) -> int:
        mine = CLIENT_RANGES.get(api_key)
        theirs = self.broker.get(api_key)
        if mine is None or theirs is None:
            raise UnsupportedApiError(api_key, theirs)
        hi = min(mine[1], theirs[1])
        if hi < max(mine[0], theirs[0]):
            raise UnsupportedApiError(api_key, theirs)
        return hi

    def supports(self, api_key: int) -> bool:
        try:
            self.version(api_key)
        except UnsupportedApiError:
            return False
        return True

    def codec(self, api_key: int) -> Codec:
        return codec(api_key, self.version(api_key))


def decode_api_versions(frame: bytes, sent_version: int) -> tuple[ApiVersionTable | None, int | None]:
    """Read an ApiVersions answer.

    Returns (table, None) on success, or (None, retry_version) when the broker answered
    UNSUPPORTED_VERSION (KIP-511: the answer is then in the v0 layout and lists what the
    broker speaks, so the client retries at the highest ApiVersions version both know).
    """
    if len(frame) >= 6 and struct.unpack_from(">h", frame, 4)[0] == ErrorCode.UNSUPPORTED_VERSION:
        response = decode_response(codec(ApiKey.API_VERSIONS, 0), frame)
        table = ApiVersionTable.from_response(response)
        theirs = table.broker.get(ApiKey.API_VERSIONS, (0, 0))
        return None, min(theirs[1], CLIENT_RANGES[ApiKey.API_VERSIONS][1])
    response = decode_response(codec(ApiKey.API_VERSIONS, sent_version), frame)
    code = error_code(response.error_code)
    if code is not ErrorCode.NONE:
        raise ProtocolDecodeError(f"ApiVersions failed with {code.name}")
    return ApiVersionTable.from_response(response), None


# -- small readers shared by the fetcher and the consumer --------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerNode:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionMetadata:
    partition: int
    leader: int
    leader_epoch: int
    error: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata:
    name: str
    topic_id: Any
    error: ErrorCode
    partitions: tuple[PartitionMetadata, ...]
    internal: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterMetadata:
    brokers: tuple[BrokerNode, ...]
    controller_id: int
    topics: tuple[TopicMetadata, ...]


def metadata_request(
    topics: Sequence[str] | None, *, allow_auto_topic_creation: bool = False
) -> dict[str, Any]:
    """Fields of a Metadata request: ``None`` asks for every topic."""
    return {
        "topics": None if topics is None else [{"name": t, "topic_id": _ZERO_UUID} for t in topics],
        "allow_auto_topic_creation": allow_auto_topic_creation,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def read_metadata(response: Any) -> ClusterMetadata:
    brokers = tuple(
        BrokerNode(node_id=int(b.node_id), host=str(b.host), port=int(b.port)) for b in response.brokers
    )
    topics = []
    for t in response.topics:
        parts = tuple(
            PartitionMetadata(
                partition=int(p.partition_index),
                leader=int(p.leader_id),
                leader_epoch=int(getattr(p, "leader_epoch", -1)),
                error=error_code(p.error_code),
            )
            for p in t.partitions
        )
        topics.append(
            TopicMetadata(
                name=str(t.name) if t.name is not None else "",
                topic_id=getattr(t, "topic_id", None),
                error=error_code(t.error_code),
                partitions=tuple(sorted(parts, key=lambda p: p.partition)),
                internal=bool(getattr(t, "is_internal", False)),
            )
        )
    return ClusterMetadata(
        brokers=brokers, controller_id=int(getattr(response, "controller_id", -1)), topics=tuple(topics)
    )


def _zero_uuid() -> Any:
    import uuid

    return uuid.UUID(int=0)


_ZERO_UUID = _zero_uuid()


# -- the member core's messages <-> kio ---------------------------------------------------------


def _topics_of(pairs: Sequence[tuple[Any, Any]]) -> dict[str, list[tuple[int, Any]]]:
    by_topic: dict[str, list[tuple[int, Any]]] = {}
    for tp, value in pairs:
        by_topic.setdefault(tp.topic, []).append((tp.partition, value))
    return by_topic


def request_fields(request: m.Request) -> tuple[int, dict[str, Any]]:
    """(api key, version-neutral fields) of a member-core request."""
    if isinstance(request, m.FindCoordinatorRequest):
        return ApiKey.FIND_COORDINATOR, {
            "key": request.key,
            "key_type": request.key_type,
            "coordinator_keys": (request.key,),
        }
    if isinstance(request, m.MetadataRequest):
        return ApiKey.METADATA, metadata_request(request.topics)
    if isinstance(request, m.JoinGroupRequest):
        return ApiKey.JOIN_GROUP, {
            "group_id": request.group_id,
            "session_timeout": request.session_timeout_ms,
            "rebalance_timeout": request.rebalance_timeout_ms,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "protocol_type": request.protocol_type,
            "protocols": [{"name": n, "metadata": md} for n, md in request.protocols],
            "reason": request.reason,
        }
    if isinstance(request, m.SyncGroupRequest):
        return ApiKey.SYNC_GROUP, {
            "group_id": request.group_id,
            "generation_id": request.generation_id,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "protocol_type": request.protocol_type,
            "protocol_name": request.protocol_name,
            "assignments": [{"member_id": mid, "assignment": a} for mid, a in request.assignments],
        }
    if isinstance(request, m.HeartbeatRequest):
        return ApiKey.HEARTBEAT, {
            "group_id": request.group_id,
            "generation_id": request.generation_id,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
        }
    if isinstance(request, m.LeaveGroupRequest):
        return ApiKey.LEAVE_GROUP, {
            "group_id": request.group_id,
            "member_id": request.member_id,
            "members": [
                {
                    "member_id": request.member_id,
                    "group_instance_id": request.group_instance_id,
                    "reason": request.reason,
                }
            ],
        }
    if isinstance(request, m.OffsetCommitRequest):
        return ApiKey.OFFSET_COMMIT, {
            "group_id": request.group_id,
            "generation_id_or_member_epoch": request.generation_id,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "retention_time": -1,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": om.offset,
                            "committed_leader_epoch": -1 if om.leader_epoch is None else om.leader_epoch,
                            "committed_metadata": om.metadata,
                            "commit_timestamp": -1,
                        }
                        for p, om in parts
                    ],
                }
                for topic, parts in _topics_of(request.offsets).items()
            ],
        }
    if isinstance(request, m.OffsetFetchRequest):
        topics = (
            None
            if request.partitions is None
            else [
                {"name": t, "partition_indexes": [p for p, _ in parts]}
                for t, parts in _topics_of([(tp, None) for tp in request.partitions]).items()
            ]
        )
        return ApiKey.OFFSET_FETCH, {
            "group_id": request.group_id,
            "topics": topics,
            "require_stable": request.require_stable,
            "groups": [{"group_id": request.group_id, "topics": topics}],
        }
    from groupcoord.client import consumer_group_wire  # it imports no wire: no cycle

    other: Any = request  # the consumer-protocol (KIP-848) member's requests travel the same path
    if consumer_group_wire.handles(other):
        return consumer_group_wire.request_fields(other)
    raise TypeError(f"not a member-core request: {request!r}")


def _opt_str(entity: Any, name: str) -> str | None:
    value = getattr(entity, name, None)
    return None if value is None else str(value)


def read_response(request: m.Request, response: Any) -> m.Response:
    """The member-core response for the kio answer to ``request``."""
    if isinstance(request, m.FindCoordinatorRequest):
        entry = response.coordinators[0] if hasattr(response, "coordinators") else response
        code = error_code(entry.error_code)
        node = (
            m.Node(node_id=int(entry.node_id), host=str(entry.host), port=int(entry.port))
            if code is ErrorCode.NONE
            else None
        )
        return m.FindCoordinatorResponse(
            error=code, node=node, error_message=_opt_str(entry, "error_message")
        )
    if isinstance(request, m.MetadataRequest):
        md = read_metadata(response)
        return m.MetadataResponse(
            topics=tuple(
                m.TopicMetadata(
                    name=t.name,
                    error=t.error,
                    partitions=len(t.partitions) if t.error is ErrorCode.NONE else 0,
                    internal=t.internal,
                )
                for t in md.topics
            )
        )
    if isinstance(request, m.JoinGroupRequest):
        return m.JoinGroupResponse(
            error=error_code(response.error_code),
            generation_id=int(response.generation_id),
            protocol_type=_opt_str(response, "protocol_type"),
            protocol_name=_opt_str(response, "protocol_name"),
            leader=str(response.leader),
            member_id=str(response.member_id),
            members=tuple(
                m.JoinGroupMember(
                    member_id=str(mb.member_id),
                    group_instance_id=_opt_str(mb, "group_instance_id"),
                    metadata=bytes(mb.metadata),
                )
                for mb in response.members
            ),
            skip_assignment=bool(getattr(response, "skip_assignment", False)),
        )
    if isinstance(request, m.SyncGroupRequest):
        return m.SyncGroupResponse(
            error=error_code(response.error_code),
            assignment=bytes(response.assignment or b""),
            protocol_type=_opt_str(response, "protocol_type"),
            protocol_name=_opt_str(response, "protocol_name"),
        )
    if isinstance(request, m.HeartbeatRequest):
        return m.HeartbeatResponse(error=error_code(response.error_code))
    if isinstance(request, m.LeaveGroupRequest):
        members = getattr(response, "members", ())
        member_error = error_code(members[0].error_code) if members else ErrorCode.NONE
        return m.LeaveGroupResponse(error=error_code(response.error_code), member_error=member_error)
    if isinstance(request, m.OffsetCommitRequest):
        return m.OffsetCommitResponse(
            errors=tuple(
                (TopicPartition(str(t.name), int(p.partition_index)), error_code(p.error_code))
                for t in response.topics
                for p in t.partitions
            )
        )
    if isinstance(request, m.OffsetFetchRequest):
        if hasattr(response, "groups"):
            group = response.groups[0] if response.groups else None
            topics = group.topics if group is not None else ()
            top = error_code(group.error_code) if group is not None else ErrorCode.NONE
        else:
            topics = response.topics
            top = error_code(getattr(response, "error_code", 0))
        offsets = []
        for t in topics:
            for p in t.partitions:
                epoch = int(getattr(p, "committed_leader_epoch", -1))
                offsets.append(
                    (
                        TopicPartition(str(t.name), int(p.partition_index)),
                        m.FetchedOffset(
                            offset=int(p.committed_offset),
                            leader_epoch=None if epoch < 0 else epoch,
                            metadata=str(p.metadata or ""),
                            error=error_code(p.error_code),
                        ),
                    )
                )
        return m.OffsetFetchResponse(error=top, offsets=tuple(offsets))
    from groupcoord.client import consumer_group_wire

    other: Any = request
    if consumer_group_wire.handles(other):  # a consumer_group_wire.WireResponse
        answer: m.Response = consumer_group_wire.read_response(other, response)
        return answer
    raise TypeError(f"not a member-core request: {request!r}")
