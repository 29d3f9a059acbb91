"""Equivalents of Kafka's GroupCoordinatorTest cases for joins, static members, liveness and
groups the coordinator does not own (issue 11, "Tests Kafka has and groupcoord lacks").

Each test drives the sans-I/O core under the ManualClock with the timeouts of Kafka's own
suite (session and rebalance 500 ms, initial delay 50 ms, group.max.size 4 where it matters)
and names the Kafka test it mirrors (``core/src/test/scala/unit/kafka/coordinator/group/
GroupCoordinatorTest.scala``, 3.x; ``GroupMetadataManagerTest.java``, 4.x). Where Kafka's
test relies on two timers firing at the same instant (its MockTimer fires whatever is due when
the clock jumps), ours separates the deadlines so the outcome does not hang on a tie.
"""

from __future__ import annotations

from coord_harness import DELAY, GROUP, REBALANCE, SESSION, Harness, Reply

from groupcoord.coordinator.api import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    JoinGroupResponse,
    ListGroupsResponse,
    OffsetFetchGroup,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
)
from groupcoord.coordinator.group import Member
from groupcoord.coordinator.records import GroupMetadataValue
from groupcoord.coordinator.state import GroupState
from groupcoord.errors import ErrorCode

NONE = ErrorCode.NONE
MAX_SIZE = 4  # Kafka's GroupCoordinatorTest GroupMaxSize
SUPERSET = (("range", b"range-md"), ("roundrobin", b"rr-md"))
RANGE_ONLY = (("range", b"range-md"),)
RR_ONLY = (("roundrobin", b"rr-md"),)
OTHER_GROUP = "otherGroup"


# ------------------------------------------------------------------ helpers
def _static_pair(h: Harness, *, session: int = SESSION, rebalance: int = REBALANCE) -> tuple[int, str, str]:
    """Kafka's ``staticMembersJoinAndRebalance``: static leader "leader" and follower "follower"
    (both offering range and roundrobin) joined and synced; returns (generation, leader, follower)."""
    lead = h.join(instance="leader", protocols=SUPERSET, session=session, rebalance=rebalance)
    fol = h.join(instance="follower", protocols=SUPERSET, session=session, rebalance=rebalance)
    h.advance(2 * DELAY)
    assert (lead.error, fol.error, lead.generation_id, fol.generation_id) == (NONE, NONE, 1, 1)
    l_id, f_id = lead.member_id, fol.member_id
    assert lead.leader == l_id
    assert h.sync(l_id, 1, ((l_id, b"L"), (f_id, b"F")), instance="leader").error is NONE
    assert h.sync(f_id, 1, instance="follower").assignment == b"F"
    assert h.state() == "Stable"
    return 1, l_id, f_id


def _instances(r: Reply[JoinGroupResponse]) -> set[str | None]:
    return {m.group_instance_id for m in r.members}


def _dead_group(h: Harness, group: str = "deadGroupId") -> None:
    """A group in state Dead, as Kafka's tests add one to the cache: here a DeleteGroups whose
    tombstones are still being written (Kafka marks the group Dead before it appends them)."""
    assert h.commit({("t", 0): 1}, group=group) == {("t", 0): NONE}
    h.sink.hold = True
    deleted: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([group], deleted)
    g = h.c.group(group)
    assert not deleted.done and g is not None and g.state is GroupState.DEAD


def _unowned_group(h: Harness) -> str:
    """A group whose __consumer_offsets partition this coordinator does not own (Kafka's
    ``otherGroup``, which hashes to the partition its suite never adds as owned)."""
    p = h.c.partition_for(OTHER_GROUP)
    assert p != h.c.partition_for(GROUP)
    h.c.unload_partition(p)
    return OTHER_GROUP


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
    _dead_group(h)
    r = h.join(group="deadGroupId")
    assert (r.error, r.generation_id, r.member_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "")
    r3 = h.join(group="deadGroupId", version=3)
    assert r3.error is ErrorCode.COORDINATOR_NOT_AVAILABLE
    g = h.c.group("deadGroupId")
    assert g is not None and not g.members and not g.pending_members


