"""Version-neutral requests and responses of the member core.

The member core (``member.py``, ``consumer_core.py``) speaks only these frozen dataclasses.
The group messages (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch) are
the coordinator's own (:mod:`groupcoord.protocol.group_messages`, re-exported here): one
vocabulary, so a member core and the coordinator core meet in one process without translation.
A member core leaves their ``version``, ``client_id`` and ``client_host`` at the defaults. The
wire layer (``wire.py``) maps each request to the highest version of its Kafka API both sides
support and maps the answer back; the core never sees versions, kio or sockets.

Mapping notes for the wire layer (what to do when an old version lacks a field):

* ``group_instance_id`` / ``reason`` / ``protocol_type`` / ``protocol_name``: drop on versions
  that lack them; on responses, absent fields are ``None``.
* A member core's ``LeaveGroupRequest`` names one member (itself): v0-v2 carry it as the
  top-level ``member_id``; v3+ as a one-element ``members`` array (with instance id and reason).
* A member's ``OffsetFetchRequest`` names one group; its ``topics`` ``None`` means "every
  committed offset" (v2+). The response's one group carries the top-level error (v2-v7) or the
  group's error (v8+).
* ``FindCoordinatorResponse``: v4+ answers a batch of keys; the core sends one key, so the
  wire layer maps the single ``coordinators`` entry here.
* Error codes are :class:`groupcoord.errors.ErrorCode`; an unknown code on the wire should
  map to ``ErrorCode.UNKNOWN_SERVER_ERROR``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupMember,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitPartition,
    OffsetCommitPartitionResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetCommitTopicResponse,
    OffsetFetchGroup,
    OffsetFetchGroupResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    OffsetFetchTopicResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = [
    "KEY_TYPE_GROUP",
    "NO_GENERATION_ID",
    "UNKNOWN_MEMBER_ID",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
    "LeaveGroupMember",
    "LeaveGroupMemberResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "MetadataRequest",
    "MetadataResponse",
    "Node",
    "OffsetCommitPartition",
    "OffsetCommitPartitionResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetCommitTopic",
    "OffsetCommitTopicResponse",
    "OffsetFetchGroup",
    "OffsetFetchGroupResponse",
    "OffsetFetchPartitionResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetFetchTopic",
    "OffsetFetchTopicResponse",
    "Request",
    "Response",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicMetadata",
    "commit_errors",
    "commit_failed",
    "committed_offsets",
    "failure_response",
    "fetch_error",
    "fetch_partitions",
    "fetched_offsets",
    "offset_commit_request",
    "offset_fetch_request",
    "offset_fetch_response",
]

#: FindCoordinator key type of a consumer group (``CoordinatorType.GROUP``).
KEY_TYPE_GROUP = 0
#: The generation id a member without a generation sends (``OffsetCommitRequest.DEFAULT_GENERATION_ID``).
NO_GENERATION_ID = -1
#: The member id a member without one sends (``JoinGroupRequest.UNKNOWN_MEMBER_ID``).
UNKNOWN_MEMBER_ID = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Node:
    """A broker as FindCoordinator or Metadata names it."""

    node_id: int
    host: str
    port: int


# ---------------------------------------------------------------------- FindCoordinator
@dataclass(frozen=True, kw_only=True, slots=True)
class FindCoordinatorRequest:
    key: str
    key_type: int = KEY_TYPE_GROUP


@dataclass(frozen=True, kw_only=True, slots=True)
class FindCoordinatorResponse:
    error: ErrorCode
    node: Node | None  # None unless error is NONE
    error_message: str | None = None


# ---------------------------------------------------------------------- Metadata
@dataclass(frozen=True, kw_only=True, slots=True)
class MetadataRequest:
    """Partition counts of ``topics``; ``None`` asks for every topic (pattern subscriptions)."""

    topics: tuple[str, ...] | None


@dataclass(frozen=True, kw_only=True, slots=True)
class TopicMetadata:
    name: str
    error: ErrorCode
    partitions: int  # number of partitions (ids 0..partitions-1); 0 when error is not NONE
    internal: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class MetadataResponse:
    topics: tuple[TopicMetadata, ...]


# ---------------------------------------------------------------------- OffsetCommit, OffsetFetch
# The coordinator's own batched types (by topic, by group); a member commits and fetches for its
# one group by TopicPartition, so these build and read them that way, as Java's
# ``OffsetCommitRequest.Builder`` and ``OffsetFetchResponse.partitionDataMap`` do.


def offset_commit_request(
    *,
    group_id: str,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
    offsets: Iterable[tuple[TopicPartition, OffsetAndMetadata]],
) -> OffsetCommitRequest:
    """A member's commit of ``offsets``, grouped by topic in first-seen order; no retention time
    (-1: the broker's ``offsets.retention.minutes``)."""
    by_topic: dict[str, list[OffsetCommitPartition]] = {}
    for tp, om in offsets:
        by_topic.setdefault(tp.topic, []).append(
            OffsetCommitPartition(
                partition=tp.partition, offset=om.offset, leader_epoch=om.leader_epoch, metadata=om.metadata
            )
        )
    return OffsetCommitRequest(
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id,
        retention_time_ms=-1,
        topics=tuple(OffsetCommitTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
    )


def committed_offsets(request: OffsetCommitRequest) -> tuple[tuple[TopicPartition, OffsetAndMetadata], ...]:
    """What ``request`` commits, per partition."""
    return tuple(
        (
            TopicPartition(t.name, p.partition),
            OffsetAndMetadata(offset=p.offset, metadata=p.metadata or "", leader_epoch=p.leader_epoch),
        )
        for t in request.topics
        for p in t.partitions
    )


def commit_errors(response: OffsetCommitResponse) -> tuple[tuple[TopicPartition, ErrorCode], ...]:
    """Each partition's code in ``response``."""
    return tuple(
        (TopicPartition(t.name, p.partition), p.error) for t in response.topics for p in t.partitions
    )


def commit_failed(request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    """The answer to ``request`` with ``code`` on every partition."""
    return OffsetCommitResponse(
        topics=tuple(
            OffsetCommitTopicResponse(
                name=t.name,
                partitions=tuple(
                    OffsetCommitPartitionResponse(partition=p.partition, error=code) for p in t.partitions
                ),
            )
            for t in request.topics
        )
    )


def offset_fetch_request(
    *, group_id: str, partitions: tuple[TopicPartition, ...] | None, require_stable: bool = True
) -> OffsetFetchRequest:
    """A member's fetch of its group's committed offsets of ``partitions`` (None: all of them),
    grouped by topic in first-seen order."""
    topics: tuple[OffsetFetchTopic, ...] | None = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = tuple(OffsetFetchTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items())
    return OffsetFetchRequest(
        groups=(OffsetFetchGroup(group_id=group_id, topics=topics),), require_stable=require_stable
    )


def fetch_partitions(request: OffsetFetchRequest) -> tuple[TopicPartition, ...] | None:
    """The partitions a member's (one-group) fetch asks for; None asks for every one."""
    topics = request.groups[0].topics
    if topics is None:
        return None
    return tuple(TopicPartition(t.name, p) for t in topics for p in t.partitions)


def offset_fetch_response(
    *,
    group_id: str,
    error: ErrorCode,
    offsets: Iterable[tuple[str, OffsetFetchPartitionResponse]] = (),
) -> OffsetFetchResponse:
    """One group's answer: its group-level (or, before v8, top-level) ``error`` and each
    (topic, partition answer), grouped by topic in first-seen order."""
    by_topic: dict[str, list[OffsetFetchPartitionResponse]] = {}
    for topic, part in offsets:
        by_topic.setdefault(topic, []).append(part)
    return OffsetFetchResponse(
        groups=(
            OffsetFetchGroupResponse(
                group_id=group_id,
                error=error,
                topics=tuple(
                    OffsetFetchTopicResponse(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()
                ),
            ),
        )
    )


def fetch_error(response: OffsetFetchResponse) -> ErrorCode:
    """The (one) group's error."""
    return response.groups[0].error if response.groups else ErrorCode.NONE


def fetched_offsets(
    response: OffsetFetchResponse,
) -> tuple[tuple[TopicPartition, OffsetFetchPartitionResponse], ...]:
    """Each partition's answer for the (one) group, by TopicPartition."""
    return tuple(
        (TopicPartition(t.name, p.partition), p)
        for g in response.groups[:1]
        for t in g.topics
        for p in t.partitions
    )


Request = (
    FindCoordinatorRequest
    | MetadataRequest
    | JoinGroupRequest
    | SyncGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | OffsetCommitRequest
    | OffsetFetchRequest
)
Response = (
    FindCoordinatorResponse
    | MetadataResponse
    | JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
)


def failure_response(request: Request, code: ErrorCode) -> Response | None:
    """The answer a request that failed on the transport (disconnected, timed out) stands for:
    ``code`` (NETWORK_EXCEPTION) in its error fields, so one error -> action table handles both
    (Java ``CoordinatorResponseHandler.onFailure``). None for Metadata, whose caller handles a
    failure without a response."""
    if isinstance(request, FindCoordinatorRequest):
        return FindCoordinatorResponse(error=code, node=None)
    if isinstance(request, JoinGroupRequest):
        return JoinGroupResponse(error=code)
    if isinstance(request, SyncGroupRequest):
        return SyncGroupResponse(error=code)
    if isinstance(request, HeartbeatRequest):
        return HeartbeatResponse(error=code)
    if isinstance(request, LeaveGroupRequest):
        return LeaveGroupResponse(error=code)
    if isinstance(request, OffsetCommitRequest):
        return commit_failed(request, code)
    if isinstance(request, OffsetFetchRequest):
        return offset_fetch_response(group_id=request.groups[0].group_id, error=code)
    return None
