"""JoinGroup scenarios (reference §6, 1-29) under a manual clock."""

from __future__ import annotations

from coord_harness import DELAY, GROUP, REBALANCE, SESSION, Harness

from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import JoinGroupResponseMember


# 1
def test_join_with_empty_group_id_is_invalid_group_id() -> None:
    h = Harness()
    r = h.join(group="")
    assert r.error is ErrorCode.INVALID_GROUP_ID
    assert h.c.group("") is None


# 2
def test_join_with_session_timeout_below_minimum_is_rejected_and_echoes_member_id() -> None:
    h = Harness()
    r = h.join("some-id", session=9)
    assert (r.error, r.member_id, r.generation_id) == (ErrorCode.INVALID_SESSION_TIMEOUT, "some-id", -1)
    assert h.c.group(GROUP) is None


# 3
def test_join_with_session_timeout_above_maximum_is_rejected() -> None:
    h = Harness()
    assert h.join(session=600_001).error is ErrorCode.INVALID_SESSION_TIMEOUT
    # the bounds are inclusive
    assert h.join(session=600_000).error is ErrorCode.MEMBER_ID_REQUIRED
    assert h.join(session=10).error is ErrorCode.MEMBER_ID_REQUIRED


# 4
def test_join_with_member_id_for_unknown_group_is_unknown_member_id() -> None:
    h = Harness()
    r = h.join("ghost")
    assert (r.error, r.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "ghost")
    assert h.c.group(GROUP) is None


# 5
def test_join_with_unknown_member_id_for_existing_group_is_unknown_member_id() -> None:
    h = Harness()
    h.stable_group(1)
    r = h.join("ghost")
    assert r.error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.state() == "Stable"


# 6
def test_join_v4_without_member_id_gets_member_id_required_and_leaves_group_unchanged() -> None:
    h = Harness()
    r = h.join(version=4, client_id="cli")
    assert (r.error, r.member_id, r.generation_id) == (ErrorCode.MEMBER_ID_REQUIRED, "cli-1", -1)
    g = h.c.group(GROUP)
    assert g is not None
    assert g.state.value == "Empty"
    assert list(g.pending_members) == ["cli-1"]
    assert g.members == {}


# 7
def test_join_v3_without_member_id_joins_directly_and_becomes_leader() -> None:
    h = Harness()
    r = h.join(version=3, client_id="old")
    assert not r.done
    h.advance(DELAY)
    assert (r.error, r.generation_id, r.member_id, r.leader) == (ErrorCode.NONE, 1, "old-1", "old-1")
    assert r.protocol_name == "range"


# 8
def test_first_member_is_answered_exactly_after_the_initial_rebalance_delay() -> None:
    h = Harness()
    r = h.join_new()
    h.advance(DELAY - 1)
    assert not r.done
    h.advance(1)
    assert r.error is ErrorCode.NONE
    assert (r.generation_id, r.protocol_name, r.leader, r.protocol_type) == (
        1,
        "range",
        r.member_id,
        "consumer",
    )
    assert r.members == (
        JoinGroupResponseMember(member_id=r.member_id, group_instance_id=None, metadata=b"range-md"),
    )
    assert h.state() == "CompletingRebalance"


# 9
def test_second_member_during_initial_delay_resets_the_delay() -> None:
    # Kafka's InitialDelayedJoin: when the delay fires and a member joined meanwhile, it
    # re-arms for another full delay (capped by the rebalance timeout).
    h = Harness()
    a = h.join_new()
    h.advance(DELAY - 1)
    b = h.join_new()
    h.advance(2)  # past the original deadline
    assert not a.done and not b.done
    h.advance(DELAY - 2)  # t = 2 * DELAY - 1
    assert not a.done
    h.advance(1)  # t = 2 * DELAY: one full delay after the first deadline
    assert a.error is ErrorCode.NONE and b.error is ErrorCode.NONE
    assert a.generation_id == b.generation_id == 1


# 10
def test_staggered_joiners_extend_the_initial_delay_only_up_to_the_rebalance_timeout() -> None:
    h = Harness()
    # rebalance timeout = 2 x delay: three staggered joiners are all answered at exactly 2 x delay.
    a = h.join_new(rebalance=2 * DELAY)
    h.advance(DELAY - 1)
    b = h.join_new(rebalance=2 * DELAY)
    h.advance(DELAY - 1)  # t = 2*DELAY - 2
    c = h.join_new(rebalance=2 * DELAY)
    h.advance(1)
    assert not a.done
    h.advance(1)  # t = 2 * DELAY
    assert [x.error for x in (a, b, c)] == [ErrorCode.NONE] * 3
    assert {x.generation_id for x in (a, b, c)} == {1}


# 11
def test_join_with_empty_protocol_type_is_inconsistent_group_protocol() -> None:
    h = Harness()
    assert h.join(protocol_type="").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocol_type="", instance="i1").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


