"""Member cores against the coordinator core, one ManualClock: restarts, crashes, protocols.

Members: session.timeout.ms 1000, heartbeat.interval.ms 300, max.poll.interval.ms 3000
(tests/client/member_world.py).
"""

from __future__ import annotations

from member_world import CRASH, GROUP, World, partition_events

from groupcoord.client import messages as m
from groupcoord.client.assignors.base import subscription_from_bytes
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_core import (
    CommitCompleted,
    ConsumerCoordinator,
    PartitionsAssigned,
    PartitionsRevoked,
    StartingPositions,
)
from groupcoord.client.errors import CommitFailedError
from groupcoord.client.states import MemberState
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode

T = [TopicPartition("t", p) for p in range(6)]
ALL6 = frozenset(T)


def _disjoint_cover(*owned: frozenset[TopicPartition]) -> bool:
    return frozenset().union(*owned) == ALL6 and sum(len(o) for o in owned) == len(ALL6)


def test_two_step_join_then_leader_assigns_and_follower_syncs_empty() -> None:
    """FindCoordinator (key = group id, any broker), JoinGroup with "" then with the given id,
    the leader's SyncGroup carries every assignment and the follower's none; then OffsetFetch
    of the starting positions (seed 004's four phases).

    Kafka: AbstractCoordinatorTest.testJoinGroupRequestWithMemberIdRequired,
    ConsumerCoordinatorTest.testNormalJoinGroupLeader / testNormalJoinGroupFollower.
    """
    w = World({"t": 6})
    a = w.add("a", partition_assignment_strategy="range,cooperative-sticky")
    b = w.add("b", partition_assignment_strategy="range,cooperative-sticky")
    w.run(1000)
    (find,) = a.sent_of(m.FindCoordinatorRequest)
    assert find.request == m.FindCoordinatorRequest(key=GROUP) and find.node_id is None
    j1, j2 = (s.request for s in a.sent_of(m.JoinGroupRequest))
    assert j1.member_id == "" and j2.member_id == a.core.generation.member_id != ""
    assert [p for p, _ in j2.protocols] == ["range", "cooperative-sticky"]
    assert j2.rebalance_timeout_ms == 3000 and j2.session_timeout_ms == 1000
    (sa,) = (s.request for s in a.sent_of(m.SyncGroupRequest))
    (sb,) = (s.request for s in b.sent_of(m.SyncGroupRequest))
    assert a.core.is_leader and not b.core.is_leader
    assert {mid for mid, _ in sa.assignments} == {a.core.generation.member_id, b.core.generation.member_id}
    assert sb.assignments == ()
    assert a.owned() == frozenset(T[:3]) and b.owned() == frozenset(T[3:])  # range: members sorted by id
    (fa,) = (s.request for s in a.sent_of(m.OffsetFetchRequest))
    assert m.fetch_partitions(fa) == tuple(T[:3]) and fa.require_stable
    (pos,) = a.events_of(StartingPositions)
    assert pos.positions == tuple((tp, None) for tp in T[:3])


def test_eager_rebalance_revokes_everything_before_the_join_is_sent() -> None:
    """EAGER (range): onPartitionsRevoked(all) before the JoinGroup goes out (the application can
    commit in it), then onPartitionsAssigned(new). Kafka: ConsumerCoordinator.onJoinPrepare."""
    w = World({"t": 6})
    a = w.add("a", partition_assignment_strategy="range")
    w.run(1000)
    assert a.owned() == ALL6
    b = w.add("b", partition_assignment_strategy="range")
    w.run(1000)
    assert _disjoint_cover(a.owned(), b.owned())
    assert partition_events(a) == [
        ("assigned", tuple(T)),
        ("revoked", tuple(T)),
        ("assigned", tuple(T[:3])),
    ]
    (revoked,) = [i for i, (kind, _) in enumerate(partition_events(a)) if kind == "revoked"]
    revoke_time = next(t for t, name, e in w.log if name == "a" and e.startswith("PartitionsRevoked"))
    rejoin = a.sent_of(m.JoinGroupRequest)[-1]
    assert rejoin.at >= revoke_time
    assert revoked == 1
    # the rejoin announces nothing owned (all revoked)
    assert subscription_from_bytes(rejoin.request.protocols[0][1]).owned_partitions == ()


