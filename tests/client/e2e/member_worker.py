"""One consumer-group member in its own process, for the client's end-to-end tests.

``python member_worker.py --client groupcoord|groupcoord-async|confluent|kafka-python|aiokafka
--bootstrap HOST:PORT --group G --topic T --assignor range|roundrobin|cooperative-sticky``

It writes one JSON object per line on stdout:

* ``{"e": "ready"}`` once the consumer exists (and, for ours, ``"thread": name`` of the
  heartbeat thread),
* ``{"e": "assigned", "partitions": [..], "leader": bool|null}`` for the partitions added by a
  rebalance (eager: all of them; cooperative: the increment),
* ``{"e": "revoked", "partitions": [..]}`` / ``{"e": "lost", "partitions": [..]}`` for those taken away,
* ``{"e": "rec", "p": partition, "o": offset}`` for every record,
* ``{"e": "committed", "offsets": {"p": next}}`` after every synchronous commit,
* ``{"e": "stalled"}`` / ``{"e": "resumed"}`` around a stall, ``{"e": "closed"}`` at the end.

Commands on stdin: ``close`` (leave and exit 0), ``stall`` (stop calling poll until
``resume``: the member's poll interval runs out while its heartbeats go on). It commits
synchronously after every batch and in its revocation callback, so a group that rebalances
consumes every record exactly once. SIGKILL is how tests simulate a crash.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import sys
import threading
from typing import Any


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def stdin_commands() -> queue.Queue[str]:
    commands: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in sys.stdin:
            commands.put(line.strip())
        commands.put("close")

    threading.Thread(target=pump, daemon=True).start()
    return commands


class Control:
    """Reads commands between polls; ``stall`` blocks here (no poll) until ``resume``."""

    def __init__(self, commands: queue.Queue[str]) -> None:
        self.commands = commands

    def should_close(self) -> bool:
        while True:
            try:
                cmd = self.commands.get_nowait()
            except queue.Empty:
                return False
            if cmd == "close":
                return True
            if cmd == "stall":
                emit({"e": "stalled"})
                while True:
                    cmd = self.commands.get()
                    if cmd == "close":
                        return True
                    if cmd == "resume":
                        emit({"e": "resumed"})
                        break


def run_groupcoord(args: argparse.Namespace, commands: queue.Queue[str]) -> None:
    from groupcoord.client.consumer import Consumer
    from groupcoord.client.types import OffsetAndMetadata, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": args.session_timeout_ms,
            "heartbeat.interval.ms": args.heartbeat_interval_ms,
            "max.poll.interval.ms": args.max_poll_interval_ms,
            "partition.assignment.strategy": args.assignor,
            "metadata.max.age.ms": 1000,
        }
    )
    thread = consumer.heartbeat_thread
    emit({"e": "ready", "thread": thread.name if thread is not None else None})
    pending: dict[int, int] = {}

    def commit_pending() -> None:
        if not pending:
            return
        offsets = {TopicPartition(args.topic, p): OffsetAndMetadata(offset=o) for p, o in pending.items()}
        consumer.commit(offsets)
        emit({"e": "committed", "offsets": {str(p): o for p, o in sorted(pending.items())}})
        pending.clear()

    def on_assign(parts: list[TopicPartition]) -> None:
        core = consumer._engine.core
        emit(
            {
                "e": "assigned",
                "partitions": sorted(tp.partition for tp in parts),
                "leader": bool(core.is_leader),
            }
        )

    def on_revoke(parts: list[TopicPartition]) -> None:
        commit_pending()
        emit({"e": "revoked", "partitions": sorted(tp.partition for tp in parts)})

    def on_lost(parts: list[TopicPartition]) -> None:
        pending.clear()  # the partitions may belong to another member now: do not commit
        emit({"e": "lost", "partitions": sorted(tp.partition for tp in parts)})

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    control = Control(commands)
    while not control.should_close():
        for rec in consumer.poll(0.1):
            emit({"e": "rec", "p": rec.partition, "o": rec.offset})
            pending[rec.partition] = rec.offset + 1
        commit_pending()
    commit_pending()
    consumer.close()
    emit({"e": "closed"})


def run_groupcoord_async(args: argparse.Namespace, commands: queue.Queue[str]) -> None:
    from groupcoord.client.aio import AsyncConsumer
    from groupcoord.client.types import OffsetAndMetadata, TopicPartition

    async def main() -> None:
        consumer = AsyncConsumer(
            {
                "bootstrap.servers": args.bootstrap,
                "group.id": args.group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": args.session_timeout_ms,
                "heartbeat.interval.ms": args.heartbeat_interval_ms,
                "max.poll.interval.ms": args.max_poll_interval_ms,
                "partition.assignment.strategy": args.assignor,
                "metadata.max.age.ms": 1000,
            }
        )
        emit({"e": "ready", "thread": None})
        pending: dict[int, int] = {}

        async def commit_pending() -> None:
            if not pending:
                return
            offsets = {TopicPartition(args.topic, p): OffsetAndMetadata(offset=o) for p, o in pending.items()}
            await consumer.commit(offsets)
            emit({"e": "committed", "offsets": {str(p): o for p, o in sorted(pending.items())}})
            pending.clear()

        def on_assign(parts: list[TopicPartition]) -> None:
            emit({"e": "assigned", "partitions": sorted(tp.partition for tp in parts), "leader": None})

        async def on_revoke(parts: list[TopicPartition]) -> None:
            await commit_pending()
            emit({"e": "revoked", "partitions": sorted(tp.partition for tp in parts)})

        def on_lost(parts: list[TopicPartition]) -> None:
            pending.clear()
            emit({"e": "lost", "partitions": sorted(tp.partition for tp in parts)})

        consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        control = Control(commands)
        while not control.should_close():
            for rec in await consumer.poll(0.1):
                emit({"e": "rec", "p": rec.partition, "o": rec.offset})
                pending[rec.partition] = rec.offset + 1
            await commit_pending()
        await commit_pending()
        await consumer.close()
        emit({"e": "closed"})

    asyncio.run(main())


def run_confluent(args: argparse.Namespace, commands: queue.Queue[str]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": args.session_timeout_ms,
            "heartbeat.interval.ms": args.heartbeat_interval_ms,
            "max.poll.interval.ms": max(args.max_poll_interval_ms, args.session_timeout_ms),
            "partition.assignment.strategy": args.assignor,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    emit({"e": "ready"})
    pending: dict[int, int] = {}

    def commit_pending() -> None:
        if not pending:
            return
        offsets = [TopicPartition(args.topic, p, o) for p, o in sorted(pending.items())]
        consumer.commit(offsets=offsets, asynchronous=False)
        emit({"e": "committed", "offsets": {str(p): o for p, o in sorted(pending.items())}})
        pending.clear()

    def on_assign(_c: Any, parts: list[Any]) -> None:
        emit({"e": "assigned", "partitions": sorted(tp.partition for tp in parts), "leader": None})

    def on_revoke(_c: Any, parts: list[Any]) -> None:
        commit_pending()
        emit({"e": "revoked", "partitions": sorted(tp.partition for tp in parts)})

    def on_lost(_c: Any, parts: list[Any]) -> None:
        pending.clear()
        emit({"e": "lost", "partitions": sorted(tp.partition for tp in parts)})

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    control = Control(commands)
    while not control.should_close():
        for msg in consumer.consume(num_messages=500, timeout=0.1):
            if msg.error():
                continue
            emit({"e": "rec", "p": msg.partition(), "o": msg.offset()})
            pending[msg.partition()] = msg.offset() + 1
        commit_pending()
    commit_pending()
    consumer.close()
    emit({"e": "closed"})


def run_kafka_python(args: argparse.Namespace, commands: queue.Queue[str]) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.structs import OffsetAndMetadata

    assignor = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }[args.assignor]
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        max_poll_interval_ms=max(args.max_poll_interval_ms, args.session_timeout_ms),
        metadata_max_age_ms=1000,
        partition_assignment_strategy=[assignor],
    )
    emit({"e": "ready"})
    pending: dict[int, int] = {}

    def commit_pending() -> None:
        if not pending:
            return
        consumer.commit(
            {TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1) for p, o in pending.items()}
        )
        emit({"e": "committed", "offsets": {str(p): o for p, o in sorted(pending.items())}})
        pending.clear()

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            commit_pending()
            emit({"e": "revoked", "partitions": sorted(tp.partition for tp in revoked)})

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit({"e": "assigned", "partitions": sorted(tp.partition for tp in assigned), "leader": None})

        def on_partitions_lost(self, lost: Any) -> None:
            pending.clear()
            emit({"e": "lost", "partitions": sorted(tp.partition for tp in lost)})

    consumer.subscribe([args.topic], listener=Listener())
    control = Control(commands)
    while not control.should_close():
        for tp, records in consumer.poll(timeout_ms=100, max_records=500).items():
            for rec in records:
                emit({"e": "rec", "p": tp.partition, "o": rec.offset})
                pending[tp.partition] = rec.offset + 1
        commit_pending()
    commit_pending()
    consumer.close()
    emit({"e": "closed"})


def run_aiokafka(args: argparse.Namespace, commands: queue.Queue[str]) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.structs import OffsetAndMetadata

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[args.assignor]

    async def main() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=args.bootstrap,
            group_id=args.group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=args.session_timeout_ms,
            heartbeat_interval_ms=args.heartbeat_interval_ms,
            max_poll_interval_ms=max(args.max_poll_interval_ms, args.session_timeout_ms),
            metadata_max_age_ms=1000,
            partition_assignment_strategy=(assignor,),
        )
        pending: dict[int, int] = {}

        async def commit_pending() -> None:
            if not pending:
                return
            await consumer.commit(
                {TopicPartition(args.topic, p): OffsetAndMetadata(o, "") for p, o in pending.items()}
            )
            emit({"e": "committed", "offsets": {str(p): o for p, o in sorted(pending.items())}})
            pending.clear()

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                await commit_pending()
                emit({"e": "revoked", "partitions": sorted(tp.partition for tp in revoked)})

            async def on_partitions_assigned(self, assigned: Any) -> None:
                emit({"e": "assigned", "partitions": sorted(tp.partition for tp in assigned), "leader": None})

        consumer.subscribe([args.topic], listener=Listener())
        await consumer.start()
        emit({"e": "ready"})
        control = Control(commands)
        try:
            while not control.should_close():
                batches = await consumer.getmany(timeout_ms=100, max_records=500)
                for tp, records in batches.items():
                    for rec in records:
                        emit({"e": "rec", "p": tp.partition, "o": rec.offset})
                        pending[tp.partition] = rec.offset + 1
                await commit_pending()
            await commit_pending()
        finally:
            await consumer.stop()
        emit({"e": "closed"})

    asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--client",
        required=True,
        choices=["groupcoord", "groupcoord-async", "confluent", "kafka-python", "aiokafka"],
    )
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--assignor", required=True, choices=["range", "roundrobin", "cooperative-sticky"])
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=300)
    parser.add_argument("--max-poll-interval-ms", type=int, default=300000)
    args = parser.parse_args()
    if args.client.startswith("groupcoord"):
        import logging

        if os.environ.get("GROUPCOORD_WORKER_DEBUG"):
            from groupcoord.client import wire

            original = wire.read_response

            def logged(request: Any, response: Any) -> Any:
                out = original(request, response)
                logging.getLogger("worker").debug("answer %s -> %s", type(request).__name__, out)
                return out

            wire.read_response = logged  # type: ignore[assignment]
        logging.basicConfig(
            level=logging.DEBUG if os.environ.get("GROUPCOORD_WORKER_DEBUG") else logging.INFO,
            stream=sys.stderr,
            format="%(asctime)s %(name)s %(message)s",
        )
    commands = stdin_commands()
    runner = {
        "groupcoord": run_groupcoord,
        "groupcoord-async": run_groupcoord_async,
        "confluent": run_confluent,
        "kafka-python": run_kafka_python,
        "aiokafka": run_aiokafka,
    }
    runner[args.client](args, commands)


if __name__ == "__main__":
    main()
