"""The member core driven by hand, request by request (no coordinator): exact messages."""

from __future__ import annotations

from groupcoord.client import messages as m
from groupcoord.client.assignors.base import Assignment, assignment_to_bytes
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_core import ConsumerCoordinator
from groupcoord.client.errors import FatalGroupError
from groupcoord.client.events import FatalErrorEvent, PartitionsAssigned, PartitionsLost, PartitionsRevoked
from groupcoord.client.outbox import Outbound
from groupcoord.client.states import MemberState
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode as E

NODE = m.Node(node_id=7, host="127.0.0.1", port=9092)
TP = TopicPartition("t", 0)


def _core(**extra: object) -> ConsumerCoordinator:
    settings: dict[str, object] = {
        "group.id": "g",
        "partition.assignment.strategy": "range",
        "enable.auto.commit": False,
        "session.timeout.ms": 1000,
        "heartbeat.interval.ms": 300,
        "max.poll.interval.ms": 3000,
    }
    settings.update(extra)
    core = ConsumerCoordinator(ConsumerConfig.from_dict(settings))
    core.subscribe(["t"])
    return core


def _one(outs: list[Outbound], kind: type) -> Outbound:
    assert [type(o.request) for o in outs] == [kind], outs
    return outs[0]


def _joined_follower(core: ConsumerCoordinator, now: int = 0) -> Outbound:
    """Find, two-step join as a follower of generation 5; returns the SyncGroup outbound."""
    find = _one(core.poll(now), m.FindCoordinatorRequest)
    core.on_response(find.request_id, m.FindCoordinatorResponse(error=E.NONE, node=NODE), now)
    j1 = _one(core.poll(now), m.JoinGroupRequest)
    assert j1.request.member_id == "" and j1.node == NODE
    core.on_response(j1.request_id, m.JoinGroupResponse(error=E.MEMBER_ID_REQUIRED, member_id="m-1"), now)
    j2 = _one(core.poll(now), m.JoinGroupRequest)
    assert j2.request.member_id == "m-1"
    core.on_response(
        j2.request_id,
        m.JoinGroupResponse(
            error=E.NONE,
            generation_id=5,
            protocol_type="consumer",
            protocol_name="range",
            leader="m-0",
            member_id="m-1",
        ),
        now,
    )
    assert core.state is MemberState.COMPLETING_REBALANCE and core.enabled
    return _one(core.poll(now), m.SyncGroupRequest)


def test_follower_handshake_messages() -> None:
    core = _core()
    sync = _joined_follower(core)
    assert sync.request == m.SyncGroupRequest(
        group_id="g",
        generation_id=5,
        member_id="m-1",
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=(),
    )
    core.on_response(
        sync.request_id,
        m.SyncGroupResponse(error=E.NONE, assignment=assignment_to_bytes(Assignment(partitions=(TP,)))),
        1,
    )
    assert core.state is MemberState.STABLE and core.assignment() == {TP}
    assert core.events() == [PartitionsAssigned(partitions=(TP,), generation_id=5)]
    fetch = _one(core.poll(2), m.OffsetFetchRequest)
    assert fetch.request == m.offset_fetch_request(group_id="g", partitions=(TP,), require_stable=True)
    # the heartbeat thread: due every 300 ms from the JoinGroup response
    assert core.heartbeat_poll(299) == []
    hb = _one(core.heartbeat_poll(300), m.HeartbeatRequest)
    assert hb.request == m.HeartbeatRequest(
        group_id="g", generation_id=5, member_id="m-1", group_instance_id=None
    )


def test_successful_sync_after_the_member_left_is_discarded_and_it_rejoins() -> None:
    """The generation is cleared (maybe_leave_group) while the SyncGroup is in flight: its
    successful answer is dropped and the next poll sends JoinGroup again.
    Kafka: ConsumerCoordinatorTest.testPrepareJoinAndRejoinAfterFailedRebalance."""
    core = _core()
    sync = _joined_follower(core)
    core.maybe_leave_group("test", 10)
    leave = _one(core.pending(10), m.LeaveGroupRequest)
    assert leave.request == m.LeaveGroupRequest(
        group_id="g", members=(m.LeaveGroupMember(member_id="m-1", group_instance_id=None, reason="test"),)
    )
    assert core.state is MemberState.UNJOINED
    core.on_response(
        sync.request_id,
        m.SyncGroupResponse(error=E.NONE, assignment=assignment_to_bytes(Assignment(partitions=(TP,)))),
        11,
    )
    assert core.state is MemberState.UNJOINED and core.assignment() == frozenset()
    assert core.events() == []
    join = _one(core.poll(12), m.JoinGroupRequest)
    assert join.request.member_id == ""


