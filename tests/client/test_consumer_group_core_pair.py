"""The consumer-protocol member core (``ConsumerGroupMember``) against the coordinator core
(``GroupCoordinator`` serving ConsumerGroupHeartbeat) in one process under one ManualClock
(``cg848_world``): join, incremental assignment with revocation before assignment and the commit
before revocation, fencing, a static member's temporary leave and return, the poll-interval leave,
and a property test over random schedules (no partition owned twice; every partition owned once
the group is stable).

Each test names the Kafka tests whose behaviour it mirrors: the coordinator side in
``GroupMetadataManagerTest`` (group-coordinator/src/test/.../group/), the member side in
``ConsumerMembershipManagerTest`` and ``ConsumerHeartbeatRequestManagerTest``
(clients/src/test/.../consumer/internals/).
"""

from __future__ import annotations

import pytest
from cg848_world import Member, World848
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.client.consumer_group_events import CallbackMethod
from groupcoord.client.consumer_group_states import ConsumerGroupMemberState as S
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode

TOPICS = {"foo": 6, "bar": 3}
REVOKED = CallbackMethod.ON_PARTITIONS_REVOKED
ASSIGNED = CallbackMethod.ON_PARTITIONS_ASSIGNED
LOST = CallbackMethod.ON_PARTITIONS_LOST


def _world(**cfg: int | str) -> World848:
    w = World848(TOPICS, **cfg)
    w.after_turn = w.owners  # checks single ownership after every instant
    return w


def _stable(w: World848) -> None:
    assert all(x.core.state is S.STABLE for x in w.live()), {x.name: x.core.state for x in w.live()}
    assert set(w.owners()) == w.all_partitions


def _group_epoch(w: World848) -> int:
    g = w.coordinator.consumer_group("g848")
    assert g is not None
    return g.group_epoch


def test_first_member_joins_and_owns_every_partition() -> None:
    """A member's first heartbeat (epoch 0) creates the group at epoch 1 and the member gets every
    partition; it acknowledges with its owned partitions and is STABLE
    (GroupMetadataManagerTest.testMemberJoinsEmptyConsumerGroup;
    ConsumerMembershipManagerTest.testTransitionToReconcilingFromJoining)."""
    w = _world()
    a = w.add("a", ["foo", "bar"])
    w.run(10_000)
    _stable(w)
    assert a.core.member_epoch == 1 and _group_epoch(w) == 1
    assert a.owned() == w.all_partitions
    (first_hb, first_resp) = a.timeline[0][1:], a.timeline[1][1:]
    assert first_hb == ("hb", (0, frozenset()))
    assert first_resp[0] == "hb-resp"
    err, epoch, assigned = first_resp[1]
    assert (err, epoch, assigned) == (ErrorCode.NONE, 1, w.all_partitions)
    # the ids are not yet resolved when the assignment arrives: the member reconciles what it can
    # (nothing, epoch 1) and then, once Metadata names the topics, the whole assignment
    # (ConsumerMembershipManagerTest.testReconcileNewPartitionsAssignedAndRevoked... resolve path)
    assert [d for _, d in a.kinds("cb")] == [(ASSIGNED, frozenset()), (ASSIGNED, w.all_partitions)]


def test_second_member_gets_partitions_only_after_first_revokes_and_commits() -> None:
    """A second member joins: the group epoch is bumped, the first member is told to revoke
    what moves, commits its consumed positions (auto-commit on), runs onPartitionsRevoked and
    acknowledges; only then does the second member get those partitions - never both at once
    (GroupMetadataManagerTest.testReconciliationProcess;
    ConsumerMembershipManagerTest.testReconcilePartitionsRevokedWithSuccessfulAutoCommitNoCallbacks)."""
    w = _world()
    a = w.add("a", ["foo", "bar"], **{"enable.auto.commit": True, "auto.commit.interval.ms": 600_000})
    w.run(10_000)
    a.core.update_positions({tp: OffsetAndMetadata(offset=7) for tp in w.all_partitions})
    b = w.add("b", ["foo", "bar"])
    w.run(30_000)
    _stable(w)
    assert a.core.member_epoch == b.core.member_epoch == _group_epoch(w) == 2
    moved = b.owned()
    assert len(moved) in (4, 5) and moved | a.owned() == w.all_partitions
    [(i_rev, (method, revoked))] = [(i, d) for i, d in a.kinds("cb") if d[0] is REVOKED]
    assert method is REVOKED and revoked == moved
    commits = [(i, parts) for i, parts in a.kinds("commit") if parts & moved]
    assert commits and commits[0][0] < i_rev, "the commit before revocation comes first"
    assert moved <= commits[0][1]
    ack = [i for i, (epoch, owned) in a.kinds("hb") if owned is not None and i > i_rev and not owned & moved]
    assert ack, "the first member acknowledges the revocation"
    # b is assigned the moved partitions only in an answer after a's acknowledgement
    got = [(t, d[2]) for t, k, d in b.timeline if k == "hb-resp" and d[2]]
    assert got and got[-1][1] == moved
    assert got[0][0] >= a.timeline[ack[0]][0]


