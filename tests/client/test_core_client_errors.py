"""Every row of the member's error -> action table, against the coordinator core.

One parametrised test per row of ``groupcoord.client.actions.TABLE``: a member core runs
against groupcoord's coordinator core under one ManualClock (tests/client/member_world.py);
the row's error answers the member's next request of that API; the test asserts what the row
says the member does next (which request it sends, with which member id, after how long,
which event the application sees). A row added to the table without a checker here fails
``test_every_row_has_a_checker``.

Kafka: AbstractCoordinatorTest (testJoinGroupRequestWithMemberIdRequired,
testGroupMaxSizeExceptionIsFatal, testJoinGroupRequestWithFencedInstanceIdException,
testHeartbeatRequestWithFencedInstanceIdException, testJoinGroupRequestWithRebalanceInProgress,
testCoordinatorDiscoveryExponentialBackoff, testHandleLeaveGroupResponseWithException) and
ConsumerCoordinatorTest (testIllegalGeneration, testUnknownMemberId, testCoordinatorNotAvailable,
testNotCoordinator, testCommitOffsetRebalanceInProgress,
testCommitOffsetIllegalGenerationShouldResetGenerationId,
testCommitOffsetUnknownMemberShouldResetToNoGeneration, testRefreshOffsetWithPendingTransactions).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from member_world import GROUP, Member, World

from groupcoord.client import messages as m
from groupcoord.client.actions import DEFAULT, TABLE, Action, Api, Rule, action_for
from groupcoord.client.assignors.base import subscription_from_bytes
from groupcoord.client.errors import CommitFailedError, FatalGroupError, KafkaClientError
from groupcoord.client.events import (
    CommitCompleted,
    CommittedOffsets,
    FatalErrorEvent,
    PartitionsAssigned,
    PartitionsLost,
)
from groupcoord.client.states import MemberState
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode as E

BACKOFF = 50  # retry.backoff.ms of member_world's members; jitter keeps waits >= 0.8 x
T0 = TopicPartition("t", 0)
OTHER = E.UNKNOWN_SERVER_ERROR  # stands for "(any other)"

ROWS = [
    pytest.param(api, code, id=f"{api.value}-{'OTHER' if code is None else code.name}")
    for api, rows in TABLE.items()
    for code in rows
]

REQUEST_OF = {
    Api.FIND_COORDINATOR: m.FindCoordinatorRequest,
    Api.JOIN_GROUP: m.JoinGroupRequest,
    Api.SYNC_GROUP: m.SyncGroupRequest,
    Api.HEARTBEAT: m.HeartbeatRequest,
    Api.LEAVE_GROUP: m.LeaveGroupRequest,
    Api.OFFSET_COMMIT: m.OffsetCommitRequest,
    Api.OFFSET_FETCH: m.OffsetFetchRequest,
}


def _stable(**cfg: object) -> tuple[World, Member]:
    w = World({"t": 2})
    a = w.add("a", **cfg)  # type: ignore[arg-type]
    w.run(500)
    assert a.core.state is MemberState.STABLE
    assert a.owned() == {T0, TopicPartition("t", 1)}
    return w, a


def _joined_generation(join: m.JoinGroupRequest) -> int:
    """The generation the member's subscription carries (-1 after a reset)."""
    return subscription_from_bytes(join.protocols[0][1]).generation_id


def _fatal_events(a: Member) -> list[FatalErrorEvent]:
    return [e for e in a.events_of(FatalErrorEvent) if e.fatal]


def _assert_fatal(a: Member, code: E) -> None:
    (ev,) = _fatal_events(a)
    assert isinstance(ev.error, FatalGroupError)
    assert ev.error.code is code


# ------------------------------------------------------------------ FindCoordinator
def check_find(code: E, rule: Rule) -> None:
    w = World({"t": 2})
    a = w.add("a")
    w.inject_error("a", m.FindCoordinatorRequest, code)
    w.run(1000)
    finds = a.sent_of(m.FindCoordinatorRequest)
    if rule.action is Action.SUCCESS:
        assert a.core.state is MemberState.STABLE and len(finds) == 1
    elif rule.action is Action.RETRY:
        assert len(finds) == 2
        assert finds[1].at - finds[0].at >= 0.8 * BACKOFF
        assert a.core.state is MemberState.STABLE
        reported = [e for e in a.events_of(FatalErrorEvent) if not e.fatal]
        assert len(reported) == (0 if code in _RETRIABLE_FIND else 1)
    elif rule.action is Action.FATAL:
        _assert_fatal(a, code)
        assert a.sent_of(m.JoinGroupRequest) == [] and len(finds) == 1
    else:
        raise AssertionError(rule)


