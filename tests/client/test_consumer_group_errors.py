"""Every row of the consumer-protocol member's error -> action table (consumer_group_actions.py),
ConsumerGroupHeartbeat and OffsetCommit v9+, driven through the member core against a scripted
broker under a ManualClock.

The heartbeat rows port ``ConsumerHeartbeatRequestManagerTest.testHeartbeatResponseOnErrorHandling``
(its ``errorProvider``: which errors are fatal, which retry after backoff, which rediscover the
coordinator and skip the backoff, which fence) plus the rows the reference's section 2.4 adds
(TOPIC_AUTHORIZATION_FAILED, INVALID_REGULAR_EXPRESSION). The commit rows port
``CommitRequestManager.OffsetCommitRequestState.onResponse`` (CommitRequestManagerTest's
``offsetCommitExceptionSupplier``).
"""

from __future__ import annotations

import pytest
from cg_script import MEMBER, Script, T, err, ok, owned, tp

from groupcoord.client.consumer_group_actions import (
    CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG,
    DEFAULT,
    TABLE,
    CgAction,
    CgApi,
)
from groupcoord.client.consumer_group_events import (
    CallbackMethod,
    CommitCompleted,
    CommittedOffsets,
    FatalErrorEvent,
)
from groupcoord.client.consumer_group_messages import ConsumerGroupHeartbeatRequest
from groupcoord.client.consumer_group_states import ConsumerGroupMemberState as S
from groupcoord.client.errors import CommitFailedError, FatalGroupError, KafkaClientError
from groupcoord.client.messages import (
    FindCoordinatorRequest,
    OffsetCommitRequest,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    commit_failed,
    offset_fetch_request,
    offset_fetch_response,
)
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode as E

HB = ConsumerGroupHeartbeatRequest
BACKOFF = 100  # retry.backoff.ms, jitter off

REDISCOVER = [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE]
FENCE = [E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID]
FATAL = [
    E.GROUP_AUTHORIZATION_FAILED,
    E.INVALID_REQUEST,
    E.GROUP_MAX_SIZE_REACHED,
    E.UNSUPPORTED_ASSIGNOR,
    E.UNSUPPORTED_VERSION,
    E.UNRELEASED_INSTANCE_ID,
    E.FENCED_INSTANCE_ID,
    E.INVALID_REGULAR_EXPRESSION,
    E.UNKNOWN_SERVER_ERROR,  # a code without a row: fatal, as Java's default branch
]
HEARTBEAT_TESTED = {E.NONE, *REDISCOVER, E.NETWORK_EXCEPTION, E.COORDINATOR_LOAD_IN_PROGRESS, *FENCE}
HEARTBEAT_TESTED |= {E.TOPIC_AUTHORIZATION_FAILED, *FATAL}


def test_every_heartbeat_row_is_tested_here() -> None:
    listed = {code for code in TABLE[CgApi.CONSUMER_GROUP_HEARTBEAT] if code is not DEFAULT}
    assert listed <= HEARTBEAT_TESTED


def _stable(**settings: object) -> Script:
    """A STABLE member a second after it found the coordinator: a lookup answered less than
    retry.backoff.ms ago would hold the next one back (Java ``RequestState.onSuccessfulAttempt``),
    which the rediscovery tests do not test."""
    s = Script.new(**{"enable.auto.commit": False, **settings})
    s.join(epoch=2, assignment=owned((T, (0,))))
    s.advance(1_000)
    return s


def _full_heartbeat(request: HB, epoch: int) -> bool:
    return (
        request.member_epoch == epoch
        and request.rebalance_timeout_ms == 300_000
        and request.subscribed_topic_names == ("t",)
        and request.topic_partitions is not None
    )


@pytest.mark.parametrize("code", REDISCOVER)
def test_coordinator_errors_rediscover_and_heartbeat_without_backoff(code: E) -> None:
    """NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE: coordinator unknown, FindCoordinator, then the
    next heartbeat at once (backoff skipped), full; state and epoch kept."""
    s = _stable()
    s.answer(s.advance(5_000)[0], err(code, "moved"))
    assert s.core.coordinator is None and s.core.state is S.STABLE
    assert s.one(FindCoordinatorRequest).request.key == "g"
    s.find_coordinator()
    hb = s.one(HB)
    assert _full_heartbeat(hb.request, 2) and hb.request.topic_partitions == owned((T, (0,)))
    assert s.other_events == []


