"""The authorization matrix: for each API served, the operation Kafka requires is required -
denied without it (with Kafka's error code), allowed with it. Each case names the line of
Kafka 3.9's ``core/src/main/scala/kafka/server/KafkaApis.scala`` (or ``AclApis.scala``) that
performs the check. The broker runs ``authorizer.class.name`` with ``User:admin`` as super user;
``User:bob`` starts with no ACL and gets exactly the one each case names.

Also Kafka's rules (``StandardAuthorizerData``, its test ``StandardAuthorizerTest``): DENY wins,
ALLOW of READ/WRITE/DELETE/ALTER implies DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS,
PREFIXED and ``*`` patterns, ``allow.everyone.if.no.acl.found``, bindings kept across a restart.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from groupcoord.broker.acl import AclBinding, AclStore, Authorizer, Op, Pattern, Permission, Resource
from groupcoord.errors import ErrorCode as E
from groupcoord.formats.batch import build_batch
from groupcoord.protocol.api_keys import ApiKey as K
from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker
from wire_testing import fetch_fields, produce_fields, sasl_plain_login

USERS = {"admin": "admin-pw", "bob": "bob-pw"}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(
        security_protocol="SASL_PLAINTEXT",
        users=USERS,
        acls=True,
        super_users=["User:admin"],
        settings={"group.initial.rebalance.delay.ms": 0},
    ) as b:
        yield b


def _login(broker: Broker, user: str) -> WireClient:
    host, port = broker.bootstrap.split(":")
    c = WireClient(host, int(port))
    sasl_plain_login(c, user, USERS[user])
    return c


def _create_topic(broker: Broker, topic: str) -> None:
    """``topic`` (one partition) made by the super user."""
    with _login(broker, "admin") as admin:
        r = admin.call(
            K.CREATE_TOPICS,
            7,
            topics=[
                {
                    "name": topic,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            timeout=10000,
            validate_only=False,
        )
        assert r.topics[0].error_code == 0


@dataclass
class Names:
    topic: str
    group: str
    txn: str


@pytest.fixture
def names(broker: Broker) -> Iterator[Names]:
    """A fresh topic (made by the super user), group and transactional id per case; bob's
    ACLs are removed after it."""
    n = Names(
        topic=f"t-{uuid.uuid4().hex[:8]}", group=f"g-{uuid.uuid4().hex[:8]}", txn=f"x-{uuid.uuid4().hex[:8]}"
    )
    _create_topic(broker, n.topic)
    yield n
    broker.remove_acls("User:bob")


def _batch() -> bytes:
    return build_batch([(None, b"v", [])], timestamp_ms=1_700_000_000_000)


@dataclass
class Case:
    """One API: the request bob sends, the error code that answers the check, and the ACL
    (operation, resource type, which of the case's names) that allows it."""

    api: str
    cite: str
    send: Callable[[WireClient, Names], Any]
    code: Callable[[Any], int]
    denied: E
    acl: tuple[str, str, str]
    allowed: E | None = E.NONE  #: the code once allowed (None: anything but ``denied``)
    pre: tuple[tuple[str, str, str], ...] = ()  #: ACLs held before (the case checks one more)


def _produce(c: WireClient, n: Names) -> Any:
    return c.call(K.PRODUCE, 9, **produce_fields(n.topic, _batch()))


def _offset_commit(c: WireClient, n: Names) -> Any:
    return c.call(
        K.OFFSET_COMMIT,
        8,
        group_id=n.group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": n.topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 0,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    )


def _add_partitions_to_txn(c: WireClient, n: Names) -> Any:
    return c.call(
        K.ADD_PARTITIONS_TO_TXN,
        3,
        v3_and_below_transactional_id=n.txn,
        v3_and_below_producer_id=1,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[{"name": n.topic, "partitions": [0]}],
    )


def _add_partitions_to_txn_code(r: Any) -> int:
    return int(r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)


CASES = [
    Case(
        "Produce",
        "KafkaApis.scala:631 filterByAuthorized(WRITE, TOPIC)",
        _produce,
        lambda r: r.responses[0].partition_responses[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("WRITE", "TOPIC", "topic"),
    ),
    Case(
        "Fetch",
        "KafkaApis.scala:813 filterByAuthorized(READ, TOPIC)",
        lambda c, n: c.call(K.FETCH, 12, **fetch_fields(n.topic, 0)),
        lambda r: r.responses[0].partitions[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("READ", "TOPIC", "topic"),
    ),
    Case(
        "ListOffsets",
        "KafkaApis.scala:1179 (DESCRIBE, TOPIC)",
        lambda c, n: c.call(
            K.LIST_OFFSETS,
            7,
            replica_id=-1,
            isolation_level=0,
            topics=[
                {
                    "name": n.topic,
                    "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}],
                }
            ],
        ),
        lambda r: r.topics[0].partitions[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("DESCRIBE", "TOPIC", "topic"),
    ),
    Case(
        "Metadata",
        "KafkaApis.scala:1285 filterByAuthorized(DESCRIBE, TOPIC)",
        lambda c, n: c.call(
            K.METADATA,
            12,
            topics=[{"topic_id": uuid.UUID(int=0), "name": n.topic}],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
        lambda r: r.topics[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("DESCRIBE", "TOPIC", "topic"),
    ),
    Case(
        "Metadata auto-create",
        "KafkaApis.scala:1293-1304 (CREATE, CLUSTER or TOPIC)",
        lambda c, n: c.call(
            K.METADATA,
            12,
            topics=[{"topic_id": uuid.UUID(int=0), "name": n.topic + "-new"}],
            allow_auto_topic_creation=True,
            include_topic_authorized_operations=False,
        ),
        lambda r: r.topics[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("CREATE", "TOPIC", "topic-new"),
        E.NONE,
        (("DESCRIBE", "TOPIC", "topic-new"),),
    ),
    Case(
        "OffsetCommit (group)",
        "KafkaApis.scala:459 authorize(READ, GROUP)",
        _offset_commit,
        lambda r: r.topics[0].partitions[0].error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("READ", "GROUP", "group"),
        None,
    ),
    Case(
        "OffsetFetch",
        "KafkaApis.scala:1418 authorize(DESCRIBE, GROUP)",
        lambda c, n: c.call(K.OFFSET_FETCH, 7, group_id=n.group, topics=None, require_stable=False),
        lambda r: r.error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("DESCRIBE", "GROUP", "group"),
    ),
    Case(
        "FindCoordinator (group)",
        "KafkaApis.scala:1634 authorize(DESCRIBE, GROUP)",
        lambda c, n: c.call(K.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=[n.group]),
        lambda r: r.coordinators[0].error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("DESCRIBE", "GROUP", "group"),
    ),
    Case(
        "FindCoordinator (transaction)",
        "KafkaApis.scala:1637 authorize(DESCRIBE, TRANSACTIONAL_ID)",
        lambda c, n: c.call(K.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=[n.txn]),
        lambda r: r.coordinators[0].error_code,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ("DESCRIBE", "TRANSACTIONAL_ID", "txn"),
    ),
    Case(
        "JoinGroup",
        "KafkaApis.scala:1773 authorize(READ, GROUP)",
        lambda c, n: c.call(
            K.JOIN_GROUP,
            7,
            group_id=n.group,
            session_timeout=10000,
            rebalance_timeout=10000,
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[{"name": "range", "metadata": b""}],
        ),
        lambda r: r.error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("READ", "GROUP", "group"),
        E.MEMBER_ID_REQUIRED,
    ),
    Case(
        "SyncGroup",
        "KafkaApis.scala:1807 authorize(READ, GROUP)",
        lambda c, n: c.call(
            K.SYNC_GROUP,
            5,
            group_id=n.group,
            generation_id=1,
            member_id="m",
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[],
        ),
        lambda r: r.error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("READ", "GROUP", "group"),
        E.UNKNOWN_MEMBER_ID,
    ),
    Case(
        "Heartbeat",
        "KafkaApis.scala:1872 authorize(READ, GROUP)",
        lambda c, n: c.call(
            K.HEARTBEAT, 4, group_id=n.group, generation_id=1, member_id="m", group_instance_id=None
        ),
        lambda r: r.error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("READ", "GROUP", "group"),
        E.UNKNOWN_MEMBER_ID,
    ),
    Case(
        "LeaveGroup",
        "KafkaApis.scala:1892 authorize(READ, GROUP)",
        lambda c, n: c.call(
            K.LEAVE_GROUP, 4, group_id=n.group, members=[{"member_id": "m", "group_instance_id": None}]
        ),
        lambda r: r.error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("READ", "GROUP", "group"),
        None,
    ),
    Case(
        "DescribeGroups",
        "KafkaApis.scala:1694 authorize(DESCRIBE, GROUP)",
        lambda c, n: c.call(K.DESCRIBE_GROUPS, 5, groups=[n.group], include_authorized_operations=True),
        lambda r: r.groups[0].error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("DESCRIBE", "GROUP", "group"),
    ),
    Case(
        "ConsumerGroupHeartbeat",
        "KafkaApis.handleConsumerGroupHeartbeat authorize(READ, GROUP)",
        lambda c, n: c.call(
            K.CONSUMER_GROUP_HEARTBEAT,
            1,
            group_id=n.group,
            member_id="m8h4o1ZkS5eJ9k9m6pQbHw",
            member_epoch=0,
            instance_id=None,
            rack_id=None,
            rebalance_timeout=60000,
            subscribed_topic_names=[],
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=[],
        ),
        lambda r: r.error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("READ", "GROUP", "group"),
    ),
    Case(
        "ConsumerGroupDescribe",
        "KafkaApis.handleConsumerGroupDescribe authorize(DESCRIBE, GROUP)",
        lambda c, n: c.call(
            K.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[n.group], include_authorized_operations=True
        ),
        lambda r: r.groups[0].error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("DESCRIBE", "GROUP", "group"),
        E.GROUP_ID_NOT_FOUND,
    ),
    Case(
        "DeleteGroups",
        "KafkaApis.scala:1856 (DELETE, GROUP)",
        lambda c, n: c.call(K.DELETE_GROUPS, 2, groups_names=[n.group]),
        lambda r: r.results[0].error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("DELETE", "GROUP", "group"),
        E.GROUP_ID_NOT_FOUND,
    ),
    Case(
        "OffsetDelete",
        "KafkaApis.scala:3383 handleOffsetDeleteRequest authorize(DELETE, GROUP)",
        lambda c, n: c.call(
            K.OFFSET_DELETE,
            0,
            group_id=n.group,
            topics=[{"name": n.topic, "partitions": [{"partition_index": 0}]}],
        ),
        lambda r: r.error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("DELETE", "GROUP", "group"),
        E.GROUP_ID_NOT_FOUND,
    ),
    Case(
        "CreateTopics",
        "KafkaApis.scala:1983 filterByAuthorized(CREATE, TOPIC)",
        lambda c, n: c.call(
            K.CREATE_TOPICS,
            7,
            timeout=10000,
            validate_only=False,
            topics=[
                {
                    "name": n.topic + "-c",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
        ),
        lambda r: r.topics[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("CREATE", "TOPIC", "topic-c"),
    ),
    Case(
        "DeleteTopics",
        "KafkaApis.scala:2135 filterByAuthorized(DELETE, TOPIC)",
        lambda c, n: c.call(
            K.DELETE_TOPICS, 6, topics=[{"name": n.topic, "topic_id": uuid.UUID(int=0)}], timeout=10000
        ),
        lambda r: r.responses[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("DELETE", "TOPIC", "topic"),
    ),
    Case(
        "CreatePartitions",
        "KafkaApis.scala:2078 (ALTER, TOPIC)",
        lambda c, n: c.call(
            K.CREATE_PARTITIONS,
            3,
            topics=[{"name": n.topic, "count": 2, "assignments": None}],
            timeout=10000,
            validate_only=False,
        ),
        lambda r: r.results[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("ALTER", "TOPIC", "topic"),
    ),
    Case(
        "DeleteRecords",
        "KafkaApis.scala:2188 filterByAuthorized(DELETE, TOPIC)",
        lambda c, n: c.call(
            K.DELETE_RECORDS,
            2,
            topics=[{"name": n.topic, "partitions": [{"partition_index": 0, "offset": 0}]}],
            timeout=10000,
        ),
        lambda r: r.topics[0].partitions[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("DELETE", "TOPIC", "topic"),
    ),
    Case(
        "DescribeConfigs",
        "KafkaApis.scala:2967 (DESCRIBE_CONFIGS, TOPIC)",
        lambda c, n: c.call(
            K.DESCRIBE_CONFIGS,
            4,
            resources=[{"resource_type": 2, "resource_name": n.topic, "configuration_keys": None}],
            include_synonyms=False,
            include_documentation=False,
        ),
        lambda r: r.results[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("DESCRIBE_CONFIGS", "TOPIC", "topic"),
    ),
    Case(
        "IncrementalAlterConfigs",
        "KafkaApis.scala:2859 (ALTER_CONFIGS, TOPIC)",
        lambda c, n: c.call(
            K.INCREMENTAL_ALTER_CONFIGS,
            1,
            validate_only=False,
            resources=[
                {
                    "resource_type": 2,
                    "resource_name": n.topic,
                    "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}],
                }
            ],
        ),
        lambda r: r.responses[0].error_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("ALTER_CONFIGS", "TOPIC", "topic"),
    ),
    Case(
        "DescribeConfigs (group)",
        "KafkaApis handleDescribeConfigsRequest (DESCRIBE_CONFIGS, GROUP)",
        lambda c, n: c.call(
            K.DESCRIBE_CONFIGS,
            4,
            resources=[{"resource_type": 32, "resource_name": n.group, "configuration_keys": None}],
            include_synonyms=False,
            include_documentation=False,
        ),
        lambda r: r.results[0].error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("DESCRIBE_CONFIGS", "GROUP", "group"),
    ),
    Case(
        "IncrementalAlterConfigs (group)",
        "KafkaApis handleIncrementalAlterConfigsRequest (ALTER_CONFIGS, GROUP)",
        lambda c, n: c.call(
            K.INCREMENTAL_ALTER_CONFIGS,
            1,
            validate_only=False,
            resources=[
                {
                    "resource_type": 32,
                    "resource_name": n.group,
                    "configs": [
                        {"name": "consumer.heartbeat.interval.ms", "config_operation": 0, "value": "6000"}
                    ],
                }
            ],
        ),
        lambda r: r.responses[0].error_code,
        E.GROUP_AUTHORIZATION_FAILED,
        ("ALTER_CONFIGS", "GROUP", "group"),
    ),
    Case(
        "InitProducerId (transactional)",
        "KafkaApis.scala:2250 authorize(WRITE, TRANSACTIONAL_ID)",
        lambda c, n: c.call(
            K.INIT_PRODUCER_ID,
            4,
            transactional_id=n.txn,
            transaction_timeout=60000,
            producer_id=-1,
            producer_epoch=-1,
        ),
        lambda r: r.error_code,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ("WRITE", "TRANSACTIONAL_ID", "txn"),
    ),
    Case(
        "InitProducerId (idempotent)",
        "KafkaApis.scala:2254 (IDEMPOTENT_WRITE, CLUSTER) or WRITE on a topic",
        lambda c, n: c.call(
            K.INIT_PRODUCER_ID,
            4,
            transactional_id=None,
            transaction_timeout=60000,
            producer_id=-1,
            producer_epoch=-1,
        ),
        lambda r: r.error_code,
        E.CLUSTER_AUTHORIZATION_FAILED,
        ("IDEMPOTENT_WRITE", "CLUSTER", "kafka-cluster"),
    ),
    Case(
        "EndTxn",
        "KafkaApis.scala:2300 authorize(WRITE, TRANSACTIONAL_ID)",
        lambda c, n: c.call(
            K.END_TXN, 3, transactional_id=n.txn, producer_id=1, producer_epoch=0, committed=True
        ),
        lambda r: r.error_code,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ("WRITE", "TRANSACTIONAL_ID", "txn"),
        None,
    ),
    Case(
        "AddOffsetsToTxn",
        "KafkaApis.scala:2626 authorize(WRITE, TRANSACTIONAL_ID)",
        lambda c, n: c.call(
            K.ADD_OFFSETS_TO_TXN, 3, transactional_id=n.txn, producer_id=1, producer_epoch=0, group_id=n.group
        ),
        lambda r: r.error_code,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ("WRITE", "TRANSACTIONAL_ID", "txn"),
        None,
    ),
    Case(
        "AddPartitionsToTxn (transaction)",
        "KafkaApis.scala:2557 authorize(WRITE, TRANSACTIONAL_ID)",
        _add_partitions_to_txn,
        _add_partitions_to_txn_code,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ("WRITE", "TRANSACTIONAL_ID", "txn"),
        E.TOPIC_AUTHORIZATION_FAILED,
    ),
    Case(
        "AddPartitionsToTxn (topic)",
        "KafkaApis.scala:2567 filterByAuthorized(WRITE, TOPIC)",
        _add_partitions_to_txn,
        _add_partitions_to_txn_code,
        E.TOPIC_AUTHORIZATION_FAILED,
        ("WRITE", "TOPIC", "topic"),
        None,
        (("WRITE", "TRANSACTIONAL_ID", "txn"),),
    ),
    Case(
        "DescribeTransactions",
        "KafkaApis.scala:3723 authorize(DESCRIBE, TRANSACTIONAL_ID)",
        lambda c, n: c.call(K.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[n.txn]),
        lambda r: r.transaction_states[0].error_code,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ("DESCRIBE", "TRANSACTIONAL_ID", "txn"),
        E.TRANSACTIONAL_ID_NOT_FOUND,
    ),
    Case(
        "DescribeAcls",
        "AclApis.scala:59 authorizeClusterOperation(DESCRIBE)",
        lambda c, n: c.call(
            K.DESCRIBE_ACLS,
            3,
            resource_type_filter=1,
            resource_name_filter=None,
            pattern_type_filter=1,
            principal_filter=None,
            host_filter=None,
            operation=1,
            permission_type=1,
        ),
        lambda r: r.error_code,
        E.CLUSTER_AUTHORIZATION_FAILED,
        ("DESCRIBE", "CLUSTER", "kafka-cluster"),
    ),
    Case(
        "CreateAcls",
        "AclApis.scala:81 authorizeClusterOperation(ALTER)",
        lambda c, n: c.call(
            K.CREATE_ACLS,
            3,
            creations=[
                {
                    "resource_type": 3,
                    "resource_name": n.group,
                    "resource_pattern_type": 3,
                    "principal": "User:nobody",
                    "host": "*",
                    "operation": 3,
                    "permission_type": 3,
                }
            ],
        ),
        lambda r: r.results[0].error_code,
        E.CLUSTER_AUTHORIZATION_FAILED,
        ("ALTER", "CLUSTER", "kafka-cluster"),
    ),
    Case(
        "DeleteAcls",
        "AclApis.scala:137 authorizeClusterOperation(ALTER)",
        lambda c, n: c.call(
            K.DELETE_ACLS,
            3,
            filters=[
                {
                    "resource_type_filter": 3,
                    "resource_name_filter": n.group,
                    "pattern_type_filter": 3,
                    "principal_filter": "User:nobody",
                    "host_filter": None,
                    "operation": 1,
                    "permission_type": 1,
                }
            ],
        ),
        lambda r: r.filter_results[0].error_code,
        E.CLUSTER_AUTHORIZATION_FAILED,
        ("ALTER", "CLUSTER", "kafka-cluster"),
    ),
    Case(
        "DescribeUserScramCredentials",
        "KafkaApis.scala:3520 authorize(DESCRIBE, CLUSTER)",
        lambda c, n: c.call(K.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=None),
        lambda r: r.error_code,
        E.CLUSTER_AUTHORIZATION_FAILED,
        ("DESCRIBE", "CLUSTER", "kafka-cluster"),
    ),
    Case(
        "AlterUserScramCredentials",
        "KafkaApis.scala:3545 authorize(ALTER, CLUSTER)",
        lambda c, n: c.call(
            K.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=[{"name": n.group, "mechanism": 1}], upsertions=[]
        ),
        lambda r: r.results[0].error_code,
        E.CLUSTER_AUTHORIZATION_FAILED,
        ("ALTER", "CLUSTER", "kafka-cluster"),
        E.RESOURCE_NOT_FOUND,
    ),
    Case(
        "DescribeClientQuotas",
        "KafkaApis.handleDescribeClientQuotasRequest authorize(DESCRIBE_CONFIGS, CLUSTER)",
        lambda c, n: c.call(K.DESCRIBE_CLIENT_QUOTAS, 1, components=[], strict=False),
        lambda r: r.error_code,
        E.CLUSTER_AUTHORIZATION_FAILED,
        ("DESCRIBE_CONFIGS", "CLUSTER", "kafka-cluster"),
    ),
    Case(
        "AlterClientQuotas",
        "KafkaApis.handleAlterClientQuotasRequest authorize(ALTER_CONFIGS, CLUSTER)",
        lambda c, n: c.call(
            K.ALTER_CLIENT_QUOTAS,
            1,
            entries=[
                {
                    "entity": [{"entity_type": "client-id", "entity_name": n.group}],
                    "ops": [{"key": "producer_byte_rate", "value": 1048576.0, "remove": False}],
                }
            ],
            validate_only=True,
        ),
        lambda r: r.entries[0].error_code,
        E.CLUSTER_AUTHORIZATION_FAILED,
        ("ALTER_CONFIGS", "CLUSTER", "kafka-cluster"),
    ),
]


def _grant(broker: Broker, names: Names, acl: tuple[str, str, str]) -> str:
    op, rtype, which = acl
    if which == "kafka-cluster":
        name = which
    elif which.endswith("-new") or which.endswith("-c"):
        base, _, suffix = which.rpartition("-")
        name = getattr(names, base) + "-" + suffix
    else:
        name = getattr(names, which)
    broker.add_acl("User:bob", op, rtype, name)
    return name


@pytest.mark.parametrize("case", CASES, ids=[c.api for c in CASES])
def test_each_api_requires_the_operation_kafka_requires(broker: Broker, names: Names, case: Case) -> None:
    for acl in case.pre:
        _grant(broker, names, acl)
    with _login(broker, "bob") as bob:
        assert case.code(case.send(bob, names)) == case.denied, case.cite
        _grant(broker, names, case.acl)
        got = case.code(case.send(bob, names))
        if case.allowed is None:
            assert got != case.denied, case.cite
        else:
            assert got == case.allowed, case.cite


def test_offset_commit_denies_only_the_topics_not_readable(broker: Broker, names: Names) -> None:
    """KafkaApis.scala:469-483: with READ on the group, a topic without READ is answered
    TOPIC_AUTHORIZATION_FAILED and a readable one is committed."""
    other = f"o-{uuid.uuid4().hex[:6]}"
    _create_topic(broker, other)
    broker.add_acl("User:bob", "READ", "GROUP", names.group)
    broker.add_acl("User:bob", "READ", "TOPIC", names.topic)
    part = {
        "partition_index": 0,
        "committed_offset": 3,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    with _login(broker, "bob") as bob:
        r = bob.call(
            K.OFFSET_COMMIT,
            8,
            group_id=names.group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[{"name": names.topic, "partitions": [part]}, {"name": other, "partitions": [part]}],
        )
        assert {t.name: t.partitions[0].error_code for t in r.topics} == {
            names.topic: E.NONE,
            other: E.TOPIC_AUTHORIZATION_FAILED,
        }


def test_a_topic_sent_with_no_partitions_is_listed_only_in_a_whole_request_error(
    broker: Broker, names: Names
) -> None:
    """Kafka answers a topic with no partitions two ways. Without READ on the group the whole
    request fails through ``OffsetCommitRequest.getErrorResponse``, which adds every topic of the
    request, partitions or none. With READ on the group, a topic without READ goes through
    ``OffsetCommitResponse.Builder.addPartitions`` (KafkaApis.scala:469-483), which makes a
    topic's entry only with its first partition: a topic sent with none is not in the answer."""
    other = f"o-{uuid.uuid4().hex[:6]}"
    _create_topic(broker, other)
    part = {
        "partition_index": 0,
        "committed_offset": 3,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    topics = [{"name": names.topic, "partitions": [part]}, {"name": other, "partitions": []}]

    def commit(bob: WireClient) -> Any:
        return bob.call(
            K.OFFSET_COMMIT,
            8,
            group_id=names.group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=topics,
        )

    with _login(broker, "bob") as bob:
        r = commit(bob)
        assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
            (names.topic, [(0, E.GROUP_AUTHORIZATION_FAILED)]),
            (other, []),
        ]
        broker.add_acl("User:bob", "READ", "GROUP", names.group)
        broker.add_acl("User:bob", "READ", "TOPIC", names.topic)
        r = commit(bob)
        assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
            (names.topic, [(0, E.NONE)]),
        ]


@pytest.mark.parametrize("version", [4, 6])
def test_delete_topics_deletes_only_the_topics_the_principal_may_delete(
    broker: Broker, names: Names, version: int
) -> None:
    """KafkaApis.scala:2133-2150: of two topics asked for, the one without DELETE is answered
    TOPIC_AUTHORIZATION_FAILED and the other is deleted (by name before v6, by entity from v6)."""
    other = f"o-{uuid.uuid4().hex[:6]}"
    _create_topic(broker, other)
    broker.add_acl("User:bob", "DELETE", "TOPIC", names.topic)
    asked = [names.topic, other]
    with _login(broker, "bob") as bob:
        if version >= 6:
            topics = [{"name": t, "topic_id": uuid.UUID(int=0)} for t in asked]
            r = bob.call(K.DELETE_TOPICS, version, topics=topics, timeout=10000)
        else:
            r = bob.call(K.DELETE_TOPICS, version, topic_names=asked, timeout=10000)
        assert {t.name: t.error_code for t in r.responses} == {
            names.topic: E.NONE,
            other: E.TOPIC_AUTHORIZATION_FAILED,
        }
    with _login(broker, "admin") as admin:
        r = admin.call(
            K.METADATA,
            12,
            topics=[{"name": t, "topic_id": uuid.UUID(int=0)} for t in asked],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        assert {t.name: t.error_code for t in r.topics} == {
            names.topic: E.UNKNOWN_TOPIC_OR_PARTITION,
            other: E.NONE,
        }


def test_create_partitions_alters_only_the_topics_the_principal_may_alter(
    broker: Broker, names: Names
) -> None:
    """KafkaApis.scala:2078: of two topics asked for, the one without ALTER is answered
    TOPIC_AUTHORIZATION_FAILED and the other gets its partitions."""
    other = f"o-{uuid.uuid4().hex[:6]}"
    _create_topic(broker, other)
    broker.add_acl("User:bob", "ALTER", "TOPIC", names.topic)
    with _login(broker, "bob") as bob:
        r = bob.call(
            K.CREATE_PARTITIONS,
            3,
            topics=[{"name": t, "count": 2, "assignments": None} for t in (names.topic, other)],
            timeout=10000,
            validate_only=False,
        )
        assert {t.name: t.error_code for t in r.results} == {
            names.topic: E.NONE,
            other: E.TOPIC_AUTHORIZATION_FAILED,
        }
    with _login(broker, "admin") as admin:
        r = admin.call(
            K.METADATA,
            12,
            topics=[{"name": t, "topic_id": uuid.UUID(int=0)} for t in (names.topic, other)],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        assert {t.name: len(t.partitions) for t in r.topics} == {names.topic: 2, other: 1}


def test_metadata_of_all_topics_lists_only_describable_ones(broker: Broker, names: Names) -> None:
    """KafkaApis.scala:1285: an all-topics request leaves the others out; READ implies DESCRIBE."""
    broker.add_acl("User:bob", "READ", "TOPIC", names.topic)
    with _login(broker, "bob") as bob:
        r = bob.call(
            K.METADATA,
            12,
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=True,
        )
        assert [t.name for t in r.topics] == [names.topic]
        ops = r.topics[0].topic_authorized_operations
        assert ops == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_list_groups_without_cluster_describe_lists_only_describable_groups(
    broker: Broker, names: Names
) -> None:
    """KafkaApis.scala:1737-1752."""
    with _login(broker, "admin") as admin:
        for g in (names.group, names.group + "-2"):
            admin.call(
                K.OFFSET_COMMIT,
                8,
                group_id=g,
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=[
                    {
                        "name": names.topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 1,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            )
    broker.add_acl("User:bob", "DESCRIBE", "GROUP", names.group)
    with _login(broker, "bob") as bob:
        r = bob.call(K.LIST_GROUPS, 4, states_filter=[])
        mine = {g.group_id for g in r.groups if g.group_id.startswith(names.group)}
        assert mine == {names.group}


# ---------------------------------------------------------------------- the rules, in process
def _authorizer(tmp_path: Any, *bindings: AclBinding, allow_if_no_acl: bool = False) -> Authorizer:
    store = AclStore(tmp_path)
    store.add(bindings)
    return Authorizer(store, enabled=True, super_users=["User:root"], allow_if_no_acl=allow_if_no_acl)


def _acl(
    op: Op,
    name: str,
    *,
    perm: Permission = Permission.ALLOW,
    pattern: Pattern = Pattern.LITERAL,
    principal: str = "User:bob",
    host: str = "*",
    rtype: Resource = Resource.TOPIC,
) -> AclBinding:
    return AclBinding(
        resource_type=rtype,
        resource_name=name,
        pattern_type=pattern,
        principal=principal,
        host=host,
        operation=op,
        permission=perm,
    )


def test_deny_wins_and_implications_are_for_allow_only(tmp_path: Any) -> None:
    a = _authorizer(
        tmp_path,
        _acl(Op.READ, "orders"),
        _acl(Op.WRITE, "orders", perm=Permission.DENY),
        _acl(Op.ALTER_CONFIGS, "orders"),
        _acl(Op.READ, "audit", perm=Permission.DENY),
    )
    ok = lambda op, name: a.authorize("User:bob", "/127.0.0.1", op, Resource.TOPIC, name)  # noqa: E731
    assert ok(Op.READ, "orders") and ok(Op.DESCRIBE, "orders") and ok(Op.DESCRIBE_CONFIGS, "orders")
    assert not ok(Op.WRITE, "orders")
    assert not ok(Op.DESCRIBE, "audit")  # a DENY of READ implies nothing; no ALLOW: denied
    assert a.authorize("User:root", "/h", Op.WRITE, Resource.TOPIC, "orders")  # super user


def test_prefixed_wildcard_principal_and_host_patterns(tmp_path: Any) -> None:
    a = _authorizer(
        tmp_path,
        _acl(Op.READ, "pay.", pattern=Pattern.PREFIXED),
        _acl(Op.WRITE, "*", principal="User:*"),
        _acl(Op.DELETE, "pay.x", host="10.0.0.1"),
    )
    ok = lambda op, name, host="/127.0.0.1": a.authorize("User:bob", host, op, Resource.TOPIC, name)  # noqa: E731
    assert ok(Op.READ, "pay.eu") and not ok(Op.READ, "payments")
    assert ok(Op.WRITE, "anything")
    assert not ok(Op.DELETE, "pay.x") and ok(Op.DELETE, "pay.x", host="/10.0.0.1")


def test_allow_everyone_if_no_acl_found_applies_only_to_resources_without_acls(tmp_path: Any) -> None:
    a = _authorizer(tmp_path, _acl(Op.READ, "guarded", principal="User:alice"), allow_if_no_acl=True)
    assert a.authorize("User:bob", "/h", Op.WRITE, Resource.TOPIC, "free")
    assert not a.authorize("User:bob", "/h", Op.READ, Resource.TOPIC, "guarded")


def test_acls_are_kept_across_a_restart(tmp_path: Any) -> None:
    with Broker(
        security_protocol="SASL_PLAINTEXT",
        users=USERS,
        acls=True,
        super_users=["User:admin"],
        data_dir=tmp_path / "d",
    ) as b:
        b.add_acl("User:bob", "DESCRIBE", "GROUP", "kept")
        b.restart()
        with _login(b, "bob") as bob:
            r = bob.call(K.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=["kept", "other"])
            assert [c.error_code for c in r.coordinators] == [E.NONE, E.GROUP_AUTHORIZATION_FAILED]


def test_every_api_served_is_checked_except_those_kafka_leaves_open(broker: Broker) -> None:
    """Kafka authorizes no ApiVersions, SaslHandshake or SaslAuthenticate (they precede
    authentication); every other API served has its check (``broker.authz.GUARDED_APIS``)."""
    from groupcoord.broker.authz import GUARDED_APIS

    app = broker._app
    assert app is not None
    served = {K(key) for key, _lo, _hi in app.dispatcher.registry.ranges()}
    assert served - GUARDED_APIS == {K.API_VERSIONS, K.SASL_HANDSHAKE, K.SASL_AUTHENTICATE}


def test_offset_fetch_hides_or_refuses_topics_the_principal_may_not_describe(
    broker: Broker, names: Names
) -> None:
    """KafkaApis.scala:1516-1559: asked for by name, an undescribable topic's partitions are
    TOPIC_AUTHORIZATION_FAILED with offset -1; asked for all, it is left out (v7 and v8)."""
    other = f"o-{uuid.uuid4().hex[:6]}"
    part = {
        "partition_index": 0,
        "committed_offset": 5,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    _create_topic(broker, other)
    with _login(broker, "admin") as admin:
        admin.call(
            K.OFFSET_COMMIT,
            8,
            group_id=names.group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[{"name": names.topic, "partitions": [part]}, {"name": other, "partitions": [part]}],
        )
    broker.add_acl("User:bob", "DESCRIBE", "GROUP", names.group)
    broker.add_acl("User:bob", "DESCRIBE", "TOPIC", names.topic)
    asked = [{"name": names.topic, "partition_indexes": [0]}, {"name": other, "partition_indexes": [0]}]
    with _login(broker, "bob") as bob:
        r = bob.call(K.OFFSET_FETCH, 7, group_id=names.group, topics=asked, require_stable=False)
        got = {t.name: (t.partitions[0].committed_offset, t.partitions[0].error_code) for t in r.topics}
        assert got == {names.topic: (5, E.NONE), other: (-1, E.TOPIC_AUTHORIZATION_FAILED)}
        r = bob.call(K.OFFSET_FETCH, 7, group_id=names.group, topics=None, require_stable=False)
        assert [t.name for t in r.topics] == [names.topic]
        r = bob.call(
            K.OFFSET_FETCH,
            8,
            require_stable=False,
            groups=[
                {"group_id": names.group, "topics": asked},
                {"group_id": names.group + "-x", "topics": None},
            ],
        )
        by_group = {g.group_id: g for g in r.groups}
        assert by_group[names.group + "-x"].error_code == E.GROUP_AUTHORIZATION_FAILED
        got = {
            t.name: (t.partitions[0].committed_offset, t.partitions[0].error_code)
            for t in by_group[names.group].topics
        }
        assert got == {names.topic: (5, E.NONE), other: (-1, E.TOPIC_AUTHORIZATION_FAILED)}


def test_offset_delete_refuses_the_partitions_of_topics_not_readable(broker: Broker, names: Names) -> None:
    """KafkaApis.scala:3387-3401: with DELETE on the group, an unreadable topic's partitions are
    TOPIC_AUTHORIZATION_FAILED; a readable one goes to the coordinator."""
    part = {
        "partition_index": 0,
        "committed_offset": 1,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    with _login(broker, "admin") as admin:
        admin.call(
            K.OFFSET_COMMIT,
            8,
            group_id=names.group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[{"name": names.topic, "partitions": [part]}],
        )
    broker.add_acl("User:bob", "DELETE", "GROUP", names.group)
    ask = [{"name": names.topic, "partitions": [{"partition_index": 0}]}]
    with _login(broker, "bob") as bob:
        r = bob.call(K.OFFSET_DELETE, 0, group_id=names.group, topics=ask)
        assert (r.error_code, r.topics[0].partitions[0].error_code) == (E.NONE, E.TOPIC_AUTHORIZATION_FAILED)
        broker.add_acl("User:bob", "READ", "TOPIC", names.topic)
        r = bob.call(K.OFFSET_DELETE, 0, group_id=names.group, topics=ask)
        assert (r.error_code, r.topics[0].partitions[0].error_code) == (E.NONE, E.NONE)


def test_metadata_auto_creates_only_the_topics_the_principal_may_create(broker: Broker, names: Names) -> None:
    """KafkaApis.scala:1293-1304: of two missing topics, the one with CREATE is made, the other is
    TOPIC_AUTHORIZATION_FAILED, each in the request's place."""
    a, b = names.topic + "-a", names.topic + "-b"
    for topic in (a, b):
        broker.add_acl("User:bob", "DESCRIBE", "TOPIC", topic)
    broker.add_acl("User:bob", "CREATE", "TOPIC", a)
    with _login(broker, "bob") as bob:
        r = bob.call(
            K.METADATA,
            12,
            topics=[{"topic_id": uuid.UUID(int=0), "name": n} for n in (b, a)],
            allow_auto_topic_creation=True,
            include_topic_authorized_operations=False,
        )
        assert [(t.name, t.error_code) for t in r.topics] == [(b, E.TOPIC_AUTHORIZATION_FAILED), (a, E.NONE)]


def test_describe_transactions_lists_only_describable_topics(broker: Broker, names: Names) -> None:
    """KafkaApis.scala:3731-3735: a transaction's partitions of topics the principal may not
    DESCRIBE are left out."""
    other = f"o-{uuid.uuid4().hex[:6]}"
    _create_topic(broker, other)
    with _login(broker, "admin") as admin:
        pid = admin.call(
            K.INIT_PRODUCER_ID,
            4,
            transactional_id=names.txn,
            transaction_timeout=60000,
            producer_id=-1,
            producer_epoch=-1,
        )
        assert pid.error_code == 0
        r = admin.call(
            K.ADD_PARTITIONS_TO_TXN,
            3,
            v3_and_below_transactional_id=names.txn,
            v3_and_below_producer_id=pid.producer_id,
            v3_and_below_producer_epoch=pid.producer_epoch,
            v3_and_below_topics=[
                {"name": names.topic, "partitions": [0]},
                {"name": other, "partitions": [0]},
            ],
        )
        assert {
            p.partition_error_code for t in r.results_by_topic_v3_and_below for p in t.results_by_partition
        } == {0}
    broker.add_acl("User:bob", "DESCRIBE", "TRANSACTIONAL_ID", names.txn)
    broker.add_acl("User:bob", "DESCRIBE", "TOPIC", names.topic)
    with _login(broker, "bob") as bob:
        r = bob.call(K.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[names.txn])
        (state,) = r.transaction_states
        assert (state.error_code, [t.topic for t in state.topics]) == (E.NONE, [names.topic])


def test_consumer_group_heartbeat_needs_describe_on_each_subscribed_topic(
    broker: Broker, names: Names
) -> None:
    """KafkaApis.handleConsumerGroupHeartbeat (Kafka 4.x): with READ on the group, a subscription
    naming a topic the member may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED; once it may,
    the member joins (epoch 1)."""
    broker.add_acl("User:bob", "READ", "GROUP", names.group)

    def heartbeat(bob: WireClient) -> Any:
        return bob.call(
            K.CONSUMER_GROUP_HEARTBEAT,
            1,
            group_id=names.group,
            member_id="b0bB0bB0bB0bB0bB0bB0bA",
            member_epoch=0,
            instance_id=None,
            rack_id=None,
            rebalance_timeout=60000,
            subscribed_topic_names=[names.topic],
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=[],
        )

    with _login(broker, "bob") as bob:
        assert heartbeat(bob).error_code == E.TOPIC_AUTHORIZATION_FAILED
        broker.add_acl("User:bob", "DESCRIBE", "TOPIC", names.topic)
        joined = heartbeat(bob)
        assert (joined.error_code, joined.member_epoch) == (E.NONE, 1)
