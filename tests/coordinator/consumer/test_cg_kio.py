"""The core's requests and responses through kio's real wire codecs (ConsumerGroupHeartbeat v0/v1,
ConsumerGroupDescribe v0/v1): bytes a client sends decode into the core's request, and the core's
response encodes into the bytes Kafka sends (``ConsumerGroupHeartbeatResponse.json``: a nullable
struct written as an int8 marker, -1 for null)."""

from __future__ import annotations

import datetime
import io
from typing import Any

from cg_harness import FOO, GROUP, Harness, image, tps
from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest as DescribeV0
from kio.schema.consumer_group_describe.v0.response import ConsumerGroupDescribeResponse as DescribeRespV0
from kio.schema.consumer_group_describe.v1.response import ConsumerGroupDescribeResponse as DescribeRespV1
from kio.schema.consumer_group_heartbeat.v0.request import ConsumerGroupHeartbeatRequest as HeartbeatV0
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest as HeartbeatV1
from kio.schema.consumer_group_heartbeat.v1.request import TopicPartitions as RequestTopicPartitions
from kio.schema.consumer_group_heartbeat.v1.response import ConsumerGroupHeartbeatResponse as HeartbeatRespV1
from kio.schema.types import GroupId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32, i32Timedelta

from groupcoord.coordinator.consumer.api import ConsumerGroupHeartbeatResponse
from groupcoord.coordinator.consumer.kio_adapter import (
    describe_request_from_kio,
    describe_response_to_kio,
    heartbeat_from_kio,
    heartbeat_response_to_kio,
)


def wire(entity: Any) -> Any:
    """Encode with kio and decode again: what the other side of the socket gets."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    decoded, end = entity_reader(type(entity))(memoryview(buffer.getvalue()), 0)
    assert end == len(buffer.getvalue())
    return decoded


def raw(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def test_v1_join_through_kio_and_back() -> None:
    h = Harness.make(image(("foo", FOO, 2)))
    request = wire(
        HeartbeatV1(
            group_id=GroupId(GROUP),
            member_id="m1",
            member_epoch=i32(0),
            rebalance_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=300000)),
            subscribed_topic_names=(TopicName("foo"),),
            topic_partitions=(),
        )
    )
    core = heartbeat_from_kio(request, api_version=1, client_id="rdkafka", client_host="/127.0.0.1")
    assert (core.rebalance_timeout_ms, core.subscribed_topic_names, core.topic_partitions) == (
        300000,
        ("foo",),
        (),
    )
    result = h.apply(h.manager.consumer_group_heartbeat(core, 0))
    assert result.response is not None
    response = wire(heartbeat_response_to_kio(result.response, api_version=1))
    assert (response.error_code, response.member_id, response.member_epoch) == (0, "m1", 1)
    assert response.heartbeat_interval == datetime.timedelta(milliseconds=5000)
    (tp,) = response.assignment.topic_partitions
    assert (tp.topic_id, tp.partitions) == (FOO, (0, 1))
    assert h.group.members["m1"].client_host == "/127.0.0.1"


def test_v0_request_has_no_regex_and_partial_fields_stay_null() -> None:
    request = wire(
        HeartbeatV0(
            group_id=GroupId(GROUP),
            member_id="m1",
            member_epoch=i32(3),
            topic_partitions=None,
        )
    )
    core = heartbeat_from_kio(request, api_version=0, client_id=None, client_host="/10.0.0.1")
    assert (core.subscribed_topic_regex, core.subscribed_topic_names, core.topic_partitions) == (
        None,
        None,
        None,
    )
    assert (core.rebalance_timeout_ms, core.api_version, core.client_id) == (-1, 0, "")
    acked = wire(
        HeartbeatV1(
            group_id=GroupId(GROUP),
            member_id="m1",
            member_epoch=i32(3),
            topic_partitions=(RequestTopicPartitions(topic_id=FOO, partitions=(i32(1), i32(0))),),
        )
    )
    assert heartbeat_from_kio(acked, api_version=1, client_id="c", client_host="/h").owned() == tps(
        foo=(0, 1)
    )


def test_error_response_has_a_null_assignment_marker() -> None:
    """Kafka writes the nullable Assignment as int8 -1; an empty one as 1 and an empty array."""
    error = heartbeat_response_to_kio(
        ConsumerGroupHeartbeatResponse(error_code=25, error_message="x"), api_version=1
    )
    assert isinstance(error, HeartbeatRespV1)
    assert raw(error).endswith(b"\xff\x00")  # assignment marker -1, then the top-level tags
    empty = heartbeat_response_to_kio(
        ConsumerGroupHeartbeatResponse(
            member_id="m", member_epoch=1, heartbeat_interval_ms=5000, assignment={}
        ),
        api_version=1,
    )
    assert raw(empty).endswith(b"\x01\x01\x00\x00")  # marker 1, empty array, struct tags, tags


def test_describe_through_kio_v0_and_v1() -> None:
    h = Harness.make(image(("foo", FOO, 2)))
    h.join("m1")
    request = describe_request_from_kio(
        wire(DescribeV0(group_ids=(GroupId(GROUP), GroupId("nope")), include_authorized_operations=False))
    )
    core = h.manager.consumer_group_describe(request)
    v1 = wire(describe_response_to_kio(core, api_version=1))
    assert isinstance(v1, DescribeRespV1)
    group, missing = v1.groups
    assert (group.group_state, group.group_epoch, group.assignor_name, group.members[0].member_type) == (
        "Stable",
        1,
        "uniform",
        1,
    )
    assert group.members[0].assignment.topic_partitions[0].topic_name == "foo"
    assert (missing.error_code, missing.error_message) == (69, "Group nope not found.")
    v0 = wire(describe_response_to_kio(core, api_version=0))
    assert isinstance(v0, DescribeRespV0) and v0.groups[0].members[0].member_id == "m1"
    assert group.members[0].target_assignment.topic_partitions[0].topic_id == FOO
