"""The consumer group (KIP-848) inside the group shard, through the group coordinator and its
runtime under a manual clock: durability, undo of failed writes, one id one group type, the
other group APIs, offsets with member epochs, timers, topic changes and loading.

Each test names the Kafka 4.1 test it mirrors (group-coordinator module unless said).
"""

from __future__ import annotations

import uuid
from typing import Any

from coord_harness import Harness, ListSink, Reply

from groupcoord.clock import ManualClock
from groupcoord.console.history import GroupHistory
from groupcoord.coordinator.consumer.api import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.consumer.metadata import TopicMetadata, TopicsImage
from groupcoord.coordinator.consumer.records import RECORD_TYPES, ConsumerGroupRecord
from groupcoord.coordinator.records import CoordinatorRecord, GroupMetadataKey, encode_record
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    ListGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteTopic,
    OffsetFetchGroup,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    TxnOffsetCommitRequest,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator

TOPIC_ID = uuid.UUID(int=0xA1)
GROUP = "cg"


def image(partitions: int = 6, version: int = 1) -> TopicsImage:
    return TopicsImage(
        [TopicMetadata(topic_id=TOPIC_ID, name="t", num_partitions=partitions)], version=version
    )


def harness(sink: ListSink | None = None, clock: Any = None, **config: Any) -> Harness:
    # These tests follow the Kafka 4.1 order (a target per epoch bump): they run with assignment
    # batching off, as Kafka 4.3 runs its request tests (KAFKA-20291); batching has its own tests.
    config.setdefault("group_consumer_assignment_interval_ms", 0)
    h = Harness(sink=sink, clock=clock, **config)
    h.c.on_metadata_update(image())
    return h


def heartbeat(
    h: Harness,
    member_id: str,
    epoch: int,
    owned: tuple[int, ...] | None = (),
    *,
    group: str = GROUP,
    topics: tuple[str, ...] | None = ("t",),
) -> Reply[ConsumerGroupHeartbeatResponse]:
    r: Reply[ConsumerGroupHeartbeatResponse] = Reply()
    h.c.consumer_group_heartbeat(
        ConsumerGroupHeartbeatRequest(
            group_id=group,
            member_id=member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=5000 if epoch == 0 else -1,
            subscribed_topic_names=topics if epoch == 0 else None,
            topic_partitions=None if owned is None else (((TOPIC_ID, owned),) if owned else ()),
            client_id=member_id,
            client_host="/127.0.0.1",
        ),
        r,
    )
    return r


def assigned(r: Reply[ConsumerGroupHeartbeatResponse]) -> tuple[int, ...]:
    assert r.value.assignment is not None
    return tuple(sorted(r.value.assignment.get(TOPIC_ID, ())))


def consumer_records(h: Harness) -> list[Any]:
    return [r for r in h.sink.records if isinstance(r, ConsumerGroupRecord)]


def test_the_heartbeat_is_answered_once_its_records_are_durable() -> None:
    """Kafka's runtime completes a write operation's response when its records are committed
    (``CoordinatorRuntimeTest#testScheduleWriteOp``); the records are the consumer group's
    (types 3-8), encoded by the broker's record path."""
    h = harness(ListSink(hold=True))
    r = heartbeat(h, "m1", 0)
    assert not r.done
    assert h.c.consumer_group(GROUP) is not None  # replayed already, as Kafka's timeline
    h.sink.release()
    assert r.value.error_code == 0 and r.value.member_epoch == 1
    assert assigned(r) == (0, 1, 2, 3, 4, 5)
    kinds = {type(rec.key).__name__ for rec in consumer_records(h)}
    assert "ConsumerGroupMetadataKey" in kinds and "ConsumerGroupCurrentMemberAssignmentKey" in kinds
    for rec in consumer_records(h):
        key, _ = encode_record(rec)
        assert int.from_bytes(key[:2], "big") in RECORD_TYPES


