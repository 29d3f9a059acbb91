"""aiokafka against a broker process: admin, produce, restart, consume."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from conftest import BrokerProcess, Headers, Workload

pytestmark = pytest.mark.e2e

N = 10_000
PARTITIONS = 3
Consumed = dict[int, list[tuple[int, bytes, bytes, Headers, int]]]


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        resp = await admin.create_topics([NewTopic(name, partitions, 1)])
        assert [(t[0], t[1]) for t in resp.topic_errors] == [(name, 0)]
    finally:
        await admin.close()


async def consume_until(
    bootstrap: str, topic: str, partitions: int, done: Callable[[Consumed], bool]
) -> Consumed:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    await c.start()
    out: Consumed = {p: [] for p in range(partitions)}
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        deadline = time.monotonic() + 60
        while not done(out) and time.monotonic() < deadline:
            batch = await c.getmany(timeout_ms=1000, max_records=5000)
            for tp, msgs in batch.items():
                for m in msgs:
                    out[tp.partition].append((m.offset, m.key, m.value, tuple(m.headers), m.timestamp))
    finally:
        await c.stop()
    return out


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_records_survive_produce_restart_consume_byte_for_byte(
    broker: BrokerProcess, codec: str | None
) -> None:
    topic = f"aio-{codec or 'none'}"
    records = Workload.records(N, PARTITIONS, seed=200 + len(codec or ""))

    async def produce() -> None:
        await create_topic(broker.bootstrap, topic, PARTITIONS)
        p = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, compression_type=codec, linger_ms=5, acks="all"
        )
        await p.start()
        try:
            futures = [
                await p.send(
                    topic,
                    key=r.key,
                    value=r.value,
                    partition=r.partition,
                    headers=list(r.headers),
                    timestamp_ms=r.timestamp,
                )
                for r in records
            ]
            metas = await asyncio.gather(*futures)
        finally:
            await p.stop()
        offsets: dict[int, list[int]] = {}
        for m in metas:
            offsets.setdefault(m.partition, []).append(m.offset)
        assert all(o == list(range(len(o))) for o in offsets.values())

    asyncio.run(produce())
    broker.restart()
    consumed = asyncio.run(
        consume_until(broker.bootstrap, topic, PARTITIONS, lambda got: sum(map(len, got.values())) >= N)
    )
    Workload.assert_consumed_exactly(records, consumed)


def test_every_acknowledged_record_survives_sigkill_during_acks_all_produce(broker_factory) -> None:  # type: ignore[no-untyped-def]
    b: BrokerProcess = broker_factory()
    topic = "aio-crash"
    acked: list[tuple[int, int, bytes]] = []

    async def produce_then_crash() -> None:
        await create_topic(b.bootstrap, topic, 2)
        p = AIOKafkaProducer(bootstrap_servers=b.bootstrap, acks="all", linger_ms=1, request_timeout_ms=3000)
        await p.start()
        pending: set[asyncio.Future[object]] = set()

        def on_done(fut: asyncio.Future[object], value: bytes) -> None:
            pending.discard(fut)
            if not fut.cancelled() and fut.exception() is None:
                md = fut.result()
                acked.append((md.partition, md.offset, value))  # type: ignore[attr-defined]

        i = 0
        killed = False
        while not killed:
            value = f"crash-{i}".encode()
            fut = await p.send(topic, value=value, partition=i % 2)
            pending.add(fut)
            fut.add_done_callback(lambda f, v=value: on_done(f, v))
            i += 1
            if i % 100 == 0:
                await asyncio.sleep(0)
            if len(acked) >= 2000:
                b.kill()
                killed = True
        await asyncio.sleep(0.3)
        for fut in list(pending):
            fut.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(p.stop(), timeout=5)

    asyncio.run(produce_then_crash())
    snapshot = list(acked)
    assert len(snapshot) >= 2000

    b.start()
    last = {part: max(off for pp, off, _ in snapshot if pp == part) for part in (0, 1)}
    consumed = asyncio.run(
        consume_until(b.bootstrap, topic, 2, lambda got: all(len(got[q]) > last[q] for q in (0, 1)))
    )
    stored = {(part, row[0]): row[2] for part, rows in consumed.items() for row in rows}
    missing = [(part, off) for part, off, value in snapshot if stored.get((part, off)) != value]
    assert missing == []
