"""The consumer groups of KIP-848 in the group shard: the groups manager's second group type.

The protocol itself is the pure core of :mod:`groupcoord.coordinator.consumer`
(:class:`~groupcoord.coordinator.consumer.manager.ConsumerGroupManager`): a call takes a request
and ``now`` and returns the records it wrote (already replayed into its groups, as Kafka
replays a write before it commits), the response, timers and events. This part puts that core
into the shard's terms, as Kafka 4.x's ``GroupMetadataManager`` holds its consumer groups
beside its classic ones:

* its timers go on the shard's keyed timer (:class:`~groupcoord.coordinator.timers.
  ConsumerGroupTimer`, under Kafka's key strings) and come back through :meth:`on_timer`;
* its records become a :class:`~groupcoord.coordinator.result.PendingWrite` of the group's
  ``__consumer_offsets`` partition carrying the response, which the runtime releases once they
  are durable (the shard takes the write in at its next call, :meth:`written`);
* a write that fails is undone by **snapshot**: before the core replays a call's records, the
  groups they change are copied (:meth:`ConsumerGroup.snapshot`, containers only: members and
  assignments are immutable values), and a failed write puts the copy back and re-arms the
  restored members' session timers. The copy kept is the one from before the *oldest* write of
  the group still in flight, so a failure rolls the group back to its last durable state, as
  Kafka reverts to the last committed offset of its timeline structures. A later write of the
  same group that was computed on the undone one and still succeeds is not re-applied (Kafka
  would have failed it too: its log truncates; ours appends each batch on its own);
* its events become :class:`~groupcoord.coordinator.events.GroupEvent` s (``epoch_bump``,
  members added, removed and updated with their causes, and a ``state_change`` whenever the
  group's state, derived from its epochs and members, moves).

One id is one group: a consumer group and a classic group never share an id. A heartbeat for
the id of an *empty* classic group turns it into a consumer group (Kafka's
``maybeDeleteEmptyClassicGroup``: its GroupMetadata tombstone goes in the same write, its
offsets stay); a non-empty one answers GROUP_ID_NOT_FOUND "is not a consumer group" (the online
upgrade of a running classic group is not implemented). A consumer group's committed offsets are
kept where the offsets manager keeps every group's: in an offsets-only entry of the classic table
(:func:`is_offsets_holder`), which ListGroups does not show while the consumer group exists
(it lists the consumer group, type ``consumer``); DescribeGroups (v0-5) answers a consumer group
as Kafka 4.x does: no error, state Dead, no members.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.classic_messages import join_error, leave_response, sync_error
from groupcoord.coordinator.consumer.api import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupEvent,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupResult,
    DescribedGroup,
    Downgrade,
    TimerCancel,
    TimerSchedule,
)
from groupcoord.coordinator.consumer.classic_members import ClassicMembers
from groupcoord.coordinator.consumer.group import ConsumerGroup, ConsumerGroupState
from groupcoord.coordinator.consumer.manager import ConsumerGroupManager
from groupcoord.coordinator.consumer.metadata import TopicsImage
from groupcoord.coordinator.consumer.migration import UpgradingMember, group_tombstones, upgrade_records
from groupcoord.coordinator.consumer.records import ConsumerGroupRecord
from groupcoord.coordinator.consumer.validation import validate_heartbeat_request
from groupcoord.coordinator.context import DEAD, EMPTY, STABLE, ShardContext
from groupcoord.coordinator.events import CONSUMER_EVENT_CAUSES, CONSUMER_EVENT_KINDS, EventReason, GroupEvent
from groupcoord.coordinator.group import ClassicGroup, Member
from groupcoord.coordinator.records import new_group_metadata_record, new_group_metadata_tombstone
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite
from groupcoord.coordinator.timers import ConsumerGroupTimer
from groupcoord.coordinator.writes import ConsumerGroupWrite
from groupcoord.errors import ErrorCode, KafkaError
from groupcoord.formats.consumer_protocol import LATEST_VERSION, Assignment, encode_assignment
from groupcoord.protocol.group_messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    SyncGroupRequest,
    SyncGroupResponse,
)

if TYPE_CHECKING:
    from groupcoord.coordinator.classic_rebalance import ClassicRebalance

log = logging.getLogger(__name__)

CONSUMER_PROTOCOL_TYPE = "consumer"

#: Kafka 4.x ``GroupCoordinatorService.handleOperationException``: a failed write's error as the
#: heartbeat answers it.
_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def is_offsets_holder(group: ClassicGroup) -> bool:
    """Whether a classic-table entry holds offsets only (no members, no protocol, never a
    generation): what a consumer group's commits are kept in."""
    return not group.members and group.protocol_type is None and group.generation == 0


