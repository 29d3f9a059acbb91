"""The member's error -> action table: one row per (API, error code) it handles.

Every response handler of the member core (``member.py``, ``consumer_core.py``) asks
:func:`action_for` what to do with an error and acts on the :class:`Action` it gets; there is
no second copy of these decisions in the handlers. Transport failures (the connection broke,
the request timed out) are looked up as ``NETWORK_EXCEPTION``. Codes without a row take the
API's ``DEFAULT`` row. ``docs/client.md`` shows this table, generated from :data:`TABLE` by
``scripts/gen_client_state_machine.py``.

The rows follow Kafka's Java client (``AbstractCoordinator``'s ``FindCoordinatorResponseHandler``,
``JoinGroupResponseHandler``, ``SyncGroupResponseHandler``, ``HeartbeatResponseHandler``,
``LeaveGroupResponseHandler``; ``ConsumerCoordinator``'s ``OffsetCommitResponseHandler`` and
``OffsetFetchResponseHandler``). Where the Java client raises an exception the application
may retry (``RebalanceInProgressException`` from a commit), we raise
:class:`~groupcoord.client.errors.CommitFailedError`, as issue 13 asks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from groupcoord.errors import ErrorCode as E


class Api(enum.Enum):
    FIND_COORDINATOR = "FindCoordinator"
    JOIN_GROUP = "JoinGroup"
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE_GROUP = "LeaveGroup"
    OFFSET_COMMIT = "OffsetCommit"
    OFFSET_FETCH = "OffsetFetch"


class Action(enum.Enum):
    SUCCESS = "success"
    """Proceed."""
    RETRY = "retry after backoff"
    """Retriable: send again after ``retry.backoff.ms`` (exponential up to ``retry.backoff.max.ms``)."""
    REDISCOVER = "mark coordinator unknown, rediscover, retry"
    """The coordinator moved or is gone: forget it, FindCoordinator again, then retry."""
    REJOIN = "rejoin"
    """Keep the generation, request a rejoin (sent at once)."""
    RESET_AND_REJOIN = "reset generation, rejoin"
    """Back to UNJOINED with no generation (the member id kept only where ``keep_member_id``), rejoin."""
    REJOIN_WITH_MEMBER_ID = "adopt the given member id, rejoin"
    """MEMBER_ID_REQUIRED: the second step of the two-step join."""
    FATAL = "FatalGroupError"
    """The member cannot continue: raised to the application."""
    COMMIT_FAILED = "CommitFailedError"
    """The commit's generation is gone: raised to the committer (plus the rejoin or reset noted)."""
    ERROR = "error to the caller"
    """Raised to the caller of this one operation (not retried, the member carries on)."""
    IGNORE = "log and ignore"
    """Nothing to do (LeaveGroup is fire-and-forget; local state was already reset)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Rule:
    action: Action
    keep_member_id: bool = False
    """For RESET_AND_REJOIN / COMMIT_FAILED resets: keep the member id (ILLEGAL_GENERATION, KAFKA-13419)."""
    reset: bool = False
    """For COMMIT_FAILED: also reset the generation and rejoin."""
    rejoin: bool = False
    """For COMMIT_FAILED / RETRY / REDISCOVER during a join: also request a rejoin."""
    report: bool = False
    """Also surface the error to the application once, as a non-fatal error event."""
    if_stale: Action | None = None
    """What to do instead when the answer is for a generation that is no longer the member's
    (Java ``generationUnchanged()`` false): the error is about the past."""
    note: str = ""


DEFAULT: E | None = None
"""Key of the row used for codes an API's table does not list."""

_COORDINATOR_MOVED = (
    E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_COORDINATOR,
    E.NETWORK_EXCEPTION,
    E.REQUEST_TIMED_OUT,
)
_REDISCOVER = Rule(action=Action.REDISCOVER)
_FATAL = Rule(action=Action.FATAL)

