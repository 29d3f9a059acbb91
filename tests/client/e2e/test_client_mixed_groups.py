"""Our Consumer in groups with confluent-kafka, kafka-python and aiokafka members.

Each member is a real client in its own process (member_worker.py). For every assignor the
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

import pytest
from client_harness import Member, describe, new_name, partitioned_exactly, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import ClientBroker

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


def others_for(assignor: str) -> list[str]:
    clients = ["confluent", "kafka-python"]
    if assignor != "cooperative-sticky":
        clients.append("aiokafka")
    return clients


def run_mixed_group(broker: ClientBroker, assignor: str, ours_leads: bool) -> None:
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
        for client in others_for(assignor):
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
        for m in members:
            assert m.close() == 0, m.tail()
            assert m.saw("closed")

        # commits resumed after a restart: only the new records are read
        produce(broker.bootstrap, topic, 10, PARTITIONS)
        again = start("groupcoord")
        wait_for(
            lambda: len(again.records()) >= 10 * PARTITIONS,
            what=lambda: f"restart reads the new records: {describe([again])}",
        )
        assert sorted(again.records()) == sorted(
            (p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION, PER_PARTITION + 10)
        )
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
