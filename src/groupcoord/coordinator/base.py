"""The shard's state and the helpers every handler uses.

:class:`ShardBase` holds what the coordinator shard owns: its groups, the
``__consumer_offsets`` partitions it leads or is loading, its keyed timer, the offset writes in
flight, and the result the current entry point is building. The handlers are split by
responsibility over a chain of classes, each adding one part of Kafka's coordinator:

``ShardBase`` (here) -> ``ClassicGroupHandlers`` (``classic_group.py``: join, sync, heartbeat,
leave, rebalance) -> ``OffsetHandlers`` (``offsets.py``: commit, fetch, delete, expiry) ->
``AdminHandlers`` (``admin.py``: describe, list, delete groups) -> ``ReplayHandlers``
(``replay.py``: replay and loading) -> ``GroupCoordinatorShard`` (``shard.py``: the entry
points, timer and write-completion dispatch).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from groupcoord.clock import Clock
from groupcoord.coordinator.api import (
    JoinGroupResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.events import EventReason, GroupEvent
from groupcoord.coordinator.group import (
    ClassicGroup,
    CommittedOffset,
    Member,
)
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    partition_for,
)
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite, Reply
from groupcoord.coordinator.state import GroupState
from groupcoord.coordinator.timers import (
    OFFSET_EXPIRY,
    DelayedHeartbeat,
    DelayedJoin,
    PendingMemberExpiry,
    PendingSync,
    TimerKey,
)
from groupcoord.coordinator.writes import (
    WriteCompletion,
)
from groupcoord.errors import ErrorCode
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
OFFSET_WRITE_ERRORS = {
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


# Kafka 4.x, for writes whose failure 3.x never reported (DeleteGroups):
# CoordinatorOperationExceptionHelper.handleOperationException.
OPERATION_WRITE_ERRORS = {
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
FETCH_WRITE_ERRORS = {
    **OPERATION_WRITE_ERRORS,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.NOT_COORDINATOR,
}


def map_offset_write_error(code: ErrorCode) -> ErrorCode:
    return OFFSET_WRITE_ERRORS.get(code, code)


def map_group_write_error(code: ErrorCode) -> ErrorCode:
    return GROUP_WRITE_ERRORS.get(code, code)


@dataclass(eq=False, slots=True)
class StableFetch:
    """A require_stable OffsetFetch waiting for the offset writes in flight when it arrived."""

    request: OffsetFetchRequest
    reply: Callable[[OffsetFetchResponse], None]
    waiting: set[int]
    errors: dict[str, ErrorCode]


@dataclass(eq=False, slots=True)
class PendingTxnOffset:
    """An offset committed inside a transaction (TxnOffsetCommit), durable but not yet ended.

    ``superseded``: a plain commit of the same partition was written after it, so a COMMIT
    marker must not put it in place (Kafka compares the records' log offsets:
    ``OffsetMetadataManager.replayEndTransactionMarker``; replay runs in log order, so a flag
    set when the later commit replays says the same).
    """

    offset: CommittedOffset
    superseded: bool = False


def default_member_id(prefix: str) -> str:
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


class ShardBase:
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
        self._new_member_id = member_id_factory or default_member_id
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
        self._stable_fetches: dict[int, list[StableFetch]] = {}
        # Transactional offset commits (KIP-98/447, Kafka 4.x OffsetMetadataManager's
        # pendingTransactionalOffsets and openTransactionsByGroup): producer id -> group ->
        # partition -> offset, durable but invisible until the transaction's marker; group ->
        # producer ids with such offsets; partition -> markers that came while it was loading.
        self._txn_offsets: dict[int, dict[str, dict[tuple[str, int], PendingTxnOffset]]] = {}
        self._open_txns: dict[str, set[int]] = {}
        self._deferred_markers: dict[int, list[tuple[int, bool]]] = {}
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
    def complete_and_schedule_next_heartbeat_expiration(
        self, group: ClassicGroup, member: Member, timeout_ms: int | None = None
    ) -> None:
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
    def _replay(self, record: CoordinatorRecord) -> None:
        """Apply one record (``replay.py``); declared here for the handlers that come before it."""
        raise NotImplementedError
