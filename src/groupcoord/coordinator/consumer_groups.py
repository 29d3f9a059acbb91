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
  ``__consumer_offsets`` partition, and the response is released only once they are durable
  (:meth:`written`);
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

from groupcoord.coordinator.consumer.api import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupEvent,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupResult,
    DescribedGroup,
    TimerCancel,
    TimerSchedule,
)
from groupcoord.coordinator.consumer.group import ConsumerGroup, ConsumerGroupState
from groupcoord.coordinator.consumer.manager import ConsumerGroupManager
from groupcoord.coordinator.consumer.metadata import TopicsImage
from groupcoord.coordinator.consumer.records import ConsumerGroupRecord
from groupcoord.coordinator.consumer.validation import validate_heartbeat_request
from groupcoord.coordinator.context import DEAD, ShardContext
from groupcoord.coordinator.events import EventReason, GroupEvent
from groupcoord.coordinator.group import ClassicGroup
from groupcoord.coordinator.records import new_group_metadata_tombstone
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite
from groupcoord.coordinator.timers import ConsumerGroupTimer
from groupcoord.coordinator.writes import ConsumerGroupWrite
from groupcoord.errors import ErrorCode, KafkaError
from groupcoord.protocol.group_messages import ListedGroup

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

#: The core's causes (``ConsumerGroupEvent.cause``) as event reasons.
_REASONS = {
    "group-created": EventReason.GROUP_CREATED,
    "member-joined": EventReason.NEW_MEMBER_JOINED,
    "subscription-changed": EventReason.SUBSCRIPTION_CHANGED,
    "regex-changed": EventReason.REGEX_CHANGED,
    "regex-resolved": EventReason.REGEX_CHANGED,
    "metadata-changed": EventReason.TOPIC_METADATA_CHANGED,
    "member-left": EventReason.MEMBER_LEFT,
    "session-timeout": EventReason.SESSION_TIMEOUT,
    "rebalance-timeout": EventReason.REBALANCE_TIMEOUT,
}

#: The core's event kinds as (event type, reason when the cause does not name one).
_KINDS = {
    "epoch-bump": ("epoch_bump", EventReason.MEMBER_UPDATED),
    "member-joined": ("member_added", EventReason.NEW_MEMBER_JOINED),
    "member-left": ("member_removed", EventReason.MEMBER_LEFT),
    "member-fenced": ("member_removed", EventReason.FENCED),
    "reconciled": ("member_updated", EventReason.RECONCILED),
    "static-member-left-temporarily": ("member_updated", EventReason.STATIC_MEMBER_LEFT_TEMPORARILY),
    "static-member-replaced": ("member_added", EventReason.STATIC_MEMBER_REPLACED),
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
        self._undo: dict[str, _Undo] = {}
        self._taken: list[str] = []
        #: the group a call is about, if it did not exist before the call (the core registers
        #: a new group before it writes its records: undoing must remove it, not keep it empty)
        self._new_group: str | None = None

    # ------------------------------------------------------------------ one id, one group
    def is_classic_group(self, group_id: str) -> bool:
        """A live classic group with members holds the id (an empty one is replaced)."""
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
        self._new_group = None if gid in self.groups else gid
        try:
            result = self.manager.consumer_group_heartbeat(req, self._ctx.now())
        finally:
            self._new_group = None
        self._apply(out, gid, before, result, reply, replaces_classic and bool(result.records))
        return out

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
        self._apply(out, gid, before, result, None, False)

    def _schedule(self, timers: Iterable[TimerSchedule | TimerCancel]) -> None:
        timer = self._ctx.timer
        for t in timers:
            if isinstance(t, TimerSchedule):
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
        reply: Callable[[ConsumerGroupHeartbeatResponse], None] | None,
        replaces_classic: bool,
    ) -> None:
        taken = tuple(dict.fromkeys(self._taken))
        self._taken.clear()
        self._schedule(result.timers)
        self._emit(out, group_id, before, result.events)
        if not result.records:
            if reply is not None and result.response is not None:
                out.respond(reply, result.response)
            return
        for gid in taken:
            self._undo[gid].in_flight += 1
        records: list[object] = []
        if replaces_classic:
            records.append(new_group_metadata_tombstone(group_id))
        records.extend(result.records)
        write = ConsumerGroupWrite(taken, reply, result.response, replaces_classic)
        out.writes.append(PendingWrite(self._ctx.partition_for(group_id), tuple(records), write))

    def written(self, out: CoordinatorResult, write: ConsumerGroupWrite, error: ErrorCode) -> None:
        """A write of :meth:`_apply` is durable (``NONE``) or failed: answer, or undo and answer."""
        now = self._ctx.now()
        for gid in write.group_ids:
            undo = self._undo.get(gid)
            if undo is None:
                continue
            undo.in_flight -= 1
            if error is not ErrorCode.NONE and not undo.failed:
                undo.failed = True
                self._restore(out, gid, undo.snapshot, now)
            if undo.in_flight <= 0:
                del self._undo[gid]
        if error is ErrorCode.NONE:
            if write.classic_tombstone:
                for gid in write.group_ids:
                    classic = self._classic.get(gid)
                    if classic is not None and not classic.members:
                        _make_offsets_holder(classic)
            if write.reply is not None and write.response is not None:
                out.respond(write.reply, write.response)
            return
        code = _WRITE_ERRORS.get(error, error)
        log.warning("consumer group write of %s failed (%s): state restored", write.group_ids, error.name)
        if write.reply is not None:
            out.respond(write.reply, _error_response(code, None))

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
    ) -> None:
        after = self._state_of(group_id)
        if not self._ctx.emit_events:
            return
        # A state change's reason: the epoch bump's cause if there is one, else the first event's.
        bump: EventReason | None = None
        first: EventReason | None = None
        for e in events:
            type_, default = _KINDS.get(e.kind, ("member_updated", EventReason.MEMBER_UPDATED))
            why = _REASONS.get(e.cause, default)
            if e.kind == "epoch-bump" and bump is None:
                bump = why
            first = first or why
            out.events.append(self._event(e.group_id, type_, why, member_id=e.member_id, cause=e.cause))
        if before is None and after is not None:
            # created: Empty first, as a classic group is created (``group_created``)
            self._state_event(out, group_id, None, ConsumerGroupState.EMPTY, EventReason.GROUP_CREATED)
            before = ConsumerGroupState.EMPTY
        if before is not after:
            self._state_event(out, group_id, before, after, bump or first or EventReason.MEMBER_UPDATED)

    def _state_event(
        self,
        out: CoordinatorResult,
        group_id: str,
        before: ConsumerGroupState | None,
        after: ConsumerGroupState | None,
        reason: EventReason,
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
    ) -> GroupEvent:
        group = self.groups.get(group_id)
        member = group.member(member_id) if group is not None and member_id else None
        return GroupEvent(
            time_ms=self._ctx.now(),
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
