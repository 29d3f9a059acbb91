"""Static membership scenarios (reference §6, 54-61; KIP-345, KIP-814)."""

from __future__ import annotations

from coord_harness import DELAY, GROUP, REBALANCE, Harness

from groupcoord.coordinator.records import GroupMetadataValue
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import JoinGroupResponseMember


def _static_stable(h: Harness, **kw: object) -> tuple[str, str, int]:
    """Static leader L and follower F, Stable, L owns b"L", F owns b"F"."""
    lead = h.join(instance="L", **kw)  # type: ignore[arg-type]
    fol = h.join(instance="F", **kw)  # type: ignore[arg-type]
    h.advance(2 * DELAY)
    gen = lead.generation_id
    l_id, f_id = lead.member_id, fol.member_id
    assert h.sync(l_id, gen, ((l_id, b"L"), (f_id, b"F"))).error is ErrorCode.NONE
    assert h.sync(f_id, gen).error is ErrorCode.NONE
    return l_id, f_id, gen


# 54
def test_static_member_joins_without_member_id_required_and_id_starts_with_instance_id() -> None:
    h = Harness()
    r = h.join(instance="inst-1", version=5)
    h.advance(DELAY)
    assert r.error is ErrorCode.NONE
    assert r.member_id.startswith("inst-1-")
    assert r.members == (
        JoinGroupResponseMember(member_id=r.member_id, group_instance_id="inst-1", metadata=b"range-md"),
    )


# 55
def test_static_follower_restart_in_stable_gets_new_id_same_generation_and_old_assignment() -> None:
    h = Harness()
    l_id, f_id, gen = _static_stable(h)
    r = h.join(instance="F")
    assert r.error is ErrorCode.NONE
    assert r.member_id != f_id and r.member_id.startswith("F-")
    assert (r.generation_id, r.leader, r.members, r.skip_assignment) == (gen, l_id, (), False)
    assert h.state() == "Stable"
    assert h.sync(r.member_id, gen, instance="F").assignment == b"F"
    # the old id is fenced everywhere
    assert h.heartbeat(f_id, gen, instance="F") is ErrorCode.FENCED_INSTANCE_ID
    assert h.sync(f_id, gen, instance="F").error is ErrorCode.FENCED_INSTANCE_ID
    assert h.commit({("t", 0): 1}, member_id=f_id, generation=gen, instance="F") == {
        ("t", 0): ErrorCode.FENCED_INSTANCE_ID
    }
    # the replacement was persisted with the new id and the unchanged assignments
    value = h.sink.records[-1].value
    assert isinstance(value, GroupMetadataValue)
    assert [(m.member_id, m.group_instance_id, m.assignment) for m in value.members] == [
        (l_id, "L", b"L"),
        (r.member_id, "F", b"F"),
    ]
    # and each restart gives yet another id
    assert h.join(instance="F").member_id not in (f_id, r.member_id)


# 56
def test_static_leader_restart_v9_gets_skip_assignment_and_the_member_list() -> None:
    h = Harness()
    l_id, f_id, gen = _static_stable(h)
    r = h.join(instance="L", version=9)
    assert r.error is ErrorCode.NONE
    assert (r.leader, r.skip_assignment, r.generation_id) == (r.member_id, True, gen)
    assert r.member_id != l_id
    assert [m.member_id for m in r.members] == [r.member_id, f_id]
    assert h.state() == "Stable"
    assert h.sync(r.member_id, gen, instance="L").assignment == b"L"


def test_static_leader_restart_before_v9_gets_the_old_leader_id_and_no_members() -> None:
    h = Harness()
    l_id, _, gen = _static_stable(h)
    r = h.join(instance="L", version=8)
    assert (r.error, r.leader, r.members, r.skip_assignment) == (ErrorCode.NONE, l_id, (), False)
    assert (r.member_id != l_id, r.generation_id) == (True, gen)
    g = h.c.group(GROUP)
    assert g is not None and g.leader_id == r.member_id


def test_failed_static_replacement_write_reverts_to_the_old_member_id() -> None:
    h = Harness()
    _, f_id, gen = _static_stable(h)
    h.sink.fail = ErrorCode.NOT_LEADER_OR_FOLLOWER
    r = h.join(instance="F")
    assert (r.error, r.member_id) == (ErrorCode.NOT_COORDINATOR, "")
    h.sink.fail = None
    assert h.heartbeat(f_id, gen, instance="F") is ErrorCode.NONE


# 57
def test_known_member_id_with_unknown_instance_id_is_unknown_member_id() -> None:
    h = Harness()
    l_id, _, _ = _static_stable(h)
    assert h.join(l_id, instance="nope").error is ErrorCode.UNKNOWN_MEMBER_ID


# 58
def test_follower_member_id_with_the_leaders_instance_id_is_fenced() -> None:
    h = Harness()
    _, f_id, gen = _static_stable(h)
    assert h.join(f_id, instance="L").error is ErrorCode.FENCED_INSTANCE_ID
    assert h.sync(f_id, gen, instance="L").error is ErrorCode.FENCED_INSTANCE_ID


