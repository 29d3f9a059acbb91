"""The broker's log cleaner end to end: a real broker (``groupcoord.testing.Broker``, in process)
and real clients (confluent-kafka for producing, transactions, admin and consuming).

As Kafka's ``LogCleanerIntegrationTest`` (a compacted topic's log, after the cleaner ran, holds
the latest value of each key at its original offset) and ``LogCleanerTest`` (aborted transactional
data removed by the cleaner, ``testAbortMarkerRemoval`` / ``testCommitMarkerRetention``: an ABORT
marker goes once ``delete.retention.ms`` has passed, a COMMIT marker stays while its data does).
The cleaner runs every ``log.cleaner.backoff.ms`` of broker time: the tests move the broker clock
with ``Broker.advance()``, so no test waits for the cleaner's real interval. A segment is rolled by
``segment.ms`` (the clock moved past it, then one more record).

One broker serves the module; each test uses its own topics and producers.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import iter_batches
from groupcoord.protocol.client import WireClient
from groupcoord.storage.message_format import iter_messages
from groupcoord.testing import Broker
from wire_testing import fetch_partition, wire_client

pytestmark = pytest.mark.e2e

BACKOFF_S = 60  # log.cleaner.backoff.ms: far above the test's real duration
SEGMENT_S = 3600  # segment.ms of the topics
DELETE_RETENTION_S = 600  # delete.retention.ms of the topics


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    # connections.max.idle.ms -1: the clients stay connected while the clock jumps ahead
    with Broker({"log.cleaner.backoff.ms": BACKOFF_S * 1000, "connections.max.idle.ms": -1}) as b:
        yield b


@pytest.fixture
def client(broker: Broker) -> Iterator[WireClient]:
    with wire_client(broker) as c:
        yield c


def wait_until(pred: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def fetch(client: WireClient, version: int, topic: str, offset: int = 0) -> Any:
    part = fetch_partition(client, version, topic, offset)
    assert part.error_code == ErrorCode.NONE
    return part


def batches(client: WireClient, topic: str) -> list[tuple[int, int, bool, int]]:
    """(base offset, last offset, control?, record count) of every batch in the partition, as
    Fetch v4 answers them (control batches and empty ones included), fetching on until the
    high watermark (one answer ends at a segment's end)."""
    out: list[tuple[int, int, bool, int]] = []
    offset = 0
    while True:
        part = fetch(client, 4, topic, offset)
        data = bytes(part.records or b"")
        found = [
            (h.base_offset, h.last_offset, h.is_control, h.record_count) for _pos, h in iter_batches(data)
        ]
        out.extend(found)
        if not found or found[-1][1] + 1 >= part.high_watermark:
            return out
        offset = found[-1][1] + 1


def consume_all(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record a read_uncommitted consumer reads from the start."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    try:
        tp = TopicPartition(topic, 0)
        _low, high = c.get_watermark_offsets(tp, timeout=10)
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        while not out or out[-1][0] < high - 1:
            assert time.monotonic() < deadline, f"timed out reading {topic}: {out}"
            msg = c.poll(1)
            if msg is None or msg.error():
                continue
            out.append((msg.offset(), msg.key(), msg.value()))
        return out
    finally:
        c.close()


def idempotent_producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})


def put(p: Producer, topic: str, key: str, value: str) -> None:
    """One record, one batch (flushed before the next)."""
    p.produce(topic, key=key.encode(), value=value.encode())
    assert p.flush(20) == 0


def transaction(p: Producer, topic: str, records: list[tuple[str, str]], *, commit: bool) -> None:
    p.begin_transaction()
    for key, value in records:
        p.produce(topic, key=key.encode(), value=value.encode())
    assert p.flush(20) == 0
    if commit:
        p.commit_transaction(20)
    else:
        p.abort_transaction(20)


def roll(broker: Broker, p: Producer, topic: str, key: str, value: str) -> None:
    """Move past segment.ms and append one record: it opens the next segment."""
    broker.advance(SEGMENT_S + 1)
    put(p, topic, key, value)


def clean_until(broker: Broker, pred: Callable[[], bool], what: str) -> None:
    """Move the broker clock one log.cleaner.backoff.ms at a time (each move arms a pass, run on
    the cleaner's thread) until ``pred`` holds."""

    def step() -> bool:
        if pred():
            return True
        broker.advance(BACKOFF_S + 1)
        return False

    wait_until(step, what)


def write_history(broker: Broker, topic: str, *, aborted_last: bool) -> None:
    """Offsets 0-5: k1=a1 k2=b1 k1=a2 k3=c1 k2=b2 k1=a3 (an idempotent producer, one batch
    each); then two transactions of one transactional producer: aborted (k1=x k4=x, marker) and
    committed (k3=c2, marker), in the order ``aborted_last`` says; then the roll and k5=e1."""
    bs = broker.bootstrap
    p = idempotent_producer(bs)
    for key, value in [("k1", "a1"), ("k2", "b1"), ("k1", "a2"), ("k3", "c1"), ("k2", "b2"), ("k1", "a3")]:
        put(p, topic, key, value)
    t = Producer({"bootstrap.servers": bs, "transactional.id": f"txn-{topic}", "linger.ms": 0})
    t.init_transactions(20)
    aborted = [("k1", "x"), ("k4", "x")]
    committed = [("k3", "c2")]
    if aborted_last:
        transaction(t, topic, committed, commit=True)
        transaction(t, topic, aborted, commit=False)
    else:
        transaction(t, topic, aborted, commit=False)
        transaction(t, topic, committed, commit=True)
    roll(broker, p, topic, "k5", "e1")
    assert p.flush(20) == 0


