"""kio's ConsumerGroupHeartbeat / ConsumerGroupDescribe messages (v0 and v1) to and from the core's
own request and response types (``api.py``), for the shard to call at the edge.

kio's types are generated from Kafka's JSON specs and carry wire wrappers (``i32``,
``i32Timedelta``, kio's ``ErrorCode``); the core works on plain ints and assignment maps, and does
not care which version came in. v0 has no ``subscribed_topic_regex`` and lets a joining member
send an empty member id; v1 adds the regex; ConsumerGroupDescribe v1 adds ``member_type``.
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.consumer_group_describe.v0 import response as describe_v0
from kio.schema.consumer_group_describe.v1 import response as describe_v1
from kio.schema.consumer_group_heartbeat.v0 import response as heartbeat_v0
from kio.schema.consumer_group_heartbeat.v1 import response as heartbeat_v1
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.static.primitive import i8, i32, i32Timedelta

from groupcoord.coordinator.consumer.api import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedTopicPartitions,
)
from groupcoord.coordinator.consumer.assignment import Assignment, topic_id_order
from groupcoord.protocol.consumer_group_messages import TopicIdPartitions
from groupcoord.protocol.hot import consumer_group_heartbeat_response

__all__ = [
    "describe_request_from_kio",
    "describe_response_to_kio",
    "heartbeat_from_kio",
    "heartbeat_response_to_kio",
]


def _ms(value: datetime.timedelta) -> int:
    return int(value / datetime.timedelta(milliseconds=1))


def _td(ms: int) -> i32Timedelta:
    """kio's wire duration of ``ms``; the few values a broker answers with (0, the heartbeat
    intervals in force) are made once, not on every heartbeat."""
    td = _DURATIONS.get(ms)
    if td is None:
        td = i32Timedelta.parse(datetime.timedelta(milliseconds=ms))
        if len(_DURATIONS) < 64:
            _DURATIONS[ms] = td
    return td


_DURATIONS: dict[int, i32Timedelta] = {}


def heartbeat_from_kio(
    request: Any, *, api_version: int, client_id: str | None, client_host: str
) -> ConsumerGroupHeartbeatRequest:
    """A kio ``ConsumerGroupHeartbeatRequest`` (v0 or v1) as the core's request. ``client_host``
    is the peer address as Kafka writes it (``InetAddress.toString()``, e.g. ``/127.0.0.1``)."""
    partitions = request.topic_partitions
    return ConsumerGroupHeartbeatRequest(
        group_id=str(request.group_id),
        member_id=request.member_id,
        member_epoch=int(request.member_epoch),
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=_ms(request.rebalance_timeout),
        subscribed_topic_names=(
            None
            if request.subscribed_topic_names is None
            else tuple(str(n) for n in request.subscribed_topic_names)
        ),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor,
        topic_partitions=(
            None
            if partitions is None
            else tuple(
                TopicIdPartitions(tp.topic_id, tuple(int(p) for p in tp.partitions))
                for tp in partitions
                if tp.topic_id
            )
        ),
        api_version=api_version,
        client_id=client_id or "",
        client_host=client_host,
    )


def _topic_partitions(module: Any, assignment: Assignment) -> tuple[Any, ...]:
    return tuple(
        module.TopicPartitions(topic_id=t, partitions=tuple(i32(p) for p in sorted(assignment[t])))
        for t in sorted(assignment, key=topic_id_order)
    )


def heartbeat_response_body(response: ConsumerGroupHeartbeatResponse) -> bytes:
    """The core's response as the bytes of a ConsumerGroupHeartbeat answer body (v0 and v1 are
    the same), written by :func:`groupcoord.protocol.hot.consumer_group_heartbeat_response` in
    the order :func:`heartbeat_response_to_kio` gives kio (topics in ``Uuid.compareTo`` order,
    partitions ascending): the same bytes, without an entity per answer."""
    assignment = response.assignment
    return consumer_group_heartbeat_response(
        int(response.error_code),
        response.error_message,
        response.member_id,
        response.member_epoch,
        response.heartbeat_interval_ms,
        None
        if assignment is None
        else [(t, sorted(assignment[t])) for t in sorted(assignment, key=topic_id_order)],
        response.throttle_time_ms,
    )


def heartbeat_response_to_kio(response: ConsumerGroupHeartbeatResponse, *, api_version: int) -> Any:
    """The core's response as kio's ConsumerGroupHeartbeatResponse of ``api_version``."""
    module = heartbeat_v1 if api_version >= 1 else heartbeat_v0
    assignment = (
        None
        if response.assignment is None
        else module.Assignment(topic_partitions=_topic_partitions(module, response.assignment))
    )
    return module.ConsumerGroupHeartbeatResponse(
        throttle_time=_td(0),
        error_code=KioErrorCode(response.error_code),
        error_message=response.error_message,
        member_id=response.member_id,
        member_epoch=i32(response.member_epoch),
        heartbeat_interval=_td(response.heartbeat_interval_ms),
        assignment=assignment,
    )


def describe_request_from_kio(request: Any) -> ConsumerGroupDescribeRequest:
    return ConsumerGroupDescribeRequest(
        group_ids=tuple(str(g) for g in request.group_ids),
        include_authorized_operations=bool(request.include_authorized_operations),
    )


def _described(module: Any, parts: tuple[DescribedTopicPartitions, ...]) -> Any:
    return module.Assignment(
        topic_partitions=tuple(
            module.TopicPartitions(
                topic_id=p.topic_id, topic_name=p.topic_name, partitions=tuple(i32(x) for x in p.partitions)
            )
            for p in parts
        )
    )


def describe_response_to_kio(response: ConsumerGroupDescribeResponse, *, api_version: int) -> Any:
    """The core's describe response as kio's ConsumerGroupDescribeResponse of ``api_version``
    (``member_type`` only from v1)."""
    module = describe_v1 if api_version >= 1 else describe_v0
    groups = []
    for g in response.groups:
        members = []
        for m in g.members:
            fields: dict[str, Any] = {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": i32(m.member_epoch),
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": m.subscribed_topic_names,
                "subscribed_topic_regex": m.subscribed_topic_regex,
                "assignment": _described(module, m.assignment),
                "target_assignment": _described(module, m.target_assignment),
            }
            if api_version >= 1:
                fields["member_type"] = i8(m.member_type)
            members.append(module.Member(**fields))
        groups.append(
            module.DescribedGroup(
                error_code=KioErrorCode(g.error_code),
                error_message=g.error_message,
                group_id=g.group_id,
                group_state=g.group_state,
                group_epoch=i32(g.group_epoch),
                assignment_epoch=i32(g.assignment_epoch),
                assignor_name=g.assignor_name,
                members=tuple(members),
            )
        )
    return module.ConsumerGroupDescribeResponse(throttle_time=_td(0), groups=tuple(groups))
