"""Client quotas enforced on real confluent-kafka clients (librdkafka), as Kafka's
``ClientQuotaManager`` enforces them (``BaseQuotaTest.testThrottledProducerConsumer``,
``QuotaTest``): a producer over ``producer_byte_rate`` and a consumer over ``consumer_byte_rate``
are held to it, and see the throttle (``throttle_time_ms`` in the answers, the channel muted for
that time; librdkafka reports it in its statistics' per-broker ``throttle`` window).

The brokers use few windows of 1 s: with Kafka's default of 11 windows a client's first ten
seconds are measured as if they were ten seconds long, so it may send ten seconds' worth at once
before it is throttled, which a 20 s measurement could not tell from the quota. With n windows
that head start is n - 1 seconds' worth. The producer's broker uses 2 (its head start is +5 %
of 20 s); the consumer's uses 3, because a consumer also loses time the producer does not: every
Fetch that would go over the quota is answered empty, and with 2 windows the rate swings by a
whole answer, which left it ~12 % short in our runs; with 3 the head start (+10 %) and that loss
roughly cancel. The measured rate is of the records' values (what the application sent), so batch and
request overhead (a few percent with 1 KiB values) counts against it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.formats.batch import build_batch
from groupcoord.protocol.client import WireClient, build_request, encode_request
from groupcoord.protocol.registry import load_messages
from groupcoord.testing import Broker
from wire_testing import FETCH, fetch_fields, produce, produce_fields

confluent_kafka = pytest.importorskip("confluent_kafka")

QUOTA = 200_000  # bytes per second
VALUE = b"v" * 1024
WINDOW_S = 20.0


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker({"quota.window.num": 3, "quota.window.size.seconds": 1}) as b:
        yield b


@pytest.fixture
def two_windows() -> Iterator[Broker]:
    """The raw-wire tests' arithmetic: 2 windows of 1 s (a rate is bytes over at least 1 s)."""
    with Broker({"quota.window.num": 2, "quota.window.size.seconds": 1}) as b:
        yield b


def _max_throttle(stats: list[dict[str, Any]]) -> int:
    return max(
        (int(b.get("throttle", {}).get("max", 0)) for s in stats for b in s.get("brokers", {}).values()),
        default=0,
    )


def test_a_producer_over_producer_byte_rate_is_held_to_it_and_reports_the_throttle(
    two_windows: Broker,
) -> None:
    two_windows.create_topic("q")
    two_windows.set_quota(client_id="slow-producer", producer_byte_rate=QUOTA)
    stats: list[dict[str, Any]] = []
    delivered: list[tuple[float, int]] = []

    def on_delivery(err: Any, msg: Any) -> None:
        assert err is None, err
        delivered.append((time.monotonic(), len(msg.value())))

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": two_windows.bootstrap,
            "client.id": "slow-producer",
            "batch.size": 16384,
            "linger.ms": 5,
            "queue.buffering.max.kbytes": 512,
            "statistics.interval.ms": 1000,
            "stats_cb": lambda s: stats.append(json.loads(s)),
        }
    )
    started = time.monotonic()
    deadline = started + WINDOW_S
    while time.monotonic() < deadline:
        try:
            producer.produce("q", VALUE, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.05)  # the local queue is full: the broker is holding us back
        producer.poll(0)
    producer.flush(60)
    sent = sum(n for at, n in delivered if at <= deadline)
    rate = sent / WINDOW_S
    assert 0.9 * QUOTA <= rate <= 1.1 * QUOTA, rate
    assert _max_throttle(stats) > 0


