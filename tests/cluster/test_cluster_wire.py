"""Several brokers in one process, over the raw wire: what each node answers for partitions and
coordinators it does not lead, leader epochs, and OffsetForLeaderEpoch (docs/cluster.md).

One 3-broker :class:`~groupcoord.testing.Cluster` (in-process) serves the module; tests that move
leaders read the placement they need from the cluster first. Each answer is Kafka's:

* NOT_COORDINATOR from a node that is not the group's (or transactional id's) coordinator:
  ``GroupCoordinatorService`` answers it when the runtime has no shard for the partition there
  (``CoordinatorRuntime.scheduleWriteOperation`` -> ``NotCoordinatorException``);
  ``TransactionStateManager.getTransactionState`` likewise.
* NOT_LEADER_OR_FOLLOWER from a node that does not lead the partition (``ReplicaManager``),
  after the leader-epoch check of ``Partition.localLogWithEpochOrThrow`` (FENCED_LEADER_EPOCH for
  an older epoch, UNKNOWN_LEADER_EPOCH for a newer one: KIP-320); a consumer's Fetch v11+ is
  served by an in-sync follower (KIP-392, ``FetchParams.fetchOnlyLeader``).
* OffsetForLeaderEpoch: ``LeaderEpochFileCache.endOffsetFor`` (Kafka's
  ``LeaderEpochFileCacheTest.shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested``
  and ``shouldReturnUnsupportedIfRequestedEpochLessThanFirstEpoch`` describe the same cases).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.broker.cluster import place
from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.coordinator.records import partition_for
from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey as K
from groupcoord.protocol.client import WireClient
from groupcoord.testing import Cluster
from groupcoord.transactions.records import partition_for as txn_partition_for

TOPIC = "wire-cluster"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3) as c:
        c.create_topic(TOPIC, partitions=3, replication_factor=2)
        yield c


def client(cluster: Cluster, node: int) -> WireClient:
    host, port = cluster.address_of(node).split(":")
    return WireClient(host, int(port))


def metadata(cluster: Cluster, node: int, topics: list[str] | None, version: int = 12) -> Any:
    with client(cluster, node) as c:
        return c.call(
            K.METADATA,
            version,
            topics=None if topics is None else [{"name": t, "topic_id": None} for t in topics],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )


def test_metadata_lists_every_broker_and_each_partition_s_placement(cluster: Cluster) -> None:
    """Kafka's rack-unaware placement with start index and shift 0 (AdminUtils
    .assignReplicasToBrokersRackUnaware): partition p's replicas start at node p % 3; the
    preferred (first) replica leads at epoch 0; every node answers alike."""
    for node in cluster.node_ids:
        r = metadata(cluster, node, [TOPIC])
        assert sorted(int(b.node_id) for b in r.brokers) == [0, 1, 2]
        assert {int(b.node_id): int(b.port) for b in r.brokers} == {
            n: int(cluster.address_of(n).split(":")[1]) for n in cluster.node_ids
        }
        assert int(r.controller_id) == 0
        (t,) = r.topics
        parts = {int(p.partition_index): p for p in t.partitions}
        assert [tuple(int(n) for n in parts[p].replica_nodes) for p in range(3)] == [(0, 1), (1, 2), (2, 0)]
        for p in range(3):
            assert int(parts[p].leader_id) == int(parts[p].replica_nodes[0])
            assert int(parts[p].leader_epoch) == 0
            assert [int(n) for n in parts[p].isr_nodes] == [int(n) for n in parts[p].replica_nodes]
            assert tuple(parts[p].offline_replicas) == ()


def test_describe_cluster_names_every_broker_and_the_controller(cluster: Cluster) -> None:
    with client(cluster, 2) as c:
        r = c.call(K.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False, endpoint_type=1)
    assert int(r.error_code) == 0
    assert int(r.controller_id) == 0
    assert sorted(int(b.broker_id) for b in r.brokers) == [0, 1, 2]


def test_find_coordinator_for_many_groups_names_the_leader_of_partition_for_from_every_node(
    cluster: Cluster,
) -> None:
    """Any node answers FindCoordinator (v0-v6, batched from v4) with the leader of
    ``__consumer_offsets`` partition ``abs(hashCode) % offsets.topic.num.partitions``
    (KafkaApis.getCoordinator); the groups land on every broker."""
    groups = [f"group-{i}" for i in range(60)]
    n = int(cluster.settings["offsets.topic.num.partitions"])
    expected = {g: cluster.leader_of(OFFSETS_TOPIC, partition_for(g, n)) for g in groups}
    assert set(expected.values()) == {0, 1, 2}
    ports = {n_: int(cluster.address_of(n_).split(":")[1]) for n_ in cluster.node_ids}
    for node in cluster.node_ids:
        with client(cluster, node) as c:
            for version in range(0, 4):
                for g in groups[:10]:
                    r = c.call(K.FIND_COORDINATOR, version, key=g, key_type=0)
                    assert int(r.error_code) == 0
                    assert int(r.node_id) == expected[g]
                    assert int(r.port) == ports[expected[g]]
            for version in (4, 5, 6):
                r = c.call(K.FIND_COORDINATOR, version, key_type=0, coordinator_keys=groups)
                got = {x.key: int(x.node_id) for x in r.coordinators}
                assert got == expected
                assert {x.key: int(x.port) for x in r.coordinators} == {g: ports[expected[g]] for g in groups}


def test_find_coordinator_for_a_transactional_id_names_the_leader_of_its_partition(cluster: Cluster) -> None:
    """``__transaction_state`` does not exist before the first transaction: its partitions are
    placed as any other (the preferred leader of partition p is node p % 3)."""
    ids = [f"txn-{i}" for i in range(20)]
    expected = {t: place(txn_partition_for(t, 50), 3, (0, 1, 2))[0] for t in ids}
    assert set(expected.values()) == {0, 1, 2}
    with client(cluster, 1) as c:
        r = c.call(K.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=ids)
    assert {x.key: int(x.node_id) for x in r.coordinators} == expected


def _group_on(cluster: Cluster, node: int) -> str:
    """A group whose coordinator is ``node``."""
    for i in range(1000):
        g = f"probe-{node}-{i}"
        if cluster.coordinator_of(g) == node:
            return g
    raise AssertionError(f"no group coordinated by {node}")


def test_group_requests_on_a_node_that_is_not_the_coordinator_answer_not_coordinator(
    cluster: Cluster,
) -> None:
    group = _group_on(cluster, 1)
    wrong = 0
    nc = int(ErrorCode.NOT_COORDINATOR)
    with client(cluster, wrong) as c:
        join = c.call(
            K.JOIN_GROUP,
            5,
            group_id=group,
            session_timeout=10_000,
            rebalance_timeout=10_000,
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[{"name": "range", "metadata": b""}],
        )
        assert int(join.error_code) == nc
        hb = c.call(K.HEARTBEAT, 3, group_id=group, generation_id=1, member_id="m", group_instance_id=None)
        assert int(hb.error_code) == nc
        sync = c.call(
            K.SYNC_GROUP,
            3,
            group_id=group,
            generation_id=1,
            member_id="m",
            group_instance_id=None,
            assignments=[],
        )
        assert int(sync.error_code) == nc
        leave = c.call(
            K.LEAVE_GROUP, 3, group_id=group, members=[{"member_id": "m", "group_instance_id": None}]
        )
        assert int(leave.error_code) == nc
        commit = c.call(
            K.OFFSET_COMMIT,
            7,
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                {
                    "name": TOPIC,
                    "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
                }
            ],
        )
        assert int(commit.topics[0].partitions[0].error_code) == nc
        fetched = c.call(K.OFFSET_FETCH, 7, group_id=group, topics=None, require_stable=False)
        assert int(fetched.error_code) == nc
        described = c.call(K.DESCRIBE_GROUPS, 5, groups=[group], include_authorized_operations=False)
        assert int(described.groups[0].error_code) == nc
    with client(cluster, 1) as c:  # the coordinator answers
        fetched = c.call(K.OFFSET_FETCH, 7, group_id=group, topics=None, require_stable=False)
        assert int(fetched.error_code) == 0


def test_list_groups_lists_only_the_groups_each_node_coordinates(cluster: Cluster) -> None:
    """ListGroups is per broker (KafkaApis.handleListGroupsRequest lists the coordinator's own
    groups; the admin client asks every broker)."""
    groups = {node: _group_on(cluster, node) for node in cluster.node_ids}
    for node, group in groups.items():
        with client(cluster, node) as c:
            r = c.call(
                K.OFFSET_COMMIT,
                2,
                group_id=group,
                generation_id_or_member_epoch=-1,
                member_id="",
                retention_time_ms=-1,
                topics=[
                    {
                        "name": TOPIC,
                        "partitions": [
                            {"partition_index": 0, "committed_offset": 0, "committed_metadata": ""}
                        ],
                    }
                ],
            )
            assert int(r.topics[0].partitions[0].error_code) == 0
    for node, group in groups.items():
        with client(cluster, node) as c:
            listed = {g.group_id for g in c.call(K.LIST_GROUPS, 4, states_filter=[]).groups}
        assert group in listed
        assert not listed & {g for n, g in groups.items() if n != node}


def test_transaction_requests_on_a_node_that_is_not_the_coordinator_answer_not_coordinator(
    cluster: Cluster,
) -> None:
    tid = next(f"tx-{i}" for i in range(1000) if cluster.coordinator_of(f"tx-{i}", transactional=True) == 2)
    nc = int(ErrorCode.NOT_COORDINATOR)
    with client(cluster, 0) as c:
        r = c.call(
            K.INIT_PRODUCER_ID,
            4,
            transactional_id=tid,
            transaction_timeout=60_000,
            producer_id=-1,
            producer_epoch=-1,
        )
        assert int(r.error_code) == nc
        r = c.call(K.END_TXN, 3, transactional_id=tid, producer_id=1, producer_epoch=0, committed=True)
        assert int(r.error_code) == nc
    with client(cluster, 2) as c:
        r = c.call(
            K.INIT_PRODUCER_ID,
            4,
            transactional_id=tid,
            transaction_timeout=60_000,
            producer_id=-1,
            producer_epoch=-1,
        )
        assert int(r.error_code) == 0


def _list_offsets(c: WireClient, partition: int, epoch: int = -1, version: int = 7) -> Any:
    r = c.call(
        K.LIST_OFFSETS,
        version,
        replica_id=-1,
        isolation_level=0,
        topics=[
            {
                "name": TOPIC,
                "partitions": [
                    {"partition_index": partition, "current_leader_epoch": epoch, "timestamp": -1}
                ],
            }
        ],
    )
    return r.topics[0].partitions[0]


def _fetch(c: WireClient, partition: int, version: int, epoch: int = -1) -> Any:
    r = c.call(
        K.FETCH,
        version,
        replica_id=-1,
        max_wait=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        forgotten_topics_data=[],
        rack_id="",
        topics=[
            {
                "topic": TOPIC,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": epoch,
                        "fetch_offset": 0,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
    )
    return r.responses[0].partitions[0]


def _produce(c: WireClient, partition: int) -> int:
    from groupcoord.formats.batch import build_batch

    r = c.call(
        K.PRODUCE,
        9,
        transactional_id=None,
        acks=-1,
        timeout=30_000,
        topic_data=[
            {
                "name": TOPIC,
                "partition_data": [
                    {"index": partition, "records": build_batch([(None, b"v", ())], timestamp_ms=1)}
                ],
            }
        ],
    )
    return int(r.responses[0].partition_responses[0].error_code)


def test_produce_list_offsets_and_fetch_off_the_leader(cluster: Cluster) -> None:
    """Partition 0 has replicas (0, 1): node 2 holds no replica, node 1 follows."""
    state = cluster.partition_state(TOPIC, 0)
    leader, follower = state["replicas"]
    outsider = ({0, 1, 2} - set(state["replicas"])).pop()
    epoch = state["leader_epoch"]
    nl = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    with client(cluster, leader) as c:
        assert _produce(c, 0) == 0
        assert int(_list_offsets(c, 0, epoch).error_code) == 0
        assert int(_fetch(c, 0, 12, epoch).error_code) == 0
    for node in (follower, outsider):
        with client(cluster, node) as c:
            assert _produce(c, 0) == nl
            assert int(_list_offsets(c, 0, epoch).error_code) == nl
            assert int(_fetch(c, 0, 10, epoch).error_code) == nl  # before KIP-392: the leader only
    with client(cluster, follower) as c:  # v11+: an in-sync follower serves a consumer
        got = _fetch(c, 0, 12, epoch)
        assert int(got.error_code) == 0 and len(got.records) > 0
    with client(cluster, outsider) as c:
        assert int(_fetch(c, 0, 12, epoch).error_code) == nl


def test_stale_and_future_leader_epochs_are_fenced_and_unknown(cluster: Cluster) -> None:
    state = cluster.partition_state(TOPIC, 1)
    leader, other = state["replicas"]
    cluster.move_leader(TOPIC, 1, other)
    cluster.move_leader(TOPIC, 1, leader)
    now = cluster.partition_state(TOPIC, 1)
    assert now["leader"] == leader and now["leader_epoch"] == state["leader_epoch"] + 2
    epoch = now["leader_epoch"]
    with client(cluster, leader) as c:
        assert int(_list_offsets(c, 1, epoch - 1).error_code) == int(ErrorCode.FENCED_LEADER_EPOCH)
        assert int(_list_offsets(c, 1, epoch + 1).error_code) == int(ErrorCode.UNKNOWN_LEADER_EPOCH)
        assert int(_fetch(c, 1, 12, epoch - 1).error_code) == int(ErrorCode.FENCED_LEADER_EPOCH)
        assert int(_fetch(c, 1, 12, epoch + 1).error_code) == int(ErrorCode.UNKNOWN_LEADER_EPOCH)
        ok = _list_offsets(c, 1, epoch)
        assert int(ok.error_code) == 0 and int(ok.leader_epoch) == epoch
        assert int(_list_offsets(c, 1, -1).error_code) == 0  # no epoch stated: not checked


def _offset_for_epoch(c: WireClient, partition: int, epoch: int, current: int = -1, version: int = 4) -> Any:
    r = c.call(
        K.OFFSET_FOR_LEADER_EPOCH,
        version,
        replica_id=-1,
        topics=[
            {
                "topic": TOPIC,
                "partitions": [
                    {"partition": partition, "current_leader_epoch": current, "leader_epoch": epoch}
                ],
            }
        ],
    )
    return r.topics[0].partitions[0]


def test_offset_for_leader_epoch_answers_from_the_epoch_history(cluster: Cluster) -> None:
    """Three leader epochs of partition 2 with records in each: each epoch ends where the next
    began; the latest ends at the log end offset; an epoch never seen between two falls to the
    one before it; an epoch newer than the latest is undefined (-1, -1)."""
    state = cluster.partition_state(TOPIC, 2)
    a, b = state["replicas"]
    e0 = state["leader_epoch"]
    with client(cluster, a) as c:
        for _ in range(3):
            assert _produce(c, 2) == 0
    cluster.move_leader(TOPIC, 2, b)  # epoch e0+1 starts at the end of the first 3 records
    with client(cluster, b) as c:
        base = int(_list_offsets(c, 2, e0 + 1).offset)
        for _ in range(2):
            assert _produce(c, 2) == 0
    cluster.move_leader(TOPIC, 2, a)  # epoch e0+2
    with client(cluster, a) as c:
        end = int(_list_offsets(c, 2, e0 + 2).offset)
        assert end == base + 2
        first = _offset_for_epoch(c, 2, e0, current=e0 + 2)
        assert (int(first.error_code), int(first.leader_epoch), int(first.end_offset)) == (0, e0, base)
        second = _offset_for_epoch(c, 2, e0 + 1)
        assert (int(second.leader_epoch), int(second.end_offset)) == (e0 + 1, end)
        latest = _offset_for_epoch(c, 2, e0 + 2)
        assert (int(latest.leader_epoch), int(latest.end_offset)) == (e0 + 2, end)
        future = _offset_for_epoch(c, 2, e0 + 3)
        assert (int(future.error_code), int(future.leader_epoch), int(future.end_offset)) == (0, -1, -1)
        assert int(_offset_for_epoch(c, 2, e0, current=e0).error_code) == int(ErrorCode.FENCED_LEADER_EPOCH)
        assert int(_offset_for_epoch(c, 2, e0, current=e0 + 9).error_code) == int(
            ErrorCode.UNKNOWN_LEADER_EPOCH
        )
    with client(cluster, b) as c:  # a follower does not answer a consumer
        assert int(_offset_for_epoch(c, 2, e0).error_code) == int(ErrorCode.NOT_LEADER_OR_FOLLOWER)


def test_a_stopped_broker_leaves_the_metadata_and_its_partitions_move(cluster: Cluster) -> None:
    state = cluster.partition_state(TOPIC, 0)
    leader = state["leader"]
    other = next(r for r in state["replicas"] if r != leader)
    survivor = next(n for n in cluster.node_ids if n != leader)
    cluster.stop_broker(leader)
    try:
        r = metadata(cluster, survivor, [TOPIC])
        assert sorted(int(b.node_id) for b in r.brokers) == sorted(set(cluster.node_ids) - {leader})
        part = next(p for p in r.topics[0].partitions if int(p.partition_index) == 0)
        assert int(part.leader_id) == other
        assert int(part.leader_epoch) == state["leader_epoch"] + 1
        assert [int(n) for n in part.isr_nodes] == [other]
        assert [int(n) for n in part.offline_replicas] == [leader]
        with pytest.raises(OSError):
            client(cluster, leader).close()
    finally:
        cluster.start_broker(leader)
    back = cluster.partition_state(TOPIC, 0)
    assert back["leader"] == other  # a follower again until a preferred election
    assert sorted(back["isr"]) == sorted(state["replicas"])
    assert cluster.elect_preferred_leaders() >= 1
    assert cluster.partition_state(TOPIC, 0)["leader"] == leader


def test_create_topics_and_partitions_place_replicas_over_the_brokers(cluster: Cluster) -> None:
    """CreateTopics: a replication factor above the running brokers is INVALID_REPLICATION_FACTOR
    with Kafka's message; an explicit assignment is kept as given. CreatePartitions: new
    partitions' assignments must match the topic's replication factor
    (ReplicationControlManager.createPartitions)."""
    with client(cluster, 1) as c:
        r = c.call(
            K.CREATE_TOPICS,
            7,
            topics=[
                {
                    "name": "too-many",
                    "num_partitions": 1,
                    "replication_factor": 4,
                    "assignments": [],
                    "configs": [],
                },
                {
                    "name": "placed",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [2, 1]}],
                    "configs": [],
                },
            ],
            timeout_ms=10_000,
            validate_only=False,
        )
        by_name = {t.name: t for t in r.topics}
        assert int(by_name["too-many"].error_code) == int(ErrorCode.INVALID_REPLICATION_FACTOR)
        assert "only 3 broker(s) are registered" in str(by_name["too-many"].error_message)
        assert int(by_name["placed"].error_code) == 0
        assert int(by_name["placed"].replication_factor) == 2
        grow = c.call(
            K.CREATE_PARTITIONS,
            3,
            topics=[
                {"name": "placed", "count": 3, "assignments": [{"broker_ids": [0, 2]}, {"broker_ids": [1]}]},
            ],
            timeout=10_000,
            validate_only=False,
        )
        assert int(grow.results[0].error_code) == int(ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        grow = c.call(
            K.CREATE_PARTITIONS,
            3,
            topics=[
                {
                    "name": "placed",
                    "count": 3,
                    "assignments": [{"broker_ids": [0, 2]}, {"broker_ids": [1, 0]}],
                },
            ],
            timeout=10_000,
            validate_only=False,
        )
        assert int(grow.results[0].error_code) == 0
    assert [cluster.partition_state("placed", p)["replicas"] for p in range(3)] == [[2, 1], [0, 2], [1, 0]]
    assert [cluster.leader_of("placed", p) for p in range(3)] == [2, 0, 1]


def test_produce_v10_off_the_leader_names_the_leader_kip_951(cluster: Cluster) -> None:
    """KIP-951: Produce v10's NOT_LEADER_OR_FOLLOWER carries the partition's leader and leader
    epoch, and the response the leader's endpoint (KafkaApis.handleProduceRequest)."""
    from groupcoord.formats.batch import build_batch

    state = cluster.partition_state(TOPIC, 1)
    wrong = next(n for n in cluster.node_ids if n != state["leader"])
    with client(cluster, wrong) as c:
        r = c.call(
            K.PRODUCE,
            10,
            transactional_id=None,
            acks=-1,
            timeout=30_000,
            topic_data=[
                {
                    "name": TOPIC,
                    "partition_data": [
                        {"index": 1, "records": build_batch([(None, b"v", ())], timestamp_ms=1)}
                    ],
                }
            ],
        )
    part = r.responses[0].partition_responses[0]
    assert int(part.error_code) == int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert (int(part.current_leader.leader_id), int(part.current_leader.leader_epoch)) == (
        state["leader"],
        state["leader_epoch"],
    )
    assert [(int(e.node_id), int(e.port)) for e in r.node_endpoints] == [
        (state["leader"], int(cluster.address_of(state["leader"]).split(":")[1]))
    ]


