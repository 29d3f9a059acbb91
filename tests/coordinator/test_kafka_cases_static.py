"""Equivalents of Kafka's GroupCoordinatorTest cases for static members (KIP-345): restarts,
fencing, protocol changes, failed writes and members missing a rebalance (issue 11, "Tests
Kafka has and groupcoord lacks"). Set-up as in ``test_kafka_cases.py``; each test names the
Kafka test it mirrors.
"""

from __future__ import annotations

from coord_harness import DELAY, GROUP, REBALANCE, SESSION, Harness
from kafka_cases_helpers import NONE, RANGE_ONLY, RR_ONLY, SUPERSET, instances, static_pair

from groupcoord.coordinator.records import GroupMetadataValue
from groupcoord.errors import ErrorCode


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
    gen, l_id, f_id = static_pair(h)
    lead = h.join(l_id, instance="leader", protocols=SUPERSET)
    h.advance(1)
    assert h.state() == "PreparingRebalance"
    dup = h.join(instance="follower", protocols=SUPERSET)
    h.advance(1)
    old = h.join(f_id, instance="follower", protocols=SUPERSET)
    assert (lead.error, lead.generation_id, lead.leader) == (NONE, gen + 1, l_id)
    assert instances(lead) == {"leader", "follower"}
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
    gen, l_id, f_id = static_pair(h)
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
    assert instances(r) == {"leader", "follower"}
    g = h.c.group(GROUP)
    assert g is not None and g.is_leader(r.member_id) and h.state() == "CompletingRebalance"


