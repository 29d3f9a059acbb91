"""groupcoord.testing with real clients: time control, injected faults, hard restarts.

Every test uses the plugin's own fixtures (``kafka_broker``), so it also shows that the
``pytest11`` entry point is installed and that the fixtures work for a user.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_testing import Polling, confluent_config

from groupcoord.testing import Broker, EventReason, GroupEvent, TopicPartition


def wait_until(pred: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def consumers() -> Iterator[list[Polling]]:
    made: list[Polling] = []
    yield made
    for c in made:
        c.close()


def test_advance_past_a_45s_session_expires_the_confluent_member_and_the_group_rebalances(
    kafka_broker: Broker, consumers: list[Polling]
) -> None:
    """advance(46) fires the session timer of a member whose client (librdkafka, heartbeating
    every 3 s on its own clock) sent nothing in those 46 broker seconds: the coordinator
    removes it with reason session_timeout and rebalances to the next generation (Kafka:
    GroupMetadataManager/GroupCoordinator ``onExpireHeartbeat`` -> ``removeMemberAndUpdateGroup``
    -> ``prepareRebalance``; tests GroupCoordinatorTest.testSessionTimeout). Wall time is the
    clients' rejoin only."""
    kafka_broker.create_topic("orders", 2)
    c = Polling(confluent_config(kafka_broker, "app", "app-1", **{"session.timeout.ms": 45_000}), ["orders"])
    consumers.append(c)
    before = kafka_broker.wait_for_group("app", members=1)
    member = before.member("app-1").member_id
    assert before.generation is not None
    started = time.monotonic()

    kafka_broker.advance(46)

    def expired_members() -> list[GroupEvent]:
        return [
            e
            for e in kafka_broker.events("app")
            if e.type == "member_removed" and e.reason == EventReason.SESSION_TIMEOUT
        ]

    wait_until(lambda: bool(expired_members()), "the session_timeout event")
    expired = expired_members()
    assert [(e.member_id, e.generation) for e in expired] == [(member, before.generation)]
    # The client learns of it from its next heartbeat and joins again as a new member.
    after = kafka_broker.wait_for_group("app", members=1, generation_at_least=before.generation + 1)
    assert after.member("app-1").member_id != member
    assert after.member("app-1").assignment == {TopicPartition("orders", 0), TopicPartition("orders", 1)}
    assert time.monotonic() - started < 40  # far below the 45 s the session would take


def test_fail_next_offset_commit_makes_a_confluent_sync_commit_raise_rebalance_in_progress(
    kafka_broker: Broker,
) -> None:
    """The injected error comes back as the partition's error of the OffsetCommit answer, which
    librdkafka turns into a KafkaException from a synchronous commit; the commit is not applied
    and the next one goes through."""
    kafka_broker.create_topic("orders", 1)
    kafka_broker.produce("orders", [b"a", b"b", b"c"])
    consumer = Consumer(confluent_config(kafka_broker, "app", "app-1"))
    try:
        consumer.subscribe(["orders"])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert got == [b"a", b"b", b"c"]
        kafka_broker.fail_next("OffsetCommit", "REBALANCE_IN_PROGRESS", group="app")

        with pytest.raises(KafkaException) as raised:
            consumer.commit(asynchronous=False)

        assert raised.value.args[0].code() == KafkaError.REBALANCE_IN_PROGRESS
        assert kafka_broker.committed("app") == {}
        consumer.commit(asynchronous=False)
        assert kafka_broker.committed("app") == {TopicPartition("orders", 0): 3}
    finally:
        consumer.close()


def test_drop_heartbeats_makes_one_of_two_members_lose_its_partitions_to_the_other(
    kafka_broker: Broker, consumers: list[Polling]
) -> None:
    """Only the silent member's session runs out (3 s, by the broker's own timer, while the
    other heartbeats every 100 ms): the group rebalances without it and the survivor is
    assigned both partitions (Kafka: GroupCoordinator ``onExpireHeartbeat``; the rebalance
    completes with the members that rejoined). Once the rule is cleared the dropped member's
    next heartbeat is answered UNKNOWN_MEMBER_ID, it rejoins and gets one partition back."""
    kafka_broker.create_topic("orders", 2)
    config = {"session.timeout.ms": 3_000, "heartbeat.interval.ms": 100}
    both = {TopicPartition("orders", 0), TopicPartition("orders", 1)}
    a = Polling(confluent_config(kafka_broker, "app", "a", **config), ["orders"])
    b = Polling(confluent_config(kafka_broker, "app", "b", **config), ["orders"])
    consumers += [a, b]
    state = kafka_broker.wait_for_group("app", members=2)
    assert len(state.member("a").assignment) == len(state.member("b").assignment) == 1
    assert state.generation is not None
    b_id = state.member("b").member_id

    kafka_broker.drop_heartbeats("app", "b")

    alone = kafka_broker.wait_for_group("app", members=1, generation_at_least=state.generation + 1)
    assert alone.member("a").assignment == both
    wait_until(lambda: a.owned() == {("orders", 0), ("orders", 1)}, "a to be assigned both partitions")
    removed = [e for e in kafka_broker.events("app") if e.type == "member_removed"]
    assert [(e.member_id, e.reason) for e in removed] == [(b_id, EventReason.SESSION_TIMEOUT)]

    kafka_broker.clear_faults()

    again = kafka_broker.wait_for_group("app", members=2, generation_at_least=alone.generation + 1)  # type: ignore[operator]
    assert len(again.member("a").assignment) == len(again.member("b").assignment) == 1