def test_a_failed_write_restores_the_group_as_it_was_and_answers_the_mapped_error() -> None:
    """A write that fails reverts the group to its last durable state (Kafka reverts its
    timeline to the last committed offset, ``CoordinatorRuntimeTest#testScheduleWriteOpWhenWriteFails``)
    and the heartbeat gets NOT_COORDINATOR for NOT_LEADER_OR_FOLLOWER
    (``GroupCoordinatorService.handleOperationException``)."""
    h = harness()
    first = heartbeat(h, "m1", 0)
    assert first.value.member_epoch == 1
    h.sink.fail = ErrorCode.NOT_LEADER_OR_FOLLOWER
    second = heartbeat(h, "m2", 0)
    assert second.value.error_code == int(ErrorCode.NOT_COORDINATOR)
    group = h.c.consumer_group(GROUP)
    assert group is not None and set(group.members) == {"m1"} and group.group_epoch == 1
    h.sink.fail = None
    again = heartbeat(h, "m2", 0)
    assert again.value.member_epoch == 2

    # A brand-new group whose first write fails does not exist afterwards.
    h.sink.fail = ErrorCode.KAFKA_STORAGE_ERROR
    lost = heartbeat(h, "x1", 0, group="other")
    assert lost.value.error_code == int(ErrorCode.NOT_COORDINATOR)
    assert h.c.consumer_group("other") is None


def test_a_non_empty_classic_group_keeps_its_id() -> None:
    """Kafka 4.1 ``GroupMetadataManager.getOrMaybeCreateConsumerGroup``: a classic group with
    members answers GROUP_ID_NOT_FOUND "is not a consumer group" when the online upgrade is not
    allowed (here ``group.consumer.migration.policy=downgrade``;
    ``GroupMetadataManagerTest#testConsumerGroupHeartbeatWithNonEmptyClassicGroup``); the
    upgrade itself is ``test_cg_migration.py``."""
    h = harness(group_consumer_migration_policy="downgrade")
    join = h.join_new(group=GROUP)
    h.advance(60)  # the initial rebalance delay: the join completes
    assert join.error is ErrorCode.NONE
    r = heartbeat(h, "m1", 0)
    assert r.value.error_code == int(ErrorCode.GROUP_ID_NOT_FOUND)
    assert r.value.error_message == f"Group {GROUP} is not a consumer group."
    assert h.c.consumer_group(GROUP) is None


def test_an_empty_classic_group_becomes_a_consumer_group_and_keeps_its_offsets() -> None:
    """``GroupMetadataManagerTest#testConsumerGroupHeartbeatWithEmptyClassicGroup`` (Kafka's
    ``maybeDeleteEmptyClassicGroup``): the classic group's tombstone goes in the same write as
    the consumer group's records; its committed offsets stay and are the consumer group's."""
    h = harness()
    join = h.join_new(group=GROUP)
    h.advance(60)
    member, generation = join.member_id, join.generation_id
    assert h.sync(member, generation, ((member, b""),), group=GROUP).error is ErrorCode.NONE
    assert commit(h, member, generation, offset=42).topics[0].partitions[0].error is ErrorCode.NONE
    h.advance(10_000)  # its session expires: Empty, with a GroupMetadata record in the log
    classic = h.c.group(GROUP)
    assert classic is not None and not classic.members and classic.generation > 0
    before = len(h.sink.records)
    r = heartbeat(h, "m1", 0)
    assert r.value.error_code == 0, r.value
    written = h.sink.records[before:]
    assert isinstance(written[0], CoordinatorRecord) and isinstance(written[0].key, GroupMetadataKey)
    assert written[0].value is None
    assert all(isinstance(rec, ConsumerGroupRecord) for rec in written[1:])
    assert fetch(h, "m1", 1).topics[0].partitions[0].offset == 42
    listed: Reply[ListGroupsResponse] = Reply()
    h.c.list_groups(None, listed)
    assert [(g.group_id, g.group_type) for g in listed.groups] == [(GROUP, "consumer")]


def test_classic_requests_for_a_consumer_group_id() -> None:
    """A classic JoinGroup of another protocol type for a consumer group's id is refused with
    INCONSISTENT_GROUP_PROTOCOL (``ConsumerGroup.supportsClassicProtocols``); a classic Heartbeat
    of a member the group does not know gets UNKNOWN_MEMBER_ID
    (``GroupMetadataManagerTest#testClassicGroupHeartbeatToConsumerGroupWithUnknownMember``)."""
    h = harness()
    heartbeat(h, "m1", 0)
    join = h.join("", group=GROUP, protocol_type="connect")
    assert join.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.heartbeat("m1", 1, group=GROUP) is ErrorCode.UNKNOWN_MEMBER_ID


