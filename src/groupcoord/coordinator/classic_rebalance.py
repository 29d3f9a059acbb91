"""The classic group's rebalance machinery: the phases, the timers and member removal.

:class:`ClassicRebalance` is what the four classic handlers (``classic_group.py``'s
:class:`~groupcoord.coordinator.classic_group.ClassicGroupManager`) drive:
``prepare_rebalance`` and ``maybe_prepare_rebalance``, the join phase's end
(``maybe_complete_join``, ``on_delayed_join``, ``on_complete_join``: the generation bump, the
protocol vote and every parked JoinGroup answered), the sync phase's failure path
(``reset_and_propagate_assignment_error``), member removal (``remove_member``,
``remove_member_and_update_group``), heartbeats (``complete_and_schedule_next_heartbeat_expiration``)
and the expiry of every classic timer (``timers.py``), answering parked joins and syncs, and
appending and replaying the group's records. Names follow the seeds and Kafka's
``GroupCoordinator.scala`` / 4.x ``GroupMetadataManager``. Nothing here handles a request.

A part, held by composition: the groups manager
(:class:`~groupcoord.coordinator.groups.GroupMetadataManager`) makes one per shard and gives it
to the classic handlers; the groups manager itself (a group over ``group.max.size`` after a
load), the consumer groups (a group's upgrade and downgrade between the two protocols), the
offsets manager (a commit counts as a heartbeat) and the shard's timer dispatch call it
directly, so none of them goes through the request handlers to reach it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from groupcoord.coordinator.classic_messages import (
    join_error,
    join_response,
    sync_error,
)
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
    ClassicGroup,
    Member,
)
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    new_group_metadata_record,
)
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite
from groupcoord.coordinator.state import can_rebalance
from groupcoord.coordinator.timers import (
    DelayedHeartbeat,
    DelayedJoin,
    InitialDelayedJoin,
    PendingMemberExpiry,
    PendingSync,
)
from groupcoord.coordinator.writes import (
    EmptyGroupWrite,
    WriteCompletion,
)
from groupcoord.errors import ErrorCode, IllegalStateError
from groupcoord.protocol.group_messages import (
    JoinGroupResponse,
    SyncGroupResponse,
)

#: The classic group's logger: member expiries and failed group writes are logged under the name
#: they had before this machinery left ``classic_group.py`` (operators filter on it).
log = logging.getLogger("groupcoord.coordinator.classic_group")

#: How the classic manager has a durable group record applied: the groups manager's ``replay``.
ReplayGroupRecord = Callable[[CoordinatorResult, GroupMetadataKey, GroupMetadataValue | None], None]


class ClassicRebalance:
    """Args:
    ctx: what the shard's parts share (config, clock, timer, partitions, events).
    groups: the shard's group table, owned by the groups manager.
    replay: the groups manager's replay of a group record (a write of this manager is durable).
    """

    def __init__(self, ctx: ShardContext, groups: dict[str, ClassicGroup], replay: ReplayGroupRecord) -> None:
        self._ctx = ctx
        self._config = ctx.config
        self._timer = ctx.timer
        self._groups = groups
        self._replay = replay

    def append(
        self,
        out: CoordinatorResult,
        group_id: str,
        records: Sequence[CoordinatorRecord],
        completion: WriteCompletion,
    ) -> None:
        out.writes.append(PendingWrite(self._ctx.partition_for(group_id), tuple(records), completion))

    def replay_written(self, out: CoordinatorResult, record: CoordinatorRecord) -> None:
        """Replay a group record this manager wrote, now durable."""
        key, value = record.key, record.value
        if not isinstance(key, GroupMetadataKey) or not (
            value is None or isinstance(value, GroupMetadataValue)
        ):
            raise IllegalStateError(f"not a group record: {record!r}")
        self._replay(out, key, value)

    # ---------------------------------------------------------------- rebalance
    def maybe_prepare_rebalance(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        reason: EventReason,
        *,
        member: Member | None = None,
        client_reason: str | None = None,
    ) -> None:
        if can_rebalance(group.state):
            self.prepare_rebalance(out, group, reason, member=member, client_reason=client_reason)
        elif group.state is PREPARING:
            self.maybe_complete_join(out, group)

    def prepare_rebalance(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        reason: EventReason,
        *,
        member: Member | None = None,
        client_reason: str | None = None,
    ) -> None:
        if group.state is COMPLETING:
            self.reset_and_propagate_assignment_error(out, group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._timer.cancel(PendingSync(group.group_id))
        group.pending_sync.clear()
        now = self._ctx.now()
        rebalance_timeout = group.rebalance_timeout_ms()
        if group.state is EMPTY:
            delay = self._config.group_initial_rebalance_delay_ms
            remaining = max(rebalance_timeout - delay, 0)
            group.new_member_added = False
            self._timer.schedule(
                DelayedJoin(group.group_id), now + delay, InitialDelayedJoin(delay, remaining)
            )
        else:
            self._timer.schedule(DelayedJoin(group.group_id), now + rebalance_timeout, None)
        self._ctx.transition(out, group, PREPARING, reason, member=member, client_reason=client_reason)
        self.maybe_complete_join(out, group)

    def reset_and_propagate_assignment_error(
        self, out: CoordinatorResult, group: ClassicGroup, error: ErrorCode
    ) -> None:
        for m in group.members.values():
            m.assignment = b""
            self.reply_sync(out, m, sync_error(error))

    def maybe_complete_join(self, out: CoordinatorResult, group: ClassicGroup) -> None:
        """Complete the join phase early when everyone has rejoined (never during the initial delay)."""
        if group.state is PREPARING and group.all_members_joined() and group.previous_state is not EMPTY:
            self._timer.cancel(DelayedJoin(group.group_id))
            self.on_complete_join(out, group)

    def on_delayed_join(self, out: CoordinatorResult, group_id: str, payload: object) -> None:
        group = self._groups.get(group_id)
        if group is None or group.state is not PREPARING:
            return
        if isinstance(payload, InitialDelayedJoin) and group.new_member_added and payload.remaining_ms != 0:
            group.new_member_added = False
            delay = min(self._config.group_initial_rebalance_delay_ms, payload.remaining_ms)
            remaining = max(payload.remaining_ms - payload.delay_ms, 0)
            self._timer.schedule(
                DelayedJoin(group_id), self._ctx.now() + delay, InitialDelayedJoin(delay, remaining)
            )
            return
        self.on_complete_join(out, group)

    def on_complete_join(self, out: CoordinatorResult, group: ClassicGroup) -> None:
        """Kafka's ``onCompleteJoin``: close the join phase and start the next generation."""
        for m in group.not_yet_rejoined():
            if not m.is_static:
                self.remove_member(out, group, m, EventReason.NOT_REJOINED_BEFORE_REBALANCE_TIMEOUT)
        if group.state is DEAD:
            return
        if group.members and not self._maybe_elect_new_joined_leader(group):
            # Only static members that did not rejoin are left: wait another rebalance timeout.
            log.error(
                "group=%s join phase cannot complete: no member rejoined (static members %s remain)",
                group.group_id,
                list(group.members),
            )
            self._timer.schedule(
                DelayedJoin(group.group_id), self._ctx.now() + group.rebalance_timeout_ms(), None
            )
            return
        group.generation += 1
        group.pending_sync.clear()
        if group.members:
            group.protocol_name = group.select_protocol()
            group.subscribed_topics = group.compute_subscribed_topics()
            self._ctx.transition(out, group, COMPLETING, EventReason.JOIN_COMPLETED)
            for m in list(group.members.values()):
                response = join_response(group, m, with_members=group.is_leader(m.member_id))
                self.reply_join(out, group, m, response)
                self.complete_and_schedule_next_heartbeat_expiration(group, m)
                m.is_new = False
                group.pending_sync.add(m.member_id)
            self._timer.schedule(
                PendingSync(group.group_id), self._ctx.now() + group.rebalance_timeout_ms(), group.generation
            )
        else:
            group.protocol_name = None
            group.subscribed_topics = group.compute_subscribed_topics()
            self._ctx.transition(out, group, EMPTY, EventReason.JOIN_COMPLETED)
            record = new_group_metadata_record(group, {})
            self.append(out, group.group_id, [record], EmptyGroupWrite(group, group.generation))

    def empty_group_written(
        self,
        out: CoordinatorResult,
        write: EmptyGroupWrite,
        records: Sequence[CoordinatorRecord],
        error: ErrorCode,
    ) -> None:
        group = write.group
        if error is not ErrorCode.NONE:
            log.warning("group=%s empty group metadata not written: %s", group.group_id, error.name)
        elif (
            self._groups.get(group.group_id) is group
            and group.state is EMPTY
            and group.generation == write.generation
        ):
            for record in records:
                self.replay_written(out, record)

    def _maybe_elect_new_joined_leader(self, group: ClassicGroup) -> bool:
        if group.leader_id is not None:
            leader = group.members.get(group.leader_id)
            if leader is not None and leader.awaiting_join is not None:
                return True
        for m in group.members.values():
            if m.awaiting_join is not None:
                group.leader_id = m.member_id
                return True
        return False

    # ---------------------------------------------------------------- removal
    def remove_member(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        member: Member,
        reason: EventReason,
        *,
        answer_parked: ErrorCode = ErrorCode.UNKNOWN_MEMBER_ID,
        client_reason: str | None = None,
    ) -> None:
        """Drop a member without starting a rebalance; answers its parked requests."""
        self.reply_join(out, group, member, join_error(member.join_version, answer_parked, UNKNOWN_MEMBER_ID))
        self.reply_sync(out, member, sync_error(answer_parked))
        self.cancel_heartbeat(group, member.member_id)
        group.remove(member.member_id)
        self._ctx.emit(out, group, "member_removed", reason, member=member, client_reason=client_reason)
        if not group.pending_sync:
            self._timer.cancel(PendingSync(group.group_id))

    def remove_member_and_update_group(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        member: Member,
        reason: EventReason,
        client_reason: str | None = None,
    ) -> None:
        self.remove_member(out, group, member, reason, client_reason=client_reason)
        if group.state in (STABLE, COMPLETING):
            self.maybe_prepare_rebalance(out, group, reason, member=member, client_reason=client_reason)
        elif group.state is PREPARING:
            self.maybe_complete_join(out, group)

    def on_expire_heartbeat(self, out: CoordinatorResult, group_id: str, member_id: str) -> None:
        group = self._groups.get(group_id)
        if group is None or group.state is DEAD:
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if not member.is_new and (member.awaiting_join is not None or member.awaiting_sync is not None):
            return  # a parked request counts as liveness
        reason = EventReason.NEW_MEMBER_JOIN_TIMEOUT if member.is_new else EventReason.SESSION_TIMEOUT
        log.info("group=%s member=%s expired (%s)", group_id, member_id, reason.value)
        self.remove_member_and_update_group(out, group, member, reason)

    def on_expire_pending_member(self, out: CoordinatorResult, group_id: str, member_id: str) -> None:
        group = self._groups.get(group_id)
        if group is None or member_id not in group.pending_members:
            return
        del group.pending_members[member_id]
        self._ctx.emit(out, group, "member_removed", EventReason.PENDING_MEMBER_EXPIRED, member_id=member_id)
        if group.state is PREPARING:
            self.maybe_complete_join(out, group)

    def on_expire_pending_sync(self, out: CoordinatorResult, group_id: str, generation: int) -> None:
        group = self._groups.get(group_id)
        if group is None or group.generation != generation or group.state not in (COMPLETING, STABLE):
            return
        if not group.pending_sync:
            return
        # An id may be pending that is no longer a member: a static member replaced by a new
        # process after the leader's SyncGroup stays pending under its old id (Kafka's
        # replaceStaticMember leaves pendingSyncMembers alone), and still starts the rebalance.
        missing = [group.members[mid] for mid in list(group.members) if mid in group.pending_sync]
        log.info(
            "group=%s generation=%d members never synced: %s",
            group_id,
            generation,
            sorted(group.pending_sync),
        )
        for m in missing:
            self.remove_member(out, group, m, EventReason.SYNC_TIMEOUT)
        group.pending_sync.clear()
        if group.state in (STABLE, COMPLETING):
            self.maybe_prepare_rebalance(out, group, EventReason.SYNC_TIMEOUT)

    # ---------------------------------------------------------------- replies and heartbeats
    def reply_join(
        self, out: CoordinatorResult, group: ClassicGroup, member: Member, response: JoinGroupResponse
    ) -> None:
        reply = member.awaiting_join
        if reply is None:
            return
        group.set_awaiting_join(member, None)
        member.join_reason = None
        out.respond(reply, response)

    def reply_sync(self, out: CoordinatorResult, member: Member, response: SyncGroupResponse) -> None:
        reply = member.awaiting_sync
        if reply is None:
            return
        member.awaiting_sync = None
        out.respond(reply, response)

    # ---------------------------------------------------------------- heartbeats and timers
    def complete_and_schedule_next_heartbeat_expiration(
        self, group: ClassicGroup, member: Member, timeout_ms: int | None = None
    ) -> None:
        """Kafka's ``completeAndScheduleNextHeartbeatExpiration``."""
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self._timer.schedule(self._heartbeat_key(group, member), self._ctx.now() + timeout, None)

    @staticmethod
    def _heartbeat_key(group: ClassicGroup, member: Member) -> DelayedHeartbeat:
        key = member.heartbeat_key
        if key is None or key.member_id != member.member_id or key.group_id != group.group_id:
            key = member.heartbeat_key = DelayedHeartbeat(group.group_id, member.member_id)
        return key

    def cancel_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        self._timer.cancel(DelayedHeartbeat(group.group_id, member_id))

    def cancel_timers(self, group: ClassicGroup) -> None:
        """Every timer of ``group`` and its members (the group is being forgotten)."""
        group_id = group.group_id
        self._timer.cancel(DelayedJoin(group_id))
        self._timer.cancel(PendingSync(group_id))
        for member_id in group.members:
            self.cancel_heartbeat(group, member_id)
        for member_id in group.pending_members:
            self._timer.cancel(PendingMemberExpiry(group_id, member_id))
