"""Exactly-once consume-transform-produce with aiokafka's transactional producer.

aiokafka's ``send_offsets_to_transaction(offsets, group_id)`` sends AddOffsetsToTxn and then
TxnOffsetCommit without member fields (generation -1, no member id), which the group
coordinator accepts in any group state (Kafka's ``ClassicGroup.validateOffsetCommit`` for a
transactional commit); the offsets count only with the COMMIT marker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import ProducerFenced
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
    with eos_broker_process(tmp_path_factory, "eos-aiokafka") as b:
        yield b


def test_aiokafka_offsets_sent_to_a_committed_transaction_count_and_an_aborted_ones_do_not(
    eos_broker: BrokerProcess,
) -> None:
    bootstrap = eos_broker.bootstrap
    create_topic(bootstrap, "eos-a-in", 1)
    create_topic(bootstrap, "eos-a-out", 1)
    tp = TopicPartition("eos-a-in", 0)

    async def scenario() -> list[int]:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="eos-a-tid")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait("eos-a-out", b"out01", partition=0)
                await p.send_offsets_to_transaction({tp: 2}, "eos-a-group")
            after_commit = committed(bootstrap, "eos-a-group", "eos-a-in", 1)
            await p.begin_transaction()
            await p.send_and_wait("eos-a-out", b"out23", partition=0)
            await p.send_offsets_to_transaction({tp: 4}, "eos-a-group")
            await p.abort_transaction()
            async with p.transaction():
                await p.send_and_wait("eos-a-out", b"__end__", key=b"__end__", partition=0)
        finally:
            await p.stop()
        return after_commit

    assert asyncio.run(scenario()) == [2]
    assert committed(bootstrap, "eos-a-group", "eos-a-in", 1) == [2]
    assert [v for _, v in read_to_sentinel(bootstrap, "eos-a-out", 1, "read_committed")] == [b"out01"]
    everything = read_to_sentinel(bootstrap, "eos-a-out", 1, "read_uncommitted")
    assert [v for _, v in everything] == [b"out01", b"out23"]


def test_aiokafka_zombie_with_the_same_transactional_id_is_fenced_and_its_offsets_never_count(
    eos_broker: BrokerProcess,
) -> None:
    bootstrap = eos_broker.bootstrap
    create_topic(bootstrap, "eos-az-in", 1)
    create_topic(bootstrap, "eos-az-out", 1)
    tp = TopicPartition("eos-az-in", 0)

    async def scenario() -> None:
        zombie = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="eos-az-tid")
        successor = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="eos-az-tid")
        await zombie.start()
        try:
            await zombie.begin_transaction()
            await zombie.send_and_wait("eos-az-out", b"zombie", partition=0)
            await zombie.send_offsets_to_transaction({tp: 7}, "eos-az-group")
            await successor.start()  # InitProducerId: fences the zombie, aborts its transaction
            with pytest.raises(ProducerFenced):
                await zombie.commit_transaction()
            async with successor.transaction():
                await successor.send_and_wait("eos-az-out", b"successor", partition=0)
                await successor.send_offsets_to_transaction({tp: 3}, "eos-az-group")
        finally:
            await successor.stop()
            await zombie.stop()

    asyncio.run(scenario())
    assert committed(bootstrap, "eos-az-group", "eos-az-in", 1) == [3]


def test_aiokafka_consume_transform_produce_killed_at_random_points_outputs_every_result_exactly_once(
    eos_broker: BrokerProcess, tmp_path: Path
) -> None:
    """As the confluent-kafka test of the same name, with aiokafka's consumer and
    transactional producer in the worker."""
    chaos_outputs_every_result_exactly_once(
        client="aiokafka", bootstrap=eos_broker.bootstrap, name="eos-chaos-a", seed=4747, log_dir=tmp_path
    )