def test_restart_hard_keeps_committed_offsets_and_a_consumer_resumes_from_them(
    kafka_broker: Broker,
) -> None:
    """A hard restart (the loop stops where it is: no flush, no clean-shutdown marker) recovers
    the committed offsets from ``__consumer_offsets``; a new consumer starts at them."""
    kafka_broker.create_topic("orders", 1)
    kafka_broker.produce("orders", [b"1", b"2", b"3", b"4"])
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=kafka_broker.bootstrap,
        group_id="app",
        client_id="app-1",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20_000,
    )
    got = []
    for msg in consumer:
        got.append(msg.value)
        if len(got) == 2:
            break
    consumer.commit()
    consumer.close()
    assert got == [b"1", b"2"]
    assert kafka_broker.committed("app") == {TopicPartition("orders", 0): 2}
    port = kafka_broker.port
    # the commit was fsynced, so the crashed broker's fsync thread is running
    crashed_flusher = kafka_broker._app.broker.flusher  # type: ignore[union-attr]
    crashed_thread = crashed_flusher._worker

    kafka_broker.restart(hard=True)

    assert kafka_broker.port == port
    # the crash ended that thread without a flush (a crashed process's threads die with it)
    assert crashed_thread is not None and not crashed_thread.is_alive()
    assert kafka_broker.committed("app") == {TopicPartition("orders", 0): 2}
    again = KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap,
        group_id="app",
        client_id="app-2",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        tp = KTopicPartition("orders", 0)
        again.assign([tp])
        assert again.position(tp) == 2
    finally:
        again.close()


@pytest.mark.kafka_broker(settings={"group.initial.rebalance.delay.ms": 60_000})
def test_advance_ends_the_initial_rebalance_delay(kafka_broker: Broker, consumers: list[Polling]) -> None:
    """With a one-minute initial delay the first join waits in PreparingRebalance; advancing
    past it completes the join at once (Kafka: GroupCoordinator ``InitialDelayedJoin``)."""
    kafka_broker.create_topic("orders", 1)
    c = Polling(confluent_config(kafka_broker, "app", "app-1"), ["orders"])
    consumers.append(c)
    kafka_broker.wait_for_group("app", state="PreparingRebalance", members=1)
    assert c.owned() == set()

    kafka_broker.advance(60)

    state = kafka_broker.wait_for_group("app", state="Stable", members=1)
    assert state.member("app-1").assignment == {TopicPartition("orders", 0)}


@pytest.mark.kafka_broker(
    settings={"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000}
)
def test_advance_past_offset_retention_expires_the_offsets_of_an_empty_group(kafka_broker: Broker) -> None:
    """Offsets of a group without members expire ``offsets.retention.minutes`` after the group
    became Empty, at the next retention check (Kafka: GroupMetadataManager
    ``cleanupGroupMetadata``; GroupMetadata.removeExpiredOffsets); advance() gets there at once."""
    from kafka import KafkaConsumer

    kafka_broker.create_topic("orders", 1)
    kafka_broker.produce("orders", [b"1"])
    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=kafka_broker.bootstrap,
        group_id="app",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20_000,
    )
    assert next(consumer).value == b"1"
    consumer.commit()
    consumer.close()
    kafka_broker.wait_for_group("app", state="Empty", members=0)
    assert kafka_broker.committed("app") == {TopicPartition("orders", 0): 1}

    kafka_broker.advance(30)
    assert kafka_broker.committed("app") == {TopicPartition("orders", 0): 1}  # not yet due
    kafka_broker.advance(32)

    # The expiry writes tombstones; the offsets go once they are durable, moments later.
    wait_until(lambda: kafka_broker.committed("app") == {}, "the offsets to expire")
    wait_until(
        lambda: any(e.reason == EventReason.OFFSETS_EXPIRED for e in kafka_broker.events("app")),
        "the offsets_expired event",
    )