# 12
def test_join_with_no_protocols_is_inconsistent_and_the_member_may_retry_with_protocols() -> None:
    h = Harness()
    first = h.join()
    assert h.join(first.member_id, protocols=()).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    retry = h.join(first.member_id)
    h.advance(DELAY)
    assert (retry.error, retry.member_id) == (ErrorCode.NONE, first.member_id)


# 13
def test_join_with_a_different_protocol_type_is_inconsistent() -> None:
    h = Harness()
    h.stable_group(1)
    assert h.join(protocol_type="connect").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


# 14
def test_join_with_no_protocol_in_common_is_inconsistent_and_the_first_member_is_unaffected() -> None:
    h = Harness()
    a = h.join_new(protocols=(("range", b""),))
    b = h.join(protocols=(("roundrobin", b""),))
    assert b.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    h.advance(2 * DELAY)
    assert (a.error, a.protocol_name) == (ErrorCode.NONE, "range")


# 15
def test_protocol_vote_picks_the_most_preferred_common_protocol() -> None:
    h = Harness()
    rr = ("roundrobin", b"")
    rg = ("range", b"")
    joins = [h.join_new(protocols=(rg, rr)), h.join_new(protocols=(rg, rr)), h.join_new(protocols=(rr, rg))]
    h.advance(2 * DELAY)
    assert {j.protocol_name for j in joins} == {"range"}


def test_protocol_vote_tie_is_broken_by_the_leaders_preference() -> None:
    h = Harness()
    rr = ("roundrobin", b"")
    rg = ("range", b"")
    a = h.join_new(protocols=(rr, rg))  # leader prefers roundrobin
    h.join_new(protocols=(rg, rr))
    h.advance(2 * DELAY)
    assert a.protocol_name == "roundrobin"


# 16
def test_join_v7_carries_protocol_type_and_errors_carry_null_protocol_fields() -> None:
    h = Harness()
    ok = h.join_new(version=7)
    h.advance(DELAY)
    assert (ok.protocol_type, ok.protocol_name) == ("consumer", "range")
    err7 = h.join("ghost", version=7)
    assert (err7.error, err7.protocol_type, err7.protocol_name) == (ErrorCode.UNKNOWN_MEMBER_ID, None, None)
    err6 = h.join("ghost", version=6)
    assert (err6.protocol_type, err6.protocol_name) == (None, "")


# 17
def test_leader_gets_every_member_and_followers_get_an_empty_list() -> None:
    h = Harness()
    a = h.join_new()
    b = h.join_new(protocols=(("range", b"b-md"), ("roundrobin", b"")))
    h.advance(2 * DELAY)
    assert a.leader == b.leader == a.member_id
    assert a.generation_id == b.generation_id == 1
    assert a.members == (
        JoinGroupResponseMember(member_id=a.member_id, group_instance_id=None, metadata=b"range-md"),
        JoinGroupResponseMember(member_id=b.member_id, group_instance_id=None, metadata=b"b-md"),
    )
    assert b.members == ()