_RETRIABLE_FIND = (
    E.COORDINATOR_NOT_AVAILABLE,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.NOT_COORDINATOR,
    E.NETWORK_EXCEPTION,
    E.REQUEST_TIMED_OUT,
)


# ------------------------------------------------------------------ JoinGroup
def check_join(code: E, rule: Rule) -> None:
    w = World({"t": 2})
    a = w.add("a")
    # let the MEMBER_ID_REQUIRED round through: the error answers the join that carries the id
    after = 0 if code is E.MEMBER_ID_REQUIRED else 1
    if code is not E.MEMBER_ID_REQUIRED:
        w.inject_error("a", m.JoinGroupRequest, code, after=after)
    w.run(1000)
    joins = [s.request for s in a.sent_of(m.JoinGroupRequest)]
    times = [s.at for s in a.sent_of(m.JoinGroupRequest)]
    act = rule.action
    if act is Action.SUCCESS:
        assert a.core.state is MemberState.STABLE and len(joins) == 2
        return
    if act is Action.REJOIN_WITH_MEMBER_ID:
        # the coordinator's own MEMBER_ID_REQUIRED: the second JoinGroup carries the given id
        assert joins[0].member_id == "" and joins[1].member_id != ""
        assert joins[1].member_id == a.core.generation.member_id
        assert times[1] == times[0]
        assert a.core.state is MemberState.STABLE
        return
    if act is Action.FATAL:
        _assert_fatal(a, code)
        assert len(joins) == 2
        assert a.core.state is not MemberState.STABLE
        return
    given = joins[1].member_id
    assert given != ""
    third = joins[2]
    if act is Action.REJOIN:
        assert third.member_id == given and times[2] == times[1]
    elif act is Action.RESET_AND_REJOIN:
        assert third.member_id == (given if rule.keep_member_id else "")
        assert times[2] == times[1]
    elif act is Action.REDISCOVER:
        assert len(a.sent_of(m.FindCoordinatorRequest)) == 2
        assert third.member_id == given and times[2] - times[1] >= BACKOFF
    elif act is Action.RETRY:
        assert len(a.sent_of(m.FindCoordinatorRequest)) == 1
        assert third.member_id == given and times[2] - times[1] >= BACKOFF
    else:
        raise AssertionError(rule)
    assert a.core.state is MemberState.STABLE


# ------------------------------------------------------------------ SyncGroup
def check_sync(code: E, rule: Rule) -> None:
    w = World({"t": 2})
    a = w.add("a")
    w.inject_error("a", m.SyncGroupRequest, code)
    w.run(1000)
    joins = a.sent_of(m.JoinGroupRequest)
    syncs = a.sent_of(m.SyncGroupRequest)
    act = rule.action
    if act is Action.SUCCESS:
        assert len(joins) == 2 and len(syncs) == 1 and a.core.state is MemberState.STABLE
        return
    if act is Action.FATAL:
        _assert_fatal(a, code)
        assert len(syncs) == 1 and len(joins) == 2
        return
    given = joins[1].request.member_id
    rejoin = joins[2]
    assert rejoin.at >= syncs[0].at
    if act is Action.REJOIN:
        assert rejoin.request.member_id == given and rejoin.at == syncs[0].at
    elif act is Action.RESET_AND_REJOIN:
        assert rejoin.request.member_id == (given if rule.keep_member_id else "")
        assert _joined_generation(rejoin.request) == -1
    elif act is Action.REDISCOVER:
        assert len(a.sent_of(m.FindCoordinatorRequest)) == 2
        assert rejoin.request.member_id == given and rejoin.at - syncs[0].at >= BACKOFF
    elif act is Action.RETRY:
        assert len(a.sent_of(m.FindCoordinatorRequest)) == 1
        assert rejoin.request.member_id == given and rejoin.at - syncs[0].at >= BACKOFF
    else:
        raise AssertionError(rule)
    assert a.core.state is MemberState.STABLE


