"""Equivalents of Kafka's GroupCoordinatorTest cases for group.max.size, new members, liveness,
Dead groups and groups the coordinator does not own or is loading (issue 11, "Tests Kafka has
and groupcoord lacks"; static members: ``test_kafka_cases_static.py``).

Each test drives the sans-I/O core under the ManualClock with the timeouts of Kafka's own
suite (session and rebalance 500 ms, initial delay 50 ms, group.max.size 4 where it matters)
and names the Kafka test it mirrors (``core/src/test/scala/unit/kafka/coordinator/group/
GroupCoordinatorTest.scala``, 3.x; ``GroupMetadataManagerTest.java``, 4.x). Where Kafka's
test relies on two timers firing at the same instant (its MockTimer fires whatever is due when
the clock jumps), ours separates the deadlines so the outcome does not hang on a tie.
"""

from __future__ import annotations

from coord_harness import DELAY, GROUP, REBALANCE, SESSION, Harness, Reply
from kafka_cases_helpers import (
    MAX_SIZE,
    NONE,
    OTHER_GROUP,
    SUPERSET,
    dead_group,
    static_pair,
    unowned_group,
)

from groupcoord.coordinator.group import Member
from groupcoord.coordinator.records import GroupMetadataValue
from groupcoord.coordinator.state import GroupState
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    ListGroupsResponse,
    OffsetFetchGroup,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
)