def test_list_describe_and_delete_see_the_consumer_group() -> None:
    """Reference §7.5 (Kafka 4.x ``GroupMetadataManager.listGroups`` / ``describeGroups`` /
    ``deleteGroups``): listed with protocol type and group type ``consumer`` and its own
    state names; DescribeGroups v0-5 answers Dead with no members; DeleteGroups refuses a
    non-empty group (NON_EMPTY_GROUP) and deletes an empty one with its tombstones."""
    h = harness()
    heartbeat(h, "m1", 0)
    listed: Reply[ListGroupsResponse] = Reply()
    h.c.list_groups(None, listed)
    (g,) = listed.groups
    assert (g.group_id, g.protocol_type, g.group_state, g.group_type) == (
        GROUP,
        "consumer",
        "Stable",
        "consumer",
    )
    described: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups([GROUP], described)
    (d,) = described.groups
    assert (d.error, d.state, d.members) == (ErrorCode.NONE, "Dead", ())

    refused: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([GROUP], refused)
    assert refused.results[0].error is ErrorCode.NON_EMPTY_GROUP

    heartbeat(h, "m1", -1, owned=None)  # leaves: Empty
    before = len(h.sink.records)
    deleted: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([GROUP], deleted)
    assert deleted.results[0].error is ErrorCode.NONE
    assert h.c.consumer_group(GROUP) is None
    written = h.sink.records[before:]
    assert written and all(rec.value is None for rec in written)
    assert any(e.type == "state_change" and e.to_state == "Dead" for e in h.events)


def commit(h: Harness, member_id: str, epoch: int, offset: int = 7) -> OffsetCommitResponse:
    r: Reply[OffsetCommitResponse] = Reply()
    h.c.offset_commit(
        OffsetCommitRequest(
            group_id=GROUP,
            generation_id=epoch,
            member_id=member_id,
            group_instance_id=None,
            retention_time_ms=-1,
            topics=_topics(offset),
            version=9,
        ),
        r,
    )
    return r.value


def _topics(offset: int) -> tuple[OffsetCommitTopic, ...]:
    return (
        OffsetCommitTopic(
            name="t",
            partitions=(OffsetCommitPartition(partition=0, offset=offset, leader_epoch=None, metadata=""),),
        ),
    )


def fetch(h: Harness, member_id: str | None, epoch: int) -> Any:
    r: Reply[OffsetFetchResponse] = Reply()
    h.c.offset_fetch(
        OffsetFetchRequest(
            groups=(
                OffsetFetchGroup(
                    group_id=GROUP,
                    topics=(OffsetFetchTopic(name="t", partitions=(0,)),),
                    member_id=member_id,
                    member_epoch=epoch,
                ),
            ),
            version=9,
        ),
        r,
    )
    return r.groups[0]


def test_offset_commit_and_fetch_check_the_member_epoch() -> None:
    """``OffsetMetadataManagerTest#testConsumerGroupOffsetCommitWithStaleMemberEpoch``,
    ``#testConsumerGroupOffsetCommitWithUnknownMemberId``,
    ``#testConsumerGroupOffsetFetchWithStaleMemberEpoch``: strict equality with the member's
    epoch; the accepted commit is read back."""
    h = harness()
    heartbeat(h, "m1", 0)
    stale = commit(h, "m1", 0)
    assert stale.topics[0].partitions[0].error is ErrorCode.STALE_MEMBER_EPOCH
    unknown = commit(h, "nobody", 1)
    assert unknown.topics[0].partitions[0].error is ErrorCode.UNKNOWN_MEMBER_ID
    ok = commit(h, "m1", 1)
    assert ok.topics[0].partitions[0].error is ErrorCode.NONE
    assert fetch(h, "m1", 0).error is ErrorCode.STALE_MEMBER_EPOCH
    assert fetch(h, "nobody", 1).error is ErrorCode.UNKNOWN_MEMBER_ID
    good = fetch(h, "m1", 1)
    assert good.error is ErrorCode.NONE and good.topics[0].partitions[0].offset == 7
    admin = fetch(h, None, -1)  # an admin fetch carries no member
    assert admin.topics[0].partitions[0].offset == 7
    listed: Reply[ListGroupsResponse] = Reply()
    h.c.list_groups(None, listed)
    assert [g.group_type for g in listed.groups] == ["consumer"]  # its offsets' entry is not listed


