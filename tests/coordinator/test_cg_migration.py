"""KIP-848's online upgrade and downgrade (reference §7.1-7.3), through the group coordinator
under a manual clock: a consumer-protocol member turns a classic group into a consumer group,
and the last one leaving turns it back, under ``group.consumer.migration.policy``.

Each test names the Kafka test it mirrors (``GroupMetadataManagerTest`` of the group-coordinator
module, Kafka 4.1, unless said).
"""

from __future__ import annotations

from typing import Any

from coord_harness import ListSink, Reply
from migration_helpers import (
    GROUP,
    asg,
    assigned,
    classic_rejoin,
    harness,
    heartbeat,
    partitions_of,
    protocols,
    reload,
    stable_classic_group,
)

from groupcoord.coordinator.consumer.member import MemberState
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
)
from groupcoord.coordinator.records import CoordinatorRecord, GroupMetadataKey
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import ListGroupsResponse


def kinds(records: list[Any]) -> list[str]:
    return [type(r.key).__name__ + ("-tombstone" if r.value is None else "") for r in records]


def test_a_consumer_protocol_member_upgrades_a_stable_classic_group() -> None:
    """``testConsumerGroupHeartbeatWithStableClassicGroup``: the classic GroupMetadata tombstone,
    then ``createConsumerGroupRecords`` (every MemberMetadata, GroupMetadata at the generation,
    every TargetAssignmentMember, TargetAssignmentMetadata, every CurrentMemberAssignment), then
    the joining member's records in one write; the classic members are STABLE at the generation
    with their SyncGroup assignment and ClassicMemberMetadata; the new member bumps the epoch."""
    h = harness()
    a, b = stable_classic_group(h, ((0, 1), (2, 3)))
    before = len(h.sink.records)
    c = heartbeat(h, "c", 0)
    assert c.value.error_code == 0 and c.value.member_epoch == 2
    assert assigned(c) == ()  # its target partitions are still owned by the classic members
    written = h.sink.records[before:]
    assert isinstance(written[0], CoordinatorRecord) and isinstance(written[0].key, GroupMetadataKey)
    assert written[0].value is None
    conversion = written[1:9]
    assert kinds(conversion) == [
        ConsumerGroupMemberMetadataKey.__name__,
        ConsumerGroupMemberMetadataKey.__name__,
        ConsumerGroupMetadataKey.__name__,
        ConsumerGroupTargetAssignmentMemberKey.__name__,
        ConsumerGroupTargetAssignmentMemberKey.__name__,
        ConsumerGroupTargetAssignmentMetadataKey.__name__,
        ConsumerGroupCurrentMemberAssignmentKey.__name__,
        ConsumerGroupCurrentMemberAssignmentKey.__name__,
    ]
    assert [r.key.member_id for r in conversion[:2]] == [a, b]
    assert conversion[2].value.epoch == 1
    assert conversion[5].value.assignment_epoch == 1
    assert all(isinstance(r, ConsumerGroupRecord) for r in written[1:])
    group = h.c.consumer_group(GROUP)
    assert group is not None and group.group_epoch == 2
    for mid, parts in ((a, (0, 1)), (b, (2, 3))):
        m = group.members[mid]
        assert m.uses_classic_protocol and m.classic_member_metadata is not None
        assert m.classic_member_metadata.session_timeout_ms == 500
        assert m.classic_member_metadata.supported_protocols == protocols()
        assert (m.member_epoch, m.previous_member_epoch, m.state) == (1, 1, MemberState.STABLE)
        assert sorted(next(iter(m.assigned_partitions.values()))) == list(parts)
    # Events: the classic group ends (-> Dead) and the consumer group begins, both "group_upgraded".
    upgraded = [(e.from_state, e.to_state) for e in h.events if e.reason.value == "group_upgraded"]
    assert upgraded == [("Stable", "Dead"), (None, "Empty")]
    # The classic group is gone (its offsets' holder stays); ListGroups shows one consumer group.
    listed: Reply[ListGroupsResponse] = Reply()
    h.c.list_groups(None, listed)
    assert [(g.group_id, g.group_type) for g in listed.groups] == [(GROUP, "consumer")]


