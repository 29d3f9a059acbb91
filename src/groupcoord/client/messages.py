"""Version-neutral requests and responses of the member core.

The member core (``member.py``, ``consumer_core.py``) speaks only these frozen dataclasses.
The group messages (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) are the coordinator's own
(:mod:`groupcoord.protocol.group_messages`, re-exported here): one vocabulary, so a member core
and the coordinator core meet in one process without translation. A member core leaves their
``version``, ``client_id`` and ``client_host`` at the defaults. The wire layer (``wire.py``)
maps each request to the highest version of its Kafka API both sides support and maps the
answer back; the core never sees versions, kio or sockets.

Mapping notes for the wire layer (what to do when an old version lacks a field):

* ``group_instance_id`` / ``reason`` / ``protocol_type`` / ``protocol_name``: drop on versions
  that lack them; on responses, absent fields are ``None``.
* A member core's ``LeaveGroupRequest`` names one member (itself): v0-v2 carry it as the
  top-level ``member_id``; v3+ as a one-element ``members`` array (with instance id and reason).
* ``OffsetFetchRequest.partitions`` ``None`` means "every committed offset" (v2+). The
  response's group-level ``error`` is the top-level error (v2-v7) or the group's error (v8+).
* ``FindCoordinatorResponse``: v4+ answers a batch of keys; the core sends one key, so the
  wire layer maps the single ``coordinators`` entry here.
* Error codes are :class:`groupcoord.errors.ErrorCode`; an unknown code on the wire should
  map to ``ErrorCode.UNKNOWN_SERVER_ERROR``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = [
    "KEY_TYPE_GROUP",
    "NO_GENERATION_ID",
    "UNKNOWN_MEMBER_ID",
    "FetchedOffset",
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
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "Request",
    "Response",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicMetadata",
    "failure_response",
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


# ---------------------------------------------------------------------- OffsetCommit
@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    offsets: tuple[tuple[TopicPartition, OffsetAndMetadata], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetCommitResponse:
    errors: tuple[tuple[TopicPartition, ErrorCode], ...]


# ---------------------------------------------------------------------- OffsetFetch
@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    partitions: tuple[TopicPartition, ...] | None  # None = every committed offset
    require_stable: bool = True


@dataclass(frozen=True, kw_only=True, slots=True)
class FetchedOffset:
    """One partition's answer; ``offset`` -1 means nothing is committed."""

    offset: int
    leader_epoch: int | None = None
    metadata: str = ""
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchResponse:
    error: ErrorCode  # group-level / top-level error
    offsets: tuple[tuple[TopicPartition, FetchedOffset], ...] = field(default=())


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
        return OffsetCommitResponse(errors=tuple((tp, code) for tp, _ in request.offsets))
    if isinstance(request, OffsetFetchRequest):
        return OffsetFetchResponse(error=code)
    return None