def test_fenced_member_loses_partitions_and_rejoins_at_epoch_zero() -> None:
    """FENCED_MEMBER_EPOCH on a heartbeat: the member releases its partitions as lost
    (onPartitionsLost), rejoins with epoch 0 and the same member id, and gets its partitions back
    (ConsumerMembershipManagerTest.testFencingWhenStateIsStable,
    testOnPartitionsLostNoErrorIfNoCallbackConfigured; GroupMetadataManagerTest
    .testConsumerGroupMemberEpochValidation for the rejoin)."""
    w = _world()
    a = w.add("a", ["foo", "bar"])
    w.run(10_000)
    a.inject.append(ErrorCode.FENCED_MEMBER_EPOCH)
    mark = len(a.timeline)
    w.run(10_000)
    after = a.timeline[mark:]
    kinds = [(k, d) for _, k, d in after]
    assert kinds[1] == ("hb-resp", (ErrorCode.FENCED_MEMBER_EPOCH, 0, None))
    lost = [d for k, d in kinds if k == "cb" and d[0] is LOST]
    assert lost == [(LOST, w.all_partitions)]
    rejoin = [d for k, d in kinds if k == "hb"][1]
    assert rejoin == (0, frozenset())
    _stable(w)
    assert a.core.member_id == "a" and a.owned() == w.all_partitions


def test_static_member_temporary_leave_keeps_its_partitions_for_its_return() -> None:
    """A static member closing sends epoch -2: the coordinator keeps its assignment (the group
    epoch does not move, no one else gets its partitions) until it returns with the same
    group.instance.id, when it gets the same partitions back
    (GroupMetadataManagerTest.testStaticMemberGetsBackAssignmentUponRejoin;
    ConsumerMembershipManagerTest.testLeaveGroupEpoch)."""
    w = _world()
    s = w.add("s1", ["foo", "bar"], **{"group.instance.id": "inst"})
    d = w.add("d", ["foo", "bar"])
    w.run(40_000)
    _stable(w)
    mine = s.owned()
    epoch = _group_epoch(w)
    s.core.close(w.now())
    w.run(1_000)
    assert s.core.closed
    leave = [dd for _, k, dd in s.timeline if k == "hb"][-1]
    assert leave[0] == -2
    s.alive = False
    w.run(5_000)
    assert _group_epoch(w) == epoch
    assert d.owned() | mine == w.all_partitions and not d.owned() & mine
    s2 = w.add("s2", ["foo", "bar"], **{"group.instance.id": "inst"})
    w.run(20_000)
    _stable(w)
    assert s2.owned() == mine


def test_poll_interval_expiry_leaves_then_rejoins_on_next_poll() -> None:
    """The application stops polling: after max.poll.interval.ms the member sends a leave heartbeat
    (epoch -1) and goes STALE, releasing its partitions, which move to the other member; when
    the application polls again it rejoins at epoch 0
    (ConsumerHeartbeatRequestManagerTest.testPollTimerExpiration;
    ConsumerMembershipManagerTest.testTransitionToStaleWhenPollTimerExpires)."""
    w = _world()
    a = w.add("a", ["foo", "bar"])
    b = w.add("b", ["foo", "bar"])
    w.run(40_000)
    _stable(w)
    a.polling = False
    w.run(25_000)
    assert a.core.state is S.STALE
    leaves = [dd for _, k, dd in a.timeline if k == "hb" and dd[0] == -1]
    assert leaves
    assert b.owned() == w.all_partitions
    had = a.owned()
    assert had
    mark = len(a.timeline)
    a.polling = True
    w.run(30_000)
    _stable(w)
    # onPartitionsLost was asked for while stalled; it runs on the application's next poll and
    # only then does the member rejoin, at epoch 0 owning nothing
    assert a.timeline[mark - 1][1:] == ("cb", (LOST, had))
    after = [(k, dd) for _, k, dd in a.timeline[mark:]]
    assert after[0] == ("hb", (0, frozenset()))
    assert a.owned() and b.owned()