def test_classic_members_reconcile_through_rejoins_and_no_partition_is_owned_twice() -> None:
    """``testReconciliationInJoiningConsumerGroupWithCooperativeProtocol`` after the upgrade of
    ``testConsumerGroupHeartbeatWithStableClassicGroup``: the classic members learn of the new
    epoch from REBALANCE_IN_PROGRESS on Heartbeat (``classicGroupHeartbeatToConsumerGroup``), re-join
    reporting what they own, get what they keep from SyncGroup, re-join once revoked, and only then
    does the consumer-protocol member get the freed partitions. At every step each partition has
    at most one owner."""
    h = harness()
    a, b = stable_classic_group(h, ((0, 1), (2, 3)))
    owned = {a: (0, 1), b: (2, 3), "c": ()}

    def check() -> None:
        seen = [p for parts in owned.values() for p in parts]
        assert len(seen) == len(set(seen)), owned

    c = heartbeat(h, "c", 0)
    owned["c"] = assigned(c)
    check()
    generations = {a: 1, b: 1}
    for mid in (a, b):
        assert h.heartbeat(mid, generations[mid]) is ErrorCode.REBALANCE_IN_PROGRESS
        join, sync = classic_rejoin(h, mid, owned[mid])
        assert (join.protocol_type, join.protocol_name, join.leader, join.members) == (
            "consumer",
            "range",
            "",
            (),
        )
        owned[mid] = partitions_of(sync.value)
        generations[mid] = join.generation_id
        check()
    # a keeps its target (0, 1) and moves to epoch 2 at once; b must give 3 to c: it stays at
    # epoch 1 (UNREVOKED_PARTITIONS) with what it keeps, and re-joins once it has revoked.
    assert owned == {a: (0, 1), b: (2,), "c": ()} and generations == {a: 2, b: 1}
    assert h.heartbeat(a, 2) is ErrorCode.NONE
    assert h.heartbeat(b, 1) is ErrorCode.REBALANCE_IN_PROGRESS
    join, sync = classic_rejoin(h, b, owned[b])
    assert join.generation_id == 2 and partitions_of(sync.value) == (2,)
    assert h.heartbeat(b, 2) is ErrorCode.NONE
    c2 = heartbeat(h, "c", 2, owned["c"])
    owned["c"] = assigned(c2)
    check()
    assert owned == {a: (0, 1), b: (2,), "c": (3,)}
    group = h.c.consumer_group(GROUP)
    assert group is not None and group.state.value == "Stable"
    assert {m.member_id: m.member_epoch for m in group.members.values()} == {a: 2, b: 2, "c": 2}


def test_an_upgrade_answers_parked_joins_with_rebalance_in_progress() -> None:
    """``testConsumerGroupHeartbeatWithPreparingRebalanceClassicGroup``: a classic group in
    PreparingRebalance is converted too; its parked JoinGroup requests are completed with
    REBALANCE_IN_PROGRESS (``completeAllJoinFutures``), and the member re-joins the consumer group."""
    h = harness()
    a, b = stable_classic_group(h, ((0, 1), (2, 3)))
    parked = h.join(a, protocols=protocols((0, 1)))  # new metadata: a rebalance, a waits for b
    assert not parked.done and h.state() == "PreparingRebalance"
    c = heartbeat(h, "c", 0)
    assert c.value.error_code == 0
    assert parked.error is ErrorCode.REBALANCE_IN_PROGRESS
    group = h.c.consumer_group(GROUP)
    assert group is not None and set(group.members) == {a, b, "c"}
    join, sync = classic_rejoin(h, a, (0, 1))
    assert join.generation_id == 2 and partitions_of(sync.value) == (0, 1)


def test_an_upgrade_the_policy_or_the_group_does_not_allow_is_group_id_not_found() -> None:
    """``validateOnlineUpgrade`` (``testConsumerGroupHeartbeatWithNonEmptyClassicGroup`` and
    ``ConsumerGroupMigrationPolicyTest``): policies ``downgrade`` and ``disabled``, a classic group
    of another protocol type, one larger than ``group.consumer.max.size``, and an assignment with
    user data each leave the classic group alone and answer GROUP_ID_NOT_FOUND."""
    for policy in ("downgrade", "DISABLED"):
        h = harness(group_consumer_migration_policy=policy)
        stable_classic_group(h, ((0, 1, 2, 3),))
        r = heartbeat(h, "c", 0)
        assert r.value.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert r.value.error_message == f"Group {GROUP} is not a consumer group."
        assert h.c.consumer_group(GROUP) is None and h.state() == "Stable"

    h = harness(group_consumer_max_size=1)
    stable_classic_group(h, ((0, 1), (2, 3)))
    assert heartbeat(h, "c", 0).value.error_code == ErrorCode.GROUP_ID_NOT_FOUND

    h = harness()
    join = h.join_new(protocols=(("range", b"opaque"),), protocol_type="connect")
    h.advance(200)
    assert join.error is ErrorCode.NONE
    assert heartbeat(h, "c", 0).value.error_code == ErrorCode.GROUP_ID_NOT_FOUND

    h = harness()
    first = h.join_new(protocols=protocols())
    h.advance(200)
    mid = first.member_id
    h.sync(mid, 1, ((mid, asg((0, 1, 2, 3), user_data=b"sticky")),))
    refused = heartbeat(h, "c", 0)
    assert refused.value.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert refused.value.error_message == (
        f"Cannot upgrade classic group {GROUP} to consumer group because an unsupported custom assignor is "
        "in use. Please refer to the documentation or switch to a default assignor before re-attempting "
        "the upgrade."
    )
    assert h.state() == "Stable" and h.heartbeat(mid, 1) is ErrorCode.NONE


