"""confluent-kafka (librdkafka) against a broker process: admin, produce, restart, consume."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import BrokerProcess, Headers, Workload, acked_per_partition

pytestmark = pytest.mark.e2e

N = 10_000
PARTITIONS = 3


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10)
    assert futures[name].result(timeout=15) is None
    md = admin.list_topics(topic=name, timeout=10)
    assert sorted(md.topics[name].partitions) == list(range(partitions))


Consumed = dict[int, list[tuple[int, bytes, bytes, Headers, int]]]


def consume_all(bootstrap: str, topic: str, partitions: int, expected_total: int) -> Consumed:
    return consume_until(
        bootstrap, topic, partitions, lambda got: sum(map(len, got.values())) >= expected_total
    )


def consume_until(bootstrap: str, topic: str, partitions: int, done: Callable[[Consumed], bool]) -> Consumed:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[tuple[int, bytes, bytes, Headers, int]]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + 60
    try:
        while not done(out) and time.monotonic() < deadline:
            for m in c.consume(num_messages=1000, timeout=1.0):
                assert m.error() is None, m.error()
                headers = tuple((k, v) for k, v in (m.headers() or []))
                out[m.partition()].append((m.offset(), m.key(), m.value(), headers, m.timestamp()[1]))
    finally:
        c.close()
    return out


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_records_survive_produce_restart_consume_byte_for_byte(broker: BrokerProcess, codec: str) -> None:
    topic = f"ck-{codec}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    records = Workload.records(N, PARTITIONS, seed=len(codec))
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "compression.type": codec,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
        }
    )
    errors: list[object] = []
    for r in records:
        p.produce(
            topic,
            key=r.key,
            value=r.value,
            partition=r.partition,
            headers=list(r.headers),
            timestamp=r.timestamp,
            on_delivery=lambda err, _msg: errors.append(err) if err is not None else None,
        )
        p.poll(0)
    assert p.flush(30) == 0
    assert errors == []

    broker.restart()

    consumed = consume_all(broker.bootstrap, topic, PARTITIONS, N)
    Workload.assert_consumed_exactly(records, consumed)


def test_every_acknowledged_record_survives_sigkill_during_acks_all_produce(broker_factory) -> None:  # type: ignore[no-untyped-def]
    b: BrokerProcess = broker_factory()
    topic = "ck-crash"
    create_topic(b.bootstrap, topic, 2)
    acked: list[tuple[int, int, bytes]] = []
    lock = threading.Lock()

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            with lock:
                acked.append((msg.partition(), msg.offset(), msg.value()))

    p = Producer(
        {
            "bootstrap.servers": b.bootstrap,
            "acks": "all",
            "linger.ms": 1,
            "message.timeout.ms": 5000,
            "reconnect.backoff.max.ms": 200,
        }
    )
    stop = threading.Event()

    def produce_forever() -> None:
        i = 0
        while not stop.is_set():
            try:
                p.produce(topic, value=f"crash-{i}".encode(), partition=i % 2, on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            p.poll(0.001 if i % 100 == 0 else 0)

    t = threading.Thread(target=produce_forever)
    t.start()
    deadline = time.monotonic() + 30
    # Kill only once both partitions have acknowledged records: under load one partition's first
    # batches can trail the other's by more than the time 3,000 acknowledgements take.
    while min(acked_per_partition(acked, lock, 2)) < 1500 and time.monotonic() < deadline:
        time.sleep(0.01)
    b.kill()
    time.sleep(0.3)
    stop.set()
    t.join()
    p.flush(6)  # undelivered ones fail with timeouts; only acknowledged ones count
    with lock:
        snapshot = list(acked)
    assert len(snapshot) >= 3000

    b.start()
    last = {part: max(off for pp, off, _ in snapshot if pp == part) for part in (0, 1)}
    consumed = consume_until(b.bootstrap, topic, 2, lambda got: all(len(got[q]) > last[q] for q in (0, 1)))
    stored = {(part, row[0]): row[2] for part, rows in consumed.items() for row in rows}
    missing = [(part, off) for part, off, value in snapshot if stored.get((part, off)) != value]
    assert missing == []


def test_admin_client_describes_the_cluster_and_topic_configs(broker: BrokerProcess) -> None:
    from confluent_kafka.admin import ConfigResource

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    cluster = admin.describe_cluster().result(10)
    assert cluster.controller.id == 0
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(0, "127.0.0.1", broker.port)]
    futures = admin.create_topics([NewTopic("ck-configs", 1, 1, config={"retention.ms": "5000"})])
    assert futures["ck-configs"].result(10) is None
    (configs,) = admin.describe_configs([ConfigResource("TOPIC", "ck-configs")]).values()
    entries = configs.result(10)
    assert entries["retention.ms"].value == "5000"
    assert entries["cleanup.policy"].value == "delete"
