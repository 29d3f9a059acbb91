"""The consumer-protocol member core (KIP-848) against a scripted broker under a ManualClock:
join, heartbeat timing, reconciliation order, acknowledgement, topic-id resolution, regex,
fencing, leaving on close (dynamic and static) and on the poll timeout.

Each test names the Kafka test whose behaviour it ports (``ConsumerMembershipManagerTest``,
``ConsumerHeartbeatRequestManagerTest``, clients/src/test/.../consumer/internals/).
"""

from __future__ import annotations

import uuid

import pytest
from cg_script import MEMBER, START, Script, T, U, err, ok, owned, tp

from groupcoord.client.consumer_group_events import CallbackMethod, CommitCompleted, generate_member_id
from groupcoord.client.consumer_group_member import ConsumerGroupMember
from groupcoord.client.consumer_group_messages import (
    ConsumerGroupHeartbeatRequest,
    TopicIdMetadata,
    TopicIdsMetadataRequest,
    TopicIdsMetadataResponse,
)
from groupcoord.client.consumer_group_states import ConsumerGroupMemberState as S
from groupcoord.client.messages import (
    FindCoordinatorRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    commit_failed,
    committed_offsets,
    offset_commit_request,
)
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode

HB = ConsumerGroupHeartbeatRequest
ASSIGNED = CallbackMethod.ON_PARTITIONS_ASSIGNED
REVOKED = CallbackMethod.ON_PARTITIONS_REVOKED
LOST = CallbackMethod.ON_PARTITIONS_LOST


def _commit_ok(request: OffsetCommitRequest) -> OffsetCommitResponse:
    return commit_failed(request, ErrorCode.NONE)


