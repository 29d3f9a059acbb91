"""The consumer-protocol member's requests on the wire: ConsumerGroupHeartbeat (API 68),
ConsumerGroupDescribe (API 69) and Metadata by topic id, mapped to and from kio.

The same shape as ``wire.request_fields`` / ``wire.read_response`` for the classic member: a
version-neutral mapping of Kafka's field names that ``wire.build`` fits to the version the
connection negotiated, and a reader of the kio answer. Requests the classic member also sends
(FindCoordinator, OffsetCommit) go through ``wire`` itself.

Versions. The client negotiates ConsumerGroupHeartbeat v1 only (``wire.CLIENT_RANGES``), as
librdkafka does: v0 lacks ``SubscribedTopicRegex``, and the connection layer fits fields to a
version silently. A broker without v1 answers locally UNSUPPORTED_VERSION, which the member
treats as fatal (Java: ``CONSUMER_PROTOCOL_NOT_SUPPORTED``). :func:`too_old` still refuses a
regex at v0 for a caller that picks versions itself (Java's request builder throws
``UnsupportedVersionException`` with ``REGEX_RESOLUTION_NOT_SUPPORTED_MSG`` there).
Metadata by topic id needs v12 (KIP-516: a null name with a topic id), and a
consumer-protocol member commits with OffsetCommit v9+ (its member epoch, STALE_MEMBER_EPOCH):
:func:`min_version` says so and :func:`too_old` checks a negotiated version against it.
``wire.request_fields`` / ``wire.read_response`` hand these requests here, so every adapter
that sends the classic member's requests sends these too; ``consumer_group_rpc.py`` sends
them over the blocking ``NetworkClient``.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from groupcoord.client.consumer_group_events import Request, Response
from groupcoord.client.consumer_group_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedGroup,
    DescribedMember,
    DescribedTopicPartitions,
    TopicIdMetadata,
    TopicIdsMetadataRequest,
    TopicIdsMetadataResponse,
)
from groupcoord.client.messages import OffsetCommitRequest, commit_failed
from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey

CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
REGEX_RESOLUTION_NOT_SUPPORTED_MSG = (
    "The cluster does not support regular expression resolution on ConsumerGroupHeartbeat API "
    "version 0. It must be upgraded to use ConsumerGroupHeartbeat API version >= 1 to allow to "
    "subscribe to a SubscriptionPattern."
)
"""Java ``ConsumerGroupHeartbeatRequest.REGEX_RESOLUTION_NOT_SUPPORTED_MSG`` (paraphrased)."""


def _code(value: Any) -> ErrorCode:
    """As ``wire.error_code``: unknown codes are UNKNOWN_SERVER_ERROR. (This module is what
    ``wire`` hands the consumer-protocol requests to, so it does not import ``wire``.)"""
    try:
        return ErrorCode(int(value))
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def _ms(value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def request_fields(request: Request | ConsumerGroupDescribeRequest) -> tuple[int, dict[str, Any]]:
    """(api key, version-neutral fields) of a consumer-protocol member request."""
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return CONSUMER_GROUP_HEARTBEAT, {
            "group_id": request.group_id,
            "member_id": request.member_id,
            "member_epoch": request.member_epoch,
            "instance_id": request.instance_id,
            "rack_id": request.rack_id,
            "rebalance_timeout": request.rebalance_timeout_ms,
            "subscribed_topic_names": request.subscribed_topic_names,
            "subscribed_topic_regex": request.subscribed_topic_regex,
            "server_assignor": request.server_assignor,
            "topic_partitions": None
            if request.topic_partitions is None
            else [{"topic_id": t.topic_id, "partitions": t.partitions} for t in request.topic_partitions],
        }
    if isinstance(request, ConsumerGroupDescribeRequest):
        return CONSUMER_GROUP_DESCRIBE, {
            "group_ids": request.group_ids,
            "include_authorized_operations": request.include_authorized_operations,
        }
    if isinstance(request, TopicIdsMetadataRequest):
        return ApiKey.METADATA, {
            "topics": [{"topic_id": t, "name": None} for t in request.topic_ids],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }
    raise TypeError(f"not a consumer-protocol request: {request!r}")


WireRequest = ConsumerGroupHeartbeatRequest | ConsumerGroupDescribeRequest | TopicIdsMetadataRequest
"""The requests this module maps (``wire`` maps the others)."""
WireResponse = ConsumerGroupHeartbeatResponse | ConsumerGroupDescribeResponse | TopicIdsMetadataResponse


def handles(request: object) -> bool:
    return isinstance(
        request, (ConsumerGroupHeartbeatRequest, ConsumerGroupDescribeRequest, TopicIdsMetadataRequest)
    )


def min_version(request: Request | ConsumerGroupDescribeRequest) -> int:
    """The lowest version of its API that can carry ``request`` (0: any)."""
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return 1 if request.subscribed_topic_regex is not None else 0
    if isinstance(request, TopicIdsMetadataRequest):
        return 12
    if isinstance(request, OffsetCommitRequest):
        return 9
    return 0


def too_old(request: Request | ConsumerGroupDescribeRequest, version: int) -> Response | None:
    """The answer to give locally when ``version`` cannot carry ``request``, else None."""
    if version >= min_version(request):
        return None
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return ConsumerGroupHeartbeatResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=REGEX_RESOLUTION_NOT_SUPPORTED_MSG
        )
    if isinstance(request, TopicIdsMetadataRequest):
        return TopicIdsMetadataResponse(
            topics=tuple(
                TopicIdMetadata(topic_id=t, name=None, error=ErrorCode.UNSUPPORTED_VERSION)
                for t in request.topic_ids
            )
        )
    if isinstance(request, OffsetCommitRequest):
        return commit_failed(request, ErrorCode.UNSUPPORTED_VERSION)
    return None


def _assignment(value: Any) -> dict[uuid.UUID, frozenset[int]]:
    """kio's assigned ``TopicPartitions`` as a topic id -> partitions map (a topic listed twice
    holds the union)."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for t in value:
        topic_id = uuid.UUID(str(t.topic_id))
        out[topic_id] = out.get(topic_id, frozenset()) | frozenset(int(p) for p in t.partitions)
    return out


