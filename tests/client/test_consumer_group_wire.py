"""The consumer-protocol member's requests on the wire (consumer_group_wire.py): ConsumerGroupHeartbeat
v0/v1, ConsumerGroupDescribe and Metadata by topic id through kio's own encoders and decoders,
and one ConsumerGroupHeartbeat over a real connection to a groupcoord broker.

The live test checks the first join against groupcoord's own KIP-848 coordinator; the fatal
UNSUPPORTED_VERSION action is in ``test_consumer_group_errors.py`` and, from a broker with the
protocol switched off, in ``test_consumer_group_adapter.py``.
"""

from __future__ import annotations

import datetime
import io
import uuid

from cg_script import MEMBER, T

from groupcoord.client import wire
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.connection import NetworkClient
from groupcoord.client.consumer_group_member import ConsumerGroupMember
from groupcoord.client.consumer_group_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedGroup,
    DescribedMember,
    DescribedTopicPartitions,
    TopicIdMetadata,
    TopicIdPartitions,
    TopicIdsMetadataRequest,
    TopicIdsMetadataResponse,
)
from groupcoord.client.consumer_group_rpc import describe, send
from groupcoord.client.consumer_group_states import ConsumerGroupMemberState as S
from groupcoord.client.consumer_group_wire import (
    REGEX_RESOLUTION_NOT_SUPPORTED_MSG,
    min_version,
    read_response,
    request_fields,
    too_old,
)
from groupcoord.client.messages import commit_failed, offset_commit_request
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode
from groupcoord.protocol import codec
from groupcoord.testing import Broker

JOIN = ConsumerGroupHeartbeatRequest(
    group_id="g",
    member_id=MEMBER,
    member_epoch=0,
    instance_id="i-1",
    rack_id="r1",
    rebalance_timeout_ms=300_000,
    subscribed_topic_names=("t",),
    subscribed_topic_regex="t.*",
    server_assignor="uniform",
    topic_partitions=(TopicIdPartitions(topic_id=T, partitions=(0, 2)),),
)


def _round_trip(api_key: int, version: int, fields: dict[str, object]) -> object:
    """Encode the request as the connection does (codec.build_request + the kio writer) and read it back
    with kio's reader, as a broker would."""
    from kio.serial import entity_reader, entity_writer

    c = codec.request_messages(api_key, version)
    buf = io.BytesIO()
    entity_writer(c.request_type)(buf, codec.build_request(c.request_type, fields))
    entity, _ = entity_reader(c.request_type)(buf.getvalue(), 0)
    return entity


def test_heartbeat_request_carries_every_field_at_v1_and_no_regex_at_v0() -> None:
    assert wire.request_fields(JOIN) == request_fields(JOIN)  # every adapter's path goes through wire
    api_key, fields = request_fields(JOIN)
    assert api_key == 68
    v1 = _round_trip(68, 1, fields)
    assert (v1.group_id, v1.member_id, v1.member_epoch, v1.instance_id, v1.rack_id) == (
        "g",
        MEMBER,
        0,
        "i-1",
        "r1",
    )  # type: ignore[attr-defined]
    assert v1.rebalance_timeout == datetime.timedelta(milliseconds=300_000)  # type: ignore[attr-defined]
    assert (v1.subscribed_topic_names, v1.subscribed_topic_regex, v1.server_assignor) == (
        ("t",),
        "t.*",
        "uniform",
    )  # type: ignore[attr-defined]
    assert [(t.topic_id, tuple(t.partitions)) for t in v1.topic_partitions] == [(T, (0, 2))]  # type: ignore[attr-defined]
    assert not hasattr(_round_trip(68, 0, fields), "subscribed_topic_regex")
    partial = _round_trip(
        68,
        1,
        request_fields(ConsumerGroupHeartbeatRequest(group_id="g", member_id=MEMBER, member_epoch=3))[1],
    )
    assert partial.rebalance_timeout == datetime.timedelta(milliseconds=-1)  # type: ignore[attr-defined]
    assert (partial.subscribed_topic_names, partial.topic_partitions) == (None, None)  # type: ignore[attr-defined]