def test_sync_to_a_dead_group_is_coordinator_not_available() -> None:
    """Kafka: testSyncDeadGroup."""
    h = Harness()
    _dead_group(h)
    r = h.sync("memberId", 1, group="deadGroupId")
    assert (r.error, r.assignment) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, b"")


def test_heartbeat_to_a_dead_group_is_coordinator_not_available() -> None:
    """Kafka: testHeartbeatDeadGroup."""
    h = Harness()
    _dead_group(h)
    assert h.heartbeat("memberId", 1, group="deadGroupId") is ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_commit_to_a_dead_group_is_coordinator_not_available_per_partition() -> None:
    """Kafka: testOffsetCommitDeadGroup (member "memberId", generation 1)."""
    h = Harness()
    _dead_group(h)
    written = len(h.sink.appended)
    res = h.commit({("topic", 0): 0}, member_id="memberId", generation=1, group="deadGroupId")
    assert res == {("topic", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert len(h.sink.appended) == written  # nothing written


def test_single_and_batch_leave_of_a_dead_group_are_coordinator_not_available() -> None:
    """Kafka: testSingleLeaveDeadGroup, testBatchLeaveDeadGroup: a top-level error, no
    per-member results."""
    h = Harness()
    _dead_group(h)
    single = h.leave(("memberId", None), group="deadGroupId")
    assert (single.error, single.members) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, ())
    batch = h.leave(("memberId", None), ("memberId", None), group="deadGroupId")
    assert (batch.error, batch.members) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, ())


def test_session_expiry_in_a_dead_group_removes_nobody() -> None:
    """Kafka: testCompleteHeartbeatWithGroupDead: a heartbeat expiry that fires after the group
    died (as Kafka's test does, the group is moved to Dead under its members) is ignored."""
    h = Harness()
    _, l_id, f_id = _static_pair(h)
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
    gen, l_id, f_id = _static_pair(h)
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
    other = _unowned_group(h)
    assert h.join(group=other).error is ErrorCode.NOT_COORDINATOR
    assert h.join(group=other, instance="groupInstanceId").error is ErrorCode.NOT_COORDINATOR
    assert h.c.group(other) is None


def test_heartbeat_for_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testHeartbeatWrongCoordinator."""
    h = Harness()
    assert h.heartbeat("memberId", -1, group=_unowned_group(h)) is ErrorCode.NOT_COORDINATOR


def test_leave_for_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testLeaveGroupWrongCoordinator, testStaticMembersWrongCoordinatorBatchLeaveGroup:
    a top-level NOT_COORDINATOR with no per-member results."""
    h = Harness()
    other = _unowned_group(h)
    single = h.leave(("", None), group=other)
    assert (single.error, single.members) == (ErrorCode.NOT_COORDINATOR, ())
    batch = h.leave(("", "leader"), ("", "follower"), group=other)
    assert (batch.error, batch.members) == (ErrorCode.NOT_COORDINATOR, ())


def test_describe_of_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testDescribeGroupWrongCoordinator."""
    h = Harness()
    other = _unowned_group(h)
    r: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups([other], r)
    (d,) = r.value.groups
    assert (d.group_id, d.error, d.state, d.members) == (other, ErrorCode.NOT_COORDINATOR, "Dead", ())


def test_delete_of_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testDeleteGroupWithWrongCoordinator."""
    h = Harness()
    other = _unowned_group(h)
    r: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([other], r)
    assert [(x.group_id, x.error) for x in r.value.results] == [(other, ErrorCode.NOT_COORDINATOR)]
    assert not h.sink.appended


def test_offset_fetch_for_a_group_this_coordinator_does_not_own_is_not_coordinator() -> None:
    """Kafka: testFetchOffsetNotCoordinatorForGroup: a group-level error and no partitions."""
    h = Harness()
    other = _unowned_group(h)
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


