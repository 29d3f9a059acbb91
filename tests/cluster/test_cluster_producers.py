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

import asyncio
import time
from collections.abc import Callable, Iterator
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


N = 3000
STOP_AFTER = 300


def _confluent_sequence(cluster: Cluster, on_acked: Callable[[], None]) -> list[bytes]:
    """Send N values to partition 0 with an idempotent acks=all confluent-kafka producer, calling
    ``on_acked`` once STOP_AFTER are acknowledged; the acknowledged values."""
    producer = _confluent_producer(cluster, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5})
    acked: list[bytes] = []
    failed: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            acked.append(msg.value())

    for i in range(N):
        producer.produce(TOPIC, value=b"%06d" % i, partition=0, on_delivery=delivered)
        producer.poll(0)
        if i == 2 * STOP_AFTER:
            wait_until("acknowledgements", lambda: producer.poll(0.05) >= 0 and len(acked) >= STOP_AFTER)
            on_acked()
    assert producer.flush(60) == 0
    assert not failed, failed[:5]
    return acked


def _kafka_python_sequence(cluster: Cluster, on_acked: Callable[[], None]) -> list[bytes]:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap.split(","),
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        metadata_max_age_ms=1000,
    )
    try:
        futures = []
        for i in range(N):
            futures.append(producer.send(TOPIC, value=b"%06d" % i, partition=0))
            if i == 2 * STOP_AFTER:
                futures[STOP_AFTER].get(timeout=30)
                on_acked()
        producer.flush(60)
        return [b"%06d" % i for i, f in enumerate(futures) if f.get(timeout=60) is not None]
    finally:
        producer.close(10)


def _aiokafka_sequence(cluster: Cluster, on_acked: Callable[[], None]) -> list[bytes]:
    async def run() -> list[bytes]:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap,
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
            metadata_max_age_ms=1000,
        )
        await producer.start()
        try:
            futures = []
            for i in range(N):
                futures.append(await producer.send(TOPIC, value=b"%06d" % i, partition=0))
                if i == 2 * STOP_AFTER:
                    await futures[STOP_AFTER]
                    await asyncio.get_running_loop().run_in_executor(None, on_acked)
            await producer.flush()
            return [b"%06d" % i for i, f in enumerate(futures) if (await f) is not None]
        finally:
            await producer.stop()

    return asyncio.run(run())


SEQUENCES: dict[str, Callable[[Cluster, Callable[[], None]], list[bytes]]] = {
    "confluent": _confluent_sequence,
    "kafka-python": _kafka_python_sequence,
    "aiokafka": _aiokafka_sequence,
}


@pytest.mark.parametrize("client", sorted(SEQUENCES))
def test_leader_stopped_under_an_idempotent_acks_all_producer(cluster: Cluster, client: str) -> None:
    leader = cluster.leader_of(TOPIC, 0)

    def stop_leader() -> None:
        cluster.stop_broker(leader)
        assert cluster.leader_of(TOPIC, 0) not in (leader, -1)

    acked = SEQUENCES[client](cluster, stop_leader)
    assert len(acked) == N
    records = cluster.records(TOPIC, 0)
    values = [r.value for r in records]
    assert values == sorted(values)  # in the order sent
    assert len(values) == len(set(values))  # none twice
    assert set(acked) == set(values)  # every acknowledged record, nothing else
    # stamped with the epoch of the leader that appended them: 0, then 1 after the stop
    epochs = [r.leader_epoch for r in records]
    assert epochs == sorted(epochs) and set(epochs) == {0, 1}
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


def _move_or_stop(cluster: Cluster, tid: str, how: str) -> int:
    """Move ``tid``'s transaction coordinator away, or stop its broker; the old coordinator."""
    old = cluster.coordinator_of(tid, transactional=True)
    assert old >= 0
    other = next(n for n in cluster.node_ids if n != old)
    if how == "move":
        cluster.move_transaction_coordinator(tid, other)
        assert cluster.coordinator_of(tid, transactional=True) == other
    else:
        cluster.stop_broker(old)
        assert cluster.coordinator_of(tid, transactional=True) not in (old, -1)
    return old


@pytest.mark.parametrize("how", ["move", "stop"])
def test_an_aiokafka_transaction_whose_coordinator_moves_between_begin_and_commit(
    cluster: Cluster, how: str
) -> None:
    tid = f"aio-payments-{how}"

    async def run() -> int:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id=tid)
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(10):
                    await producer.send_and_wait(TOPIC, value=b"t%d" % i, partition=i % 2)
                old = await asyncio.get_running_loop().run_in_executor(None, _move_or_stop, cluster, tid, how)
            return old
        finally:
            await producer.stop()

    old = asyncio.run(run())
    assert sorted(_read_committed(cluster, 10)) == sorted(b"t%d" % i for i in range(10))
    if how == "stop":
        cluster.start_broker(old)


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
