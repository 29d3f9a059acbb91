"""What the consumer-protocol member core hands its driver: requests to send, events for the
application (rebalance callbacks with a completion handle), the member id it generates."""

from __future__ import annotations

import base64
import enum
import uuid
from dataclasses import dataclass

from groupcoord.client.consumer_group_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicIdsMetadataRequest,
    TopicIdsMetadataResponse,
)

# The event types both members share, re-exported (``X as X``) so that every consumer-protocol
# module and test imports them from this one place.
from groupcoord.client.events import CommitCompleted as CommitCompleted
from groupcoord.client.events import CommittedOffsets as CommittedOffsets
from groupcoord.client.events import FatalErrorEvent as FatalErrorEvent
from groupcoord.client.events import MemberEvent as MemberEvent
from groupcoord.client.events import PartitionsAssigned as PartitionsAssigned
from groupcoord.client.events import PartitionsLost as PartitionsLost
from groupcoord.client.events import PartitionsRevoked as PartitionsRevoked
from groupcoord.client.events import StartingPositions as StartingPositions
from groupcoord.client.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    Node,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from groupcoord.client.types import TopicPartition

Request = (
    FindCoordinatorRequest
    | ConsumerGroupHeartbeatRequest
    | OffsetCommitRequest
    | OffsetFetchRequest
    | TopicIdsMetadataRequest
)
Response = (
    FindCoordinatorResponse
    | ConsumerGroupHeartbeatResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | TopicIdsMetadataResponse
)


def generate_member_id() -> str:
    """Java ``Uuid.randomUuid().toString()``: 16 random bytes as 22 URL-safe base64 characters;
    never the reserved all-zero or metadata-topic ids and never starting with '-' (KIP-1082)."""
    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if not text.startswith("-") and int.from_bytes(raw, "big") > 1:
            return text


@dataclass(frozen=True, kw_only=True, slots=True)
class Outbound:
    """A request to send: ``node`` None = any broker (least-loaded), else the coordinator."""

    request_id: int
    request: Request
    node: Node | None
    timeout_ms: int


class CallbackMethod(enum.Enum):
    """Java ``ConsumerRebalanceListenerMethodName``."""

    ON_PARTITIONS_REVOKED = "onPartitionsRevoked"
    ON_PARTITIONS_ASSIGNED = "onPartitionsAssigned"
    ON_PARTITIONS_LOST = "onPartitionsLost"


@dataclass(frozen=True, kw_only=True, slots=True)
class RebalanceCallbackNeeded(MemberEvent):
    """Run the listener's ``method`` with ``partitions`` on the application's thread, then call
    :meth:`ConsumerGroupMember.callback_completed` with ``callback_id`` (Java
    ``ConsumerRebalanceListenerCallbackNeededEvent``)."""

    callback_id: int
    method: CallbackMethod
    partitions: tuple[TopicPartition, ...]