def test_a_coordinator_lookup_waits_the_minimal_backoff_after_the_last_one_answered() -> None:
    """A coordinator that answers NOT_COORDINATOR right after it was found is looked up again only
    retry.backoff.ms after that answer, not at once: Java's ``CoordinatorRequestManager`` keeps
    its ``RequestState``, whose ``onSuccessfulAttempt`` resets the attempts "but the minimal backoff
    will still be enforced prior to allowing a new send" (RequestState.java). A broker that
    restarts is then asked once per backoff, not in a tight loop."""
    s = Script.new(**{"enable.auto.commit": False})
    s.poll()
    s.find_coordinator()
    s.answer(s.one(HB), err(E.NOT_COORDINATOR, "not yet"))
    assert s.core.coordinator is None and s.pending(FindCoordinatorRequest) == []
    assert s.core.next_deadline_ms() == s.now + BACKOFF
    s.advance(BACKOFF - 1)
    assert s.pending(FindCoordinatorRequest) == []
    s.advance(1)
    assert s.one(FindCoordinatorRequest).request.key == "g"
    s.find_coordinator()
    assert s.one(HB).request.member_epoch == 0


def test_transport_failure_rediscovers_and_retries_after_backoff() -> None:
    """A broken connection (NETWORK_EXCEPTION): coordinator unknown, retry after retry.backoff.ms,
    full (AbstractHeartbeatRequestManager.onFailure; testDisconnect)."""
    s = _stable()
    s.fail(s.advance(5_000)[0])
    assert s.core.coordinator is None and s.core.state is S.STABLE
    s.find_coordinator()
    assert s.pending(HB) == []
    assert s.advance(BACKOFF - 1) == []
    (hb,) = s.advance(1)
    assert _full_heartbeat(hb.request, 2)


def test_request_timeout_counts_as_a_transport_failure() -> None:
    """The core times its own requests out at request.timeout.ms (testNetworkTimeout)."""
    s = _stable(**{"request.timeout.ms": 10_000})
    (hb,) = s.advance(5_000)
    s.advance(10_000)
    assert hb in s.unanswered and s.core.coordinator is None
    assert s.pending(FindCoordinatorRequest)


def test_load_in_progress_retries_after_backoff_with_the_coordinator_kept() -> None:
    """COORDINATOR_LOAD_IN_PROGRESS: retried after retry.backoff.ms, doubling per attempt."""
    s = _stable()
    s.answer(s.advance(5_000)[0], err(E.COORDINATOR_LOAD_IN_PROGRESS))
    assert s.core.coordinator is not None and s.core.state is S.STABLE
    assert s.advance(BACKOFF - 1) == []
    (hb,) = s.advance(1)
    assert _full_heartbeat(hb.request, 2)
    s.answer(hb, err(E.COORDINATOR_LOAD_IN_PROGRESS))
    assert s.advance(2 * BACKOFF - 1) == []
    assert len(s.advance(1)) == 1
    assert s.other_events == []


@pytest.mark.parametrize("code", FENCE)
def test_fencing_errors_lose_partitions_and_rejoin_at_epoch_zero(code: E) -> None:
    """FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: FENCED, onPartitionsLost, then the rejoin at once."""
    s = _stable()
    s.answer(s.advance(5_000)[0], err(code))
    assert (s.core.state, s.core.member_epoch) == (S.FENCED, 0)
    s.complete(CallbackMethod.ON_PARTITIONS_LOST)
    assert s.one(HB).request.member_epoch == 0
    assert s.other_events == []