def test_stable_member_reset_reports_its_partitions_lost_then_rejoins() -> None:
    """After a reset (heartbeat UNKNOWN_MEMBER_ID) the owned partitions are lost, not revoked
    (ConsumerCoordinator.onJoinPrepare with generation -1)."""
    core = _core()
    sync = _joined_follower(core)
    core.on_response(
        sync.request_id,
        m.SyncGroupResponse(error=E.NONE, assignment=assignment_to_bytes(Assignment(partitions=(TP,)))),
        1,
    )
    core.events()
    _one(core.poll(2), m.OffsetFetchRequest)
    hb = _one(core.heartbeat_poll(300), m.HeartbeatRequest)
    core.on_response(hb.request_id, m.HeartbeatResponse(error=E.UNKNOWN_MEMBER_ID), 301)
    assert core.state is MemberState.UNJOINED and core.generation.member_id == ""
    assert core.poll(302) == []  # the JoinGroup waits until the application saw the loss
    assert core.events() == [PartitionsLost(partitions=(TP,))]
    join = _one(core.poll(303), m.JoinGroupRequest)
    assert join.request.member_id == ""
    assert core.heartbeat_poll(1000) == [] and not core.enabled  # disabled while not joined


def test_inconsistent_protocol_type_or_name_in_responses_is_fatal() -> None:
    """A JoinGroup answer with another protocol type, or a SyncGroup answer naming another
    protocol, is INCONSISTENT_GROUP_PROTOCOL (AbstractCoordinatorTest.testJoinGroupProtocolTypeAndName)."""
    core = _core()
    find = _one(core.poll(0), m.FindCoordinatorRequest)
    core.on_response(find.request_id, m.FindCoordinatorResponse(error=E.NONE, node=NODE), 0)
    j1 = _one(core.poll(0), m.JoinGroupRequest)
    core.on_response(
        j1.request_id,
        m.JoinGroupResponse(
            error=E.NONE,
            generation_id=1,
            protocol_type="connect",
            protocol_name="range",
            leader="x",
            member_id="m",
        ),
        0,
    )
    (ev,) = core.events()
    assert isinstance(ev, FatalErrorEvent) and isinstance(ev.error, FatalGroupError)
    assert ev.error.code is E.INCONSISTENT_GROUP_PROTOCOL
    assert core.poll(1) == []  # stopped

    core2 = _core()
    sync = _joined_follower(core2)
    core2.on_response(
        sync.request_id,
        m.SyncGroupResponse(
            error=E.NONE,
            protocol_type="consumer",
            protocol_name="roundrobin",
            assignment=assignment_to_bytes(Assignment(partitions=(TP,))),
        ),
        1,
    )
    (ev2,) = core2.events()
    assert isinstance(ev2, FatalErrorEvent) and ev2.error.code is E.INCONSISTENT_GROUP_PROTOCOL
    assert core2.assignment() == frozenset()


def test_protocol_name_is_not_checked_after_a_generation_reset() -> None:
    """A SyncGroup answer that arrives after the generation was reset is discarded without the
    protocol-name check (AbstractCoordinatorTest.testNoGenerationWillNotTriggerProtocolNameCheck)."""
    core = _core()
    sync = _joined_follower(core)
    hb = _one(core.heartbeat_poll(300), m.HeartbeatRequest)
    core.on_response(hb.request_id, m.HeartbeatResponse(error=E.ILLEGAL_GENERATION), 301)
    assert core.generation.generation_id == -1 and core.generation.member_id == "m-1"
    core.on_response(
        sync.request_id,
        m.SyncGroupResponse(error=E.NONE, protocol_type="consumer", protocol_name="roundrobin"),
        302,
    )
    assert core.fatal_error is None and core.events() == []
    join = _one(core.poll(303), m.JoinGroupRequest)
    assert join.request.member_id == "m-1"  # ILLEGAL_GENERATION keeps the member id


