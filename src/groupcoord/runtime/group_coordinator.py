"""The group coordinator: one group shard per ``__consumer_offsets`` partition, on the runtime.

Kafka 4.x's ``GroupCoordinatorService``: each request goes to the shard of its group's partition
(:func:`~groupcoord.coordinator.records.partition_for`), and the runtime
(:class:`~groupcoord.runtime.coordinator_runtime.CoordinatorRuntime`) applies what the shard
returns. A request naming groups of several partitions (OffsetFetch of many groups,
DescribeGroups, DeleteGroups) is split by partition and its answers joined in the request's
order; ListGroups asks every shard. A group whose partition has no shard here is answered
NOT_COORDINATOR (by a shard that leads nothing, so each API answers in its own shape).

The broker (:mod:`groupcoord.runtime.group_runtime`) gives it a sink that writes each shard's
records to its own partition and confirms on fsync, and its loop timers; the in-process drivers
(tests, the member-core world, the simulator) give it a sink that is durable at once and call
:meth:`GroupCoordinator.poll`, like Kafka's shard test contexts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from groupcoord.clock import Clock
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.consumer.api import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.consumer.config import GroupOverrides
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.metadata import TopicsImage
from groupcoord.coordinator.consumer.records import ConsumerGroupRecord
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.group import ClassicGroup, CommittedOffset
from groupcoord.coordinator.records import CoordinatorRecord, partition_for
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.errors import ErrorCode
from groupcoord.handling.loop_timers import LoopTimers
from groupcoord.protocol.group_messages import (
    DeleteGroupResult,
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchGroupResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
)
from groupcoord.runtime.coordinator_runtime import CoordinatorRuntime, RecordSink


class GroupCoordinator:
    """Args:
    config: the coordinator's settings.
    clock: protocol time (a manual clock in tests and the simulator).
    record_sink: where each shard's writes go (see
        :class:`~groupcoord.runtime.coordinator_runtime.RecordSink`).
    event_sink: receives every :class:`GroupEvent`; without one, none is built.
    member_id_factory: makes a member id from a client id or instance id prefix.
    owned_partitions: the ``__consumer_offsets`` partitions led from the start, each with an
        empty shard (all by default; the broker starts with none and loads each).
    timers: the broker's loop timers (see ``CoordinatorRuntime``); in-process drivers call
        :meth:`poll`.
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
        timers: LoopTimers | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._emit_events = event_sink is not None
        self._member_id_factory = member_id_factory
        self.runtime: CoordinatorRuntime[GroupCoordinatorShard] = CoordinatorRuntime(
            self._new_shard,
            clock,
            record_sink=record_sink,
            event_sink=event_sink,
            timers=timers,
            name="group-coordinator",
        )
        self._num_partitions = config.offsets_topic_num_partitions
        self._partition_cache: dict[str, int] = {}
        #: Answers for groups of partitions led elsewhere: it leads nothing.
        self._elsewhere = GroupCoordinatorShard(config, clock, emit_events=False, owned_partitions=())
        #: The topics as consumer groups see them (KIP-848), handed to every shard made.
        self._image = TopicsImage()
        #: Per-group config overrides (GROUP resources), handed to every shard made.
        self._group_overrides: dict[str, GroupOverrides] = {}
        #: Several brokers in one process (``broker.cluster``): the leader of a partition, and the
        #: node the request being handled came to (set by the composition root before each
        #: request). A partition led by another node is answered NOT_COORDINATOR. None: one node
        #: leads every partition with a shard.
        self.leader_of: Callable[[int], int] | None = None
        self.node = 0
        starting = range(self._num_partitions) if owned_partitions is None else owned_partitions
        for p in starting:
            self.runtime.load(p)
            self.runtime.loaded(p)

    def _new_shard(self, partition: int) -> GroupCoordinatorShard:
        shard = GroupCoordinatorShard(
            self.config,
            self._clock,
            emit_events=self._emit_events,
            member_id_factory=self._member_id_factory,
            owned_partitions=(),
            image=self._image,
        )
        for group_id, overrides in self._group_overrides.items():
            shard.set_group_overrides(group_id, overrides)
        shard.begin_loading(partition)
        return shard

    def partition_for(self, group_id: str) -> int:
        p = self._partition_cache.get(group_id)
        if p is None:
            p = partition_for(group_id, self._num_partitions)
            if len(self._partition_cache) > 100_000:
                self._partition_cache.clear()
            self._partition_cache[group_id] = p
        return p

    def _here(self, p: int) -> GroupCoordinatorShard:
        """The shard answering for partition ``p`` on :attr:`node`: its own while the node leads
        the partition, else the one that leads nothing (NOT_COORDINATOR)."""
        shard = self.runtime.shard(p)
        if shard is None:
            return self._elsewhere
        leader_of = self.leader_of
        if leader_of is not None and leader_of(p) != self.node:
            return self._elsewhere
        return shard

    def _shard(self, group_id: str) -> tuple[int, GroupCoordinatorShard]:
        p = self.partition_for(group_id)
        return p, self._here(p)

    # ------------------------------------------------------------------ one group's requests
    def join_group(self, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]) -> None:
        p = self.partition_for(req.group_id)
        shard = self._here(p)
        self.runtime.apply(p, shard.join_group(req, reply))

    def sync_group(self, req: SyncGroupRequest, reply: Callable[[SyncGroupResponse], None]) -> None:
        p = self.partition_for(req.group_id)
        shard = self._here(p)
        self.runtime.apply(p, shard.sync_group(req, reply))

    def heartbeat(self, req: HeartbeatRequest, reply: Callable[[HeartbeatResponse], None]) -> None:
        p = self.partition_for(req.group_id)
        shard = self._here(p)
        self.runtime.apply(p, shard.heartbeat(req, reply))

    def leave_group(self, req: LeaveGroupRequest, reply: Callable[[LeaveGroupResponse], None]) -> None:
        p = self.partition_for(req.group_id)
        shard = self._here(p)
        self.runtime.apply(p, shard.leave_group(req, reply))

    def offset_commit(self, req: OffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]) -> None:
        p = self.partition_for(req.group_id)
        shard = self._here(p)
        self.runtime.apply(p, shard.offset_commit(req, reply))

    def txn_offset_commit(
        self, req: TxnOffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> None:
        p = self.partition_for(req.group_id)
        shard = self._here(p)
        self.runtime.apply(p, shard.txn_offset_commit(req, reply))

    def offset_delete(self, req: OffsetDeleteRequest, reply: Callable[[OffsetDeleteResponse], None]) -> None:
        p = self.partition_for(req.group_id)
        shard = self._here(p)
        self.runtime.apply(p, shard.offset_delete(req, reply))

    # ------------------------------------------------------------------ consumer groups (KIP-848)
    def consumer_group_heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, reply: Callable[[ConsumerGroupHeartbeatResponse], None]
    ) -> None:
        p, shard = self._shard(req.group_id)
        self.runtime.apply(p, shard.consumer_group_heartbeat(req, reply))

    def consumer_group_describe(
        self, req: ConsumerGroupDescribeRequest, reply: Callable[[ConsumerGroupDescribeResponse], None]
    ) -> None:
        described = tuple(self._shard(g)[1].consumer_group_describe(g) for g in req.group_ids)
        self.runtime.respond(reply, ConsumerGroupDescribeResponse(groups=described))

    def on_metadata_update(self, image: TopicsImage) -> None:
        """The broker's topics changed: every shard's consumer groups see the new image."""
        self._image = image
        for p in self.runtime.partitions():
            shard = self.runtime.shard(p)
            if shard is not None:
                self.runtime.apply(p, shard.on_metadata_update(image))

    def set_group_overrides(self, group_id: str, overrides: GroupOverrides | None) -> None:
        """A group's ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms`` changed
        (None: back to the broker's): every shard knows, from each member's next heartbeat."""
        if overrides is None:
            self._group_overrides.pop(group_id, None)
        else:
            self._group_overrides[group_id] = overrides
        for p in self.runtime.partitions():
            shard = self.runtime.shard(p)
            if shard is not None:
                shard.set_group_overrides(group_id, overrides)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        return self._shard(group_id)[1].consumer_group(group_id)

    def replay_consumer_record(self, record: ConsumerGroupRecord) -> None:
        """Replay one consumer-group record into its group's shard (loading)."""
        p = self.partition_for(record.key.group_id)
        self.runtime.apply(p, self._loading_shard(p).replay_consumer_record(record))

    # ------------------------------------------------------------------ several groups
    def offset_fetch(self, req: OffsetFetchRequest, reply: Callable[[OffsetFetchResponse], None]) -> None:
        parts = self._by_partition([g.group_id for g in req.groups])
        if len(parts) == 1:
            ((p, _),) = parts.items()
            shard = self._here(p)
            self.runtime.apply(p, shard.offset_fetch(req, reply))
            return
        answers: dict[int, OffsetFetchGroupResponse] = {}

        def finish() -> None:
            reply(OffsetFetchResponse(groups=tuple(answers[i] for i in range(len(req.groups)))))

        join = _Join(len(parts), finish)
        for p, indexes in parts.items():
            sub = OffsetFetchRequest(
                groups=tuple(req.groups[i] for i in indexes),
                require_stable=req.require_stable,
                version=req.version,
            )
            shard = self._here(p)
            self.runtime.apply(p, shard.offset_fetch(sub, join.part(_collect_fetch(answers, indexes))))

    def describe_groups(
        self, group_ids: Sequence[str], reply: Callable[[DescribeGroupsResponse], None]
    ) -> None:
        described = tuple(self._shard(g)[1].describe_group(g) for g in group_ids)
        self.runtime.respond(reply, DescribeGroupsResponse(groups=described))

    def list_groups(
        self, states_filter: Sequence[str] | None, reply: Callable[[ListGroupsResponse], None]
    ) -> None:
        error = ErrorCode.NONE
        listed: list[ListedGroup] = []
        for shard in self._shards_here():
            part = shard.list_groups_now(states_filter)
            if part.error is not ErrorCode.NONE and error is ErrorCode.NONE:
                error = part.error
            listed.extend(part.groups)
        self.runtime.respond(reply, ListGroupsResponse(error=error, groups=tuple(listed)))

    def delete_groups(self, group_ids: Sequence[str], reply: Callable[[DeleteGroupsResponse], None]) -> None:
        order = list(dict.fromkeys(group_ids))
        parts = self._by_partition(order)
        results: dict[str, ErrorCode] = {}

        def finish() -> None:
            reply(
                DeleteGroupsResponse(
                    results=tuple(DeleteGroupResult(group_id=g, error=results[g]) for g in order)
                )
            )

        join = _Join(len(parts), finish)
        for p, indexes in parts.items():
            shard = self._here(p)
            sub = [order[i] for i in indexes]
            self.runtime.apply(p, shard.delete_groups(sub, join.part(_collect_deletes(results))))

    def _shards_here(self) -> list[GroupCoordinatorShard]:
        """The shards of the partitions :attr:`node` leads (ListGroups lists one broker's groups)."""
        leader_of = self.leader_of
        if leader_of is None:
            return self.runtime.shards()
        out = []
        for p in self.runtime.partitions():
            shard = self.runtime.shard(p)
            if shard is not None and leader_of(p) == self.node:
                out.append(shard)
        return out

    def _by_partition(self, group_ids: Sequence[str]) -> dict[int, list[int]]:
        """Partition -> the indexes of its groups in ``group_ids`` (in the request's order)."""
        parts: dict[int, list[int]] = {}
        for i, g in enumerate(group_ids):
            parts.setdefault(self.partition_for(g), []).append(i)
        return parts

    # ------------------------------------------------------------------ transactions
    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker of ``producer_id`` is durable in ``partition`` (live path)."""
        shard = self.runtime.shard(partition)
        if shard is not None:
            self.runtime.apply(partition, shard.complete_transaction(partition, producer_id, commit))

    # ------------------------------------------------------------------ time
    def next_deadline(self) -> int | None:
        return self.runtime.next_deadline()

    def poll(self) -> None:
        """Run every timer due at the clock's current time (in-process drivers)."""
        self.runtime.poll()

    # ------------------------------------------------------------------ loading
    def begin_loading(self, partition: int) -> None:
        """Start loading ``partition``: its groups answer COORDINATOR_LOAD_IN_PROGRESS until done."""
        shard = self.runtime.shard(partition)
        if shard is None:
            self.runtime.load(partition)
        else:
            self.runtime.apply(partition, shard.begin_loading(partition))

    def complete_loading(self, partition: int) -> None:
        self.runtime.loaded(partition)

    def unload_partition(self, partition: int) -> None:
        """Leadership of ``partition`` lost: its groups die and parked requests get NOT_COORDINATOR."""
        self.runtime.unload(partition)

    def _loading_shard(self, partition: int) -> GroupCoordinatorShard:
        shard = self.runtime.shard(partition)
        if shard is None:
            raise KeyError(f"no shard for {partition}: begin_loading first")
        return shard

    def replay(self, record: CoordinatorRecord) -> None:
        """Replay one record into the shard of its group's partition (loading, tests)."""
        p = self.partition_for(record.key.group)
        self.runtime.apply(p, self._loading_shard(p).replay(record))

    def replay_offsets(
        self, group_id: str, offsets: Iterable[tuple[tuple[str, int], CommittedOffset]]
    ) -> None:
        """Bulk replay of offset commits (see ``OffsetManager.replay_offsets``)."""
        self._loading_shard(self.partition_for(group_id)).replay_offsets(group_id, offsets)

    def replay_transactional(self, record: CoordinatorRecord, producer_id: int) -> None:
        p = self.partition_for(record.key.group)
        self.runtime.apply(p, self._loading_shard(p).replay_transactional(record, producer_id))

    def replay_end_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        shard = self._loading_shard(partition)
        self.runtime.apply(partition, shard.replay_end_transaction(partition, producer_id, commit))

    # ------------------------------------------------------------------ queries
    def group(self, group_id: str) -> ClassicGroup | None:
        return self._shard(group_id)[1].group(group_id)

    def groups(self) -> list[ClassicGroup]:
        return [g for shard in self.runtime.shards() for g in shard.all_groups()]

    def pending_transactional_offsets(self, group_id: str) -> dict[int, dict[tuple[str, int], int]]:
        return self._shard(group_id)[1].pending_transactional_offsets(group_id)


class _Join:
    """Calls ``finish`` once each of ``n`` partial answers has come."""

    __slots__ = ("_finish", "_left")

    def __init__(self, n: int, finish: Callable[[], None]) -> None:
        self._left = n
        self._finish = finish

    def part(self, collect: Callable[[Any], None]) -> Callable[[Any], None]:
        def reply(response: Any) -> None:
            collect(response)
            self._left -= 1
            if self._left == 0:
                self._finish()

        return reply


def _collect_fetch(
    into: dict[int, OffsetFetchGroupResponse], indexes: list[int]
) -> Callable[[OffsetFetchResponse], None]:
    """A part's answers, by their groups' places in the request (a group may be named twice)."""

    def collect(response: OffsetFetchResponse) -> None:
        for i, g in zip(indexes, response.groups, strict=True):
            into[i] = g

    return collect


def _collect_deletes(into: dict[str, ErrorCode]) -> Callable[[DeleteGroupsResponse], None]:
    def collect(response: DeleteGroupsResponse) -> None:
        for r in response.results:
            into[r.group_id] = r.error

    return collect
