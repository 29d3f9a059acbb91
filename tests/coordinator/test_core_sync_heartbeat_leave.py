"""SyncGroup, Heartbeat and LeaveGroup scenarios (reference §6, 30-53)."""

from __future__ import annotations

from coord_harness import DELAY, GROUP, REBALANCE, SESSION, Harness

from groupcoord.coordinator.records import GroupMetadataKey, GroupMetadataValue
from groupcoord.errors import ErrorCode
from groupcoord.formats.consumer_protocol import decode_assignment
from groupcoord.protocol.group_messages import LeaveGroupMemberResponse, SyncGroupRequest


def _completing(h: Harness, n: int = 2, session: int = SESSION) -> tuple[list[str], int]:
    joins = [h.join_new(session=session) for _ in range(n)]
    h.advance(2 * DELAY)
    assert h.state() == "CompletingRebalance"
    return [j.member_id for j in joins], joins[0].generation_id


# ------------------------------------------------------------------ SyncGroup
# 30
def test_sync_for_unknown_group_is_unknown_member_id() -> None:
    h = Harness()
    assert h.sync("m", 1).error is ErrorCode.UNKNOWN_MEMBER_ID


# 31
def test_sync_from_unknown_member_is_unknown_member_id() -> None:
    h = Harness()
    _, gen = _completing(h)
    assert h.sync("ghost", gen).error is ErrorCode.UNKNOWN_MEMBER_ID


# 32
def test_sync_with_wrong_generation_is_illegal_generation() -> None:
    h = Harness()
    (a, _), gen = _completing(h)
    assert h.sync(a, gen + 1).error is ErrorCode.ILLEGAL_GENERATION


# 33
def test_sync_v5_with_inconsistent_protocol_type_or_name_is_rejected() -> None:
    h = Harness()
    (a, b), gen = _completing(h)
    assert h.sync(b, gen, protocol_type="connect").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(b, gen, protocol_name="roundrobin").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # v5 must carry both fields
    assert h.sync(b, gen, protocol_type=None).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # consistent values (v5) and absent values (v4) succeed
    fb = h.sync(b, gen, version=4, protocol_type=None, protocol_name=None)
    fa = h.sync(a, gen, ((a, b"A"), (b, b"B")))
    assert (fa.error, fa.assignment, fa.protocol_type, fa.protocol_name) == (
        ErrorCode.NONE,
        b"A",
        "consumer",
        "range",
    )
    assert (fb.error, fb.assignment) == (ErrorCode.NONE, b"B")


# 34
def test_follower_sync_before_leader_waits_for_the_leaders_assignment() -> None:
    h = Harness()
    (a, b), gen = _completing(h)
    fb = h.sync(b, gen)
    assert not fb.done
    fa = h.sync(a, gen, ((a, b"A"), (b, b"B")))
    assert (fa.error, fa.assignment) == (ErrorCode.NONE, b"A")
    assert (fb.error, fb.assignment) == (ErrorCode.NONE, b"B")
    assert h.state() == "Stable"


def test_follower_reply_waits_until_the_assignment_write_is_durable() -> None:
    h = Harness()
    (a, b), gen = _completing(h)
    fb = h.sync(b, gen)
    h.sink.hold = True
    fa = h.sync(a, gen, ((a, b"A"), (b, b"B")))
    assert not fa.done and not fb.done and h.state() == "CompletingRebalance"
    ((records, _),) = h.sink.held
    (rec,) = records
    assert rec.key == GroupMetadataKey(group=GROUP)
    assert isinstance(rec.value, GroupMetadataValue)
    assert [(m.member_id, m.assignment) for m in rec.value.members] == [(a, b"A"), (b, b"B")]
    h.sink.release()
    assert fa.assignment == b"A" and fb.assignment == b"B"
    assert h.state() == "Stable"