# ------------------------------------------------------------------ static members
def test_static_rejoin_with_a_made_up_member_id_is_fenced() -> None:
    """Kafka: staticMemberReJoinWithExplicitUnknownMemberId: the instance is known under
    another member id, so the made-up id is a zombie: FENCED_INSTANCE_ID."""
    h = Harness()
    first = h.join(instance="groupInstanceId")
    h.advance(DELAY)
    assert first.error is NONE
    again = h.join("unknown_member", instance="groupInstanceId")
    assert (again.error, again.generation_id) == (ErrorCode.FENCED_INSTANCE_ID, -1)
    g = h.c.group(GROUP)
    assert g is not None and g.static_members == {"groupInstanceId": first.member_id}


def test_old_follower_id_is_fenced_after_a_duplicate_replaced_it_during_a_rebalance() -> None:
    """Kafka: staticMemberFenceDuplicateRejoiningFollowerAfterMemberIdChanged.

    The known leader rejoins (rebalance); a second process with the follower's instance id
    joins with "" and takes the instance over - with the leader already waiting, the join
    phase completes at once (generation 2, the leader sees both instances, the new follower id
    differs from the old). The old follower process, rejoining with its old id, is fenced.
    """
    h = Harness()
    gen, l_id, f_id = _static_pair(h)
    lead = h.join(l_id, instance="leader", protocols=SUPERSET)
    h.advance(1)
    assert h.state() == "PreparingRebalance"
    dup = h.join(instance="follower", protocols=SUPERSET)
    h.advance(1)
    old = h.join(f_id, instance="follower", protocols=SUPERSET)
    assert (lead.error, lead.generation_id, lead.leader) == (NONE, gen + 1, l_id)
    assert _instances(lead) == {"leader", "follower"}
    assert (dup.error, dup.generation_id, dup.members) == (NONE, gen + 1, ())
    assert dup.member_id not in ("", f_id) and dup.leader == l_id
    assert (old.error, old.generation_id, old.members) == (ErrorCode.FENCED_INSTANCE_ID, -1, ())
    assert h.state() == "CompletingRebalance"


