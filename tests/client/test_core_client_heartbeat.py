"""The heartbeat thread's logic (seed 002) against the coordinator core, under one ManualClock.

Members: session.timeout.ms 1000, heartbeat.interval.ms 300, max.poll.interval.ms 3000
(tests/client/member_world.py).
"""

from __future__ import annotations

import itertools

from member_world import GROUP, World, partition_events

from groupcoord.client import messages as m
from groupcoord.client.heartbeat import heartbeat_thread_name
from groupcoord.client.states import MemberState
from groupcoord.client.types import TopicPartition

ALL4 = frozenset(TopicPartition("t", p) for p in range(4))


def _members_at_coordinator(w: World) -> set[str]:
    g = w.coordinator.group(GROUP)
    return set() if g is None else {mm.client_id for mm in g.members.values()}


def test_heartbeat_thread_name_is_the_seeds() -> None:
    """AbstractCoordinator.HeartbeatThread: "kafka-coordinator-heartbeat-thread | <group.id>"."""
    assert heartbeat_thread_name("consumer0") == "kafka-coordinator-heartbeat-thread | consumer0"
    assert heartbeat_thread_name("") == "kafka-coordinator-heartbeat-thread"


def test_heartbeats_are_sent_only_in_completing_rebalance_and_stable() -> None:
    """Heartbeats go out between the JoinGroup and SyncGroup responses and in STABLE, never while
    UNJOINED or PREPARING_REBALANCE, even through a long rebalance.

    Kafka: AbstractCoordinatorTest.testHeartbeatSentWhenCompletingRebalance; HeartbeatThread.run
    disables itself when state.hasNotJoinedGroup().
    """
    w = World({"t": 4})
    a = w.add("a", partition_assignment_strategy="range")
    b = w.add("b", partition_assignment_strategy="range")
    w.run(1000)
    assert a.core.state is b.core.state is MemberState.STABLE
    # b stalls and c joins: a learns of the rebalance from a heartbeat, rejoins and waits in
    # PREPARING_REBALANCE for b (up to the rebalance timeout); c waits there from the start
    b.stalled = True
    c = w.add("c", partition_assignment_strategy="range")
    w.run(1500)
    assert a.core.state is c.core.state is MemberState.PREPARING_REBALANCE
    assert c.sent_of(m.HeartbeatRequest) == []
    preparing_since = a.sent_of(m.JoinGroupRequest)[-1].at
    assert w.now() - preparing_since >= 1000  # a long wait, several heartbeat intervals
    assert [s for s in a.sent_of(m.HeartbeatRequest) if s.at > preparing_since] == []
    # b's heartbeats went on while it stalled (answered REBALANCE_IN_PROGRESS)
    assert len([s for s in b.sent_of(m.HeartbeatRequest) if s.at > 1_001_000]) >= 5
    # b comes back; the leader's metadata is slow, so every member waits in
    # COMPLETING_REBALANCE for a while, heartbeating
    w.metadata_delay_ms = 1000
    b.stalled = False
    w.run(700)
    assert {x.core.state for x in (a, b, c)} == {MemberState.COMPLETING_REBALANCE}
    w.run(2000)
    assert {x.core.state for x in (a, b, c)} == {MemberState.STABLE}
    for member in (a, b, c):
        states = {s.state for s in member.sent_of(m.HeartbeatRequest)}
        assert states <= {MemberState.COMPLETING_REBALANCE, MemberState.STABLE}, member.name
        assert MemberState.COMPLETING_REBALANCE in states, member.name
    owned = [x.owned() for x in (a, b, c)]
    assert frozenset().union(*owned) == ALL4 and sum(len(o) for o in owned) == 4


def test_heartbeats_keep_the_interval_while_stable() -> None:
    """One heartbeat per heartbeat.interval.ms, scheduled from the send (Heartbeat.sentHeartbeat)."""
    w = World({"t": 1})
    a = w.add("a")
    w.run(1000)
    start = len(a.sent_of(m.HeartbeatRequest))
    w.run(3000)
    times = [s.at for s in a.sent_of(m.HeartbeatRequest)[start:]]
    assert len(times) == 10
    assert {t2 - t1 for t1, t2 in itertools.pairwise(times)} == {300}
    hb = a.sent_of(m.HeartbeatRequest)[-1].request
    assert hb == m.HeartbeatRequest(
        group_id=GROUP,
        generation_id=a.core.generation.generation_id,
        member_id=a.core.generation.member_id,
        group_instance_id=None,
    )


