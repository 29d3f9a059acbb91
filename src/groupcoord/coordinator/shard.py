"""The group coordinator shard: a groups manager and an offsets manager, returning results.

Sans-I/O and single-threaded, as Kafka 4.x's ``GroupCoordinatorShard``, and composed as it is:
the groups manager (:class:`~groupcoord.coordinator.groups.GroupMetadataManager`, with the
classic protocol in :mod:`~groupcoord.coordinator.classic_group`) and the offsets manager
(:class:`~groupcoord.coordinator.offsets.OffsetManager`) each hold their state; this class routes
each request to the one that handles it, dispatches due timers and finished writes, replays
records by their kind, loads and unloads partitions, and does what needs both (DeleteGroups).

Every entry point (a request handler, :meth:`poll` for due timers, :meth:`complete_write` for a
finished write, :meth:`replay` and the load steps) returns a
:class:`~groupcoord.coordinator.result.CoordinatorResult`: the responses to complete now, the
records to write (each with what to do once it is durable), the events to publish. The shard
never calls a caller back; the runtime (:mod:`groupcoord.runtime`) applies the results.
A request handler takes the caller's ``reply`` handle and puts it in a result, at once or when
a later call completes the request (a parked JoinGroup or SyncGroup, an OffsetCommit waiting
for its write). Time comes from the injected clock; timers are keyed
(:mod:`groupcoord.coordinator.timers`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from groupcoord.clock import Clock
from groupcoord.coordinator.classic_messages import (
    join_error,
    with_rebalance_timeout,
)
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.consumer.api import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TimerSchedule,
)
from groupcoord.coordinator.consumer.api import DescribedGroup as ConsumerDescribedGroup
from groupcoord.coordinator.consumer.config import GroupOverrides
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.metadata import TopicsImage
from groupcoord.coordinator.consumer.records import ConsumerGroupRecord
from groupcoord.coordinator.context import DEAD, EMPTY, ShardContext
from groupcoord.coordinator.events import EventReason
from groupcoord.coordinator.group import ClassicGroup, CommittedOffset
from groupcoord.coordinator.groups import GroupMetadataManager
from groupcoord.coordinator.offset_messages import OPERATION_WRITE_ERRORS
from groupcoord.coordinator.offsets import OffsetManager
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    new_group_metadata_tombstone,
    new_offset_commit_tombstone,
)
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite, Shard
from groupcoord.coordinator.timers import (
    OFFSET_EXPIRY,
    ConsumerGroupTimer,
    DelayedHeartbeat,
    DelayedJoin,
    OffsetExpiry,
    PendingMemberExpiry,
    PendingSync,
)
from groupcoord.coordinator.writes import (
    AssignmentWrite,
    ConsumerGroupDeletionWrite,
    ConsumerGroupWrite,
    DeleteGroupsInFlight,
    EmptyGroupWrite,
    GroupDeletionWrite,
    OffsetCommitWrite,
    OffsetDeleteWrite,
    OffsetExpiryWrite,
    OffsetWrite,
    StaticMemberReplacementWrite,
    TxnOffsetCommitWrite,
)
from groupcoord.errors import ErrorCode, IllegalStateError, KafkaError
from groupcoord.protocol.group_messages import (
    DeleteGroupResult,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
)

log = logging.getLogger(__name__)


class GroupCoordinatorShard(Shard):
    """Args:
    config: the coordinator's settings.
    clock: protocol time (a manual clock in tests and the simulator).
    emit_events: build group events (a driver without an event sink asks for none).
    member_id_factory: makes a member id from a client id or instance id prefix.
    owned_partitions: the ``__consumer_offsets`` partitions led from the start (all by default;
        the broker's shards start with none and load theirs).
    image: the topics as the consumer groups see them (later ones: :meth:`on_metadata_update`).
    """

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        *,
        emit_events: bool = True,
        member_id_factory: Callable[[str], str] | None = None,
        owned_partitions: Iterable[int] | None = None,
        image: TopicsImage | None = None,
    ) -> None:
        ctx = self._ctx = ShardContext(
            config,
            clock,
            emit_events=emit_events,
            member_id_factory=member_id_factory,
            owned_partitions=owned_partitions,
        )
        #: The groups manager (the group table, the classic protocol).
        self.groups = GroupMetadataManager(ctx, image)
        #: The offsets manager.
        self.offsets = OffsetManager(ctx, self.groups, self._replay)
        self._classic = self.groups.classic
        self._rebalance = self.groups.rebalance
        self.timer = ctx.timer
        self.durable = []
        ctx.timer.schedule(OFFSET_EXPIRY, ctx.now() + config.offsets_retention_check_interval_ms, None)

    def _settle(self) -> None:
        """Take in the writes the runtime answered once durable (:attr:`Shard.durable`), in the
        order they became so. Every entry point starts here, so nothing reads the state before
        what was made durable is in it."""
        durable, self.durable = self.durable, []
        offsets = self.offsets
        for write in durable:
            done = write.completion
            if isinstance(done, OffsetWrite):
                offsets.take_durable_commit(write, done)
            elif isinstance(done, ConsumerGroupWrite):  # a success adds nothing to a result
                self.groups.consumer.written(CoordinatorResult(), done, ErrorCode.NONE)
            else:  # pragma: no cover - only these writes carry their answer
                raise IllegalStateError(f"a durable write with an answer of its own: {done!r}")

    # ================================================================== queries
    @property
    def config(self) -> GroupConfig:
        return self._ctx.config

    def group(self, group_id: str) -> ClassicGroup | None:
        """The live group object (read-only use: tests, describe, the simulator)."""
        if self.durable:
            self._settle()
        return self.groups.group(group_id)

    def all_groups(self) -> list[ClassicGroup]:
        if self.durable:
            self._settle()
        return self.groups.all_groups()

    def partition_for(self, group_id: str) -> int:
        return self._ctx.partition_for(group_id)

    def next_deadline(self) -> int | None:
        return self._ctx.timer.next_deadline()

    def describe_group(self, group_id: str) -> DescribedGroup:
        if self.durable:
            self._settle()
        return self.groups.describe_group(group_id)

    def list_groups_now(self, states_filter: Sequence[str] | None) -> ListGroupsResponse:
        """ListGroups of this shard's groups (a query: no result to apply)."""
        if self.durable:
            self._settle()
        return self.groups.list_groups(states_filter)

    def pending_transactional_offsets(self, group_id: str) -> dict[int, dict[tuple[str, int], int]]:
        """Producer id -> partition -> offset pending in its open transaction (tests, describe)."""
        if self.durable:
            self._settle()
        return self.offsets.pending_transactional_offsets(group_id)

    # ================================================================== requests
    # The classic protocol's requests for the id of a consumer group go to its classic members
    # (KIP-848's mixed groups, Kafka 4.1 ``classicGroup*ToConsumerGroup``); a JoinGroup to an
    # Empty consumer group first turns it back into a classic group.
    def _is_consumer_group(self, group_id: str) -> bool:
        # On every classic request: the consumer groups' table is looked at directly (their
        # module runs as Python beside this compiled one, and a call into it costs a Python
        # frame), and the coordinator status only for an id it holds.
        return group_id in self.groups.consumer.groups and self._ctx.status(group_id) is None

    def join_group(
        self, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        consumer = self.groups.consumer
        if req.group_id and self._is_consumer_group(req.group_id):
            cfg = self._ctx.config
            if (
                not cfg.group_min_session_timeout_ms
                <= req.session_timeout_ms
                <= cfg.group_max_session_timeout_ms
            ):
                out = CoordinatorResult()
                out.respond(reply, join_error(req.version, ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id))
                return out
            if consumer.groups[req.group_id].members:
                if req.version == 0:  # v0 has no rebalance timeout: the session timeout stands in
                    req = with_rebalance_timeout(req, req.session_timeout_ms)
                return consumer.classic_join(req, reply)
            out = CoordinatorResult()
            consumer.convert_empty_to_classic(out, req.group_id)
            return _merge(out, self._classic.handle_join_group(req, reply))
        return self._classic.handle_join_group(req, reply)

    def sync_group(
        self, req: SyncGroupRequest, reply: Callable[[SyncGroupResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        if req.group_id and self._is_consumer_group(req.group_id):
            return self.groups.consumer.classic_sync(req, reply)
        return self._classic.handle_sync_group(req, reply)

    def heartbeat(
        self, req: HeartbeatRequest, reply: Callable[[HeartbeatResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        if req.group_id and self._is_consumer_group(req.group_id):
            return self.groups.consumer.classic_heartbeat(req, reply)
        return self._classic.handle_heartbeat(req, reply)

    def leave_group(
        self, req: LeaveGroupRequest, reply: Callable[[LeaveGroupResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        if req.group_id and self._is_consumer_group(req.group_id):
            return self.groups.consumer.classic_leave(req, reply)
        return self._classic.handle_leave_group(req, reply)

    # ------------------------------------------------------------------ consumer groups (KIP-848)
    def consumer_group_heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, reply: Callable[[ConsumerGroupHeartbeatResponse], None]
    ) -> CoordinatorResult:
        """ConsumerGroupHeartbeat (68): answered once its records are durable."""
        if self.durable:
            self._settle()
        return self.groups.consumer.heartbeat(req, reply)

    def consumer_group_describe(self, group_id: str) -> ConsumerDescribedGroup:
        """One group of a ConsumerGroupDescribe (69): a query against the live state."""
        if self.durable:
            self._settle()
        return self.groups.consumer.describe(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The live consumer group (read-only use: tests, describe)."""
        if self.durable:
            self._settle()
        return self.groups.consumer.groups.get(group_id)

    def set_group_overrides(self, group_id: str, overrides: GroupOverrides | None) -> None:
        """A group's dynamic configs (GROUP resources): they apply from the next heartbeat."""
        self.groups.consumer.manager.set_group_overrides(group_id, overrides)

    def on_metadata_update(self, image: TopicsImage) -> CoordinatorResult:
        """New topics image: groups subscribed to a changed topic reassign on their next heartbeat."""
        if self.durable:
            self._settle()
        self.groups.consumer.on_metadata_update(image)
        return CoordinatorResult()

    def offset_commit(
        self, req: OffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        return self.offsets.handle_offset_commit(req, reply)

    def txn_offset_commit(
        self, req: TxnOffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        return self.offsets.handle_txn_offset_commit(req, reply)

    def offset_fetch(
        self, req: OffsetFetchRequest, reply: Callable[[OffsetFetchResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        return self.offsets.handle_offset_fetch(req, reply)

    def offset_delete(
        self, req: OffsetDeleteRequest, reply: Callable[[OffsetDeleteResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        return self.offsets.handle_offset_delete(req, reply)

    def describe_groups(
        self, group_ids: Sequence[str], reply: Callable[[DescribeGroupsResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        out = CoordinatorResult()
        out.respond(reply, self.groups.describe_groups(group_ids))
        return out

    def list_groups(
        self, states_filter: Sequence[str] | None, reply: Callable[[ListGroupsResponse], None]
    ) -> CoordinatorResult:
        if self.durable:
            self._settle()
        out = CoordinatorResult()
        out.respond(reply, self.groups.list_groups(states_filter))
        return out

    def delete_groups(
        self, group_ids: Sequence[str], reply: Callable[[DeleteGroupsResponse], None]
    ) -> CoordinatorResult:
        """Kafka's ``GroupCoordinatorShard.deleteGroups``: each Empty group's offsets and the
        group itself get tombstones (the offsets manager tracks the write as one that changes
        the group's offsets); the request is answered when every group's write has finished."""
        if self.durable:
            self._settle()
        out = CoordinatorResult()
        ctx = self._ctx
        request = DeleteGroupsInFlight(reply=reply, order=list(dict.fromkeys(group_ids)))
        results = request.results
        for group_id in request.order:
            status = ctx.status(group_id)
            group = self.groups.group(group_id)
            if status is not None:
                results[group_id] = status
            elif self.groups.consumer.holds(group_id):
                self._delete_consumer_group(out, group_id, request)
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
                group.transition_to(DEAD, ctx.now())
                keys = list(group.offsets)
                keys.extend(k for k in self.offsets.pending_commit_keys(group_id) if k not in group.offsets)
                keys.extend(k for k in self.offsets.txn_pending_keys(group_id) if k not in keys)
                records = [new_offset_commit_tombstone(group_id, t, p) for (t, p) in keys]
                records.append(new_group_metadata_tombstone(group_id))
                self.offsets.append_offset_write(
                    out, group_id, records, GroupDeletionWrite(group, before, request)
                )
        self._maybe_answer_delete_groups(out, request)
        return out

    def _delete_consumer_group(
        self, out: CoordinatorResult, group_id: str, request: DeleteGroupsInFlight
    ) -> None:
        """Kafka's ``deleteGroups`` for a consumer group: NON_EMPTY_GROUP unless it is Empty;
        else its offsets' tombstones, then its own (``ConsumerGroup.createGroupTombstoneRecords``),
        in one write; the group goes once they are durable."""
        try:
            tombstones = self.groups.consumer.manager.delete_group(group_id)
        except KafkaError as exc:
            request.results[group_id] = exc.code
            return
        holder = self.groups.group(group_id)
        keys = list(holder.offsets) if holder is not None else []
        keys.extend(k for k in self.offsets.pending_commit_keys(group_id) if k not in keys)
        records: list[object] = [new_offset_commit_tombstone(group_id, t, p) for (t, p) in keys]
        records.extend(tombstones)
        request.waiting.add(group_id)
        # The consumer group's own tombstones ride in the offsets manager's tracked write (the
        # runtime encodes either kind of record).
        self.offsets.append_offset_write(
            out,
            group_id,
            records,  # type: ignore[arg-type]
            ConsumerGroupDeletionWrite(group_id, request),
        )

    def _consumer_group_deletion_written(
        self,
        out: CoordinatorResult,
        write: ConsumerGroupDeletionWrite,
        records: Sequence[object],
        error: ErrorCode,
    ) -> None:
        gid = write.group_id
        if error is ErrorCode.NONE:
            consumer = self.groups.consumer
            for record in records:
                if isinstance(record, ConsumerGroupRecord):
                    consumer.replay(record)
                elif isinstance(record, CoordinatorRecord):
                    self._replay(out, record)
            holder = self.groups.group(gid)
            if holder is not None and not holder.offsets and not holder.members:
                self.groups.drop_group(gid)
            if self._ctx.emit_events:
                out.events.append(consumer.dead_event(gid))
            write.request.results[gid] = ErrorCode.NONE
        else:
            write.request.results[gid] = OPERATION_WRITE_ERRORS.get(error, error)
        write.request.waiting.discard(gid)
        self._maybe_answer_delete_groups(out, write.request)

    def _group_deletion_written(
        self,
        out: CoordinatorResult,
        write: GroupDeletionWrite,
        records: Sequence[CoordinatorRecord],
        error: ErrorCode,
    ) -> None:
        deleting = write.group
        gid = deleting.group_id
        results = write.request.results
        live = self.groups.group(gid) is deleting and deleting.state is DEAD
        if live:
            deleting.revert_state(write.restore)
        if error is ErrorCode.NONE:
            if live:
                self._ctx.transition(out, deleting, DEAD, EventReason.GROUP_DELETED)
            for record in records:
                self._replay(out, record)
            results[gid] = ErrorCode.NONE
        else:
            results[gid] = OPERATION_WRITE_ERRORS.get(error, error)
            log.warning(
                "group=%s deletion not persisted (%s): group kept, answered %s",
                gid,
                error.name,
                results[gid].name,
            )
        write.request.waiting.discard(gid)
        self._maybe_answer_delete_groups(out, write.request)

    @staticmethod
    def _maybe_answer_delete_groups(out: CoordinatorResult, request: DeleteGroupsInFlight) -> None:
        if request.waiting or request.answered or len(request.results) != len(request.order):
            return
        request.answered = True
        out.respond(
            request.reply,
            DeleteGroupsResponse(
                results=tuple(DeleteGroupResult(group_id=g, error=request.results[g]) for g in request.order)
            ),
        )

    # ================================================================== transactions
    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> CoordinatorResult:
        """The live path: a COMMIT (``commit``) or ABORT marker of ``producer_id`` is durable in
        ``__consumer_offsets`` partition ``partition``; its pending offsets there are put in
        place or dropped (deferred to the end of the partition's load if it is loading)."""
        if self.durable:
            self._settle()
        self.offsets.complete_transaction(partition, producer_id, commit)
        return CoordinatorResult()

    def replay_transactional(self, record: CoordinatorRecord, producer_id: int) -> CoordinatorResult:
        """Replay a record of a transactional batch of ``producer_id`` (loading)."""
        if self.durable:
            self._settle()
        out = CoordinatorResult()
        self.offsets.replay_transactional(out, record, producer_id)
        return out

    def replay_end_transaction(self, partition: int, producer_id: int, commit: bool) -> CoordinatorResult:
        """Replay a marker of ``producer_id`` read from ``partition`` (loading)."""
        if self.durable:
            self._settle()
        self.offsets.end_transaction(partition, producer_id, commit)
        return CoordinatorResult()

    # ================================================================== timers and writes
    def poll(self) -> CoordinatorResult:
        """Run every timer due at the clock's current time."""
        if self.durable:
            self._settle()
        out = CoordinatorResult()
        ctx = self._ctx
        rebalance = self._rebalance
        now = ctx.now()
        for key, payload in ctx.timer.expire(now):
            if type(key) is DelayedHeartbeat:
                rebalance.on_expire_heartbeat(out, key.group_id, key.member_id)
            elif type(key) is PendingMemberExpiry:
                rebalance.on_expire_pending_member(out, key.group_id, key.member_id)
            elif type(key) is DelayedJoin:
                rebalance.on_delayed_join(out, key.group_id, payload)
            elif type(key) is PendingSync:
                assert isinstance(payload, int)
                rebalance.on_expire_pending_sync(out, key.group_id, payload)
            elif type(key) is ConsumerGroupTimer:
                assert isinstance(payload, TimerSchedule)
                self.groups.consumer.on_timer(out, payload)
            elif type(key) is OffsetExpiry:
                ctx.timer.schedule(key, now + ctx.config.offsets_retention_check_interval_ms, None)
                self.offsets.expire_offsets(out)
            else:  # pragma: no cover - keys are all created in this package
                raise IllegalStateError(f"unknown timer key {key!r}")
        return out

    def complete_write(self, write: PendingWrite, error: ErrorCode) -> CoordinatorResult:
        """The runtime's report that ``write`` is durable (``NONE``) or failed with ``error``."""
        if self.durable:
            self._settle()
        out = CoordinatorResult()
        done = write.completion
        records = write.records
        if isinstance(done, OffsetWrite):
            offsets = self.offsets
            then = done.then
            if not isinstance(then, OffsetCommitWrite):
                offsets.offset_write_finished(done)
            if isinstance(then, OffsetCommitWrite):
                # Durable, the runtime answered it and the shard took it in above (durable
                # list); only a failed one is finished here.
                if error is not ErrorCode.NONE:
                    offsets.offset_write_finished(done)
                    offsets.offset_commit_failed(out, write, then, error)
            elif isinstance(then, TxnOffsetCommitWrite):
                offsets.txn_offset_commit_written(out, then, records, error)
            elif isinstance(then, OffsetDeleteWrite):
                offsets.offset_delete_written(out, then, records, error)
            elif isinstance(then, OffsetExpiryWrite):
                offsets.offset_expiry_written(out, then, records, error)
            elif isinstance(then, ConsumerGroupDeletionWrite):
                self._consumer_group_deletion_written(out, then, records, error)
            else:
                self._group_deletion_written(out, then, records, error)
            if offsets.stable_fetches_waiting:  # a require_stable OffsetFetch waits for some write
                offsets.wake_stable_fetches(out, done.token, done.group_id, error)
        elif isinstance(done, ConsumerGroupWrite):
            self.groups.consumer.written(out, done, error)
        elif isinstance(done, AssignmentWrite):
            self._classic.assignment_written(out, done, records, error)
        elif isinstance(done, EmptyGroupWrite):
            self._rebalance.empty_group_written(out, done, records, error)
        elif isinstance(done, StaticMemberReplacementWrite):
            self._classic.static_replacement_written(out, done, records, error)
        else:  # pragma: no cover - completions are all created in this package
            raise IllegalStateError(f"unknown write completion {done!r}")
        return out

    # ================================================================== records and loading
    def replay(self, record: CoordinatorRecord) -> CoordinatorResult:
        """Apply one record to the state: the one way durable state changes.

        Used while loading a partition (between :meth:`begin_loading` and
        :meth:`complete_loading`) and by tests; on the live path the managers replay a write's
        records themselves when the write completes.
        """
        if self.durable:
            self._settle()
        out = CoordinatorResult()
        self._replay(out, record)
        return out

    def _replay(self, out: CoordinatorResult, record: CoordinatorRecord) -> None:
        key = record.key
        value = record.value
        if isinstance(key, OffsetCommitKey):
            if value is not None and not isinstance(value, OffsetCommitValue):
                raise IllegalStateError(f"offset commit key with value {type(value).__name__}")
            self.offsets.replay(key, value)
        elif isinstance(key, GroupMetadataKey):
            if value is not None and not isinstance(value, GroupMetadataValue):
                raise IllegalStateError(f"group metadata key with value {type(value).__name__}")
            self.groups.replay(out, key, value)
        else:
            log.warning("skipping record with unknown key type %s", type(key).__name__)

    def replay_consumer_record(self, record: ConsumerGroupRecord) -> CoordinatorResult:
        """Apply one consumer-group record (types 3-8 and 16) while loading."""
        if self.durable:
            self._settle()
        self.groups.consumer.replay(record)
        return CoordinatorResult()

    def replay_offsets(
        self, group_id: str, offsets: Iterable[tuple[tuple[str, int], CommittedOffset]]
    ) -> None:
        """Bulk replay of a run of offset commits (see :meth:`OffsetManager.replay_offsets`)."""
        if self.durable:
            self._settle()
        self.offsets.replay_offsets(group_id, offsets)

    def begin_loading(self, partition: int) -> CoordinatorResult:
        """Start loading ``partition``: its groups answer COORDINATOR_LOAD_IN_PROGRESS until done."""
        if self.durable:
            self._settle()
        self._ctx.owned.add(partition)
        self._ctx.loading.add(partition)
        return CoordinatorResult()

    def complete_loading(self, partition: int) -> CoordinatorResult:
        if self.durable:
            self._settle()
        ctx = self._ctx
        if partition not in ctx.loading:
            raise IllegalStateError(f"partition {partition} is not loading")
        ctx.loading.discard(partition)
        out = CoordinatorResult()
        self.offsets.complete_loading(partition)
        self.groups.complete_loading(out, partition)
        return out

    def on_loaded(self) -> CoordinatorResult:
        """The runtime's report that the shard's partitions are replayed: their groups go live."""
        out = CoordinatorResult()
        for partition in sorted(self._ctx.loading):
            out = _merge(out, self.complete_loading(partition))
        return out

    def on_unloaded(self) -> CoordinatorResult:
        """The runtime's report that the shard's partitions are led elsewhere now."""
        out = CoordinatorResult()
        for partition in sorted(self._ctx.owned):
            out = _merge(out, self.unload_partition(partition))
        return out

    def unload_partition(self, partition: int) -> CoordinatorResult:
        """Leadership of ``partition`` lost: its groups die and parked requests get NOT_COORDINATOR."""
        if self.durable:
            self._settle()
        ctx = self._ctx
        ctx.owned.discard(partition)
        was_loading = partition in ctx.loading
        ctx.loading.discard(partition)
        out = CoordinatorResult()
        self.offsets.unload(partition)
        self.groups.unload(out, partition, was_loading)
        return out


def _merge(into: CoordinatorResult, more: CoordinatorResult) -> CoordinatorResult:
    into.responses.extend(more.responses)
    into.writes.extend(more.writes)
    into.events.extend(more.events)
    return into