def test_static_rejoin_that_changes_the_selected_protocol_rebalances_and_re_elects() -> None:
    """Kafka: staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged.

    The follower restarts offering only roundrobin: the vote's winner changes, so the Stable
    group rebalances. The leader does not rejoin (Kafka's test lets the clock pass the
    rebalance timeout; the leader heartbeats once so that its session is not what ends the
    phase): the join completes without it, the restarted follower leads generation 2 and sees
    both instances, and roundrobin is selected.
    """
    h = Harness()
    gen, l_id, f_id = _static_pair(h)
    r = h.join(instance="follower", protocols=RR_ONLY)
    assert h.state() == "PreparingRebalance" and not r.done
    h.advance(REBALANCE // 2)
    assert h.heartbeat(l_id, gen, instance="leader") is ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(REBALANCE // 2)
    assert (r.error, r.generation_id, r.protocol_name, r.protocol_type) == (
        NONE,
        gen + 1,
        "roundrobin",
        "consumer",
    )
    assert r.member_id not in ("", f_id) and r.leader == r.member_id
    assert _instances(r) == {"leader", "follower"}
    g = h.c.group(GROUP)
    assert g is not None and g.is_leader(r.member_id) and h.state() == "CompletingRebalance"


def test_static_restart_with_a_narrower_protocol_list_keeps_the_generation_and_fences_the_old_id() -> None:
    """Kafka: staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged.

    The follower restarts offering only range (still the selected protocol): no rebalance;
    the new id is persisted and answered NONE in generation 1 with no member list; the old id
    is fenced on JoinGroup and SyncGroup; the new id syncs and gets the old assignment.
    """
    h = Harness()
    gen, _l_id, f_id = _static_pair(h)
    r = h.join(instance="follower", protocols=RANGE_ONLY)
    assert (r.error, r.generation_id, r.members, r.protocol_type) == (NONE, gen, (), "consumer")
    assert r.member_id != f_id and h.state() == "Stable"
    old = h.join(f_id, instance="follower", protocols=RANGE_ONLY)
    assert old.error is ErrorCode.FENCED_INSTANCE_ID
    assert h.sync(
        f_id, gen, instance="follower", protocol_type=None, protocol_name=None, version=4
    ).error is (ErrorCode.FENCED_INSTANCE_ID)
    s = h.sync(r.member_id, gen, instance="follower", protocol_type=None, protocol_name=None, version=4)
    assert (s.error, s.assignment) == (NONE, b"F")


def test_failed_static_restart_write_reverts_to_the_old_id_and_old_protocols() -> None:
    """Kafka: staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged
    PersistenceFailure (4.x GroupMetadataManagerTest version).

    The GroupMetadata write for the restart fails with MESSAGE_TOO_LARGE: the join is answered
    UNKNOWN_SERVER_ERROR (generation 1, member id "", Stable, protocol type kept) and the
    instance maps back to the old member id with its old protocols. The old id may therefore
    still join: offering a different protocol list than the one it had, it starts a rebalance
    that completes when the leader rejoins; both then sync in generation 2.

    3.x differs here: ``updateStaticMemberAndRebalance`` reads the "old" protocols after the
    update, so the failed restart keeps the new list and the old id's rejoin is answered at once
    without a rebalance. We follow 4.x (docs/coordinator-scenarios.md).
    """
    h = Harness()
    gen, l_id, f_id = _static_pair(h)
    h.sink.fail = ErrorCode.MESSAGE_TOO_LARGE
    r = h.join(instance="follower", protocols=RANGE_ONLY)
    h.sink.fail = None
    assert (r.error, r.generation_id, r.member_id, r.members) == (ErrorCode.UNKNOWN_SERVER_ERROR, gen, "", ())
    assert (r.protocol_type, r.protocol_name, r.leader, r.skip_assignment) == (
        "consumer",
        "range",
        l_id,
        False,
    )
    g = h.c.group(GROUP)
    assert g is not None and h.state() == "Stable"
    assert g.static_members == {"leader": l_id, "follower": f_id}
    assert g.members[f_id].protocols == SUPERSET
    old = h.join(f_id, instance="follower", protocols=RANGE_ONLY)
    assert not old.done and h.state() == "PreparingRebalance"
    lead = h.join(l_id, instance="leader", protocols=RANGE_ONLY)
    assert (old.error, lead.error, old.generation_id, lead.generation_id) == (NONE, NONE, gen + 1, gen + 1)
    assert h.sync(l_id, gen + 1, ((l_id, b"L2"), (f_id, b"F2")), instance="leader").error is NONE
    s = h.sync(f_id, gen + 1, instance="follower")
    assert (s.error, s.assignment) == (NONE, b"F2") and h.state() == "Stable"


def test_static_restarts_with_longer_timeouts_are_persisted_without_a_rebalance() -> None:
    """Kafka: staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsAndPersistChange.

    Follower then leader restart with doubled session and rebalance timeouts: both stay in
    generation 1 (Stable), the restarted leader gets skip_assignment with both instances
    listed, and every member - in memory and in the last GroupMetadata record - carries the
    new timeouts.
    """
    h = Harness()
    gen, _l, _f = _static_pair(h)
    fr = h.join(instance="follower", protocols=SUPERSET, session=2 * SESSION, rebalance=2 * REBALANCE)
    assert (fr.error, fr.generation_id, fr.members, fr.skip_assignment) == (NONE, gen, (), False)
    lr = h.join(instance="leader", protocols=SUPERSET, session=2 * SESSION, rebalance=2 * REBALANCE)
    assert (lr.error, lr.generation_id, lr.skip_assignment) == (NONE, gen, True)
    assert lr.leader == lr.member_id and _instances(lr) == {"leader", "follower"}
    assert h.state() == "Stable"
    g = h.c.group(GROUP)
    assert g is not None
    assert {(m.session_timeout_ms, m.rebalance_timeout_ms) for m in g.members.values()} == {
        (2 * SESSION, 2 * REBALANCE)
    }
    value = h.sink.records[-1].value
    assert isinstance(value, GroupMetadataValue) and value.generation == gen
    assert {(m.member_id, m.session_timeout, m.rebalance_timeout) for m in value.members} == {
        (lr.member_id, 2 * SESSION, 2 * REBALANCE),
        (fr.member_id, 2 * SESSION, 2 * REBALANCE),
    }


def test_known_static_leader_rejoin_rebalances_and_a_follower_protocol_change_rebalances_again() -> None:
    """Kafka: staticMemberRejoinWithKnownLeaderIdToTriggerRebalanceAndFollowerWithChangeOfProtocol.

    Leader then follower rejoin with their ids: generation 2 completes as soon as both are in
    (the leader keeps its id and leadership and sees both instances). The follower then
    rejoins offering only range: the group prepares again; the leader never rejoins and its
    session runs out first (Kafka's test relies on the session and the rebalance timeout
    firing together; here the follower's longer rebalance timeout keeps them apart), so the
    follower alone forms generation 3 and leads it.
    """
    h = Harness()
    gen, l_id, f_id = _static_pair(h)
    lead = h.join(l_id, instance="leader", protocols=SUPERSET)
    fol = h.join(f_id, instance="follower", protocols=SUPERSET)
    assert (lead.error, lead.generation_id, lead.leader, lead.member_id) == (NONE, gen + 1, l_id, l_id)
    assert _instances(lead) == {"leader", "follower"}
    assert (fol.error, fol.generation_id, fol.leader, fol.member_id, fol.members) == (
        NONE,
        gen + 1,
        l_id,
        f_id,
        (),
    )
    change = h.join(f_id, instance="follower", protocols=RANGE_ONLY, rebalance=2 * REBALANCE)
    assert h.state() == "PreparingRebalance" and not change.done
    h.advance(SESSION)  # the leader's session (renewed when the join completed) ends
    assert (change.error, change.generation_id, change.leader, change.member_id) == (
        NONE,
        gen + 2,
        f_id,
        f_id,
    )
    assert _instances(change) == {"follower"}
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == [f_id] and h.state() == "CompletingRebalance"


def test_static_leader_missing_the_rebalance_loses_leadership_to_a_rejoined_member() -> None:
    """Kafka: testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout.

    Sessions are twice the rebalance timeout. A new static member joins (rebalance); the old
    follower rejoins, the old leader does not: at the rebalance timeout the join completes
    without it (a static member is kept), a rejoined member leads - with our deterministic rule
    the earliest-added rejoined member, the old follower - and sees all three instances; the
    new member gets no list and the new leader's id.
    """
    h = Harness()
    gen, l_id, f_id = _static_pair(h, session=2 * REBALANCE)
    new = h.join(instance="newMember", protocols=SUPERSET)
    h.advance(1)
    assert h.state() == "PreparingRebalance"
    fol = h.join(f_id, instance="follower", protocols=SUPERSET)
    h.advance(REBALANCE - 2)
    assert not fol.done
    h.advance(1)
    assert (fol.error, fol.generation_id, fol.leader) == (NONE, gen + 1, f_id)
    assert _instances(fol) == {"leader", "follower", "newMember"}
    assert (new.error, new.generation_id, new.leader, new.members) == (NONE, gen + 1, f_id, ())
    g = h.c.group(GROUP)
    assert g is not None and l_id in g.members and h.state() == "CompletingRebalance"


def test_static_member_missing_the_rebalance_stays_until_its_session_ends() -> None:
    """Kafka: testRebalanceCompletesBeforeMemberJoins (3.x and 4.x; 4.x timeouts: session 5 s,
    rebalance 10 s, the new member's session 2.5 s).

    A static member alone in a Stable group; a new member joins. The static member keeps
    heartbeating (REBALANCE_IN_PROGRESS renews its session) but never rejoins. At the
    rebalance timeout the join completes without it: the new member leads generation 2, the
    static member is kept and its next heartbeat (generation 1) is ILLEGAL_GENERATION, which
    does not renew it. It leaves exactly one session timeout after the join completed, which
    starts a rebalance the new member sees on its heartbeat; rejoining alone it forms
    generation 3 and then stays Stable for as long as it heartbeats.

    (Kafka's MockTimers fire the session expiry when the test next moves the clock, so its
    test sees the eviction a little later than the deadline; the deadline is the same.)
    """
    session, rebalance = 5_000, 10_000
    h = Harness()
    first = h.join(instance="leader-instance-id", protocols=RANGE_ONLY, session=session, rebalance=rebalance)
    h.advance(DELAY)
    s_id = first.member_id
    assert (first.error, first.generation_id, first.leader) == (NONE, 1, s_id)
    assert h.sync(s_id, 1, ((s_id, b""),)).error is NONE
    other = h.join(version=3, protocols=RANGE_ONLY, session=2_500, rebalance=rebalance)
    assert h.state() == "PreparingRebalance"
    for _ in range(2):
        h.advance(2_500)
        assert h.heartbeat(s_id, 1) is ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(rebalance - 5_000)  # the rebalance timeout: the join completes without s
    o_id = other.member_id
    assert (other.error, other.generation_id, other.leader) == (NONE, 2, o_id)
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == [s_id, o_id] and h.state() == "CompletingRebalance"
    assert h.sync(o_id, 2, ((o_id, b""),)).error is NONE
    assert h.heartbeat(s_id, 1) is ErrorCode.ILLEGAL_GENERATION
    for _ in range(2):
        h.advance(2_000)
        assert h.heartbeat(o_id, 2) is NONE
    h.advance(session - 4_000 - 1)
    assert h.heartbeat(o_id, 2) is NONE and s_id in g.members
    h.advance(1)  # one session after the join completed
    assert list(g.members) == [o_id]
    assert h.heartbeat(o_id, 2) is ErrorCode.REBALANCE_IN_PROGRESS
    again = h.join(o_id, protocols=RANGE_ONLY, session=2_500, rebalance=rebalance)
    assert (again.error, again.generation_id) == (NONE, 3)
    assert h.sync(o_id, 3, ((o_id, b""),)).error is NONE
    for _ in range(20):
        h.advance(500)
        assert h.heartbeat(o_id, 3) is NONE
    assert h.state() == "Stable"


def test_static_member_missing_the_rebalance_is_listed_to_the_leader_and_leaves_at_session_end() -> None:
    """Reference §6 #61; Kafka: testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout.

    Sessions are longer than the rebalance: the leader rejoins, a new static member joins, the
    follower does not. At the rebalance timeout the join completes: the leader's member list
    still has the follower (a static member is not dropped at the rebalance timeout); the
    follower only leaves when its session - renewed at the join's completion - runs out.
    """
    session, rebalance = 3_000, 5_000
    h = Harness()
    gen, l_id, f_id = _static_pair(h, session=session, rebalance=rebalance)
    new = h.join(instance="newMember", protocols=SUPERSET, session=session, rebalance=rebalance)
    lead = h.join(l_id, instance="leader", protocols=SUPERSET, session=session, rebalance=rebalance)
    h.advance(rebalance // 2)
    assert h.heartbeat(f_id, gen, instance="follower") is ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(rebalance - rebalance // 2)
    assert (lead.error, lead.generation_id, lead.leader, lead.member_id) == (NONE, gen + 1, l_id, l_id)
    assert _instances(lead) == {"leader", "follower", "newMember"}
    assert (new.error, new.leader, new.members) == (NONE, l_id, ())
    g = h.c.group(GROUP)
    assert g is not None and f_id in g.members
    assert h.sync(l_id, gen + 1, ((l_id, b"L"), (new.member_id, b"N")), instance="leader").error is NONE
    assert h.sync(new.member_id, gen + 1, instance="newMember").error is NONE
    for _ in range(2):  # the others stay alive; the follower stays silent
        h.advance(session // 2 - 1)
        assert h.heartbeat(l_id, gen + 1, instance="leader") is NONE
        assert h.heartbeat(new.member_id, gen + 1, instance="newMember") is NONE
    assert f_id in g.members
    h.advance(2)  # exactly one session after the join completed
    assert f_id not in g.members and "follower" not in g.static_members
    removed = [(e.member_id, e.reason.value) for e in h.events if e.type == "member_removed"]
    assert removed == [(f_id, "session_timeout")]


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