def test_session_timeout_fences_the_member_on_the_shards_timer() -> None:
    """``GroupMetadataManagerTest#testSessionTimeoutLifecycle``: the session timer is on the
    shard's keyed timer; when it fires the member is fenced and the group's epoch bumps."""
    h = harness()
    heartbeat(h, "m1", 0)
    h.advance(44_999)
    assert h.c.consumer_group(GROUP) is not None and "m1" in h.c.consumer_group(GROUP).members  # type: ignore[union-attr]
    h.advance(2)
    group = h.c.consumer_group(GROUP)
    assert group is not None and not group.members and group.group_epoch == 2
    removed = [e for e in h.events if e.type == "member_removed"]
    assert [(e.member_id, e.reason.value) for e in removed] == [("m1", "session_timeout")]
    assert [e.type for e in h.events if e.type == "epoch_bump"] == ["epoch_bump", "epoch_bump"]


def test_added_partitions_are_assigned_on_the_next_heartbeat() -> None:
    """``GroupMetadataManagerTest#testSubscriptionMetadataRefreshedAfterGroupIsLoaded`` /
    ``#testPartitionAssignmentChangesWithNewPartitions`` shape: a new topics image with more
    partitions bumps the epoch on the member's next heartbeat and assigns them."""
    h = harness()
    first = heartbeat(h, "m1", 0)
    assert assigned(first) == (0, 1, 2, 3, 4, 5)
    h.c.on_metadata_update(image(partitions=8, version=2))
    r = heartbeat(h, "m1", 1, owned=(0, 1, 2, 3, 4, 5))
    assert r.value.member_epoch == 2
    assert assigned(r) == tuple(range(8))


def test_a_reloaded_partition_rebuilds_the_group_and_its_timers() -> None:
    """``GroupMetadataManagerTest#testOnLoaded``: replaying the records rebuilds the group
    with its epochs and assignments; loading arms fresh session timers."""
    h = harness()
    heartbeat(h, "m1", 0)
    heartbeat(h, "m2", 0)
    records = list(h.sink.records)
    fresh = GroupCoordinator(h.config, h.clock, record_sink=ListSink(), owned_partitions=())
    fresh.on_metadata_update(image())
    p = fresh.partition_for(GROUP)
    fresh.begin_loading(p)
    for rec in records:
        if isinstance(rec, ConsumerGroupRecord):
            fresh.replay_consumer_record(rec)
        else:
            fresh.replay(rec)
    fresh.complete_loading(p)
    old, new = h.c.consumer_group(GROUP), fresh.consumer_group(GROUP)
    assert old is not None and new is not None
    assert (new.group_epoch, new.assignment_epoch) == (old.group_epoch, old.assignment_epoch)
    assert new.members == old.members
    assert fresh.next_deadline() == h.clock.now_ms() + 45_000
    described: Reply[ConsumerGroupDescribeResponse] = Reply()
    fresh.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=(GROUP,)), described)
    assert described.groups[0].group_epoch == old.group_epoch


