"""Real clients on a 3-broker cluster whose group coordinator moves and stops (docs/cluster.md).

For each of confluent-kafka, kafka-python, aiokafka and groupcoord's own ``Consumer``:

* **steady consumption**: a stable two-member group's coordinator is moved to another broker,
  then its broker is stopped. The members find the new coordinator (NOT_COORDINATOR, then
  FindCoordinator: seed 002), the generation stays what it was (the new coordinator loads the
  group from ``__consumer_offsets``: Kafka's ``GroupMetadataManager`` replay, a Stable group
  keeps its generation), the committed offsets read from the new coordinator are the ones
  committed to the old, and every produced record is consumed.
* **during a rebalance**: a third member joins; while the group is between JoinGroup and
  SyncGroup (the JoinGroup answers are held by the test's fault injection), the coordinator is
  moved (or its broker stopped). The old shard unloads (its waiting members answered
  NOT_COORDINATOR), the new one loads the last generation stored, the members rejoin there and
  the group settles with three members in a newer generation; nothing produced is lost.

Kafka's own ``ConsumerBounceTest.testConsumptionWithBrokerFailures`` and
``testCoordinatorFailover`` are the model: consumption continues across coordinator loss.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cluster_clients import MEMBERS, consumed, end_offsets, produce, wait_committed, wait_until

from groupcoord.testing import Cluster

TOPIC = "orders"
PARTITIONS = 3


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3) as c:
        c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
        yield c


def _other(cluster: Cluster, node: int) -> int:
    return next(n for n in cluster.node_ids if n != node)


@pytest.mark.parametrize("client", sorted(MEMBERS))
def test_coordinator_moved_and_stopped_during_steady_consumption(cluster: Cluster, client: str) -> None:
    group = f"steady-{client}"
    members = [MEMBERS[client](cluster.bootstrap, group, TOPIC, f"{client}-{i}") for i in range(2)]
    for m in members:
        m.start()
    try:
        produced = set(produce(cluster.bootstrap, TOPIC, [b"a%d" % i for i in range(60)], PARTITIONS))
        view = cluster.wait_for_group(group, members=2)
        generation = view.generation
        wait_until("the first records", lambda: consumed(members) >= produced)
        wait_committed(cluster, group, end_offsets(cluster, TOPIC, PARTITIONS))
        before = cluster.committed(group)

        old = cluster.coordinator_of(group)
        cluster.move_coordinator(group, _other(cluster, old))
        assert cluster.coordinator_of(group) == _other(cluster, old)
        assert cluster.committed(group) == before  # read from the new coordinator

        produced |= set(produce(cluster.bootstrap, TOPIC, [b"b%d" % i for i in range(60)], PARTITIONS))
        wait_until("the records after the move", lambda: consumed(members) >= produced)
        wait_committed(cluster, group, end_offsets(cluster, TOPIC, PARTITIONS))
        view = cluster.wait_for_group(group, members=2)
        assert view.generation == generation

        lost = cluster.coordinator_of(group)
        cluster.stop_broker(lost)
        assert cluster.coordinator_of(group) not in (lost, -1)
        produced |= set(produce(cluster.bootstrap, TOPIC, [b"c%d" % i for i in range(60)], PARTITIONS))
        wait_until("the records after the stop", lambda: consumed(members) >= produced)
        wait_committed(cluster, group, end_offsets(cluster, TOPIC, PARTITIONS))
        view = cluster.wait_for_group(group, members=2)
        assert view.generation == generation
        cluster.start_broker(lost)
    finally:
        for m in members:
            m.stop()
    assert consumed(members) == produced


@pytest.mark.parametrize("how", ["move", "stop"])
@pytest.mark.parametrize("client", sorted(MEMBERS))
def test_coordinator_moved_or_stopped_during_a_rebalance(cluster: Cluster, client: str, how: str) -> None:
    group = f"rebalance-{client}-{how}"
    members = [MEMBERS[client](cluster.bootstrap, group, TOPIC, f"{client}-{i}") for i in range(2)]
    for m in members:
        m.start()
    try:
        produced = set(produce(cluster.bootstrap, TOPIC, [b"a%d" % i for i in range(30)], PARTITIONS))
        generation = cluster.wait_for_group(group, members=2).generation
        assert generation is not None
        wait_until("the first records", lambda: consumed(members) >= produced)

        cluster.delay("JoinGroup", 3.0, group=group)  # hold the join phase's answers
        third = MEMBERS[client](cluster.bootstrap, group, TOPIC, f"{client}-2")
        members.append(third)
        third.start()
        cluster.wait_for_group(group, state="CompletingRebalance", members=3, timeout=30)

        old = cluster.coordinator_of(group)
        if how == "move":
            cluster.move_coordinator(group, _other(cluster, old))
        else:
            cluster.stop_broker(old)
        cluster.clear_faults()
        assert cluster.coordinator_of(group) not in (old, -1)

        view = cluster.wait_for_group(group, members=3, generation_at_least=generation + 1, timeout=60)
        assert view.state == "Stable"
        produced |= set(produce(cluster.bootstrap, TOPIC, [b"b%d" % i for i in range(60)], PARTITIONS))
        wait_until("every record", lambda: consumed(members) >= produced)
        wait_committed(cluster, group, end_offsets(cluster, TOPIC, PARTITIONS))
        if how == "stop":
            cluster.start_broker(old)
    finally:
        for m in members:
            m.stop()
    assert consumed(members) == produced


@pytest.mark.parametrize("client", sorted(MEMBERS))
def test_partition_leaders_moved_during_consumption(cluster: Cluster, client: str) -> None:
    """Every partition's leader moves twice while a group consumes: the members are answered
    NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, refresh their metadata, validate their positions
    (OffsetForLeaderEpoch, where the client does) and go on from where they were: every record is
    consumed, none skipped (Kafka's ``ConsumerBounceTest`` with leader changes)."""
    group = f"leaders-{client}"
    members = [MEMBERS[client](cluster.bootstrap, group, TOPIC, f"{client}-{i}") for i in range(2)]
    for m in members:
        m.start()
    try:
        produced = set(produce(cluster.bootstrap, TOPIC, [b"a%d" % i for i in range(60)], PARTITIONS))
        cluster.wait_for_group(group, members=2)
        wait_until("the first records", lambda: consumed(members) >= produced)
        for shift in (1, 2):
            for p in range(PARTITIONS):
                cluster.move_leader(TOPIC, p, (p + shift) % 3)
            produced |= set(
                produce(cluster.bootstrap, TOPIC, [b"s%d-%d" % (shift, i) for i in range(60)], PARTITIONS)
            )
            want = frozenset(produced)
            wait_until(f"the records after move {shift}", lambda want=want: consumed(members) >= want)
        wait_committed(cluster, group, end_offsets(cluster, TOPIC, PARTITIONS))
    finally:
        for m in members:
            m.stop()
    assert consumed(members) == produced
    for p in range(PARTITIONS):  # in each member, a partition's offsets only grow
        for m in members:
            offsets = [o for q, o, _v in m.seen if q == p]
            assert offsets == sorted(offsets)
