"""librdkafka 0045's topic-removal scenario with confluent-kafka 2.16 and ``group.protocol=consumer``.

librdkafka's own ``0045_subscribe_update_topic_remove`` fails under the consumer protocol against
any broker: it waits for an eager rebalance (a REVOKE, then an ASSIGN listing the whole remaining
assignment), and a consumer-protocol member's events are incremental (docs/protocol-coverage.md).
This test checks what the broker owes a member in that scenario instead: the deleted topic's
partitions, and only those, are revoked; the other topic's partitions are never taken away; the
group moves to a new epoch and reports the remaining assignment.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from groupcoord.client.types import TopicPartition as GroupPartition
from groupcoord.testing import Broker

pytestmark = pytest.mark.e2e

SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
}


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(SETTINGS) as b:
        b.create_topic("topic_f", 5)
        b.create_topic("topic_g", 9)
        yield b


def test_deleting_a_subscribed_topic_revokes_only_its_partitions(broker: Broker) -> None:
    """Subscribed to f (5 partitions) and g (9), the member owns all 14; f is deleted: the member
    is told to revoke f's 5 (one revoke event holding exactly them), g's 9 are never revoked, and
    the group's epoch is bumped with g's 9 as the member's whole assignment.

    Kafka 4.1: ``GroupMetadataManager.onNewMetadataImage`` marks every group subscribed to a
    deleted topic for a metadata refresh; the next heartbeat computes a new target assignment
    without the topic and bumps the group epoch (reference §3.6 and its table of epoch bumps,
    "Metadata of a subscribed topic changes"), and ``CurrentAssignmentBuilder`` moves the member
    to UNREVOKED_PARTITIONS with the topic's partitions pending revocation, keeping the rest."""
    revoked: list[set[tuple[str, int]]] = []
    assigned: list[set[tuple[str, int]]] = []

    def on_assign(_c: Consumer, parts: list[TopicPartition]) -> None:
        assigned.append({(tp.topic, tp.partition) for tp in parts})

    def on_revoke(_c: Consumer, parts: list[TopicPartition]) -> None:
        revoked.append({(tp.topic, tp.partition) for tp in parts})

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "rdk0045-topic-remove",
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    f = {("topic_f", p) for p in range(5)}
    g = {("topic_g", p) for p in range(9)}

    def owned() -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in consumer.assignment()}

    def poll_until(cond: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; owned {sorted(owned())}")
            consumer.poll(0.05)

    try:
        consumer.subscribe(["topic_f", "topic_g"], on_assign=on_assign, on_revoke=on_revoke)
        poll_until(lambda: owned() == f | g, "both topics' 14 partitions")
        assert revoked == [] and set().union(*assigned) == f | g
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        before = broker.describe_group("rdk0045-topic-remove")
        admin.delete_topics(["topic_f"])["topic_f"].result(30)
        poll_until(lambda: owned() == g, "topic_g's 9 partitions alone")
        assert revoked == [f]
        # any assign event after the deletion adds nothing: the 9 were kept, never handed back
        assert all(not a for a in assigned[1:])
        after = broker.wait_for_group("rdk0045-topic-remove", state="Stable", members=1)
        assert after.group_type == "consumer"
        assert before.group_epoch is not None and after.group_epoch is not None
        assert after.group_epoch > before.group_epoch and after.assignment_epoch == after.group_epoch
        (member,) = after.members
        want = frozenset(GroupPartition("topic_g", p) for p in range(9))
        assert (member.member_epoch, member.assignment, member.target_assignment) == (
            after.group_epoch,
            want,
            want,
        )
    finally:
        consumer.close()