# ------------------------------------------------------------------ Heartbeat
def check_heartbeat(code: E, rule: Rule) -> None:
    w, a = _stable()
    gen = a.core.generation
    hb_before = len(a.sent_of(m.HeartbeatRequest))
    w.inject_error("a", m.HeartbeatRequest, code)
    w.run(2000)
    hbs = a.sent_of(m.HeartbeatRequest)[hb_before:]
    failed_at = hbs[0].at
    act = rule.action
    if act is Action.SUCCESS:
        assert a.core.generation == gen and len(a.sent_of(m.JoinGroupRequest)) == 2
        return
    if act is Action.FATAL:
        _assert_fatal(a, code)
        assert len(hbs) == 1  # the thread stopped
        assert a.core.enabled is False
        return
    joins_after = [s for s in a.sent_of(m.JoinGroupRequest) if s.at >= failed_at]
    if act is Action.REDISCOVER:
        finds = a.sent_of(m.FindCoordinatorRequest)
        assert len(finds) == 2 and finds[1].at >= failed_at
        assert joins_after == [] and a.core.generation == gen  # same generation, heartbeats resume
        assert hbs[1].request.generation_id == gen.generation_id
    elif act is Action.RETRY:
        assert len(a.sent_of(m.FindCoordinatorRequest)) == 1 and joins_after == []
        assert 0.8 * BACKOFF <= hbs[1].at - failed_at < 300  # backoff, not the full interval
    elif act is Action.REJOIN:
        assert joins_after[0].request.member_id == gen.member_id
        assert a.core.generation.generation_id == gen.generation_id + 1
        assert a.events_of(PartitionsLost) == []
    elif act is Action.RESET_AND_REJOIN:
        assert joins_after[0].request.member_id == (gen.member_id if rule.keep_member_id else "")
        assert _joined_generation(joins_after[0].request) == -1
        (lost,) = a.events_of(PartitionsLost)
        assert set(lost.partitions) == {T0, TopicPartition("t", 1)}
    else:
        raise AssertionError(rule)
    assert a.core.state is MemberState.STABLE


# ------------------------------------------------------------------ LeaveGroup
def check_leave(code: E, rule: Rule) -> None:
    w, a = _stable()
    w.inject_error("a", m.LeaveGroupRequest, code)
    a.core.close(w.now())
    w.run(100)  # well within the session timeout
    assert a.core.closed
    assert len(a.sent_of(m.LeaveGroupRequest)) == 1  # fire and forget: never re-sent
    assert a.core.state is MemberState.UNJOINED
    assert [e for e in a.events_of(FatalErrorEvent)] == []
    assert rule.action in (Action.SUCCESS, Action.IGNORE)
    # NONE reached the coordinator (the member is gone); the error did not
    assert (w.coordinator.group(GROUP) is not None and w.group_state() == "Empty") == (
        rule.action is Action.SUCCESS
    )


# ------------------------------------------------------------------ OffsetCommit
def check_commit(code: E, rule: Rule) -> None:
    w, a = _stable()
    gen = a.core.generation
    w.inject_error("a", m.OffsetCommitRequest, code)
    cid = a.core.commit({T0: OffsetAndMetadata(offset=5)}, w.now())
    w.run(1000)
    (done,) = [e for e in a.events_of(CommitCompleted) if e.commit_id == cid]
    commits = a.sent_of(m.OffsetCommitRequest)
    committed = w.coordinator.group(GROUP).offsets.get(("t", 0))  # type: ignore[union-attr]
    act = rule.action
    if act is Action.SUCCESS:
        assert done.error is None and committed is not None and committed.offset == 5
    elif act in (Action.REDISCOVER, Action.RETRY):
        assert done.error is None and len(commits) == 2
        assert committed is not None and committed.offset == 5
        assert commits[1].at - commits[0].at >= 0.8 * BACKOFF
        assert len(a.sent_of(m.FindCoordinatorRequest)) == (2 if act is Action.REDISCOVER else 1)
    elif act is Action.COMMIT_FAILED:
        assert isinstance(done.error, CommitFailedError) and done.error.code is code
        assert committed is None
        rejoin = [s for s in a.sent_of(m.JoinGroupRequest) if s.at >= commits[0].at]
        if rule.reset:
            assert rejoin[0].request.member_id == (gen.member_id if rule.keep_member_id else "")
            assert len(a.events_of(PartitionsLost)) == 1
        else:
            assert rejoin[0].request.member_id == gen.member_id
            assert _joined_generation(rejoin[0].request) == gen.generation_id
            assert a.events_of(PartitionsLost) == []
    elif act is Action.FATAL:
        assert isinstance(done.error, FatalGroupError) and done.error.code is code
        _assert_fatal(a, code)
    elif act is Action.ERROR:
        assert type(done.error) is KafkaClientError and done.error.code is code
        assert len(commits) == 1 and a.core.state is MemberState.STABLE and a.core.generation == gen
    else:
        raise AssertionError(rule)