def _fetch_v16(c: WireClient, topic_id: Any, partition: int, epoch: int, version: int = 16) -> Any:
    return c.call(
        K.FETCH,
        version,
        replica_id=-1,
        max_wait=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        forgotten_topics_data=[],
        rack_id="",
        topics=[
            {
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": epoch,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
    )


def test_fetch_v16_off_the_leader_names_the_leader_kip_951(cluster: Cluster) -> None:
    """KIP-951 for Fetch: from v16, a partition answered NOT_LEADER_OR_FOLLOWER or
    FENCED_LEADER_EPOCH carries the partition's current leader and leader epoch (the CurrentLeader
    tagged field) and the response that leader's endpoint (NodeEndpoints), as Kafka's
    ``KafkaApis.handleFetchRequest`` sets them (``versionId >= 16``, those two errors only); v15
    and UNKNOWN_LEADER_EPOCH carry no hint (the tagged fields keep their defaults)."""
    topic_id = next(t.topic_id for t in metadata(cluster, 0, [TOPIC]).topics if t.name == TOPIC)
    before = cluster.partition_state(TOPIC, 0)
    cluster.move_leader(TOPIC, 0, before["replicas"][1])  # two elections: an older epoch exists
    cluster.move_leader(TOPIC, 0, before["replicas"][0])
    state = cluster.partition_state(TOPIC, 0)
    leader, epoch = state["leader"], state["leader_epoch"]
    assert epoch == before["leader_epoch"] + 2
    outsider = ({0, 1, 2} - set(state["replicas"])).pop()
    leader_port = int(cluster.address_of(leader).split(":")[1])
    nl, fenced = int(ErrorCode.NOT_LEADER_OR_FOLLOWER), int(ErrorCode.FENCED_LEADER_EPOCH)

    def hint(r: Any) -> tuple[int, int, int]:
        p = r.responses[0].partitions[0]
        return int(p.error_code), int(p.current_leader.leader_id), int(p.current_leader.leader_epoch)

    def endpoints(r: Any) -> list[tuple[int, str, int]]:
        return [(int(e.node_id), e.host, int(e.port)) for e in r.node_endpoints]

    with client(cluster, outsider) as c:
        r = _fetch_v16(c, topic_id, 0, epoch)
        assert hint(r) == (nl, leader, epoch)
        assert endpoints(r) == [(leader, "127.0.0.1", leader_port)]
        r = _fetch_v16(c, topic_id, 0, epoch, version=15)
        assert hint(r) == (nl, -1, -1)  # v15 has no NodeEndpoints field at all
    with client(cluster, leader) as c:
        r = _fetch_v16(c, topic_id, 0, epoch - 1)
        assert hint(r) == (fenced, leader, epoch)
        assert endpoints(r) == [(leader, "127.0.0.1", leader_port)]
        r = _fetch_v16(c, topic_id, 0, epoch + 1)
        assert hint(r) == (int(ErrorCode.UNKNOWN_LEADER_EPOCH), -1, -1)
        assert endpoints(r) == []
        r = _fetch_v16(c, topic_id, 0, epoch)
        assert hint(r) == (0, -1, -1)
        assert endpoints(r) == []