def _commit_err(request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    return commit_failed(request, code)


# ---------------------------------------------------------------------------------- joining
def test_member_id_is_generated_once_like_javas_uuid() -> None:
    """KIP-1082 / AbstractMembershipManager.memberId: ``Uuid.randomUuid().toString()``, 22
    URL-safe base64 characters, made by the client and kept for the consumer's life."""
    ids = {generate_member_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
    assert all(set(i) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for i in ids)


def test_nothing_is_sent_before_the_first_poll_after_subscribe() -> None:
    """onSubscriptionUpdated only marks the subscription; the member joins on the next poll
    (ConsumerMembershipManagerTest.testOnSubscriptionUpdatedTransitionsToJoiningOnPollIfNotInGroup)."""
    s = Script.new()
    assert s.turn() == []
    assert s.core.state is S.UNSUBSCRIBED
    s.poll()
    assert s.core.state is S.JOINING
    assert s.log == ["FindCoordinatorRequest"]


def test_first_heartbeat_joins_with_every_field() -> None:
    """The join heartbeat carries epoch 0, the client-made member id and every field: the rebalance
    timeout (max.poll.interval.ms), the topics, the server assignor, the rack and an empty owned
    set (ConsumerHeartbeatRequestManagerTest.
    testFirstHeartbeatIncludesRequiredInfoToJoinGroupAndGetAssignments, testHeartbeatState)."""
    s = Script.new(
        topics=("t", "a"),
        **{"client.rack": "rack-1", "group.remote.assignor": "uniform", "max.poll.interval.ms": 60_000},
    )
    s.poll()
    s.find_coordinator()
    (join,) = s.heartbeats()
    assert join == HB(
        group_id="g",
        member_id=MEMBER,
        member_epoch=0,
        instance_id=None,
        rack_id="rack-1",
        rebalance_timeout_ms=60_000,
        subscribed_topic_names=("a", "t"),
        subscribed_topic_regex=None,
        server_assignor="uniform",
        topic_partitions=(),
    )
    assert join.is_full()
    s.poll()  # no second join while the first is in flight (testHeartbeatOnStartup)
    assert len(s.heartbeats()) == 1


def test_join_with_empty_assignment_runs_on_assigned_then_acks_and_is_stable() -> None:
    """An empty assignment on join still reconciles: onPartitionsAssigned([]) runs, then the ack
    (ConsumerMembershipManagerTest.testMemberJoiningCallsRebalanceListenerWhenReceivingEmptyAssignment,
    testMemberJoiningTransitionsToStableWhenReceivingEmptyAssignment)."""
    s = Script.new()
    s.poll()
    s.find_coordinator()
    s.answer(s.one(HB), ok(1, 3_000, ()))
    assert s.core.state is S.RECONCILING
    assert [(c.method, c.partitions) for c in s.callbacks] == [(ASSIGNED, ())]
    assert s.pending(HB) == []
    s.complete(ASSIGNED)
    assert s.core.state is S.STABLE  # the ack was generated at once: ACKNOWLEDGING -> STABLE
    ack = s.one(HB)
    assert (ack.request.member_epoch, ack.request.topic_partitions) == (1, ())
    assert ack.request.subscribed_topic_names is None and ack.request.rebalance_timeout_ms == -1


# ---------------------------------------------------------------------------------- heartbeat timing
def test_heartbeats_follow_the_interval_the_broker_gives() -> None:
    """The interval comes from each response; the timer restarts when a heartbeat is sent; one
    heartbeat in flight at most (ConsumerHeartbeatRequestManagerTest.testSuccessfulHeartbeatTiming,
    testHeartbeatNotSentIfAnotherOneInFlight, testTimerNotDue)."""
    s = Script.new(**{"enable.auto.commit": False})
    s.join(epoch=1, assignment=(), interval=4_000)
    sent_at = START
    assert s.core.next_deadline_ms() == sent_at + 4_000
    assert s.advance(3_999) == []
    (hb,) = s.advance(1)
    assert hb.request == HB(group_id="g", member_id=MEMBER, member_epoch=1)  # partial: nothing changed
    assert s.advance(4_000) == []  # the previous one is still in flight
    s.clock.advance(500)
    s.answer(hb, ok(1, interval=2_000))  # a new interval restarts the timer from the answer
    assert s.core.next_deadline_ms() == s.now + 2_000
    assert len(s.advance(2_000)) == 1


def test_heartbeat_after_a_failed_one_is_full_again() -> None:
    """Any error or transport failure resets the sent fields: the next heartbeat re-sends the
    subscription, the rebalance timeout and the owned partitions, which re-acks an assignment
    whose ack was lost
    (ConsumerHeartbeatRequestManagerTest.testConsumerAcksReconciledAssignmentAfterAckLost)."""
    s = Script.new()
    s.join(epoch=1, assignment=owned((T, (0,))))
    (hb,) = s.advance(5_000)
    s.fail(hb)  # transport failure: coordinator marked unknown, backoff
    assert s.core.coordinator is None
    s.find_coordinator()
    assert s.pending(HB) == []  # backoff of retry.backoff.ms after the failure
    (again,) = s.advance(100)
    assert again.request == HB(
        group_id="g",
        member_id=MEMBER,
        member_epoch=1,
        rebalance_timeout_ms=300_000,
        subscribed_topic_names=("t",),
        topic_partitions=owned((T, (0,))),
    )


# ---------------------------------------------------------------------------------- reconciliation
def test_reconciliation_commits_then_revokes_then_assigns_then_acks() -> None:
    """Kafka's order: auto-commit of every consumed position, then onPartitionsRevoked(revoked),
    then onPartitionsAssigned(added), then the ack heartbeat carrying the new owned set, sent at
    once (ConsumerMembershipManagerTest.testReconcileNewPartitionsAssignedAndRevoked,
    testReconcilePartitionsRevokedWithSuccessfulAutoCommitNoCallbacks; reference section 9.3)."""
    s = Script.new(**{"auto.commit.interval.ms": 60_000})
    s.join(epoch=1, assignment=owned((T, (0, 1))))
    s.core.update_positions({TopicPartition("t", 0): OffsetAndMetadata(offset=10)})
    s.core.update_positions({TopicPartition("t", 1): OffsetAndMetadata(offset=20)})
    s.log.clear()
    # the broker moves t-0 away: the member keeps epoch 1 and is told to own t-1 only
    s.answer(s.advance(5_000)[0], ok(1, assignment=owned((T, (1,)))))
    assert s.core.state is S.RECONCILING
    commit = s.one(OffsetCommitRequest)
    assert commit.request == offset_commit_request(
        group_id="g",
        generation_id=1,
        member_id=MEMBER,
        group_instance_id=None,
        offsets=(
            (TopicPartition("t", 0), OffsetAndMetadata(offset=10)),
            (TopicPartition("t", 1), OffsetAndMetadata(offset=20)),
        ),
    )
    assert s.callbacks == []  # no callback before the commit is answered
    assert s.core.fetchable() == frozenset(tp("t", 1))  # no fetching from t-0 from now on
    s.answer(commit, _commit_ok(commit.request))
    s.complete(REVOKED)
    assert s.pending(HB) == []  # no ack before onPartitionsAssigned completed
    s.complete(ASSIGNED)
    ack = s.one(HB)
    assert ack.request == HB(
        group_id="g", member_id=MEMBER, member_epoch=1, topic_partitions=owned((T, (1,)))
    )
    assert s.core.state is S.STABLE and s.core.assignment() == frozenset(tp("t", 1))
    # the acknowledgement moves the member to epoch 2 with t-2 added: assigned incrementally
    s.answer(ack, ok(2, assignment=owned((T, (1, 2)))))
    commit2 = s.one(OffsetCommitRequest)
    assert commit2.request.generation_id == 2
    assert committed_offsets(commit2.request) == ((TopicPartition("t", 1), OffsetAndMetadata(offset=20)),)
    s.answer(commit2, _commit_ok(commit2.request))
    assert s.core.assignment() == frozenset(tp("t", 1, 2))
    assert s.core.fetchable() == frozenset(tp("t", 1))  # t-2 waits for onPartitionsAssigned
    s.complete(ASSIGNED)
    assert s.core.fetchable() == frozenset(tp("t", 1, 2))
    ack2 = s.one(HB)
    assert (ack2.request.member_epoch, ack2.request.topic_partitions) == (2, owned((T, (1, 2))))
    assert s.log == [
        "ConsumerGroupHeartbeatRequest",
        "OffsetCommitRequest",
        "ON_PARTITIONS_REVOKED['t-0']",
        "done ON_PARTITIONS_REVOKED",
        "ON_PARTITIONS_ASSIGNED[]",
        "done ON_PARTITIONS_ASSIGNED",
        "ConsumerGroupHeartbeatRequest",
        "OffsetCommitRequest",
        "ON_PARTITIONS_ASSIGNED['t-2']",
        "done ON_PARTITIONS_ASSIGNED",
        "ConsumerGroupHeartbeatRequest",
    ]


def test_commit_before_revocation_retries_stale_member_epoch_with_the_newest_epoch() -> None:
    """The commit before a revocation retries STALE_MEMBER_EPOCH with the epoch the member holds
    now, until the rebalance timeout (CommitRequestManager.autoCommitSyncBeforeRevocationWithRetries,
    isStaleEpochErrorAndValidEpochAvailable)."""
    s = Script.new(**{"auto.commit.interval.ms": 60_000})
    s.join(epoch=1, assignment=owned((T, (0, 1))))
    s.core.update_positions({TopicPartition("t", 0): OffsetAndMetadata(offset=5)})
    s.answer(s.advance(5_000)[0], ok(1, assignment=owned((T, (1,)))))
    first = s.one(OffsetCommitRequest)
    (hb,) = s.advance(5_000)  # heartbeats go on while reconciling
    s.answer(hb, ok(3))
    s.answer(first, _commit_err(first.request, ErrorCode.STALE_MEMBER_EPOCH))
    assert s.pending(OffsetCommitRequest) == [] and s.callbacks == []
    (retry,) = s.advance(100)  # retry.backoff.ms
    assert isinstance(retry.request, OffsetCommitRequest) and retry.request.generation_id == 3
    s.answer(retry, _commit_ok(retry.request))
    assert [c.method for c in s.callbacks] == [REVOKED]


def test_failed_commit_before_revocation_does_not_stop_the_revocation() -> None:
    """A commit that fails for good (here UNKNOWN_MEMBER_ID, not retried) lets the reconciliation
    go on (ConsumerMembershipManagerTest.
    testReconcilePartitionsRevokedWithFailedAutoCommitCompletesRevocationAnyway)."""
    s = Script.new(**{"auto.commit.interval.ms": 60_000})
    s.join(epoch=1, assignment=owned((T, (0, 1))))
    s.core.update_positions({TopicPartition("t", 0): OffsetAndMetadata(offset=5)})
    s.answer(s.advance(5_000)[0], ok(1, assignment=owned((T, (1,)))))
    commit = s.one(OffsetCommitRequest)
    s.answer(commit, _commit_err(commit.request, ErrorCode.UNKNOWN_MEMBER_ID))
    s.complete(REVOKED)
    s.complete(ASSIGNED)
    assert s.one(HB).request.topic_partitions == owned((T, (1,)))


def test_failing_on_revoked_callback_leaves_the_member_reconciling_without_ack() -> None:
    """A callback that raises keeps the member in RECONCILING and sends no ack; the broker's
    rebalance timeout will fence it
    (ConsumerMembershipManagerTest.testListenerCallbacksThrowsErrorOnPartitionsRevoked)."""
    s = Script.new(**{"enable.auto.commit": False})
    s.join(epoch=1, assignment=owned((T, (0, 1))))
    s.answer(s.advance(5_000)[0], ok(1, assignment=owned((T, (1,)))))
    s.complete(REVOKED, error=RuntimeError("listener failed"))
    assert s.core.state is S.RECONCILING
    assert s.core.assignment() == frozenset(tp("t", 0, 1))
    assert s.pending(HB) == []
    (hb,) = s.advance(5_000)  # only the interval heartbeat, without owned partitions
    assert hb.request.topic_partitions is None


def test_unknown_topic_ids_are_resolved_through_metadata_before_reconciling() -> None:
    """A target naming a topic id the member cannot name asks Metadata for it and reconciles the
    part it can name (here nothing: onPartitionsAssigned([]) and an ack of the empty set); the
    rest is reconciled once Metadata names it
    (ConsumerMembershipManagerTest.testMetadataUpdatesReconcilesUnresolvedAssignments,
    testMemberKeepsUnresolvedAssignmentWaitingForMetadataUntilResolved)."""
    s = Script.new(names=False)
    s.poll()
    s.find_coordinator()
    s.answer(s.one(HB), ok(1, assignment=owned((U, (0,)))))
    lookup = s.one(TopicIdsMetadataRequest)
    assert lookup.request == TopicIdsMetadataRequest(topic_ids=(U,))
    assert lookup.node is None
    assert [(c.method, c.partitions) for c in s.callbacks] == [(ASSIGNED, ())]
    s.complete(ASSIGNED)
    partial_ack = s.one(HB)
    assert (partial_ack.request.member_epoch, partial_ack.request.topic_partitions) == (1, ())
    # the unresolved rest of the target waits; the member keeps acknowledging the resolved part,
    # one heartbeat per answer (Java: ACKNOWLEDGING -> RECONCILING -> ACKNOWLEDGING)
    assert s.core.state is S.ACKNOWLEDGING
    s.answer(partial_ack, ok(1))
    again = s.one(HB)
    assert again.request.topic_partitions is None  # the same local assignment: not re-sent
    assert s.core.assignment() == frozenset() and s.callbacks == []
    s.answer(lookup, TopicIdsMetadataResponse(topics=(TopicIdMetadata(topic_id=U, name="u"),)))
    s.answer(again, ok(1))
    assert [(c.method, c.partitions) for c in s.callbacks] == [(ASSIGNED, tp("u", 0))]
    s.answer(s.one(HB), ok(1))
    s.complete(ASSIGNED)
    assert s.core.assignment() == frozenset(tp("u", 0))
    assert s.one(HB).request.topic_partitions == owned((U, (0,)))
    assert s.core.state is S.STABLE


def test_assignment_received_while_leaving_is_ignored() -> None:
    """PREPARE_LEAVING cannot take a new assignment
    (ConsumerMembershipManagerTest.testNewAssignmentIgnoredWhenStateIsPrepareLeaving)."""
    s = Script.new(**{"enable.auto.commit": False})
    s.join(epoch=1, assignment=owned((T, (0,))))
    (hb,) = s.advance(5_000)
    s.core.close(s.now)
    s._collect()
    assert s.core.state is S.PREPARE_LEAVING
    s.answer(hb, ok(2, assignment=owned((T, (0, 1)))))
    assert s.core.state is S.PREPARE_LEAVING and [c.method for c in s.callbacks] == [REVOKED]


# ---------------------------------------------------------------------------------- regex
def test_regex_subscription_is_sent_as_subscribed_topic_regex_and_dropped_with_empty_string() -> None:
    """A pattern goes to the broker as SubscribedTopicRegex (v1), with no topic names; switching to
    names sends SubscribedTopicRegex="" (HeartbeatState.buildRequestData, reference section 1.4)."""
    s = Script.new(topics=None)
    s.core.subscribe_pattern("t.*")
    s.poll()
    s.find_coordinator()
    (join,) = s.heartbeats()
    assert (join.subscribed_topic_names, join.subscribed_topic_regex, join.member_id) == ((), "t.*", MEMBER)
    s.answer(s.one(HB), ok(1, assignment=()))
    s.complete(ASSIGNED)
    ack = s.one(HB)
    assert ack.request.subscribed_topic_regex is None  # unchanged: not re-sent
    s.answer(ack, ok(1))
    s.core.subscribe(["t"])
    s.poll()
    (hb,) = s.advance(5_000)
    assert (hb.request.subscribed_topic_names, hb.request.subscribed_topic_regex) == (("t",), "")


# ---------------------------------------------------------------------------------- fencing
@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_member_loses_its_partitions_then_rejoins_with_epoch_zero(code: ErrorCode) -> None:
    """FENCED, epoch 0, onPartitionsLost(owned), no heartbeat until the callback completed, then
    JOINING with the same member id and a full heartbeat at once
    (ConsumerMembershipManagerTest.testFencingWhenStateIsStable, testMemberIdAndEpochResetOnFencedMembers;
    ConsumerHeartbeatRequestManagerTest.testFencedMemberStopHeartbeatUntilItReleasesAssignmentToRejoin)."""
    s = Script.new()
    s.join(epoch=3, assignment=owned((T, (0, 1))))
    s.answer(s.advance(5_000)[0], err(code))
    assert (s.core.state, s.core.member_epoch) == (S.FENCED, 0)
    assert [(c.method, c.partitions) for c in s.callbacks] == [(LOST, tp("t", 0, 1))]
    assert s.advance(60_000) == []  # FENCED sends nothing
    s.complete(LOST)
    assert s.core.assignment() == frozenset()
    rejoin = s.one(HB)
    assert rejoin.request == HB(
        group_id="g",
        member_id=MEMBER,
        member_epoch=0,
        rebalance_timeout_ms=300_000,
        subscribed_topic_names=("t",),
        topic_partitions=(),
    )
    # the same assignment is reconciled again (testSameAssignmentReconciledAgainWhenFenced)
    s.answer(rejoin, ok(5, assignment=owned((T, (0, 1)))))
    assert [(c.method, c.partitions) for c in s.callbacks] == [(ASSIGNED, tp("t", 0, 1))]


def test_fenced_while_preparing_to_leave_does_not_rejoin() -> None:
    """A member fenced while PREPARE_LEAVING goes UNSUBSCRIBED and sends no leave
    (ConsumerMembershipManagerTest.testFencingWhenStateIsPrepareLeaving)."""
    s = Script.new(**{"enable.auto.commit": False})
    s.join(epoch=2, assignment=owned((T, (0,))))
    (hb,) = s.advance(5_000)
    s.core.close(s.now)
    s._collect()
    s.answer(hb, err(ErrorCode.FENCED_MEMBER_EPOCH))
    assert s.core.state is S.UNSUBSCRIBED
    s.complete(REVOKED)
    assert s.core.state is S.UNSUBSCRIBED and s.pending(HB) == []
    assert s.core.closed


# ---------------------------------------------------------------------------------- leaving
@pytest.mark.parametrize(("instance", "epoch"), [(None, -1), ("instance-1", -2)])
def test_close_commits_revokes_and_sends_the_leave_epoch(instance: str | None, epoch: int) -> None:
    """close(): commit the consumed positions, onPartitionsRevoked (the member holds an epoch),
    then one heartbeat with epoch -1, or -2 for a static member, which carries its instance id
    (ConsumerMembershipManagerTest.testLeaveGroupEpoch, testLeaveGroupWhenStateIsStable,
    testHeartbeatSuccessfulResponseWhenLeavingGroupCompletesLeave)."""
    settings = {} if instance is None else {"group.instance.id": instance}
    s = Script.new(**settings)
    s.join(epoch=4, assignment=owned((T, (0,))))
    s.core.update_positions({TopicPartition("t", 0): OffsetAndMetadata(offset=7)})
    s.log.clear()
    s.core.close(s.now)
    commit = s.turn()[0]
    assert isinstance(commit.request, OffsetCommitRequest) and commit.request.generation_id == 4
    s.answer(commit, _commit_ok(commit.request))
    assert isinstance(s.other_events[-1], CommitCompleted) and s.other_events[-1].error is None
    s.complete(REVOKED)
    leave = s.one(HB)
    assert leave.request == HB(
        group_id="g",
        member_id=MEMBER,
        member_epoch=epoch,
        instance_id=instance,
        subscribed_topic_names=(),  # the subscription was dropped before the leave, as in Java
        topic_partitions=(),
    )
    assert s.core.state is S.UNSUBSCRIBED and not s.core.closed
    s.answer(leave, ok(epoch, interval=0))
    assert s.core.closed
    assert s.log == [
        "OffsetCommitRequest",
        "ON_PARTITIONS_REVOKED['t-0']",
        "done ON_PARTITIONS_REVOKED",
        "ConsumerGroupHeartbeatRequest",
    ]
    assert s.advance(60_000) == []


def test_leave_without_a_coordinator_gives_up_and_unsubscribes() -> None:
    """A LEAVING member with no coordinator does not wait (onHeartbeatRequestSkipped)."""
    s = Script.new(**{"enable.auto.commit": False})
    s.join(epoch=1, assignment=())
    (hb,) = s.advance(5_000)
    s.answer(hb, err(ErrorCode.NOT_COORDINATOR))
    s.core.close(s.now)
    s.turn()
    assert s.core.state is S.UNSUBSCRIBED and s.core.closed


# ---------------------------------------------------------------------------------- poll timeout
@pytest.mark.parametrize(("instance", "epoch"), [(None, -1), ("instance-1", -2)])
def test_poll_timeout_leaves_goes_stale_and_rejoins_on_the_next_poll(
    instance: str | None, epoch: int
) -> None:
    """max.poll.interval.ms without a poll: the leave heartbeat (-1, or -2 for a static member),
    STALE, onPartitionsLost; no heartbeats until the application polls, then JOINING with epoch
    0 (ConsumerHeartbeatRequestManagerTest.testPollTimerExpiration;
    ConsumerMembershipManagerTest.testTransitionToLeavingWhileStableDueToStaleMember,
    testStaleMemberWaitsForCallbackToRejoinWhenTimerReset)."""
    settings: dict[str, object] = {"max.poll.interval.ms": 20_000}
    if instance is not None:
        settings["group.instance.id"] = instance
    s = Script.new(**settings)
    s.join(epoch=2, assignment=owned((T, (0,))), interval=3_000)
    for _ in range(6):  # heartbeats every 3 s, no poll
        (hb,) = s.advance(3_000)
        s.answer(hb, ok(2, interval=3_000))
    out = s.advance(2_000)  # 20 s since the last poll
    (leave,) = out
    assert leave.request == HB(
        group_id="g", member_id=MEMBER, member_epoch=epoch, instance_id=instance, topic_partitions=()
    )
    assert s.core.state is S.STALE
    assert [(c.method, c.partitions) for c in s.callbacks] == [(LOST, tp("t", 0))]
    s.answer(leave, ok(epoch))  # ignored
    assert s.advance(30_000) == []
    s.poll()  # the release has not finished: the rejoin waits for it
    assert s.core.state is S.STALE and s.pending(HB) == []
    s.complete(LOST)
    rejoin = s.one(HB)
    assert (rejoin.request.member_epoch, rejoin.request.member_id) == (0, MEMBER)
    assert rejoin.request.is_full() and rejoin.request.instance_id == instance
    assert s.core.state is S.JOINING


def test_commit_carries_no_member_epoch_outside_the_group() -> None:
    """OffsetCommit carries the member id and epoch only while the member holds an epoch > 0;
    otherwise generation -1 and member "" (CommitRequestManager MemberInfo; reference section 9.6)."""
    s = Script.new(topics=None)
    s.core.commit({TopicPartition("t", 0): OffsetAndMetadata(offset=3)}, s.now)
    s.turn()
    s.find_coordinator()
    commit = s.one(OffsetCommitRequest)
    assert (commit.request.generation_id, commit.request.member_id) == (-1, "")


def test_constructing_without_group_id_is_refused() -> None:
    from groupcoord.client.config import ConsumerConfig
    from groupcoord.client.errors import ConfigError

    with pytest.raises(ConfigError, match=r"group\.id"):
        ConsumerGroupMember(ConsumerConfig.from_dict({"group.protocol": "consumer"}))


def test_find_coordinator_names_the_group() -> None:
    s = Script.new()
    s.poll()
    assert s.one(FindCoordinatorRequest).request == FindCoordinatorRequest(key="g")
    assert uuid.UUID(int=0x1111) == T
