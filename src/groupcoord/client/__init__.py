"""The member side of Kafka's classic group protocol.

``groupcoord.client`` is a Kafka consumer and generic group member written against the wire
protocol only, so it works with any Kafka-compatible broker. Its heart is a sans-I/O member
core (the client's ``AbstractCoordinator`` / ``ConsumerCoordinator`` of the seeds) driven by
an injected clock; the blocking :class:`Consumer`, the asyncio :class:`AsyncConsumer` and
:class:`GroupMember` are thin adapters over it.
"""

from __future__ import annotations

from groupcoord.client.errors import (
    CommitFailedError,
    ConfigError,
    FatalGroupError,
    KafkaClientError,
)
from groupcoord.client.types import OffsetAndMetadata, Record, TopicPartition

__all__ = [
    "CommitFailedError",
    "ConfigError",
    "FatalGroupError",
    "KafkaClientError",
    "OffsetAndMetadata",
    "Record",
    "TopicPartition",
]