# ------------------------------------------------------------------ group.max.size
def test_max_size_admits_four_of_five_two_step_joiners_and_the_fifth_stays_rejected() -> None:
    """Kafka: testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember.

    Five v4+ members get MEMBER_ID_REQUIRED, then all five join with their ids: four are
    admitted (the join phase counts members awaiting join, KAFKA-9885), the fifth gets
    GROUP_MAX_SIZE_REACHED with member id "". Rejoining in CompletingRebalance repeats the
    same answers: the four are known members, the fifth a stranger to a full group.
    """
    h = Harness(group_max_size=MAX_SIZE)
    ids = []
    for _ in range(MAX_SIZE + 1):
        first = h.join()
        assert first.error is ErrorCode.MEMBER_ID_REQUIRED
        ids.append(first.member_id)
    joins = [h.join(m) for m in ids]
    rejected = joins[MAX_SIZE]
    assert (rejected.error, rejected.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    h.advance(2 * DELAY)
    assert [j.error for j in joins] == [NONE] * MAX_SIZE + [ErrorCode.GROUP_MAX_SIZE_REACHED]
    assert {j.generation_id for j in joins[:MAX_SIZE]} == {1}
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == ids[:MAX_SIZE] and not g.pending_members
    assert h.state() == "CompletingRebalance"
    rejoins = [h.join(m) for m in ids]
    assert [r.error for r in rejoins] == [j.error for j in joins]
    assert {r.generation_id for r in rejoins[:MAX_SIZE]} == {1}
    assert h.state() == "CompletingRebalance"


def test_max_size_admits_four_of_five_direct_joiners_and_the_fifth_stays_rejected() -> None:
    """Kafka: testDynamicMembersJoinGroupWithMaxSize (JoinGroup v0-3: no MEMBER_ID_REQUIRED).

    Five members join with an empty id: four are added, the fifth is refused at once with
    GROUP_MAX_SIZE_REACHED and member id "". After the join phase the four rejoin with their
    ids (NONE, same generation) and the fifth, retrying with "", is refused again.
    """
    h = Harness(group_max_size=MAX_SIZE)
    joins = [h.join(version=3) for _ in range(MAX_SIZE + 1)]
    fifth = joins[MAX_SIZE]
    assert (fifth.error, fifth.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    h.advance(2 * DELAY)
    assert [j.error for j in joins] == [NONE] * MAX_SIZE + [ErrorCode.GROUP_MAX_SIZE_REACHED]
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == [j.member_id for j in joins[:MAX_SIZE]]
    rejoins = [h.join(j.member_id, version=3) for j in joins]
    assert [r.error for r in rejoins] == [j.error for j in joins]
    assert len(g.members) == MAX_SIZE and h.state() == "CompletingRebalance"


def test_members_already_awaiting_join_can_rejoin_a_full_group_while_it_rebalances() -> None:
    """Kafka: testDynamicMembersCanReJoinGroupWithMaxSizeWhileRebalancing (KAFKA-9885 path of
    ``acceptJoiningMember``: in PreparingRebalance a member already awaiting join is accepted
    even though the group is full; anyone else is counted against group.max.size).

    Five two-step joiners fill the group (the fifth is refused); all five send a third JoinGroup
    while the group still prepares: the four awaiting members are accepted again (their earlier
    parked joins are superseded), the fifth is refused again; the phase completes with four.
    """
    h = Harness(group_max_size=MAX_SIZE)
    ids = [h.join().member_id for _ in range(MAX_SIZE + 1)]
    second = [h.join(m) for m in ids]
    assert second[MAX_SIZE].error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert h.state() == "PreparingRebalance"
    third = [h.join(m) for m in ids]
    assert [s.error for s in second[:MAX_SIZE]] == [ErrorCode.REBALANCE_IN_PROGRESS] * MAX_SIZE
    assert third[MAX_SIZE].error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert not any(t.done for t in third[:MAX_SIZE])
    h.advance(2 * DELAY)
    assert [t.error for t in third] == [NONE] * MAX_SIZE + [ErrorCode.GROUP_MAX_SIZE_REACHED]
    assert {t.generation_id for t in third[:MAX_SIZE]} == {1}
    assert third[0].leader == ids[0] and len(third[0].members) == MAX_SIZE


def test_existing_member_not_yet_rejoined_is_evicted_when_the_rejoining_group_is_full() -> None:
    """Kafka: KAFKA-9885 / testLastJoiningMembersAreKickedOutWhenReJoiningGroupWithMaxSize, on a
    group that became too big through a lowered group.max.size (replayed from the log).

    Five members are loaded into a group limited to four; the load starts a rebalance. The
    first four to rejoin are accepted; the fifth, a known member that had not rejoined yet, is
    answered GROUP_MAX_SIZE_REACHED and removed from the group.
    """
    source = Harness()
    ids, gen = source.stable_group(MAX_SIZE + 1)
    record = source.sink.records[-1]
    assert isinstance(record.value, GroupMetadataValue) and len(record.value.members) == MAX_SIZE + 1
    h = Harness(group_max_size=MAX_SIZE)
    p = h.c.partition_for(GROUP)
    h.c.unload_partition(p)
    h.c.begin_loading(p)
    h.c.replay(record)
    h.c.complete_loading(p)
    assert h.state() == "PreparingRebalance"
    joins = [h.join(m) for m in ids]
    last = joins[MAX_SIZE]
    assert (last.error, last.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == ids[:MAX_SIZE]
    assert [j.error for j in joins[:MAX_SIZE]] == [NONE] * MAX_SIZE  # all rejoined: completes
    assert {j.generation_id for j in joins[:MAX_SIZE]} == {gen + 1}


# ------------------------------------------------------------------ new members
def test_new_member_join_timeout_ends_when_its_join_completes() -> None:
    """Kafka: testNewMemberTimeoutCompletion.

    A new member's 5-minute join timeout (KAFKA-7610) applies only while it is parked: once
    joined and synced it is no longer new and lives by its own session timeout (here 5 min +
    5 s), not by the join timeout.
    """
    join_timeout = 300_000
    session = join_timeout + 5_000
    h = Harness()
    j = h.join(version=3, session=session)
    h.advance(DELAY)
    assert (j.error, j.generation_id) == (NONE, 1)
    g = h.c.group(GROUP)
    assert g is not None and not any(m.is_new for m in g.members.values())
    assert h.sync(j.member_id, 1, ((j.member_id, b""),)).error is NONE
    h.advance(join_timeout + 100)
    assert list(g.members) == [j.member_id]
    h.advance(session - join_timeout - 101)
    assert list(g.members) == [j.member_id]
    h.advance(1)
    assert not g.members and h.state() == "Empty"


def _second_member_joins_stable_single(h: Harness) -> tuple[str, str, int]:
    first = h.join_new()
    h.advance(DELAY)
    assert (first.error, first.leader) == (NONE, first.member_id)
    assert h.sync(first.member_id, 1, ((first.member_id, b""),)).error is NONE
    other = h.join(version=3)  # a new member: the Stable group starts a rebalance
    rejoin = h.join(first.member_id)  # everyone has joined: the phase completes at once
    assert (rejoin.error, other.error) == (NONE, NONE)
    assert rejoin.generation_id == other.generation_id == 2
    return first.member_id, other.member_id, 2


def test_new_member_that_joined_then_goes_silent_expires_by_session_timeout() -> None:
    """Kafka: testNewMemberFailureAfterJoinGroupCompletion.

    After the join phase completes, a former new member follows the normal session rules:
    with no SyncGroup or heartbeat from anyone, both members expire one session timeout later
    and the group ends Empty.
    """
    h = Harness()
    _second_member_joins_stable_single(h)
    h.advance(SESSION - 1)
    g = h.c.group(GROUP)
    assert g is not None and len(g.members) == 2
    h.advance(1)
    assert not g.members and h.state() == "Empty"


def test_new_member_that_synced_then_goes_silent_expires_by_session_timeout() -> None:
    """Kafka: testNewMemberFailureAfterSyncGroupCompletion: as above, with both members synced
    (Stable) before going silent."""
    h = Harness()
    a, b, gen = _second_member_joins_stable_single(h)
    fb = h.sync(b, gen)
    assert h.sync(a, gen, ((a, b""), (b, b""))).error is NONE and fb.error is NONE
    assert h.state() == "Stable"
    h.advance(SESSION - 1)
    g = h.c.group(GROUP)
    assert g is not None and len(g.members) == 2
    h.advance(1)
    assert not g.members and h.state() == "Empty"


# ------------------------------------------------------------------ Dead groups
def test_join_of_a_new_member_to_a_dead_group_is_coordinator_not_available() -> None:
    """Kafka: testJoinGroupUnknownConsumerNewDeadGroup."""
    h = Harness()
    dead_group(h)
    r = h.join(group="deadGroupId")
    assert (r.error, r.generation_id, r.member_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "")
    r3 = h.join(group="deadGroupId", version=3)
    assert r3.error is ErrorCode.COORDINATOR_NOT_AVAILABLE
    g = h.c.group("deadGroupId")
    assert g is not None and not g.members and not g.pending_members


def test_sync_to_a_dead_group_is_coordinator_not_available() -> None:
    """Kafka: testSyncDeadGroup."""
    h = Harness()
    dead_group(h)
    r = h.sync("memberId", 1, group="deadGroupId")
    assert (r.error, r.assignment) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, b"")


def test_heartbeat_to_a_dead_group_is_coordinator_not_available() -> None:
    """Kafka: testHeartbeatDeadGroup."""
    h = Harness()
    dead_group(h)
    assert h.heartbeat("memberId", 1, group="deadGroupId") is ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_commit_to_a_dead_group_is_coordinator_not_available_per_partition() -> None:
    """Kafka: testOffsetCommitDeadGroup (member "memberId", generation 1)."""
    h = Harness()
    dead_group(h)
    written = len(h.sink.appended)
    res = h.commit({("topic", 0): 0}, member_id="memberId", generation=1, group="deadGroupId")
    assert res == {("topic", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert len(h.sink.appended) == written  # nothing written


def test_single_and_batch_leave_of_a_dead_group_are_coordinator_not_available() -> None:
    """Kafka: testSingleLeaveDeadGroup, testBatchLeaveDeadGroup: a top-level error, no
    per-member results."""
    h = Harness()
    dead_group(h)
    single = h.leave(("memberId", None), group="deadGroupId")
    assert (single.error, single.members) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, ())
    batch = h.leave(("memberId", None), ("memberId", None), group="deadGroupId")
    assert (batch.error, batch.members) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, ())


def test_session_expiry_in_a_dead_group_removes_nobody() -> None:
    """Kafka: testCompleteHeartbeatWithGroupDead: a heartbeat expiry that fires after the group
    died (as Kafka's test does, the group is moved to Dead under its members) is ignored."""
    h = Harness()
    _, l_id, f_id = static_pair(h)
    assert h.heartbeat(l_id, 1) is NONE
    g = h.c.group(GROUP)
    assert g is not None
    g.transition_to(GroupState.DEAD, h.clock.now_ms())
    events = len(h.events)
    h.advance(SESSION + 1)
    assert list(g.members) == [l_id, f_id] and g.state is GroupState.DEAD
    assert not [e for e in h.events[events:] if e.type == "member_removed"]


def test_session_expiry_of_a_member_already_removed_is_ignored() -> None:
    """Kafka: testCompleteHeartbeatWithMemberAlreadyRemoved: the leader is taken out of the
    group behind the timer's back (as Kafka's test does); when its session timer fires nothing
    happens - no rebalance, the follower stays."""
    h = Harness()
    gen, l_id, f_id = static_pair(h)
    assert h.heartbeat(l_id, gen) is NONE
    g = h.c.group(GROUP)
    assert g is not None
    g.remove(l_id)
    h.advance(SESSION // 2)
    assert h.heartbeat(f_id, gen, instance="follower") is NONE
    h.advance(SESSION // 2 + 1)  # past the leader's deadline
    assert h.state() == "Stable" and list(g.members) == [f_id]
    assert h.heartbeat(f_id, gen, instance="follower") is NONE


# ------------------------------------------------------------------ not the coordinator
def test_join_for_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testJoinGroupWrongCoordinator (dynamic and static joins)."""
    h = Harness()
    other = unowned_group(h)
    assert h.join(group=other).error is ErrorCode.NOT_COORDINATOR
    assert h.join(group=other, instance="groupInstanceId").error is ErrorCode.NOT_COORDINATOR
    assert h.c.group(other) is None


def test_heartbeat_for_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testHeartbeatWrongCoordinator."""
    h = Harness()
    assert h.heartbeat("memberId", -1, group=unowned_group(h)) is ErrorCode.NOT_COORDINATOR


def test_leave_for_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testLeaveGroupWrongCoordinator, testStaticMembersWrongCoordinatorBatchLeaveGroup:
    a top-level NOT_COORDINATOR with no per-member results."""
    h = Harness()
    other = unowned_group(h)
    single = h.leave(("", None), group=other)
    assert (single.error, single.members) == (ErrorCode.NOT_COORDINATOR, ())
    batch = h.leave(("", "leader"), ("", "follower"), group=other)
    assert (batch.error, batch.members) == (ErrorCode.NOT_COORDINATOR, ())


def test_describe_of_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testDescribeGroupWrongCoordinator."""
    h = Harness()
    other = unowned_group(h)
    r: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups([other], r)
    (d,) = r.value.groups
    assert (d.group_id, d.error, d.state, d.members) == (other, ErrorCode.NOT_COORDINATOR, "Dead", ())


def test_delete_of_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testDeleteGroupWithWrongCoordinator."""
    h = Harness()
    other = unowned_group(h)
    r: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([other], r)
    assert [(x.group_id, x.error) for x in r.value.results] == [(other, ErrorCode.NOT_COORDINATOR)]
    assert not h.sink.appended


def test_offset_fetch_for_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testFetchOffsetNotCoordinatorForGroup: a group-level error and no partitions."""
    h = Harness()
    other = unowned_group(h)
    r: Reply[OffsetFetchResponse] = Reply()
    h.c.offset_fetch(
        OffsetFetchRequest(
            groups=(
                OffsetFetchGroup(group_id=other, topics=(OffsetFetchTopic(name="topic", partitions=(0,)),)),
            )
        ),
        r,
    )
    (g,) = r.value.groups
    assert (g.group_id, g.error, g.topics) == (other, ErrorCode.NOT_COORDINATOR, ())


# ------------------------------------------------------------------ heartbeat in Empty
def test_heartbeat_to_an_empty_group_is_unknown_member_id() -> None:
    """Kafka: testHeartbeatEmptyGroup: an Empty group that still holds a member (Kafka's test
    builds one directly, as here) answers UNKNOWN_MEMBER_ID so the member rejoins; and the
    ordinary way to an Empty group - everyone left - answers the same."""
    h = Harness()
    assert h.commit({("t", 0): 1}) == {("t", 0): NONE}  # an Empty group
    g = h.c.group(GROUP)
    assert g is not None and g.state is GroupState.EMPTY
    g.add(
        Member(
            member_id="memberId",
            group_instance_id="groupInstanceId",
            client_id="consumer-test",
            client_host="localhost",
            rebalance_timeout_ms=REBALANCE,
            session_timeout_ms=SESSION,
            protocol_type="consumer",
            protocols=SUPERSET,
        )
    )
    assert h.heartbeat("memberId", 0, instance="groupInstanceId") is ErrorCode.UNKNOWN_MEMBER_ID
    h2 = Harness()
    (a,), gen = h2.stable_group(1)
    assert h2.leave((a, None)).members[0].error is NONE
    assert h2.state() == "Empty"
    assert h2.heartbeat(a, gen) is ErrorCode.UNKNOWN_MEMBER_ID


def test_requests_for_a_group_whose_partition_is_loading_get_kafkas_codes() -> None:
    """Kafka: testRequestHandlingWhileLoadingInProgress (3.x codes): while ``otherGroup``'s
    partition loads, JoinGroup (dynamic and static), OffsetCommit, LeaveGroup, DescribeGroups,
    ListGroups and DeleteGroups answer COORDINATOR_LOAD_IN_PROGRESS, SyncGroup answers
    REBALANCE_IN_PROGRESS (the member rejoins) and Heartbeat answers NONE; a group on another
    partition is served as usual, and once loaded the group is described without error."""
    h = Harness()
    (a,), _gen = h.stable_group(1)
    other = OTHER_GROUP
    p = h.c.partition_for(other)
    assert p != h.c.partition_for(GROUP)
    h.c.unload_partition(p)
    h.c.begin_loading(p)
    load = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert h.join("memberId", group=other).error is load
    assert h.join("memberId", group=other, instance="groupInstanceId").error is load
    assert h.sync("memberId", 1, group=other).error is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.commit({("foo", 0): 15}, member_id="memberId", generation=1, group=other) == {("foo", 0): load}
    assert h.heartbeat("memberId", 1, group=other) is NONE
    assert h.leave(("memberId", None), group=other).error is load
    described: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups([other, GROUP], described)
    assert [(d.group_id, d.error, d.state) for d in described.value.groups] == [
        (other, load, "Dead"),
        (GROUP, NONE, "Stable"),
    ]
    listed: Reply[ListGroupsResponse] = Reply()
    h.c.list_groups(None, listed)
    assert listed.value.error is load and [g.group_id for g in listed.value.groups] == [GROUP]
    deleted: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([other], deleted)
    assert [(x.group_id, x.error) for x in deleted.value.results] == [(other, load)]
    assert h.heartbeat(a, 1) is NONE
    h.c.complete_loading(p)
    after: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups([other], after)
    assert [(d.error, d.state) for d in after.value.groups] == [(NONE, "Dead")]