def _fill(broker: Broker, topic: str, total: int) -> None:
    host, port = broker.bootstrap.split(":")
    with WireClient(host, int(port)) as client:
        for _ in range(total // (64 * len(VALUE))):
            batch = build_batch([(None, VALUE, ())] * 64, timestamp_ms=int(time.time() * 1000))
            produce(client, topic, batch)


def test_a_consumer_over_consumer_byte_rate_is_held_to_it_and_reports_the_throttle(broker: Broker) -> None:
    broker.create_topic("big")
    _fill(broker, "big", int(QUOTA * WINDOW_S * 1.6))  # more than the quota lets it read
    broker.set_quota(client_id="slow-consumer", consumer_byte_rate=QUOTA)
    stats: list[dict[str, Any]] = []
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "slow-consumer",
            "group.id": "quota-group",
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 131072,
            "message.max.bytes": 131072,
            "max.partition.fetch.bytes": 65536,
            "statistics.interval.ms": 1000,
            "stats_cb": lambda s: stats.append(json.loads(s)),
        }
    )
    try:
        consumer.subscribe(["big"])
        first = None
        while first is None:
            msg = consumer.poll(10)
            if msg is not None and msg.error() is None:
                first = time.monotonic()
        received = len(VALUE)
        deadline = first + WINDOW_S
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                received += len(msg.value())
        rate = received / WINDOW_S
        assert 0.9 * QUOTA <= rate <= 1.1 * QUOTA, rate
        assert _max_throttle(stats) > 0
    finally:
        consumer.close()


def test_a_throttled_produce_carries_throttle_time_ms_and_mutes_the_connection(two_windows: Broker) -> None:
    """Over the raw wire: one Produce of L bytes against a quota of 10,000 B/s measured over 2
    windows of 1 s is a rate of L / 1 s, so the answer's throttle time is exactly
    (L - 10,000) / 10,000 * 1,000 ms (``QuotaUtils.throttleTime``); the next request on the
    connection is not read before that time has passed (KIP-219)."""
    two_windows.create_topic("raw")
    two_windows.set_quota(client_id="raw-producer", producer_byte_rate=10_000)
    messages = load_messages(0, 9)
    batch = build_batch([(None, b"x" * 14_000, ())], timestamp_ms=int(time.time() * 1000))
    request = build_request(messages.request_type, produce_fields("raw", batch))
    size = len(encode_request(messages, 1, request, "raw-producer")) - 4
    expected = round((size - 10_000) / 10_000 * 1_000)
    host, port = two_windows.bootstrap.split(":")
    with WireClient(host, int(port), client_id="raw-producer") as client:
        response = client.call_entity(messages, request)
        answered = time.monotonic()
        assert response.responses[0].partition_responses[0].error_code == 0
        assert response.throttle_time.total_seconds() * 1000 == expected
        client.call(18, 3, client_software_name="t", client_software_version="1")
        assert time.monotonic() - answered >= 0.9 * expected / 1000


def _fetch(client: WireClient, topic: str, offset: int) -> Any:
    return client.call(FETCH, 12, **fetch_fields(topic, offset))


def test_a_fetch_over_consumer_byte_rate_is_answered_empty_and_fetches_are_capped_to_the_window(
    two_windows: Broker,
) -> None:
    """``KafkaApis.handleFetchRequest``: a Fetch may return at most the quota's worth of the
    window (``getMaxValueInQuotaWindow``: 10,000 B/s * (2 - 1) windows of 1 s = 10,000 bytes,
    though the client allows 1 MiB); one over the quota is answered with no partitions and the
    throttle time, its bytes not counted (``unrecordQuotaSensor``); after the mute, fetching goes on."""
    two_windows.create_topic("capped")
    host, port = two_windows.bootstrap.split(":")
    with WireClient(host, int(port)) as producer:
        for _ in range(10):
            batch = build_batch([(None, b"r" * 4000, ())], timestamp_ms=int(time.time() * 1000))
            produce(producer, "capped", batch)
    two_windows.set_quota(client_id="capped-consumer", consumer_byte_rate=10_000)
    with WireClient(host, int(port), client_id="capped-consumer") as client:
        first = _fetch(client, "capped", 0)
        records = first.responses[0].partitions[0].records
        assert first.throttle_time.total_seconds() == 0
        assert 4000 < len(records) <= 10_000  # two batches of ~4 KB: the cap, not the 1 MiB asked
        throttled = _fetch(client, "capped", 2)
        answered = time.monotonic()
        assert throttled.responses == () and throttled.throttle_time.total_seconds() > 0
        after = _fetch(client, "capped", 2)
        assert time.monotonic() - answered >= 0.9 * throttled.throttle_time.total_seconds()
        assert len(after.responses[0].partitions[0].records) > 4000
