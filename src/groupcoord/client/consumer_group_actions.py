"""The consumer-protocol member's error -> action table (KIP-848): one row per (API, error code).

The member core (``consumer_group_member.py``) looks every ConsumerGroupHeartbeat and
OffsetCommit (v9+) answer up here with :func:`action_for`; a broken connection or a timed-out
request is looked up as ``NETWORK_EXCEPTION``, a code without a row takes the API's ``DEFAULT``
row. ``scripts/gen_consumer_group_state_machine.py`` renders the table into
``docs/consumer-group-client-state-machine.md``.

Sources (Kafka 4.x client): ``AbstractHeartbeatRequestManager.onErrorResponse`` and
``onFailure``, ``ConsumerHeartbeatRequestManager.handleSpecificError`` (UNSUPPORTED_VERSION,
UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID), the reference's section 2.4 (TOPIC_AUTHORIZATION_FAILED
is raised from ``poll()`` and the member keeps its state, INVALID_REGULAR_EXPRESSION is fatal),
``CommitRequestManager.OffsetCommitRequestState.onResponse`` with
``autoCommitSyncBeforeRevocationWithRetries`` for OffsetCommit, and ``OffsetFetchRequestState``
(``fetchOffsetsWithRetries``) for OffsetFetch.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from groupcoord.errors import ErrorCode as E


class CgApi(enum.Enum):
    CONSUMER_GROUP_HEARTBEAT = "ConsumerGroupHeartbeat"
    OFFSET_COMMIT = "OffsetCommit"
    OFFSET_FETCH = "OffsetFetch"


class CgAction(enum.Enum):
    SUCCESS = "success"
    RETRY = "retry after backoff"
    """Send again after ``retry.backoff.ms`` (exponential, up to ``retry.backoff.max.ms``)."""
    REDISCOVER = "mark coordinator unknown, rediscover, retry"
    """Forget the coordinator and FindCoordinator again; a heartbeat skips the backoff."""
    FENCE = "fenced: on_lost, rejoin with epoch 0"
    """FENCED, the owned partitions lost, JOINING with the same member id; no backoff."""
    REPORT = "error to the application, state kept, retry after backoff"
    FATAL = "FatalGroupError, FATAL"
    """The member stops: FATAL, partitions lost, the error raised from every later call."""
    COMMIT_FAILED = "CommitFailedError"
    """The commit's member epoch or member is gone."""
    ERROR = "error to the committer"
    """This commit fails with the error; the member carries on."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CgRule:
    action: CgAction
    retriable: bool = False
    """OffsetCommit: a synchronous commit (and the commit before revocation) sends again until
    its deadline."""
    retry_before_revocation: bool = False
    """OffsetCommit STALE_MEMBER_EPOCH: the commit before a revocation retries with the newest
    epoch (Java ``isStaleEpochErrorAndValidEpochAvailable``); any other commit fails."""
    message: str | None = None
    """The error text raised instead of the broker's message."""
    note: str = ""


DEFAULT: E | None = None

CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG = (
    "The cluster does not support the new consumer group protocol. Set group.protocol=classic on the "
    "consumer configs to revert to the classic protocol until the cluster is upgraded."
)

_FATAL_HB = CgRule(action=CgAction.FATAL)

