"""The log cleaner compacts ``__consumer_offsets`` while the broker serves commits."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import BrokerProcess, wait_until

from groupcoord.coordinator.records import OffsetCommitKey, OffsetCommitValue, decode_record

pytestmark = pytest.mark.e2e

COMMITS = 200


def offsets_log(bootstrap: str) -> list[tuple[int, object, object]]:
    """(offset, key, value) of every record in ``__consumer_offsets-0``, read over the wire."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    try:
        tp = TopicPartition("__consumer_offsets", 0)
        low, high = c.get_watermark_offsets(tp, timeout=10)
        c.assign([TopicPartition("__consumer_offsets", 0, low)])
        out: list[tuple[int, object, object]] = []
        while high > 0 and (not out or out[-1][0] < high - 1):
            msg = c.poll(5)
            assert msg is not None, "timed out reading __consumer_offsets"
            if msg.error():
                continue
            rec = decode_record(msg.key(), msg.value())
            assert rec is not None
            out.append((msg.offset(), rec.key, rec.value))
        return out
    finally:
        c.close()


def test_cleaner_keeps_only_the_latest_commit_per_key_and_offsets_survive_restart(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    broker = broker_factory(
        "offsets.topic.num.partitions=1",
        "offsets.topic.segment.bytes=1024",
        "log.cleaner.backoff.ms=100",
    )
    bs = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    for fut in admin.create_topics([NewTopic("compacted", 1, 1)]).values():
        fut.result(timeout=20)
    committer = Consumer({"bootstrap.servers": bs, "group.id": "cleaner-group", "enable.auto.commit": False})
    for i in range(1, COMMITS + 1):
        # generation -1 "simple" commits: no subscription, one key (group, topic, 0) rewritten each time
        committer.commit(offsets=[TopicPartition("compacted", 0, i)], asynchronous=False)
    committer.close()

    key = OffsetCommitKey(group="cleaner-group", topic="compacted", partition=0)

    def compacted() -> bool:
        return len([r for r in offsets_log(bs) if r[1] == key]) < COMMITS // 10

    wait_until(compacted, 120, "the cleaner to compact __consumer_offsets")
    remaining = [(off, value) for off, k, value in offsets_log(bs) if k == key]
    offsets = [off for off, _ in remaining]
    assert offsets == sorted(offsets), "compaction must not reorder offsets"
    last = remaining[-1][1]
    assert isinstance(last, OffsetCommitValue)
    assert last.offset == COMMITS

    broker.stop()
    broker.start()
    reader = Consumer({"bootstrap.servers": bs, "group.id": "cleaner-group"})
    try:
        [tp] = reader.committed([TopicPartition("compacted", 0)], timeout=10)
    finally:
        reader.close()
    assert tp.offset == COMMITS
