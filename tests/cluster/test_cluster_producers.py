"""Producers on a 3-broker cluster whose leaders and transaction coordinators move (docs/cluster.md).

* **Leader stopped under an idempotent acks=all producer**: the producer is told
  NOT_LEADER_OR_FOLLOWER (or loses its connection), refreshes its metadata and sends the
  batches in flight again to the new leader; the broker's producer state (one log, shared by
  every replica here as a replicated log's is in Kafka) recognises the batches that were
  already appended. Every acknowledged record is read back exactly once, in the order sent
  (Kafka's ``ProducerIdempotenceTest`` / ``TransactionsBounceTest`` assert the same).
* **A transaction whose coordinator moves between begin and commit** (and one whose
  coordinator's broker is stopped): EndTxn reaches the old coordinator, which answers
  NOT_COORDINATOR; the producer finds the new one, which loaded the ongoing transaction from
  ``__transaction_state`` (``TransactionStateManager.loadTransactionsForTxnTopicPartition``),
  and commits there. A read_committed consumer reads exactly the transaction's records.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_clients import wait_until

from groupcoord.testing import Cluster

TOPIC = "payments"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3) as c:
        c.create_topic(TOPIC, partitions=2, replication_factor=3)
        yield c


def _confluent_producer(cluster: Cluster, **extra: Any) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {"bootstrap.servers": cluster.bootstrap, "topic.metadata.refresh.interval.ms": 1000, **extra}
    )


def test_leader_stopped_under_an_idempotent_acks_all_producer(cluster: Cluster) -> None:
    producer = _confluent_producer(cluster, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5})
    acked: list[bytes] = []
    failed: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(str(err))
        elif msg.partition() == 0:
            acked.append(msg.value())

    leader = cluster.leader_of(TOPIC, 0)
    stop = threading.Event()
    sent = [0]

    def send() -> None:
        while not stop.is_set() and sent[0] < 3000:
            producer.produce(TOPIC, value=b"%06d" % sent[0], partition=0, on_delivery=delivered)
            sent[0] += 1
            producer.poll(0)
            if sent[0] % 50 == 0:
                time.sleep(0.005)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        wait_until("records acknowledged before the stop", lambda: len(acked) >= 300)
        cluster.stop_broker(leader)
        assert cluster.leader_of(TOPIC, 0) not in (leader, -1)
        sender.join(120)
    finally:
        stop.set()
        sender.join(60)
    assert producer.flush(60) == 0
    assert not failed, failed[:5]
    assert len(acked) == sent[0] == 3000
    values = [r.value for r in cluster.records(TOPIC, 0)]
    assert values == sorted(values)  # in the order sent
    assert len(values) == len(set(values))  # none twice
    assert set(acked) <= set(values)  # every acknowledged record
    epochs = {r.leader_epoch for r in cluster.records(TOPIC, 0)}
    assert epochs == {0, 1}  # stamped with the leader epoch of the leader that appended them
    cluster.start_broker(leader)


def _read_committed(cluster: Cluster, expected: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < expected and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
        end = time.monotonic() + 1.0  # nothing more than expected arrives
        while time.monotonic() < end:
            m = consumer.poll(0.1)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("how", ["move", "stop"])
def test_a_transaction_whose_coordinator_moves_between_begin_and_commit(cluster: Cluster, how: str) -> None:
    tid = f"payments-{how}"
    producer = _confluent_producer(cluster, **{"transactional.id": tid})
    producer.init_transactions(30)
    old = cluster.coordinator_of(tid, transactional=True)
    assert old >= 0
    producer.begin_transaction()
    for i in range(10):
        producer.produce(TOPIC, value=b"t%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    other = next(n for n in cluster.node_ids if n != old)
    if how == "move":
        cluster.move_transaction_coordinator(tid, other)
        assert cluster.coordinator_of(tid, transactional=True) == other
    else:
        cluster.stop_broker(old)
        assert cluster.coordinator_of(tid, transactional=True) not in (old, -1)
    producer.commit_transaction(60)
    assert sorted(_read_committed(cluster, 10)) == sorted(b"t%d" % i for i in range(10))
    # a second transaction on the new coordinator, aborted: read_committed never sees it
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"aborted", partition=0)
    assert producer.flush(30) == 0
    producer.abort_transaction(60)
    assert sorted(_read_committed(cluster, 10)) == sorted(b"t%d" % i for i in range(10))
    if how == "stop":
        cluster.start_broker(old)