TABLE: dict[Api, dict[E | None, Rule]] = {
    Api.FIND_COORDINATOR: {
        E.NONE: Rule(action=Action.SUCCESS, note="remember the coordinator, reset the session timer"),
        E.COORDINATOR_NOT_AVAILABLE: Rule(action=Action.RETRY),
        E.COORDINATOR_LOAD_IN_PROGRESS: Rule(action=Action.RETRY),
        E.NOT_COORDINATOR: Rule(action=Action.RETRY),
        E.NETWORK_EXCEPTION: Rule(action=Action.RETRY),
        E.REQUEST_TIMED_OUT: Rule(action=Action.RETRY),
        E.GROUP_AUTHORIZATION_FAILED: _FATAL,
        DEFAULT: Rule(action=Action.RETRY, report=True, note="reported to the application, then retried"),
    },
    Api.JOIN_GROUP: {
        E.NONE: Rule(action=Action.SUCCESS, note="COMPLETING_REBALANCE, heartbeat enabled; leader assigns"),
        **{c: Rule(action=Action.REDISCOVER, rejoin=True) for c in _COORDINATOR_MOVED},
        E.COORDINATOR_LOAD_IN_PROGRESS: Rule(action=Action.RETRY, rejoin=True),
        E.REBALANCE_IN_PROGRESS: Rule(action=Action.REJOIN),
        E.UNKNOWN_MEMBER_ID: Rule(action=Action.RESET_AND_REJOIN, if_stale=Action.REJOIN),
        E.ILLEGAL_GENERATION: Rule(
            action=Action.RESET_AND_REJOIN, keep_member_id=True, if_stale=Action.REJOIN
        ),
        E.MEMBER_ID_REQUIRED: Rule(action=Action.REJOIN_WITH_MEMBER_ID),
        E.FENCED_INSTANCE_ID: _FATAL,
        E.GROUP_MAX_SIZE_REACHED: _FATAL,
        E.INCONSISTENT_GROUP_PROTOCOL: _FATAL,
        E.GROUP_AUTHORIZATION_FAILED: _FATAL,
        E.INVALID_SESSION_TIMEOUT: _FATAL,
        E.INVALID_GROUP_ID: _FATAL,
        E.UNSUPPORTED_VERSION: _FATAL,
        DEFAULT: _FATAL,
    },
    Api.SYNC_GROUP: {
        E.NONE: Rule(action=Action.SUCCESS, note="STABLE; on_join_complete with the assignment"),
        **{c: Rule(action=Action.REDISCOVER, rejoin=True) for c in _COORDINATOR_MOVED},
        E.COORDINATOR_LOAD_IN_PROGRESS: Rule(action=Action.RETRY, rejoin=True),
        E.REBALANCE_IN_PROGRESS: Rule(action=Action.REJOIN),
        E.UNKNOWN_MEMBER_ID: Rule(action=Action.RESET_AND_REJOIN, if_stale=Action.REJOIN),
        E.ILLEGAL_GENERATION: Rule(
            action=Action.RESET_AND_REJOIN, keep_member_id=True, if_stale=Action.REJOIN
        ),
        E.FENCED_INSTANCE_ID: _FATAL,
        E.GROUP_AUTHORIZATION_FAILED: _FATAL,
        E.INCONSISTENT_GROUP_PROTOCOL: _FATAL,
        DEFAULT: _FATAL,
    },
    Api.HEARTBEAT: {
        E.NONE: Rule(action=Action.SUCCESS, note="session timer reset"),
        **{c: _REDISCOVER for c in _COORDINATOR_MOVED},
        E.COORDINATOR_LOAD_IN_PROGRESS: Rule(action=Action.RETRY),
        E.REBALANCE_IN_PROGRESS: Rule(
            action=Action.REJOIN, note="only in STABLE; the session timer is reset either way"
        ),
        E.UNKNOWN_MEMBER_ID: Rule(action=Action.RESET_AND_REJOIN, if_stale=Action.IGNORE),
        E.ILLEGAL_GENERATION: Rule(
            action=Action.RESET_AND_REJOIN, keep_member_id=True, if_stale=Action.IGNORE
        ),
        E.FENCED_INSTANCE_ID: Rule(action=Action.FATAL, if_stale=Action.IGNORE),
        E.GROUP_AUTHORIZATION_FAILED: _FATAL,
        DEFAULT: Rule(action=Action.RETRY, note="heartbeat backs off"),
    },
    Api.LEAVE_GROUP: {
        E.NONE: Rule(action=Action.SUCCESS),
        DEFAULT: Rule(action=Action.IGNORE),
    },
    Api.OFFSET_COMMIT: {
        E.NONE: Rule(action=Action.SUCCESS),
        **{
            c: Rule(action=Action.REDISCOVER, note="a synchronous commit retries") for c in _COORDINATOR_MOVED
        },
        E.COORDINATOR_LOAD_IN_PROGRESS: Rule(action=Action.RETRY, note="a synchronous commit retries"),
        E.UNKNOWN_TOPIC_OR_PARTITION: Rule(action=Action.RETRY, note="a synchronous commit retries"),
        E.REBALANCE_IN_PROGRESS: Rule(action=Action.COMMIT_FAILED, rejoin=True, note="generation kept"),
        E.UNKNOWN_MEMBER_ID: Rule(
            action=Action.COMMIT_FAILED,
            reset=True,
            if_stale=Action.COMMIT_FAILED,
            note="stale: no reset only while a rebalance is being prepared",
        ),
        E.ILLEGAL_GENERATION: Rule(
            action=Action.COMMIT_FAILED,
            reset=True,
            keep_member_id=True,
            if_stale=Action.COMMIT_FAILED,
            note="stale: no reset only while a rebalance is being prepared",
        ),
        E.FENCED_INSTANCE_ID: Rule(action=Action.FATAL, if_stale=Action.COMMIT_FAILED),
        E.GROUP_AUTHORIZATION_FAILED: _FATAL,
        E.TOPIC_AUTHORIZATION_FAILED: Rule(action=Action.ERROR),
        E.OFFSET_METADATA_TOO_LARGE: Rule(action=Action.ERROR),
        E.INVALID_COMMIT_OFFSET_SIZE: Rule(action=Action.ERROR),
        DEFAULT: Rule(action=Action.ERROR),
    },
    Api.OFFSET_FETCH: {
        E.NONE: Rule(action=Action.SUCCESS),
        **{c: _REDISCOVER for c in _COORDINATOR_MOVED},
        E.COORDINATOR_LOAD_IN_PROGRESS: Rule(action=Action.RETRY),
        E.UNSTABLE_OFFSET_COMMIT: Rule(action=Action.RETRY, note="a transaction holds the offset; ask again"),
        E.GROUP_AUTHORIZATION_FAILED: _FATAL,
        E.UNKNOWN_TOPIC_OR_PARTITION: Rule(action=Action.ERROR),
        E.TOPIC_AUTHORIZATION_FAILED: Rule(action=Action.ERROR),
        DEFAULT: Rule(action=Action.ERROR),
    },
}


def action_for(api: Api, code: E) -> Rule:
    """The row for ``code`` in ``api``'s table, or the API's default row."""
    rows = TABLE[api]
    rule = rows.get(code)
    return rows[DEFAULT] if rule is None else rule
