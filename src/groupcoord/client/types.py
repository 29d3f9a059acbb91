"""Values the client hands to applications: partitions, records, committed offsets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """One partition of one topic; ordered by topic, then partition, as Kafka's assignors sort."""

    topic: str
    partition: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Record:
    """One consumed record."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = field(default=())
    leader_epoch: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetAndMetadata:
    """A committed (or to-be-committed) position: the offset of the next record to read."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None
