"""Version-neutral requests and responses of the consumer-protocol member core (KIP-848).

Frozen dataclasses that mirror kio's ``kio.schema.consumer_group_heartbeat.v1`` request and
response field for field (same names; ``rebalance_timeout_ms`` is kio's ``rebalance_timeout``
as integer milliseconds, and the response's ``error_code`` is an :class:`ErrorCode` named
``error`` as in ``messages.py``). The core speaks only these, as the classic core speaks
``messages.py``; the wire layer maps them to kio at the version both sides support:

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

#: ``ConsumerGroupHeartbeatRequest.JOIN_GROUP_MEMBER_EPOCH``.
JOIN_GROUP_MEMBER_EPOCH = 0
#: ``LEAVE_GROUP_MEMBER_EPOCH``: a member leaves for good.
LEAVE_GROUP_MEMBER_EPOCH = -1
#: ``LEAVE_GROUP_STATIC_MEMBER_EPOCH``: a static member leaves for now, keeping its assignment
#: until its session expires.
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


@dataclass(frozen=True, kw_only=True, slots=True)
class TopicIdPartitions:
    """kio ``TopicPartitions``: one topic id and its partitions (ascending)."""

    topic_id: uuid.UUID
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    """API 68. ``None`` (and ``rebalance_timeout_ms`` -1) means "unchanged since the last
    heartbeat" on every field but the first three (section 1.2 of the reference)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[TopicIdPartitions, ...] | None = None

    def is_full(self) -> bool:
        """What the coordinator calls a full request: it answers with the assignment."""
        return (
            self.rebalance_timeout_ms != -1
            and (self.subscribed_topic_names is not None or self.subscribed_topic_regex is not None)
            and self.topic_partitions is not None
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[TopicIdPartitions, ...] | None = None
    """The partitions the member may own now; ``None`` = no change (not sent)."""
    throttle_time_ms: int = 0


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


# ---------------------------------------------------------------------- ConsumerGroupDescribe
@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupDescribeRequest:
    """API 69 (v0 and v1 requests are the same)."""

    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribedTopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedTopicPartitions, ...]
    target_assignment: tuple[DescribedTopicPartitions, ...]
    member_type: int = -1
    """v1: 0 classic member, 1 consumer member; -1 unknown (v0)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribedGroup:
    error: ErrorCode
    group_id: str
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = ()
    error_message: str | None = None
    authorized_operations: int = -(2**31)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[DescribedGroup, ...]
    throttle_time_ms: int = 0
