"""fail_next / disconnect on the data-path APIs, seen by real clients (confluent-kafka, kafka-python)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from groupcoord.testing import Broker


def deliver(producer: Producer, topic: str, values: list[bytes]) -> list[tuple[int, int, str | None]]:
    """Produce ``values`` in order, flush; each delivery report's (partition, offset, error name)."""
    reports: list[tuple[int, int, str | None]] = []

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        reports.append((msg.partition(), msg.offset(), None if err is None else err.name()))  # type: ignore[attr-defined]

    for v in values:
        producer.produce(topic, v, partition=0, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    return reports


def test_confluent_producer_retries_through_injected_not_leader_or_follower_and_delivers_each_record_once(
    kafka_broker: Broker,
) -> None:
    """NOT_LEADER_OR_FOLLOWER is retriable: librdkafka refreshes its metadata and sends the
    batch again (rdkafka_request.c, the Produce error actions: RETRY|REFRESH), so the
    application sees every record delivered, at offsets 0..2, none twice; the two failed
    requests changed nothing in the log."""
    kafka_broker.create_topic("orders", 1)
    producer = Producer(
        {
            "bootstrap.servers": kafka_broker.bootstrap,
            "client.id": "shop",
            "linger.ms": 50,
            "retry.backoff.ms": 20,
        }
    )
    kafka_broker.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, client_id="shop")

    reports = deliver(producer, "orders", [b"a", b"b", b"c"])

    assert kafka_broker.faults.pending_failures() == 0  # both failures reached the producer
    assert reports == [(0, 0, None), (0, 1, None), (0, 2, None)]
    assert [(r.offset, r.value) for r in kafka_broker.records("orders")] == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_confluent_producer_sees_a_non_retriable_produce_error_in_its_delivery_report(
    kafka_broker: Broker,
) -> None:
    """A non-retriable per-partition error (INVALID_RECORD, as for a keyless record to a
    compacted topic) fails the batch: the delivery report carries it, nothing is appended;
    the next produce goes through at offset 0."""
    kafka_broker.create_topic("orders", 1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "client.id": "shop"})
    kafka_broker.fail_next("Produce", "INVALID_RECORD")

    assert deliver(producer, "orders", [b"a"]) == [(0, None, "INVALID_RECORD")]
    assert kafka_broker.records("orders") == []
    assert deliver(producer, "orders", [b"b"]) == [(0, 0, None)]


def test_idempotent_confluent_producer_retries_init_producer_id_and_a_severed_produce(
    kafka_broker: Broker,
) -> None:
    """InitProducerId answered COORDINATOR_LOAD_IN_PROGRESS twice is retried (librdkafka's idempotence
    state machine); a Produce whose connection is severed with the request in flight is
    sent again on a new connection, and the log holds each record once."""
    kafka_broker.create_topic("orders", 1)
    kafka_broker.fail_next("InitProducerId", "COORDINATOR_LOAD_IN_PROGRESS", count=2, client_id="shop")
    kafka_broker.disconnect("shop", api="Produce")
    producer = Producer(
        {
            "bootstrap.servers": kafka_broker.bootstrap,
            "client.id": "shop",
            "enable.idempotence": True,
            "retry.backoff.ms": 20,
            "reconnect.backoff.ms": 20,
        }
    )

    reports = deliver(producer, "orders", [b"a", b"b"])

    assert kafka_broker.faults.pending_failures() == 0
    assert kafka_broker.faults.pending_disconnections() == 0
    assert reports == [(0, 0, None), (0, 1, None)]
    assert [r.value for r in kafka_broker.records("orders")] == [b"a", b"b"]