TABLE: dict[CgApi, dict[E | None, CgRule]] = {
    CgApi.CONSUMER_GROUP_HEARTBEAT: {
        E.NONE: CgRule(
            action=CgAction.SUCCESS, note="epoch and interval from the response; assignment if sent"
        ),
        E.NOT_COORDINATOR: CgRule(action=CgAction.REDISCOVER, note="no backoff once rediscovered"),
        E.COORDINATOR_NOT_AVAILABLE: CgRule(action=CgAction.REDISCOVER, note="no backoff once rediscovered"),
        E.NETWORK_EXCEPTION: CgRule(
            action=CgAction.REDISCOVER,
            retriable=True,
            note="transport failure: coordinator disconnected, retried after backoff",
        ),
        E.COORDINATOR_LOAD_IN_PROGRESS: CgRule(action=CgAction.RETRY),
        E.FENCED_MEMBER_EPOCH: CgRule(action=CgAction.FENCE),
        E.UNKNOWN_MEMBER_ID: CgRule(action=CgAction.FENCE),
        E.TOPIC_AUTHORIZATION_FAILED: CgRule(action=CgAction.REPORT, note="raised from the next poll"),
        E.GROUP_AUTHORIZATION_FAILED: _FATAL_HB,
        E.INVALID_REQUEST: _FATAL_HB,
        E.GROUP_MAX_SIZE_REACHED: _FATAL_HB,
        E.UNSUPPORTED_ASSIGNOR: _FATAL_HB,
        E.UNSUPPORTED_VERSION: CgRule(
            action=CgAction.FATAL,
            message=CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG,
            note="the broker's text kept when it is about a regex (v0)",
        ),
        E.UNRELEASED_INSTANCE_ID: _FATAL_HB,
        E.FENCED_INSTANCE_ID: _FATAL_HB,
        E.INVALID_REGULAR_EXPRESSION: _FATAL_HB,
        DEFAULT: CgRule(action=CgAction.FATAL, note="an unexpected error is fatal, as in Java"),
    },
    CgApi.OFFSET_COMMIT: {
        E.NONE: CgRule(action=CgAction.SUCCESS),
        E.COORDINATOR_NOT_AVAILABLE: CgRule(action=CgAction.REDISCOVER, retriable=True),
        E.NOT_COORDINATOR: CgRule(action=CgAction.REDISCOVER, retriable=True),
        E.REQUEST_TIMED_OUT: CgRule(action=CgAction.REDISCOVER, retriable=True),
        E.NETWORK_EXCEPTION: CgRule(action=CgAction.REDISCOVER, retriable=True, note="transport failure"),
        E.COORDINATOR_LOAD_IN_PROGRESS: CgRule(action=CgAction.RETRY, retriable=True),
        E.UNKNOWN_TOPIC_OR_PARTITION: CgRule(
            action=CgAction.RETRY, retriable=True, note="not retried by the commit before revocation"
        ),
        E.STALE_MEMBER_EPOCH: CgRule(
            action=CgAction.COMMIT_FAILED,
            retry_before_revocation=True,
            note="the commit before revocation retries with the newest epoch until the rebalance timeout",
        ),
        E.UNKNOWN_MEMBER_ID: CgRule(action=CgAction.COMMIT_FAILED),
        E.FENCED_INSTANCE_ID: CgRule(action=CgAction.COMMIT_FAILED),
        E.GROUP_AUTHORIZATION_FAILED: CgRule(action=CgAction.ERROR),
        E.TOPIC_AUTHORIZATION_FAILED: CgRule(action=CgAction.ERROR),
        E.OFFSET_METADATA_TOO_LARGE: CgRule(action=CgAction.ERROR),
        E.INVALID_COMMIT_OFFSET_SIZE: CgRule(action=CgAction.ERROR),
        DEFAULT: CgRule(action=CgAction.ERROR, note="unexpected error in commit"),
    },
    CgApi.OFFSET_FETCH: {
        E.NONE: CgRule(action=CgAction.SUCCESS),
        E.COORDINATOR_NOT_AVAILABLE: CgRule(action=CgAction.REDISCOVER, retriable=True),
        E.NOT_COORDINATOR: CgRule(action=CgAction.REDISCOVER, retriable=True),
        E.NETWORK_EXCEPTION: CgRule(action=CgAction.REDISCOVER, retriable=True, note="transport failure"),
        E.COORDINATOR_LOAD_IN_PROGRESS: CgRule(action=CgAction.RETRY, retriable=True),
        E.UNSTABLE_OFFSET_COMMIT: CgRule(
            action=CgAction.RETRY, retriable=True, note="a transaction holds the offset; ask again"
        ),
        E.STALE_MEMBER_EPOCH: CgRule(action=CgAction.ERROR, note="not retried (reference section 2.6)"),
        DEFAULT: CgRule(action=CgAction.ERROR),
    },
}


def action_for(api: CgApi, code: E) -> CgRule:
    rows = TABLE[api]
    rule = rows.get(code)
    return rule if rule is not None else rows[DEFAULT]
