"""Classic-protocol members inside a consumer group: JoinGroup, SyncGroup, Heartbeat and LeaveGroup
routed to a consumer group (Kafka 4.1 ``GroupMetadataManager.classicGroupJoinToConsumerGroup``,
``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup``,
``classicGroupLeaveToConsumerGroup``; reference §7.4).

A classic member is a consumer group member with ``ClassicMemberMetadata``: its JoinGroup goes
through the same bump, target and reconciliation steps as a heartbeat
(:meth:`ConsumerGroupManager.update_and_reconcile`), with the subscription, rack and owned
partitions read from its ``ConsumerProtocolSubscription``; its SyncGroup is answered with its
current assignment; its Heartbeat says REBALANCE_IN_PROGRESS whenever it has something to catch
up on, which sends it back to JoinGroup. There is no group-wide barrier: every classic member
behaves as a follower (no leader, no member list).

Pure, as the manager is: each call takes the request and ``now`` and returns the core's result
(records already replayed) with the classic response to send once they are durable.
"""

from __future__ import annotations

import logging

from groupcoord.coordinator.consumer.api import (
    Batch,
    ConsumerGroupResult,
    TimerCancel,
    TimerKind,
    TimerSchedule,
    timer_key,
)
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.manager import ConsumerGroupManager
from groupcoord.coordinator.consumer.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from groupcoord.coordinator.consumer.migration import (
    downgrade_of,
    downgrade_on_replacement,
    group_tombstones,
    to_assignment,
)
from groupcoord.coordinator.consumer.static_members import replace_static_member
from groupcoord.errors import ErrorCode, KafkaError
from groupcoord.formats.consumer_protocol import (
    LATEST_VERSION,
    Assignment,
    ConsumerProtocolError,
    decode_subscription,
    encode_assignment,
)
from groupcoord.protocol.group_messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)

__all__ = ["ClassicMembers"]

CONSUMER_PROTOCOL_TYPE = "consumer"
UNKNOWN_MEMBER_ID = ""


def _join_error(version: int, code: ErrorCode, member_id: str = UNKNOWN_MEMBER_ID) -> JoinGroupResponse:
    return JoinGroupResponse(
        error=code,
        generation_id=-1,
        protocol_type=None,
        protocol_name="" if version < 7 else None,
        leader="",
        skip_assignment=False,
        member_id=member_id,
        members=(),
    )


def _sync_error(code: ErrorCode) -> SyncGroupResponse:
    return SyncGroupResponse(error=code, protocol_type=None, protocol_name=None, assignment=b"")