def test_a_failed_heartbeat_leaves_the_classic_group_as_it_was() -> None:
    """A heartbeat that fails after the conversion (here an invalid regex, INVALID_REGULAR_EXPRESSION)
    writes nothing: Kafka's whole write is dropped and the group stays classic."""
    h = harness()
    (a,) = stable_classic_group(h, ((0, 1, 2, 3),))
    r: Reply[Any] = Reply()
    from groupcoord.coordinator.consumer.api import ConsumerGroupHeartbeatRequest

    h.c.consumer_group_heartbeat(
        ConsumerGroupHeartbeatRequest(
            group_id=GROUP,
            member_id="c",
            member_epoch=0,
            rebalance_timeout_ms=5000,
            subscribed_topic_regex="[",
            topic_partitions=(),
        ),
        r,
    )
    assert r.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert h.c.consumer_group(GROUP) is None
    assert h.state() == "Stable" and h.heartbeat(a, 1) is ErrorCode.NONE


def test_the_last_consumer_protocol_member_leaving_downgrades_the_group() -> None:
    """``testLastConsumerProtocolMemberLeavingConsumerGroup``: the consumer group's tombstones
    (``createGroupTombstoneRecords``), then a classic GroupMetadata record at generation = the
    group epoch with each remaining member's target assignment; the classic group prepares a
    rebalance, its members re-join it as any classic group's, and the offsets stay."""
    h = harness()
    a, b = stable_classic_group(h, ((0, 1), (2, 3)))
    assert h.commit({("t", 0): 11}, member_id=a, generation=1) == {("t", 0): ErrorCode.NONE}
    c = heartbeat(h, "c", 0)
    epoch = c.value.member_epoch
    before = len(h.sink.records)
    left = heartbeat(h, "c", -1, None)
    assert (left.value.error_code, left.value.member_epoch) == (0, -1)
    written = h.sink.records[before:]
    assert all(isinstance(r, ConsumerGroupRecord) and r.value is None for r in written[:-1])
    assert isinstance(written[-2].key, ConsumerGroupMetadataKey)
    last = written[-1]
    assert isinstance(last, CoordinatorRecord) and isinstance(last.key, GroupMetadataKey)
    assert last.value is not None and last.value.generation == epoch
    assert last.value.protocol_type == "consumer" and last.value.protocol == "range"
    by_member = {m.member_id: m.assignment for m in last.value.members}
    assert set(by_member) == {a, b}
    assert by_member[a] == asg((0, 1)) and by_member[b] == asg((2,))  # their targets at the epoch
    assert h.c.consumer_group(GROUP) is None
    assert h.state() == "PreparingRebalance"
    classic = h.c.group(GROUP)
    assert classic is not None and classic.generation == epoch
    assert h.heartbeat(a, epoch) is ErrorCode.REBALANCE_IN_PROGRESS
    ja = h.join(a, protocols=protocols((0, 1)))
    jb = h.join(b, protocols=protocols((2,)))
    assert ja.error is ErrorCode.NONE and jb.error is ErrorCode.NONE and ja.generation_id == epoch + 1
    assert h.fetch({"t": (0,)})[("t", 0)][0] == 11
    listed: Reply[ListGroupsResponse] = Reply()
    h.c.list_groups(None, listed)
    assert [(g.group_id, g.group_type) for g in listed.groups] == [(GROUP, "classic")]


