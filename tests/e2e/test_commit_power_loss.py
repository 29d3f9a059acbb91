"""Offsets a real client was told are committed survive a power loss of the broker's machine.

The broker answers an OffsetCommit once the shared write-ahead journal holding its record is
synced (storage/journal.py); the ``__consumer_offsets`` segments themselves are fsynced only at
rolls and journal checkpoints. A power loss is simulated after a SIGKILL by cutting every
``__consumer_offsets`` segment back to its recovery point (the offset below which the segment's
own fsyncs made it durable), so only the journal can bring the commits back.

Kafka answers a commit once its record is appended to the leader's log and, with acks=-1, its
replicas have it (``GroupMetadataManager.storeOffsets`` through ``ReplicaManager.appendRecords``
with ``requiredAcks = -1``); its durability comes from replication, not fsync. A single
groupcoord broker has no replicas, so it keeps its "durable before answered" promise on one disk
(docs/storage.md).
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.testing import Broker
from power_loss import cut_segment_to

GROUPS = 12


def _cut_offsets_topic_to_recovery_points(data_dir: Path) -> int:
    """Truncate each ``__consumer_offsets`` segment to its batches below the partition's recovery
    point; returns the bytes removed."""
    removed = 0
    for pdir in sorted(data_dir.glob("__consumer_offsets-*")):
        rp_file = pdir / "recovery-point.checkpoint"
        floor = int(rp_file.read_text()) if rp_file.exists() else 0
        for seg in sorted(pdir.glob("*.log")):
            removed += cut_segment_to(seg, floor)
    return removed


def _committed(bootstrap: str, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=30)
        return int(tp.offset)
    finally:
        c.close()


def test_commits_answered_before_a_power_loss_are_all_there_after_it(tmp_path: Path) -> None:
    broker = Broker(data_dir=tmp_path / "data", subprocess=True).start()
    try:
        topic = "power-loss"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
        expected: dict[str, int] = {}
        for i in range(GROUPS):
            group = f"power-loss-{i}"
            conf = {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False}
            c = Consumer(conf)
            try:
                c.assign([TopicPartition(topic, 0)])
                (tp,) = c.commit(offsets=[TopicPartition(topic, 0, 100 + i)], asynchronous=False)
                assert tp.error is None
            finally:
                c.close()
            expected[group] = 100 + i
        broker.stop(hard=True)  # SIGKILL: no flush, no clean-shutdown marker
        removed = _cut_offsets_topic_to_recovery_points(tmp_path / "data")
        assert removed > 0  # the segments really lost the commits: only the journal has them
        broker.start()
        got = {group: _committed(broker.bootstrap, group, topic) for group in expected}
        assert got == expected
    finally:
        broker.close()
