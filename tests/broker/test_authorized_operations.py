"""Authorized operations (KIP-430) in Metadata, DescribeCluster and DescribeGroups, asked for by
confluent-kafka's admin API and over the raw wire (issue 27: librdkafka's 0081 expected 8 topic
and 7 cluster operations and got 0).

Kafka's behaviour cited: ``AuthHelper.authorizedOperations`` (without an authorizer every
operation ``AclEntry.supportedOperations`` lists for the resource type, as bits
``Utils.to32BitField``), ``KafkaApis.handleTopicMetadataRequest`` (topic fields from v8 when
asked, the cluster field in v8-10), ``AuthHelper.computeDescribeClusterResponse``,
``KafkaApis.handleDescribeGroupsRequest`` (v3+, groups answered without error) and the schema
default ``Integer.MIN_VALUE`` when not asked; ``BaseAdminIntegrationTest`` /
``DescribeAuthorizedOperationsTest`` expect ``supportedOperations`` of each type.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic

from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

NOT_REQUESTED = -2147483648
# bit (1 << code) per AclOperation code: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12
TOPIC_BITS = 8 + 16 + 32 + 64 + 128 + 256 + 1024 + 2048  # 3576
CLUSTER_BITS = 32 + 128 + 256 + 512 + 1024 + 2048 + 4096  # 8096
GROUP_BITS = 8 + 64 + 256  # 328

TOPIC_OPS = {
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DESCRIBE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
}
CLUSTER_OPS = {
    AclOperation.CREATE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
}
GROUP_OPS = {AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker({"auto.create.topics.enable": False}) as b:
        yield b


@pytest.fixture(scope="module")
def admin(broker: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture(scope="module")
def topic(admin: AdminClient) -> str:
    name = f"ops-{uuid.uuid4().hex[:8]}"
    for fut in admin.create_topics([NewTopic(name, 2, 1)]).values():
        fut.result(timeout=20)
    return name


def call(broker: Broker, api_key: int, version: int, **fields: Any) -> Any:
    host, port = broker.bootstrap.rsplit(":", 1)
    with WireClient(host, int(port)) as c:
        return c.call(api_key, version, **fields)


def test_describe_topics_lists_kafkas_eight_topic_operations_only_when_asked(
    admin: AdminClient, topic: str
) -> None:
    (fut,) = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True).values()
    assert set(fut.result(timeout=20).authorized_operations) == TOPIC_OPS
    (fut,) = admin.describe_topics(TopicCollection([topic])).values()
    assert fut.result(timeout=20).authorized_operations is None


def test_describe_cluster_lists_kafkas_seven_cluster_operations_only_when_asked(admin: AdminClient) -> None:
    got = admin.describe_cluster(include_authorized_operations=True).result(timeout=20)
    assert set(got.authorized_operations) == CLUSTER_OPS
    assert admin.describe_cluster().result(timeout=20).authorized_operations is None


def test_describe_consumer_groups_lists_the_three_group_operations(
    broker: Broker, admin: AdminClient, topic: str
) -> None:
    group = f"ops-group-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    finally:
        consumer.close()
    (fut,) = admin.describe_consumer_groups([group], include_authorized_operations=True).values()
    assert set(fut.result(timeout=20).authorized_operations) == GROUP_OPS
    (fut,) = admin.describe_consumer_groups([group]).values()
    assert fut.result(timeout=20).authorized_operations is None


def test_metadata_bits_per_version_and_topic_outcome(broker: Broker, topic: str) -> None:
    """v8-10 carry the cluster field; from v8 every named topic gets its field, found or not
    (UNKNOWN_TOPIC_OR_PARTITION here, auto-creation being off), an unknown topic id never."""
    for version in (8, 10):
        ids: dict[str, Any] = {"topic_id": uuid.UUID(int=0)} if version >= 10 else {}
        r = call(
            broker,
            3,
            version,
            topics=[{"name": topic, **ids}, {"name": "no-such-topic", **ids}],
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=True,
            include_topic_authorized_operations=True,
        )
        assert r.cluster_authorized_operations == CLUSTER_BITS
        assert [(t.name, int(t.error_code), t.topic_authorized_operations) for t in r.topics] == [
            (topic, 0, TOPIC_BITS),
            ("no-such-topic", 3, TOPIC_BITS),
        ]
        r = call(
            broker,
            3,
            version,
            topics=[{"name": topic, **ids}],
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
        assert r.cluster_authorized_operations == NOT_REQUESTED
        assert [t.topic_authorized_operations for t in r.topics] == [NOT_REQUESTED]
    r = call(
        broker,
        3,
        12,
        topics=[{"name": None, "topic_id": uuid.uuid4()}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=True,
    )
    assert [(int(t.error_code), t.topic_authorized_operations) for t in r.topics] == [(100, NOT_REQUESTED)]


def test_describe_cluster_and_describe_groups_bits_over_the_wire(broker: Broker) -> None:
    r = call(broker, 60, 1, include_cluster_authorized_operations=True, endpoint_type=1)
    assert (int(r.error_code), r.cluster_authorized_operations) == (0, CLUSTER_BITS)
    r = call(broker, 60, 1, include_cluster_authorized_operations=False, endpoint_type=1)
    assert r.cluster_authorized_operations == NOT_REQUESTED
    # an unknown group is answered without error (state Dead), so it gets its field too
    r = call(broker, 15, 5, groups=["no-such-group"], include_authorized_operations=True)
    assert [(int(g.error_code), g.group_state, g.authorized_operations) for g in r.groups] == [
        (0, "Dead", GROUP_BITS)
    ]
    r = call(broker, 15, 5, groups=["no-such-group"], include_authorized_operations=False)
    assert [g.authorized_operations for g in r.groups] == [NOT_REQUESTED]


def test_an_authorizer_plugs_in_as_allowed() -> None:
    """With an authorizer, only the supported operations it allows are set (AuthHelper asks it
    once per supported operation); an operation the resource type does not support is never."""
    from groupcoord.broker.acl import Op
    from groupcoord.broker.acl import Resource as ResourceType
    from groupcoord.broker.authorized_ops import authorized_operations, operations_of

    asked: list[Op] = []

    def allowed(op: Op) -> bool:
        asked.append(op)
        return op in (Op.READ, Op.DESCRIBE, Op.IDEMPOTENT_WRITE)

    assert authorized_operations(ResourceType.TOPIC, allowed) == 8 + 256
    assert sorted(asked) == sorted(Op(o.value) for o in TOPIC_OPS)
    assert authorized_operations(ResourceType.TOPIC) == TOPIC_BITS
    assert operations_of(authorized_operations(ResourceType.GROUP)) == {Op.READ, Op.DESCRIBE, Op.DELETE}
    assert operations_of(NOT_REQUESTED) == frozenset()