# ------------------------------------------------------------------ OffsetFetch
def check_fetch(code: E, rule: Rule) -> None:
    w, a = _stable()
    a.core.commit({T0: OffsetAndMetadata(offset=7, metadata="x")}, w.now())
    w.run(100)

    def partition_level(req: m.Request) -> m.Response:
        assert isinstance(req, m.OffsetFetchRequest)
        return m.offset_fetch_response(
            group_id=req.groups[0].group_id,
            error=E.NONE,
            offsets=(
                (T0.topic, m.OffsetFetchPartitionResponse(partition=T0.partition, offset=-1, error=code)),
            ),
        )

    # group-level codes answer at the top; the partition-level ones (UNSTABLE_OFFSET_COMMIT,
    # UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED) per partition, as brokers send them
    per_partition = code in (
        E.UNSTABLE_OFFSET_COMMIT,
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.TOPIC_AUTHORIZATION_FAILED,
    )
    w.inject_error("a", m.OffsetFetchRequest, partition_level if per_partition else code)
    fid = a.core.fetch_committed([T0], w.now())
    w.run(1000)
    (done,) = [e for e in a.events_of(CommittedOffsets) if e.fetch_id == fid]
    fetches = [s for s in a.sent_of(m.OffsetFetchRequest) if m.fetch_partitions(s.request) == (T0,)]
    act = rule.action
    expected = ((T0, OffsetAndMetadata(offset=7, metadata="x")),)
    if act is Action.SUCCESS:
        assert done.error is None and done.offsets == expected
    elif act in (Action.REDISCOVER, Action.RETRY):
        assert done.error is None and done.offsets == expected
        assert fetches[-1].at - fetches[-2].at >= 0.8 * BACKOFF
        finds = len(a.sent_of(m.FindCoordinatorRequest))
        assert finds == (2 if act is Action.REDISCOVER else 1)
    elif act is Action.FATAL:
        assert isinstance(done.error, FatalGroupError)
        _assert_fatal(a, code)
    elif act is Action.ERROR:
        assert type(done.error) is KafkaClientError and done.error.code is code
        assert a.core.state is MemberState.STABLE
    else:
        raise AssertionError(rule)


CHECKERS: dict[Api, Callable[[E, Rule], None]] = {
    Api.FIND_COORDINATOR: check_find,
    Api.JOIN_GROUP: check_join,
    Api.SYNC_GROUP: check_sync,
    Api.HEARTBEAT: check_heartbeat,
    Api.LEAVE_GROUP: check_leave,
    Api.OFFSET_COMMIT: check_commit,
    Api.OFFSET_FETCH: check_fetch,
}


def test_every_row_has_a_checker() -> None:
    assert set(CHECKERS) == set(TABLE) == set(Api)
    for rows in TABLE.values():
        assert DEFAULT in rows  # every API says what happens to unlisted codes


@pytest.mark.parametrize(("api", "code"), ROWS)
def test_error_row_drives_the_action(api: Api, code: E | None) -> None:
    actual = OTHER if code is None else code
    rule = action_for(api, actual)
    assert rule is TABLE[api][code]
    CHECKERS[api](actual, rule)


