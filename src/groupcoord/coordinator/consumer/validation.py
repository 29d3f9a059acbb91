"""ConsumerGroupHeartbeat checks that need no group: the request's shape (Kafka 4.1
``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``) and a member's epoch
(``GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid``, with 4.2's KAFKA-19233)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from groupcoord.coordinator.consumer.api import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.errors import ErrorCode, KafkaError

__all__ = [
    "CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "check_member_epoch",
    "validate_heartbeat_request",
]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
#: ConsumerGroupHeartbeat v1 requires a client-generated member id (KIP-1082).
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1


def validate_heartbeat_request(r: ConsumerGroupHeartbeatRequest, assignors: Iterable[str]) -> None:
    """``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid`` (4.1)."""

    def invalid(message: str) -> KafkaError:
        return KafkaError(ErrorCode.INVALID_REQUEST, message)

    if (
        r.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
        or r.member_epoch > 0
        or r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
    ) and not r.member_id.strip():
        raise invalid("MemberId can't be empty.")
    if not r.group_id.strip():
        raise invalid("GroupId can't be empty.")
    if r.instance_id is not None and not r.instance_id.strip():
        raise invalid("InstanceId can't be empty.")
    if r.rack_id is not None and not r.rack_id.strip():
        raise invalid("RackId can't be empty.")
    if r.member_epoch == 0:
        if r.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if r.topic_partitions is None or len(r.topic_partitions) > 0:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if r.subscribed_topic_names is None and r.subscribed_topic_regex is None:
            raise invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
            )
    elif r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if r.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid("MemberEpoch is invalid.")
    if r.server_assignor is not None and r.server_assignor not in assignors:
        raise KafkaError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {r.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}.",
        )


def check_member_epoch(
    member: ConsumerGroupMember, received: int, owned: Mapping[uuid.UUID, frozenset[int]] | None
) -> None:
    """``throwIfConsumerGroupMemberEpochIsInvalid`` with KAFKA-19233: epoch 0 always rejoins."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise KafkaError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
            "rejoin.",
        )
    # A member whose response to an epoch bump was lost may come back once with its previous
    # epoch, provided what it owns is part of what it was assigned.
    if received < member.member_epoch and (
        received != member.previous_member_epoch
        or owned is None
        or any(not parts <= member.assigned_partitions.get(t, frozenset()) for t, parts in owned.items())
    ):
        raise KafkaError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
            "rejoin.",
        )
