"""``group.protocol=consumer`` in ``Consumer`` / ``AsyncConsumer``: the engine drives the KIP-848
member through ``consumer_group_adapter.ConsumerGroupCoordinator``.

The first test drives the engine with scripted broker answers: the application's callbacks run
from ``ConsumerEngine.deliver`` and the member acknowledges only after they returned, as Java's
reconciliation waits for ``ConsumerRebalanceListenerCallbackCompletedEvent``. The second runs the
real blocking ``Consumer`` against a groupcoord broker: today's broker has no ConsumerGroupHeartbeat,
so ``poll`` raises Java's "set group.protocol=classic" error; once the broker side of KIP-848 is
merged, the same test checks that the consumer gets every partition (end-to-end tests with
librdkafka members wait for that broker).
"""

from __future__ import annotations

import asyncio
import inspect
import time

import pytest
from cg_script import COORDINATOR, MEMBER, NAMES, T, ok, owned

from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer import Consumer
from groupcoord.client.consumer_group_adapter import ConsumerGroupCoordinator
from groupcoord.client.consumer_group_messages import ConsumerGroupHeartbeatRequest
from groupcoord.client.engine import ConsumerEngine
from groupcoord.client.errors import FatalGroupError
from groupcoord.client.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    fetch_partitions,
    offset_fetch_response,
)
from groupcoord.client.types import TopicPartition
from groupcoord.errors import ErrorCode
from groupcoord.testing import Broker


def test_engine_runs_callbacks_before_the_member_acknowledges() -> None:
    """The engine hands the member's callbacks to the application; the ack heartbeat goes out
    only after on_assign returned; the added partition starts at its committed offset."""
    config = ConsumerConfig.from_dict(
        {
            "bootstrap.servers": "unused:1",
            "group.id": "g",
            "group.protocol": "consumer",
            "enable.auto.commit": False,
        }
    )
    engine = ConsumerEngine(config)
    core = engine.core
    assert isinstance(core, ConsumerGroupCoordinator)
    core.member.member_id = MEMBER
    core.member.update_topic_names(NAMES)
    seen: list[str] = []
    engine.subscribe(["t"], lambda parts: seen.append(f"assign {parts}"), None, None)
    now = 1_000
    (find,) = core.poll(now)
    assert isinstance(find.request, FindCoordinatorRequest)
    core.on_response(find.request_id, FindCoordinatorResponse(error=ErrorCode.NONE, node=COORDINATOR), now)
    (join,) = core.pending(now)
    assert isinstance(join.request, ConsumerGroupHeartbeatRequest) and join.request.member_epoch == 0
    core.on_response(join.request_id, ok(1, assignment=owned((T, (0,)))), now)
    outs = core.pending(now)
    engine.take_events(core.events())  # on_assign's event: the start offsets are fetched next
    outs += core.pending(now)
    (fetch,) = [o for o in outs if isinstance(o.request, OffsetFetchRequest)]
    assert fetch_partitions(fetch.request) == (TopicPartition("t", 0),)
    assert not [o for o in outs if isinstance(o.request, ConsumerGroupHeartbeatRequest)]
    core.on_response(
        fetch.request_id,
        offset_fetch_response(
            group_id="g",
            error=ErrorCode.NONE,
            offsets=(("t", OffsetFetchPartitionResponse(partition=0, offset=17)),),
        ),
        now,
    )
    engine.take_events(core.events())
    assert engine.early_starts == {TopicPartition("t", 0): 17}  # StartingPositions before the assignment
    calls = engine.deliver()
    assert engine.early_starts == {}  # handed to the fetcher with the assignment
    assert [parts for _, parts in calls] == [[TopicPartition("t", 0)]]
    assert not [o for o in core.pending(now) if isinstance(o.request, ConsumerGroupHeartbeatRequest)]
    for callback, parts in calls:
        callback(parts)
    (ack,) = [o for o in core.pending(now) if isinstance(o.request, ConsumerGroupHeartbeatRequest)]
    assert (ack.request.member_epoch, ack.request.topic_partitions) == (1, owned((T, (0,))))
    assert seen == ["assign [TopicPartition(topic='t', partition=0)]"]
    assert engine.assignment() == {TopicPartition("t", 0)}
    assert engine.fetcher.assigned() == {TopicPartition("t", 0)}