def test_failed_assignment_write_answers_syncs_with_the_mapped_error_and_rebalances() -> None:
    h = Harness()
    (a, b), gen = _completing(h)
    fb = h.sync(b, gen)
    h.sink.fail = ErrorCode.NOT_LEADER_OR_FOLLOWER
    fa = h.sync(a, gen, ((a, b"A"), (b, b"B")))
    assert fa.error is ErrorCode.NOT_COORDINATOR and fb.error is ErrorCode.NOT_COORDINATOR
    assert h.state() == "PreparingRebalance"
    g = h.c.group(GROUP)
    assert g is not None and [m.assignment for m in g.members.values()] == [b"", b""]


def test_request_timed_out_on_assignment_write_maps_to_rebalance_in_progress() -> None:
    h = Harness()
    (a, _b), gen = _completing(h)
    h.sink.fail = ErrorCode.REQUEST_TIMED_OUT
    assert h.sync(a, gen, ((a, b"A"),)).error is ErrorCode.REBALANCE_IN_PROGRESS


# 35
def test_follower_syncing_after_the_leader_gets_its_assignment_at_once() -> None:
    h = Harness()
    (a, b), gen = _completing(h)
    assert h.sync(a, gen, ((a, b"A"), (b, b"B"))).assignment == b"A"
    fb = h.sync(b, gen)
    assert (fb.error, fb.assignment) == (ErrorCode.NONE, b"B")


# 36
def test_member_left_out_of_the_leaders_assignment_gets_an_empty_assignment() -> None:
    h = Harness()
    (a, b), gen = _completing(h)
    h.sync(a, gen, ((a, b"A"),))
    fb = h.sync(b, gen)
    assert fb.error is ErrorCode.NONE
    decoded = decode_assignment(fb.assignment)
    assert (decoded.version, decoded.user_data) == (0, None)
    assert not decoded.partitions


def test_member_left_out_of_a_non_consumer_assignment_gets_empty_bytes() -> None:
    h = Harness()
    a = h.join_new(protocol_type="connect")
    b = h.join_new(protocol_type="connect")
    h.advance(2 * DELAY)
    h.sync(a.member_id, 1, ((a.member_id, b"A"),), protocol_type="connect")
    assert h.sync(b.member_id, 1, protocol_type="connect").assignment == b""


# 37
def test_sync_while_preparing_rebalance_is_rebalance_in_progress() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    h.join(a)
    assert h.sync(b, gen).error is ErrorCode.REBALANCE_IN_PROGRESS


