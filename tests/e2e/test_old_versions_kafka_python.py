"""kafka-python told to speak to an old broker: the old request versions and message formats.

``api_version=(0, 8, 2)`` .. ``(0, 10, 1)`` makes kafka-python 3.0.12 (a real client from PyPI,
with its own encoder of message formats v0/v1 and their gzip/snappy wrappers) send what clients
of those releases sent, against a broker process:

=========== ======= ======================= =========== =============== ===============
api_version Produce Fetch (message format)  ListOffsets OffsetCommit    OffsetFetch
=========== ======= ======================= =========== =============== ===============
0.8.2       v0      v0 (magic 0)            v0          v1              v1
0.9         v1      v1 (magic 0)            v0          v2              v1
0.10.0      v2      v2 (magic 1)            v0          v2              v1
0.10.1      v2      v3 (magic 1)            v1          v2              v1
=========== ======= ======================= =========== =============== ===============

The records come back exactly (offsets, keys, values; the producer's timestamps from magic 1
on), the end offsets are right, and a commit reads back. An old consumer also reads what a
current producer wrote with lz4 (down-converted: magic 0 LZ4 with Kafka's old frame checksum).
kafka-python cannot itself write magic 0 LZ4 without the ``xxhash`` package, so that direction is
covered by ``tests/storage/test_message_format.py``.
"""

from __future__ import annotations

import uuid

import pytest
from conftest import BrokerProcess
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

CASES = [((0, 8, 2), "gzip"), ((0, 9), "snappy"), ((0, 10, 0), None), ((0, 10, 1), "gzip")]


def _consume(
    bootstrap: str, api: tuple[int, ...], tp: TopicPartition, count: int, group: str | None
) -> list[tuple[int, bytes | None, bytes | None, int | None]]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        api_version=api,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20_000,
    )
    try:
        consumer.assign([tp])
        got = []
        for m in consumer:
            got.append((m.offset, m.key, m.value, m.timestamp))
            if len(got) == count:
                break
        return got
    finally:
        consumer.close()


@pytest.mark.parametrize(("api", "codec"), CASES, ids=[f"{'.'.join(map(str, a))}-{c}" for a, c in CASES])
def test_kafka_python_with_an_old_api_version_produces_consumes_and_commits(
    broker: BrokerProcess, api: tuple[int, ...], codec: str | None
) -> None:
    topic = f"old-kp-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, api_version=api, compression_type=codec, linger_ms=5
    )
    try:
        futures = [
            producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0) for i in range(5)
        ]
        producer.flush(30)
        sent = [f.get(30) for f in futures]
    finally:
        producer.close(5)
    assert [m.offset for m in sent] == [0, 1, 2, 3, 4]
    got = _consume(broker.bootstrap, api, tp, 5, None)
    magic_1 = api >= (0, 10)
    assert got == [
        (i, f"k{i}".encode(), f"v{i}".encode(), sent[i].timestamp if magic_1 else None) for i in range(5)
    ]
    if magic_1:
        assert all(m.timestamp > 0 for m in sent)

    group = f"old-kp-group-{uuid.uuid4().hex[:8]}"
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, api_version=api, group_id=group, enable_auto_commit=False
    )
    try:
        assert consumer.end_offsets([tp]) == {tp: 5}  # ListOffsets v0 (latest) below 0.10.1
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(3, "m", -1)})
        assert consumer.committed(tp) == 3
    finally:
        consumer.close()


def test_old_consumers_read_lz4_batches_of_a_current_producer(broker: BrokerProcess) -> None:
    topic = f"old-kp-lz4-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type="lz4", linger_ms=5)
    try:
        for i in range(4):
            producer.send(topic, key=None, value=f"z{i}".encode(), partition=0)
        producer.flush(30)
    finally:
        producer.close(5)
    for api in ((0, 9), (0, 10, 0)):  # Fetch v1 (magic 0 LZ4) and v2 (magic 1 LZ4)
        got = _consume(broker.bootstrap, api, tp, 4, None)
        assert [(o, k, v) for o, k, v, _ in got] == [(i, None, f"z{i}".encode()) for i in range(4)]
