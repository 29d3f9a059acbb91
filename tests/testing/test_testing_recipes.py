"""The recipes of docs/testing.md, run as written there (confluent-kafka)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as CTopicPartition

from groupcoord.testing import Broker, EventReason, TopicPartition


def poll_until(consumer: Consumer, pred: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        consumer.poll(0.05)


def test_recipe_rebalance_listener_commits_what_was_processed_when_partitions_are_revoked(
    kafka_broker: Broker,
) -> None:
    """The application's on_revoke commits its processed offsets: when a second member joins,
    the first one's partitions are revoked and the commit lands before they move."""
    kafka_broker.create_topic("orders", 2)
    kafka_broker.produce("orders", [b"a", b"b"], partition=0)
    kafka_broker.produce("orders", [b"c"], partition=1)
    processed: dict[tuple[str, int], int] = {}
    revoked: list[list[tuple[str, int]]] = []

    def on_revoke(c: Consumer, parts: list[CTopicPartition]) -> None:
        revoked.append(sorted((p.topic, p.partition) for p in parts))
        mine = [
            CTopicPartition(t, p, processed[(t, p)]) for t, p in sorted(processed) if (t, p) in revoked[-1]
        ]
        if mine:
            c.commit(offsets=mine, asynchronous=False)

    config = {
        "bootstrap.servers": kafka_broker.bootstrap,
        "group.id": "app",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    first = Consumer({**config, "client.id": "first"})
    second = Consumer({**config, "client.id": "second"})
    try:
        first.subscribe(["orders"], on_revoke=on_revoke)

        deadline = time.monotonic() + 30
        while sum(processed.values()) < 3:
            assert time.monotonic() < deadline, f"consumed only {processed}"
            msg = first.poll(0.05)
            if msg is not None and msg.error() is None:
                processed[(msg.topic(), msg.partition())] = msg.offset() + 1
        generation = kafka_broker.wait_for_group("app", members=1).generation
        assert generation is not None

        second.subscribe(["orders"])
        deadline = time.monotonic() + 60
        while True:  # both poll (the group protocol runs in poll) until the next generation is Stable
            state = kafka_broker.describe_group("app")
            if state.state == "Stable" and len(state.members) == 2 and (state.generation or 0) > generation:
                break
            assert time.monotonic() < deadline, f"the group did not settle with two members: {state}"
            first.poll(0.05)
            second.poll(0.05)

        assert revoked and revoked[0] == [("orders", 0), ("orders", 1)]  # eager: all revoked
        assert kafka_broker.committed("app") == {
            TopicPartition("orders", 0): 2,
            TopicPartition("orders", 1): 1,
        }
    finally:
        first.close()
        second.close()


def test_recipe_slow_consumer_exceeding_max_poll_interval_leaves_the_group(kafka_broker: Broker) -> None:
    """max.poll.interval.ms runs on the client's clock (advance() cannot move it): with it at
    1.5 s, a consumer that stops calling poll() leaves the group by itself (librdkafka sends
    LeaveGroup, Kafka's client does too: ``maybeLeaveGroup`` on poll timeout), and its next
    poll() reports _MAX_POLL_EXCEEDED."""
    kafka_broker.create_topic("orders", 1)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap,
            "group.id": "app",
            "client.id": "slow",
            "session.timeout.ms": 1000,
            "heartbeat.interval.ms": 100,  # the session stays alive: only max.poll.interval runs out
            "max.poll.interval.ms": 1500,
        }
    )
    try:
        consumer.subscribe(["orders"])
        poll_until(consumer, lambda: bool(consumer.assignment()))
        member = kafka_broker.wait_for_group("app", members=1).member("slow").member_id

        # The "slow processing": no poll() while the group is watched.
        kafka_broker.wait_for_group("app", state="Empty", members=0)

        left = [e for e in kafka_broker.events("app") if e.type == "member_removed"]
        assert [(e.member_id, e.reason) for e in left] == [(member, EventReason.MEMBER_LEFT)]
        msg = consumer.poll(5)
        assert msg is not None and msg.error() is not None
        assert msg.error().code() == KafkaError._MAX_POLL_EXCEEDED
    finally:
        consumer.close()


def test_recipe_static_member_restarts_without_a_rebalance_and_expires_by_session(
    kafka_broker: Broker,
) -> None:
    """A static member (group.instance.id) that closes and comes back within its session
    keeps its partitions and the generation (Kafka: GroupCoordinator
    ``updateStaticMemberAndRebalance``; librdkafka sends no LeaveGroup for a static member);
    one that does not come back is removed when its session expires (advance)."""
    kafka_broker.create_topic("orders", 2)
    config = {
        "bootstrap.servers": kafka_broker.bootstrap,
        "group.id": "app",
        "client.id": "static",
        "group.instance.id": "instance-1",
        "session.timeout.ms": 45_000,
    }
    consumer = Consumer(config)
    consumer.subscribe(["orders"])
    poll_until(consumer, lambda: bool(consumer.assignment()))
    before = kafka_broker.wait_for_group("app", members=1)
    consumer.close()

    consumer = Consumer(config)
    try:
        consumer.subscribe(["orders"])
        poll_until(consumer, lambda: bool(consumer.assignment()))
        after = kafka_broker.wait_for_group("app", members=1)
        assert after.generation == before.generation
        assert after.member("instance-1").assignment == before.member("instance-1").assignment
        replaced = [e for e in kafka_broker.events("app") if e.reason == EventReason.STATIC_MEMBER_REPLACED]
        assert replaced
    finally:
        consumer.close()

    kafka_broker.advance(46)

    gone = kafka_broker.wait_for_group("app", state="Empty", members=0)
    assert gone.members == ()
    expired = [e for e in kafka_broker.events("app") if e.type == "member_removed"]
    assert [(e.group_instance_id, e.reason) for e in expired][-1] == (
        "instance-1",
        EventReason.SESSION_TIMEOUT,
    )