def test_topic_authorization_failed_is_reported_and_the_member_stays() -> None:
    """TOPIC_AUTHORIZATION_FAILED: raised from the next poll, the state kept, retried after backoff
    (reference section 2.4)."""
    s = _stable()
    s.answer(s.advance(5_000)[0], err(E.TOPIC_AUTHORIZATION_FAILED, "Not authorized to topic x"))
    assert s.core.state is S.STABLE and s.core.assignment() == frozenset(tp("t", 0))
    (event,) = s.other_events
    assert isinstance(event, FatalErrorEvent) and not event.fatal
    assert event.error.code is E.TOPIC_AUTHORIZATION_FAILED
    (hb,) = s.advance(BACKOFF)
    assert _full_heartbeat(hb.request, 2)


@pytest.mark.parametrize("code", FATAL)
def test_fatal_errors_stop_the_member(code: E) -> None:
    """Fatal: FATAL, the error raised (FatalGroupError with the code), onPartitionsLost, and no
    request ever again (testHeartbeatResponseOnErrorHandling with isFatal; testTransitionToFatal)."""
    s = _stable(**({"group.instance.id": "i"} if code is E.FENCED_INSTANCE_ID else {}))
    s.answer(s.advance(5_000)[0], err(code, "broker says no"))
    assert s.core.state is S.FATAL
    (event,) = s.other_events
    assert isinstance(event, FatalErrorEvent) and event.fatal
    assert isinstance(event.error, FatalGroupError) and event.error.code is code
    expected = CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG if code is E.UNSUPPORTED_VERSION else "broker says no"
    assert str(event.error) == expected
    lost = [(c.method, c.partitions) for c in s.callbacks]
    assert lost == [(CallbackMethod.ON_PARTITIONS_LOST, tp("t", 0))]
    s.complete(CallbackMethod.ON_PARTITIONS_LOST)
    assert s.core.assignment() == frozenset()
    assert s.advance(600_000) == [] and s.poll() == []
    with pytest.raises(FatalGroupError):
        s.core.subscribe(["t"])


def test_unsupported_version_about_a_regex_keeps_the_brokers_text() -> None:
    """ConsumerHeartbeatRequestManager.handleSpecificError: an UNSUPPORTED_VERSION whose message is
    about regular expressions keeps that message."""
    s = _stable()
    text = "The cluster does not support regular expression resolution on ConsumerGroupHeartbeat v0."
    s.answer(s.advance(5_000)[0], err(E.UNSUPPORTED_VERSION, text))
    (event,) = s.other_events
    assert isinstance(event, FatalErrorEvent) and str(event.error) == text


def test_heartbeat_error_table_matches_kafkas_error_provider() -> None:
    """The fatal / non-fatal split of ConsumerHeartbeatRequestManagerTest.errorProvider."""
    rows = TABLE[CgApi.CONSUMER_GROUP_HEARTBEAT]
    kafka = {
        E.COORDINATOR_NOT_AVAILABLE: False,
        E.COORDINATOR_LOAD_IN_PROGRESS: False,
        E.NOT_COORDINATOR: False,
        E.GROUP_AUTHORIZATION_FAILED: True,
        E.INVALID_REQUEST: True,
        E.UNKNOWN_MEMBER_ID: False,
        E.FENCED_MEMBER_EPOCH: False,
        E.UNSUPPORTED_ASSIGNOR: True,
        E.UNSUPPORTED_VERSION: True,
        E.UNRELEASED_INSTANCE_ID: True,
        E.FENCED_INSTANCE_ID: True,
        E.GROUP_MAX_SIZE_REACHED: True,
    }
    assert {code: rows[code].action is CgAction.FATAL for code in kafka} == kafka


# ---------------------------------------------------------------------------------- OffsetCommit
COMMIT_TESTED = {
    E.NONE,
    E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_COORDINATOR,
    E.REQUEST_TIMED_OUT,
    E.NETWORK_EXCEPTION,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.UNKNOWN_TOPIC_OR_PARTITION,
    E.STALE_MEMBER_EPOCH,
    E.UNKNOWN_MEMBER_ID,
    E.FENCED_INSTANCE_ID,
    E.GROUP_AUTHORIZATION_FAILED,
    E.TOPIC_AUTHORIZATION_FAILED,
    E.OFFSET_METADATA_TOO_LARGE,
    E.INVALID_COMMIT_OFFSET_SIZE,
    E.UNKNOWN_SERVER_ERROR,
}