def test_offset_delete_and_expiry_spare_the_topics_the_members_subscribe_to() -> None:
    """``OffsetMetadataManagerTest#testDeleteGroupOffsetsWithConsumerGroup`` shape (Kafka's
    ``isSubscribedToTopic``): OffsetDelete answers GROUP_SUBSCRIBED_TO_TOPIC for a subscribed
    topic and deletes another's offsets; retention (``cleanupExpiredOffsets``) never expires a
    subscribed topic's offsets while the group subscribes to it."""
    h = harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1_000)
    heartbeat(h, "m1", 0)
    assert commit(h, "m1", 1).topics[0].partitions[0].error is ErrorCode.NONE
    other: Reply[OffsetCommitResponse] = Reply()
    h.c.offset_commit(
        OffsetCommitRequest(
            group_id=GROUP,
            generation_id=1,
            member_id="m1",
            group_instance_id=None,
            retention_time_ms=-1,
            topics=(
                OffsetCommitTopic(
                    name="elsewhere",
                    partitions=(
                        OffsetCommitPartition(partition=0, offset=3, leader_epoch=None, metadata=""),
                    ),
                ),
            ),
            version=9,
        ),
        other,
    )
    assert other.topics[0].partitions[0].error is ErrorCode.NONE
    deleted: Reply[OffsetDeleteResponse] = Reply()
    h.c.offset_delete(
        OffsetDeleteRequest(
            group_id=GROUP,
            topics=(
                OffsetDeleteTopic(name="t", partitions=(0,)),
                OffsetDeleteTopic(name="elsewhere", partitions=(0,)),
            ),
        ),
        deleted,
    )
    assert deleted.error is ErrorCode.NONE
    codes = {t.name: t.partitions[0].error for t in deleted.topics}
    assert codes == {"t": ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, "elsewhere": ErrorCode.NONE}
    assert fetch(h, "m1", 1).topics[0].partitions[0].offset == 7

    # Retention (1 minute here): "t" is subscribed and keeps its offset; "elsewhere" has none left.
    assert h.config.offsets_retention_minutes == 1
    for _ in range(6):
        h.advance(30_000)
        r = heartbeat(h, "m1", 1, owned=tuple(range(6)))
        assert r.value.error_code == 0
    assert fetch(h, "m1", 1).topics[0].partitions[0].offset == 7
    assert h.c.consumer_group(GROUP) is not None


def test_txn_offset_commit_checks_the_member_epoch_of_a_consumer_group() -> None:
    """``OffsetMetadataManagerTest#testConsumerGroupTransactionalOffsetCommitWithStaleMemberEpoch``
    shape: a transactional commit of a consumer-group member carries its epoch (Kafka's
    ``ConsumerGroup.validateOffsetCommit`` with ``isTransactional``): a stale one is refused;
    the right one is written in the producer's transactional batch and stays pending."""
    h = harness()
    heartbeat(h, "m1", 0)

    def txn_commit(epoch: int) -> ErrorCode:
        r: Reply[OffsetCommitResponse] = Reply()
        h.c.txn_offset_commit(
            TxnOffsetCommitRequest(
                transactional_id="tx",
                group_id=GROUP,
                producer_id=7,
                producer_epoch=0,
                generation_id=epoch,
                member_id="m1",
                group_instance_id=None,
                topics=_topics(11),
            ),
            r,
        )
        return r.topics[0].partitions[0].error

    assert txn_commit(0) is ErrorCode.STALE_MEMBER_EPOCH
    assert txn_commit(1) is ErrorCode.NONE
    assert h.c.pending_transactional_offsets(GROUP) == {7: {("t", 0): 11}}


class BusyClock:
    """A manual clock whose every read finds a millisecond gone, as on a busy machine with the wall
    clock: two reads inside one call never agree. (Composition: the compiled ManualClock cannot be
    subclassed by an interpreted class.)"""

    def __init__(self, start_ms: int) -> None:
        self._clock = ManualClock(start_ms)

    def now_ms(self) -> int:
        return self._clock.advance(1)

    def advance(self, ms: int) -> int:
        return self._clock.advance(ms)

    def set(self, now_ms: int) -> None:
        self._clock.set(now_ms)


def test_the_events_of_one_leave_share_one_time_and_the_console_names_the_leaver() -> None:
    """A leave (``ConsumerGroupHeartbeat`` with epoch -1, ``GroupMetadataManager.consumerGroupLeave``)
    removes the member and bumps the group epoch in one write; its group events (member_removed,
    epoch_bump, the state change) are one change and carry one time, however long making them
    takes. The console pairs a leave's bump with the member_removed event of the same time to
    name the member who left and its client (``console/history.py``); with a time per event, a
    busy machine split them and the timeline showed no client."""
    h = harness(clock=BusyClock(1_000_000))
    history = GroupHistory(lambda gid: {})
    heartbeat(h, "m1", 0)
    heartbeat(h, "m2", 0)
    seen = len(h.events)
    heartbeat(h, "m2", -1, owned=None, topics=None)
    leave = h.events[seen:]
    assert [e.type for e in leave] == ["member_removed", "epoch_bump", "state_change"]
    assert len({e.time_ms for e in leave}) == 1
    for e in h.events:
        history.on_event(e)
    newest = history.rebalances(GROUP)[-1]
    assert (newest.cause, newest.member_id, newest.client_id) == ("member_left", "m2", "m2")