# ---------------------------------------------------------------------------------- property
_ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["join", "join", "close", "stall", "resume", "hold", "release", "crash", "wait"]),
        st.integers(0, 4),
        st.integers(100, 15_000),
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("interval_ms", [0, 1_000], ids=["target-per-bump", "batched"])
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_ACTIONS)
def test_no_partition_is_ever_owned_twice_and_all_are_owned_when_stable(
    interval_ms: int, actions: list[tuple[str, int, int]]
) -> None:
    """Over random schedules of joins, closes, stalled polls, slow callbacks and crashes: at every
    instant no partition is owned by two live members (the coordinator assigns a partition only
    once its previous owner acknowledged the revocation: GroupMetadataManagerTest
    .testReconciliationProcess, CurrentAssignmentBuilder's pending revocation), and once everyone
    polls again and time passes every live member is STABLE at the group epoch and every
    partition is owned (GroupMetadataManagerTest.testConsumerGroupHeartbeatFullResponse). Both
    with a target per epoch bump (Kafka 4.1's order) and with Kafka 4.3's assignment batching
    (KIP-1263), where revocations are still in flight when the schedule starts."""
    w = _world(group_consumer_session_timeout_ms=10_000, group_consumer_assignment_interval_ms=interval_ms)
    slots: list[Member | None] = [w.add(f"m{i}", ["foo", "bar"]) for i in range(3)] + [None, None]
    n = 3
    w.run(1_000)
    for action, slot, ms in actions:
        mem = slots[slot]
        if action == "join" and (mem is None or not mem.alive or mem.core.closed):
            n += 1
            slots[slot] = w.add(f"m{n}", ["foo", "bar"])
        elif mem is not None and mem.alive:
            if action == "close":
                mem.core.close(w.now())
            elif action == "stall":
                mem.polling = False
            elif action == "resume":
                mem.polling = True
            elif action == "hold":
                mem.holds = True
            elif action == "release":
                mem.holds = False
            elif action == "crash":
                mem.alive = False
        w.run(ms)
    for mem in w.live():
        mem.polling = True
        mem.holds = False
        if mem.core.closed:
            mem.alive = False
    w.run(90_000)
    live = [x for x in w.live() if not x.core.closed]
    if not live:
        assert w.owners() == {}
        return
    epoch = _group_epoch(w)
    assert all(x.core.state is S.STABLE and x.core.member_epoch == epoch for x in live), {
        x.name: (x.core.state, x.core.member_epoch) for x in live
    }
    assert set(w.owners()) == w.all_partitions


def test_three_members_share_and_closing_one_moves_its_partitions() -> None:
    """Three members share nine partitions three each (uniform assignor); one closes (epoch -1
    leave heartbeat, GroupMetadataManagerTest.testLeavingMemberBumpsGroupEpoch) and its
    partitions go to the two that stay."""
    w = _world()
    ms = [w.add(f"m{i}", ["foo", "bar"]) for i in range(3)]
    w.run(60_000)
    _stable(w)
    assert sorted(len(x.owned()) for x in ms) == [3, 3, 3]
    gone = ms[0].owned()
    ms[0].core.close(w.now())
    w.run(2_000)
    ms[0].alive = False
    w.run(30_000)
    _stable(w)
    assert sorted(len(x.owned()) for x in ms[1:]) == [4, 5]
    assert gone <= ms[1].owned() | ms[2].owned()
    assert all(tp in w.all_partitions for tp in gone)
    assert TopicPartition("foo", 0) in w.owners()