def test_confluent_consumer_sees_an_injected_fetch_error_then_consumes_on(kafka_broker: Broker) -> None:
    """A partition error in the Fetch answer that librdkafka does not handle itself
    (TOPIC_AUTHORIZATION_FAILED) reaches the application as a consumer error for that
    partition (rdkafka_fetcher.c ``rd_kafka_fetch_reply_handle_partition_error``); the next
    fetch goes through and every record is read once, from offset 0."""
    kafka_broker.create_topic("orders", 1)
    kafka_broker.produce("orders", [b"1", b"2"])
    kafka_broker.fail_next("Fetch", "TOPIC_AUTHORIZATION_FAILED", client_id="reader")
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap,
            "group.id": "app",
            "client.id": "reader",
            "enable.auto.commit": False,
            "fetch.error.backoff.ms": 50,
        }
    )
    try:
        consumer.assign([CTopicPartition("orders", 0, 0)])
        errors: list[tuple[int, str | None, int | None]] = []
        values: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        while len(values) < 2:
            assert time.monotonic() < deadline, f"got {values}, errors {errors}"
            msg = consumer.poll(0.1)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append((msg.error().code(), msg.topic(), msg.partition()))
            else:
                values.append((msg.offset(), msg.value()))
        assert errors == [(KafkaError.TOPIC_AUTHORIZATION_FAILED, "orders", 0)]
        assert values == [(0, b"1"), (1, b"2")]
    finally:
        consumer.close()


def test_kafka_python_consumer_raises_an_injected_list_offsets_error_and_a_retry_succeeds(
    kafka_broker: Broker,
) -> None:
    """ListOffsets' error is per partition; kafka-python raises a non-retriable one from
    ``end_offsets`` (fetcher ``_handle_list_offsets_response``) and the next call reads the
    real end offset."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    from kafka.errors import TopicAuthorizationFailedError

    kafka_broker.create_topic("orders", 1)
    kafka_broker.produce("orders", [b"1", b"2", b"3"])
    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, client_id="lister")
    try:
        tp = KTopicPartition("orders", 0)
        kafka_broker.fail_next("ListOffsets", "TOPIC_AUTHORIZATION_FAILED", client_id="lister")
        try:
            consumer.end_offsets([tp])
        except TopicAuthorizationFailedError:
            raised = True
        else:
            raised = False
        assert raised
        assert consumer.end_offsets([tp]) == {tp: 3}
    finally:
        consumer.close()


def test_aiokafka_producer_retries_an_injected_not_leader_or_follower(kafka_broker: Broker) -> None:
    """aiokafka retries a retriable partition error of a Produce answer after refreshing its
    metadata (aiokafka producer/sender ``SendProduceReqHandler.handle_response``): the record
    lands once, at offset 0."""
    import asyncio

    from aiokafka import AIOKafkaProducer

    kafka_broker.create_topic("orders", 1)
    kafka_broker.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, client_id="aio")

    async def scenario() -> int:
        producer = AIOKafkaProducer(
            bootstrap_servers=kafka_broker.bootstrap, client_id="aio", retry_backoff_ms=20
        )
        await producer.start()
        try:
            metadata = await producer.send_and_wait("orders", b"a", partition=0)
            return int(metadata.offset)
        finally:
            await producer.stop()

    assert asyncio.run(scenario()) == 0
    assert kafka_broker.faults.pending_failures() == 0
    assert [(r.offset, r.value) for r in kafka_broker.records("orders")] == [(0, b"a")]


def test_delay_holds_a_produce_answer_and_a_severed_fetch_is_fetched_again(kafka_broker: Broker) -> None:
    """delay("Produce") holds the acknowledgement (the append is done when the request
    arrives); disconnect(api="Fetch") drops a consumer's Fetch with its connection, and
    librdkafka reconnects and fetches from the same offset: every record once, in order."""
    kafka_broker.create_topic("orders", 1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "client.id": "shop"})
    deliver(producer, "orders", [b"warm-up"])  # connected, metadata known
    kafka_broker.delay("Produce", 0.5, count=1, client_id="shop")
    started = time.monotonic()
    assert deliver(producer, "orders", [b"a"]) == [(0, 1, None)]
    assert time.monotonic() - started >= 0.5

    kafka_broker.disconnect("reader", api="Fetch")
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap,
            "group.id": "app",
            "client.id": "reader",
            "enable.auto.commit": False,
            "reconnect.backoff.ms": 20,
        }
    )
    try:
        consumer.assign([CTopicPartition("orders", 0, 0)])
        values: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        while len(values) < 2:
            assert time.monotonic() < deadline, f"got {values}"
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                values.append((msg.offset(), msg.value()))
        assert values == [(0, b"warm-up"), (1, b"a")]
        assert kafka_broker.faults.pending_disconnections() == 0
    finally:
        consumer.close()
