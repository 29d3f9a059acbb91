"""Exceptions the client raises to applications.

Every exception that stems from a broker answer carries the wire :class:`ErrorCode`. Errors
the member recovers from by itself (rediscovery, rejoin) never reach the application; the
ones below do, and :class:`~groupcoord.errors.ConfigError` (the package's one exception for
an unknown configuration key or a bad value, the broker's and the client's alike; the message
names the key).
"""

from __future__ import annotations

from groupcoord.errors import ConfigError, ErrorCode

__all__ = ["CommitFailedError", "ConfigError", "FatalGroupError", "KafkaClientError"]


class KafkaClientError(Exception):
    """A failure the application must see; ``code`` is the broker's error code, if any."""

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.code = code


class FatalGroupError(KafkaClientError):
    """The member cannot continue in the group: FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
    INCONSISTENT_GROUP_PROTOCOL, GROUP_AUTHORIZATION_FAILED and the like."""


class CommitFailedError(KafkaClientError):
    """A synchronous commit failed because the group rebalanced (or the member was removed)
    since the offsets were consumed; the partitions may now belong to another member."""
