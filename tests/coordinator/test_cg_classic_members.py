"""Classic-protocol members inside a consumer group (reference §7.4): JoinGroup, SyncGroup,
Heartbeat and LeaveGroup routed to the consumer group, their timers, and every error Kafka gives
there, through the group coordinator under a manual clock.

Each test names the ``GroupMetadataManagerTest`` test (Kafka 4.1) it mirrors.
"""

from __future__ import annotations

from coord_harness import ListSink
from migration_helpers import (
    GROUP,
    assigned,
    classic_rejoin,
    harness,
    heartbeat,
    partitions_of,
    protocols,
)

from groupcoord.coordinator.consumer.member import MemberState
from groupcoord.errors import ErrorCode


def test_a_new_dynamic_classic_member_joins_a_consumer_group() -> None:
    """``testJoiningConsumerGroupWithNewDynamicMember``: MEMBER_ID_REQUIRED with a generated id
    (v4+), then the join bumps the epoch; the answer (sent once the records are durable) carries
    the member epoch as generation, protocol type ``consumer``, the member's first protocol, no
    leader and no members; SyncGroup serves the current assignment, which grows once the
    consumer-protocol member has revoked."""
    h = harness(ListSink())
    c = heartbeat(h, "c", 0)
    assert assigned(c) == (0, 1, 2, 3)
    first = h.join("", protocols=protocols())
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    mid = first.member_id
    h.sink.hold = True
    join = h.join(mid, protocols=protocols())
    assert not join.done
    h.sink.hold = False
    h.sink.release()
    assert (join.error, join.generation_id, join.member_id) == (ErrorCode.NONE, 2, mid)
    assert (join.protocol_type, join.protocol_name, join.leader, join.members) == (
        "consumer",
        "range",
        "",
        (),
    )
    sync = h.sync(mid, 2)
    assert partitions_of(sync.value) == ()  # its partitions are still c's
    assert sync.protocol_type == "consumer" and sync.protocol_name == "range"
    group = h.c.consumer_group(GROUP)
    assert group is not None and group.members[mid].state is MemberState.UNRELEASED_PARTITIONS
    assert h.heartbeat(mid, 2) is ErrorCode.NONE  # still waiting on c
    revoke = heartbeat(h, "c", 1, (0, 1, 2, 3))
    kept = assigned(revoke)
    again = heartbeat(h, "c", 1, kept)
    assert again.value.member_epoch == 2
    # Its partitions are free: the heartbeat sends it back to JoinGroup to collect them.
    assert h.heartbeat(mid, 2) is ErrorCode.REBALANCE_IN_PROGRESS
    join2, sync2 = classic_rejoin(h, mid, ())
    assert join2.generation_id == 2
    mine = partitions_of(sync2.value)
    assert mine and not set(mine) & set(kept) and set(mine) | set(kept) == {0, 1, 2, 3}
    assert h.heartbeat(mid, 2) is ErrorCode.NONE