def test_cooperative_rebalance_moves_partitions_in_two_rounds_and_never_doubles_them() -> None:
    """COOPERATIVE (cooperative-sticky, KIP-429): the first rebalance keeps the owners' partitions
    and withholds the moving ones, the owner revokes only those and rejoins, the second round
    hands them over. No partition is ever held by two members.

    Kafka: ConsumerCoordinator.onJoinComplete (revoked -> requestRejoin),
    CooperativeStickyAssignorTest (testAddRemoveConsumerOneTopic).
    """
    w = World({"t": 6})
    a = w.add("a", partition_assignment_strategy="cooperative-sticky")
    w.run(1000)
    assert a.owned() == ALL6 and a.core.rebalance_protocol.name == "COOPERATIVE"
    b = w.add("b", partition_assignment_strategy="cooperative-sticky")
    for _ in range(40):
        w.run(50)
        assert not (a.owned() & b.owned())
    assert _disjoint_cover(a.owned(), b.owned()) and len(a.owned()) == 3
    kinds = partition_events(a)
    assert kinds[0] == ("assigned", tuple(T))
    assert kinds[1][0] == "revoked" and set(kinds[1][1]) == ALL6 - a.owned()  # only the moving ones
    assert ("revoked", tuple(T)) not in kinds
    bs = partition_events(b)
    assert bs[0] == ("assigned", ())  # round one: nothing yet
    assert bs[-1] == ("assigned", tuple(sorted(b.owned())))
    assert w.generation() == 3  # a alone, then two rounds


def test_static_restart_within_session_timeout_gets_the_same_assignment_without_rebalance() -> None:
    """A static member that restarts within session.timeout.ms rejoins with its instance id and
    gets its previous assignment; the generation does not move and the other member sees nothing.

    Kafka: KIP-345; GroupCoordinatorTest.staticMemberRejoinWithKnownMemberId family; the leader
    gets skip_assignment (KIP-814, ConsumerCoordinatorTest.testOnLeaderElectedShouldSkipAssignment).
    """
    w = World({"t": 6})
    a = w.add("a", partition_assignment_strategy="range", group_instance_id="ia")
    b = w.add("b", partition_assignment_strategy="range", group_instance_id="ib")
    w.run(1000)
    gen = w.generation()
    a_had, b_had = a.owned(), b.owned()
    assert _disjoint_cover(a_had, b_had)
    b_events = list(b.events)
    w.crash("a")
    w.run(400)
    a2 = w.restart("a", partition_assignment_strategy="range", group_instance_id="ia")
    w.run(1000)
    assert a2.core.state is MemberState.STABLE
    assert a2.owned() == a_had and b.owned() == b_had
    assert w.generation() == gen == a2.core.generation.generation_id
    assert b.events == b_events  # no revocation, no new assignment
    assert b.sent_of(m.JoinGroupRequest)[-1].at < 1_001_000 + 1000  # b never rejoined
    (j,) = (s.request for s in a2.sent_of(m.JoinGroupRequest))
    assert j.member_id == "" and j.group_instance_id == "ia"
    # a was the leader: the restarted leader is told to skip the assignment (KIP-814) and syncs
    # with none, getting its stored assignment back
    assert a.core.is_leader and a2.core.is_leader
    (s2,) = (s.request for s in a2.sent_of(m.SyncGroupRequest))
    assert s2.assignments == ()


def test_leader_crash_mid_sync_rebalances_the_rest_after_the_session_timeout() -> None:
    """The leader dies after its JoinGroup response, before its SyncGroup: the followers' syncs
    wait, the coordinator expires the leader after session.timeout.ms, the followers rejoin
    (REBALANCE_IN_PROGRESS) and one of them leads the next generation."""
    w = World({"t": 6})
    a = w.add("a", partition_assignment_strategy="range")
    b = w.add("b", partition_assignment_strategy="range")
    w.run(1000)
    assert a.core.is_leader
    w.inject_error("a", m.SyncGroupRequest, CRASH)
    c = w.add("c", partition_assignment_strategy="range")
    w.run(600)
    assert not a.alive
    assert b.core.state is MemberState.COMPLETING_REBALANCE  # its SyncGroup is parked
    w.run(3000)
    assert b.core.state is c.core.state is MemberState.STABLE
    assert _disjoint_cover(b.owned(), c.owned())
    assert b.core.is_leader or c.core.is_leader
    g = w.coordinator.group(GROUP)
    assert g is not None and {mm.client_id for mm in g.members.values()} == {"b", "c"}


