"""The client's side of the wire: the versions it speaks, and its messages as Kafka's fields.

Encoding, decoding and the ApiVersions negotiation are the package's one request codec
(:mod:`groupcoord.protocol.codec`, shared with the admin tools and the testing toolkit). A
connection first sends ApiVersions; :class:`~groupcoord.protocol.codec.ApiVersionTable` then
picks, for each API, the highest version both the broker and :data:`CLIENT_RANGES` support.
This module describes every request once, version-neutrally, as a mapping of Kafka's field
names (a superset over every version: :func:`request_fields`); the codec's ``build_request``
keeps the fields the chosen version's kio class has. Responses are read with
``getattr(entity, name, default)`` for the same reason (:func:`read_response`,
:func:`read_metadata`).

Nothing here knows about groupcoord's broker: only the wire formats (kio's schemas through the
codec, the API numbers of :class:`groupcoord.protocol.api_keys.ApiKey`) are used, so the client
works against any Kafka-compatible broker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from groupcoord.client import messages as m
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


def error_code(value: Any) -> ErrorCode:
    """groupcoord's ErrorCode for a kio error code (unknown codes become UNKNOWN_SERVER_ERROR)."""
    raw = int(value)
    try:
        return ErrorCode(raw)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


# -- small readers shared by the fetcher and the consumer --------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerNode:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataPartition:
    partition: int
    leader: int
    leader_epoch: int
    error: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataTopic:
    """One topic of a Metadata answer with its partitions' leaders (the member core's
    :class:`~groupcoord.client.messages.TopicMetadata` keeps only the partition count)."""

    name: str
    topic_id: Any
    error: ErrorCode
    partitions: tuple[MetadataPartition, ...]
    internal: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterMetadata:
    brokers: tuple[BrokerNode, ...]
    controller_id: int
    topics: tuple[MetadataTopic, ...]


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
            MetadataPartition(
                partition=int(p.partition_index),
                leader=int(p.leader_id),
                leader_epoch=int(getattr(p, "leader_epoch", -1)),
                error=error_code(p.error_code),
            )
            for p in t.partitions
        )
        topics.append(
            MetadataTopic(
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
            "member_id": request.members[0].member_id if request.members else "",  # v0-2: one member
            "members": [
                {"member_id": x.member_id, "group_instance_id": x.group_instance_id, "reason": x.reason}
                for x in request.members
            ],
        }
    if isinstance(request, m.OffsetCommitRequest):
        return ApiKey.OFFSET_COMMIT, {
            "group_id": request.group_id,
            "generation_id_or_member_epoch": request.generation_id,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "retention_time": request.retention_time_ms,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition,
                            "committed_offset": p.offset,
                            "committed_leader_epoch": -1 if p.leader_epoch is None else p.leader_epoch,
                            "committed_metadata": p.metadata,
                            "commit_timestamp": -1,
                        }
                        for p in t.partitions
                    ],
                }
                for t in request.topics
            ],
        }
    if isinstance(request, m.OffsetFetchRequest):
        (group,) = request.groups  # a member fetches for its one group
        topics = (
            None
            if group.topics is None
            else [{"name": t.name, "partition_indexes": list(t.partitions)} for t in group.topics]
        )
        return ApiKey.OFFSET_FETCH, {
            "group_id": group.group_id,
            "topics": topics,
            "require_stable": request.require_stable,
            "groups": [{"group_id": group.group_id, "topics": topics}],
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
                m.JoinGroupResponseMember(
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
        return m.LeaveGroupResponse(
            error=error_code(response.error_code),
            members=tuple(
                m.LeaveGroupMemberResponse(
                    member_id=str(x.member_id),
                    group_instance_id=_opt_str(x, "group_instance_id"),
                    error=error_code(x.error_code),
                )
                for x in getattr(response, "members", ())
            ),
        )
    if isinstance(request, m.OffsetCommitRequest):
        return m.OffsetCommitResponse(
            topics=tuple(
                m.OffsetCommitTopicResponse(
                    name=str(t.name),
                    partitions=tuple(
                        m.OffsetCommitPartitionResponse(
                            partition=int(p.partition_index), error=error_code(p.error_code)
                        )
                        for p in t.partitions
                    ),
                )
                for t in response.topics
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
                        str(t.name),
                        m.OffsetFetchPartitionResponse(
                            partition=int(p.partition_index),
                            offset=int(p.committed_offset),
                            leader_epoch=None if epoch < 0 else epoch,
                            metadata=str(p.metadata or ""),
                            error=error_code(p.error_code),
                        ),
                    )
                )
        return m.offset_fetch_response(group_id=request.groups[0].group_id, error=top, offsets=offsets)
    from groupcoord.client import consumer_group_wire

    other: Any = request
    if consumer_group_wire.handles(other):  # a consumer_group_wire.WireResponse
        answer: m.Response = consumer_group_wire.read_response(other, response)
        return answer
    raise TypeError(f"not a member-core request: {request!r}")