def test_join_errors_of_a_classic_member_in_a_consumer_group() -> None:
    """``testJoiningConsumerGroupThrowsExceptionIfGroupOverMaxSize`` (GROUP_MAX_SIZE_REACHED),
    ``testJoiningConsumerGroupThrowsExceptionIfProtocolIsNotSupported`` (INCONSISTENT_GROUP_PROTOCOL:
    another protocol type, or no protocol every classic member supports),
    ``testStaticMemberJoiningConsumerGroupWithUnknownInstanceId`` (UNKNOWN_MEMBER_ID) and
    ``testStaticMemberJoiningConsumerGroupWithUnmatchedMemberId`` (FENCED_INSTANCE_ID)."""
    h = harness(group_consumer_max_size=1)
    heartbeat(h, "c", 0)
    assert h.join("x", protocols=protocols()).error is ErrorCode.GROUP_MAX_SIZE_REACHED

    h = harness()
    heartbeat(h, "c", 0)
    assert (
        h.join("", protocols=protocols(), protocol_type="connect").error
        is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    first = h.join("", protocols=protocols())
    assert h.join(first.member_id, protocols=protocols()).error is ErrorCode.NONE
    other = (("cooperative-sticky", protocols()[0][1]),)
    assert h.join("", protocols=other).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    static = h.join("", protocols=protocols(), instance="i1")
    assert static.error is ErrorCode.NONE
    assert h.join("someone", protocols=protocols(), instance="i2").error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.join("someone", protocols=protocols(), instance="i1").error is ErrorCode.FENCED_INSTANCE_ID


def test_a_static_classic_member_rejoining_replaces_its_old_id() -> None:
    """``testJoiningConsumerGroupReplacingExistingStaticMember``: a static classic member that
    re-joins with an empty member id takes over its instance's assignment under a new id; the old
    id is gone."""
    h = harness()
    heartbeat(h, "c", 0)
    old = h.join("", protocols=protocols(), instance="i1")
    assert old.error is ErrorCode.NONE
    new = h.join("", protocols=protocols(), instance="i1")
    assert new.error is ErrorCode.NONE and new.member_id != old.member_id
    group = h.c.consumer_group(GROUP)
    assert group is not None and old.member_id not in group.members
    assert group.static_member("i1") is not None and group.static_member("i1").member_id == new.member_id
    assert h.heartbeat(old.member_id, old.generation_id, instance="i1") is ErrorCode.FENCED_INSTANCE_ID


def test_sync_errors_of_a_classic_member_in_a_consumer_group() -> None:
    """``testClassicGroupSyncToConsumerGroupWithUnknownMemberId`` (an unknown member, and a
    consumer-protocol member: UNKNOWN_MEMBER_ID), ``...WithFencedInstanceId``,
    ``...WithIllegalGeneration``, ``...WithInconsistentGroupProtocol`` and
    ``...RebalanceInProgress`` (the group epoch moved past the member)."""
    h = harness()
    heartbeat(h, "c", 0)
    join = h.join("", protocols=protocols(), instance="i1")
    mid, gen = join.member_id, join.generation_id
    assert h.sync("nobody", gen).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync("c", 1).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync("other", gen, instance="i1").error is ErrorCode.FENCED_INSTANCE_ID
    assert h.sync(mid, gen + 7, instance="i1").error is ErrorCode.ILLEGAL_GENERATION
    assert (
        h.sync(mid, gen, instance="i1", protocol_type="connect").error
        is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert (
        h.sync(mid, gen, instance="i1", protocol_name="roundrobin").error
        is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.sync(mid, gen, instance="i1", protocol_type=None, protocol_name=None).error is ErrorCode.NONE
    heartbeat(h, "d", 0)  # a new member: the epoch moves past the classic member's
    assert h.sync(mid, gen, instance="i1").error is ErrorCode.REBALANCE_IN_PROGRESS


def test_sync_serves_the_assignment_at_the_members_consumer_protocol_version() -> None:
    """``testClassicGroupSyncToConsumerGroupWithAllConsumerProtocolVersions``: the assignment is
    serialized at the version of the member's first protocol's metadata."""
    from groupcoord.formats.consumer_protocol import decode_assignment

    for version in (0, 1, 2, 3):
        h = harness()
        first = h.join("", protocols=protocols(version=version))
        h.advance(200)  # a classic group of one ...
        join = h.join(first.member_id, protocols=protocols(version=version))
        h.advance(200)
        assert join.error is ErrorCode.NONE
        h.sync(join.member_id, 1, ((join.member_id, b""),))
        heartbeat(h, "c", 0)  # ... upgraded
        j2 = h.join(join.member_id, protocols=protocols(version=version))
        sync = h.sync(join.member_id, j2.generation_id)
        assert sync.error is ErrorCode.NONE
        assert decode_assignment(sync.assignment).version == version


def test_classic_heartbeats_in_a_consumer_group() -> None:
    """``testClassicGroupHeartbeatToConsumerGroupMaintainsSession`` (a heartbeat renews the
    classic session timeout, the member's own),
    ``testClassicGroupHeartbeatToConsumerWithMemberNotUsingClassicProtocol`` (UNKNOWN_MEMBER_ID)
    and ILLEGAL_GENERATION for another generation."""
    h = harness()
    heartbeat(h, "c", 0)
    first = h.join("", protocols=protocols(), session=500)
    join = h.join(first.member_id, protocols=protocols(), session=500)
    mid, gen = join.member_id, join.generation_id
    assert h.sync(mid, gen).error is ErrorCode.NONE
    assert h.heartbeat("c", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(mid, gen + 1) is ErrorCode.ILLEGAL_GENERATION
    for _ in range(5):
        h.advance(400)
        heartbeat(h, "c", 2, None)
        assert h.heartbeat(mid, gen) in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
    group = h.c.consumer_group(GROUP)
    assert group is not None and mid in group.members


def test_a_classic_member_is_fenced_at_its_session_timeout() -> None:
    """``testConsumerGroupMemberUsingClassicProtocolFencedWhenSessionTimeout``: its own JoinGroup
    session timeout, not ``group.consumer.session.timeout.ms``."""
    h = harness()
    heartbeat(h, "c", 0)
    first = h.join("", protocols=protocols(), session=500)
    join = h.join(first.member_id, protocols=protocols(), session=500)
    assert h.sync(join.member_id, join.generation_id).error is ErrorCode.NONE
    group = h.c.consumer_group(GROUP)
    assert group is not None and join.member_id in group.members
    h.advance(499)
    heartbeat(h, "c", 2, None)
    assert join.member_id in h.c.consumer_group(GROUP).members
    h.advance(2)
    assert join.member_id not in h.c.consumer_group(GROUP).members
    assert h.heartbeat(join.member_id, join.generation_id) is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_classic_member_told_to_rejoin_is_fenced_at_its_join_timeout() -> None:
    """``testConsumerGroupMemberUsingClassicProtocolFencedWhenJoinTimeout``: REBALANCE_IN_PROGRESS
    on Heartbeat schedules a join timeout (its rebalance timeout, if none runs); not re-joining
    within it fences the member even though it keeps heartbeating."""
    h = harness()
    heartbeat(h, "c", 0)
    first = h.join("", protocols=protocols(), session=5000, rebalance=1000)
    join = h.join(first.member_id, protocols=protocols(), session=5000, rebalance=1000)
    mid, gen = join.member_id, join.generation_id
    assert h.sync(mid, gen).error is ErrorCode.NONE
    heartbeat(h, "d", 0)  # the epoch moves on
    assert h.heartbeat(mid, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(600)
    assert h.heartbeat(mid, gen) is ErrorCode.REBALANCE_IN_PROGRESS  # the timer is not pushed back
    h.advance(401)
    assert h.heartbeat(mid, gen) is ErrorCode.UNKNOWN_MEMBER_ID
    assert any(e.reason.value == "classic_join_timeout" and e.member_id == mid for e in h.events)


def test_a_classic_member_that_never_syncs_is_fenced_at_its_sync_timeout() -> None:
    """The sync timeout (``scheduleConsumerGroupSyncTimeout``): JoinGroup arms it with the
    rebalance timeout; a member that never sends SyncGroup is fenced."""
    h = harness()
    heartbeat(h, "c", 0)
    first = h.join("", protocols=protocols(), session=5000, rebalance=1000)
    join = h.join(first.member_id, protocols=protocols(), session=5000, rebalance=1000)
    h.advance(1001)
    group = h.c.consumer_group(GROUP)
    assert group is not None and join.member_id not in group.members


def test_a_batch_leave_group_fences_the_members_together() -> None:
    """``testConsumerGroupMemberUsingClassicProtocolBatchLeaveGroup``: identities by member id or
    instance id, per-member errors (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), the valid ones
    removed with one epoch bump; ``testClassicGroupLeaveToConsumerGroupWithoutValidLeaveGroupMember``:
    no valid member, no record."""
    h = harness()
    heartbeat(h, "c", 0)
    j1 = h.join("", protocols=protocols(), instance="i1")
    f2 = h.join("", protocols=protocols())
    j2 = h.join(f2.member_id, protocols=protocols())
    group = h.c.consumer_group(GROUP)
    assert group is not None
    epoch = group.group_epoch
    before = len(h.sink.records)
    none = h.leave(("ghost", None), ("x", "i9"))
    assert [m.error for m in none.members] == [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID]
    assert len(h.sink.records) == before
    out = h.leave(("", "i1"), (j2.member_id, None), ("wrong", "i1"), ("ghost", None))
    assert [m.error for m in out.members] == [
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]
    assert out.members[0].member_id == j1.member_id
    group = h.c.consumer_group(GROUP)
    assert group is not None and set(group.members) == {"c"} and group.group_epoch == epoch + 1


def test_a_classic_member_commits_with_its_member_epoch_as_generation() -> None:
    """``ConsumerGroupTest#testValidateOffsetCommit`` for a classic member (reference §5): a
    classic OffsetCommit (v8) is accepted at the member epoch; another generation is
    ILLEGAL_GENERATION (not STALE_MEMBER_EPOCH); an unknown member is UNKNOWN_MEMBER_ID."""
    h = harness()
    heartbeat(h, "c", 0)
    first = h.join("", protocols=protocols())
    join = h.join(first.member_id, protocols=protocols())
    mid, gen = join.member_id, join.generation_id
    assert h.commit({("t", 0): 5}, member_id=mid, generation=gen) == {("t", 0): ErrorCode.NONE}
    assert h.commit({("t", 0): 6}, member_id=mid, generation=gen - 1) == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION
    }
    assert h.commit({("t", 0): 6}, member_id="nobody", generation=gen) == {
        ("t", 0): ErrorCode.UNKNOWN_MEMBER_ID
    }
    assert h.fetch({"t": (0,)})[("t", 0)][0] == 5