def test_coordinator_restart_load_in_progress_then_not_coordinator_rediscovers() -> None:
    """The coordinator's broker restarts: connections break, the member rediscovers it; while it
    loads the group, commits get COORDINATOR_LOAD_IN_PROGRESS and are retried; then the group
    moves to another broker: NOT_COORDINATOR -> FindCoordinator -> the new node, same generation
    and assignment, no rebalance."""
    w = World({"t": 6})
    a = w.add("a", partition_assignment_strategy="range")
    b = w.add("b", partition_assignment_strategy="range")
    w.run(1000)
    gen = w.generation()
    a_had = a.owned()
    w.restart_broker(1)
    w.run(100)
    cid = a.core.commit({T[0]: OffsetAndMetadata(offset=3)}, w.now())
    w.run(300)
    load_answers = [s for s in a.sent_of(m.OffsetCommitRequest)]
    assert len(load_answers) >= 2  # retried while loading
    assert a.events_of(CommitCompleted) == []
    w.finish_loading(1)
    w.run(500)
    (done,) = a.events_of(CommitCompleted)
    assert done.commit_id == cid and done.error is None
    finds_before = len(a.sent_of(m.FindCoordinatorRequest))
    w.move_coordinator(2)
    w.run(1500)
    assert len(a.sent_of(m.FindCoordinatorRequest)) > finds_before
    assert a.sent_of(m.HeartbeatRequest)[-1].node_id == 2
    assert b.sent_of(m.HeartbeatRequest)[-1].node_id == 2
    assert a.core.coordinator is not None and a.core.coordinator.node_id == 2
    assert w.generation() == gen and a.owned() == a_had
    assert a.core.state is b.core.state is MemberState.STABLE
    committed = w.coordinator.group(GROUP).offsets[("t", 0)]  # type: ignore[union-attr]
    assert committed.offset == 3


def test_commit_during_a_rebalance_fails_with_commit_failed_error() -> None:
    """A commit while the member is rebalancing (or after it was reset) raises CommitFailedError.
    Kafka: ConsumerCoordinator.sendOffsetCommitRequest (generationIfStable)."""
    w = World({"t": 6})
    a = w.add("a", partition_assignment_strategy="range")
    w.run(1000)
    a.stalled = True
    w.run(3200)  # poll timeout: a left and is UNJOINED
    assert a.core.state is MemberState.UNJOINED
    cid = a.core.commit({T[0]: OffsetAndMetadata(offset=1)}, w.now())
    a.stalled = False
    w.run(1)
    (done,) = [e for e in a.events_of(CommitCompleted) if e.commit_id == cid]
    assert isinstance(done.error, CommitFailedError)
    assert w.coordinator.group(GROUP).offsets.get(("t", 0)) is None  # type: ignore[union-attr]


def test_close_commits_consumed_positions_then_leaves() -> None:
    """close(): auto-commit of the consumed positions, then revoke and LeaveGroup (dynamic)."""
    w = World({"t": 2})
    a = w.add("a", enable_auto_commit=True)
    w.run(1000)
    a.core.update_positions({TopicPartition("t", 1): OffsetAndMetadata(offset=42)})
    a.core.close(w.now())
    w.run(100)
    assert a.core.closed
    commit = a.sent_of(m.OffsetCommitRequest)[-1]
    (leave,) = a.sent_of(m.LeaveGroupRequest)
    assert (
        commit.at <= leave.at
        and dict(m.committed_offsets(commit.request))[TopicPartition("t", 1)].offset == 42
    )
    assert leave.request.members[0].reason == "the consumer is being closed"
    assert ("revoked", (TopicPartition("t", 0), TopicPartition("t", 1))) in partition_events(a)
    assert w.group_state() == "Empty"
    assert w.coordinator.group(GROUP).offsets[("t", 1)].offset == 42  # type: ignore[union-attr]