def test_regex_needs_v1_and_is_refused_locally_at_v0() -> None:
    """Java's builder throws UnsupportedVersionException (REGEX_RESOLUTION_NOT_SUPPORTED_MSG) for
    a regex at v0; the member treats the answer as fatal and keeps that text."""
    assert min_version(JOIN) == 1 and too_old(JOIN, 1) is None
    answer = too_old(JOIN, 0)
    assert answer == ConsumerGroupHeartbeatResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=REGEX_RESOLUTION_NOT_SUPPORTED_MSG
    )
    names_only = ConsumerGroupHeartbeatRequest(group_id="g", member_id=MEMBER, member_epoch=0)
    assert too_old(names_only, 0) is None
    commit = offset_commit_request(
        group_id="g",
        generation_id=1,
        member_id=MEMBER,
        group_instance_id=None,
        offsets=((TopicPartition("t", 0), OffsetAndMetadata(offset=1)),),
    )
    assert too_old(commit, 8) == commit_failed(commit, ErrorCode.UNSUPPORTED_VERSION)
    assert too_old(commit, 9) is None


def test_heartbeat_response_is_read_with_its_assignment_and_interval() -> None:
    c = codec.request_messages(68, 1)
    resp_cls = c.response_type
    assignment_cls = codec._nested_type(dict(resp_cls.__dataclass_fields__)["assignment"].type)
    assert assignment_cls is not None
    tp_cls = codec._nested_type(dict(assignment_cls.__dataclass_fields__)["topic_partitions"].type)
    assert tp_cls is not None
    entity = resp_cls(
        throttle_time=datetime.timedelta(milliseconds=0),
        error_code=0,
        error_message=None,
        member_id=MEMBER,
        member_epoch=7,
        heartbeat_interval=datetime.timedelta(milliseconds=5_000),
        assignment=assignment_cls(topic_partitions=(tp_cls(topic_id=T, partitions=(2, 0)),)),
    )
    assert read_response(JOIN, entity) == ConsumerGroupHeartbeatResponse(
        error_code=ErrorCode.NONE,
        member_id=MEMBER,
        member_epoch=7,
        heartbeat_interval_ms=5_000,
        assignment={T: frozenset({0, 2})},
    )
    failed = resp_cls(
        throttle_time=datetime.timedelta(milliseconds=0),
        error_code=110,
        error_message="The member epoch is fenced.",
        member_id=None,
        member_epoch=0,
        heartbeat_interval=datetime.timedelta(milliseconds=0),
        assignment=None,
    )
    got = read_response(JOIN, failed)
    assert (got.error_code, got.error_message, got.assignment) == (
        ErrorCode.FENCED_MEMBER_EPOCH,
        "The member epoch is fenced.",
        None,
    )


def test_describe_request_and_response() -> None:
    req = ConsumerGroupDescribeRequest(group_ids=("g",))
    api_key, fields = request_fields(req)
    assert api_key == 69
    sent = _round_trip(69, 1, fields)
    assert (tuple(sent.group_ids), sent.include_authorized_operations) == (("g",), False)  # type: ignore[attr-defined]
    from kio.schema.consumer_group_describe.v1 import response as r

    tpart = r.TopicPartitions(topic_id=T, topic_name="t", partitions=(0,))
    member = r.Member(
        member_id=MEMBER,
        instance_id=None,
        rack_id=None,
        member_epoch=3,
        client_id="c",
        client_host="/127.0.0.1",
        subscribed_topic_names=("t",),
        subscribed_topic_regex=None,
        assignment=r.Assignment(topic_partitions=(tpart,)),
        target_assignment=r.Assignment(topic_partitions=(tpart,)),
        member_type=1,
    )
    group = r.DescribedGroup(
        error_code=0,
        error_message=None,
        group_id="g",
        group_state="Stable",
        group_epoch=3,
        assignment_epoch=3,
        assignor_name="uniform",
        members=(member,),
        authorized_operations=-(2**31),
    )
    got = read_response(
        req, r.ConsumerGroupDescribeResponse(throttle_time=datetime.timedelta(0), groups=(group,))
    )
    parts = (DescribedTopicPartitions(topic_id=T, topic_name="t", partitions=(0,)),)
    assert got == ConsumerGroupDescribeResponse(
        groups=(
            DescribedGroup(
                error_code=ErrorCode.NONE,
                group_id="g",
                group_state="Stable",
                group_epoch=3,
                assignment_epoch=3,
                assignor_name="uniform",
                members=(
                    DescribedMember(
                        member_id=MEMBER,
                        instance_id=None,
                        rack_id=None,
                        member_epoch=3,
                        client_id="c",
                        client_host="/127.0.0.1",
                        subscribed_topic_names=("t",),
                        subscribed_topic_regex=None,
                        assignment=parts,
                        target_assignment=parts,
                        member_type=1,
                    ),
                ),
            ),
        )
    )