def test_the_last_consumer_protocol_member_timing_out_downgrades_the_group() -> None:
    """``testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup``: the session timeout that
    fences the last consumer-protocol member downgrades the group as a leave does."""
    h = harness(group_consumer_session_timeout_ms=45_000)
    a, b = stable_classic_group(h, ((0, 1), (2, 3)))
    heartbeat(h, "c", 0)
    assert classic_rejoin(h, a, (0, 1))[0].generation_id == 2
    assert classic_rejoin(h, b, (2, 3))[0].generation_id == 1
    assert classic_rejoin(h, b, (2,))[0].generation_id == 2
    for _ in range(200):  # the classic members keep their sessions; c goes silent
        h.advance(300)
        assert h.heartbeat(a, 2) in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
        assert h.heartbeat(b, 2) in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
        if h.c.consumer_group(GROUP) is None:
            break
    assert h.c.consumer_group(GROUP) is None
    assert h.state() == "PreparingRebalance" and h.heartbeat(a, 2) is ErrorCode.REBALANCE_IN_PROGRESS
    downgraded = [e for e in h.events if e.reason.value == "group_downgraded"]
    assert downgraded and downgraded[0].generation == 2
    assert any(e.reason.value == "session_timeout" and e.member_id == "c" for e in h.events)


def test_no_downgrade_when_the_policy_allows_only_upgrades() -> None:
    """``validateOnlineDowngradeWithFencedMembers`` under ``upgrade``: the consumer group stays,
    its classic members in it; the leave only bumps the epoch."""
    h = harness(group_consumer_migration_policy="upgrade")
    a, _ = stable_classic_group(h, ((0, 1), (2, 3)))
    c = heartbeat(h, "c", 0)
    heartbeat(h, "c", -1, None)
    group = h.c.consumer_group(GROUP)
    assert group is not None and group.group_epoch == c.value.member_epoch + 1
    assert h.heartbeat(a, 1) is ErrorCode.REBALANCE_IN_PROGRESS


def test_upgrade_and_downgrade_replay_from_the_log() -> None:
    """The records both conversions write are Kafka's formats and load back: after the upgrade a
    consumer group whose classic members keep their ClassicMemberMetadata (tagged field 0) and
    epochs; after the downgrade a classic group at the consumer group's epoch with the members'
    assignments (``GroupMetadataManagerTest#testReplay*`` / ``testOnLoaded`` shape)."""
    h = harness()
    a, b = stable_classic_group(h, ((0, 1), (2, 3)))
    heartbeat(h, "c", 0)
    loaded = reload(h).consumer_group(GROUP)
    live = h.c.consumer_group(GROUP)
    assert loaded is not None and live is not None
    assert (loaded.group_epoch, loaded.assignment_epoch) == (live.group_epoch, live.assignment_epoch)
    assert loaded.members == live.members
    assert loaded.members[a].classic_member_metadata == live.members[a].classic_member_metadata is not None

    heartbeat(h, "c", -1, None)
    fresh = reload(h)
    assert fresh.consumer_group(GROUP) is None
    classic = fresh.group(GROUP)
    live_classic = h.c.group(GROUP)
    assert classic is not None and live_classic is not None
    assert classic.generation == live_classic.generation and classic.state.value == "Stable"
    assert {m: x.assignment for m, x in classic.members.items()} == {
        m: x.assignment for m, x in live_classic.members.items()
    }
    assert set(classic.members) == {a, b}


def test_a_join_group_to_an_empty_consumer_group_turns_it_into_a_classic_group() -> None:
    """``testClassicGroupJoinWithEmptyConsumerGroup``: the empty consumer group's tombstones are
    written and the JoinGroup proceeds as in a new classic group (always, whatever the policy)."""
    h = harness(group_consumer_migration_policy="disabled")
    heartbeat(h, "c", 0)
    heartbeat(h, "c", -1, None)
    group = h.c.consumer_group(GROUP)
    assert group is not None and not group.members
    before = len(h.sink.records)
    join = h.join_new(protocols=protocols())
    h.advance(200)
    assert join.error is ErrorCode.NONE and join.generation_id == 1
    tombstones = h.sink.records[before:]
    assert tombstones and isinstance(tombstones[0], ConsumerGroupRecord)
    assert any(isinstance(r.key, ConsumerGroupMetadataKey) and r.value is None for r in tombstones)
    assert h.c.consumer_group(GROUP) is None and h.state() == "CompletingRebalance"


