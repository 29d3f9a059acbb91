"""The cluster model and its test kit: placement, leader epochs, ISR, preferred leaders, the
``kafka_cluster`` fixture, ``Cluster(subprocess=True)`` and ``groupcoord serve --brokers N``."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from groupcoord.app import BrokerApp, StartupError
from groupcoord.broker.cluster import ClusterMetadata, place, rack_alternated
from groupcoord.config import BrokerConfig
from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.client import WireClient
from groupcoord.testing import Cluster


def test_placement_is_kafkas_rack_unaware_assignment_from_index_0() -> None:
    """Kafka's ``AdminUtilsTest.testReplicaAssignment``: 5 brokers, 10 partitions, replication
    factor 3, fixed start index 0."""
    expected = {
        0: (0, 1, 2),
        1: (1, 2, 3),
        2: (2, 3, 4),
        3: (3, 4, 0),
        4: (4, 0, 1),
        5: (0, 2, 3),
        6: (1, 3, 4),
        7: (2, 4, 0),
        8: (3, 0, 1),
        9: (4, 1, 2),
    }
    assert {p: place(p, 3, (0, 1, 2, 3, 4)) for p in range(10)} == expected


def test_with_racks_placement_is_kafkas_rack_aware_assignment() -> None:
    """Kafka's ``AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers``:
    the rack-alternated node list, then 7 partitions of replication factor 3 from index 0."""
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated(tuple(range(6)), racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated(tuple(range(5)), racks) == [0, 3, 1, 4, 2]
    expected = {
        0: (0, 3, 1),
        1: (3, 1, 5),
        2: (1, 5, 4),
        3: (5, 4, 2),
        4: (4, 2, 0),
        5: (2, 0, 3),
        6: (0, 4, 2),
    }
    assert {p: place(p, 3, tuple(range(6)), racks) for p in range(7)} == expected
    cluster = ClusterMetadata(range(6), racks=racks, default_replication_factor=3)
    assert cluster.partition("t", 6).replicas == (0, 4, 2)


def test_internal_topics_replication_is_capped_at_the_number_of_brokers() -> None:
    cluster = ClusterMetadata(range(2), internal_replication_factor=3)
    assert cluster.partition(OFFSETS_TOPIC, 0).replicas == (0, 1)
    assert cluster.partition("user", 0).replicas == (0,)  # default.replication.factor 1


def test_leader_changes_bump_the_epoch_and_record_where_each_began() -> None:
    ends = {"t": 0}
    cluster = ClusterMetadata(range(3), default_replication_factor=3, log_end_offset=lambda _t, _p: ends["t"])
    changes: list[tuple[str, int, int, int]] = []
    cluster.leadership_listeners.append(lambda *c: changes.append(c))
    assert cluster.partition("t", 0).leader == 0
    ends["t"] = 5
    cluster.elect("t", 0, 1)
    ends["t"] = 9
    cluster.stop(1)  # leader 1 goes: the first live in-sync replica in replica order
    state = cluster.partition("t", 0)
    assert (state.leader, state.leader_epoch, state.isr) == (0, 2, [0, 2])
    assert state.epochs == [(0, 0), (1, 5), (2, 9)]
    assert changes == [("t", 0, 0, 1), ("t", 0, 1, 0)]
    ends["t"] = 12
    assert cluster.end_offset_for("t", 0, 0) == (0, 5)
    assert cluster.end_offset_for("t", 0, 1) == (1, 9)
    assert cluster.end_offset_for("t", 0, 2) == (2, 12)
    assert cluster.end_offset_for("t", 0, 3) == (-1, -1)
    cluster.stop(2)
    cluster.stop(0)  # no live replica left: no leader; the last ISR member stays in the ISR
    state = cluster.partition("t", 0)
    assert (state.leader, state.isr) == (-1, [0])
    cluster.start(2)  # not in the last ISR: no unclean election
    assert cluster.partition("t", 0).leader == -1
    assert cluster.partition("t", 0).leader_epoch == 3  # no leader: an epoch of its own
    cluster.start(0)
    state = cluster.partition("t", 0)
    assert (state.leader, state.leader_epoch, sorted(state.isr)) == (0, 4, [0, 2])
    assert state.epochs[-1] == (4, 12)


def test_cluster_state_survives_a_restart_without_going_back_in_epochs(tmp_path: Path) -> None:
    first = ClusterMetadata(range(3), default_replication_factor=2, state_dir=tmp_path)
    first.known([("t", 2)])
    first.elect("t", 0, 1)
    first.elect("t", 0, 0)
    again = ClusterMetadata(range(3), default_replication_factor=2, state_dir=tmp_path)
    state = again.partition("t", 0)
    assert (state.leader, state.leader_epoch, state.replicas) == (0, 2, (0, 1))


def test_node_i_listens_on_each_listeners_port_plus_i(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:19092"})
    app = BrokerApp(config=config, data_dir=tmp_path, brokers=3)
    try:
        assert [app.node_servers[n][0].port for n in (0, 1, 2)] == [19092, 19093, 19094]
        assert [app.node_servers[n][0].security.node_id for n in (0, 1, 2)] == [0, 1, 2]
    finally:
        app.broker.logs.close()


def test_a_replication_factor_above_the_brokers_stops_startup_naming_the_key(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties({"default.replication.factor": "3"})
    with pytest.raises(StartupError, match=r"default\.replication\.factor"):
        BrokerApp(config=config, data_dir=tmp_path, brokers=2)
    with pytest.raises(StartupError, match=r"broker\.rack"):
        BrokerApp(config=BrokerConfig.from_properties({"broker.rack": "a,b"}), data_dir=tmp_path, brokers=3)


@pytest.mark.kafka_cluster(brokers=2, racks=["rack-a", "rack-b"])
def test_the_kafka_cluster_fixture_reports_racks(kafka_cluster: Cluster) -> None:
    assert kafka_cluster.node_ids == (0, 1)
    host, port = kafka_cluster.address_of(1).split(":")
    with WireClient(host, int(port)) as c:
        r = c.call(ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False, endpoint_type=1)
    assert {int(b.broker_id): b.rack for b in r.brokers} == {0: "rack-a", 1: "rack-b"}


def test_auto_leader_rebalance_gives_leaderships_back_at_the_imbalance_check() -> None:
    """``auto.leader.rebalance.enable``: a returning broker is a follower until the periodic
    check (``leader.imbalance.check.interval.seconds``, on the broker's clock) finds it leads
    less than its share and elects it again (QuorumController.maybeBalancePartitionLeaders)."""
    settings = {"auto.leader.rebalance.enable": True, "leader.imbalance.check.interval.seconds": 600}
    with Cluster(brokers=3, settings=settings) as cluster:
        cluster.create_topic("t", partitions=3, replication_factor=3)
        cluster.stop_broker(0)
        cluster.start_broker(0)
        assert cluster.leader_of("t", 0) == 1
        cluster.advance(601)
        assert cluster.leader_of("t", 0) == 0
        assert cluster.partition_state("t", 0)["leader_epoch"] == 2


def test_a_subprocess_cluster_moves_and_stops_like_an_in_process_one() -> None:
    with Cluster(brokers=3, subprocess=True) as cluster:
        group = "sub-group"
        first = cluster.coordinator_of(group)
        target = (first + 1) % 3
        cluster.move_coordinator(group, target)
        assert cluster.coordinator_of(group) == target
        cluster.stop_broker(target)
        assert cluster.alive() == sorted(set(cluster.node_ids) - {target})
        assert cluster.coordinator_of(group) not in (target, -1)
        cluster.start_broker(target)
        assert cluster.alive() == [0, 1, 2]
        ports = list(cluster.ports)
        cluster.restart()  # the child is started again on the ports it had
        assert cluster.ports == ports
        assert cluster.alive() == [0, 1, 2]


def test_groupcoord_serve_brokers_3_answers_metadata_with_three_brokers(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "groupcoord", "serve", "--brokers", "3", "--listen", "127.0.0.1:0"]
    argv += ["--data-dir", str(tmp_path / "data")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""))
        reader.start()
        reader.join(30)
        assert line and line[0].startswith("groupcoord listening on "), line
        host, port = line[0].strip().rsplit(" ", 1)[1].rsplit(":", 1)
        with WireClient(host, int(port)) as c:
            r = c.call(
                ApiKey.METADATA,
                12,
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        assert sorted(int(b.node_id) for b in r.brokers) == [0, 1, 2]
        assert len({int(b.port) for b in r.brokers}) == 3
        assert int(r.controller_id) == 0
    finally:
        proc.terminate()
        assert proc.wait(30) == 0


def test_a_restarted_cluster_keeps_its_ports_and_never_goes_back_in_leader_epochs() -> None:
    """Clients keep the addresses they bootstrapped with, and refuse metadata older than what
    they have seen: after a restart every node is on its port again, the preferred leader leads
    at a newer epoch, and records written before are there."""
    with Cluster(brokers=3) as cluster:
        cluster.create_topic("t", partitions=1, replication_factor=3)
        cluster.produce("t", [b"before"])
        cluster.move_leader("t", 0, 2)
        ports = list(cluster.ports)
        assert cluster.partition_state("t", 0)["leader_epoch"] == 1
        cluster.restart(hard=True)
        assert cluster.ports == ports
        assert cluster.alive() == [0, 1, 2]
        state = cluster.partition_state("t", 0)
        assert (state["leader"], state["leader_epoch"]) == (0, 2)
        assert [r.value for r in cluster.records("t")] == [b"before"]