def test_static_member_close_does_not_leave() -> None:
    """A static member's close sends no LeaveGroup (AbstractCoordinator.maybeLeaveGroup)."""
    w = World({"t": 2})
    a = w.add("a", group_instance_id="ia")
    w.run(1000)
    a.core.close(w.now())
    w.run(100)
    assert a.core.closed and a.sent_of(m.LeaveGroupRequest) == []
    assert w.group_state() == "Stable"


def test_auto_commit_every_interval_while_stable() -> None:
    """enable.auto.commit: consumed positions are committed every auto.commit.interval.ms."""
    w = World({"t": 2})
    a = w.add("a", enable_auto_commit=True, auto_commit_interval_ms=1000)
    w.run(1000)
    a.core.update_positions({TopicPartition("t", 0): OffsetAndMetadata(offset=9)})
    w.run(2100)
    commits = a.sent_of(m.OffsetCommitRequest)
    assert len(commits) == 2 and commits[1].at - commits[0].at == 1000
    assert w.coordinator.group(GROUP).offsets[("t", 0)].offset == 9  # type: ignore[union-attr]


def test_pattern_subscription_follows_metadata() -> None:
    """subscribe(pattern): the subscription is the matching topics of the metadata; a new
    matching topic makes the member rejoin and get its partitions."""
    w = World({"orders-a": 1, "audit": 1})
    a = w.add("a", metadata_max_age_ms=500)
    a.core.subscribe_pattern(r"orders-.*")
    w.run(1000)
    assert a.owned() == {TopicPartition("orders-a", 0)}
    w.topics["orders-b"] = 2
    w.run(2000)
    assert a.owned() == {
        TopicPartition("orders-a", 0),
        TopicPartition("orders-b", 0),
        TopicPartition("orders-b", 1),
    }
    assert a.core.subscription() == {"orders-a", "orders-b"}


def test_fatal_join_error_stops_the_member() -> None:
    """GROUP_MAX_SIZE_REACHED on JoinGroup is fatal, here from the coordinator's own
    group.max.size. Kafka: AbstractCoordinatorTest.testGroupMaxSizeExceptionIsFatal."""
    w = World({"t": 2}, group_max_size=1)
    a = w.add("a")
    w.run(500)
    b = w.add("b")
    w.run(2000)
    assert a.core.state is MemberState.STABLE
    assert b.core.fatal_error is not None and b.core.fatal_error.code is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert len(b.sent_of(m.JoinGroupRequest)) == 1  # refused at the first step, never retried
    assert b.events_of(PartitionsAssigned) == [] and b.events_of(PartitionsRevoked) == []


def test_leader_rejoins_when_partition_metadata_changes() -> None:
    """The leader refreshes metadata every metadata.max.age.ms; more partitions of a subscribed
    topic make it rejoin, and the new partitions get owners.
    Kafka: ConsumerCoordinatorTest.testMetadataChangeTriggersRebalance."""
    w = World({"t": 6})
    a = w.add("a", partition_assignment_strategy="range", metadata_max_age_ms=1000)
    b = w.add("b", partition_assignment_strategy="range", metadata_max_age_ms=1000)
    w.run(1000)
    gen = w.generation()
    w.topics["t"] = 8
    w.run(2500)
    assert w.generation() == gen + 1
    owned = a.owned() | b.owned()
    assert owned == {TopicPartition("t", p) for p in range(8)} and not (a.owned() & b.owned())
    leader = a if a.core.is_leader else b
    assert "cached metadata has changed" in (leader.sent_of(m.JoinGroupRequest)[-1].request.reason or "")


def test_subscription_change_rejoins_and_cooperative_revokes_only_the_dropped_topic() -> None:
    """Changing the subscription makes the member rejoin (ConsumerCoordinatorTest.testRejoinGroup);
    under COOPERATIVE only the partitions of the dropped topic are revoked before the join
    (ConsumerCoordinator.onJoinPrepare)."""
    w = World({"t": 2, "u": 2})
    a = w.add("a", partition_assignment_strategy="cooperative-sticky")
    w.run(1000)
    assert a.owned() == {
        TopicPartition("t", 0),
        TopicPartition("t", 1),
        TopicPartition("u", 0),
        TopicPartition("u", 1),
    }
    a.core.subscribe(["t"])
    w.run(1000)
    assert a.owned() == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert partition_events(a)[1:] == [
        ("revoked", (TopicPartition("u", 0), TopicPartition("u", 1))),
        ("assigned", ()),
    ]
    assert a.sent_of(m.JoinGroupRequest)[-1].request.reason == "subscription has changed"


