"""What a member core tells its adapter: the events :meth:`AbstractCoordinator.events` drains.

The adapter delivers them on the application's thread, oldest first. Every core may emit
:class:`FatalErrorEvent`; the consumer core (``consumer_core.py``) adds the partition, position,
commit and offset-fetch events; the generic member (``group_member.py``) adds
:class:`Assigned` and :class:`Revoked`.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.client.errors import KafkaClientError
from groupcoord.client.types import OffsetAndMetadata, TopicPartition

__all__ = [
    "Assigned",
    "CommitCompleted",
    "CommittedOffsets",
    "FatalErrorEvent",
    "MemberEvent",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "Revoked",
    "StartingPositions",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberEvent:
    """Base of everything :meth:`AbstractCoordinator.events` returns."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FatalErrorEvent(MemberEvent):
    """An error for the application: the adapter raises ``error`` from its next call.

    ``fatal`` True (FENCED_INSTANCE_ID, GROUP_AUTHORIZATION_FAILED, ...): the member has
    stopped and every later call raises it again. ``fatal`` False: raised once (an unexpected
    error the member retries after), as Java's ``poll`` throws a non-retriable exception once."""

    error: KafkaClientError
    fatal: bool = True


# -- the consumer core ---------------------------------------------------------------------


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


# -- the generic member (custom protocol types) ----------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Assigned(MemberEvent):
    """The member's assignment from the leader, for ``generation_id`` of ``protocol``."""

    assignment: bytes
    generation_id: int
    protocol: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Revoked(MemberEvent):
    """Stop the work of the previous assignment (before a rebalance, and when leaving)."""
