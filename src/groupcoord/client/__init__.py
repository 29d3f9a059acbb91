"""The member side of Kafka's classic group protocol.

``groupcoord.client`` is a Kafka consumer and generic group member written against the wire
protocol only, so it works with any Kafka-compatible broker. Its heart is a sans-I/O member
core (the client's ``AbstractCoordinator`` / ``ConsumerCoordinator`` of the seeds) driven by
an injected clock; the blocking :class:`Consumer`, the asyncio :class:`AsyncConsumer` and
:class:`GroupMember` are thin adapters over it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groupcoord.client.errors import (
    CommitFailedError,
    ConfigError,
    FatalGroupError,
    KafkaClientError,
)
from groupcoord.client.types import OffsetAndMetadata, Record, TopicPartition

if TYPE_CHECKING:
    from groupcoord.client.aio import AsyncConsumer
    from groupcoord.client.consumer import Consumer
    from groupcoord.client.group_member import GroupMember

_ADAPTERS = {
    "AsyncConsumer": "groupcoord.client.aio",
    "Consumer": "groupcoord.client.consumer",
    "GroupMember": "groupcoord.client.group_member",
}


def __getattr__(name: str) -> Any:
    # The adapters (sockets, threads) load on first use: the values above stay importable
    # without them, and the adapter modules can import this package's submodules freely.
    module = _ADAPTERS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AsyncConsumer",
    "CommitFailedError",
    "ConfigError",
    "Consumer",
    "FatalGroupError",
    "GroupMember",
    "KafkaClientError",
    "OffsetAndMetadata",
    "Record",
    "TopicPartition",
]
