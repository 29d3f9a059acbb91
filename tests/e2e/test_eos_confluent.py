"""Exactly-once consume-transform-produce with confluent-kafka (librdkafka) against a broker process.

``send_offsets_to_transaction`` sends AddOffsetsToTxn to the transaction coordinator and
TxnOffsetCommit (v3, with the consumer's member id, generation and instance id) to the group
coordinator; the offsets become the group's committed offsets only with the transaction's
COMMIT marker. Kafka: KIP-98, KIP-447; ``TransactionCoordinator``,
``GroupCoordinator.handleTxnCommitOffsets`` / 4.x ``OffsetMetadataManager``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from conftest import BrokerProcess
from eos_harness import (
    chaos_outputs_every_result_exactly_once,
    committed,
    eos_broker_process,
    read_to_sentinel,
)
from test_produce_consume_confluent import create_topic

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def eos_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with eos_broker_process(tmp_path_factory, "eos-confluent") as b:
        yield b


def _consumer(bootstrap: str, group: str, topic: str) -> Consumer:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    return c


def _take(c: Consumer, n: int) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        got += [m.value() for m in c.consume(num_messages=n - len(got), timeout=0.5) if m.error() is None]
    assert len(got) == n, got
    return got


def test_offsets_sent_to_a_committed_transaction_are_committed_and_an_aborted_ones_are_not(
    eos_broker: BrokerProcess,
) -> None:
    """Commit: the group's offset is the one sent; abort: the output is visible only to
    read_uncommitted and the group's offset stays where the last commit left it."""
    bootstrap = eos_broker.bootstrap
    create_topic(bootstrap, "eos-c-in", 1)
    create_topic(bootstrap, "eos-c-out", 1)
    feed = Producer({"bootstrap.servers": bootstrap})
    for i in range(4):
        feed.produce("eos-c-in", value=f"in{i}".encode(), partition=0)
    assert feed.flush(30) == 0
    c = _consumer(bootstrap, "eos-c-group", "eos-c-in")
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "eos-c-tid"})
    p.init_transactions(30)
    try:
        assert _take(c, 2) == [b"in0", b"in1"]
        p.begin_transaction()
        p.produce("eos-c-out", value=b"out01", partition=0)
        p.send_offsets_to_transaction([TopicPartition("eos-c-in", 0, 2)], c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        assert committed(bootstrap, "eos-c-group", "eos-c-in", 1) == [2]

        assert _take(c, 2) == [b"in2", b"in3"]
        p.begin_transaction()
        p.produce("eos-c-out", value=b"out23", partition=0)
        # abort_transaction purges what librdkafka has not sent yet: flush, so that out23 is in
        # the log (and aborted there) as the read_uncommitted check below expects
        assert p.flush(30) == 0
        p.send_offsets_to_transaction([TopicPartition("eos-c-in", 0, 4)], c.consumer_group_metadata(), 30)
        p.abort_transaction(30)
        assert committed(bootstrap, "eos-c-group", "eos-c-in", 1) == [2]

        p.begin_transaction()
        p.produce("eos-c-out", value=b"__end__", key=b"__end__", partition=0)
        p.commit_transaction(30)
    finally:
        c.close()
    assert [v for _, v in read_to_sentinel(bootstrap, "eos-c-out", 1, "read_committed")] == [b"out01"]
    assert [v for _, v in read_to_sentinel(bootstrap, "eos-c-out", 1, "read_uncommitted")] == [
        b"out01",
        b"out23",
    ]


def test_a_zombie_producer_with_the_same_transactional_id_cannot_commit_its_offsets(
    eos_broker: BrokerProcess,
) -> None:
    """A successor's init_transactions fences the zombie (epoch bump) and aborts its open
    transaction: the zombie's commit fails as fenced (fatal) and its offsets never count."""
    bootstrap = eos_broker.bootstrap
    create_topic(bootstrap, "eos-z-in", 1)
    create_topic(bootstrap, "eos-z-out", 1)
    c = _consumer(bootstrap, "eos-z-group", "eos-z-in")
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": "eos-z-tid"})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce("eos-z-out", value=b"zombie", partition=0)
    zombie.send_offsets_to_transaction([TopicPartition("eos-z-in", 0, 7)], c.consumer_group_metadata(), 30)
    successor = Producer({"bootstrap.servers": bootstrap, "transactional.id": "eos-z-tid"})
    successor.init_transactions(30)
    with pytest.raises(KafkaException) as info:
        zombie.commit_transaction(30)
    error = info.value.args[0]
    assert (error.code(), error.fatal()) == (KafkaError._FENCED, True)
    successor.begin_transaction()
    successor.produce("eos-z-out", value=b"successor", partition=0)
    successor.send_offsets_to_transaction([TopicPartition("eos-z-in", 0, 3)], c.consumer_group_metadata(), 30)
    successor.commit_transaction(30)
    c.close()
    assert committed(bootstrap, "eos-z-group", "eos-z-in", 1) == [3]


def test_consume_transform_produce_killed_at_random_points_outputs_every_result_exactly_once(
    eos_broker: BrokerProcess, tmp_path: Path
) -> None:
    """ROUNDS workers SIGKILLed at random moments (seeded), then one run to the end: a
    read_committed reader sees every input record's result exactly once, the group's committed
    offsets are the input's end offsets, and read_uncommitted sees at least as much (the killed
    workers' aborted output included)."""
    chaos_outputs_every_result_exactly_once(
        client="confluent", bootstrap=eos_broker.bootstrap, name="eos-chaos-c", seed=1717, log_dir=tmp_path
    )


INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT, OFFSET_FETCH = 22, 25, 26, 28, 9


def test_txn_offset_commit_every_version_over_the_wire_and_an_older_epoch_is_rejected(
    eos_broker: BrokerProcess,
) -> None:
    """TxnOffsetCommit v0-4 as Kafka 3.9/4.x serve them: pending (require_stable OffsetFetch
    answers UNSTABLE_OFFSET_COMMIT) until EndTxn's COMMIT marker, then committed; an unknown
    partition gets UNKNOWN_TOPIC_OR_PARTITION (``KafkaApis.handleTxnOffsetCommitRequest``); a
    batch of an epoch older than the one the offsets partition last saw is
    INVALID_PRODUCER_EPOCH; without AddOffsetsToTxn first, INVALID_TXN_STATE (KIP-890 part 1,
    the group coordinator verifying with the transaction coordinator as Kafka 3.6+ does)."""
    from groupcoord.errors import ErrorCode
    from groupcoord.protocol.client import WireClient

    bootstrap = eos_broker.bootstrap
    create_topic(bootstrap, "eos-w-in", 1)
    tid, group = "eos-w-tid", "eos-w-group"

    def fetch(c: WireClient, stable: bool) -> tuple[int, int]:
        r = c.call(
            OFFSET_FETCH,
            8,
            groups=[{"group_id": group, "topics": [{"name": "eos-w-in", "partition_indexes": [0]}]}],
            require_stable=stable,
        )
        (p,) = r.groups[0].topics[0].partitions
        return int(p.committed_offset), int(p.error_code)

    def commit(
        c: WireClient, version: int, pid: int, epoch: int, offset: int, topic: str = "eos-w-in"
    ) -> int:
        r = c.call(
            TXN_OFFSET_COMMIT,
            version,
            transactional_id=tid,
            group_id=group,
            producer_id=pid,
            producer_epoch=epoch,
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "m",
                        }
                    ],
                }
            ],
        )
        return int(r.topics[0].partitions[0].error_code)

    def until_not_concurrent(call: Callable[[], Any]) -> Any:
        """Retried while the previous transaction completes, as clients retry
        CONCURRENT_TRANSACTIONS."""
        deadline = time.monotonic() + 20
        while int((r := call()).error_code) == ErrorCode.CONCURRENT_TRANSACTIONS:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        return r

    with WireClient("127.0.0.1", eos_broker.port, client_id="eos-wire") as c:
        init = c.call(INIT_PRODUCER_ID, 4, transactional_id=tid, transaction_timeout=60000)
        pid, epoch = int(init.producer_id), int(init.producer_epoch)
        # KIP-890 part 1: the group's offsets partition must be in the ongoing transaction
        assert commit(c, 3, pid, epoch, 1) == ErrorCode.INVALID_TXN_STATE  # no AddOffsetsToTxn
        assert commit(c, 3, pid + 1, epoch, 1) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        for version in range(5):
            add = until_not_concurrent(
                lambda: c.call(
                    ADD_OFFSETS_TO_TXN,
                    3,
                    transactional_id=tid,
                    producer_id=pid,
                    producer_epoch=epoch,
                    group_id=group,
                )
            )
            assert int(add.error_code) == ErrorCode.NONE
            assert commit(c, version, pid, epoch, 10 + version, topic="eos-w-nope") == (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            assert commit(c, version, pid, epoch, 10 + version) == ErrorCode.NONE
            assert fetch(c, stable=True) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
            end = c.call(
                END_TXN, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True
            )
            assert int(end.error_code) == ErrorCode.NONE
            deadline = time.monotonic() + 20  # the marker is written after EndTxn is answered
            while fetch(c, stable=True) != (10 + version, ErrorCode.NONE):
                assert time.monotonic() < deadline, fetch(c, stable=True)
                time.sleep(0.02)
        # A new epoch writes to the offsets partition; a batch of the old epoch is then refused.
        init = until_not_concurrent(
            lambda: c.call(INIT_PRODUCER_ID, 4, transactional_id=tid, transaction_timeout=60000)
        )
        assert (int(init.producer_id), int(init.producer_epoch)) == (pid, epoch + 1)
        c.call(
            ADD_OFFSETS_TO_TXN,
            3,
            transactional_id=tid,
            producer_id=pid,
            producer_epoch=epoch + 1,
            group_id=group,
        )
        assert commit(c, 4, pid, epoch + 1, 30) == ErrorCode.NONE
        assert commit(c, 4, pid, epoch, 31) == ErrorCode.INVALID_PRODUCER_EPOCH
        c.call(END_TXN, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch + 1, committed=False)
        deadline = time.monotonic() + 20
        while fetch(c, stable=True) != (14, ErrorCode.NONE):
            assert time.monotonic() < deadline, fetch(c, stable=True)
            time.sleep(0.02)


PRODUCE, ADD_PARTITIONS_TO_TXN = 0, 24


def test_a_transactional_batch_to_a_partition_not_in_the_transaction_is_invalid_txn_state(
    eos_broker: BrokerProcess,
) -> None:
    """KIP-890 part 1 (Kafka 3.6+ ``ReplicaManager.appendRecords`` verifying with the transaction
    coordinator): a transactional batch for a partition AddPartitionsToTxn did not add is refused
    with INVALID_TXN_STATE, so it cannot leave a transaction no marker will ever end; once the
    partition is added the same batch is appended."""
    from groupcoord.errors import ErrorCode
    from groupcoord.formats.batch import ATTR_TRANSACTIONAL, build_batch
    from groupcoord.protocol.client import WireClient

    bootstrap = eos_broker.bootstrap
    create_topic(bootstrap, "eos-v-out", 1)
    tid = "eos-v-tid"
    with WireClient("127.0.0.1", eos_broker.port, client_id="eos-verify") as c:
        init = c.call(INIT_PRODUCER_ID, 4, transactional_id=tid, transaction_timeout=60000)
        pid, epoch = int(init.producer_id), int(init.producer_epoch)
        batch = build_batch(
            [(None, b"x", ())],
            timestamp_ms=int(time.time() * 1000),
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
            attributes=ATTR_TRANSACTIONAL,
        )

        def produce() -> tuple[int, int]:
            r = c.call(
                PRODUCE,
                9,
                transactional_id=tid,
                acks=-1,
                timeout=30000,
                topic_data=[{"name": "eos-v-out", "partition_data": [{"index": 0, "records": batch}]}],
            )
            p = r.responses[0].partition_responses[0]
            return int(p.error_code), int(p.base_offset)

        assert produce()[0] == ErrorCode.INVALID_TXN_STATE
        add = c.call(
            ADD_PARTITIONS_TO_TXN,
            3,
            v3_and_below_transactional_id=tid,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[{"name": "eos-v-out", "partitions": [0]}],
        )
        assert int(add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code) == 0
        assert produce() == (ErrorCode.NONE, 0)
        end = c.call(END_TXN, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=False)
        assert int(end.error_code) == ErrorCode.NONE
