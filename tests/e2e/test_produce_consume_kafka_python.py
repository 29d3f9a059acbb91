"""kafka-python against a broker process: admin, idempotent produce, restart, consume."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

import pytest
from conftest import BrokerProcess, Headers, Workload, acked_per_partition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaTimeoutError

pytestmark = pytest.mark.e2e

N = 10_000
PARTITIONS = 3
Consumed = dict[int, list[tuple[int, bytes, bytes, Headers, int]]]


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        resp = admin.create_topics([NewTopic(name, partitions, 1)])
        assert [(t["name"], t["error_code"]) for t in resp["topics"]] == [(name, 0)]
        (described,) = admin.describe_topics([name])
        assert [p["partition_index"] for p in described["partitions"]] == list(range(partitions))
    finally:
        admin.close()


def consume_until(bootstrap: str, topic: str, partitions: int, done: Callable[[Consumed], bool]) -> Consumed:
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    for p in range(partitions):
        c.seek(TopicPartition(topic, p), 0)
    out: Consumed = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + 60
    try:
        while not done(out) and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=1000, max_records=5000).items():
                for m in msgs:
                    headers = tuple((k, v) for k, v in m.headers)
                    out[tp.partition].append((m.offset, m.key, m.value, headers, m.timestamp))
    finally:
        c.close()
    return out


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_records_survive_produce_restart_consume_byte_for_byte(
    broker: BrokerProcess, codec: str | None
) -> None:
    topic = f"kp-{codec or 'none'}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    records = Workload.records(N, PARTITIONS, seed=100 + len(codec or ""))
    # kafka-python defaults: enable_idempotence=True, acks=all -> InitProducerId and sequence checks.
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec, linger_ms=5)
    futures = [
        p.send(
            topic,
            key=r.key,
            value=r.value,
            partition=r.partition,
            headers=list(r.headers),
            timestamp_ms=r.timestamp,
        )
        for r in records
    ]
    p.flush(60)
    metas = [f.get(timeout=10) for f in futures]
    p.close()
    per_partition_offsets: dict[int, list[int]] = {}
    for m in metas:
        per_partition_offsets.setdefault(m.partition, []).append(m.offset)
    assert all(offs == list(range(len(offs))) for offs in per_partition_offsets.values())

    broker.restart()

    consumed = consume_until(
        broker.bootstrap, topic, PARTITIONS, lambda got: sum(map(len, got.values())) >= N
    )
    Workload.assert_consumed_exactly(records, consumed)


def test_every_acknowledged_record_survives_sigkill_during_acks_all_produce(broker_factory) -> None:  # type: ignore[no-untyped-def]
    b: BrokerProcess = broker_factory()
    topic = "kp-crash"
    create_topic(b.bootstrap, topic, 2)
    acked: list[tuple[int, int, bytes]] = []
    lock = threading.Lock()
    p = KafkaProducer(
        bootstrap_servers=b.bootstrap,
        acks="all",
        linger_ms=1,
        request_timeout_ms=3000,
        delivery_timeout_ms=5000,
        reconnect_backoff_max_ms=200,
    )
    stop = threading.Event()

    def produce_forever() -> None:
        i = 0
        while not stop.is_set():
            value = f"crash-{i}".encode()
            fut = p.send(topic, value=value, partition=i % 2)
            fut.add_callback(lambda md, v=value: _ack(md, v))
            i += 1
            if i % 200 == 0:
                time.sleep(0.001)

    def _ack(md, value: bytes) -> None:  # type: ignore[no-untyped-def]
        with lock:
            acked.append((md.partition, md.offset, value))

    t = threading.Thread(target=produce_forever)
    t.start()
    deadline = time.monotonic() + 30
    # Kill only once both partitions have acknowledged records (one can trail the other under load).
    while min(acked_per_partition(acked, lock, 2)) < 1000 and time.monotonic() < deadline:
        time.sleep(0.01)
    b.kill()
    time.sleep(0.3)
    stop.set()
    t.join()
    # The broker is gone: the producer cannot flush what was never acknowledged.
    with contextlib.suppress(KafkaTimeoutError):
        p.close(timeout=3)
    with lock:
        snapshot = list(acked)
    assert len(snapshot) >= 2000

    b.start()
    last = {part: max(off for pp, off, _ in snapshot if pp == part) for part in (0, 1)}
    consumed = consume_until(b.bootstrap, topic, 2, lambda got: all(len(got[q]) > last[q] for q in (0, 1)))
    stored = {(part, row[0]): row[2] for part, rows in consumed.items() for row in rows}
    missing = [(part, off) for part, off, value in snapshot if stored.get((part, off)) != value]
    assert missing == []