def test_assigned_event_follows_the_successful_join() -> None:
    """The NONE rows end in an assignment the application sees.

    Kafka: ConsumerCoordinatorTest.testNormalJoinGroupLeader."""
    w, a = _stable()
    (ev,) = a.events_of(PartitionsAssigned)
    assert (
        ev.partitions == (T0, TopicPartition("t", 1)) and ev.generation_id == a.core.generation.generation_id
    )
    assert w.generation() == ev.generation_id


def test_coordinator_discovery_backs_off_exponentially() -> None:
    """FindCoordinator retries wait retry.backoff.ms x 2^n (jitter 0.2) up to retry.backoff.max.ms.
    Kafka: AbstractCoordinatorTest.testCoordinatorDiscoveryExponentialBackoff."""
    w = World({"t": 1})
    a = w.add("a")
    w.find_error = E.COORDINATOR_NOT_AVAILABLE
    w.run(2000)
    times = [s.at for s in a.sent_of(m.FindCoordinatorRequest)]
    gaps = [t2 - t1 for t1, t2 in itertools.pairwise(times)]
    expected = [50, 100, 200, 400, 400]  # retry.backoff.ms 50, retry.backoff.max.ms 400
    assert len(gaps) >= len(expected)
    for gap, base in zip(gaps, expected, strict=False):
        assert 0.8 * base <= gap <= 1.2 * base + 1, (gaps, expected)
    w.find_error = None
    w.run(1000)
    assert a.core.state is MemberState.STABLE


STALE_ROWS = [
    pytest.param(api, code, id=f"{api.value}-{code.name}")
    for api, rows in TABLE.items()
    for code, rule in rows.items()
    if code is not None and rule.if_stale is not None and api in (Api.HEARTBEAT, Api.OFFSET_COMMIT)
]


@pytest.mark.parametrize(("api", "code"), STALE_ROWS)
def test_error_for_an_older_generation_takes_the_stale_action(api: Api, code: E) -> None:
    """An error answering a request of a generation the member has since left behind is about the
    past: heartbeat errors are ignored, commit errors fail the commit without a reset or a fatal
    error (but UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION on a commit still reset a STABLE member,
    as Java does). Kafka: AbstractCoordinatorTest.testHeartbeatIllegalGenerationResponseWithOldGeneration,
    testHeartbeatUnknownMemberResponseWithOldGeneration, testHeartbeatInstanceFencedResponseWithOldGeneration;
    ConsumerCoordinatorTest.testCommitOffsetIllegalGenerationWithNewGeneration,
    testCommitOffsetFencedInstanceWithNewGeneration."""
    rule = TABLE[api][code]
    w, a = _stable()
    old = a.core.generation
    kind = REQUEST_OF[api]
    # the answer to the member's next request comes 800 ms late; meanwhile b joins and the group
    # moves to the next generation (a learns it from a heartbeat and rejoins)
    w.inject_error("a", kind, code, delay_ms=800)
    cid = a.core.commit({T0: OffsetAndMetadata(offset=5)}, w.now()) if api is Api.OFFSET_COMMIT else None
    w.add("b")
    w.run(600)
    assert a.core.generation.generation_id == old.generation_id + 1 and a.core.state is MemberState.STABLE
    joins = len(a.sent_of(m.JoinGroupRequest))
    w.run(1000)  # the stale answer arrives
    assert _fatal_events(a) == []
    if api is Api.OFFSET_COMMIT and rule.reset:
        # Java resets even for an older generation unless a rebalance is being prepared
        # (OffsetCommitResponseHandler: !generationUnchanged() && state == PREPARING_REBALANCE)
        assert len(a.sent_of(m.JoinGroupRequest)) > joins
        assert len(a.events_of(PartitionsLost)) == 1
        w.run(2000)  # with a new member id it waits for the old one's session to expire
    else:
        assert len(a.sent_of(m.JoinGroupRequest)) == joins  # no reset, no rejoin
        assert a.core.generation.generation_id == old.generation_id + 1
        assert a.events_of(PartitionsLost) == []
    assert a.core.state is MemberState.STABLE
    if api is Api.OFFSET_COMMIT:
        assert rule.if_stale is Action.COMMIT_FAILED
        (done,) = [e for e in a.events_of(CommitCompleted) if e.commit_id == cid]
        assert isinstance(done.error, CommitFailedError) and done.error.code is code
    else:
        assert rule.if_stale is Action.IGNORE
