"""Offset commits of the consumer-protocol member (KIP-848): OffsetCommit v9+ with the member epoch.

:class:`CommitManager` is the part of Kafka's ``CommitRequestManager`` the member core needs: it
queues commits, sends them to the coordinator with the member's id and epoch (``-1`` and ``""``
while the member holds no epoch, as Java's ``MemberInfo`` leaves them unset), and applies the
OffsetCommit rows of ``consumer_group_actions.py``:

* a synchronous commit retries retriable errors with backoff until its deadline
  (``default.api.timeout.ms``); an asynchronous one does not retry;
* the commit before a revocation (``maybeAutoCommitSyncBeforeRevocation``) commits every consumed
  position, retries retriable errors and STALE_MEMBER_EPOCH (with the newest epoch and the newest
  positions) until ``now + max.poll.interval.ms``, and never retries UNKNOWN_TOPIC_OR_PARTITION;
  its outcome, success or not, lets the reconciliation go on;
* STALE_MEMBER_EPOCH and UNKNOWN_MEMBER_ID fail any other commit with
  :class:`~groupcoord.client.errors.CommitFailedError`, as Java's ``commitSync`` does.

The manager does no I/O either: the member core asks it for requests (:meth:`sendable`) and
hands it the answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.client.consumer_group_actions import CgAction, CgApi, CgRule, action_for
from groupcoord.client.errors import CommitFailedError, KafkaClientError
from groupcoord.client.heartbeat import ExponentialBackoff
from groupcoord.client.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    commit_errors,
    fetch_error,
    fetched_offsets,
    offset_commit_request,
    offset_fetch_request,
)
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode

log = logging.getLogger(__name__)

Offsets = tuple[tuple[TopicPartition, OffsetAndMetadata], ...]


@dataclass(kw_only=True, slots=True)
class PendingCommit:
    commit_id: int
    offsets: Offsets
    sync: bool
    before_revocation: bool
    deadline: int
    not_before: int = 0
    attempts: int = 0
    request_id: int | None = None


@dataclass(kw_only=True, slots=True)
class PendingFetch:
    fetch_id: int
    partitions: tuple[TopicPartition, ...]
    deadline: int
    not_before: int = 0
    attempts: int = 0
    request_id: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class FetchOutcome:
    """``done`` False: queued again; otherwise the committed offsets (None: nothing committed)."""

    fetch: PendingFetch
    done: bool
    offsets: tuple[tuple[TopicPartition, OffsetAndMetadata | None], ...] = ()
    error: KafkaClientError | None = None
    mark_coordinator_unknown: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class CommitOutcome:
    """``done`` False: queued again (after backoff); ``error`` None with ``done``: committed."""

    commit: PendingCommit
    done: bool
    error: KafkaClientError | None = None
    mark_coordinator_unknown: bool = False


class CommitManager:
    """Commits in flight and waiting; see the module docstring."""

    def __init__(self, group_id: str, instance_id: str | None, backoff: ExponentialBackoff) -> None:
        self.group_id = group_id
        self.instance_id = instance_id
        self._backoff = backoff
        self._next_id = 1
        self.pending: list[PendingCommit] = []
        self.fetches: list[PendingFetch] = []

    def add(self, offsets: Offsets, *, sync: bool, before_revocation: bool, deadline: int) -> PendingCommit:
        commit = PendingCommit(
            commit_id=self._next_id,
            offsets=offsets,
            sync=sync,
            before_revocation=before_revocation,
            deadline=deadline,
        )
        self._next_id += 1
        self.pending.append(commit)
        return commit

    def sendable(self, now: int) -> list[PendingCommit]:
        return [c for c in self.pending if c.request_id is None and c.not_before <= now]

    def request(self, commit: PendingCommit, member_id: str, member_epoch: int) -> OffsetCommitRequest:
        in_group = member_epoch > 0
        return offset_commit_request(
            group_id=self.group_id,
            generation_id=member_epoch if in_group else -1,
            member_id=member_id if in_group else "",
            group_instance_id=self.instance_id,
            offsets=commit.offsets,
        )

    def by_request(self, request_id: int) -> PendingCommit | None:
        for c in self.pending:
            if c.request_id == request_id:
                return c
        return None

    def next_deadline(self) -> int | None:
        waiting = [c.not_before for c in self.pending if c.request_id is None]
        waiting += [f.not_before for f in self.fetches if f.request_id is None]
        return min(waiting) if waiting else None

    # ------------------------------------------------------------------ OffsetFetch
    def add_fetch(self, partitions: tuple[TopicPartition, ...], deadline: int) -> PendingFetch:
        fetch = PendingFetch(fetch_id=self._next_id, partitions=partitions, deadline=deadline)
        self._next_id += 1
        self.fetches.append(fetch)
        return fetch

    def sendable_fetches(self, now: int) -> list[PendingFetch]:
        return [f for f in self.fetches if f.request_id is None and f.not_before <= now]

    def fetch_request(self, fetch: PendingFetch) -> OffsetFetchRequest:
        """``require_stable`` as Java; sent without member id and epoch (the wire layer's
        OffsetFetch has no such fields yet): the coordinator then reads it as an admin fetch."""
        return offset_fetch_request(group_id=self.group_id, partitions=fetch.partitions, require_stable=True)

    def fetch_by_request(self, request_id: int) -> PendingFetch | None:
        return next((f for f in self.fetches if f.request_id == request_id), None)

    def on_fetch_answer(
        self, fetch: PendingFetch, response: OffsetFetchResponse | None, now: int
    ) -> FetchOutcome:
        """Apply an OffsetFetch answer (``None``: a transport failure)."""
        fetch.request_id = None
        code = ErrorCode.NETWORK_EXCEPTION if response is None else fetch_error(response)
        if code is ErrorCode.NONE and response is not None:
            for _tp, fo in fetched_offsets(response):
                if fo.error is not ErrorCode.NONE:
                    code = fo.error
                    break
        rule = action_for(CgApi.OFFSET_FETCH, code)
        rediscover = rule.action is CgAction.REDISCOVER
        if rule.action is CgAction.SUCCESS and response is not None:
            found = dict(fetched_offsets(response))
            offsets = tuple(
                (
                    tp,
                    None
                    if tp not in found or found[tp].offset < 0
                    else OffsetAndMetadata(
                        offset=found[tp].offset,
                        metadata=found[tp].metadata,
                        leader_epoch=found[tp].leader_epoch,
                    ),
                )
                for tp in fetch.partitions
            )
            self.fetches.remove(fetch)
            return FetchOutcome(fetch=fetch, done=True, offsets=offsets)
        if rule.retriable and now < fetch.deadline:
            fetch.attempts += 1
            fetch.not_before = now + self._backoff.backoff(fetch.attempts - 1)
            return FetchOutcome(fetch=fetch, done=False, mark_coordinator_unknown=rediscover)
        self.fetches.remove(fetch)
        error = KafkaClientError(f"OffsetFetch failed with {code.name}", code)
        return FetchOutcome(fetch=fetch, done=True, error=error, mark_coordinator_unknown=rediscover)

    def on_answer(
        self,
        commit: PendingCommit,
        code: ErrorCode,
        now: int,
        *,
        member_epoch: int,
        latest_offsets: Callable[[], Offsets],
    ) -> CommitOutcome:
        """Apply one answer (``code`` NETWORK_EXCEPTION for a transport failure)."""
        commit.request_id = None
        rule = action_for(CgApi.OFFSET_COMMIT, code)
        rediscover = rule.action is CgAction.REDISCOVER
        if rule.action is CgAction.SUCCESS:
            return self._finish(commit, None)
        if self._retries(commit, rule, code, now, member_epoch):
            commit.attempts += 1
            commit.not_before = now + self._backoff.backoff(commit.attempts - 1)
            if commit.before_revocation:
                commit.offsets = latest_offsets()  # Java retries with subscriptions.allConsumed()
                if not commit.offsets:
                    return self._finish(commit, None, rediscover)
            log.debug("OffsetCommit %d answered %s: retrying", commit.commit_id, code.name)
            return CommitOutcome(commit=commit, done=False, mark_coordinator_unknown=rediscover)
        error: KafkaClientError
        if rule.action is CgAction.COMMIT_FAILED:
            error = CommitFailedError(f"OffsetCommit failed with {code.name}", code)
        else:
            error = KafkaClientError(f"OffsetCommit failed with {code.name}", code)
        return self._finish(commit, error, rediscover)

    def _retries(self, commit: PendingCommit, rule: CgRule, code: ErrorCode, now: int, epoch: int) -> bool:
        if now >= commit.deadline:
            return False
        if commit.before_revocation:
            if code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                return False
            return rule.retriable or (rule.retry_before_revocation and epoch > 0)
        return commit.sync and rule.retriable

    def _finish(
        self, commit: PendingCommit, error: KafkaClientError | None, rediscover: bool = False
    ) -> CommitOutcome:
        self.pending.remove(commit)
        if error is not None and commit.before_revocation:
            log.error("the commit before reconciling failed (%s); reconciling anyway", error)
        return CommitOutcome(commit=commit, done=True, error=error, mark_coordinator_unknown=rediscover)

    def answer_of(self, response: OffsetCommitResponse) -> ErrorCode:
        """The commit's error: the first partition error (TOPIC_AUTHORIZATION_FAILED only when no
        other error came, as Java collects the unauthorized topics and fails last)."""
        topic_auth = False
        for _tp, code in commit_errors(response):
            if code is ErrorCode.NONE:
                continue
            if code is ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                topic_auth = True
                continue
            return code
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED if topic_auth else ErrorCode.NONE
