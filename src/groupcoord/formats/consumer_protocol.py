"""The "consumer" embedded protocol: subscription and assignment payloads.

Consumers put a ``ConsumerProtocolSubscription`` in each JoinGroup protocol's metadata and
the leader sends one ``ConsumerProtocolAssignment`` per member in SyncGroup. To the
coordinator both are opaque bytes; these codecs exist for tests, for diagnostics
(DescribeGroups, the pipeline) and for our own client code.

Both payloads are an int16 version followed by a non-flexible struct (schemas from kio):

* Subscription v0: topics, user_data (nullable); v1 adds owned_partitions (KIP-429); v2 adds
  generation_id (default -1); v3 adds rack_id (nullable, KIP-881).
* Assignment v0-v3: assigned partitions by topic, user_data (nullable). Versions 1-3 add no
  fields; the number only tells which subscription features the leader understood.

As in Kafka, a reader that meets a version newer than it knows parses the fields of the
newest version it knows and ignores whatever follows: later versions only append fields.
Truncated or malformed input raises :class:`ConsumerProtocolError` (a ``ValueError``).
"""

from __future__ import annotations

import io
import logging
import struct
from dataclasses import dataclass
from typing import Any

from kio.schema.consumer_protocol_assignment.v0.data import ConsumerProtocolAssignment as _AssignmentV0
from kio.schema.consumer_protocol_assignment.v0.data import TopicPartition as _AssignmentTpV0
from kio.schema.consumer_protocol_assignment.v1.data import ConsumerProtocolAssignment as _AssignmentV1
from kio.schema.consumer_protocol_assignment.v1.data import TopicPartition as _AssignmentTpV1
from kio.schema.consumer_protocol_assignment.v2.data import ConsumerProtocolAssignment as _AssignmentV2
from kio.schema.consumer_protocol_assignment.v2.data import TopicPartition as _AssignmentTpV2
from kio.schema.consumer_protocol_assignment.v3.data import ConsumerProtocolAssignment as _AssignmentV3
from kio.schema.consumer_protocol_assignment.v3.data import TopicPartition as _AssignmentTpV3
from kio.schema.consumer_protocol_subscription.v0.data import ConsumerProtocolSubscription as _SubscriptionV0
from kio.schema.consumer_protocol_subscription.v1.data import ConsumerProtocolSubscription as _SubscriptionV1
from kio.schema.consumer_protocol_subscription.v1.data import TopicPartition as _SubscriptionTpV1
from kio.schema.consumer_protocol_subscription.v2.data import ConsumerProtocolSubscription as _SubscriptionV2
from kio.schema.consumer_protocol_subscription.v2.data import TopicPartition as _SubscriptionTpV2
from kio.schema.consumer_protocol_subscription.v3.data import ConsumerProtocolSubscription as _SubscriptionV3
from kio.schema.consumer_protocol_subscription.v3.data import TopicPartition as _SubscriptionTpV3
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

log = logging.getLogger(__name__)

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "LATEST_VERSION",
    "Assignment",
    "ConsumerProtocolError",
    "Subscription",
    "TopicPartitions",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

CONSUMER_PROTOCOL_TYPE = "consumer"
LATEST_VERSION = 3

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]
"""Partitions grouped by topic: ``(("orders", (0, 1)), ("audit", (2,)))``; order is kept."""

_SUBSCRIPTION = (_SubscriptionV0, _SubscriptionV1, _SubscriptionV2, _SubscriptionV3)
_SUBSCRIPTION_TP: tuple[Any, ...] = (None, _SubscriptionTpV1, _SubscriptionTpV2, _SubscriptionTpV3)
_ASSIGNMENT = (_AssignmentV0, _AssignmentV1, _AssignmentV2, _AssignmentV3)
_ASSIGNMENT_TP: tuple[Any, ...] = (_AssignmentTpV0, _AssignmentTpV1, _AssignmentTpV2, _AssignmentTpV3)
_SUBSCRIPTION_READERS = tuple(entity_reader(c) for c in _SUBSCRIPTION)
_SUBSCRIPTION_WRITERS = tuple(entity_writer(c) for c in _SUBSCRIPTION)
_ASSIGNMENT_READERS = tuple(entity_reader(c) for c in _ASSIGNMENT)
_ASSIGNMENT_WRITERS = tuple(entity_writer(c) for c in _ASSIGNMENT)
_VERSION = struct.Struct(">h")


class ConsumerProtocolError(ValueError):
    """A subscription or assignment payload that cannot be parsed or written."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscription:
    """A member's subscription. ``version`` is the one read from (or to write on) the wire."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Assignment:
    """The partitions the leader gave one member."""

    partitions: TopicPartitions
    user_data: bytes | None = None
    version: int = 0