def test_pre_rebalance_commit_wait_is_bounded_by_the_rebalance_timeout() -> None:
    """onJoinPrepare waits for its auto-commit at most max.poll.interval.ms, then joins anyway
    (ConsumerCoordinatorTest.testOnJoinPrepareWithOffsetCommitShouldKeepJoinAfterRebalanceTimeout)."""
    core = _core(**{"enable.auto.commit": True, "auto.commit.interval.ms": 600_000})
    sync = _joined_follower(core)
    core.on_response(
        sync.request_id,
        m.SyncGroupResponse(error=E.NONE, assignment=assignment_to_bytes(Assignment(partitions=(TP,)))),
        1,
    )
    core.events()
    _one(core.poll(2), m.OffsetFetchRequest)
    core.update_positions({TP: OffsetAndMetadata(offset=4)})
    hb = _one(core.heartbeat_poll(300), m.HeartbeatRequest)
    core.on_response(hb.request_id, m.HeartbeatResponse(error=E.REBALANCE_IN_PROGRESS), 301)
    commit = _one(core.poll(302), m.OffsetCommitRequest)  # never answered
    assert dict(m.committed_offsets(commit.request)) == {TP: OffsetAndMetadata(offset=4)}
    assert commit.request.generation_id == 5
    for t in (500, 1500, 3000):
        outs = core.poll(t)
        assert not any(isinstance(o.request, m.JoinGroupRequest) for o in outs), t
        assert core.events() == []
    assert core.poll(302 + 3000) == []  # the rebalance timeout passed: revoke first ...
    assert core.events() == [PartitionsRevoked(partitions=(TP,))]
    join = _one(core.poll(302 + 3001), m.JoinGroupRequest)  # ... then join
    assert join.request.member_id == "m-1"


def test_heartbeats_go_on_every_interval_while_earlier_ones_wait_behind_a_held_sync() -> None:
    """A broker that answers one connection's requests in order (Kafka, Tansu) holds the
    heartbeats behind a held SyncGroup. The heartbeat thread does not wait for them: one goes
    out every heartbeat.interval.ms from the previous send, answered or not, and the answers
    arriving together after the SyncGroup's leave the member STABLE in its generation.

    Kafka: AbstractCoordinator.HeartbeatThread.run sends when heartbeat.shouldHeartbeat(now)
    (the heartbeat timer, reset to the full interval by Heartbeat.sentHeartbeat); it never reads
    Heartbeat.heartbeatInFlight (only AbstractCoordinatorTest does, through hasInflight()). Each
    answer's listener then calls receiveHeartbeat, or failHeartbeat (retry backoff)."""
    core = _core()
    sync = _joined_follower(core)  # the JoinGroup answer at t=0 enabled the heartbeat thread
    sent: list[Outbound] = []
    for now in range(0, 1000, 50):  # the SyncGroup is held 950 ms; nothing is answered
        sent += core.heartbeat_poll(now)
        assert core.heartbeat_poll(now) == []  # at most one per due time
    assert [(type(o.request), o.request.generation_id) for o in sent] == [(m.HeartbeatRequest, 5)] * 3
    assert [o.request_id for o in sent] == sorted(o.request_id for o in sent)
    assert core.in_flight_count() == 4  # the SyncGroup and three heartbeats
    core.on_response(
        sync.request_id,
        m.SyncGroupResponse(error=E.NONE, assignment=assignment_to_bytes(Assignment(partitions=(TP,)))),
        950,
    )
    for hb in sent:
        core.on_response(hb.request_id, m.HeartbeatResponse(error=E.NONE), 950)
    assert core.state is MemberState.STABLE and not core.rejoin_needed
    assert core.events() == [PartitionsAssigned(partitions=(TP,), generation_id=5)]
    assert core.heartbeat.in_flight is None
    _one(core.poll(950), m.OffsetFetchRequest)
    assert core.in_flight_count() == 1  # that OffsetFetch: no heartbeat is outstanding
    # the next heartbeat is due an interval after the last send (900), not after the answers
    assert core.heartbeat_poll(1199) == []
    _one(core.heartbeat_poll(1200), m.HeartbeatRequest)