# 59
def test_duplicate_instance_fences_the_old_process_parked_in_join() -> None:
    h = Harness()
    l_id, f_id, gen = _static_stable(h)
    old = h.join(f_id, instance="F", protocols=(("range", b"changed"),))  # parks: rebalance
    assert not old.done
    dup = h.join(instance="F", protocols=(("range", b"changed"),))
    assert (old.error, old.member_id) == (ErrorCode.FENCED_INSTANCE_ID, f_id)
    assert not dup.done  # still PreparingRebalance: the duplicate waits for the join phase
    h.join(l_id, instance="L")
    assert dup.error is ErrorCode.NONE and dup.generation_id == gen + 1


def test_duplicate_instance_fences_the_old_process_parked_in_sync() -> None:
    h = Harness()
    lead = h.join(instance="L")
    fol = h.join(instance="F")
    h.advance(2 * DELAY)
    parked = h.sync(fol.member_id, 1, instance="F")
    dup = h.join(instance="F")
    assert parked.error is ErrorCode.FENCED_INSTANCE_ID
    assert h.state() == "PreparingRebalance"  # rejoin in CompletingRebalance always rebalances
    h.join(lead.member_id, instance="L")
    assert dup.generation_id == 2


# 60
def test_static_rejoin_that_changes_the_selected_protocol_rebalances() -> None:
    h = Harness()
    l_id, _, gen = _static_stable(h, protocols=(("range", b""), ("roundrobin", b"")))
    # F now only supports roundrobin: the vote result must change
    r = h.join(instance="F", protocols=(("roundrobin", b""),))
    assert not r.done and h.state() == "PreparingRebalance"
    rl = h.join(l_id, instance="L", protocols=(("range", b""), ("roundrobin", b"")))
    assert rl.protocol_name == r.protocol_name == "roundrobin"
    assert rl.generation_id == gen + 1
    assert [e.reason.value for e in h.events if e.to_state == "PreparingRebalance"][-1] == "protocol_changed"


def test_static_rejoin_during_completing_rebalance_rebalances() -> None:
    h = Harness()
    lead = h.join(instance="L")
    h.join(instance="F")
    h.advance(2 * DELAY)
    assert h.state() == "CompletingRebalance"
    dup = h.join(instance="F")
    assert h.state() == "PreparingRebalance"
    h.join(lead.member_id, instance="L")
    assert dup.generation_id == 2


# 61
def test_static_member_that_does_not_rejoin_is_kept_until_its_session_expires() -> None:
    h = Harness()
    lead = h.join(instance="L", session=2_000)
    fol = h.join(instance="F", session=2_000)
    h.advance(2 * DELAY)
    l_id, f_id = lead.member_id, fol.member_id
    h.sync(l_id, 1, ((l_id, b"L"), (f_id, b"F")))
    h.sync(f_id, 1)
    rl = h.join(l_id, instance="L", session=2_000)  # leader forces a rebalance, F never rejoins
    h.advance(REBALANCE)
    assert rl.generation_id == 2
    assert [m.member_id for m in rl.members] == [l_id, f_id]  # F still listed
    g = h.c.group(GROUP)
    assert g is not None and f_id in g.members  # not evicted at the rebalance timeout
    h.sync(l_id, 2, ((l_id, b"L2"),))
    h.advance(REBALANCE - 1)
    assert f_id in g.members
    # F never sends SyncGroup for generation 2: the pending-sync timeout removes it
    # (as in Kafka since 3.0); with a session shorter than the rebalance timeout its
    # session expiry would have removed it first.
    h.heartbeat(l_id, 2, instance="L")
    h.advance(1)
    assert f_id not in g.members and "F" not in g.static_members
    removed = [(e.member_id, e.reason.value) for e in h.events if e.type == "member_removed"]
    assert removed == [(f_id, "sync_timeout")]


def test_static_member_that_does_not_rejoin_expires_with_its_session() -> None:
    h = Harness()
    lead = h.join(instance="L", session=5_000, rebalance=3_000)
    fol = h.join(instance="F", session=1_000, rebalance=3_000)
    h.advance(2 * DELAY)
    l_id, f_id = lead.member_id, fol.member_id
    h.sync(l_id, 1, ((l_id, b"L"), (f_id, b"F")))
    h.sync(f_id, 1)
    rl = h.join(l_id, instance="L", session=5_000, rebalance=3_000)
    h.advance(999)
    g = h.c.group(GROUP)
    assert g is not None and f_id in g.members and not rl.done
    h.advance(1)  # F's session expires during the rebalance: the join completes without it
    assert f_id not in g.members
    assert (rl.generation_id, [m.member_id for m in rl.members]) == (2, [l_id])
    removed = [(e.member_id, e.reason.value) for e in h.events if e.type == "member_removed"]
    assert removed == [(f_id, "session_timeout")]


def test_group_with_only_non_rejoined_static_members_waits_another_rebalance_timeout() -> None:
    h = Harness()
    s = h.join(instance="S", session=5_000)
    h.advance(DELAY)
    h.sync(s.member_id, 1, ((s.member_id, b"S"),))
    d_id = h.join().member_id  # a dynamic member joins, then leaves: S never rejoins
    d = h.join(d_id)
    h.leave((d_id, None))
    assert (d.error, d.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "")
    assert h.state() == "PreparingRebalance"
    h.advance(REBALANCE)
    assert h.state() == "PreparingRebalance"  # stuck: no member rejoined
    rs = h.join(s.member_id, instance="S", session=5_000)
    assert rs.generation_id == 2