def test_the_joining_members_response_waits_for_the_upgrade_write() -> None:
    """The upgrade and the heartbeat are one write; its response waits for it to be durable
    (``CoordinatorRuntimeTest#testScheduleWriteOp``)."""
    h = harness(ListSink(hold=False))
    stable_classic_group(h, ((0, 1, 2, 3),))
    h.sink.hold = True
    c = heartbeat(h, "c", 0)
    assert not c.done
    h.sink.release()
    assert c.value.error_code == 0


def test_a_classic_static_member_replacing_the_last_consumer_protocol_member_downgrades() -> None:
    """``testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMember``
    (``validateOnlineDowngradeWithReplacedMemberId``): the consumer group's tombstones name the
    joining member instead of the replaced one (``createGroupTombstoneRecordsWithReplacedMember``);
    the classic group is Stable at the group epoch, no rebalance, and the joiner has the replaced
    member's target assignment, served by the classic SyncGroup."""
    h = harness()
    s = heartbeat(h, "s", 0, instance="s1")
    assert assigned(s) == (0, 1, 2, 3)
    first = h.join("", protocols=protocols())
    j = h.join(first.member_id, protocols=protocols())
    assert j.error is ErrorCode.NONE
    group = h.c.consumer_group(GROUP)
    assert group is not None
    epoch = group.group_epoch
    s_target = group.target("s")
    before = len(h.sink.records)
    joiner = h.join("", protocols=protocols(), instance="s1")
    assert joiner.error is ErrorCode.NONE and joiner.member_id not in ("s", j.member_id)
    assert h.c.consumer_group(GROUP) is None
    written = h.sink.records[before:]
    tombstoned = {r.key.member_id for r in written if r.value is None and hasattr(r.key, "member_id")}
    assert joiner.member_id in tombstoned
    last = written[-1]
    assert isinstance(last.key, GroupMetadataKey) and last.value is not None
    assert last.value.generation == epoch
    classic = h.c.group(GROUP)
    assert classic is not None and classic.state.value == "Stable" and classic.generation == epoch
    assert set(classic.members) == {j.member_id, joiner.member_id}
    sync = h.sync(joiner.member_id, epoch, instance="s1")
    expected = tuple(sorted(next(iter(s_target.values())))) if s_target else ()
    assert partitions_of(sync.value) == expected == (0, 1)


def test_a_failed_upgrade_write_puts_the_classic_group_back() -> None:
    """``testJoiningConsumerGroupFailingToPersistRecords`` shape for the upgrade: when the write
    fails, Kafka's timeline reverts to the classic group; here the consumer group goes, the classic
    group gets its members back with fresh sessions, and the joiner gets NOT_COORDINATOR
    (``GroupCoordinatorService.handleOperationException``)."""
    h = harness()
    a, b = stable_classic_group(h, ((0, 1), (2, 3)))
    h.sink.fail = ErrorCode.NOT_LEADER_OR_FOLLOWER
    c = heartbeat(h, "c", 0)
    assert c.value.error_code == ErrorCode.NOT_COORDINATOR
    h.sink.fail = None
    assert h.c.consumer_group(GROUP) is None
    assert h.state() == "Stable"
    assert h.heartbeat(a, 1) is ErrorCode.NONE and h.heartbeat(b, 1) is ErrorCode.NONE
    again = heartbeat(h, "c", 0)
    assert again.value.error_code == 0 and again.value.member_epoch == 2


def test_a_failed_downgrade_write_keeps_the_consumer_group() -> None:
    """The downgrade's write fails: the consumer group is restored from its last durable state
    (``CoordinatorRuntimeTest#testScheduleWriteOpWhenWriteFails``), the classic group it made
    goes, and its offsets stay."""
    h = harness()
    a, _ = stable_classic_group(h, ((0, 1), (2, 3)))
    c = heartbeat(h, "c", 0)
    h.sink.fail = ErrorCode.NOT_LEADER_OR_FOLLOWER
    left = heartbeat(h, "c", -1, None)
    assert left.value.error_code == ErrorCode.NOT_COORDINATOR
    h.sink.fail = None
    group = h.c.consumer_group(GROUP)
    assert group is not None and "c" in group.members and group.group_epoch == c.value.member_epoch
    listed: Reply[ListGroupsResponse] = Reply()
    h.c.list_groups(None, listed)
    assert [(g.group_id, g.group_type) for g in listed.groups] == [(GROUP, "consumer")]
    assert h.heartbeat(a, 1) is ErrorCode.REBALANCE_IN_PROGRESS  # still a member of the consumer group
