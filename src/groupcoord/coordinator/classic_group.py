"""The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup.

Names follow the seeds and Kafka's ``GroupCoordinator.scala`` / 4.x ``GroupMetadataManager``:
:meth:`~ClassicGroupManager.handle_join_group`, ``do_unknown_join_group``, ``do_join_group``,
``add_member_and_rebalance``, ``update_member_and_rebalance``, ``prepare_rebalance``,
``on_complete_join``, ``handle_sync_group``, ``handle_heartbeat``, ``handle_leave_group`` and
``complete_and_schedule_next_heartbeat_expiration``, plus the expiry of each timer
(``timers.py``), the replay of the classic group record and what a load or an unload does to a
classic group. What each state allows is in ``state.py``.

:class:`ClassicGroupManager` is the classic group type's part of the groups manager
(:class:`~groupcoord.coordinator.groups.GroupMetadataManager`, which owns the group table it
is given). Each request handler returns the
:class:`~groupcoord.coordinator.result.CoordinatorResult` it made; every other method is given
the result it adds to (``out``), as Kafka's manager methods are given the list their records go
to. Nothing is kept between calls but the groups and the shard's timers.

The rebalance machinery the handlers share — the phases, member removal, heartbeats, the expiry
of every classic timer, and the group's records — is :class:`ClassicRebalance`
(``classic_rebalance.py``), a part this manager is given and holds (``self._rebalance``), as the
groups manager holds this one: here are the request entry points, their checks, the static-member
rules (KIP-345) and the completion of the writes they make.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from groupcoord.coordinator.classic_messages import (
    EMPTY_CONSUMER_ASSIGNMENT,
    HEARTBEAT_RESPONSES,
    join_error,
    join_response,
    leave_response,
    map_group_write_error,
    sync_error,
    sync_ok,
    with_rebalance_timeout,
)
from groupcoord.coordinator.classic_rebalance import ClassicRebalance
from groupcoord.coordinator.context import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    UNKNOWN_MEMBER_ID,
    ShardContext,
)
from groupcoord.coordinator.events import EventReason
from groupcoord.coordinator.group import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    Member,
)
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    new_group_metadata_record,
)
from groupcoord.coordinator.result import CoordinatorResult
from groupcoord.coordinator.timers import (
    PendingMemberExpiry,
    PendingSync,
)
from groupcoord.coordinator.writes import (
    AssignmentWrite,
    StaticMemberReplacementWrite,
)
from groupcoord.errors import ErrorCode, IllegalStateError
from groupcoord.protocol.group_messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)


class ClassicGroupManager:
    """The classic protocol's handlers.

    Args:
        ctx: what the shard's parts share (config, clock, timer, partitions, events).
        groups: the shard's group table, owned by the groups manager.
        rebalance: the classic rebalance machinery the handlers drive (held, not inherited:
            the groups manager, the consumer groups and the shard's timers use it too).
    """

    def __init__(
        self, ctx: ShardContext, groups: dict[str, ClassicGroup], rebalance: ClassicRebalance
    ) -> None:
        self._ctx = ctx
        self._config = ctx.config
        self._timer = ctx.timer
        self._groups = groups
        self._rebalance = rebalance

    # ================================================================== JoinGroup
    def handle_join_group(
        self, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]
    ) -> CoordinatorResult:
        """Kafka's ``handleJoinGroup``."""
        out = CoordinatorResult()
        v = req.version
        if not req.group_id:
            out.respond(reply, join_error(v, ErrorCode.INVALID_GROUP_ID, req.member_id))
            return out
        status = self._ctx.status(req.group_id)
        if status is not None:
            out.respond(reply, join_error(v, status, req.member_id))
            return out
        if v == 0:
            # JoinGroup v0 has no rebalance timeout: the session timeout stands in for it.
            req = with_rebalance_timeout(req, req.session_timeout_ms)
        cfg = self._config
        if not (
            cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms
        ):
            out.respond(reply, join_error(v, ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id))
            return out
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        group = self._groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                out.respond(reply, join_error(v, ErrorCode.UNKNOWN_MEMBER_ID, req.member_id))
                return out
            group = ClassicGroup(req.group_id, self._ctx.now())
            self._groups[req.group_id] = group
            self._ctx.emit(out, group, "state_change", EventReason.GROUP_CREATED, to_state=EMPTY)

        if not self.accept_joining_member(group, req.member_id):
            self._reject_over_max_size(out, group, req)
            out.respond(reply, join_error(v, ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
        elif is_unknown:
            self.do_unknown_join_group(out, group, req, reply)
        else:
            self.do_join_group(out, group, req, reply)

        if group.state is PREPARING:
            self._rebalance.maybe_complete_join(out, group)
        return out

    def accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        """Kafka's ``acceptJoiningMember`` (group.max.size, KIP-389 / KAFKA-9885)."""
        max_size = self._config.group_max_size
        if group.state in (EMPTY, DEAD):
            return True
        member = group.members.get(member_id)
        if group.state is PREPARING:
            return (
                member is not None and member.awaiting_join is not None
            ) or group.num_awaiting_join < max_size
        return member is not None or len(group.members) < max_size

    def _reject_over_max_size(
        self, out: CoordinatorResult, group: ClassicGroup, req: JoinGroupRequest
    ) -> None:
        member = group.members.get(req.member_id)
        if member is not None:
            self._rebalance.remove_member(
                out, group, member, EventReason.MAX_SIZE_EXCEEDED, answer_parked=ErrorCode.UNKNOWN_MEMBER_ID
            )
        group.pending_members.pop(req.member_id, None)
        self._timer.cancel(PendingMemberExpiry(group.group_id, req.member_id))
        log.info("group=%s member=%s rejected: group.max.size reached", group.group_id, req.member_id)

    def do_unknown_join_group(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        req: JoinGroupRequest,
        reply: Callable[[JoinGroupResponse], None],
    ) -> None:
        """Kafka's ``doNewMemberJoinGroup`` (``doUnknownJoinGroup``)."""
        v = req.version
        if group.state is DEAD:
            out.respond(reply, join_error(v, ErrorCode.COORDINATOR_NOT_AVAILABLE, req.member_id))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            out.respond(reply, join_error(v, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
            return
        instance_id = req.group_instance_id
        new_member_id = self._ctx.new_member_id(instance_id if instance_id is not None else req.client_id)
        if instance_id is not None:
            old_member_id = group.static_members.get(instance_id)
            if old_member_id is not None:
                self.update_static_member_and_rebalance(out, group, old_member_id, new_member_id, req, reply)
            else:
                self.add_member_and_rebalance(out, group, req, new_member_id, reply)
        elif v >= 4:
            # KIP-394: hand out an id and wait for the member to come back with it.
            group.pending_members[new_member_id] = req.session_timeout_ms
            self._timer.schedule(
                PendingMemberExpiry(group.group_id, new_member_id),
                self._ctx.now() + req.session_timeout_ms,
                None,
            )
            out.respond(reply, join_error(v, ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self.add_member_and_rebalance(out, group, req, new_member_id, reply)

    def do_join_group(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        req: JoinGroupRequest,
        reply: Callable[[JoinGroupResponse], None],
    ) -> None:
        """Kafka's ``doCurrentMemberJoinGroup`` (``doJoinGroup``)."""
        v = req.version
        member_id = req.member_id
        if group.state is DEAD:
            out.respond(reply, join_error(v, ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            out.respond(reply, join_error(v, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                # Kafka treats this as an internal error (a pending id is never static).
                out.respond(reply, join_error(v, ErrorCode.UNKNOWN_SERVER_ERROR, member_id))
                return
            self._timer.cancel(PendingMemberExpiry(group.group_id, member_id))
            self.add_member_and_rebalance(out, group, req, member_id, reply)
            return
        error = self.validate_current_member(group, member_id, req.group_instance_id)
        if error is not None:
            out.respond(reply, join_error(v, error, member_id))
            return
        member = group.members[member_id]
        state = group.state
        if state is PREPARING:
            self.update_member_and_rebalance(
                out, group, member, req, reply, EventReason.MEMBER_REJOINED_WITH_NEW_METADATA
            )
        elif state is COMPLETING:
            if member.matches(req.protocols):
                # A resend of the JoinGroup the member already got an answer to.
                out.respond(reply, join_response(group, member, with_members=group.is_leader(member_id)))
            else:
                self.update_member_and_rebalance(
                    out, group, member, req, reply, EventReason.MEMBER_REJOINED_WITH_NEW_METADATA
                )
        elif state is STABLE:
            if group.is_leader(member_id):
                self.update_member_and_rebalance(out, group, member, req, reply, EventReason.LEADER_REJOINED)
            elif not member.matches(req.protocols):
                self.update_member_and_rebalance(
                    out, group, member, req, reply, EventReason.MEMBER_REJOINED_WITH_NEW_METADATA
                )
            else:
                out.respond(reply, join_response(group, member, with_members=False))
        else:  # Empty: the member must reset its generation and rejoin
            out.respond(reply, join_error(v, ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def validate_current_member(
        self, group: ClassicGroup, member_id: str, instance_id: str | None
    ) -> ErrorCode | None:
        """Kafka's ``validateCurrentMember`` (static fencing, then membership)."""
        return group.validate_member(member_id, instance_id)

    def park_join(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        member: Member,
        req: JoinGroupRequest,
        reply: Callable[[JoinGroupResponse], None],
    ) -> None:
        previous = member.awaiting_join
        if previous is not None:
            # A retried JoinGroup supersedes the parked one: answer the old one now.
            group.set_awaiting_join(member, None)
            out.respond(
                previous, join_error(member.join_version, ErrorCode.REBALANCE_IN_PROGRESS, member.member_id)
            )
        group.set_awaiting_join(member, reply)
        member.join_version = req.version
        member.join_reason = req.reason

    def add_member_and_rebalance(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        req: JoinGroupRequest,
        member_id: str,
        reply: Callable[[JoinGroupResponse], None],
    ) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=req.protocols,
        )
        member.is_new = True
        member.awaiting_join = reply
        member.join_version = req.version
        member.join_reason = req.reason
        if group.state is PREPARING and group.previous_state is EMPTY:
            group.new_member_added = True  # extends the initial rebalance delay (KIP-134)
        group.add(member)
        self._ctx.emit(
            out, group, "member_added", EventReason.NEW_MEMBER_JOINED, member=member, client_reason=req.reason
        )
        # KAFKA-7610: a parked new member cannot heartbeat; give it the new-member join timeout.
        self._rebalance.complete_and_schedule_next_heartbeat_expiration(
            group, member, self._config.group_new_member_join_timeout_ms
        )
        self._rebalance.maybe_prepare_rebalance(
            out, group, EventReason.NEW_MEMBER_JOINED, member=member, client_reason=req.reason
        )

    def update_member_and_rebalance(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        member: Member,
        req: JoinGroupRequest,
        reply: Callable[[JoinGroupResponse], None],
        reason: EventReason,
    ) -> None:
        changed = not member.matches(req.protocols)
        group.update_protocols(member, req.protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        self.park_join(out, group, member, req, reply)
        if changed:
            self._ctx.emit(
                out,
                group,
                "member_updated",
                EventReason.MEMBER_REJOINED_WITH_NEW_METADATA,
                member=member,
                client_reason=req.reason,
            )
        self._rebalance.maybe_prepare_rebalance(out, group, reason, member=member, client_reason=req.reason)

    def update_static_member_and_rebalance(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        old_member_id: str,
        new_member_id: str,
        req: JoinGroupRequest,
        reply: Callable[[JoinGroupResponse], None],
    ) -> None:
        """A static member rejoining with an empty member id (restart, or a duplicate instance)."""
        instance_id = req.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        member = group.members[old_member_id]
        old_protocols = member.protocols
        old_rebalance_timeout = member.rebalance_timeout_ms
        old_session_timeout = member.session_timeout_ms
        fenced = member.awaiting_join is not None or member.awaiting_sync is not None
        # Fence whatever the old id still has parked: that process is a zombie now.
        self._rebalance.reply_join(
            out, group, member, join_error(member.join_version, ErrorCode.FENCED_INSTANCE_ID, old_member_id)
        )
        self._rebalance.reply_sync(out, member, sync_error(ErrorCode.FENCED_INSTANCE_ID))
        if fenced:
            self._ctx.emit(
                out, group, "member_updated", EventReason.FENCED, member=member, member_id=old_member_id
            )
        self._rebalance.cancel_heartbeat(group, old_member_id)
        # Kafka's replaceStaticMember: the member keeps the client id and host it joined with.
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        self._rebalance.complete_and_schedule_next_heartbeat_expiration(group, member)
        group.update_protocols(member, req.protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        self.park_join(out, group, member, req, reply)
        self._ctx.emit(
            out,
            group,
            "member_updated",
            EventReason.STATIC_MEMBER_REPLACED,
            member=member,
            client_reason=req.reason,
        )

        state = group.state
        if state is STABLE:
            if group.select_protocol() == group.protocol_name:
                self.persist_static_member_replacement(
                    out,
                    group,
                    member,
                    old_member_id,
                    current_leader,
                    old_protocols,
                    old_rebalance_timeout,
                    old_session_timeout,
                    req,
                )
            else:
                self._rebalance.maybe_prepare_rebalance(
                    out, group, EventReason.PROTOCOL_CHANGED, member=member, client_reason=req.reason
                )
        elif state is COMPLETING:
            # The leader may be assigning for the old id right now: start over.
            self._rebalance.prepare_rebalance(
                out, group, EventReason.STATIC_MEMBER_REPLACED, member=member, client_reason=req.reason
            )
        elif state is PREPARING:
            pass  # parked; the handler tries to complete the join
        else:
            raise IllegalStateError(f"static member of {group.group_id} replaced in state {state.value}")

    def persist_static_member_replacement(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        member: Member,
        old_member_id: str,
        current_leader: str | None,
        old_protocols: tuple[tuple[str, bytes], ...],
        old_rebalance_timeout: int,
        old_session_timeout: int,
        req: JoinGroupRequest,
    ) -> None:
        instance_id = member.group_instance_id
        assert instance_id is not None
        record = new_group_metadata_record(group, {m.member_id: m.assignment for m in group.members.values()})
        write = StaticMemberReplacementWrite(
            group=group,
            generation=group.generation,
            instance_id=instance_id,
            old_member_id=old_member_id,
            new_member_id=member.member_id,
            current_leader=current_leader,
            old_protocols=old_protocols,
            old_rebalance_timeout_ms=old_rebalance_timeout,
            old_session_timeout_ms=old_session_timeout,
            join_version=req.version,
        )
        self._rebalance.append(out, group.group_id, [record], write)

    def static_replacement_written(
        self,
        out: CoordinatorResult,
        write: StaticMemberReplacementWrite,
        records: Sequence[CoordinatorRecord],
        error: ErrorCode,
    ) -> None:
        group = write.group
        new_member_id = write.new_member_id
        if (
            self._groups.get(group.group_id) is not group
            or group.generation != write.generation
            or group.state is not STABLE
        ):
            return  # a rebalance started meanwhile: the parked join is answered by it
        if group.static_members.get(write.instance_id) != new_member_id:
            return  # replaced again meanwhile; that replacement answered this join
        member = group.members[new_member_id]
        if error is not ErrorCode.NONE:
            log.warning(
                "group=%s static member %s replacement not persisted: %s",
                group.group_id,
                new_member_id,
                error.name,
            )
            reply = member.awaiting_join
            group.set_awaiting_join(member, None)
            group.update_protocols(member, write.old_protocols)
            member.rebalance_timeout_ms = write.old_rebalance_timeout_ms
            member.session_timeout_ms = write.old_session_timeout_ms
            self._rebalance.cancel_heartbeat(group, new_member_id)
            group.replace_static_member(write.instance_id, new_member_id, write.old_member_id)
            self._rebalance.complete_and_schedule_next_heartbeat_expiration(group, member)
            if reply is not None:
                out.respond(
                    reply,
                    JoinGroupResponse(
                        error=map_group_write_error(error),
                        generation_id=group.generation,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or "",
                        skip_assignment=False,
                        member_id=UNKNOWN_MEMBER_ID,
                        members=(),
                    ),
                )
            return
        for record in records:
            self._rebalance.replay_written(out, record)
        if write.join_version >= 9:
            is_leader = group.is_leader(new_member_id)
            response = join_response(group, member, with_members=is_leader, skip_assignment=is_leader)
        else:
            # Old clients get the old leader id, so a restarted static leader does not
            # compute an assignment the Stable group would never distribute.
            response = join_response(group, member, with_members=False, leader=write.current_leader or "")
        self._rebalance.reply_join(out, group, member, response)

    # ================================================================== SyncGroup
    def handle_sync_group(
        self, req: SyncGroupRequest, reply: Callable[[SyncGroupResponse], None]
    ) -> CoordinatorResult:
        out = CoordinatorResult()
        if req.version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            out.respond(reply, sync_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return out
        if not req.group_id:
            out.respond(reply, sync_error(ErrorCode.INVALID_GROUP_ID))
            return out
        status = self._ctx.status(req.group_id)
        if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # 3.x: the rebalance state was lost with the load; make the member rejoin.
            out.respond(reply, sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
            return out
        if status is not None:
            out.respond(reply, sync_error(status))
            return out
        group = self._groups.get(req.group_id)
        if group is None:
            out.respond(reply, sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
            return out
        if group.state is DEAD:
            out.respond(reply, sync_error(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return out
        error = self.validate_current_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            out.respond(reply, sync_error(error))
            return out
        if req.generation_id != group.generation:
            out.respond(reply, sync_error(ErrorCode.ILLEGAL_GENERATION))
            return out
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
            req.protocol_name is not None and req.protocol_name != group.protocol_name
        ):
            out.respond(reply, sync_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return out
        member = group.members[req.member_id]
        state = group.state
        if state is EMPTY:
            out.respond(reply, sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
        elif state is PREPARING:
            out.respond(reply, sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
        elif state is COMPLETING:
            if member.awaiting_sync is not None:
                self._rebalance.reply_sync(
                    out, member, sync_error(ErrorCode.REBALANCE_IN_PROGRESS)
                )  # superseded
            member.awaiting_sync = reply
            self._remove_pending_sync_member(group, member.member_id)
            if group.is_leader(member.member_id):
                self.persist_leader_assignment(out, group, dict(req.assignments))
        else:  # Stable
            self._remove_pending_sync_member(group, member.member_id)
            self._rebalance.complete_and_schedule_next_heartbeat_expiration(group, member)
            out.respond(reply, sync_ok(group, member.assignment))
        return out

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self._timer.cancel(PendingSync(group.group_id))

    def persist_leader_assignment(
        self, out: CoordinatorResult, group: ClassicGroup, given: dict[str, bytes]
    ) -> None:
        empty = EMPTY_CONSUMER_ASSIGNMENT if group.protocol_type == CONSUMER_PROTOCOL_TYPE else b""
        assignments: dict[str, bytes] = {}
        for member_id in group.members:
            if member_id in given:
                assignments[member_id] = given[member_id]
            else:
                log.warning(
                    "group=%s generation=%d leader left member %s out of the assignment: empty one",
                    group.group_id,
                    group.generation,
                    member_id,
                )
                assignments[member_id] = empty
        record = new_group_metadata_record(group, assignments)
        self._rebalance.append(out, group.group_id, [record], AssignmentWrite(group, group.generation))

    def assignment_written(
        self,
        out: CoordinatorResult,
        write: AssignmentWrite,
        records: Sequence[CoordinatorRecord],
        error: ErrorCode,
    ) -> None:
        group = write.group
        if (
            self._groups.get(group.group_id) is not group
            or group.state is not COMPLETING
            or group.generation != write.generation
        ):
            return  # the group moved on while the write was in flight
        if error is ErrorCode.NONE:
            for record in records:
                self._rebalance.replay_written(out, record)
            for m in group.members.values():
                if m.awaiting_sync is not None:
                    self._rebalance.reply_sync(out, m, sync_ok(group, m.assignment))
                    self._rebalance.complete_and_schedule_next_heartbeat_expiration(group, m)
            self._ctx.transition(out, group, STABLE, EventReason.ASSIGNMENT_PERSISTED)
        else:
            mapped = map_group_write_error(error)
            log.warning(
                "group=%s assignment not persisted: %s -> %s", group.group_id, error.name, mapped.name
            )
            self._rebalance.reset_and_propagate_assignment_error(out, group, mapped)
            self._rebalance.maybe_prepare_rebalance(out, group, EventReason.ASSIGNMENT_PERSIST_FAILED)

    # ================================================================== Heartbeat
    def handle_heartbeat(
        self, req: HeartbeatRequest, reply: Callable[[HeartbeatResponse], None]
    ) -> CoordinatorResult:
        out = CoordinatorResult()
        if not req.group_id:
            out.respond(reply, HEARTBEAT_RESPONSES[ErrorCode.INVALID_GROUP_ID])
            return out
        status = self._ctx.status(req.group_id)
        if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            out.respond(reply, HEARTBEAT_RESPONSES[ErrorCode.NONE])  # respond blindly while loading
            return out
        if status is not None:
            out.respond(reply, HEARTBEAT_RESPONSES[status])
            return out
        group = self._groups.get(req.group_id)
        if group is None:
            out.respond(reply, HEARTBEAT_RESPONSES[ErrorCode.UNKNOWN_MEMBER_ID])
            return out
        if group.state is DEAD:
            out.respond(reply, HEARTBEAT_RESPONSES[ErrorCode.COORDINATOR_NOT_AVAILABLE])
            return out
        error = self.validate_current_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            out.respond(reply, HEARTBEAT_RESPONSES[error])
            return out
        if req.generation_id != group.generation:
            out.respond(reply, HEARTBEAT_RESPONSES[ErrorCode.ILLEGAL_GENERATION])
            return out
        member = group.members[req.member_id]
        if group.state is EMPTY:
            out.respond(reply, HEARTBEAT_RESPONSES[ErrorCode.UNKNOWN_MEMBER_ID])
        elif group.state is PREPARING:
            self._rebalance.complete_and_schedule_next_heartbeat_expiration(group, member)
            out.respond(reply, HEARTBEAT_RESPONSES[ErrorCode.REBALANCE_IN_PROGRESS])
        else:
            self._rebalance.complete_and_schedule_next_heartbeat_expiration(group, member)
            out.respond(reply, HEARTBEAT_RESPONSES[ErrorCode.NONE])
        return out

    # ================================================================== LeaveGroup
    def handle_leave_group(
        self, req: LeaveGroupRequest, reply: Callable[[LeaveGroupResponse], None]
    ) -> CoordinatorResult:
        out = CoordinatorResult()
        if not req.group_id:
            out.respond(reply, leave_response(req, ErrorCode.INVALID_GROUP_ID, ()))
            return out
        status = self._ctx.status(req.group_id)
        if status is not None:
            out.respond(reply, leave_response(req, status, ()))
            return out
        group = self._groups.get(req.group_id)
        if group is None:
            results = tuple(
                LeaveGroupMemberResponse(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    error=ErrorCode.UNKNOWN_MEMBER_ID,
                )
                for m in req.members
            )
            out.respond(reply, leave_response(req, ErrorCode.NONE, results))
            return out
        if group.state is DEAD:
            out.respond(reply, leave_response(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, ()))
            return out
        members = []
        for lm in req.members:
            error = self._leave_one(out, group, lm.member_id, lm.group_instance_id, lm.reason)
            members.append(
                LeaveGroupMemberResponse(
                    member_id=lm.member_id, group_instance_id=lm.group_instance_id, error=error
                )
            )
        out.respond(reply, leave_response(req, ErrorCode.NONE, tuple(members)))
        return out

    def _leave_one(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        member_id: str,
        instance_id: str | None,
        reason: str | None,
    ) -> ErrorCode:
        if member_id == UNKNOWN_MEMBER_ID and instance_id is not None:
            mapped = group.static_members.get(instance_id)
            if mapped is None or mapped not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._rebalance.remove_member_and_update_group(
                out, group, group.members[mapped], EventReason.MEMBER_LEFT, client_reason=reason
            )
            return ErrorCode.NONE
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            self._timer.cancel(PendingMemberExpiry(group.group_id, member_id))
            self._ctx.emit(
                out,
                group,
                "member_removed",
                EventReason.MEMBER_LEFT,
                member_id=member_id,
                client_reason=reason,
            )
            if group.state is PREPARING:
                self._rebalance.maybe_complete_join(out, group)
            return ErrorCode.NONE
        error = self.validate_current_member(group, member_id, instance_id)
        if error is not None:
            return error
        self._rebalance.remove_member_and_update_group(
            out, group, group.members[member_id], EventReason.MEMBER_LEFT, client_reason=reason
        )
        return ErrorCode.NONE
