"""groupcoord.testing with aiokafka (disconnect, delay) and the subprocess variant of Broker."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import CommitFailedError, RebalanceInProgressError
from aiokafka.structs import TopicPartition as ATopicPartition

from groupcoord.testing import Broker, TopicPartition


async def consume(consumer: AIOKafkaConsumer, n: int, timeout: float = 30.0) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        assert time.monotonic() < deadline, f"only {got} of {n} records"
        batches = await consumer.getmany(timeout_ms=200)
        for records in batches.values():
            got.extend(r.value for r in records)
    return got


def test_disconnect_severs_an_aiokafka_consumer_which_reconnects_and_stays_in_its_group(
    kafka_broker: Broker,
) -> None:
    """A severed connection is not a departure: the member reconnects and keeps its
    membership (same member id, same generation) and its partitions."""
    kafka_broker.create_topic("orders", 1)
    kafka_broker.produce("orders", [b"1"])

    async def scenario() -> None:
        consumer = AIOKafkaConsumer(
            "orders",
            bootstrap_servers=kafka_broker.bootstrap,
            group_id="app",
            client_id="aio",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            assert await consume(consumer, 1) == [b"1"]
            before = await asyncio.to_thread(kafka_broker.wait_for_group, "app", members=1)

            severed = await asyncio.to_thread(kafka_broker.disconnect, "aio")

            assert severed >= 1
            await asyncio.to_thread(kafka_broker.produce, "orders", [b"2"])
            assert await consume(consumer, 1) == [b"2"]
            after = await asyncio.to_thread(kafka_broker.wait_for_group, "app", members=1)
            assert after.member("aio").member_id == before.member("aio").member_id
            assert after.generation == before.generation
            assert after.member("aio").assignment == {TopicPartition("orders", 0)}
        finally:
            await consumer.stop()

    asyncio.run(scenario())


def test_delay_holds_an_aiokafka_commit_answer_and_fail_next_counts_down(kafka_broker: Broker) -> None:
    """``delay`` holds the answer (the commit is applied when the request arrives, answered
    after the delay); ``fail_next(count=2)`` fails exactly two commits (aiokafka retries a
    retriable error by itself) and leaves the offsets as they were."""
    kafka_broker.create_topic("orders", 1)
    kafka_broker.produce("orders", [b"1", b"2"])

    async def scenario() -> None:
        consumer = AIOKafkaConsumer(
            "orders",
            bootstrap_servers=kafka_broker.bootstrap,
            group_id="app",
            client_id="aio",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            assert await consume(consumer, 2) == [b"1", b"2"]
            tp = ATopicPartition("orders", 0)
            kafka_broker.delay("OffsetCommit", 1.0, count=1, client_id="aio")
            started = time.monotonic()
            await consumer.commit({tp: 1})
            assert time.monotonic() - started >= 1.0  # a lower bound: the answer was held
            assert await asyncio.to_thread(kafka_broker.committed, "app") == {TopicPartition("orders", 0): 1}

            # A retriable error: aiokafka retries the commit by itself, through both failures.
            kafka_broker.fail_next("OffsetCommit", 14, count=2, group="app")  # COORDINATOR_LOAD_IN_PROGRESS
            await consumer.commit({tp: 2})
            assert kafka_broker.faults.pending_failures() == 0
            assert await asyncio.to_thread(kafka_broker.committed, "app") == {TopicPartition("orders", 0): 2}
            # A fatal one reaches the application (aiokafka raises CommitFailedError from it).
            kafka_broker.fail_next("OffsetCommit", "REBALANCE_IN_PROGRESS", group="app")
            with pytest.raises(CommitFailedError) as raised:
                await consumer.commit({tp: 1})
            cause = raised.value.__cause__ or raised.value.__context__
            assert isinstance(cause, RebalanceInProgressError)
            assert await asyncio.to_thread(kafka_broker.committed, "app") == {TopicPartition("orders", 0): 2}
        finally:
            await consumer.stop()

    asyncio.run(scenario())


def test_subprocess_broker_restarts_hard_on_the_same_port_with_its_committed_offsets() -> None:
    """``Broker(subprocess=True)``: SIGKILL and a new process on the same port and data; the
    control channel follows the new process (faults set after the restart reach it)."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    from kafka.errors import GroupAuthorizationFailedError

    with Broker(subprocess=True) as broker:
        broker.create_topic("orders", 1)
        broker.produce("orders", [b"1", b"2", b"3"])
        consumer = KafkaConsumer(
            "orders",
            bootstrap_servers=broker.bootstrap,
            group_id="app",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            consumer_timeout_ms=20_000,
        )
        got = [next(consumer).value for _ in range(3)]
        consumer.commit()
        consumer.close()
        assert got == [b"1", b"2", b"3"]
        port = broker.port

        broker.restart(hard=True)

        assert broker.port == port
        assert broker.committed("app") == {TopicPartition("orders", 0): 3}
        assert [r.value for r in broker.records("orders")] == [b"1", b"2", b"3"]
        broker.fail_next("OffsetFetch", "GROUP_AUTHORIZATION_FAILED", group="app")
        assert broker.faults.pending_failures() == 1
        again = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="app", enable_auto_commit=False)
        try:
            with pytest.raises(GroupAuthorizationFailedError):
                again.committed(KTopicPartition("orders", 0))
            assert broker.faults.pending_failures() == 0
            assert again.committed(KTopicPartition("orders", 0)) == 3
        finally:
            again.close()
        assert "listening on" in broker.log_tail()
