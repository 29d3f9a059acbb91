"""The classic group coordinator as a shard: handlers, timers and replay, returning results.

Sans-I/O and single-threaded, as Kafka 4.x's ``GroupCoordinatorShard``. Every entry point (a
request handler, :meth:`poll` for due timers, :meth:`complete_write` for a finished write,
:meth:`replay` and the load steps) returns a
:class:`~groupcoord.coordinator.result.CoordinatorResult`: the responses to complete now, the
records to write (each with what to do once it is durable), the events to publish. The shard
never calls a caller back; :mod:`groupcoord.runtime.coordinator_runtime` applies the results.
A request handler takes the caller's ``reply`` handle and puts it in a result, at once or when
a later call completes the request (a parked JoinGroup or SyncGroup, an OffsetCommit waiting
for its write). Time comes from the injected clock; timers are keyed
(:mod:`groupcoord.coordinator.timers`).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from groupcoord.clock import Clock
from groupcoord.coordinator import offsets as offsets_mod
from groupcoord.coordinator.api import (
    DeleteGroupResult,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsResponse,
    OffsetCommitPartitionResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopicResponse,
    OffsetDeletePartitionResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteTopicResponse,
    OffsetFetchGroup,
    OffsetFetchGroupResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopicResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.events import EventReason, GroupEvent
from groupcoord.coordinator.group import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    CommittedOffset,
    Member,
)
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    partition_for,
)
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite, Reply
from groupcoord.coordinator.state import GroupState, can_rebalance
from groupcoord.coordinator.timers import (
    OFFSET_EXPIRY,
    DelayedHeartbeat,
    DelayedJoin,
    InitialDelayedJoin,
    OffsetExpiry,
    PendingMemberExpiry,
    PendingSync,
    TimerKey,
)
from groupcoord.coordinator.writes import (
    AssignmentWrite,
    DeleteGroupsInFlight,
    EmptyGroupWrite,
    GroupDeletionWrite,
    OffsetCommitWrite,
    OffsetDeleteWrite,
    OffsetExpiryWrite,
    OffsetWrite,
    StaticMemberReplacementWrite,
    WriteCompletion,
)
from groupcoord.errors import ErrorCode, IllegalStateError
from groupcoord.gcutil import untrack
from groupcoord.timer import KeyedTimer

log = logging.getLogger(__name__)

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1

#: A ConsumerProtocolAssignment v0 with no partitions and null user data: what a member the
#: leader left out of a "consumer" group's assignment receives (clients parse it cleanly).
EMPTY_CONSUMER_ASSIGNMENT = bytes.fromhex("000000000000ffffffff")


# Write-error translation, reference §2.12 (offsets) and §2.13 (group metadata).
_OFFSET_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}
_GROUP_WRITE_ERRORS = {
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


# Kafka 4.x, for writes whose failure 3.x never reported (DeleteGroups):
# CoordinatorOperationExceptionHelper.handleOperationException.
_OPERATION_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}
# Kafka 4.x, for a require_stable OffsetFetch whose awaited write failed:
# GroupCoordinatorService.handleOffsetFetchException (then handleOperationException).
_FETCH_WRITE_ERRORS = {
    **_OPERATION_WRITE_ERRORS,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.NOT_COORDINATOR,
}


def map_offset_write_error(code: ErrorCode) -> ErrorCode:
    return _OFFSET_WRITE_ERRORS.get(code, code)


def map_group_write_error(code: ErrorCode) -> ErrorCode:
    return _GROUP_WRITE_ERRORS.get(code, code)


@dataclass(eq=False, slots=True)
class _StableFetch:
    """A require_stable OffsetFetch waiting for the offset writes in flight when it arrived."""

    request: OffsetFetchRequest
    reply: Callable[[OffsetFetchResponse], None]
    waiting: set[int]
    errors: dict[str, ErrorCode]


def _default_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


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


class GroupCoordinatorShard:
    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        *,
        emit_events: bool = True,
        member_id_factory: Callable[[str], str] | None = None,
        owned_partitions: Iterable[int] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock
        self._emit_events = emit_events
        self._new_member_id = member_id_factory or _default_member_id
        n = config.offsets_topic_num_partitions
        self._owned: set[int] = set(range(n)) if owned_partitions is None else set(owned_partitions)
        self._loading: set[int] = set()
        self._groups: dict[str, ClassicGroup] = {}
        self._partition_cache: dict[str, int] = {}
        self._timer: KeyedTimer[TimerKey, object] = KeyedTimer()
        #: The result the current entry point is building (see :meth:`_begin`).
        self._out = CoordinatorResult()
        # Offset writes in flight (soft state): group -> write tokens; group -> partition ->
        # commits of it being written (Kafka's pendingOffsetCommits); token -> stable fetches.
        self._write_tokens = itertools.count()
        self._offset_writes: dict[str, set[int]] = {}
        self._pending_commits: dict[str, dict[tuple[str, int], int]] = {}
        self._stable_fetches: dict[int, list[_StableFetch]] = {}
        self._timer.schedule(OFFSET_EXPIRY, self._now() + config.offsets_retention_check_interval_ms, None)

    # ================================================================== public queries
    @property
    def config(self) -> GroupConfig:
        return self._config

    def group(self, group_id: str) -> ClassicGroup | None:
        """The live group object (read-only use: tests, describe, the simulator)."""
        return self._groups.get(group_id)

    def groups(self) -> list[ClassicGroup]:
        return list(self._groups.values())

    def partition_for(self, group_id: str) -> int:
        p = self._partition_cache.get(group_id)
        if p is None:
            p = partition_for(group_id, self._config.offsets_topic_num_partitions)
            if len(self._partition_cache) > 100_000:
                self._partition_cache.clear()
            self._partition_cache[group_id] = p
        return p

    def next_deadline(self) -> int | None:
        return self._timer.next_deadline()

    def _poll(self) -> None:
        now = self._now()
        for key, payload in self._timer.expire(now):
            if type(key) is DelayedHeartbeat:
                self._on_heartbeat_expired(key.group_id, key.member_id)
            elif type(key) is PendingMemberExpiry:
                self._on_pending_member_expired(key.group_id, key.member_id)
            elif type(key) is DelayedJoin:
                self._on_join_timer(key.group_id, payload)
            elif type(key) is PendingSync:
                assert isinstance(payload, int)
                self._on_sync_expired(key.group_id, payload)
            elif type(key) is OffsetExpiry:
                self._timer.schedule(key, now + self._config.offsets_retention_check_interval_ms, None)
                self._expire_offsets()
            else:  # pragma: no cover - keys are all created in this package
                raise IllegalStateError(f"unknown timer key {key!r}")

    # ================================================================== entry points
    # Each runs one handler against a fresh result and returns it; see coordinator/result.py.
    def _begin(self) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        return out

    def join_group(
        self, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self.handle_join_group(req, reply)
        return out

    def sync_group(
        self, req: SyncGroupRequest, reply: Callable[[SyncGroupResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self.handle_sync_group(req, reply)
        return out

    def heartbeat(
        self, req: HeartbeatRequest, reply: Callable[[HeartbeatResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self.handle_heartbeat(req, reply)
        return out

    def leave_group(
        self, req: LeaveGroupRequest, reply: Callable[[LeaveGroupResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self.handle_leave_group(req, reply)
        return out

    def offset_commit(
        self, req: OffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self._handle_offset_commit(req, reply)
        return out

    def offset_fetch(
        self, req: OffsetFetchRequest, reply: Callable[[OffsetFetchResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self._handle_offset_fetch(req, reply)
        return out

    def offset_delete(
        self, req: OffsetDeleteRequest, reply: Callable[[OffsetDeleteResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self._handle_offset_delete(req, reply)
        return out

    def describe_groups(
        self, group_ids: Sequence[str], reply: Callable[[DescribeGroupsResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self._handle_describe_groups(group_ids, reply)
        return out

    def list_groups(
        self, states_filter: Sequence[str] | None, reply: Callable[[ListGroupsResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self._handle_list_groups(states_filter, reply)
        return out

    def delete_groups(
        self, group_ids: Sequence[str], reply: Callable[[DeleteGroupsResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self._handle_delete_groups(group_ids, reply)
        return out

    def poll(self) -> CoordinatorResult:
        """Run every timer due at the clock's current time."""
        out = self._begin()
        self._poll()
        return out

    def complete_write(self, write: PendingWrite, error: ErrorCode) -> CoordinatorResult:
        """The runtime's report that ``write`` is durable (``NONE``) or failed with ``error``."""
        out = self._begin()
        self._complete_write(write, error)
        return out

    def replay(self, record: CoordinatorRecord) -> CoordinatorResult:
        """Apply one record to the state: the one way durable state changes.

        Used while loading a partition (between :meth:`begin_loading` and
        :meth:`complete_loading`) and by tests; on the live path the shard replays a write's
        records itself when the write completes.
        """
        out = self._begin()
        self._replay(record)
        return out

    def begin_loading(self, partition: int) -> CoordinatorResult:
        """Start loading ``partition``: its groups answer COORDINATOR_LOAD_IN_PROGRESS until done."""
        out = self._begin()
        self._begin_loading(partition)
        return out

    def complete_loading(self, partition: int) -> CoordinatorResult:
        out = self._begin()
        self._complete_loading(partition)
        return out

    def unload_partition(self, partition: int) -> CoordinatorResult:
        """Leadership of ``partition`` lost: its groups die and parked requests get NOT_COORDINATOR."""
        out = self._begin()
        self._unload_partition(partition)
        return out

    def _respond(self, reply: Reply, response: object) -> None:
        self._out.responses.append((reply, response))

    # ================================================================== helpers
    def _now(self) -> int:
        return self._clock.now_ms()

    def _status(self, group_id: str) -> ErrorCode | None:
        """Coordinator-level checks, in Kafka's order: loading, then ownership."""
        p = self.partition_for(group_id)
        if p in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def _emit(
        self,
        group: ClassicGroup,
        type_: str,
        reason: EventReason,
        *,
        member: Member | None = None,
        member_id: str | None = None,
        from_state: GroupState | None = None,
        to_state: GroupState | None = None,
        client_reason: str | None = None,
    ) -> None:
        if not self._emit_events:
            return
        event = GroupEvent(
            time_ms=self._now(),
            group_id=group.group_id,
            generation=group.generation,
            type=type_,
            from_state=from_state.value if from_state is not None else None,
            to_state=to_state.value if to_state is not None else None,
            reason=reason,
            member_id=member_id if member_id is not None else (member.member_id if member else None),
            group_instance_id=member.group_instance_id if member else None,
            client_id=member.client_id if member else None,
            client_host=member.client_host if member else None,
            client_reason=client_reason,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            member_count=len(group.members),
        )
        self._out.events.append(event)

    def _transition(
        self,
        group: ClassicGroup,
        target: GroupState,
        reason: EventReason,
        *,
        member: Member | None = None,
        client_reason: str | None = None,
    ) -> None:
        source = group.transition_to(target, self._now())
        log.info(
            "group=%s generation=%d %s -> %s reason=%s",
            group.group_id,
            group.generation,
            source.value,
            target.value,
            reason.value,
        )
        self._emit(
            group,
            "state_change",
            reason,
            member=member,
            from_state=source,
            to_state=target,
            client_reason=client_reason,
        )

    def _append(
        self, group_id: str, records: Sequence[CoordinatorRecord], completion: WriteCompletion
    ) -> None:
        self._out.writes.append(PendingWrite(self.partition_for(group_id), tuple(records), completion))

    def _append_offset_write(
        self,
        group_id: str,
        records: Sequence[CoordinatorRecord],
        then: OffsetCommitWrite | OffsetDeleteWrite | OffsetExpiryWrite | GroupDeletionWrite,
        commits: Sequence[tuple[str, int]] = (),
    ) -> None:
        """Append a write that changes ``group_id``'s offsets, tracked until it completes.

        Meanwhile the partitions in ``commits`` count as pending commits (Kafka's
        ``pendingOffsetCommits``): expiry skips them and deletions write a tombstone for them;
        and a require_stable OffsetFetch of the group waits for the write.
        """
        token = next(self._write_tokens)
        self._offset_writes.setdefault(group_id, set()).add(token)
        if commits:
            pending = self._pending_commits.setdefault(group_id, {})
            for key in commits:
                pending[key] = pending.get(key, 0) + 1
        self._append(group_id, records, OffsetWrite(token, group_id, tuple(commits), then))

    def _complete_write(self, write: PendingWrite, error: ErrorCode) -> None:
        done = write.completion
        if isinstance(done, OffsetWrite):
            self._offset_write_finished(done)
            then = done.then
            if isinstance(then, OffsetCommitWrite):
                self._offset_commit_written(then, write.records, error)
            elif isinstance(then, OffsetDeleteWrite):
                self._offset_delete_written(then, write.records, error)
            elif isinstance(then, OffsetExpiryWrite):
                self._offset_expiry_written(then, write.records, error)
            else:
                self._group_deletion_written(then, write.records, error)
            self._wake_stable_fetches(done.token, done.group_id, error)
        elif isinstance(done, AssignmentWrite):
            self._assignment_written(done, write.records, error)
        elif isinstance(done, EmptyGroupWrite):
            self._empty_group_written(done, write.records, error)
        elif isinstance(done, StaticMemberReplacementWrite):
            self._static_replacement_written(done, write.records, error)
        else:  # pragma: no cover - completions are all created in this package
            raise IllegalStateError(f"unknown write completion {done!r}")

    def _offset_write_finished(self, write: OffsetWrite) -> None:
        group_id = write.group_id
        writes = self._offset_writes.get(group_id)
        if writes is not None:
            writes.discard(write.token)
            if not writes:
                del self._offset_writes[group_id]
        pending = self._pending_commits.get(group_id)
        if write.commits and pending is not None:
            for key in write.commits:
                n = pending.get(key, 0) - 1
                if n > 0:
                    pending[key] = n
                else:
                    pending.pop(key, None)
            if not pending:
                del self._pending_commits[group_id]

    def _wake_stable_fetches(self, token: int, group_id: str, error: ErrorCode) -> None:
        for fetch in self._stable_fetches.pop(token, ()):
            fetch.waiting.discard(token)
            if error is not ErrorCode.NONE:
                fetch.errors.setdefault(group_id, _FETCH_WRITE_ERRORS.get(error, error))
            if not fetch.waiting:
                self._respond(fetch.reply, self._offset_fetch_response(fetch.request, fetch.errors))

    def _reply_join(self, group: ClassicGroup, member: Member, response: JoinGroupResponse) -> None:
        reply = member.awaiting_join
        if reply is None:
            return
        group.set_awaiting_join(member, None)
        member.join_reason = None
        self._respond(reply, response)

    def _reply_sync(self, member: Member, response: SyncGroupResponse) -> None:
        reply = member.awaiting_sync
        if reply is None:
            return
        member.awaiting_sync = None
        self._respond(reply, response)

    # ---------------------------------------------------------------- heartbeats
    def _schedule_heartbeat(self, group: ClassicGroup, member: Member, timeout_ms: int | None = None) -> None:
        """Kafka's ``completeAndScheduleNextHeartbeatExpiration``."""
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self._timer.schedule(self._heartbeat_key(group, member), self._now() + timeout, None)

    @staticmethod
    def _heartbeat_key(group: ClassicGroup, member: Member) -> DelayedHeartbeat:
        key = member.heartbeat_key
        if key is None or key.member_id != member.member_id or key.group_id != group.group_id:
            key = member.heartbeat_key = DelayedHeartbeat(group.group_id, member.member_id)
        return key

    def _cancel_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        self._timer.cancel(DelayedHeartbeat(group.group_id, member_id))

    # ================================================================== JoinGroup
    def handle_join_group(self, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]) -> None:
        """Kafka's ``handleJoinGroup``."""
        v = req.version
        if not req.group_id:
            self._respond(reply, join_error(v, ErrorCode.INVALID_GROUP_ID, req.member_id))
            return
        status = self._status(req.group_id)
        if status is not None:
            self._respond(reply, join_error(v, status, req.member_id))
            return
        if v == 0:
            # JoinGroup v0 has no rebalance timeout: the session timeout stands in for it.
            req = _with_rebalance_timeout(req, req.session_timeout_ms)
        cfg = self._config
        if not (
            cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms
        ):
            self._respond(reply, join_error(v, ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id))
            return
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        group = self._groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                self._respond(reply, join_error(v, ErrorCode.UNKNOWN_MEMBER_ID, req.member_id))
                return
            group = ClassicGroup(req.group_id, self._now())
            self._groups[req.group_id] = group
            self._emit(group, "state_change", EventReason.GROUP_CREATED, to_state=EMPTY)

        if not self._accept_joining_member(group, req.member_id):
            self._reject_over_max_size(group, req)
            self._respond(reply, join_error(v, ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
        elif is_unknown:
            self._do_new_member_join_group(group, req, reply)
        else:
            self._do_current_member_join_group(group, req, reply)

        if group.state is PREPARING:
            self._maybe_complete_join(group)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
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

    def _reject_over_max_size(self, group: ClassicGroup, req: JoinGroupRequest) -> None:
        member = group.members.get(req.member_id)
        if member is not None:
            self._remove_member(
                group, member, EventReason.MAX_SIZE_EXCEEDED, answer_parked=ErrorCode.UNKNOWN_MEMBER_ID
            )
        group.pending_members.pop(req.member_id, None)
        self._timer.cancel(PendingMemberExpiry(group.group_id, req.member_id))
        log.info("group=%s member=%s rejected: group.max.size reached", group.group_id, req.member_id)

    def _do_new_member_join_group(
        self, group: ClassicGroup, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]
    ) -> None:
        """Kafka's ``doNewMemberJoinGroup`` (``doUnknownJoinGroup``)."""
        v = req.version
        if group.state is DEAD:
            self._respond(reply, join_error(v, ErrorCode.COORDINATOR_NOT_AVAILABLE, req.member_id))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            self._respond(reply, join_error(v, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
            return
        instance_id = req.group_instance_id
        new_member_id = self._new_member_id(instance_id if instance_id is not None else req.client_id)
        if instance_id is not None:
            old_member_id = group.static_members.get(instance_id)
            if old_member_id is not None:
                self._update_static_member_and_rebalance(group, old_member_id, new_member_id, req, reply)
            else:
                self._add_member_and_rebalance(group, req, new_member_id, reply)
        elif v >= 4:
            # KIP-394: hand out an id and wait for the member to come back with it.
            group.pending_members[new_member_id] = req.session_timeout_ms
            self._timer.schedule(
                PendingMemberExpiry(group.group_id, new_member_id), self._now() + req.session_timeout_ms, None
            )
            self._respond(reply, join_error(v, ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self._add_member_and_rebalance(group, req, new_member_id, reply)

    def _do_current_member_join_group(
        self, group: ClassicGroup, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]
    ) -> None:
        """Kafka's ``doCurrentMemberJoinGroup`` (``doJoinGroup``)."""
        v = req.version
        member_id = req.member_id
        if group.state is DEAD:
            self._respond(reply, join_error(v, ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            self._respond(reply, join_error(v, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                # Kafka treats this as an internal error (a pending id is never static).
                self._respond(reply, join_error(v, ErrorCode.UNKNOWN_SERVER_ERROR, member_id))
                return
            self._timer.cancel(PendingMemberExpiry(group.group_id, member_id))
            self._add_member_and_rebalance(group, req, member_id, reply)
            return
        error = self._validate_current_member(group, member_id, req.group_instance_id)
        if error is not None:
            self._respond(reply, join_error(v, error, member_id))
            return
        member = group.members[member_id]
        state = group.state
        if state is PREPARING:
            self._update_member_and_rebalance(
                group, member, req, reply, EventReason.MEMBER_REJOINED_WITH_NEW_METADATA
            )
        elif state is COMPLETING:
            if member.matches(req.protocols):
                # A resend of the JoinGroup the member already got an answer to.
                self._respond(
                    reply, self._join_response(group, member, with_members=group.is_leader(member_id))
                )
            else:
                self._update_member_and_rebalance(
                    group, member, req, reply, EventReason.MEMBER_REJOINED_WITH_NEW_METADATA
                )
        elif state is STABLE:
            if group.is_leader(member_id):
                self._update_member_and_rebalance(group, member, req, reply, EventReason.LEADER_REJOINED)
            elif not member.matches(req.protocols):
                self._update_member_and_rebalance(
                    group, member, req, reply, EventReason.MEMBER_REJOINED_WITH_NEW_METADATA
                )
            else:
                self._respond(reply, self._join_response(group, member, with_members=False))
        else:  # Empty: the member must reset its generation and rejoin
            self._respond(reply, join_error(v, ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _join_response(
        self,
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
                JoinGroupResponseMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=md
                )
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

    def _validate_current_member(
        self, group: ClassicGroup, member_id: str, instance_id: str | None
    ) -> ErrorCode | None:
        """Kafka's ``validateCurrentMember`` (static fencing, then membership)."""
        if instance_id is not None:
            mapped = group.static_members.get(instance_id)
            if mapped is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if mapped != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def _park_join(
        self,
        group: ClassicGroup,
        member: Member,
        req: JoinGroupRequest,
        reply: Callable[[JoinGroupResponse], None],
    ) -> None:
        previous = member.awaiting_join
        if previous is not None:
            # A retried JoinGroup supersedes the parked one: answer the old one now.
            group.set_awaiting_join(member, None)
            self._respond(
                previous, join_error(member.join_version, ErrorCode.REBALANCE_IN_PROGRESS, member.member_id)
            )
        group.set_awaiting_join(member, reply)
        member.join_version = req.version
        member.join_reason = req.reason

    def _add_member_and_rebalance(
        self,
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
        self._emit(
            group, "member_added", EventReason.NEW_MEMBER_JOINED, member=member, client_reason=req.reason
        )
        # KAFKA-7610: a parked new member cannot heartbeat; give it the new-member join timeout.
        self._schedule_heartbeat(group, member, self._config.group_new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(
            group, EventReason.NEW_MEMBER_JOINED, member=member, client_reason=req.reason
        )

    def _update_member_and_rebalance(
        self,
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
        self._park_join(group, member, req, reply)
        if changed:
            self._emit(
                group,
                "member_updated",
                EventReason.MEMBER_REJOINED_WITH_NEW_METADATA,
                member=member,
                client_reason=req.reason,
            )
        self._maybe_prepare_rebalance(group, reason, member=member, client_reason=req.reason)

    def _update_static_member_and_rebalance(
        self,
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
        self._reply_join(
            group, member, join_error(member.join_version, ErrorCode.FENCED_INSTANCE_ID, old_member_id)
        )
        self._reply_sync(member, sync_error(ErrorCode.FENCED_INSTANCE_ID))
        if fenced:
            self._emit(group, "member_updated", EventReason.FENCED, member=member, member_id=old_member_id)
        self._cancel_heartbeat(group, old_member_id)
        # Kafka's replaceStaticMember: the member keeps the client id and host it joined with.
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        self._schedule_heartbeat(group, member)
        group.update_protocols(member, req.protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        self._park_join(group, member, req, reply)
        self._emit(
            group,
            "member_updated",
            EventReason.STATIC_MEMBER_REPLACED,
            member=member,
            client_reason=req.reason,
        )

        state = group.state
        if state is STABLE:
            if group.select_protocol() == group.protocol_name:
                self._persist_static_replacement(
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
                self._maybe_prepare_rebalance(
                    group, EventReason.PROTOCOL_CHANGED, member=member, client_reason=req.reason
                )
        elif state is COMPLETING:
            # The leader may be assigning for the old id right now: start over.
            self._prepare_rebalance(
                group, EventReason.STATIC_MEMBER_REPLACED, member=member, client_reason=req.reason
            )
        elif state is PREPARING:
            pass  # parked; the handler tries to complete the join
        else:
            raise IllegalStateError(f"static member of {group.group_id} replaced in state {state.value}")

    def _persist_static_replacement(
        self,
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
        record = self._group_metadata_record(
            group, {m.member_id: m.assignment for m in group.members.values()}
        )
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
        self._append(group.group_id, [record], write)

    def _static_replacement_written(
        self, write: StaticMemberReplacementWrite, records: Sequence[CoordinatorRecord], error: ErrorCode
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
            self._cancel_heartbeat(group, new_member_id)
            group.replace_static_member(write.instance_id, new_member_id, write.old_member_id)
            self._schedule_heartbeat(group, member)
            if reply is not None:
                self._respond(
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
            self._replay(record)
        if write.join_version >= 9:
            is_leader = group.is_leader(new_member_id)
            response = self._join_response(group, member, with_members=is_leader, skip_assignment=is_leader)
        else:
            # Old clients get the old leader id, so a restarted static leader does not
            # compute an assignment the Stable group would never distribute.
            response = self._join_response(
                group, member, with_members=False, leader=write.current_leader or ""
            )
        self._reply_join(group, member, response)

    # ---------------------------------------------------------------- rebalance
    def _maybe_prepare_rebalance(
        self,
        group: ClassicGroup,
        reason: EventReason,
        *,
        member: Member | None = None,
        client_reason: str | None = None,
    ) -> None:
        if can_rebalance(group.state):
            self._prepare_rebalance(group, reason, member=member, client_reason=client_reason)
        elif group.state is PREPARING:
            self._maybe_complete_join(group)

    def _prepare_rebalance(
        self,
        group: ClassicGroup,
        reason: EventReason,
        *,
        member: Member | None = None,
        client_reason: str | None = None,
    ) -> None:
        if group.state is COMPLETING:
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._timer.cancel(PendingSync(group.group_id))
        group.pending_sync.clear()
        now = self._now()
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
        self._transition(group, PREPARING, reason, member=member, client_reason=client_reason)
        self._maybe_complete_join(group)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: ErrorCode) -> None:
        for m in group.members.values():
            m.assignment = b""
            self._reply_sync(m, sync_error(error))

    def _maybe_complete_join(self, group: ClassicGroup) -> None:
        """Complete the join phase early when everyone has rejoined (never during the initial delay)."""
        if group.state is PREPARING and group.all_members_joined() and group.previous_state is not EMPTY:
            self._timer.cancel(DelayedJoin(group.group_id))
            self._on_complete_join(group)

    def _on_join_timer(self, group_id: str, payload: object) -> None:
        group = self._groups.get(group_id)
        if group is None or group.state is not PREPARING:
            return
        if isinstance(payload, InitialDelayedJoin) and group.new_member_added and payload.remaining_ms != 0:
            group.new_member_added = False
            delay = min(self._config.group_initial_rebalance_delay_ms, payload.remaining_ms)
            remaining = max(payload.remaining_ms - payload.delay_ms, 0)
            self._timer.schedule(
                DelayedJoin(group_id), self._now() + delay, InitialDelayedJoin(delay, remaining)
            )
            return
        self._on_complete_join(group)

    def _on_complete_join(self, group: ClassicGroup) -> None:
        """Kafka's ``onCompleteJoin``: close the join phase and start the next generation."""
        for m in group.not_yet_rejoined():
            if not m.is_static:
                self._remove_member(group, m, EventReason.NOT_REJOINED_BEFORE_REBALANCE_TIMEOUT)
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
                DelayedJoin(group.group_id), self._now() + group.rebalance_timeout_ms(), None
            )
            return
        group.generation += 1
        group.pending_sync.clear()
        if group.members:
            group.protocol_name = group.select_protocol()
            group.subscribed_topics = offsets_mod.subscribed_topics(group)
            self._transition(group, COMPLETING, EventReason.JOIN_COMPLETED)
            for m in list(group.members.values()):
                response = self._join_response(group, m, with_members=group.is_leader(m.member_id))
                self._reply_join(group, m, response)
                self._schedule_heartbeat(group, m)
                m.is_new = False
                group.pending_sync.add(m.member_id)
            self._timer.schedule(
                PendingSync(group.group_id), self._now() + group.rebalance_timeout_ms(), group.generation
            )
        else:
            group.protocol_name = None
            group.subscribed_topics = offsets_mod.subscribed_topics(group)
            self._transition(group, EMPTY, EventReason.JOIN_COMPLETED)
            record = self._group_metadata_record(group, {})
            self._append(group.group_id, [record], EmptyGroupWrite(group, group.generation))

    def _empty_group_written(
        self, write: EmptyGroupWrite, records: Sequence[CoordinatorRecord], error: ErrorCode
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
                self._replay(record)

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
    def _remove_member(
        self,
        group: ClassicGroup,
        member: Member,
        reason: EventReason,
        *,
        answer_parked: ErrorCode = ErrorCode.UNKNOWN_MEMBER_ID,
        client_reason: str | None = None,
    ) -> None:
        """Drop a member without starting a rebalance; answers its parked requests."""
        self._reply_join(group, member, join_error(member.join_version, answer_parked, UNKNOWN_MEMBER_ID))
        self._reply_sync(member, sync_error(answer_parked))
        self._cancel_heartbeat(group, member.member_id)
        group.remove(member.member_id)
        self._emit(group, "member_removed", reason, member=member, client_reason=client_reason)
        if not group.pending_sync:
            self._timer.cancel(PendingSync(group.group_id))

    def _remove_member_and_update_group(
        self, group: ClassicGroup, member: Member, reason: EventReason, client_reason: str | None = None
    ) -> None:
        self._remove_member(group, member, reason, client_reason=client_reason)
        if group.state in (STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group, reason, member=member, client_reason=client_reason)
        elif group.state is PREPARING:
            self._maybe_complete_join(group)

    def _on_heartbeat_expired(self, group_id: str, member_id: str) -> None:
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
        self._remove_member_and_update_group(group, member, reason)

    def _on_pending_member_expired(self, group_id: str, member_id: str) -> None:
        group = self._groups.get(group_id)
        if group is None or member_id not in group.pending_members:
            return
        del group.pending_members[member_id]
        self._emit(group, "member_removed", EventReason.PENDING_MEMBER_EXPIRED, member_id=member_id)
        if group.state is PREPARING:
            self._maybe_complete_join(group)

    # ================================================================== SyncGroup
    def handle_sync_group(self, req: SyncGroupRequest, reply: Callable[[SyncGroupResponse], None]) -> None:
        if req.version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            self._respond(reply, sync_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        if not req.group_id:
            self._respond(reply, sync_error(ErrorCode.INVALID_GROUP_ID))
            return
        status = self._status(req.group_id)
        if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # 3.x: the rebalance state was lost with the load; make the member rejoin.
            self._respond(reply, sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
            return
        if status is not None:
            self._respond(reply, sync_error(status))
            return
        group = self._groups.get(req.group_id)
        if group is None:
            self._respond(reply, sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        if group.state is DEAD:
            self._respond(reply, sync_error(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        error = self._validate_current_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            self._respond(reply, sync_error(error))
            return
        if req.generation_id != group.generation:
            self._respond(reply, sync_error(ErrorCode.ILLEGAL_GENERATION))
            return
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
            req.protocol_name is not None and req.protocol_name != group.protocol_name
        ):
            self._respond(reply, sync_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        member = group.members[req.member_id]
        state = group.state
        if state is EMPTY:
            self._respond(reply, sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
        elif state is PREPARING:
            self._respond(reply, sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
        elif state is COMPLETING:
            if member.awaiting_sync is not None:
                self._reply_sync(member, sync_error(ErrorCode.REBALANCE_IN_PROGRESS))  # superseded
            member.awaiting_sync = reply
            self._remove_pending_sync_member(group, member.member_id)
            if group.is_leader(member.member_id):
                self._persist_leader_assignment(group, dict(req.assignments))
        else:  # Stable
            self._remove_pending_sync_member(group, member.member_id)
            self._schedule_heartbeat(group, member)
            self._respond(reply, self._sync_ok(group, member.assignment))

    def _sync_ok(self, group: ClassicGroup, assignment: bytes) -> SyncGroupResponse:
        return SyncGroupResponse(
            error=ErrorCode.NONE,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            assignment=assignment,
        )

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self._timer.cancel(PendingSync(group.group_id))

    def _persist_leader_assignment(self, group: ClassicGroup, given: dict[str, bytes]) -> None:
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
        record = self._group_metadata_record(group, assignments)
        self._append(group.group_id, [record], AssignmentWrite(group, group.generation))

    def _assignment_written(
        self, write: AssignmentWrite, records: Sequence[CoordinatorRecord], error: ErrorCode
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
                self._replay(record)
            for m in group.members.values():
                if m.awaiting_sync is not None:
                    self._reply_sync(m, self._sync_ok(group, m.assignment))
                    self._schedule_heartbeat(group, m)
            self._transition(group, STABLE, EventReason.ASSIGNMENT_PERSISTED)
        else:
            mapped = map_group_write_error(error)
            log.warning(
                "group=%s assignment not persisted: %s -> %s", group.group_id, error.name, mapped.name
            )
            self._reset_and_propagate_assignment_error(group, mapped)
            self._maybe_prepare_rebalance(group, EventReason.ASSIGNMENT_PERSIST_FAILED)

    def _on_sync_expired(self, group_id: str, generation: int) -> None:
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
            self._remove_member(group, m, EventReason.SYNC_TIMEOUT)
        group.pending_sync.clear()
        if group.state in (STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group, EventReason.SYNC_TIMEOUT)

    # ================================================================== Heartbeat
    def handle_heartbeat(self, req: HeartbeatRequest, reply: Callable[[HeartbeatResponse], None]) -> None:
        if not req.group_id:
            self._respond(reply, HeartbeatResponse(error=ErrorCode.INVALID_GROUP_ID))
            return
        status = self._status(req.group_id)
        if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            self._respond(reply, HeartbeatResponse(error=ErrorCode.NONE))  # respond blindly while loading
            return
        if status is not None:
            self._respond(reply, HeartbeatResponse(error=status))
            return
        group = self._groups.get(req.group_id)
        if group is None:
            self._respond(reply, HeartbeatResponse(error=ErrorCode.UNKNOWN_MEMBER_ID))
            return
        if group.state is DEAD:
            self._respond(reply, HeartbeatResponse(error=ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        error = self._validate_current_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            self._respond(reply, HeartbeatResponse(error=error))
            return
        if req.generation_id != group.generation:
            self._respond(reply, HeartbeatResponse(error=ErrorCode.ILLEGAL_GENERATION))
            return
        member = group.members[req.member_id]
        if group.state is EMPTY:
            self._respond(reply, HeartbeatResponse(error=ErrorCode.UNKNOWN_MEMBER_ID))
        elif group.state is PREPARING:
            self._schedule_heartbeat(group, member)
            self._respond(reply, HeartbeatResponse(error=ErrorCode.REBALANCE_IN_PROGRESS))
        else:
            self._schedule_heartbeat(group, member)
            self._respond(reply, HeartbeatResponse(error=ErrorCode.NONE))

    # ================================================================== LeaveGroup
    def handle_leave_group(self, req: LeaveGroupRequest, reply: Callable[[LeaveGroupResponse], None]) -> None:
        if not req.group_id:
            self._respond(reply, self._leave_response(req, ErrorCode.INVALID_GROUP_ID, ()))
            return
        status = self._status(req.group_id)
        if status is not None:
            self._respond(reply, self._leave_response(req, status, ()))
            return
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
            self._respond(reply, self._leave_response(req, ErrorCode.NONE, results))
            return
        if group.state is DEAD:
            self._respond(reply, self._leave_response(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, ()))
            return
        out = []
        for lm in req.members:
            error = self._leave_one(group, lm.member_id, lm.group_instance_id, lm.reason)
            out.append(
                LeaveGroupMemberResponse(
                    member_id=lm.member_id, group_instance_id=lm.group_instance_id, error=error
                )
            )
        self._respond(reply, self._leave_response(req, ErrorCode.NONE, tuple(out)))

    @staticmethod
    def _leave_response(
        req: LeaveGroupRequest, error: ErrorCode, members: tuple[LeaveGroupMemberResponse, ...]
    ) -> LeaveGroupResponse:
        if req.version <= 2 and error is ErrorCode.NONE:
            error = next((m.error for m in members if m.error is not ErrorCode.NONE), ErrorCode.NONE)
        return LeaveGroupResponse(error=error, members=members)

    def _leave_one(
        self, group: ClassicGroup, member_id: str, instance_id: str | None, reason: str | None
    ) -> ErrorCode:
        if member_id == UNKNOWN_MEMBER_ID and instance_id is not None:
            mapped = group.static_members.get(instance_id)
            if mapped is None or mapped not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_member_and_update_group(
                group, group.members[mapped], EventReason.MEMBER_LEFT, client_reason=reason
            )
            return ErrorCode.NONE
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            self._timer.cancel(PendingMemberExpiry(group.group_id, member_id))
            self._emit(
                group, "member_removed", EventReason.MEMBER_LEFT, member_id=member_id, client_reason=reason
            )
            if group.state is PREPARING:
                self._maybe_complete_join(group)
            return ErrorCode.NONE
        error = self._validate_current_member(group, member_id, instance_id)
        if error is not None:
            return error
        self._remove_member_and_update_group(
            group, group.members[member_id], EventReason.MEMBER_LEFT, client_reason=reason
        )
        return ErrorCode.NONE

    # ================================================================== OffsetCommit
    def _handle_offset_commit(
        self, req: OffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> None:

        def all_fail(error: ErrorCode) -> None:
            self._respond(reply, _commit_response(req, lambda _t, _p: error))

        status = self._status(req.group_id)
        if status is not None:
            all_fail(status)
            return
        group = self._groups.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                all_fail(ErrorCode.GROUP_ID_NOT_FOUND if req.version >= 9 else ErrorCode.ILLEGAL_GENERATION)
                return
            group = ClassicGroup(req.group_id, self._now())  # a "simple" group: offsets only
            self._groups[req.group_id] = group
            self._emit(group, "state_change", EventReason.GROUP_CREATED, to_state=EMPTY)
        error = self._validate_offset_commit(group, req)
        if error is not None:
            all_fail(error)
            return
        member = group.members.get(req.member_id)
        if member is not None and group.state in (STABLE, PREPARING):
            self._schedule_heartbeat(group, member)

        now = self._now()
        expire: int | None = None
        if 2 <= req.version <= 4 and req.retention_time_ms != -1:
            expire = now + req.retention_time_ms
        max_md = self._config.offset_metadata_max_bytes
        results: dict[tuple[str, int], ErrorCode] = {}
        records: list[CoordinatorRecord] = []
        for topic in req.topics:
            for p in topic.partitions:
                metadata = p.metadata or ""
                if offsets_mod.java_string_length(metadata) > max_md:
                    results[(topic.name, p.partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                    continue
                results[(topic.name, p.partition)] = ErrorCode.NONE
                epoch = p.leader_epoch if p.leader_epoch is not None and p.leader_epoch >= 0 else None
                records.append(
                    CoordinatorRecord(
                        key=OffsetCommitKey(group=req.group_id, topic=topic.name, partition=p.partition),
                        value=OffsetCommitValue(
                            offset=p.offset,
                            leader_epoch=epoch,
                            metadata=metadata,
                            commit_timestamp=now,
                            expire_timestamp=expire,
                        ),
                    )
                )
        if not records:
            self._respond(reply, _commit_response(req, lambda t, p: results[(t, p)]))
            return

        commits = [(k.topic, k.partition) for k in (r.key for r in records) if isinstance(k, OffsetCommitKey)]
        self._append_offset_write(req.group_id, records, OffsetCommitWrite(reply, req, results), commits)

    def _offset_commit_written(
        self, write: OffsetCommitWrite, records: Sequence[CoordinatorRecord], error: ErrorCode
    ) -> None:
        results = write.results
        if error is ErrorCode.NONE:
            for record in records:
                self._replay(record)
            self._respond(write.reply, _commit_response(write.request, lambda t, p: results[(t, p)]))
            return
        mapped = map_offset_write_error(error)
        self._respond(
            write.reply,
            _commit_response(
                write.request, lambda t, p: mapped if results[(t, p)] is ErrorCode.NONE else results[(t, p)]
            ),
        )

    def _validate_offset_commit(self, group: ClassicGroup, req: OffsetCommitRequest) -> ErrorCode | None:
        if group.state is DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and group.state is EMPTY:
            return None  # an admin / simple commit
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            error = self._validate_current_member(group, req.member_id, req.group_instance_id)
            if error is not None:
                return error
            if req.generation_id != group.generation:
                return ErrorCode.ILLEGAL_GENERATION
        else:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is COMPLETING:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    # ================================================================== OffsetFetch
    def _handle_offset_fetch(
        self, req: OffsetFetchRequest, reply: Callable[[OffsetFetchResponse], None]
    ) -> None:
        """With ``require_stable`` (KIP-447), as Kafka 4.x: wait for the group's offset writes in
        flight (those already started, not later ones), then read; a group whose awaited write
        failed answers that write's error (``GroupCoordinatorService.fetchOffsets``)."""
        if req.require_stable:
            waiting: set[int] = set()
            for g in req.groups:
                if self._status(g.group_id) is None:
                    waiting.update(self._offset_writes.get(g.group_id, ()))
            if waiting:
                fetch = _StableFetch(request=req, reply=reply, waiting=waiting, errors={})
                for token in waiting:
                    self._stable_fetches.setdefault(token, []).append(fetch)
                return
        self._respond(reply, self._offset_fetch_response(req, {}))

    def _offset_fetch_response(
        self, req: OffsetFetchRequest, errors: dict[str, ErrorCode]
    ) -> OffsetFetchResponse:
        return OffsetFetchResponse(
            groups=tuple(
                OffsetFetchGroupResponse(group_id=g.group_id, error=errors[g.group_id], topics=())
                if g.group_id in errors
                else self._fetch_one(g)
                for g in req.groups
            )
        )

    def _fetch_one(self, req: OffsetFetchGroup) -> OffsetFetchGroupResponse:
        status = self._status(req.group_id)
        if status is not None:
            return OffsetFetchGroupResponse(group_id=req.group_id, error=status, topics=())
        group = self._groups.get(req.group_id)
        stored = group.offsets if group is not None and group.state is not DEAD else {}

        def part(topic: str, partition: int) -> OffsetFetchPartitionResponse:
            o = stored.get((topic, partition))
            if o is None:
                return OffsetFetchPartitionResponse(
                    partition=partition, offset=-1, leader_epoch=None, metadata="", error=ErrorCode.NONE
                )
            return OffsetFetchPartitionResponse(
                partition=partition,
                offset=o.offset,
                leader_epoch=o.leader_epoch,
                metadata=o.metadata,
                error=ErrorCode.NONE,
            )

        if req.topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(stored):
                by_topic.setdefault(topic, []).append(partition)
            wanted = [(t, tuple(ps)) for t, ps in by_topic.items()]
        else:
            wanted = [(t.name, t.partitions) for t in req.topics]
        topics = tuple(
            OffsetFetchTopicResponse(name=name, partitions=tuple(part(name, p) for p in ps))
            for name, ps in wanted
        )
        return OffsetFetchGroupResponse(group_id=req.group_id, error=ErrorCode.NONE, topics=topics)

    # ================================================================== admin
    def _handle_describe_groups(
        self, group_ids: Sequence[str], reply: Callable[[DescribeGroupsResponse], None]
    ) -> None:
        self._respond(reply, DescribeGroupsResponse(groups=tuple(self._describe_one(g) for g in group_ids)))

    def _describe_one(self, group_id: str) -> DescribedGroup:
        def dead(error: ErrorCode) -> DescribedGroup:
            return DescribedGroup(
                group_id=group_id,
                error=error,
                state=DEAD.value,
                protocol_type="",
                protocol_data="",
                members=(),
            )

        status = self._status(group_id)
        if status is not None:
            return dead(status)
        group = self._groups.get(group_id)
        if group is None:
            return dead(ErrorCode.NONE)
        stable = group.state is STABLE
        members = tuple(
            DescribedMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return DescribedGroup(
            group_id=group_id,
            error=ErrorCode.NONE,
            state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=members,
        )

    def _handle_list_groups(
        self, states_filter: Sequence[str] | None, reply: Callable[[ListGroupsResponse], None]
    ) -> None:
        wanted = {s.lower() for s in states_filter} if states_filter else None
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._loading else ErrorCode.NONE
        out = []
        for group in self._groups.values():
            p = self.partition_for(group.group_id)
            if p in self._loading or p not in self._owned or group.state is DEAD:
                continue
            if wanted is not None and group.state.value.lower() not in wanted:
                continue
            out.append(
                ListedGroup(
                    group_id=group.group_id,
                    protocol_type=group.protocol_type or "",
                    group_state=group.state.value,
                )
            )
        self._respond(reply, ListGroupsResponse(error=error, groups=tuple(out)))

    def _handle_delete_groups(
        self, group_ids: Sequence[str], reply: Callable[[DeleteGroupsResponse], None]
    ) -> None:
        request = DeleteGroupsInFlight(reply=reply, order=list(dict.fromkeys(group_ids)))
        results = request.results
        for group_id in request.order:
            status = self._status(group_id)
            group = self._groups.get(group_id)
            if status is not None:
                results[group_id] = status
            elif group is None or group.state is DEAD:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state is not EMPTY:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                request.waiting.add(group_id)
                # Dead to other requests while the tombstones are written, but it dies (event,
                # log line) only once they are durable; if they fail, it is restored as it was,
                # as Kafka 4.x reverts to the last committed state. Offsets of commits still in
                # flight get a tombstone too, so none outlives the group in the log.
                before = group.state_snapshot()
                group.transition_to(DEAD, self._now())
                keys = list(group.offsets)
                keys.extend(k for k in self._pending_commits.get(group_id, {}) if k not in group.offsets)
                records = [
                    CoordinatorRecord(key=OffsetCommitKey(group=group_id, topic=t, partition=p), value=None)
                    for (t, p) in keys
                ]
                records.append(CoordinatorRecord(key=GroupMetadataKey(group=group_id), value=None))
                self._append_offset_write(group_id, records, GroupDeletionWrite(group, before, request))
        self._maybe_answer_delete_groups(request)

    def _group_deletion_written(
        self, write: GroupDeletionWrite, records: Sequence[CoordinatorRecord], error: ErrorCode
    ) -> None:
        deleting = write.group
        gid = deleting.group_id
        results = write.request.results
        live = self._groups.get(gid) is deleting and deleting.state is DEAD
        if live:
            deleting.revert_state(write.restore)
        if error is ErrorCode.NONE:
            if live:
                self._transition(deleting, DEAD, EventReason.GROUP_DELETED)
            for record in records:
                self._replay(record)
            results[gid] = ErrorCode.NONE
        else:
            results[gid] = _OPERATION_WRITE_ERRORS.get(error, error)
            log.warning(
                "group=%s deletion not persisted (%s): group kept, answered %s",
                gid,
                error.name,
                results[gid].name,
            )
        write.request.waiting.discard(gid)
        self._maybe_answer_delete_groups(write.request)

    def _maybe_answer_delete_groups(self, request: DeleteGroupsInFlight) -> None:
        if request.waiting or request.answered or len(request.results) != len(request.order):
            return
        request.answered = True
        self._respond(
            request.reply,
            DeleteGroupsResponse(
                results=tuple(DeleteGroupResult(group_id=g, error=request.results[g]) for g in request.order)
            ),
        )

    def _handle_offset_delete(
        self, req: OffsetDeleteRequest, reply: Callable[[OffsetDeleteResponse], None]
    ) -> None:
        if not req.group_id:
            # Kafka's isValidGroupId: only the offset and admin APIs accept "", not OffsetDelete.
            self._respond(reply, OffsetDeleteResponse(error=ErrorCode.INVALID_GROUP_ID, topics=()))
            return
        status = self._status(req.group_id)
        if status is not None:
            self._respond(reply, OffsetDeleteResponse(error=status, topics=()))
            return
        group = self._groups.get(req.group_id)
        if group is None or group.state is DEAD:
            self._respond(reply, OffsetDeleteResponse(error=ErrorCode.GROUP_ID_NOT_FOUND, topics=()))
            return
        # Kafka's isSubscribedToTopic: in a non-Empty consumer group an unknown subscription
        # (None: unparsable, or no generation yet) counts every topic as subscribed.
        subscribed: frozenset[str] | None = frozenset()
        if group.state is not EMPTY:
            if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                self._respond(reply, OffsetDeleteResponse(error=ErrorCode.NON_EMPTY_GROUP, topics=()))
                return
            subscribed = group.subscribed_topics

        def is_subscribed(topic: str) -> bool:
            return subscribed is None or topic in subscribed

        pending = self._pending_commits.get(req.group_id, {})
        records: list[CoordinatorRecord] = []
        for t in req.topics:
            if is_subscribed(t.name):
                continue
            for p in t.partitions:
                if (t.name, p) in group.offsets or (t.name, p) in pending:
                    records.append(
                        CoordinatorRecord(
                            key=OffsetCommitKey(group=req.group_id, topic=t.name, partition=p), value=None
                        )
                    )

        write = OffsetDeleteWrite(reply, req, subscribed)
        if not records:
            self._offset_delete_written(write, (), ErrorCode.NONE)
            return
        self._append_offset_write(req.group_id, records, write)

    def _offset_delete_written(
        self, write: OffsetDeleteWrite, records: Sequence[CoordinatorRecord], error: ErrorCode
    ) -> None:
        if error is ErrorCode.NONE:
            for record in records:
                self._replay(record)
        write_error = map_offset_write_error(error)
        subscribed = write.subscribed
        topics = tuple(
            OffsetDeleteTopicResponse(
                name=t.name,
                partitions=tuple(
                    OffsetDeletePartitionResponse(
                        partition=p,
                        error=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                        if subscribed is None or t.name in subscribed
                        else write_error,
                    )
                    for p in t.partitions
                ),
            )
            for t in write.request.topics
        )
        self._respond(write.reply, OffsetDeleteResponse(error=ErrorCode.NONE, topics=topics))

    # ================================================================== offset expiry
    def _expire_offsets(self) -> None:
        now = self._now()
        retention = self._config.offsets_retention_ms
        for group in list(self._groups.values()):
            p = self.partition_for(group.group_id)
            if p in self._loading or p not in self._owned or group.state is DEAD:
                continue
            pending = self._pending_commits.get(group.group_id, {})
            expired = offsets_mod.expired_offsets(group, now, retention, pending)
            records = [
                CoordinatorRecord(
                    key=OffsetCommitKey(group=group.group_id, topic=t, partition=part), value=None
                )
                for (t, part) in expired
            ]
            becomes_dead = (
                group.state is EMPTY
                and len(expired) == len(group.offsets)
                and not group.pending_members
                and not pending
            )
            if becomes_dead and group.generation > 0:
                records.append(CoordinatorRecord(key=GroupMetadataKey(group=group.group_id), value=None))
            if not records:
                if becomes_dead:
                    self._remove_expired_group(group)
                continue
            if becomes_dead:
                # Dead to other requests while its tombstones are written; removed once they are
                # durable, kept (and retried next cycle) if they fail, as the log still has it.
                write = OffsetExpiryWrite(group, removes_group=True, restore=group.state_snapshot())
                group.transition_to(DEAD, now)
            else:
                write = OffsetExpiryWrite(group, removes_group=False, restore=None)
            self._append_offset_write(group.group_id, records, write)

    def _offset_expiry_written(
        self, write: OffsetExpiryWrite, records: Sequence[CoordinatorRecord], error: ErrorCode
    ) -> None:
        group = write.group
        live = self._groups.get(group.group_id) is group
        if write.restore is not None and live and group.state is DEAD:
            group.revert_state(write.restore)
        if error is not ErrorCode.NONE:
            log.warning(
                "group=%s expired offsets not deleted (%s); retried next cycle", group.group_id, error.name
            )
            return
        if write.removes_group and live:
            # Nothing reached the group meanwhile: a Dead group takes no commit and no join.
            self._remove_expired_group(group)
        for record in records:
            self._replay(record)

    def _remove_expired_group(self, group: ClassicGroup) -> None:
        log.info("group=%s empty with no offsets left: removing", group.group_id)
        self._transition(group, DEAD, EventReason.OFFSETS_EXPIRED)
        self._drop_group(group.group_id)

    def _drop_group(self, group_id: str) -> None:
        group = self._groups.pop(group_id, None)
        if group is None:
            return
        self._timer.cancel(DelayedJoin(group_id))
        self._timer.cancel(PendingSync(group_id))
        for member_id in group.members:
            self._cancel_heartbeat(group, member_id)
        for member_id in group.pending_members:
            self._timer.cancel(PendingMemberExpiry(group_id, member_id))

    # ================================================================== records and replay
    def _group_metadata_record(self, group: ClassicGroup, assignments: dict[str, bytes]) -> CoordinatorRecord:
        protocol = group.protocol_name
        members = tuple(
            MemberMetadataRecord(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(protocol) if protocol is not None else b"",
                assignment=assignments.get(m.member_id, b""),
            )
            for m in group.members.values()
        )
        return CoordinatorRecord(
            key=GroupMetadataKey(group=group.group_id),
            value=GroupMetadataValue(
                protocol_type=group.protocol_type or "",
                generation=group.generation,
                protocol=protocol,
                leader=group.leader_id if group.members else None,
                current_state_timestamp=group.state_timestamp,
                members=members,
            ),
        )

    def _replay(self, record: CoordinatorRecord) -> None:
        """Apply one record to the state: the one way durable state changes.

        Used on the live path (after the sink confirms a write) and while loading a
        partition (between :meth:`begin_loading` and :meth:`complete_loading`).
        """
        key = record.key
        value = record.value
        if isinstance(key, OffsetCommitKey):
            group = self._groups.get(key.group)
            if value is None:
                if group is not None:
                    group.offsets.pop((key.topic, key.partition), None)
                return
            if not isinstance(value, OffsetCommitValue):
                raise IllegalStateError(f"offset commit key with value {type(value).__name__}")
            if group is None:
                group = ClassicGroup(key.group, value.commit_timestamp)
                group.state_timestamp = None
                self._groups[key.group] = group
            # Numbers and a string, alive until the next commit of the partition: the cyclic
            # collector would only walk it (groupcoord.gcutil).
            group.offsets[(key.topic, key.partition)] = untrack(
                CommittedOffset(
                    offset=value.offset,
                    leader_epoch=value.leader_epoch,
                    metadata=value.metadata,
                    commit_timestamp=value.commit_timestamp,
                    expire_timestamp=value.expire_timestamp,
                )
            )
            return
        if not isinstance(key, GroupMetadataKey):
            log.warning("skipping record with unknown key type %s", type(key).__name__)
            return
        loading = self.partition_for(key.group) in self._loading
        if value is None:
            group = self._groups.get(key.group)
            if group is not None and (loading or group.state is DEAD):
                self._drop_group(key.group)
                if loading and group.offsets:
                    # As Kafka's loader: offsets outlive a group tombstone; they load as a
                    # simple (offsets-only) group.
                    simple = ClassicGroup(key.group, self._now())
                    simple.state_timestamp = None
                    simple.offsets = group.offsets
                    self._groups[key.group] = simple
            return
        if not isinstance(value, GroupMetadataValue):
            raise IllegalStateError(f"group metadata key with value {type(value).__name__}")
        group = self._groups.get(key.group)
        if group is not None and not loading and group.state is not DEAD:
            self._apply_group_metadata(group, value)
            return
        fresh = self._group_from_record(key.group, value)
        if group is not None:
            fresh.offsets = group.offsets
            self._drop_group(key.group)
        self._groups[key.group] = fresh
        if not loading:
            self._activate_loaded_group(fresh)

    def replay_offsets(
        self, group_id: str, offsets: Iterable[tuple[tuple[str, int], CommittedOffset]]
    ) -> None:
        """Replay a run of offset commits of ``group_id``, in log order, for a bulk loader.

        The same as replaying each commit record (:meth:`replay`): the offsets-only group a
        commit creates if there is none, then each ``(topic, partition) -> offset`` assigned in
        order. A commit replay produces no responses, writes or events, so nothing is returned.
        """
        group = self._groups.get(group_id)
        if group is None:
            group = ClassicGroup(group_id, 0)
            group.state_timestamp = None  # as replay() of a commit: not a group record's timestamp
            self._groups[group_id] = group
        group.offsets.update(offsets)

    def _apply_group_metadata(self, group: ClassicGroup, value: GroupMetadataValue) -> None:
        """Live path: the record confirms what the in-memory group already decided."""
        if value.generation < group.generation:
            return  # the group has moved past this record while it was being written
        group.generation = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        if value.leader is not None:
            group.leader_id = value.leader
        for rec in value.members:
            member = group.members.get(rec.member_id)
            if member is not None:
                member.assignment = rec.assignment

    def _group_from_record(self, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        group = ClassicGroup(group_id, self._now())
        group.state_timestamp = value.current_state_timestamp
        group.generation = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        for rec in value.members:
            protocols = ((value.protocol, rec.subscription),) if value.protocol is not None else ()
            member = Member(
                member_id=rec.member_id,
                group_instance_id=rec.group_instance_id,
                client_id=rec.client_id,
                client_host=rec.client_host,
                rebalance_timeout_ms=rec.rebalance_timeout
                if rec.rebalance_timeout >= 0
                else rec.session_timeout,
                session_timeout_ms=rec.session_timeout,
                protocol_type=value.protocol_type,
                protocols=protocols,
                assignment=rec.assignment,
            )
            group.add(member)
        group.protocol_type = value.protocol_type or None
        group.leader_id = value.leader if value.leader in group.members else next(iter(group.members), None)
        group.subscribed_topics = offsets_mod.subscribed_topics(group)
        return group

    def _activate_loaded_group(self, group: ClassicGroup) -> None:
        """Loaded groups become Stable (with members) or Empty; members get fresh sessions."""
        target = STABLE if group.members else EMPTY
        group.state = target
        group.previous_state = None
        self._emit(group, "state_change", EventReason.LOADED, to_state=target)
        for m in group.members.values():
            self._schedule_heartbeat(group, m)
        if len(group.members) > self._config.group_max_size:
            log.info(
                "group=%s loaded with %d members > group.max.size: rebalancing",
                group.group_id,
                len(group.members),
            )
            self._prepare_rebalance(group, EventReason.MAX_SIZE_EXCEEDED)

    def _begin_loading(self, partition: int) -> None:
        """Start loading ``partition``: its groups answer COORDINATOR_LOAD_IN_PROGRESS until done."""
        self._owned.add(partition)
        self._loading.add(partition)

    def _complete_loading(self, partition: int) -> None:
        if partition not in self._loading:
            raise IllegalStateError(f"partition {partition} is not loading")
        self._loading.discard(partition)
        cached = self._partition_cache.get  # called once per partition for every group: inline
        for group in list(self._groups.values()):
            if group.previous_state is None and group.state is EMPTY:
                p = cached(group.group_id)
                if p is None:
                    p = self.partition_for(group.group_id)
                if p == partition:
                    self._activate_loaded_group(group)

    def _unload_partition(self, partition: int) -> None:
        """Leadership of ``partition`` lost: its groups die and parked requests get NOT_COORDINATOR."""
        self._owned.discard(partition)
        was_loading = partition in self._loading
        self._loading.discard(partition)
        for group in list(self._groups.values()):
            if self.partition_for(group.group_id) != partition:
                continue
            if was_loading:
                self._drop_group(group.group_id)  # never became visible
                continue
            for m in list(group.members.values()):
                self._reply_join(group, m, join_error(m.join_version, ErrorCode.NOT_COORDINATOR, m.member_id))
                self._reply_sync(m, sync_error(ErrorCode.NOT_COORDINATOR))
            if group.state is not DEAD:
                self._transition(group, DEAD, EventReason.COORDINATOR_UNLOADED)
            self._drop_group(group.group_id)


def _with_rebalance_timeout(req: JoinGroupRequest, rebalance_timeout_ms: int) -> JoinGroupRequest:
    from dataclasses import replace

    return replace(req, rebalance_timeout_ms=rebalance_timeout_ms)


def _commit_response(
    req: OffsetCommitRequest, error_of: Callable[[str, int], ErrorCode]
) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        topics=tuple(
            OffsetCommitTopicResponse(
                name=t.name,
                partitions=tuple(
                    OffsetCommitPartitionResponse(partition=p.partition, error=error_of(t.name, p.partition))
                    for p in t.partitions
                ),
            )
            for t in req.topics
        )
    )