# 38
def test_parked_follower_sync_gets_rebalance_in_progress_when_the_leader_fails() -> None:
    h = Harness()
    (_a, b), gen = _completing(h)
    fb = h.sync(b, gen)
    assert not fb.done
    for _ in range(SESSION // 100):  # b stays alive, a (leader) goes silent
        h.advance(100)
        if fb.done:
            break
        h.heartbeat(b, gen)
    assert fb.error is ErrorCode.REBALANCE_IN_PROGRESS


# 39
def test_followers_that_never_sync_are_removed_at_the_pending_sync_timeout() -> None:
    h = Harness()
    # long sessions: only the pending-sync timeout (armed now, for the rebalance timeout) acts
    (a, b, c), gen = _completing(h, 3, session=10_000)
    assert h.sync(a, gen, ((a, b"A"), (b, b"B"), (c, b"C"))).error is ErrorCode.NONE
    h.advance(REBALANCE - 1)
    assert h.heartbeat(b, gen) is ErrorCode.NONE
    h.advance(1)
    assert h.heartbeat(b, gen) is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(c, gen) is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    assert [e.reason.value for e in h.events if e.type == "member_removed"] == ["sync_timeout"] * 2


# 40
def test_leader_that_never_syncs_is_removed_and_parked_followers_get_rebalance_in_progress() -> None:
    h = Harness()
    ra = h.join_new(session=10_000)  # long session: only the pending-sync timeout can remove it
    rb, rc = h.join_new(), h.join_new()
    h.advance(2 * DELAY)
    a, b, c = ra.member_id, rb.member_id, rc.member_id
    gen = ra.generation_id
    fb, fc = h.sync(b, gen), h.sync(c, gen)
    h.advance(REBALANCE)
    assert fb.error is ErrorCode.REBALANCE_IN_PROGRESS and fc.error is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.heartbeat(a, gen) is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(b, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.heartbeat(c, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    g = h.c.group(GROUP)
    assert g is not None and g.leader_id == b


def test_nobody_syncing_removes_every_member_and_leaves_the_group_empty() -> None:
    h = Harness()
    (a, b), gen = _completing(h)
    h.advance(REBALANCE)
    assert h.state() == "Empty"
    assert h.heartbeat(a, gen) is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(b, gen) is ErrorCode.UNKNOWN_MEMBER_ID
    g = h.c.group(GROUP)
    assert g is not None and g.generation == gen + 1


# 41
def test_all_members_syncing_in_time_cancels_the_pending_sync_timeout() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    for _ in range(4):
        h.advance(REBALANCE // 4)
        assert h.heartbeat(a, gen) is ErrorCode.NONE
        assert h.heartbeat(b, gen) is ErrorCode.NONE
    assert h.state() == "Stable"


def test_retried_sync_answers_the_superseded_parked_sync() -> None:
    h = Harness()
    (a, b), gen = _completing(h)
    first = h.sync(b, gen)
    second = h.sync(b, gen)
    assert first.error is ErrorCode.REBALANCE_IN_PROGRESS and not second.done
    h.sync(a, gen, ((b, b"B"),))
    assert second.assignment == b"B"


# ------------------------------------------------------------------ Heartbeat
# 42
def test_heartbeat_for_unknown_group_is_unknown_member_id() -> None:
    h = Harness()
    assert h.heartbeat("m", 1) is ErrorCode.UNKNOWN_MEMBER_ID


# 43
def test_heartbeat_from_unknown_member_is_unknown_member_id() -> None:
    h = Harness()
    _, gen = h.stable_group(1)
    assert h.heartbeat("ghost", gen) is ErrorCode.UNKNOWN_MEMBER_ID


# 44
def test_heartbeat_with_wrong_generation_is_illegal_generation() -> None:
    h = Harness()
    (a,), gen = h.stable_group(1)
    assert h.heartbeat(a, gen + 1) is ErrorCode.ILLEGAL_GENERATION


# 45
def test_heartbeat_in_completing_rebalance_is_none() -> None:
    h = Harness()
    (a, b), gen = _completing(h)
    assert h.heartbeat(a, gen) is ErrorCode.NONE
    assert h.heartbeat(b, gen) is ErrorCode.NONE


# 46
def test_heartbeat_in_preparing_rebalance_is_rebalance_in_progress_and_renews_the_session() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    ra = h.join(a, rebalance=10_000)  # leader rejoins: PreparingRebalance until b rejoins or 10 s
    for _ in range(3):
        h.advance(SESSION - 100)
        assert h.heartbeat(b, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    assert not ra.done
    g = h.c.group(GROUP)
    assert g is not None and b in g.members  # b's session was renewed each time


# 47
def test_member_that_stops_heartbeating_is_removed_after_the_session_timeout() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    h.advance(SESSION - 1)
    assert h.heartbeat(a, gen) is ErrorCode.NONE
    h.advance(1)  # b's session expires
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(b, gen) is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    ra = h.join(a)
    assert (ra.generation_id, [m.member_id for m in ra.members]) == (gen + 1, [a])


# 48
def test_heartbeats_or_commits_within_the_session_timeout_keep_a_member_forever() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    for i in range(50):
        h.advance(SESSION - 1)
        assert h.heartbeat(a, gen) is ErrorCode.NONE
        result = h.commit({("t", 0): i}, member_id=b, generation=gen)
        assert result == {("t", 0): ErrorCode.NONE}
    assert h.state() == "Stable"


# 49
def test_member_not_rejoining_during_rebalance_is_evicted_when_its_session_expires_first() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    ra = h.join(a, rebalance=10_000)  # long rebalance timeout, b's session (500) expires first
    h.advance(SESSION - 1)
    assert h.heartbeat(b, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(SESSION)
    assert ra.generation_id == gen + 1
    assert h.heartbeat(b, gen) is ErrorCode.UNKNOWN_MEMBER_ID


# ------------------------------------------------------------------ LeaveGroup
# 50
def test_leave_for_unknown_group_answers_unknown_member_id_per_member() -> None:
    h = Harness()
    r = h.leave(("m1", None), ("m2", None))
    assert r.error is ErrorCode.NONE
    assert [m.error for m in r.members] == [ErrorCode.UNKNOWN_MEMBER_ID] * 2
    assert h.leave(("m1", None), version=2).error is ErrorCode.UNKNOWN_MEMBER_ID


# 51
def test_valid_leave_rebalances_and_the_last_leaver_empties_the_group() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    r = h.leave((b, None), version=0)
    assert r.error is ErrorCode.NONE
    assert h.heartbeat(a, gen) is ErrorCode.REBALANCE_IN_PROGRESS
    ra = h.join(a)
    assert ra.generation_id == gen + 1
    h.sync(a, gen + 1, ((a, b"A"),))
    assert h.leave((a, None)).members == (
        LeaveGroupMemberResponse(member_id=a, group_instance_id=None, error=ErrorCode.NONE),
    )
    assert h.state() == "Empty"
    g = h.c.group(GROUP)
    assert g is not None and g.generation == gen + 2
    last = h.sink.records[-1]
    assert last.value == GroupMetadataValue(
        protocol_type="consumer",
        generation=gen + 2,
        protocol=None,
        leader=None,
        current_state_timestamp=h.clock.now_ms(),
        members=(),
    )


# 52
def test_batch_leave_by_instance_id_with_per_member_results() -> None:
    h = Harness()
    lead = h.join(instance="L")
    fol = h.join(instance="F")
    h.advance(2 * DELAY)
    gen = lead.generation_id
    h.sync(lead.member_id, gen, ())
    h.sync(fol.member_id, gen)
    r = h.leave(("", "L"), ("", "F"), ("", "unknown"), ("wrong-id", "L"))
    assert [m.error for m in r.members] == [
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.UNKNOWN_MEMBER_ID,  # L is gone by now
    ]
    assert h.state() == "Empty"


def test_leave_with_wrong_member_id_for_a_known_instance_is_fenced() -> None:
    h = Harness()
    lead = h.join(instance="L")
    h.advance(DELAY)
    r = h.leave(("not-" + lead.member_id, "L"), ("", "L"))
    assert [m.error for m in r.members] == [ErrorCode.FENCED_INSTANCE_ID, ErrorCode.NONE]
    assert h.leave(("x", "L"), version=2).error is ErrorCode.UNKNOWN_MEMBER_ID


# 53
def test_leave_of_a_pending_member_is_none() -> None:
    h = Harness()
    h.stable_group(1)
    pending = h.join()
    assert h.leave((pending.member_id, None)).members[0].error is ErrorCode.NONE
    g = h.c.group(GROUP)
    assert g is not None and g.pending_members == {}
    assert h.state() == "Stable"


def test_leave_answers_the_leavers_parked_join_with_unknown_member_id() -> None:
    h = Harness()
    (a, _b), _ = h.stable_group(2)
    ra = h.join(a)
    h.leave((a, None))
    assert (ra.error, ra.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "")


def test_reply_callbacks_that_call_back_into_the_core_see_the_finished_transition() -> None:
    # The follower's parked SyncGroup is answered REBALANCE_IN_PROGRESS because a new member
    # joined; its callback rejoins at once (as a client would). The rejoin must land in
    # PreparingRebalance, not in the CompletingRebalance the group is leaving.
    h = Harness()
    (a, b), gen = _completing(h)
    rejoin: list[object] = []

    def on_sync(resp: object) -> None:
        rejoin.append(h.join(b))

    h.c.sync_group(
        SyncGroupRequest(
            group_id=GROUP,
            generation_id=gen,
            member_id=b,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(),
            version=5,
        ),
        on_sync,
    )
    c = h.join_new()
    assert len(rejoin) == 1
    assert h.state() == "PreparingRebalance"
    ra = h.join(a)
    (rb,) = rejoin
    assert ra.generation_id == c.generation_id == rb.generation_id == gen + 1  # type: ignore[attr-defined]
