"""aiokafka's transactional producer against a broker process: commit and abort.

aiokafka's ``AIOKafkaProducer(transactional_id=...)`` drives FindCoordinator (key type 1),
InitProducerId, AddPartitionsToTxn and EndTxn; Kafka's ``TransactionCoordinator`` answers them.
Its read_committed consumer drops aborted records with the Fetch response's
``aborted_transactions``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from conftest import BrokerProcess
from test_produce_consume_aiokafka import create_topic

pytestmark = pytest.mark.e2e


async def _read(bootstrap: str, topic: str, isolation: str, last: bytes) -> list[bytes]:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level=isolation)
    await c.start()
    got: list[bytes] = []
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        deadline = time.monotonic() + 30
        while last not in got and time.monotonic() < deadline:
            batch = await c.getmany(tp, timeout_ms=500)
            got.extend(m.value for m in batch.get(tp, []) if m.value is not None)
    finally:
        await c.stop()
    return got


def test_aiokafka_commits_and_aborts(broker_factory: Callable[..., BrokerProcess]) -> None:
    broker = broker_factory()
    topic = "aio-txn"

    async def scenario() -> tuple[list[bytes], list[bytes]]:
        await create_topic(broker.bootstrap, topic, 1)
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aio-1")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait(topic, b"c0", partition=0)
                await p.send_and_wait(topic, b"c1", partition=0)
            await p.begin_transaction()
            await p.send_and_wait(topic, b"a0", partition=0)
            await p.abort_transaction()
            async with p.transaction():
                await p.send_and_wait(topic, b"c2", partition=0)
        finally:
            await p.stop()
        committed = await _read(broker.bootstrap, topic, "read_committed", b"c2")
        everything = await _read(broker.bootstrap, topic, "read_uncommitted", b"c2")
        return committed, everything

    committed, everything = asyncio.run(scenario())
    assert committed == [b"c0", b"c1", b"c2"]
    assert everything == [b"c0", b"c1", b"a0", b"c2"]