def _read_version(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise ConsumerProtocolError(f"{what} of {len(data)} bytes has no version prefix")
    version: int = _VERSION.unpack_from(data, 0)[0]
    if version < 0:
        raise ConsumerProtocolError(f"{what} has negative version {version}")
    return version


def _encode(writer: Any, entity: Any, version: int, what: str) -> bytes:
    buf = io.BytesIO()
    buf.write(_VERSION.pack(version))
    try:
        writer(buf, entity)
    except (SerialError, struct.error, OverflowError, ValueError, TypeError) as exc:
        raise ConsumerProtocolError(f"cannot encode {what}: {exc}") from exc
    return buf.getvalue()


def _check_encode_version(version: int, what: str) -> None:
    if not 0 <= version <= LATEST_VERSION:
        raise ConsumerProtocolError(f"cannot write {what} version {version}; known versions are 0..3")


def _array(items: Any, field: str, what: str) -> tuple[Any, ...]:
    # kio reads an int32 count of -1 as None; none of these arrays is nullable.
    if items is None:
        raise ConsumerProtocolError(f"malformed {what}: {field} is null but the schema does not allow null")
    return tuple(items)


def _tps(items: Any, field: str, what: str) -> TopicPartitions:
    return tuple(
        (str(tp.topic), tuple(int(p) for p in _array(tp.partitions, "partitions", what)))
        for tp in _array(items, field, what)
    )


def encode_subscription(sub: Subscription) -> bytes:
    """Bytes for a JoinGroup protocol's metadata, in ``sub.version``.

    Fields the version cannot carry must be at their defaults, else ConsumerProtocolError.
    """
    v = sub.version
    _check_encode_version(v, "subscription")
    if v < 1 and sub.owned_partitions:
        raise ConsumerProtocolError("subscription v0 cannot carry owned partitions")
    if v < 2 and sub.generation_id != -1:
        raise ConsumerProtocolError(f"subscription v{v} cannot carry a generation id")
    if v < 3 and sub.rack_id is not None:
        raise ConsumerProtocolError(f"subscription v{v} cannot carry a rack id")
    fields: dict[str, Any] = {"topics": tuple(sub.topics), "user_data": sub.user_data}
    if v >= 1:
        tp = _SUBSCRIPTION_TP[v]
        fields["owned_partitions"] = tuple(
            tp(topic=topic, partitions=tuple(parts)) for topic, parts in sub.owned_partitions
        )
    if v >= 2:
        fields["generation_id"] = sub.generation_id
    if v >= 3:
        fields["rack_id"] = sub.rack_id
    return _encode(_SUBSCRIPTION_WRITERS[v], _SUBSCRIPTION[v](**fields), v, "subscription")


def decode_subscription(data: bytes) -> Subscription:
    """Parse JoinGroup protocol metadata of the consumer protocol (any version >= 0)."""
    data = bytes(data)
    version = _read_version(data, "subscription")
    schema = min(version, LATEST_VERSION)
    try:
        parsed: Any = _SUBSCRIPTION_READERS[schema](data, 2)[0]
    except (SerialError, ValueError) as exc:
        raise ConsumerProtocolError(f"malformed subscription v{version}: {exc}") from exc
    what = f"subscription v{version}"
    return Subscription(
        topics=tuple(str(t) for t in _array(parsed.topics, "topics", what)),
        user_data=parsed.user_data,
        owned_partitions=_tps(parsed.owned_partitions, "owned_partitions", what) if schema >= 1 else (),
        generation_id=int(parsed.generation_id) if schema >= 2 else -1,
        rack_id=parsed.rack_id if schema >= 3 else None,
        version=version,
    )


def encode_assignment(assignment: Assignment) -> bytes:
    """Bytes for a SyncGroup assignment, in ``assignment.version``."""
    v = assignment.version
    _check_encode_version(v, "assignment")
    tp = _ASSIGNMENT_TP[v]
    entity = _ASSIGNMENT[v](
        assigned_partitions=tuple(
            tp(topic=topic, partitions=tuple(parts)) for topic, parts in assignment.partitions
        ),
        user_data=assignment.user_data,
    )
    return _encode(_ASSIGNMENT_WRITERS[v], entity, v, "assignment")


def decode_assignment(data: bytes) -> Assignment:
    """Parse a SyncGroup assignment of the consumer protocol (any version >= 0).

    An empty byte string is not a valid assignment (a member with nothing assigned still gets
    a version, an empty array and user data); callers that accept "no assignment yet" must
    check for ``b""`` themselves.
    """
    data = bytes(data)
    version = _read_version(data, "assignment")
    schema = min(version, LATEST_VERSION)
    try:
        parsed: Any = _ASSIGNMENT_READERS[schema](data, 2)[0]
    except (SerialError, ValueError) as exc:
        raise ConsumerProtocolError(f"malformed assignment v{version}: {exc}") from exc
    return Assignment(
        partitions=_tps(parsed.assigned_partitions, "assigned_partitions", f"assignment v{version}"),
        user_data=parsed.user_data,
        version=version,
    )