def test_compacted_topic_keeps_the_latest_value_per_key_and_drops_aborted_records(
    broker: Broker, client: WireClient
) -> None:
    """A topic created with cleanup.policy=compact: after a pass, a read_uncommitted consumer
    reads exactly the latest value of each key at its original offset and none of the aborted
    transaction's records (``LogCleanerIntegrationTest.cleanerTest``; ``LogCleanerTest
    .testAbortMarkerRemoval``); once delete.retention.ms has passed, the ABORT marker goes and
    the COMMIT marker of the transaction whose record is still there stays
    (``testCommitMarkerRetention``)."""
    topic = "compact-created"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    config = {
        "cleanup.policy": "compact",
        "segment.ms": str(SEGMENT_S * 1000),
        "delete.retention.ms": str(DELETE_RETENTION_S * 1000),
    }
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(20)
    write_history(broker, topic, aborted_last=False)
    before = consume_all(broker.bootstrap, topic)
    assert [off for off, _k, _v in before] == [0, 1, 2, 3, 4, 5, 6, 7, 9, 11]  # not cleaned yet

    clean_until(broker, lambda: batches(client, topic)[0][0] == 4, "the cleaner to compact the topic")
    assert consume_all(broker.bootstrap, topic) == [
        (4, b"k2", b"b2"),
        (5, b"k1", b"a3"),
        (9, b"k3", b"c2"),
        (11, b"k5", b"e1"),
    ]
    # the markers: ABORT at 8 (its data just removed), COMMIT at 10
    assert [(b, c) for b, _last, c, _n in batches(client, topic)] == [
        (4, False),
        (5, False),
        (8, True),
        (9, False),
        (10, True),
        (11, False),
    ]
    broker.advance(DELETE_RETENTION_S + 1)
    clean_until(
        broker, lambda: 8 not in [b for b, *_ in batches(client, topic)], "the ABORT marker to be removed"
    )
    assert [(b, c) for b, _last, c, _n in batches(client, topic)] == [
        (4, False),
        (5, False),
        (9, False),
        (10, True),
        (11, False),
    ]
    assert [off for off, _k, _v in consume_all(broker.bootstrap, topic)] == [4, 5, 9, 11]


def test_topic_switched_to_compact_at_run_time_is_cleaned_and_old_fetches_skip_empty_and_control_batches(
    broker: Broker, client: WireClient
) -> None:
    """A topic created with cleanup.policy=delete and switched to compact with
    IncrementalAlterConfigs is cleaned from the next pass on. The transactional producer's last
    batch (its aborted one) is kept as a header with no records (``LogCleanerTest
    .testEmptyBatchRemovalWithSequenceReuse``'s layout), so its epoch survives; Fetch v2 (magic 1,
    down-converted) leaves that empty batch and the control batches out, as Kafka's
    ``RecordsUtil.downConvert`` does. A restarted broker serves the cleaned log as it was."""
    topic = "compact-altered"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    config = {"segment.ms": str(SEGMENT_S * 1000), "delete.retention.ms": str(DELETE_RETENTION_S * 1000)}
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(20)
    write_history(broker, topic, aborted_last=True)
    # offsets: 0-5 as in the other test, k3=c2 at 6, COMMIT 7, k1=x k4=x at 8-9, ABORT 10, k5=e1 11
    broker.advance(BACKOFF_S + 1)  # a pass: the topic is not compacted yet
    assert [b for b, *_ in batches(client, topic)] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11]

    resource = ConfigResource(
        "TOPIC",
        topic,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    for fut in admin.incremental_alter_configs([resource]).values():
        fut.result(20)
    clean_until(broker, lambda: batches(client, topic)[0][0] == 4, "the cleaner to compact the altered topic")
    assert consume_all(broker.bootstrap, topic) == [
        (4, b"k2", b"b2"),
        (5, b"k1", b"a3"),
        (6, b"k3", b"c2"),
        (11, b"k5", b"e1"),
    ]
    # (base, last, control, records): the aborted batch 8-9 kept empty, both markers kept
    assert batches(client, topic) == [
        (4, 4, False, 1),
        (5, 5, False, 1),
        (6, 6, False, 1),
        (7, 7, True, 1),
        (8, 9, False, 0),
        (10, 10, True, 1),
        (11, 11, False, 1),
    ]
    # one answer reads one segment: 4-10, where the COMMIT marker, the empty batch and the
    # ABORT marker are left out, then the last segment
    old = fetch(client, 2, topic)
    assert [(m.offset, m.magic, m.key, m.value) for m in iter_messages(bytes(old.records))] == [
        (4, 1, b"k2", b"b2"),
        (5, 1, b"k1", b"a3"),
        (6, 1, b"k3", b"c2"),
    ]
    old = fetch(client, 2, topic, 11)
    assert [(m.offset, m.magic, m.key, m.value) for m in iter_messages(bytes(old.records))] == [
        (11, 1, b"k5", b"e1")
    ]
    # the cleaned segments are what a restarted broker opens and serves
    broker.restart()
    assert [(off, v) for off, _k, v in consume_all(broker.bootstrap, topic)] == [
        (4, b"b2"),
        (5, b"a3"),
        (6, b"c2"),
        (11, b"e1"),
    ]
