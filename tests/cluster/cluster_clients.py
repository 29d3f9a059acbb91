"""Group members of four real clients for the cluster failover tests, each on its own thread:
confluent-kafka, kafka-python, aiokafka and groupcoord's own ``Consumer``.

Every member subscribes to one topic, records each value it is given (in order, per partition)
and commits synchronously after each poll that returned records; a failed commit (the
coordinator moving) is left to the next one. :func:`produce` is an idempotent ``acks=all``
confluent-kafka producer. The scenarios (``run_steady``, ``run_rebalance``) drive a
:class:`~groupcoord.testing.Cluster` around them and assert exact outcomes.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from groupcoord.testing import Cluster, TopicPartition

#: Short heartbeats so that rebalances and coordinator changes are noticed quickly; sessions long
#: enough that no member expires while a coordinator moves (the point of the tests).
SESSION_MS = 20_000
HEARTBEAT_MS = 300


def wait_until(what: str, condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


class Member(Protocol):
    name: str
    seen: list[tuple[int, int, bytes]]

    def start(self) -> None: ...

    def stop(self) -> None: ...


class _Threaded:
    """A member loop on its own thread; ``seen`` holds (partition, offset, value)."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.bootstrap, self.group, self.topic, self.name = bootstrap, group, topic, name
        self.seen: list[tuple[int, int, bytes]] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name=f"member-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), f"{self.name} did not stop"
        assert not self.errors, f"{self.name}: {self.errors!r}"

    def _main(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by stop()
            self.errors.append(exc)

    def _run(self) -> None:
        raise NotImplementedError


class ConfluentMember(_Threaded):
    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "client.id": self.name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": SESSION_MS,
                "heartbeat.interval.ms": HEARTBEAT_MS,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        consumer.subscribe([self.topic])
        try:
            while not self._stop.is_set():
                msgs = consumer.consume(100, 0.2)
                got = [m for m in msgs if m.error() is None]
                for m in got:
                    self.seen.append((m.partition(), m.offset(), m.value()))
                if got:
                    with contextlib.suppress(KafkaException):
                        consumer.commit(asynchronous=False)
        finally:
            consumer.close()


class KafkaPythonMember(_Threaded):
    def _run(self) -> None:
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        consumer = KafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap.split(","),
            group_id=self.group,
            client_id=self.name,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            metadata_max_age_ms=1000,
        )
        try:
            while not self._stop.is_set():
                batches = consumer.poll(200)
                got = [r for records in batches.values() for r in records]
                for r in got:
                    self.seen.append((r.partition, r.offset, r.value))
                if got:
                    with contextlib.suppress(KafkaError):
                        consumer.commit()
        finally:
            consumer.close()


class AioKafkaMember(_Threaded):
    def _run(self) -> None:
        asyncio.run(self._amain())

    async def _amain(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.errors import KafkaError

        consumer = AIOKafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=self.name,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            metadata_max_age_ms=1000,
        )
        await consumer.start()
        try:
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=200)
                got = [r for records in batches.values() for r in records]
                for r in got:
                    self.seen.append((r.partition, r.offset, r.value))
                if got:
                    with contextlib.suppress(KafkaError):
                        await consumer.commit()
        finally:
            await consumer.stop()


class OurMember(_Threaded):
    def _run(self) -> None:
        from groupcoord.client import Consumer
        from groupcoord.client.errors import KafkaClientError

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "client.id": self.name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": SESSION_MS,
                "heartbeat.interval.ms": HEARTBEAT_MS,
                "metadata.max.age.ms": 1000,
            }
        )
        consumer.subscribe([self.topic])
        try:
            while not self._stop.is_set():
                got = consumer.poll(0.2)
                for r in got:
                    self.seen.append((r.partition, r.offset, bytes(r.value or b"")))
                if got:
                    with contextlib.suppress(KafkaClientError):
                        consumer.commit()
        finally:
            consumer.close()


MEMBERS: dict[str, type[_Threaded]] = {
    "confluent": ConfluentMember,
    "kafka-python": KafkaPythonMember,
    "aiokafka": AioKafkaMember,
    "ours": OurMember,
}


def produce(
    bootstrap: str, topic: str, values: Iterable[bytes], partitions: int
) -> dict[bytes, tuple[int, int]]:
    """An idempotent acks=all producer; every value acknowledged, value -> (partition, offset)."""
    from confluent_kafka import Producer

    acked: dict[bytes, tuple[int, int]] = {}
    failed: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            acked[msg.value()] = (msg.partition(), msg.offset())

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions, on_delivery=delivered)
        producer.poll(0)
    left = producer.flush(60)
    assert left == 0 and not failed, (left, failed)
    return acked


def consumed(members: Iterable[Member]) -> set[bytes]:
    return {v for m in members for _p, _o, v in list(m.seen)}


def end_offsets(cluster: Cluster, topic: str, partitions: int) -> dict[TopicPartition, int]:
    """Each partition's log end offset (its records' count: nothing is deleted here)."""
    counts = dict.fromkeys(range(partitions), 0)
    for r in cluster.records(topic):
        counts[r.partition] = max(counts[r.partition], r.offset + 1)
    return {TopicPartition(topic, p): n for p, n in counts.items()}


def wait_committed(cluster: Cluster, group: str, expected: dict[TopicPartition, int]) -> None:
    def done() -> bool:
        try:
            return cluster.committed(group) == expected
        except Exception:  # the coordinator loading or moving: ask again
            return False

    wait_until(f"{group} to commit {expected}", done)
