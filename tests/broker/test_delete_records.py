"""DeleteRecords (21) v0-2 through confluent-kafka's AdminClient and kafka-python's
KafkaAdminClient against an in-process broker: the log start offset moves (and survives a
restart), whole segments below it are deleted, fetches below it get OFFSET_OUT_OF_RANGE,
ListOffsets' earliest follows and a consumer from the beginning starts there.

Kafka's behaviour cited: ``ReplicaManager.deleteRecordsOnLocalLog`` (internal topics refused),
``Partition.deleteRecordsOnLeader`` (-1 = the high watermark; an offset above it, or a topic
whose cleanup.policy lacks ``delete``, refused with OFFSET_OUT_OF_RANGE / POLICY_VIOLATION;
``low_watermark`` answered), ``UnifiedLog.maybeIncrementLogStartOffset`` (the log start offset
never moves back), ``LogManager``'s ``log-start-offset-checkpoint`` (persisted).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import OffsetOutOfRangeError as KpOffsetOutOfRange

from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

RECORDS = 40


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


@pytest.fixture(scope="module")
def admin(broker: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def filled_topic(bootstrap: str, admin: AdminClient, config: dict[str, str] | None = None) -> str:
    """A one-partition topic of 1 KiB segments holding RECORDS records (offsets 0..RECORDS-1)."""
    name = f"dr-{uuid.uuid4().hex[:8]}"
    topic_config = {"segment.bytes": "1024", **(config or {})}
    for fut in admin.create_topics([NewTopic(name, 1, 1, config=topic_config)]).values():
        fut.result(timeout=20)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(RECORDS):
        p.produce(name, key=f"k{i}".encode(), value=b"v" * 200)
        p.flush(10)
    return name


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        c.close()


def delete_with_confluent(admin: AdminClient, topic: str, offset: int) -> int:
    (fut,) = admin.delete_records([TopicPartition(topic, 0, offset)]).values()
    return int(fut.result(timeout=20).low_watermark)


def first_offsets_from_the_beginning(bootstrap: str, topic: str, n: int) -> list[int]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        c.subscribe([topic])
        got: list[int] = []
        for _ in range(200):
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(int(msg.offset()))
            if len(got) >= n:
                break
        return got
    finally:
        c.close()


def test_confluent_delete_records_moves_the_start_and_a_consumer_from_the_beginning_starts_there(
    broker: Broker, admin: AdminClient
) -> None:
    topic = filled_topic(broker.bootstrap, admin)
    pdir = broker.data_dir / f"{topic}-0"
    bases_before = sorted(int(f.stem) for f in pdir.glob("*.log"))
    assert len(bases_before) >= 5

    assert delete_with_confluent(admin, topic, 25) == 25
    assert watermarks(broker.bootstrap, topic) == (25, RECORDS)
    bases_after = sorted(int(f.stem) for f in pdir.glob("*.log"))
    # every segment wholly below offset 25 is gone; the one holding 25 stays
    assert bases_after == [
        b for i, b in enumerate(bases_before) if i + 1 == len(bases_before) or bases_before[i + 1] > 25
    ]
    assert bases_after[0] <= 25
    assert first_offsets_from_the_beginning(broker.bootstrap, topic, 3) == [25, 26, 27]

    # the start never moves back; an offset at or below it changes nothing
    assert delete_with_confluent(admin, topic, 10) == 25


def test_kafka_python_delete_records_to_the_high_watermark_and_errors(
    broker: Broker, admin: AdminClient
) -> None:
    topic = filled_topic(broker.bootstrap, admin)
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = kp.delete_records({KpTopicPartition(topic, 0): 12})
        assert result[KpTopicPartition(topic, 0)]["low_watermark"] == 12
        assert watermarks(broker.bootstrap, topic) == (12, RECORDS)
        with pytest.raises(KpOffsetOutOfRange):
            kp.delete_records({KpTopicPartition(topic, 0): RECORDS + 1})
        result = kp.delete_records({KpTopicPartition(topic, 0): -1})  # -1: up to the high watermark
        assert result[KpTopicPartition(topic, 0)]["low_watermark"] == RECORDS
    finally:
        kp.close()
    assert watermarks(broker.bootstrap, topic) == (RECORDS, RECORDS)


def test_fetch_below_the_start_is_offset_out_of_range_and_list_offsets_earliest_follows(
    broker: Broker, admin: AdminClient
) -> None:
    topic = filled_topic(broker.bootstrap, admin)
    host, port = broker.bootstrap.rsplit(":", 1)
    with WireClient(host, int(port)) as c:
        r = c.call(
            21,
            0,
            topics=[{"name": topic, "partitions": [{"partition_index": 0, "offset": 30}]}],
            timeout=5000,
        )
        ((part,),) = [t.partitions for t in r.topics]
        assert (part.error_code, part.low_watermark) == (0, 30)
        fetch = c.call(
            1,
            4,
            replica_id=-1,
            max_wait=0,
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=0,
            topics=[
                {
                    "topic": topic,
                    "partitions": [{"partition": 0, "fetch_offset": 29, "partition_max_bytes": 1 << 20}],
                }
            ],
        )
        ((fp,),) = [t.partitions for t in fetch.responses]
        assert fp.error_code == KafkaError.OFFSET_OUT_OF_RANGE
        lo = c.call(
            2,
            1,
            replica_id=-1,
            topics=[{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -2}]}],
        )
        ((lp,),) = [t.partitions for t in lo.topics]
        assert (lp.error_code, lp.offset) == (0, 30)
        # v2 answers the same way; an unknown partition and an above-HW offset get their codes
        r = c.call(
            21,
            2,
            topics=[
                {"name": topic, "partitions": [{"partition_index": 0, "offset": RECORDS + 5}]},
                {"name": topic, "partitions": [{"partition_index": 3, "offset": 1}]},
                {"name": "__consumer_offsets", "partitions": [{"partition_index": 0, "offset": 0}]},
            ],
            timeout=5000,
        )
        codes = [(p.error_code, p.low_watermark) for t in r.topics for p in t.partitions]
        assert codes == [
            (KafkaError.OFFSET_OUT_OF_RANGE, -1),
            (KafkaError.UNKNOWN_TOPIC_OR_PART, -1),
            (KafkaError.TOPIC_EXCEPTION, -1),
        ]


def test_compacted_topic_records_cannot_be_deleted(broker: Broker, admin: AdminClient) -> None:
    topic = filled_topic(broker.bootstrap, admin, {"cleanup.policy": "compact"})
    (fut,) = admin.delete_records([TopicPartition(topic, 0, 5)]).values()
    with pytest.raises(KafkaException) as info:
        fut.result(timeout=20)
    assert info.value.args[0].code() == KafkaError.POLICY_VIOLATION
    assert watermarks(broker.bootstrap, topic) == (0, RECORDS)


def test_the_log_start_offset_survives_a_restart(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path / "data") as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        topic = filled_topic(b.bootstrap, admin)
        assert delete_with_confluent(admin, topic, 17) == 17
        b.restart()
        assert watermarks(b.bootstrap, topic) == (17, RECORDS)
        assert first_offsets_from_the_beginning(b.bootstrap, topic, 2) == [17, 18]


def test_aiokafka_delete_records_answers_the_low_watermark(broker: Broker, admin: AdminClient) -> None:
    topic = filled_topic(broker.bootstrap, admin)

    async def scenario() -> dict[AioTopicPartition, int]:
        client = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await client.start()
        try:
            return await client.delete_records(
                {AioTopicPartition(topic, 0): RecordsToDelete(before_offset=8)}
            )
        finally:
            await client.close()

    assert asyncio.run(scenario()) == {AioTopicPartition(topic, 0): 8}
    assert watermarks(broker.bootstrap, topic) == (8, RECORDS)