def test_every_commit_row_is_tested_here() -> None:
    listed = {code for code in TABLE[CgApi.OFFSET_COMMIT] if code is not DEFAULT}
    assert listed <= COMMIT_TESTED


OFFSETS = {TopicPartition("t", 0): OffsetAndMetadata(offset=42)}


def _answer_commit(s: Script, code: E) -> None:
    commit = s.one(OffsetCommitRequest)
    assert (commit.request.generation_id, commit.request.member_id) == (2, MEMBER)
    if code is E.NETWORK_EXCEPTION:
        s.fail(commit)
    else:
        s.answer(commit, commit_failed(commit.request, code))


def _completed(s: Script) -> CommitCompleted:
    (done,) = [e for e in s.other_events if isinstance(e, CommitCompleted)]
    return done


@pytest.mark.parametrize(
    ("code", "rediscover"),
    [
        (E.COORDINATOR_NOT_AVAILABLE, True),
        (E.NOT_COORDINATOR, True),
        (E.REQUEST_TIMED_OUT, True),
        (E.NETWORK_EXCEPTION, True),
        (E.COORDINATOR_LOAD_IN_PROGRESS, False),
        (E.UNKNOWN_TOPIC_OR_PARTITION, False),
    ],
)
def test_sync_commit_retries_retriable_errors(code: E, rediscover: bool) -> None:
    """Retriable commit errors: a synchronous commit is sent again after backoff (after finding
    the coordinator again for the coordinator errors) and then succeeds; an asynchronous one
    fails with the error."""
    s = _stable()
    cid = s.core.commit(OFFSETS, s.now)
    s.turn()
    _answer_commit(s, code)
    assert (s.core.coordinator is None) is rediscover
    if rediscover:
        s.find_coordinator()
    assert s.pending(OffsetCommitRequest) == []
    s.advance(BACKOFF)
    _answer_commit(s, E.NONE)
    done = _completed(s)
    assert (done.commit_id, done.error, done.offsets) == (cid, None, tuple(OFFSETS.items()))
    a = _stable()
    a.core.commit(OFFSETS, a.now, asynchronous=True)
    a.turn()
    _answer_commit(a, code)
    failed = _completed(a).error
    assert isinstance(failed, KafkaClientError) and not isinstance(failed, CommitFailedError)
    assert failed.code is code


@pytest.mark.parametrize("code", [E.STALE_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID])
def test_commit_of_a_stale_member_fails_with_commit_failed(code: E) -> None:
    """STALE_MEMBER_EPOCH / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID: CommitFailedError, not retried
    (reference section 2.6: commitSync turns them into CommitFailedException)."""
    s = _stable()
    s.core.commit(OFFSETS, s.now)
    s.turn()
    _answer_commit(s, code)
    error = _completed(s).error
    assert isinstance(error, CommitFailedError) and error.code is code
    s.advance(10_000)
    assert s.pending(OffsetCommitRequest) == []  # not sent again
    assert s.core.state is S.STABLE


@pytest.mark.parametrize(
    "code",
    [
        E.GROUP_AUTHORIZATION_FAILED,
        E.TOPIC_AUTHORIZATION_FAILED,
        E.OFFSET_METADATA_TOO_LARGE,
        E.INVALID_COMMIT_OFFSET_SIZE,
        E.UNKNOWN_SERVER_ERROR,
    ],
)
def test_other_commit_errors_fail_that_commit_only(code: E) -> None:
    """Errors for the committer: the commit fails with the code; the member carries on."""
    s = _stable()
    s.core.commit(OFFSETS, s.now)
    s.turn()
    _answer_commit(s, code)
    error = _completed(s).error
    assert isinstance(error, KafkaClientError) and not isinstance(error, CommitFailedError)
    assert error.code is code
    assert s.pending(OffsetCommitRequest) == [] and s.core.state is S.STABLE


def test_successful_commit_completes_with_no_error() -> None:
    s = _stable()
    s.core.commit(OFFSETS, s.now)
    s.turn()
    _answer_commit(s, E.NONE)
    assert _completed(s).error is None