def test_static_restart_with_a_narrower_protocol_list_keeps_the_generation_and_fences_the_old_id() -> None:
    """Kafka: staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged.

    The follower restarts offering only range (still the selected protocol): no rebalance;
    the new id is persisted and answered NONE in generation 1 with no member list; the old id
    is fenced on JoinGroup and SyncGroup; the new id syncs and gets the old assignment.
    """
    h = Harness()
    gen, _l_id, f_id = static_pair(h)
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
    gen, l_id, f_id = static_pair(h)
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
    gen, _l, _f = static_pair(h)
    fr = h.join(instance="follower", protocols=SUPERSET, session=2 * SESSION, rebalance=2 * REBALANCE)
    assert (fr.error, fr.generation_id, fr.members, fr.skip_assignment) == (NONE, gen, (), False)
    lr = h.join(instance="leader", protocols=SUPERSET, session=2 * SESSION, rebalance=2 * REBALANCE)
    assert (lr.error, lr.generation_id, lr.skip_assignment) == (NONE, gen, True)
    assert lr.leader == lr.member_id and instances(lr) == {"leader", "follower"}
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
    gen, l_id, f_id = static_pair(h)
    lead = h.join(l_id, instance="leader", protocols=SUPERSET)
    fol = h.join(f_id, instance="follower", protocols=SUPERSET)
    assert (lead.error, lead.generation_id, lead.leader, lead.member_id) == (NONE, gen + 1, l_id, l_id)
    assert instances(lead) == {"leader", "follower"}
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
    assert instances(change) == {"follower"}
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
    gen, l_id, f_id = static_pair(h, session=2 * REBALANCE)
    new = h.join(instance="newMember", protocols=SUPERSET)
    h.advance(1)
    assert h.state() == "PreparingRebalance"
    fol = h.join(f_id, instance="follower", protocols=SUPERSET)
    h.advance(REBALANCE - 2)
    assert not fol.done
    h.advance(1)
    assert (fol.error, fol.generation_id, fol.leader) == (NONE, gen + 1, f_id)
    assert instances(fol) == {"leader", "follower", "newMember"}
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
    gen, l_id, f_id = static_pair(h, session=session, rebalance=rebalance)
    new = h.join(instance="newMember", protocols=SUPERSET, session=session, rebalance=rebalance)
    lead = h.join(l_id, instance="leader", protocols=SUPERSET, session=session, rebalance=rebalance)
    h.advance(rebalance // 2)
    assert h.heartbeat(f_id, gen, instance="follower") is ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(rebalance - rebalance // 2)
    assert (lead.error, lead.generation_id, lead.leader, lead.member_id) == (NONE, gen + 1, l_id, l_id)
    assert instances(lead) == {"leader", "follower", "newMember"}
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


# ------------------------------------------------------------------ more static-member cases
def test_known_follower_changing_protocol_takes_leadership_from_a_leader_missing_the_rebalance() -> None:
    """Kafka: staticMemberRejoinWithFollowerIdAndChangeOfProtocol. Sessions are twice the
    rebalance timeout; the follower rejoins with its id offering only roundrobin; the leader
    does not rejoin. At the rebalance timeout the follower leads generation 2 (keeping its
    id), both instances are listed, roundrobin is selected and the leader stays a member."""
    h = Harness()
    gen, _l_id, f_id = static_pair(h, session=2 * SESSION)
    r = h.join(f_id, instance="follower", protocols=RR_ONLY)
    h.advance(REBALANCE - 1)
    assert not r.done
    h.advance(1)
    assert (r.error, r.generation_id, r.member_id, r.leader, r.protocol_name) == (
        NONE,
        gen + 1,
        f_id,
        f_id,
        "roundrobin",
    )
    assert instances(r) == {"leader", "follower"}
    g = h.c.group(GROUP)
    assert g is not None and g.is_leader(f_id) and "leader" in g.static_members


def test_known_static_leader_rejoin_completes_without_a_follower_whose_session_ended() -> None:
    """Kafka: staticMemberRejoinWithLeaderIdAndKnownMemberId. Sessions are half the rebalance
    timeout: the leader rejoins with its id, the silent follower's session ends during the
    rebalance and it is removed; the leader alone forms generation 2."""
    h = Harness()
    gen, l_id, _f_id = static_pair(h, session=REBALANCE // 2)
    r = h.join(l_id, instance="leader", protocols=SUPERSET, session=REBALANCE // 2)
    h.advance(REBALANCE // 2)
    assert (r.error, r.generation_id, r.member_id, r.leader) == (NONE, gen + 1, l_id, l_id)
    assert instances(r) == {"leader"}
    g = h.c.group(GROUP)
    assert g is not None and "follower" not in g.static_members and h.state() == "CompletingRebalance"


def _stuck_on_a_static_leader(h: Harness) -> str:
    """Kafka's ``groupStuckInRebalanceTimeoutDueToNonjoinedStaticMember``: static leader and
    follower (sessions 1 s), a dynamic member joins and leads generation 2 as the static ones
    do not rejoin; the static follower leaves (rebalance); at the next rebalance timeout the
    dynamic member, which never rejoined, is dropped and only the static leader - which has not
    rejoined either - is left: the group stays in PreparingRebalance at generation 2."""
    _gen, l_id, f_id = static_pair(h, session=2 * SESSION)
    d = h.join(version=3, protocols=SUPERSET, session=2 * SESSION)
    h.advance(REBALANCE)
    assert (d.error, d.generation_id, d.leader, len(d.members)) == (NONE, 2, d.member_id, 3)
    assert h.state() == "CompletingRebalance"
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == [l_id, f_id, d.member_id]
    left = h.leave((f_id, None))
    assert [m.error for m in left.members] == [NONE] and h.state() == "PreparingRebalance"
    h.advance(REBALANCE)
    assert list(g.members) == [l_id] and g.generation == 2 and h.state() == "PreparingRebalance"
    return l_id


def test_static_leader_that_never_rejoins_a_stuck_rebalance_leaves_the_group_empty() -> None:
    """Kafka: testLeaderFailToRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout: the
    stuck group waits another rebalance timeout, by which the static leader's session has
    ended: it is removed, the join completes with nobody, and the group is Empty at
    generation 3 with no leader."""
    h = Harness()
    _stuck_on_a_static_leader(h)
    h.advance(REBALANCE)
    g = h.c.group(GROUP)
    assert g is not None and not g.members and g.leader_id is None
    assert (g.generation, h.state()) == (3, "Empty")


def test_static_leader_rejoining_a_stuck_rebalance_completes_it_alone() -> None:
    """Kafka: testLeaderRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout: the static
    leader restarts (empty member id) while the group is stuck: generation 3 completes at once
    with it alone, under its new member id."""
    h = Harness()
    l_id = _stuck_on_a_static_leader(h)
    r = h.join(instance="leader", protocols=RANGE_ONLY)
    assert (r.error, r.generation_id, r.leader) == (NONE, 3, r.member_id)
    assert r.member_id != l_id and instances(r) == {"leader"}
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == [r.member_id] and h.state() == "CompletingRebalance"


def test_failed_static_restart_write_keeps_the_old_timeouts() -> None:
    """Kafka: staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsButCannotPersistChange:
    the follower restarts with doubled timeouts, the write fails (MESSAGE_TOO_LARGE ->
    UNKNOWN_SERVER_ERROR, generation 1, Stable) and every member keeps the old timeouts."""
    h = Harness()
    gen, _l, _f = static_pair(h)
    h.sink.fail = ErrorCode.MESSAGE_TOO_LARGE
    r = h.join(instance="follower", protocols=SUPERSET, session=2 * SESSION, rebalance=2 * REBALANCE)
    h.sink.fail = None
    assert (r.error, r.generation_id, r.members) == (ErrorCode.UNKNOWN_SERVER_ERROR, gen, ())
    assert h.state() == "Stable"
    g = h.c.group(GROUP)
    assert g is not None
    assert {(m.session_timeout_ms, m.rebalance_timeout_ms) for m in g.members.values()} == {
        (SESSION, REBALANCE)
    }


def test_duplicate_follower_during_completing_rebalance_fences_the_old_sync_and_leads_next() -> None:
    """Kafka: staticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged. The known leader
    and the old follower rejoin (generation 2, CompletingRebalance); the old follower's
    SyncGroup is parked; a duplicate follower joins with "" - the parked sync is answered
    FENCED_INSTANCE_ID and the group prepares again. The leader never rejoins and its session
    ends, so the duplicate forms generation 3 alone and leads it."""
    h = Harness()
    gen, l_id, f_id = static_pair(h)
    lead = h.join(l_id, instance="leader", protocols=SUPERSET)
    h.advance(1)
    old = h.join(f_id, instance="follower", protocols=SUPERSET)
    assert (lead.error, lead.generation_id, lead.member_id, lead.leader) == (NONE, gen + 1, l_id, l_id)
    assert instances(lead) == {"leader", "follower"}
    assert (old.error, old.generation_id, old.member_id, old.leader, old.members) == (
        NONE,
        gen + 1,
        f_id,
        l_id,
        (),
    )
    assert h.state() == "CompletingRebalance"
    old_sync = h.sync(f_id, gen + 1, instance="follower")
    dup = h.join(instance="follower", protocols=SUPERSET)
    assert old_sync.error is ErrorCode.FENCED_INSTANCE_ID
    assert h.state() == "PreparingRebalance" and not dup.done
    h.advance(SESSION)  # the leader's session, renewed when generation 2 completed, ends
    assert (dup.error, dup.generation_id, dup.leader) == (NONE, gen + 2, dup.member_id)
    assert dup.member_id not in (f_id, "") and instances(dup) == {"follower"}
    assert h.state() == "CompletingRebalance"


def test_static_leave_by_instance_with_an_empty_or_wrong_member_id() -> None:
    """Kafka: testLeaveGroupStaticMemberWithUnknownMemberId (member id "" with the instance id:
    NONE, the member leaves) and testLeaveGroupWithFencedInstanceId (another member id with the
    instance id: FENCED_INSTANCE_ID)."""
    h = Harness()
    j = h.join(instance="leader", protocols=SUPERSET)
    h.advance(DELAY)
    assert j.error is NONE
    fenced = h.leave(("some_member", "leader"))
    assert (fenced.error, [m.error for m in fenced.members]) == (NONE, [ErrorCode.FENCED_INSTANCE_ID])
    ok = h.leave(("", "leader"))
    assert (ok.error, [m.error for m in ok.members]) == (NONE, [NONE])
    g = h.c.group(GROUP)
    assert g is not None and not g.members and h.state() == "Empty"
