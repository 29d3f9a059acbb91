"""The sans-I/O consumer member: the client's ``ConsumerCoordinator`` (seed 004).

:class:`ConsumerCoordinator` is an :class:`~groupcoord.client.member.AbstractCoordinator` for
protocol type ``consumer``. It is driven exactly as ``member.py`` describes (``poll``,
``heartbeat_poll``, ``pending``, ``on_response``, ``on_failure``, ``next_deadline_ms``,
``events``) and adds the consumer's own calls:

``subscribe(topics)`` / ``subscribe_pattern(regex)``
    Auto-assigned membership; a pattern is matched against the topics of the Metadata the
    core requests (internal topics excluded unless ``exclude.internal.topics`` is false).
``assign(partitions)`` / ``unsubscribe(now_ms)``
    Manual assignment (no group membership; commits carry generation -1 and member "");
    leaving the subscription (revoke or lose, then LeaveGroup for dynamic members).
``update_positions(positions)``
    The adapter tells the core the position (next offset to read) of each partition whose
    records it handed to the application; auto-commit and ``commit(None, ...)`` commit them.
``commit(offsets, now_ms, *, asynchronous) -> int``
    Queues an OffsetCommit (``offsets`` None = the consumed positions). The result arrives as
    a :class:`CommitCompleted` event with that id (error ``None`` on success, else
    :class:`CommitFailedError` / :class:`FatalGroupError` / a retriable
    :class:`KafkaClientError`). A synchronous commit retries retriable errors with backoff
    until ``default.api.timeout.ms``; an asynchronous one does not retry.
``fetch_committed(partitions, now_ms) -> int``
    Queues an OffsetFetch; answered by a :class:`CommittedOffsets` event with that id.
``close(now_ms)``
    Commits the consumed positions if auto-commit is on, then revokes and leaves (dynamic
    members only send LeaveGroup). :attr:`closed` turns true when nothing is left to send;
    drive it with ``pending(now_ms)``.

Events (:meth:`events`), delivered by the adapter on the application's thread in order:
:class:`PartitionsRevoked`, :class:`PartitionsAssigned`, :class:`PartitionsLost` (the
``on_revoke`` / ``on_assign`` / ``on_lost`` callbacks), :class:`StartingPositions` (the
committed offsets of newly assigned partitions, ``None`` where nothing is committed: the
fetcher applies ``auto.offset.reset`` to those), :class:`CommitCompleted`,
:class:`CommittedOffsets`, and :class:`~groupcoord.client.member.FatalErrorEvent`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from groupcoord.client.errors import KafkaClientError
from groupcoord.client.member import MemberEvent
from groupcoord.client.types import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionsRevoked(MemberEvent):
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionsAssigned(MemberEvent):
    """Newly added partitions (eager: the whole assignment; cooperative: only the added ones).
    Emitted on every completed rebalance, even when empty (as Java calls onPartitionsAssigned)."""

    partitions: tuple[TopicPartition, ...]
    generation_id: int = -1


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionsLost(MemberEvent):
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class StartingPositions(MemberEvent):
    """Committed offsets of assigned partitions; ``None`` = nothing committed (use auto.offset.reset)."""

    positions: tuple[tuple[TopicPartition, OffsetAndMetadata | None], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class CommitCompleted(MemberEvent):
    commit_id: int
    offsets: tuple[tuple[TopicPartition, OffsetAndMetadata], ...]
    error: KafkaClientError | None


@dataclass(frozen=True, kw_only=True, slots=True)
class CommittedOffsets(MemberEvent):
    fetch_id: int
    offsets: tuple[tuple[TopicPartition, OffsetAndMetadata | None], ...]
    error: KafkaClientError | None