def test_async_callbacks_are_reported_when_awaited() -> None:
    """AsyncConsumer awaits coroutine callbacks: the member hears of one only once it finished."""
    config = ConsumerConfig.from_dict(
        {
            "bootstrap.servers": "unused:1",
            "group.id": "g",
            "group.protocol": "consumer",
            "enable.auto.commit": False,
        }
    )
    engine = ConsumerEngine(config)
    core = engine.core
    assert isinstance(core, ConsumerGroupCoordinator)
    core.member.update_topic_names(NAMES)
    seen: list[str] = []

    async def on_assign(parts: list[TopicPartition]) -> None:
        seen.append("started")
        await asyncio.sleep(0)
        seen.append("finished")

    engine.subscribe(["t"], on_assign, None, None)
    now = 1_000
    (find,) = core.poll(now)
    core.on_response(find.request_id, FindCoordinatorResponse(error=ErrorCode.NONE, node=COORDINATOR), now)
    (join,) = core.pending(now)
    core.on_response(join.request_id, ok(1, assignment=()), now)
    core.pending(now)
    engine.take_events(core.events())
    ((callback, parts),) = engine.deliver()
    pending = callback(parts)
    assert inspect.isawaitable(pending)
    assert not [o for o in core.pending(now) if isinstance(o.request, ConsumerGroupHeartbeatRequest)]

    async def run() -> None:
        await pending

    asyncio.run(run())
    assert seen == ["started", "finished"]
    (ack,) = [o for o in core.pending(now) if isinstance(o.request, ConsumerGroupHeartbeatRequest)]
    assert ack.request.topic_partitions == ()


def test_consumer_with_group_protocol_consumer_against_groupcoord() -> None:
    """The real blocking Consumer with group.protocol=consumer over 127.0.0.1: it joins through
    ConsumerGroupHeartbeat and, alone in its group, is given every partition."""
    with Broker() as broker:
        broker.create_topic("cg-t", partitions=3)
        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": "cg-e2e", "group.protocol": "consumer"}
        )
        try:
            consumer.subscribe(["cg-t"])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(consumer.assignment()) < 3:
                consumer.poll(0.2)
            assert consumer.assignment() == {TopicPartition("cg-t", p) for p in range(3)}
        finally:
            consumer.close(5)


def test_consumer_protocol_switched_off_on_the_broker_is_fatal_for_the_member() -> None:
    """A broker whose group.coordinator.rebalance.protocols leaves out ``consumer`` answers
    ConsumerGroupHeartbeat with UNSUPPORTED_VERSION, which is fatal for the member (Java's
    ``ConsumerHeartbeatRequestManager`` error handling: UNSUPPORTED_VERSION -> fatal)."""
    with Broker(settings={"group.coordinator.rebalance.protocols": "classic"}) as broker:
        broker.create_topic("cg-off", partitions=1)
        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": "cg-off", "group.protocol": "consumer"}
        )
        try:
            consumer.subscribe(["cg-off"])
            deadline = time.monotonic() + 30
            with pytest.raises(FatalGroupError) as raised:
                while time.monotonic() < deadline:
                    consumer.poll(0.2)
            assert raised.value.code is ErrorCode.UNSUPPORTED_VERSION
            assert consumer.assignment() == set()
        finally:
            consumer.close(5)


def test_async_consumer_with_group_protocol_consumer_against_groupcoord() -> None:
    """AsyncConsumer, the same engine: the same outcome as the blocking Consumer."""
    from groupcoord.client.aio import AsyncConsumer

    async def scenario(bootstrap: str) -> set[TopicPartition]:
        consumer = AsyncConsumer(
            {"bootstrap.servers": bootstrap, "group.id": "cg-aio", "group.protocol": "consumer"}
        )
        try:
            consumer.subscribe(["cg-a"])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(consumer.assignment()) < 2:
                await consumer.poll(0.2)
            return set(consumer.assignment())
        finally:
            await consumer.close(5)

    with Broker() as broker:
        broker.create_topic("cg-a", partitions=2)
        assert asyncio.run(scenario(broker.bootstrap)) == {TopicPartition("cg-a", p) for p in range(2)}