def test_unsubscribe_revokes_and_leaves() -> None:
    """unsubscribe(): onPartitionsRevoked with the generation still valid, then LeaveGroup.
    Kafka: ConsumerCoordinatorTest.testUnsubscribeWithValidGeneration."""
    w = World({"t": 2})
    a = w.add("a")
    b = w.add("b")
    w.run(1000)
    had = tuple(sorted(a.owned()))
    a.core.unsubscribe(w.now())
    w.run(1000)
    assert ("revoked", had) in partition_events(a)
    (leave,) = a.sent_of(m.LeaveGroupRequest)
    assert leave.request.members[0].reason == "the consumer unsubscribed from all topics"
    assert b.owned() == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert a.core.state is MemberState.UNJOINED and not a.owned()


def test_manual_assignment_commits_without_a_generation() -> None:
    """assign(): no JoinGroup; commits carry generation -1 and member "" with no instance id.
    Kafka: ConsumerCoordinatorTest.testCommitAfterLeaveGroup."""
    w = World({"t": 2})
    a = w.add("a")
    a.core.unsubscribe(w.now())
    a.core.assign([TopicPartition("t", 1)])
    cid = a.core.commit({TopicPartition("t", 1): OffsetAndMetadata(offset=11)}, w.now())
    w.run(500)
    (done,) = a.events_of(CommitCompleted)
    assert done.commit_id == cid and done.error is None
    (req,) = (s.request for s in a.sent_of(m.OffsetCommitRequest))
    assert (req.generation_id, req.member_id, req.group_instance_id) == (-1, "", None)
    assert a.sent_of(m.JoinGroupRequest) == [] and a.sent_of(m.HeartbeatRequest) == []
    assert w.coordinator.group(GROUP).offsets[("t", 1)].offset == 11  # type: ignore[union-attr]


def test_pattern_members_each_pick_up_a_new_matching_topic() -> None:
    """A new topic matching the pattern: the leader sees it first and rejoins; the assignors give
    a topic only to members whose subscription lists it, so the follower gets a share after its
    own metadata refresh; then the group settles."""
    w = World({"orders-a": 2})
    a = w.add("a", partition_assignment_strategy="roundrobin", metadata_max_age_ms=500)
    a.core.subscribe_pattern(r"orders-.*")
    w.run(1000)
    b = w.add("b", partition_assignment_strategy="roundrobin", metadata_max_age_ms=2000)
    b.core.subscribe_pattern(r"orders-.*")
    w.run(1000)
    assert a.core.is_leader and len(b.owned()) == 1
    w.topics["orders-b"] = 2
    w.run(700)
    assert {tp.topic for tp in a.owned()} == {"orders-a", "orders-b"} and len(a.owned()) == 3
    w.run(2500)
    gen = w.generation()
    w.run(3000)
    assert w.generation() == gen  # settled: no rebalance loop
    assert a.core.subscription() == b.core.subscription() == {"orders-a", "orders-b"}
    assert {tp.topic for tp in b.owned()} == {"orders-a", "orders-b"}
    assert len(a.owned() | b.owned()) == 4 and not (a.owned() & b.owned())


def test_auto_commit_before_an_eager_rebalance_then_revoke_then_join() -> None:
    """With enable.auto.commit, onJoinPrepare commits the consumed positions first, then revokes,
    then the JoinGroup goes out (ConsumerCoordinator.onJoinPrepare; ConsumerCoordinatorTest
    testOnJoinPrepareWithOffsetCommitShouldSuccessAfterRetry's success path)."""
    w = World({"t": 6})
    a = w.add(
        "a", partition_assignment_strategy="range", enable_auto_commit=True, auto_commit_interval_ms=60_000
    )
    w.run(1000)
    a.core.update_positions({T[2]: OffsetAndMetadata(offset=17)})
    w.add("b", partition_assignment_strategy="range")
    w.run(1000)
    commit = a.sent_of(m.OffsetCommitRequest)[-1]
    rejoin = a.sent_of(m.JoinGroupRequest)[-1]
    revoke_time = next(t for t, name, e in w.log if name == "a" and e.startswith("PartitionsRevoked"))
    assert dict(m.committed_offsets(commit.request)) == {T[2]: OffsetAndMetadata(offset=17)}
    assert commit.request.generation_id == 1
    assert commit.at <= revoke_time <= rejoin.at
    assert w.coordinator.group(GROUP).offsets[("t", 2)].offset == 17  # type: ignore[union-attr]


