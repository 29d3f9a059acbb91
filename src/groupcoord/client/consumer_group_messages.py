"""Version-neutral requests and responses of the consumer-protocol member core (KIP-848).

ConsumerGroupHeartbeat's and ConsumerGroupDescribe's messages are the coordinator's own
(:mod:`groupcoord.protocol.consumer_group_messages`, re-exported here): one vocabulary, as the
classic core shares ``messages.py``'s group messages with the coordinator. They mirror kio's
``kio.schema.consumer_group_heartbeat.v1`` field for field (``rebalance_timeout_ms`` is kio's
``rebalance_timeout`` in integer milliseconds, ``error_code`` an :class:`ErrorCode`, the
response's assignment a topic id -> partitions map). The topic-id metadata messages below are
the member's own. The core speaks only these; the wire layer maps them to kio at the
version both sides support:

* ConsumerGroupHeartbeat (API 68): v1 when the broker has it. v0 lacks
  ``subscribed_topic_regex`` and lets the member id be empty on a join; our member always
  generates its id (KIP-1082), so v0 differs only in the regex. A request with a regex cannot
  be sent as v0: the wire layer answers it locally with UNSUPPORTED_VERSION (Java's request
  builder throws ``UnsupportedVersionException`` there, which the member treats as fatal).
* The owned/assigned partitions are keyed by topic **id** (a :class:`uuid.UUID`); the core
  resolves names with :class:`TopicIdsMetadataRequest`, which the wire layer sends as Metadata
  v12+ by topic id (KIP-516).
* OffsetCommit from this member must be v9+ (the member epoch in
  ``generation_id``; STALE_MEMBER_EPOCH possible); it reuses
  :class:`~groupcoord.client.messages.OffsetCommitRequest`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from groupcoord.errors import ErrorCode
from groupcoord.protocol.consumer_group_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedGroup,
    DescribedMember,
    DescribedTopicPartitions,
    TopicIdPartitions,
)

__all__ = [
    "JOIN_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "DescribedGroup",
    "DescribedMember",
    "DescribedTopicPartitions",
    "TopicIdMetadata",
    "TopicIdPartitions",
    "TopicIdsMetadataRequest",
    "TopicIdsMetadataResponse",
]

#: ``ConsumerGroupHeartbeatRequest.JOIN_GROUP_MEMBER_EPOCH``.
JOIN_GROUP_MEMBER_EPOCH = 0
#: ``LEAVE_GROUP_MEMBER_EPOCH``: a member leaves for good.
LEAVE_GROUP_MEMBER_EPOCH = -1
#: ``LEAVE_GROUP_STATIC_MEMBER_EPOCH``: a static member leaves for now, keeping its assignment
#: until its session expires.
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


@dataclass(frozen=True, kw_only=True, slots=True)
class TopicIdsMetadataRequest:
    """Names of topics known only by id (Metadata v12+ by topic id)."""

    topic_ids: tuple[uuid.UUID, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class TopicIdMetadata:
    topic_id: uuid.UUID
    name: str | None
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, kw_only=True, slots=True)
class TopicIdsMetadataResponse:
    topics: tuple[TopicIdMetadata, ...] = field(default=())
