"""confluent-kafka's transactional producer against a broker process: commit, abort, fencing.

Kafka: ``TransactionCoordinator`` (InitProducerId with a transactional id, AddPartitionsToTxn,
EndTxn, markers), ``UnifiedLog`` read_committed reads. librdkafka's
``init_transactions`` / ``begin_transaction`` / ``commit_transaction`` / ``abort_transaction``.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from conftest import BrokerProcess
from test_produce_consume_confluent import create_topic

from groupcoord.errors import ErrorCode
from groupcoord.protocol.client import WireClient

pytestmark = pytest.mark.e2e

INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 22, 24, 65, 66


def _producer(bootstrap: str, tid: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5})


def read_isolated(
    bootstrap: str,
    topic: str,
    isolation: str,
    done: Callable[[list[str]], bool],
    *,
    with_high_watermark: bool = False,
) -> list[str]:
    """The values of ``topic``'s partition 0 read from offset 0 at ``isolation`` until ``done``
    (or 30 s); ``with_high_watermark`` appends ``hi=N``, the end this isolation level sees
    (the LSO for read_committed), asked of the same consumer."""
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
        if with_high_watermark:
            _lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
            got.append(f"hi={hi}")
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

    committed = read_isolated(broker.bootstrap, topic, "read_committed", lambda got: "c3" in got)
    assert committed == ["c0", "c1", "c2", "c3"]
    everything = read_isolated(broker.bootstrap, topic, "read_uncommitted", lambda got: "c3" in got)
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
    committed = read_isolated(broker.bootstrap, topic, "read_committed", lambda got: "successor" in got)
    assert committed == ["successor"]


def test_describe_and_list_transactions_show_an_open_transaction(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    """KIP-664 DescribeTransactions / ListTransactions v0 over the wire (Kafka's
    ``TransactionCoordinator.handleDescribeTransactions`` / ``handleListTransactions``)."""
    broker = broker_factory()
    topic = "txn-describe"
    create_topic(broker.bootstrap, topic, 2)
    p = _producer(broker.bootstrap, "txn-d")
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"x", partition=1)
    p.flush(30)
    c = WireClient("127.0.0.1", broker.port, client_id="txn-admin")
    try:
        d = c.call(DESCRIBE_TRANSACTIONS, 0, transactional_ids=["txn-d", "nobody"])
        found, missing = d.transaction_states
        assert (ErrorCode(int(found.error_code)), found.transaction_state) == (ErrorCode.NONE, "Ongoing")
        assert [(t.topic, list(t.partitions)) for t in found.topics] == [(topic, [1])]
        assert ErrorCode(int(missing.error_code)) is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        listed = c.call(LIST_TRANSACTIONS, 0, state_filters=["Ongoing", "Bogus"], producer_id_filters=[])
        assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [
            ("txn-d", "Ongoing")
        ]
        assert list(listed.unknown_state_filters) == ["Bogus"]
        assert int(found.producer_id) == int(listed.transaction_states[0].producer_id)
    finally:
        c.close()
    p.abort_transaction(30)


def test_an_open_transaction_survives_a_broker_kill_and_is_aborted_by_the_next_instance(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    """The coordinator replays ``__transaction_state`` at start: the transaction left Ongoing by a
    SIGKILLed broker is found, its producer fenced and the transaction aborted when a new
    instance initialises (Kafka's ``TransactionStateManager`` load, then
    ``handleInitProducerId`` in Ongoing). The ABORT marker lands in the partition's
    ``.txnindex``."""
    broker = broker_factory()
    topic = "txn-restart"
    create_topic(broker.bootstrap, topic, 1)
    first = _producer(broker.bootstrap, "txn-r")
    first.init_transactions(30)
    first.begin_transaction()
    first.produce(topic, value=b"lost", partition=0)
    assert first.flush(30) == 0
    broker.kill()
    broker.start()
    second = _producer(broker.bootstrap, "txn-r")
    second.init_transactions(60)
    second.begin_transaction()
    second.produce(topic, value=b"after", partition=0)
    second.commit_transaction(30)
    assert read_isolated(broker.bootstrap, topic, "read_committed", lambda got: "after" in got) == ["after"]
    assert read_isolated(broker.bootstrap, topic, "read_uncommitted", lambda got: "after" in got) == [
        "lost",
        "after",
    ]
    index = broker.data_dir / f"{topic}-0" / "00000000000000000000.txnindex"
    assert len(index.read_bytes()) == 34  # one AbortedTxn entry


def test_add_partitions_with_an_unknown_partition_adds_nothing(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    """Kafka's ``KafkaApis.handleAddPartitionsToTxnRequest``: a partition that does not exist gets
    UNKNOWN_TOPIC_OR_PARTITION, the others of the request OPERATION_NOT_ATTEMPTED, and the
    transaction does not start."""
    broker = broker_factory()
    create_topic(broker.bootstrap, "txn-known", 1)
    c = WireClient("127.0.0.1", broker.port, client_id="txn-wire")
    try:
        init = c.call(
            INIT_PRODUCER_ID, 4, transactional_id="txn-w", transaction_timeout=datetime.timedelta(seconds=60)
        )
        assert ErrorCode(int(init.error_code)) is ErrorCode.NONE
        topics = [{"name": "txn-known", "partitions": [0, 5]}, {"name": "txn-missing", "partitions": [0]}]
        r = c.call(
            ADD_PARTITIONS_TO_TXN,
            3,
            v3_and_below_transactional_id="txn-w",
            v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch,
            v3_and_below_topics=topics,
        )
        got = {
            (t.name, int(p.partition_index)): ErrorCode(int(p.partition_error_code))
            for t in r.results_by_topic_v3_and_below
            for p in t.results_by_partition
        }
        assert got == {
            ("txn-known", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
            ("txn-known", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("txn-missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        d = c.call(DESCRIBE_TRANSACTIONS, 0, transactional_ids=["txn-w"])
        assert d.transaction_states[0].transaction_state == "Empty"
    finally:
        c.close()