def test_async_commit_is_not_retried_but_a_sync_commit_is() -> None:
    """commitAsync reports a retriable failure without retrying; commitSync retries it
    (ConsumerCoordinator.commitOffsetsAsync / commitOffsetsSync)."""
    w = World({"t": 2})
    a = w.add("a")
    w.run(1000)
    w.inject_error("a", m.OffsetCommitRequest, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    cid = a.core.commit({T[0]: OffsetAndMetadata(offset=1)}, w.now(), asynchronous=True)
    w.run(500)
    (done,) = a.events_of(CommitCompleted)
    assert done.commit_id == cid and done.error is not None
    assert done.error.code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert not isinstance(done.error, CommitFailedError)
    assert len(a.sent_of(m.OffsetCommitRequest)) == 1
    w.inject_error("a", m.OffsetCommitRequest, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    cid2 = a.core.commit({T[0]: OffsetAndMetadata(offset=2)}, w.now())
    w.run(500)
    done2 = a.events_of(CommitCompleted)[-1]
    assert done2.commit_id == cid2 and done2.error is None
    assert len(a.sent_of(m.OffsetCommitRequest)) == 3
    assert w.coordinator.group(GROUP).offsets[("t", 0)].offset == 2  # type: ignore[union-attr]


def test_manual_assignment_poll_alone_finds_the_coordinator_for_a_commit() -> None:
    """An application that only calls poll() still gets its manual-assignment commit out: the
    poll looks the coordinator up when a commit needs it, and never joins."""
    core = ConsumerCoordinator(ConsumerConfig.from_dict({"group.id": GROUP, "enable.auto.commit": False}))
    core.assign([T[0]])
    assert core.poll(1000) == []
    core.commit({T[0]: OffsetAndMetadata(offset=1)}, 1000)
    (out,) = core.poll(1001)
    assert out.request == m.FindCoordinatorRequest(key=GROUP) and out.node is None
    core.on_response(
        out.request_id,
        m.FindCoordinatorResponse(error=ErrorCode.NONE, node=m.Node(node_id=3, host="h", port=1)),
        1002,
    )
    (commit,) = core.poll(1003)
    assert (
        isinstance(commit.request, m.OffsetCommitRequest)
        and commit.node is not None
        and commit.node.node_id == 3
    )
    assert commit.request.generation_id == -1 and commit.request.member_id == ""


def test_join_group_request_timeout_covers_the_rebalance_timeout() -> None:
    """A JoinGroup may be parked for the whole rebalance: its timeout is
    max(request.timeout.ms, max.poll.interval.ms + 5 s); other requests get request.timeout.ms.
    Kafka: AbstractCoordinatorTest.testJoinGroupRequestTimeout /
    testJoinGroupRequestTimeoutLowerBoundedByDefaultRequestTimeout."""
    for poll_interval, request_timeout, expected in ((60_000, 30_000, 65_000), (10_000, 30_000, 30_000)):
        core = ConsumerCoordinator(
            ConsumerConfig.from_dict(
                {
                    "group.id": GROUP,
                    "max.poll.interval.ms": poll_interval,
                    "request.timeout.ms": request_timeout,
                }
            )
        )
        core.subscribe(["t"])
        (find,) = core.poll(0)
        assert find.timeout_ms == request_timeout
        core.on_response(
            find.request_id,
            m.FindCoordinatorResponse(error=ErrorCode.NONE, node=m.Node(node_id=1, host="h", port=1)),
            1,
        )
        (join,) = core.poll(2)
        assert isinstance(join.request, m.JoinGroupRequest) and join.timeout_ms == expected
        # unanswered past its timeout, the core fails it itself and rediscovers the coordinator
        assert core.poll(2 + expected - 1) == []
        (again,) = core.poll(2 + expected)
        assert isinstance(again.request, m.FindCoordinatorRequest)