def test_dynamic_member_that_stops_polling_leaves_after_max_poll_interval() -> None:
    """No poll() for max.poll.interval.ms: the heartbeat thread keeps the session alive until then,
    then maybe_leave_group("consumer poll timeout has expired.") sends LeaveGroup and resets to
    UNJOINED; the other member takes every partition; the next poll rejoins and the old
    partitions are reported lost.

    Kafka: AbstractCoordinator.HeartbeatThread.run (pollTimeoutExpired -> maybeLeaveGroup),
    ConsumerCoordinatorTest.testMaybeLeaveGroup.
    """
    w = World({"t": 4})
    a = w.add("a", partition_assignment_strategy="range")
    b = w.add("b", partition_assignment_strategy="range")
    w.run(1000)
    assert a.owned() | b.owned() == ALL4 and a.owned() and b.owned()
    a_had = a.owned()
    stall_at = w.now()
    a.stalled = True
    w.run(2900)  # just short of max.poll.interval.ms: a is still in, heartbeating
    assert _members_at_coordinator(w) == {"a", "b"}
    assert a.core.state is MemberState.STABLE and a.sent_of(m.LeaveGroupRequest) == []
    assert len([s for s in a.sent_of(m.HeartbeatRequest) if s.at > stall_at]) >= 9
    w.run(400)
    (leave,) = a.sent_of(m.LeaveGroupRequest)
    assert 3000 <= leave.at - stall_at <= 3300
    assert leave.request.members[0].reason == "consumer poll timeout has expired."
    assert a.core.state is MemberState.UNJOINED and a.core.enabled is False
    assert _members_at_coordinator(w) == {"b"}
    assert b.owned() == ALL4
    heartbeats = len(a.sent_of(m.HeartbeatRequest))
    w.run(2000)
    assert len(a.sent_of(m.HeartbeatRequest)) == heartbeats  # disabled while UNJOINED
    a.stalled = False
    w.run(2000)
    assert a.core.state is MemberState.STABLE and a.owned() and a.owned() | b.owned() == ALL4
    assert ("lost", tuple(sorted(a_had))) in partition_events(a)


def test_static_member_that_stops_polling_never_sends_leave_group() -> None:
    """A static member (group.instance.id) past max.poll.interval.ms resets to UNJOINED without a
    LeaveGroup (since Kafka 2.3); the coordinator drops it only at the session timeout.

    Kafka: AbstractCoordinatorTest.testLeaveGroupSentWithGroupInstanceIdUnSet; seed 002 §1.4.
    """
    w = World({"t": 4})
    a = w.add("a", partition_assignment_strategy="range", group_instance_id="ia")
    b = w.add("b", partition_assignment_strategy="range", group_instance_id="ib")
    w.run(1000)
    assert a.owned() and b.owned()
    stall_at = w.now()
    a.stalled = True
    w.run(2900)
    assert _members_at_coordinator(w) == {"a", "b"}
    assert len([s for s in a.sent_of(m.HeartbeatRequest) if s.at > stall_at]) >= 9
    w.run(300)  # the poll timeout passes
    assert a.core.state is MemberState.UNJOINED
    left_at = w.now()
    assert a.sent_of(m.LeaveGroupRequest) == []
    w.run(500)  # within the session timeout: still a member, b still has only its share
    assert _members_at_coordinator(w) == {"a", "b"}
    assert b.owned() != ALL4
    w.run(1000)  # the session timeout expires it
    assert w.now() - left_at <= 1500
    assert _members_at_coordinator(w) == {"b"}
    assert b.owned() == ALL4
    assert a.sent_of(m.LeaveGroupRequest) == []


def test_session_timeout_without_heartbeat_answer_rediscovers_the_coordinator() -> None:
    """session.timeout.ms without a successful heartbeat: the coordinator is marked unknown and
    looked up again (HeartbeatThread.run: sessionTimeoutExpired -> markCoordinatorUnknown);
    the generation is kept.
    """
    w = World({"t": 2})
    a = w.add("a")
    w.run(1000)
    gen = a.core.generation
    # heartbeats vanish (no answer, no error): the request timeout is longer than the session
    w.inject_error("a", m.HeartbeatRequest, lambda req: None)
    for _ in range(5):
        w.inject_error("a", m.HeartbeatRequest, lambda req: None)
    lost_from = w.now()
    w.run(1300)
    finds = [s for s in a.sent_of(m.FindCoordinatorRequest) if s.at > lost_from]
    assert finds, "the member did not look the coordinator up again"
    assert 1000 <= finds[0].at - lost_from <= 1300
    assert a.core.generation.member_id == gen.member_id