# 18
def test_new_member_in_stable_group_triggers_rebalance_and_a_new_generation() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    c = h.join_new()
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(a, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.heartbeat(b, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    ra, rb = h.join(a), h.join(b)
    assert ra.generation_id == rb.generation_id == c.generation_id == gen + 1
    assert h.state() == "CompletingRebalance"


# 19
def test_follower_rejoin_with_same_metadata_in_stable_does_not_rebalance() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    r = h.join(b)
    assert (r.error, r.generation_id, r.leader, r.members) == (ErrorCode.NONE, gen, a, ())
    assert h.state() == "Stable"
    assert h.heartbeat(a, gen) is ErrorCode.NONE


# 20
def test_leader_rejoin_with_same_metadata_in_stable_rebalances() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    ra = h.join(a)
    assert not ra.done and h.state() == "PreparingRebalance"
    rb = h.join(b)
    assert ra.generation_id == rb.generation_id == gen + 1


# 21
def test_follower_rejoin_with_changed_metadata_in_stable_rebalances() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    rb = h.join(b, protocols=(("range", b"new-md"), ("roundrobin", b"")))
    assert not rb.done and h.state() == "PreparingRebalance"
    ra = h.join(a)
    assert ra.generation_id == gen + 1
    assert ra.members[1].metadata == b"new-md"


# 22
def test_identical_join_resent_in_completing_rebalance_is_answered_at_once() -> None:
    h = Harness()
    a = h.join_new()
    b = h.join_new()
    h.advance(2 * DELAY)
    again_a = h.join(a.member_id)
    again_b = h.join(b.member_id)
    assert (again_a.generation_id, again_a.members) == (1, a.members)
    assert (again_b.generation_id, again_b.members) == (1, ())
    assert h.state() == "CompletingRebalance"


# 23
def test_group_max_size_admits_exactly_n_dynamic_members() -> None:
    h = Harness(group_max_size=2)
    a = h.join_new()
    b = h.join_new()
    c = h.join()  # the group already has 2 members awaiting join
    assert (c.error, c.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    h.advance(2 * DELAY)
    assert a.error is ErrorCode.NONE and b.error is ErrorCode.NONE
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == [a.member_id, b.member_id]
    # the rejected one stays rejected on retry; accepted members can still rejoin
    assert h.join().error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert h.join(b.member_id).error is ErrorCode.NONE


def test_group_max_size_applies_to_static_members() -> None:
    h = Harness(group_max_size=1)
    a = h.join(instance="i1")
    b = h.join(instance="i2")
    assert b.error is ErrorCode.GROUP_MAX_SIZE_REACHED
    h.advance(DELAY)
    assert a.error is ErrorCode.NONE


# 24
def test_group_over_max_size_evicts_the_last_rejoiners() -> None:
    h = Harness(group_max_size=3)
    ids, gen = h.stable_group(3)
    # lower the limit (as after a config change and reload): the same coordinator with max 2
    h2 = Harness(group_max_size=2)
    for _, records in h.sink.appended:
        for rec in records:
            h2.c.replay(rec)
    assert h2.state() == "PreparingRebalance"  # loaded above max size: rebalance at once
    first = h2.join(ids[0])
    second = h2.join(ids[1])
    third = h2.join(ids[2])
    assert (third.error, third.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    assert first.error is ErrorCode.NONE and second.error is ErrorCode.NONE
    assert first.generation_id == gen + 1
    g = h2.c.group(GROUP)
    assert g is not None and list(g.members) == ids[:2]


# 25
def test_member_that_heartbeats_but_never_rejoins_is_dropped_at_rebalance_timeout() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    c = h.join_new()
    ra = h.join(a)
    h.advance(REBALANCE - 100)
    assert h.heartbeat(b, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(100)
    assert ra.generation_id == c.generation_id == gen + 1
    assert h.heartbeat(b, gen + 1) is ErrorCode.UNKNOWN_MEMBER_ID
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == [a, c.member_id]


# 26
def test_leader_that_does_not_rejoin_is_replaced_by_a_rejoined_member() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    rb = h.join(b, protocols=(("range", b"x"),))
    h.heartbeat(a, gen)
    h.advance(REBALANCE)
    assert (rb.error, rb.leader, rb.generation_id) == (ErrorCode.NONE, b, gen + 1)
    assert [m.member_id for m in rb.members] == [b]


# 27
def test_pending_member_that_never_returns_is_dropped_after_its_session_timeout() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    first = h.join()
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED
    h.heartbeat(a, gen)
    h.heartbeat(b, gen)
    h.advance(SESSION - 1)
    g = h.c.group(GROUP)
    assert g is not None and first.member_id in g.pending_members
    h.heartbeat(a, gen)
    h.heartbeat(b, gen)
    h.advance(1)
    assert g.pending_members == {}
    assert h.state() == "Stable"
    assert h.join(first.member_id).error is ErrorCode.UNKNOWN_MEMBER_ID


# 28
def test_join_completion_waits_for_a_pending_member_until_it_joins() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    pending = h.join()
    ra, rb = h.join(a), h.join(b)  # everyone known has rejoined, but a pending member exists
    assert not ra.done
    rc = h.join(pending.member_id)
    assert ra.generation_id == rb.generation_id == rc.generation_id == gen + 1


def test_join_completion_waits_for_a_pending_member_until_it_expires() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    h.join(session=100)  # pending, session 100 ms
    ra, rb = h.join(a), h.join(b)
    h.advance(99)
    assert not ra.done
    h.advance(1)
    assert ra.generation_id == rb.generation_id == gen + 1
    assert len(ra.members) == 2


# 29
def test_new_member_parked_in_a_stuck_rebalance_expires_after_five_minutes() -> None:
    h = Harness(group_max_session_timeout_ms=1_000_000)
    # a static member that never rejoins keeps the join phase from completing (long session)
    s = h.join(instance="static", session=900_000, rebalance=400_000)
    h.advance(DELAY)
    h.sync(s.member_id, 1, ((s.member_id, b""),))
    assert h.state() == "Stable"
    c = h.join_new(rebalance=400_000)
    assert h.state() == "PreparingRebalance"
    h.advance(299_999)
    assert not c.done
    h.advance(1)
    assert (c.error, c.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "")
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == [s.member_id]


def test_join_v0_uses_the_session_timeout_as_rebalance_timeout() -> None:
    h = Harness()
    r = h.join(version=0, session=700, rebalance=-1)
    h.advance(DELAY)
    g = h.c.group(GROUP)
    assert g is not None and g.members[r.member_id].rebalance_timeout_ms == 700


def test_retried_join_answers_the_superseded_parked_join_with_rebalance_in_progress() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    first = h.join(a)
    second = h.join(a)
    assert (first.error, first.member_id) == (ErrorCode.REBALANCE_IN_PROGRESS, a)
    assert not second.done
    h.join(b)
    assert second.generation_id == gen + 1