def test_commit_before_revocation_does_not_retry_unknown_topic_or_partition() -> None:
    """The commit before revocation gives up on UNKNOWN_TOPIC_OR_PARTITION (the topic is gone) and
    the revocation goes on (CommitRequestManager.autoCommitSyncBeforeRevocationWithRetries)."""
    s = Script.new(**{"auto.commit.interval.ms": 60_000})
    s.join(epoch=2, assignment=owned((T, (0, 1))))
    s.core.update_positions(OFFSETS)
    s.answer(s.advance(5_000)[0], ok(2, assignment=owned((T, (1,)))))
    _answer_commit(s, E.UNKNOWN_TOPIC_OR_PARTITION)
    assert [c.method for c in s.callbacks] == [CallbackMethod.ON_PARTITIONS_REVOKED]
    assert s.pending(OffsetCommitRequest) == []


# ---------------------------------------------------------------------------------- OffsetFetch
FETCH_TESTED = {
    E.NONE,
    E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_COORDINATOR,
    E.NETWORK_EXCEPTION,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.UNSTABLE_OFFSET_COMMIT,
    E.STALE_MEMBER_EPOCH,
    E.GROUP_AUTHORIZATION_FAILED,
}


def test_every_fetch_row_is_tested_here() -> None:
    listed = {code for code in TABLE[CgApi.OFFSET_FETCH] if code is not DEFAULT}
    assert listed <= FETCH_TESTED


def _answer_fetch(s: Script, code: E, offset: int = 42) -> None:
    fetch = s.one(OffsetFetchRequest)
    assert fetch.request == offset_fetch_request(group_id="g", partitions=tp("t", 0, 1), require_stable=True)
    if code is E.NETWORK_EXCEPTION:
        s.fail(fetch)
        return
    s.answer(
        fetch,
        offset_fetch_response(
            group_id="g",
            error=code,
            offsets=(
                ("t", OffsetFetchPartitionResponse(partition=0, offset=offset, metadata="m")),
                ("t", OffsetFetchPartitionResponse(partition=1, offset=-1)),
            ),
        ),
    )


@pytest.mark.parametrize(
    ("code", "rediscover"),
    [
        (E.COORDINATOR_NOT_AVAILABLE, True),
        (E.NOT_COORDINATOR, True),
        (E.NETWORK_EXCEPTION, True),
        (E.COORDINATOR_LOAD_IN_PROGRESS, False),
        (E.UNSTABLE_OFFSET_COMMIT, False),
    ],
)
def test_offset_fetch_retries_retriable_errors(code: E, rediscover: bool) -> None:
    """OffsetFetch retries retriable errors after backoff until default.api.timeout.ms
    (CommitRequestManager.fetchOffsetsWithRetries); -1 means nothing committed."""
    s = _stable()
    fid = s.core.fetch_committed(tp("t", 0, 1), s.now)
    s.turn()
    _answer_fetch(s, code)
    assert (s.core.coordinator is None) is rediscover
    if rediscover:
        s.find_coordinator()
    s.advance(BACKOFF)
    _answer_fetch(s, E.NONE)
    (done,) = [e for e in s.other_events if isinstance(e, CommittedOffsets)]
    assert (done.fetch_id, done.error) == (fid, None)
    assert done.offsets == (
        (TopicPartition("t", 0), OffsetAndMetadata(offset=42, metadata="m")),
        (TopicPartition("t", 1), None),
    )


@pytest.mark.parametrize("code", [E.STALE_MEMBER_EPOCH, E.GROUP_AUTHORIZATION_FAILED, E.UNKNOWN_SERVER_ERROR])
def test_offset_fetch_errors_that_are_not_retried(code: E) -> None:
    """OffsetFetch STALE_MEMBER_EPOCH is not retried (reference section 2.6); nor are other errors."""
    s = _stable()
    s.core.fetch_committed(tp("t", 0, 1), s.now)
    s.turn()
    _answer_fetch(s, code)
    (done,) = [e for e in s.other_events if isinstance(e, CommittedOffsets)]
    assert done.error is not None and done.error.code is code and done.offsets == ()
    s.advance(10_000)
    assert s.pending(OffsetFetchRequest) == [] and s.core.state is S.STABLE