def test_topic_ids_are_looked_up_with_metadata_v12() -> None:
    other = uuid.UUID(int=99)
    req = TopicIdsMetadataRequest(topic_ids=(T,))
    api_key, fields = request_fields(req)
    assert (api_key, min_version(req)) == (3, 12)
    sent = _round_trip(3, 12, fields)
    assert [(t.topic_id, t.name) for t in sent.topics] == [(T, None)]  # type: ignore[attr-defined]
    from kio.schema.metadata.v12 import response as r

    def topic(tid: uuid.UUID, name: str) -> object:
        return r.MetadataResponseTopic(
            error_code=0,
            name=name,
            topic_id=tid,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=0,
        )

    md = r.MetadataResponse(
        throttle_time=datetime.timedelta(0),
        brokers=(),
        cluster_id=None,
        controller_id=1,
        topics=(topic(T, "t"), topic(other, "x")),
    )
    assert read_response(req, md) == TopicIdsMetadataResponse(topics=(TopicIdMetadata(topic_id=T, name="t"),))


def test_member_core_over_a_real_connection_to_groupcoord() -> None:
    """The member core driven over NetworkClient to an in-process groupcoord broker: the real
    FindCoordinator, then the join heartbeat: the member joins (epoch > 0) and
    ConsumerGroupDescribe lists it. (A broker without API 68 is the local UNSUPPORTED_VERSION
    path, tested without a broker.)"""
    config = ConsumerConfig.from_dict(
        {"group.id": "wire-g", "group.protocol": "consumer", "enable.auto.commit": False}
    )
    core = ConsumerGroupMember(config, member_id=MEMBER)
    core.subscribe(["t"])
    with Broker() as broker:
        client = NetworkClient(broker.bootstrap)
        try:
            bootstrap = client.least_loaded_node()
            now = 0
            pending = core.poll(now)
            for _ in range(20):
                for out in pending:
                    node = bootstrap
                    if out.node is not None:
                        node = 2**31 - 1 - out.node.node_id  # the coordinator's own connection
                        client.ensure_node(node, out.node.host, out.node.port)
                    core.on_response(out.request_id, send(client, node, out.request, out.timeout_ms), now)
                if core.state in (S.FATAL, S.STABLE, S.RECONCILING):
                    break
                pending = core.background(now)
            assert core.coordinator is not None
            table = client.versions(2**31 - 1 - core.coordinator.node_id)
            assert table is not None
            assert table.supports(68)
            assert core.member_epoch > 0 and core.state in (S.RECONCILING, S.STABLE)
            described = describe(client, bootstrap, ("wire-g",), 10_000)
            assert [m.member_id for m in described.groups[0].members] == [MEMBER]
        finally:
            client.close()


def test_topic_ids_resolve_against_a_real_groupcoord_broker() -> None:
    """Metadata v12 by topic id (what the member sends for an id in its assignment it cannot name)
    against groupcoord: the id of a topic gives its name; an unknown id gives UNKNOWN_TOPIC_ID."""
    with Broker() as broker:
        broker.create_topic("named-by-id", partitions=2)
        client = NetworkClient(broker.bootstrap)
        try:
            node = client.least_loaded_node()
            md = wire.read_metadata(client.request(node, 3, wire.metadata_request(["named-by-id"])))
            (topic,) = md.topics
            tid = uuid.UUID(str(topic.topic_id))
            unknown = uuid.UUID(int=12345)
            answer = send(client, node, TopicIdsMetadataRequest(topic_ids=(tid, unknown)), 10_000)
            assert answer == TopicIdsMetadataResponse(
                topics=(
                    TopicIdMetadata(topic_id=tid, name="named-by-id"),
                    TopicIdMetadata(topic_id=unknown, name=None, error=ErrorCode.UNKNOWN_TOPIC_ID),
                )
            )
        finally:
            client.close()