class ClassicMembers:
    """The classic protocol's requests to the consumer groups of ``manager``."""

    def __init__(self, manager: ConsumerGroupManager) -> None:
        self._m = manager

    # ------------------------------------------------------------------ JoinGroup
    def join(self, req: JoinGroupRequest, now: int) -> tuple[ConsumerGroupResult, JoinGroupResponse]:
        """``classicGroupJoinToConsumerGroup`` (the group exists and is not empty)."""
        m = self._m
        group = m.groups[req.group_id]
        batch = Batch()
        member_id = req.member_id
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        if is_unknown:
            member_id = m.new_member_id()
        try:
            if len(group.members) >= m.config.max_size and member_id not in group.members:
                raise KafkaError(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"The consumer group has reached its maximum capacity of {m.config.max_size} members.",
                )
            if not _supports_classic_protocols(group, req.protocol_type, req.protocols):
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, None)
            if is_unknown and req.group_instance_id is None and req.version >= 4:
                log.info("group %s: new classic member must rejoin with id %s", group.group_id, member_id)
                return ConsumerGroupResult(), _join_error(
                    req.version, ErrorCode.MEMBER_ID_REQUIRED, member_id
                )
            member, replaced = self._find_member(group, req, member_id, is_unknown, batch)
            try:
                subscription = decode_subscription(req.protocols[0][1])
            except ConsumerProtocolError as exc:
                raise KafkaError(
                    ErrorCode.UNKNOWN_SERVER_ERROR, f"Malformed embedded consumer protocol: {exc}"
                ) from None
            is_new = member_id not in group.members and replaced is None
            updated = member.maybe_update(
                instance_id=req.group_instance_id,
                rack_id=subscription.rack_id,
                rebalance_timeout_ms=req.rebalance_timeout_ms,
                subscribed_topic_names=subscription.topics,
            ).replace(
                client_id=req.client_id,
                client_host=req.client_host,
                classic_member_metadata=ClassicMemberMetadata(
                    session_timeout_ms=req.session_timeout_ms, supported_protocols=req.protocols
                ),
            )
            owned = to_assignment(subscription.owned_partitions, m.image)
            reconciled = m.update_and_reconcile(group, member, updated, replaced, is_new, owned, now, batch)
        except KafkaError as exc:
            return ConsumerGroupResult(), _join_error(req.version, exc.code, req.member_id)
        gid = group.group_id
        batch.timers.append(TimerCancel(key=timer_key(TimerKind.CLASSIC_JOIN, gid, member_id)))
        if replaced is not None and downgrade_on_replacement(m.config, group, replaced):
            # The last consumer-protocol member was replaced by this classic static member: the
            # group becomes a classic group (its tombstones name the new id), Stable, no rebalance.
            ids = [member_id if mid == replaced.member_id else mid for mid in sorted(group.members)]
            batch.records += group_tombstones(group, ids)
            batch.downgrade = downgrade_of(group, [replaced], m.image, joining=reconciled)
            log.info("group %s: downgraded to a classic group by static member %s", gid, member_id)
        else:
            batch.timers += [
                m.session_timer(gid, reconciled, now),
                TimerSchedule(
                    key=timer_key(TimerKind.CLASSIC_SYNC, gid, member_id),
                    deadline_ms=now + req.rebalance_timeout_ms,
                    kind=TimerKind.CLASSIC_SYNC,
                    group_id=gid,
                    member_id=member_id,
                ),
            ]
        response = JoinGroupResponse(
            error=ErrorCode.NONE,
            generation_id=reconciled.member_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=req.protocols[0][0],
            leader="",
            skip_assignment=False,
            member_id=member_id,
            members=(),
        )
        return m.commit(batch, None), response

    def _find_member(
        self, group: ConsumerGroup, req: JoinGroupRequest, member_id: str, is_unknown: bool, batch: Batch
    ) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None]:
        """``getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember`` for a classic joiner: epochs
        are not checked, and a static replacement does not wait for unreleased partitions."""
        instance_id = req.group_instance_id
        if instance_id is None:
            return group.member(member_id) or ConsumerGroupMember(member_id=member_id), None
        existing = group.static_member(instance_id)
        if is_unknown:
            if existing is None:
                return ConsumerGroupMember(member_id=member_id), None
            member = replace_static_member(group, existing, member_id, batch.records, batch.events)
            return member, existing
        existing = _validate_member(group, req.member_id, instance_id)
        return existing, None

    # ------------------------------------------------------------------ SyncGroup
    def sync(self, req: SyncGroupRequest, now: int) -> tuple[ConsumerGroupResult, SyncGroupResponse]:
        """``classicGroupSyncToConsumerGroup``: no records; the member's current assignment."""
        m = self._m
        group = m.groups[req.group_id]
        batch = Batch()
        try:
            member = _validate_member(group, req.member_id, req.group_instance_id)
            _check_classic_generation(member, req.generation_id)
            first = _classic(member).supported_protocols[0]
            if (req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE) or (
                req.protocol_name is not None and req.protocol_name != first[0]
            ):
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, None)
            if (
                group.group_epoch > member.member_epoch
                and member.state is not MemberState.UNREVOKED_PARTITIONS
            ):
                batch.timers.append(self._join_timer(group.group_id, member, now))
                raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, None)
        except KafkaError as exc:
            return ConsumerGroupResult(timers=tuple(batch.timers)), _sync_error(exc.code)
        gid = group.group_id
        batch.timers += [
            TimerCancel(key=timer_key(TimerKind.CLASSIC_SYNC, gid, member.member_id)),
            m.session_timer(gid, member, now),
        ]
        assignment = self._serialize(member, first[1])
        response = SyncGroupResponse(
            error=ErrorCode.NONE,
            protocol_type=req.protocol_type,
            protocol_name=req.protocol_name,
            assignment=assignment,
        )
        return m.commit(batch, None), response

    def _serialize(self, member: ConsumerGroupMember, metadata: bytes) -> bytes:
        """``prepareAssignment``: the assigned partitions as a ConsumerProtocolAssignment, at the
        version of the member's first protocol's metadata (we write versions up to 3)."""
        version = (
            min(int.from_bytes(metadata[:2], "big", signed=True), LATEST_VERSION) if len(metadata) >= 2 else 0
        )
        partitions = []
        for topic_id, parts in member.assigned_partitions.items():
            topic = self._m.image.by_id(topic_id)
            if topic is not None and parts:
                partitions.append((topic.name, tuple(sorted(parts))))
        return encode_assignment(Assignment(partitions=tuple(sorted(partitions)), version=max(version, 0)))

    def _join_timer(self, group_id: str, member: ConsumerGroupMember, now: int) -> TimerSchedule:
        return TimerSchedule(
            key=timer_key(TimerKind.CLASSIC_JOIN, group_id, member.member_id),
            deadline_ms=now + member.rebalance_timeout_ms,
            kind=TimerKind.CLASSIC_JOIN,
            group_id=group_id,
            member_id=member.member_id,
            if_absent=True,
        )

    # ------------------------------------------------------------------ Heartbeat
    def heartbeat(self, req: HeartbeatRequest, now: int) -> tuple[ConsumerGroupResult, HeartbeatResponse]:
        """``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS while the member has
        something to catch up on (a newer group epoch, partitions to revoke, or partitions it
        waited for that are free now)."""
        m = self._m
        group = m.groups[req.group_id]
        try:
            member = _validate_member(group, req.member_id, req.group_instance_id)
            _check_classic_generation(member, req.generation_id)
        except KafkaError as exc:
            return ConsumerGroupResult(), HeartbeatResponse(error=exc.code)
        gid = group.group_id
        timers: list[TimerSchedule | TimerCancel] = [m.session_timer(gid, member, now)]
        error = ErrorCode.NONE
        if (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member)
            )
        ):
            error = ErrorCode.REBALANCE_IN_PROGRESS
            timers.append(self._join_timer(gid, member, now))
        return ConsumerGroupResult(timers=tuple(timers)), HeartbeatResponse(error=error)

    # ------------------------------------------------------------------ LeaveGroup
    def leave(
        self, req: LeaveGroupRequest
    ) -> tuple[ConsumerGroupResult, tuple[LeaveGroupMemberResponse, ...]]:
        """``classicGroupLeaveToConsumerGroup`` (4.1): each identity resolved by member id or
        instance id; the valid ones are fenced together (one epoch bump, or the downgrade)."""
        m = self._m
        group = m.groups[req.group_id]
        batch = Batch()
        leaving: dict[str, ConsumerGroupMember] = {}
        answers = []
        for identity in req.members:
            instance_id = identity.group_instance_id
            try:
                if instance_id is None:
                    member = group.member(identity.member_id)
                    if member is None:
                        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, None)
                else:
                    member = group.static_member(instance_id)
                    if member is None:
                        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, None)
                    if identity.member_id != UNKNOWN_MEMBER_ID and identity.member_id != member.member_id:
                        raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, None)
            except KafkaError as exc:
                answers.append(
                    LeaveGroupMemberResponse(
                        member_id=identity.member_id, group_instance_id=instance_id, error=exc.code
                    )
                )
                continue
            log.info(
                "group %s: member %s left through LeaveGroup; client reason: %s",
                group.group_id,
                member.member_id,
                identity.reason or "not provided",
            )
            leaving[member.member_id] = member
            answers.append(
                LeaveGroupMemberResponse(
                    member_id=member.member_id, group_instance_id=instance_id, error=ErrorCode.NONE
                )
            )
        if leaving:
            m.fence(group, list(leaving.values()), "member-left", batch)
        return m.commit(batch, None), tuple(answers)


