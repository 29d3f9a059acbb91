"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (APIs 68, 69; KIP-848) as version-independent
values: one vocabulary.

The coordinator's consumer groups take and return these, and the consumer-protocol member core
sends and reads the same types (``client.consumer_group_messages`` re-exports them), so in one
process the member's heartbeat goes to the coordinator as it is. They mirror kio's
``consumer_group_heartbeat.v1`` and ``consumer_group_describe.v1`` field for field, with plain ints
(milliseconds), :class:`ErrorCode` and an assignment map instead of kio's wrapper types, so neither
side depends on a wire version: the broker's shard converts from kio's request (v0 and v1 differ
only in the regex field and the member-id rule, which
:attr:`ConsumerGroupHeartbeatRequest.api_version` carries) and back to kio's response; the client's
wire layer does the reverse. A member core leaves ``api_version``, ``client_id`` and
``client_host`` at the defaults (they come from the request header and the peer).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from groupcoord.errors import ErrorCode


class TopicIdPartitions(NamedTuple):
    """kio ``TopicPartitions``: one topic id and its partitions (ascending); a (topic id,
    partitions) pair."""

    topic_id: uuid.UUID
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupHeartbeatRequest:
    """ConsumerGroupHeartbeat v0/v1 (API 68), plus what the request header and peer give."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    #: v1 only
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: the partitions the member owns; None = unchanged ("unknown")
    topic_partitions: tuple[TopicIdPartitions, ...] | None = None
    api_version: int = 1
    client_id: str = ""
    #: Java's InetAddress.toString(), e.g. "/127.0.0.1"
    client_host: str = ""

    def owned(self) -> dict[uuid.UUID, frozenset[int]] | None:
        if self.topic_partitions is None:
            return None
        out: dict[uuid.UUID, frozenset[int]] = {}
        for topic_id, parts in self.topic_partitions:
            out[topic_id] = out.get(topic_id, frozenset()) | frozenset(parts)
        return out

    def is_full(self) -> bool:
        """Kafka's "full request": the assignment is sent back even if it did not change."""
        return (
            self.rebalance_timeout_ms != -1
            and (self.subscribed_topic_names is not None or self.subscribed_topic_regex is not None)
            and self.topic_partitions is not None
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupHeartbeatResponse:
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: the partitions the member may own now (topic id -> partitions); None: no Assignment field
    #: (no change), {} an empty one
    assignment: Mapping[uuid.UUID, frozenset[int]] | None = None
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescribeRequest:
    """API 69 (v0 and v1 requests are the same)."""

    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
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
    #: v1: 0 classic member, 1 consumer member; -1 unknown (v0)
    member_type: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroup:
    group_id: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = ()
    #: the bit field of the operations the caller may perform; Java's Integer.MIN_VALUE when not
    #: asked for (the broker fills it in on the wire, from its authorizer)
    authorized_operations: int = -(2**31)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[DescribedGroup, ...]
    throttle_time_ms: int = 0
