"""confluent-kafka's transactional producer against a broker process: commit, abort, fencing.

Kafka: ``TransactionCoordinator`` (InitProducerId with a transactional id, AddPartitionsToTxn,
EndTxn, markers), ``UnifiedLog`` read_committed reads. librdkafka's
``init_transactions`` / ``begin_transaction`` / ``commit_transaction`` / ``abort_transaction``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from conftest import BrokerProcess
from test_produce_consume_confluent import create_topic

pytestmark = pytest.mark.e2e


def _producer(bootstrap: str, tid: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5})


def _read(bootstrap: str, topic: str, isolation: str, done: Callable[[list[str]], bool]) -> list[str]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[str] = []
    deadline = time.monotonic() + 30
    try:
        while not done(got) and time.monotonic() < deadline:
            for m in c.consume(num_messages=100, timeout=0.5):
                if m.error() is None:
                    got.append(m.value().decode())
    finally:
        c.close()
    return got


def test_committed_records_are_read_once_and_aborted_ones_only_uncommitted(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    broker = broker_factory()
    topic = "txn-out"
    create_topic(broker.bootstrap, topic, 1)
    p = _producer(broker.bootstrap, "txn-1")
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=f"c{i}".encode(), partition=0)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(2):
        p.produce(topic, value=f"a{i}".encode(), partition=0)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, value=b"c3", partition=0)
    p.commit_transaction(30)

    committed = _read(broker.bootstrap, topic, "read_committed", lambda got: "c3" in got)
    assert committed == ["c0", "c1", "c2", "c3"]
    everything = _read(broker.bootstrap, topic, "read_uncommitted", lambda got: "c3" in got)
    assert everything == ["c0", "c1", "c2", "a0", "a1", "c3"]


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    broker = broker_factory()
    topic = "txn-fence"
    create_topic(broker.bootstrap, topic, 1)
    zombie = _producer(broker.bootstrap, "txn-z")
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie", partition=0)
    zombie.flush(30)
    successor = _producer(broker.bootstrap, "txn-z")
    successor.init_transactions(30)  # fences the zombie and aborts its open transaction
    successor.begin_transaction()
    successor.produce(topic, value=b"successor", partition=0)
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as info:
        zombie.commit_transaction(30)
    error = info.value.args[0]
    assert (error.code(), error.fatal()) == (KafkaError._FENCED, True)
    committed = _read(broker.bootstrap, topic, "read_committed", lambda got: "successor" in got)
    assert committed == ["successor"]
