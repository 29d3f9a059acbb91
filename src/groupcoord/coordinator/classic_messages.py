"""The classic protocol's answers, as values: the responses its handlers give.

Pure functions of a group and a request (no state, no result): what a JoinGroup, SyncGroup,
Heartbeat or LeaveGroup is answered, and how a failed group-record append is reported
(reference §2.13). :mod:`groupcoord.coordinator.classic_group` decides when.
"""

from __future__ import annotations

from dataclasses import replace

from groupcoord.coordinator.context import NO_GENERATION, UNKNOWN_MEMBER_ID
from groupcoord.coordinator.group import ClassicGroup, Member
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupResponse,
)

#: One (immutable) Heartbeat answer per code: a stable group's most frequent response.
HEARTBEAT_RESPONSES = {code: HeartbeatResponse(error=code) for code in ErrorCode}

#: A ConsumerProtocolAssignment v0 with no partitions and null user data: what a member the
#: leader left out of a "consumer" group's assignment receives (clients parse it cleanly).
EMPTY_CONSUMER_ASSIGNMENT = bytes.fromhex("000000000000ffffffff")

# Write-error translation of a group record's append, reference §2.13.
GROUP_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def map_group_write_error(code: ErrorCode) -> ErrorCode:
    return GROUP_WRITE_ERRORS.get(code, code)


def join_error(version: int, error: ErrorCode, member_id: str = UNKNOWN_MEMBER_ID) -> JoinGroupResponse:
    """An error JoinGroup response: protocol name "" before v7, null from v7."""
    return JoinGroupResponse(
        error=error,
        generation_id=NO_GENERATION,
        protocol_type=None,
        protocol_name="" if version < 7 else None,
        leader="",
        skip_assignment=False,
        member_id=member_id,
        members=(),
    )


def sync_error(error: ErrorCode) -> SyncGroupResponse:
    return SyncGroupResponse(error=error, protocol_type=None, protocol_name=None, assignment=b"")


def join_response(
    group: ClassicGroup,
    member: Member,
    *,
    with_members: bool,
    leader: str | None = None,
    skip_assignment: bool = False,
) -> JoinGroupResponse:
    members: tuple[JoinGroupResponseMember, ...] = ()
    if with_members:
        members = tuple(
            JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=md)
            for m, md in group.current_member_metadata()
        )
    return JoinGroupResponse(
        error=ErrorCode.NONE,
        generation_id=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=(leader if leader is not None else group.leader_id) or "",
        skip_assignment=skip_assignment,
        member_id=member.member_id,
        members=members,
    )


def sync_ok(group: ClassicGroup, assignment: bytes) -> SyncGroupResponse:
    return SyncGroupResponse(
        error=ErrorCode.NONE,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        assignment=assignment,
    )


def leave_response(
    req: LeaveGroupRequest, error: ErrorCode, members: tuple[LeaveGroupMemberResponse, ...]
) -> LeaveGroupResponse:
    if req.version <= 2 and error is ErrorCode.NONE:
        error = next((m.error for m in members if m.error is not ErrorCode.NONE), ErrorCode.NONE)
    return LeaveGroupResponse(error=error, members=members)


def with_rebalance_timeout(req: JoinGroupRequest, rebalance_timeout_ms: int) -> JoinGroupRequest:
    return replace(req, rebalance_timeout_ms=rebalance_timeout_ms)
