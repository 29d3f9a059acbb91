"""The coordinator's transitions when leadership of a ``__consumer_offsets`` partition moves
(Kafka's ``GroupCoordinatorService.onResignation`` / ``onElection`` over ``CoordinatorRuntime``):

* the old leader's shard unloads: a JoinGroup parked there is answered NOT_COORDINATOR, the
  group is gone from its memory, and it answers NOT_COORDINATOR from then on;
* the new leader's shard answers COORDINATOR_LOAD_IN_PROGRESS until it has replayed the
  partition, then serves the group as loaded from the log.

Kafka's ``CoordinatorRuntimeTest.testScheduleUnloading`` / ``testScheduleLoading`` and
``GroupMetadataManagerTest.testOnUnloaded`` describe the same transitions.
"""

from __future__ import annotations

import pytest

from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey as K
from groupcoord.protocol.client import WireClient
from groupcoord.protocol.group_messages import DescribeGroupsResponse, HeartbeatRequest, HeartbeatResponse
from groupcoord.testing import Cluster


def _join_v3(c: WireClient, group: str) -> None:
    """Send a JoinGroup v3 (no member id round trip): it parks for the initial rebalance delay."""
    c.send(
        K.JOIN_GROUP,
        3,
        group_id=group,
        session_timeout=10_000,
        rebalance_timeout=10_000,
        member_id="",
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": b""}],
    )


@pytest.mark.kafka_cluster(settings={"group.initial.rebalance.delay.ms": 600_000})
def test_a_join_parked_on_the_old_coordinator_is_answered_not_coordinator(kafka_cluster: Cluster) -> None:
    group = "parked"
    old = kafka_cluster.coordinator_of(group)
    new = next(n for n in kafka_cluster.node_ids if n != old)
    host, port = kafka_cluster.address_of(old).split(":")
    with WireClient(host, int(port)) as c:
        _join_v3(c, group)
        kafka_cluster.wait_for_group(group, state="PreparingRebalance", members=1)
        assert not c.readable(0.2)  # parked
        kafka_cluster.move_coordinator(group, new)
        answer = c.recv()
        assert int(answer.error_code) == int(ErrorCode.NOT_COORDINATOR)
        _join_v3(c, group)  # the old coordinator answers at once from now on
        assert int(c.recv().error_code) == int(ErrorCode.NOT_COORDINATOR)
    # the join phase was never written: the new coordinator has no such group
    assert kafka_cluster.describe_group(group).state == "Dead"


def test_the_new_coordinator_answers_load_in_progress_until_the_partition_is_replayed(
    kafka_cluster: Cluster,
) -> None:
    group = "loading"
    p = kafka_cluster.coordinator_partition(group)
    old = kafka_cluster.coordinator_of(group)
    new = next(n for n in kafka_cluster.node_ids if n != old)
    app = kafka_cluster._app
    assert app is not None and app.nodes is not None
    nodes = app.nodes

    def describe_at(node: int) -> ErrorCode:
        answers: list[DescribeGroupsResponse] = []
        app.groups.coordinator.node = node
        app.groups.coordinator.describe_groups([group], answers.append)
        return answers[0].groups[0].error

    def heartbeat_at(node: int) -> ErrorCode:
        answers: list[HeartbeatResponse] = []
        app.groups.coordinator.node = node
        app.groups.coordinator.heartbeat(
            HeartbeatRequest(group_id=group, generation_id=1, member_id="m"), answers.append
        )
        return answers[0].error

    def move_and_probe() -> tuple[ErrorCode, ErrorCode, ErrorCode]:
        nodes.move_leader(OFFSETS_TOPIC, p, new)  # in this loop turn: the load has not run yet
        return describe_at(new), heartbeat_at(new), describe_at(old)

    # a heartbeat while loading is answered NONE, "blindly", as Kafka's classic coordinator does
    assert kafka_cluster._on_loop(move_and_probe) == (
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NONE,
        ErrorCode.NOT_COORDINATOR,
    )
    kafka_cluster._on_loop(nodes.settled)
    assert kafka_cluster._on_loop(lambda: describe_at(new)) == ErrorCode.NONE
    assert kafka_cluster._on_loop(lambda: heartbeat_at(new)) == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.kafka_cluster(settings={"offsets.topic.replication.factor": 1, "default.replication.factor": 1})
def test_a_coordinator_partition_without_a_live_replica_has_no_coordinator(kafka_cluster: Cluster) -> None:
    """One replica per partition: stopping its broker leaves the partition without a leader
    (no unclean election). FindCoordinator answers COORDINATOR_NOT_AVAILABLE
    (KafkaApis.getCoordinator), Metadata LEADER_NOT_AVAILABLE with leader -1; the broker's
    return makes it leader again; each leader change bumps the epoch, to no leader too
    (KRaft's PartitionRegistration.merge)."""
    group = "orphan"
    p = kafka_cluster.coordinator_partition(group)
    old = kafka_cluster.coordinator_of(group)
    survivor = next(n for n in kafka_cluster.node_ids if n != old)
    kafka_cluster.stop_broker(old)
    host, port = kafka_cluster.address_of(survivor).split(":")
    with WireClient(host, int(port)) as c:
        found = c.call(K.FIND_COORDINATOR, 3, key=group, key_type=0)
        assert (int(found.error_code), int(found.node_id)) == (int(ErrorCode.COORDINATOR_NOT_AVAILABLE), -1)
        meta = c.call(
            K.METADATA,
            12,
            topics=[{"name": OFFSETS_TOPIC, "topic_id": None}],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        part = next(x for x in meta.topics[0].partitions if int(x.partition_index) == p)
        assert (int(part.error_code), int(part.leader_id)) == (int(ErrorCode.LEADER_NOT_AVAILABLE), -1)
        assert [int(n) for n in part.offline_replicas] == [old]
    kafka_cluster.start_broker(old)
    assert kafka_cluster.coordinator_of(group) == old
    assert kafka_cluster.partition_state(OFFSETS_TOPIC, p)["leader_epoch"] == 2