@dataclass(slots=True)
class _Undo:
    """A group's state before the oldest of its writes still in flight (None: it did not exist)."""

    snapshot: ConsumerGroup | None
    in_flight: int = 0
    failed: bool = False


class ConsumerGroups:
    """Args:
    ctx: what the shard's parts share.
    classic_groups: the classic table (one id is one group; commits are kept there).
    image: the topics image the shard was made with.
    """

    def __init__(
        self, ctx: ShardContext, classic_groups: dict[str, ClassicGroup], image: TopicsImage
    ) -> None:
        self._ctx = ctx
        self._classic = classic_groups
        self.manager = ConsumerGroupManager(
            config=ctx.config.consumer_group_config(),
            image=image,
            is_other_group_type=self.is_classic_group,
            before_write=self._before_write,
        )
        self.groups = self.manager.groups
        #: classic-protocol members inside consumer groups (JoinGroup, SyncGroup, ...)
        self.classic_members = ClassicMembers(self.manager)
        #: the classic rebalance machinery (set by the groups manager): the upgrade retires a
        #: classic group and the downgrade makes one
        self.classic_rebalance: ClassicRebalance | None = None
        #: the id whose classic group is being converted by the current heartbeat
        self._upgrading: str | None = None
        self._undo: dict[str, _Undo] = {}
        self._taken: list[str] = []
        #: the group a call is about, if it did not exist before the call (the core registers
        #: a new group before it writes its records: undoing must remove it, not keep it empty)
        self._new_group: str | None = None

    # ------------------------------------------------------------------ one id, one group
    def is_classic_group(self, group_id: str) -> bool:
        """A live classic group with members holds the id (an empty one is replaced)."""
        if group_id == self._upgrading:
            return False
        group = self._classic.get(group_id)
        return group is not None and group.state is not DEAD and bool(group.members)

    def holds(self, group_id: str) -> bool:
        """Whether ``group_id`` is a consumer group (visible: its partition led and loaded)."""
        return group_id in self.groups

    def subscribed_topics(self, group_id: str) -> frozenset[str] | None:
        """The topics a consumer group's members subscribe to, by name or through a resolved
        regex (Kafka's ``ConsumerGroup.isSubscribedToTopic``); None when the id is not one."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        names, by_regex, _ = group.subscription_counts(None, None)
        return frozenset(names) | frozenset(by_regex)

    # ------------------------------------------------------------------ ConsumerGroupHeartbeat
    def heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, reply: Callable[[ConsumerGroupHeartbeatResponse], None]
    ) -> CoordinatorResult:
        """ConsumerGroupHeartbeat (68): the request's own checks (INVALID_REQUEST,
        UNSUPPORTED_ASSIGNOR) before the coordinator's (loading, ownership), as Kafka's service
        validates before it schedules the write; then the core."""
        out = CoordinatorResult()
        try:
            validate_heartbeat_request(req, self.manager.assignors)
        except KafkaError as exc:
            out.respond(reply, _error_response(exc.code, exc.message))
            return out
        status = self._ctx.status(req.group_id)
        if status is not None:
            out.respond(reply, _error_response(status, None))
            return out
        gid = req.group_id
        classic = self._classic.get(gid)
        replaces_classic = (
            gid not in self.groups
            and classic is not None
            and classic.state is not DEAD
            and not classic.members
            and not is_offsets_holder(classic)
        )
        before = self._state_of(gid)
        prefix: list[object] = []
        if (
            req.member_epoch == 0
            and classic is not None
            and gid not in self.groups
            and self.is_classic_group(gid)
        ):
            try:
                prefix = self._upgrade(classic)
            except KafkaError as exc:
                out.respond(reply, _error_response(exc.code, exc.message))
                return out
        self._new_group = None if gid in self.groups else gid
        self._upgrading = gid if prefix else None
        try:
            result = self.manager.consumer_group_heartbeat(req, self._ctx.now(), validated=True)
        finally:
            self._new_group = None
            self._upgrading = None
        if prefix:
            if not result.records:  # the heartbeat failed: the group stays classic
                self.groups.pop(gid, None)
                self._undo.pop(gid, None)
                self._taken.clear()
                if result.response is not None:
                    out.respond(reply, result.response)
                return out
            assert classic is not None
            undo_upgrade = self._retire_classic(out, classic)
            self._schedule(self.manager.group_timers(gid, self._ctx.now()))
            self._apply(out, gid, None, result, reply, prefix, undo_upgrade=undo_upgrade)
            return out
        if replaces_classic and result.records:
            prefix = [new_group_metadata_tombstone(gid)]
        self._apply(out, gid, before, result, reply, prefix)
        return out

    # ------------------------------------------------------------------ the online upgrade
    def _upgrade(self, classic: ClassicGroup) -> list[object]:
        """``validateOnlineUpgrade`` and ``convertToConsumerGroup``: the classic group's records as
        a consumer group, replayed (undone if the heartbeat fails). Returns the records the write
        starts with: the classic GroupMetadata tombstone, then the conversion's."""
        gid = classic.group_id
        config = self.manager.config
        if not config.upgrade_enabled:
            reason = "the online upgrade is disabled"
        elif classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            reason = "the group does not use the consumer embedded protocol"
        elif len(classic.members) > config.max_size:
            reason = "the group size exceeds the consumer group maximum size"
        else:
            reason = ""
        if reason:
            log.info("Cannot upgrade classic group %s to consumer group because %s.", gid, reason)
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
        members = [
            UpgradingMember(
                member_id=m.member_id,
                instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                protocols=m.protocols,
                assignment=m.assignment,
            )
            for m in classic.members.values()
        ]
        records = upgrade_records(
            gid, classic.generation, classic.protocol_name or "", members, self.manager.image
        )
        self._new_group = gid
        self._before_write([gid])
        self._new_group = None
        for record in records:
            self.manager.replay(record)
        log.info("classic group %s upgraded to a consumer group at epoch %d", gid, classic.generation)
        return [new_group_metadata_tombstone(gid), *records]

    def _retire_classic(
        self, out: CoordinatorResult, group: ClassicGroup
    ) -> Callable[[CoordinatorResult], None]:
        """The classic group of an upgrade goes: its parked JoinGroup and SyncGroup requests get
        REBALANCE_IN_PROGRESS (``completeAllJoinFutures`` / ``completeAllSyncFutures``), its timers
        stop, and what stays of it holds the group's offsets. Returns what puts it back if the
        upgrade's write fails (Kafka reverts to its last committed state): its members, with
        fresh sessions, and a rebalance unless it was Stable (a join or sync in flight was
        answered already)."""
        rebalance = self.classic_rebalance
        assert rebalance is not None
        saved_members = list(group.members.values())
        saved = (group.generation, group.protocol_type, group.protocol_name, group.leader_id, group.state)

        def undo(out: CoordinatorResult) -> None:
            if group.members or self._classic.get(group.group_id) is not group or self.holds(group.group_id):
                return
            group.generation, group.protocol_type, group.protocol_name, group.leader_id, state = saved
            for m in saved_members:
                m.awaiting_join = None
                m.awaiting_sync = None
                group.add(m)
            group.subscribed_topics = group.compute_subscribed_topics()
            group.previous_state, group.state = group.state, STABLE
            self._ctx.emit(
                out,
                group,
                "state_change",
                EventReason.ASSIGNMENT_PERSIST_FAILED,
                from_state=EMPTY,
                to_state=STABLE,
            )
            for m in saved_members:
                rebalance.complete_and_schedule_next_heartbeat_expiration(group, m)
            if state is not STABLE:
                rebalance.prepare_rebalance(out, group, EventReason.ASSIGNMENT_PERSIST_FAILED)

        for m in list(group.members.values()):
            rebalance.reply_join(
                out, group, m, join_error(m.join_version, ErrorCode.REBALANCE_IN_PROGRESS, m.member_id)
            )
            rebalance.reply_sync(out, m, sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
        rebalance.cancel_timers(group)
        source = group.state
        for mid in list(group.members):
            group.remove(mid)
        group.pending_members.clear()
        group.pending_sync.clear()
        group.static_members.clear()
        group.previous_state, group.state = source, EMPTY
        if self._ctx.emit_events:
            self._ctx.emit(
                out, group, "state_change", EventReason.GROUP_UPGRADED, from_state=source, to_state=DEAD
            )
        _make_offsets_holder(group)
        return undo

    # ------------------------------------------------------------------ the online downgrade
    def _downgrade(self, out: CoordinatorResult, spec: Downgrade) -> object:
        """``convertToClassicGroup`` after the consumer group's tombstones: the classic group of
        ``spec`` (Stable, generation = the group epoch, protocol voted by its members, each
        member's target assignment at the ConsumerProtocol version of its metadata), its
        heartbeats, and a rebalance (the members re-join). Returns its GroupMetadata record."""
        rebalance = self.classic_rebalance
        assert rebalance is not None
        gid = spec.group_id
        now = self._ctx.now()
        group = self._classic.get(gid)
        if group is None or group.members:
            fresh = ClassicGroup(gid, now)
            if group is not None:
                fresh.offsets = group.offsets
            group = self._classic[gid] = fresh
        group.generation = spec.generation
        group.protocol_type = CONSUMER_PROTOCOL_TYPE
        group.leader_id = None
        for dm in spec.members:
            group.add(
                Member(
                    member_id=dm.member_id,
                    group_instance_id=dm.instance_id,
                    client_id=dm.client_id,
                    client_host=dm.client_host,
                    rebalance_timeout_ms=dm.rebalance_timeout_ms,
                    session_timeout_ms=dm.session_timeout_ms,
                    protocol_type=CONSUMER_PROTOCOL_TYPE,
                    protocols=dm.protocols,
                )
            )
        group.protocol_name = group.select_protocol()
        group.subscribed_topics = group.compute_subscribed_topics()
        for dm in spec.members:
            member = group.members[dm.member_id]
            metadata = member.metadata(group.protocol_name)
            version = int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0
            member.assignment = encode_assignment(
                Assignment(partitions=dm.assignment, version=min(max(version, 0), LATEST_VERSION))
            )
        source = group.state
        group.previous_state, group.state, group.state_timestamp = source, STABLE, now
        self._ctx.emit(
            out, group, "state_change", EventReason.GROUP_DOWNGRADED, from_state=source, to_state=STABLE
        )
        record = new_group_metadata_record(group, {m.member_id: m.assignment for m in group.members.values()})
        for m in group.members.values():
            rebalance.complete_and_schedule_next_heartbeat_expiration(group, m)
        if spec.prepare_rebalance:
            rebalance.prepare_rebalance(out, group, EventReason.GROUP_DOWNGRADED)
        log.info("consumer group %s downgraded to a classic group at generation %d", gid, spec.generation)
        return record

    def _undo_downgrade(self, out: CoordinatorResult, group_id: str) -> None:
        """A downgrade's write failed: the classic group it made goes (the consumer group is
        restored from its snapshot; its offsets stay), and its members' parked JoinGroup and
        SyncGroup requests get NOT_COORDINATOR, so they find the coordinator again."""
        rebalance = self.classic_rebalance
        group = self._classic.get(group_id)
        if group is None or rebalance is None:
            return
        rebalance.cancel_timers(group)
        for m in list(group.members.values()):
            rebalance.reply_join(
                out, group, m, join_error(m.join_version, ErrorCode.NOT_COORDINATOR, m.member_id)
            )
            rebalance.reply_sync(out, m, sync_error(ErrorCode.NOT_COORDINATOR))
            group.remove(m.member_id)
        group.pending_members.clear()
        group.pending_sync.clear()
        group.previous_state, group.state = group.state, EMPTY
        _make_offsets_holder(group)

    # ------------------------------------------------------------------ classic members
    def classic_join(
        self, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]
    ) -> CoordinatorResult:
        """A JoinGroup to a non-empty consumer group (``classicGroupJoinToConsumerGroup``)."""
        out = CoordinatorResult()
        gid = req.group_id
        before = self._state_of(gid)
        result, response = self.classic_members.join(req, self._ctx.now())
        version, member_id = req.version, req.member_id
        self._apply(
            out, gid, before, result, reply, (), response, lambda code: join_error(version, code, member_id)
        )
        return out

    def classic_sync(
        self, req: SyncGroupRequest, reply: Callable[[SyncGroupResponse], None]
    ) -> CoordinatorResult:
        out = CoordinatorResult()
        before = self._state_of(req.group_id)
        result, response = self.classic_members.sync(req, self._ctx.now())
        self._apply(out, req.group_id, before, result, reply, (), response, sync_error)
        return out

    def classic_heartbeat(
        self, req: HeartbeatRequest, reply: Callable[[HeartbeatResponse], None]
    ) -> CoordinatorResult:
        out = CoordinatorResult()
        before = self._state_of(req.group_id)
        result, response = self.classic_members.heartbeat(req, self._ctx.now())
        self._apply(
            out, req.group_id, before, result, reply, (), response, lambda code: HeartbeatResponse(error=code)
        )
        return out

    def classic_leave(
        self, req: LeaveGroupRequest, reply: Callable[[LeaveGroupResponse], None]
    ) -> CoordinatorResult:
        out = CoordinatorResult()
        before = self._state_of(req.group_id)
        result, members = self.classic_members.leave(req)
        response = leave_response(req, ErrorCode.NONE, members)
        self._apply(
            out, req.group_id, before, result, reply, (), response, lambda code: leave_response(req, code, ())
        )
        return out

    def convert_empty_to_classic(self, out: CoordinatorResult, group_id: str) -> None:
        """A JoinGroup to an Empty consumer group: its tombstones (``createGroupTombstoneRecords``)
        are written and replayed, and the JoinGroup proceeds as in a new classic group."""
        group = self.groups[group_id]
        before = self._state_of(group_id)
        self._before_write([group_id])
        records = group_tombstones(group)
        for record in records:
            self.manager.replay(record)
        self._apply(out, group_id, before, ConsumerGroupResult(records=records), None)

    # ------------------------------------------------------------------ ConsumerGroupDescribe
    def describe(self, group_id: str) -> DescribedGroup:
        """One group of a ConsumerGroupDescribe (69), or the coordinator's error for it."""
        status = self._ctx.status(group_id)
        if status is not None:
            return DescribedGroup(group_id=group_id, error_code=status)
        response = self.manager.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=(group_id,)))
        return response.groups[0]

    # ------------------------------------------------------------------ timers
    def on_timer(self, out: CoordinatorResult, timer: TimerSchedule) -> None:
        gid = timer.group_id
        if not self._ctx.serves(gid):
            return
        before = self._state_of(gid)
        result = self.manager.on_timer(timer, self._ctx.now())
        self._apply(out, gid, before, result, None)

    def _schedule(self, timers: Iterable[TimerSchedule | TimerCancel]) -> None:
        timer = self._ctx.timer
        for t in timers:
            if isinstance(t, TimerSchedule):
                if t.if_absent:
                    timer.schedule_if_absent(ConsumerGroupTimer(t.key), t.deadline_ms, t)
                else:
                    timer.schedule(ConsumerGroupTimer(t.key), t.deadline_ms, t)
            else:
                timer.cancel(ConsumerGroupTimer(t.key))

    # ------------------------------------------------------------------ a core result
    def _before_write(self, group_ids: Iterable[str]) -> None:
        for gid in group_ids:
            if gid not in self._undo:
                group = None if gid == self._new_group else self.groups.get(gid)
                self._undo[gid] = _Undo(snapshot=None if group is None else group.snapshot())
            self._taken.append(gid)

    def _apply(
        self,
        out: CoordinatorResult,
        group_id: str,
        before: ConsumerGroupState | None,
        result: ConsumerGroupResult,
        reply: Callable[[Any], None] | None,
        prefix: Sequence[object] = (),
        response: object | None = None,
        error_response: Callable[[Any], Any] | None = None,
        undo_upgrade: Callable[[CoordinatorResult], None] | None = None,
    ) -> None:
        """Schedule the result's timers, emit its events, and write its records after ``prefix``
        (a classic group's tombstone and an upgrade's records) with the downgrade's classic
        GroupMetadata record after them; ``reply`` gets ``response`` (default: the core's) once
        they are durable, or ``error_response(code)`` if they fail."""
        taken = tuple(dict.fromkeys(self._taken))
        self._taken.clear()
        if response is None:
            response = result.response
        self._schedule(result.timers)
        self._emit(
            out,
            group_id,
            before,
            result.events,
            EventReason.GROUP_UPGRADED if undo_upgrade is not None else EventReason.GROUP_CREATED,
        )
        if not result.records:
            if reply is not None and response is not None:
                out.respond(reply, response)
            return
        for gid in taken:
            self._undo[gid].in_flight += 1
        records: list[object] = [*prefix, *result.records]
        if result.downgrade is not None:
            records.append(self._downgrade(out, result.downgrade))
        write = ConsumerGroupWrite(
            taken,
            reply,
            response,
            bool(prefix),
            error_response=error_response,
            downgrade=result.downgrade is not None,
            undo_upgrade=undo_upgrade,
        )
        pending = PendingWrite(self._ctx.partition_for(group_id), tuple(records), write)
        if reply is not None and response is not None:  # the runtime answers it once durable
            pending.reply, pending.response = reply, response
        out.writes.append(pending)

    def written(self, out: CoordinatorResult, write: ConsumerGroupWrite, error: ErrorCode) -> None:
        """A write of :meth:`_apply` is durable (``NONE``: its answer, if it carried one, went
        with it; nothing is added to ``out``) or failed: undo and answer the error."""
        now = self._ctx.now()
        for gid in write.group_ids:
            undo = self._undo.get(gid)
            if undo is None:
                continue
            undo.in_flight -= 1
            if error is not ErrorCode.NONE and not undo.failed:
                undo.failed = True
                if write.downgrade:
                    self._undo_downgrade(out, gid)
                self._restore(out, gid, undo.snapshot, now)
                if write.undo_upgrade is not None:
                    write.undo_upgrade(out)
            if undo.in_flight <= 0:
                del self._undo[gid]
        if error is ErrorCode.NONE:
            if write.classic_tombstone:
                for gid in write.group_ids:
                    classic = self._classic.get(gid)
                    if classic is not None and not classic.members:
                        _make_offsets_holder(classic)
            return
        code = _WRITE_ERRORS.get(error, error)
        log.warning("consumer group write of %s failed (%s): state restored", write.group_ids, error.name)
        if write.reply is not None:
            make = write.error_response
            out.respond(write.reply, make(code) if make is not None else _error_response(code, None))

    def _restore(
        self, out: CoordinatorResult, group_id: str, snapshot: ConsumerGroup | None, now: int
    ) -> None:
        before = self._state_of(group_id)
        if snapshot is None:
            self.groups.pop(group_id, None)
        else:
            self.groups[group_id] = snapshot
            self._schedule(self.manager.group_timers(group_id, now))
        after = self._state_of(group_id)
        if before is not after:
            self._state_event(out, group_id, before, after, EventReason.ASSIGNMENT_PERSIST_FAILED)

    # ------------------------------------------------------------------ events
    def _state_of(self, group_id: str) -> ConsumerGroupState | None:
        group = self.groups.get(group_id)
        return None if group is None else group.state

    def _emit(
        self,
        out: CoordinatorResult,
        group_id: str,
        before: ConsumerGroupState | None,
        events: Sequence[ConsumerGroupEvent],
        created: EventReason = EventReason.GROUP_CREATED,
    ) -> None:
        after = self._state_of(group_id)
        if not self._ctx.emit_events:
            return
        # One time for every event of one change, so a reader pairs a bump with its leave.
        now = self._ctx.now()
        # A state change's reason: the epoch bump's cause if there is one, else the first event's.
        bump: EventReason | None = None
        first: EventReason | None = None
        for e in events:
            type_, default = CONSUMER_EVENT_KINDS.get(e.kind, ("member_updated", EventReason.MEMBER_UPDATED))
            why = CONSUMER_EVENT_CAUSES.get(e.cause, default)
            if e.kind == "epoch-bump" and bump is None:
                bump = why
            first = first or why
            out.events.append(
                self._event(e.group_id, type_, why, member_id=e.member_id, cause=e.cause, now=now)
            )
        if before is None and after is not None:
            # created: Empty first, as a classic group is created (``group_created``, or
            # ``group_upgraded`` when a classic group became this one)
            self._state_event(out, group_id, None, ConsumerGroupState.EMPTY, created, now)
            before = ConsumerGroupState.EMPTY
        if before is not after:
            self._state_event(out, group_id, before, after, bump or first or EventReason.MEMBER_UPDATED, now)

    def _state_event(
        self,
        out: CoordinatorResult,
        group_id: str,
        before: ConsumerGroupState | None,
        after: ConsumerGroupState | None,
        reason: EventReason,
        now: int | None = None,
    ) -> None:
        if not self._ctx.emit_events:
            return
        log.info(
            "consumer group=%s %s -> %s reason=%s",
            group_id,
            before.value if before else "-",
            after.value if after else ConsumerGroupState.DEAD.value,
            reason.value,
        )
        out.events.append(
            self._event(
                group_id,
                "state_change",
                reason,
                from_state=before.value if before else None,
                to_state=after.value if after else ConsumerGroupState.DEAD.value,
                now=now,
            )
        )

    def _event(
        self,
        group_id: str,
        type_: str,
        reason: EventReason,
        *,
        member_id: str | None = None,
        cause: str | None = None,
        from_state: str | None = None,
        to_state: str | None = None,
        now: int | None = None,
    ) -> GroupEvent:
        group = self.groups.get(group_id)
        member = group.member(member_id) if group is not None and member_id else None
        return GroupEvent(
            time_ms=self._ctx.now() if now is None else now,
            group_id=group_id,
            generation=group.group_epoch if group is not None else -1,
            type=type_,
            from_state=from_state,
            to_state=to_state,
            reason=reason,
            member_id=member_id,
            group_instance_id=member.instance_id if member else None,
            client_id=member.client_id if member else None,
            client_host=member.client_host if member else None,
            client_reason=cause or None,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=self._assignor(group) if group is not None else None,
            member_count=len(group.members) if group is not None else 0,
        )

    def dead_event(self, group_id: str) -> GroupEvent:
        """The state change of a deleted group (DeleteGroups), once its tombstones are durable."""
        return self._event(
            group_id,
            "state_change",
            EventReason.GROUP_DELETED,
            from_state=ConsumerGroupState.EMPTY.value,
            to_state=ConsumerGroupState.DEAD.value,
        )

    def _assignor(self, group: ConsumerGroup) -> str:
        """The group's assignor: its members' most named ``server_assignor``, else the default."""
        if group.server_assignors:
            return sorted(group.server_assignors.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        return self.manager.config.assignors[0]

    # ------------------------------------------------------------------ read-only (the console)
    def served(self, group_id: str | None = None) -> list[tuple[ConsumerGroup, str]]:
        """The groups ListGroups would list (or just ``group_id``'s, if it is one), each with the
        assignor named in its events; for reading only (the live console). Assignments are by
        topic id: ``self.manager.image`` names them."""
        if group_id is not None:
            group = self.groups.get(group_id)
            pairs = [] if group is None else [(group_id, group)]
        else:
            pairs = list(self.groups.items())
        return [(g, self._assignor(g)) for gid, g in pairs if self._ctx.serves(gid)]

    # ------------------------------------------------------------------ ListGroups
    def listed(self, states: set[str] | None) -> list[ListedGroup]:
        out = []
        for gid, group in self.groups.items():
            if not self._ctx.serves(gid):
                continue
            state = group.state.value
            if states is not None and state.lower() not in states:
                continue
            out.append(
                ListedGroup(
                    group_id=gid,
                    protocol_type=CONSUMER_PROTOCOL_TYPE,
                    group_state=state,
                    group_type="consumer",
                )
            )
        return out

    # ------------------------------------------------------------------ loading
    def replay(self, record: ConsumerGroupRecord) -> None:
        self.manager.replay(record)

    def complete_loading(self, out: CoordinatorResult, partition: int) -> None:
        """The partition's groups go live: fresh session timers, rebalance timers for members
        revoking (``GroupMetadataManager.onLoaded``), and a ``loaded`` state change each."""
        now = self._ctx.now()
        for gid in [g for g in self.groups if self._ctx.partition_for(g) == partition]:
            self._schedule(self.manager.group_timers(gid, now))
            self._state_event(out, gid, None, self.groups[gid].state, EventReason.LOADED)

    def unload(self, partition: int) -> None:
        """The partition is led elsewhere: its groups go (their timers find nothing and stop)."""
        for gid in [g for g in self.groups if self._ctx.partition_for(g) == partition]:
            del self.groups[gid]
            self._undo.pop(gid, None)

    def on_metadata_update(self, image: TopicsImage) -> None:
        self.manager.on_metadata_update(image)


def _error_response(code: ErrorCode, message: str | None) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)


def _make_offsets_holder(group: ClassicGroup) -> None:
    """The classic group an id had is gone (its tombstone is durable); its offsets stay."""
    group.protocol_type = None
    group.protocol_name = None
    group.generation = 0
    group.leader_id = None