def _supports_classic_protocols(
    group: ConsumerGroup, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]
) -> bool:
    """``ConsumerGroup.supportsClassicProtocols``: the type is ``consumer`` and one of the names is
    supported by every classic member of the group."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not protocols:
        return False
    names = {name for name, _ in protocols}
    for member in group.members.values():
        if member.classic_member_metadata is not None:
            names &= {name for name, _ in member.classic_member_metadata.supported_protocols}
    return bool(names)


def _validate_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
    """``validateConsumerGroupMember``: by member id, or by instance id with a matching member id."""
    if instance_id is None:
        member = group.member(member_id)
        if member is None:
            raise KafkaError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
            )
        return member
    member = group.static_member(instance_id)
    if member is None:
        raise KafkaError(
            ErrorCode.UNKNOWN_MEMBER_ID,
            f"Member with instance id {instance_id} is not a member of group {group.group_id}.",
        )
    if member.member_id != member_id:
        raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, None)
    return member


def _classic(member: ConsumerGroupMember) -> ClassicMemberMetadata:
    """``throwIfMemberDoesNotUseClassicProtocol``."""
    if member.classic_member_metadata is None:
        raise KafkaError(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol."
        )
    return member.classic_member_metadata


def _check_classic_generation(member: ConsumerGroupMember, generation: int) -> None:
    """The member uses the classic protocol and its generation is its member epoch."""
    _classic(member)
    if generation != member.member_epoch:
        raise KafkaError(
            ErrorCode.ILLEGAL_GENERATION,
            f"The request generation id {generation} is not equal to the member epoch {member.member_epoch}.",
        )