def _described(value: Any) -> tuple[DescribedTopicPartitions, ...]:
    return tuple(
        DescribedTopicPartitions(
            topic_id=uuid.UUID(str(t.topic_id)),
            topic_name=str(t.topic_name),
            partitions=tuple(int(p) for p in t.partitions),
        )
        for t in value.topic_partitions
    )


def read_response(request: Request | ConsumerGroupDescribeRequest, response: Any) -> Any:
    """The member-core response for the kio answer to ``request``."""
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        assignment = getattr(response, "assignment", None)
        return ConsumerGroupHeartbeatResponse(
            error_code=_code(response.error_code),
            error_message=None if response.error_message is None else str(response.error_message),
            member_id=None if response.member_id is None else str(response.member_id),
            member_epoch=int(response.member_epoch),
            heartbeat_interval_ms=_ms(response.heartbeat_interval),
            assignment=None if assignment is None else _assignment(assignment.topic_partitions),
            throttle_time_ms=_ms(response.throttle_time),
        )
    if isinstance(request, ConsumerGroupDescribeRequest):
        groups = []
        for g in response.groups:
            members = tuple(
                DescribedMember(
                    member_id=str(mb.member_id),
                    instance_id=None if mb.instance_id is None else str(mb.instance_id),
                    rack_id=None if mb.rack_id is None else str(mb.rack_id),
                    member_epoch=int(mb.member_epoch),
                    client_id=str(mb.client_id),
                    client_host=str(mb.client_host),
                    subscribed_topic_names=tuple(str(n) for n in mb.subscribed_topic_names),
                    subscribed_topic_regex=None
                    if mb.subscribed_topic_regex is None
                    else str(mb.subscribed_topic_regex),
                    assignment=_described(mb.assignment),
                    target_assignment=_described(mb.target_assignment),
                    member_type=int(getattr(mb, "member_type", -1)),
                )
                for mb in g.members
            )
            groups.append(
                DescribedGroup(
                    error_code=_code(g.error_code),
                    error_message=None if g.error_message is None else str(g.error_message),
                    group_id=str(g.group_id),
                    group_state=str(g.group_state),
                    group_epoch=int(g.group_epoch),
                    assignment_epoch=int(g.assignment_epoch),
                    assignor_name=str(g.assignor_name),
                    members=members,
                    authorized_operations=int(g.authorized_operations),
                )
            )
        throttle = _ms(response.throttle_time)
        return ConsumerGroupDescribeResponse(groups=tuple(groups), throttle_time_ms=throttle)
    if isinstance(request, TopicIdsMetadataRequest):
        wanted = set(request.topic_ids)
        found = []
        for t in response.topics:
            tid = getattr(t, "topic_id", None)
            if tid is None or uuid.UUID(str(tid)) not in wanted:
                continue
            name = None if t.name is None else str(t.name)
            found.append(
                TopicIdMetadata(topic_id=uuid.UUID(str(tid)), name=name or None, error=_code(t.error_code))
            )
        return TopicIdsMetadataResponse(topics=tuple(found))
    raise TypeError(f"not a consumer-protocol request: {request!r}")


def unsupported(request: object, message: str | None = None) -> Any:
    """The UNSUPPORTED_VERSION answer to a request the broker has no version of (Java's network
    client fails it with ``UnsupportedVersionException``; the member treats that as fatal)."""
    code = ErrorCode.UNSUPPORTED_VERSION
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)
    if isinstance(request, ConsumerGroupDescribeRequest):
        return ConsumerGroupDescribeResponse(
            groups=tuple(
                DescribedGroup(error_code=code, group_id=g, error_message=message) for g in request.group_ids
            )
        )
    if isinstance(request, TopicIdsMetadataRequest):
        return TopicIdsMetadataResponse(
            topics=tuple(TopicIdMetadata(topic_id=t, name=None, error=code) for t in request.topic_ids)
        )
    if isinstance(request, OffsetCommitRequest):
        return commit_failed(request, code)
    return None
