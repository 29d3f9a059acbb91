"""The runtime that applies a :class:`GroupCoordinatorShard`'s results.

The shard decides; this module acts. Each call into the runtime runs one shard entry point
and applies the :class:`~groupcoord.coordinator.result.CoordinatorResult` it returns
(Kafka 4.x's ``CoordinatorRuntime`` does the same for its shards):

1. events go to the event sink;
2. responses are completed, in the order the shard produced them;
3. each pending write's records go to the record sink (``__consumer_offsets`` in the broker, a
   list in tests and the simulator); when the sink reports the write durable or failed, the
   write goes back to the shard (``complete_write``) and that result is applied in turn.

A response callback may call straight back into the runtime (the next request of a connection,
a client's immediate rejoin). The shard is consistent between entry points, so that is safe;
responses produced meanwhile are queued behind the ones being delivered, so every caller sees
its responses in the order the shard produced them.

The same class serves the broker (``runtime/group_runtime.py`` gives it a sink that writes the
log and confirms on fsync) and every in-process driver (tests, the member-core world, the
simulator), which give it a sink that is durable at once, like Kafka's shard test contexts.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from groupcoord.clock import Clock
from groupcoord.coordinator.api import (
    DeleteGroupsResponse,
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
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.group import ClassicGroup, CommittedOffset
from groupcoord.coordinator.records import CoordinatorRecord
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.errors import ErrorCode


class RecordSink(Protocol):
    def append(
        self,
        partition: int,
        records: Sequence[CoordinatorRecord],
        done: Callable[[ErrorCode], None],
    ) -> None:
        """Write ``records`` to ``__consumer_offsets`` partition ``partition``.

        Call ``done(ErrorCode.NONE)`` once durable, or ``done(<storage error>)`` on failure;
        ``done`` may be called synchronously inside ``append`` or later.
        """
        ...


class TransactionalRecordSink(Protocol):
    def append_transactional(
        self,
        partition: int,
        records: Sequence[CoordinatorRecord],
        producer_id: int,
        producer_epoch: int,
        done: Callable[[ErrorCode], None],
    ) -> None:
        """As :meth:`RecordSink.append`, in a transactional batch of the producer (TxnOffsetCommit).

        A sink without this method takes transactional writes through ``append``.
        """
        ...


#: :meth:`TransactionalRecordSink.append_transactional` as a bound method.
TransactionalAppend = Callable[
    [int, Sequence[CoordinatorRecord], int, int, Callable[[ErrorCode], None]], None
]


class CoordinatorRuntime:
    """One shard, its record sink and its event sink; the coordinator API its callers use.

    Args:
        config: the coordinator's settings.
        clock: protocol time (a manual clock in tests and the simulator).
        record_sink: where writes go (see :class:`RecordSink`).
        event_sink: receives every :class:`GroupEvent`; without one, none is built.
        member_id_factory: makes a member id from a client id or instance id prefix.
        owned_partitions: the ``__consumer_offsets`` partitions led from the start (all by
            default; the broker starts with none and loads each).
    """

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        *,
        record_sink: RecordSink,
        event_sink: Callable[[GroupEvent], None] | None = None,
        member_id_factory: Callable[[str], str] | None = None,
        owned_partitions: Iterable[int] | None = None,
    ) -> None:
        self.shard = GroupCoordinatorShard(
            config,
            clock,
            emit_events=event_sink is not None,
            member_id_factory=member_id_factory,
            owned_partitions=owned_partitions,
        )
        self._sink = record_sink
        self._event_sink = event_sink
        self._replies: deque[tuple[Callable[[Any], None], Any]] = deque()
        self._delivering = False

    # ------------------------------------------------------------------ applying results
    def _apply(self, result: CoordinatorResult) -> None:
        if result.events and self._event_sink is not None:
            for event in result.events:
                self._event_sink(event)
        if result.responses:
            self._replies.extend(result.responses)
        for write in result.writes:
            # Looked up, not isinstance-checked: a runtime-checkable protocol is not usable from
            # compiled code (setup.py), and a sink need not declare the protocol it implements.
            append_transactional: TransactionalAppend | None = (
                getattr(self._sink, "append_transactional", None) if write.producer_id >= 0 else None
            )
            if append_transactional is not None:
                append_transactional(
                    write.partition,
                    write.records,
                    write.producer_id,
                    write.producer_epoch,
                    functools.partial(self._written, write),
                )
                continue
            self._sink.append(write.partition, write.records, functools.partial(self._written, write))
        if self._replies and not self._delivering:
            self._deliver()

    def _written(self, write: PendingWrite, error: ErrorCode) -> None:
        self._apply(self.shard.complete_write(write, error))

    def _deliver(self) -> None:
        self._delivering = True
        try:
            replies = self._replies
            while replies:
                reply, response = replies.popleft()
                reply(response)
        finally:
            self._delivering = False

    # ------------------------------------------------------------------ requests
    def join_group(self, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]) -> None:
        self._apply(self.shard.join_group(req, reply))

    def sync_group(self, req: SyncGroupRequest, reply: Callable[[SyncGroupResponse], None]) -> None:
        self._apply(self.shard.sync_group(req, reply))

    def heartbeat(self, req: HeartbeatRequest, reply: Callable[[HeartbeatResponse], None]) -> None:
        self._apply(self.shard.heartbeat(req, reply))

    def leave_group(self, req: LeaveGroupRequest, reply: Callable[[LeaveGroupResponse], None]) -> None:
        self._apply(self.shard.leave_group(req, reply))

    def offset_commit(self, req: OffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]) -> None:
        self._apply(self.shard.offset_commit(req, reply))

    def txn_offset_commit(
        self, req: TxnOffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> None:
        self._apply(self.shard.txn_offset_commit(req, reply))

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker of ``producer_id`` is durable in ``partition`` (live path)."""
        self._apply(self.shard.complete_transaction(partition, producer_id, commit))

    def replay_transactional(self, record: CoordinatorRecord, producer_id: int) -> None:
        self._apply(self.shard.replay_transactional(record, producer_id))

    def replay_end_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        self._apply(self.shard.replay_end_transaction(partition, producer_id, commit))

    def offset_fetch(self, req: OffsetFetchRequest, reply: Callable[[OffsetFetchResponse], None]) -> None:
        self._apply(self.shard.offset_fetch(req, reply))

    def offset_delete(self, req: OffsetDeleteRequest, reply: Callable[[OffsetDeleteResponse], None]) -> None:
        self._apply(self.shard.offset_delete(req, reply))

    def describe_groups(
        self, group_ids: Sequence[str], reply: Callable[[DescribeGroupsResponse], None]
    ) -> None:
        self._apply(self.shard.describe_groups(group_ids, reply))

    def list_groups(
        self, states_filter: Sequence[str] | None, reply: Callable[[ListGroupsResponse], None]
    ) -> None:
        self._apply(self.shard.list_groups(states_filter, reply))

    def delete_groups(self, group_ids: Sequence[str], reply: Callable[[DeleteGroupsResponse], None]) -> None:
        self._apply(self.shard.delete_groups(group_ids, reply))

    # ------------------------------------------------------------------ time and loading
    def next_deadline(self) -> int | None:
        return self.shard.next_deadline()

    def poll(self) -> None:
        """Run every timer due at the clock's current time."""
        self._apply(self.shard.poll())

    def replay(self, record: CoordinatorRecord) -> None:
        self._apply(self.shard.replay(record))

    def replay_offsets(
        self, group_id: str, offsets: Iterable[tuple[tuple[str, int], CommittedOffset]]
    ) -> None:
        """Bulk replay of offset commits (see :meth:`GroupCoordinatorShard.replay_offsets`)."""
        self.shard.replay_offsets(group_id, offsets)

    def begin_loading(self, partition: int) -> None:
        self._apply(self.shard.begin_loading(partition))

    def complete_loading(self, partition: int) -> None:
        self._apply(self.shard.complete_loading(partition))

    def unload_partition(self, partition: int) -> None:
        self._apply(self.shard.unload_partition(partition))

    # ------------------------------------------------------------------ queries
    @property
    def config(self) -> GroupConfig:
        return self.shard.config

    def group(self, group_id: str) -> ClassicGroup | None:
        return self.shard.group(group_id)

    def groups(self) -> list[ClassicGroup]:
        return self.shard.all_groups()

    def partition_for(self, group_id: str) -> int:
        return self.shard.partition_for(group_id)
