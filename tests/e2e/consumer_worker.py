"""A consumer-group member in its own process, for end-to-end group tests.

Run as ``python consumer_worker.py --client confluent|kafka-python|aiokafka --bootstrap HOST:PORT
--group G --topic T [--instance-id I] [--session-timeout-ms N]``. It subscribes with the client's
default assignors (unless ``--assignor`` is given), and writes one JSON object per line on stdout:

* ``{"e": "assigned", "partitions": [..]}`` after every assignment,
* ``{"e": "revoked", "partitions": [..]}`` before partitions are taken away,
* ``{"e": "rec", "p": partition, "o": offset, "k": key}`` for every record consumed,
* ``{"e": "committed", "offsets": {"p": next_offset}}`` after every synchronous commit,
* ``{"e": "closed"}`` after a graceful close.

It commits synchronously after every batch it consumed and before partitions are revoked, so a
group that rebalances consumes every record exactly once. A line ``close`` on stdin makes it
leave the group and exit 0; SIGKILL is how tests simulate a crash.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
        commands.put("close")  # stdin closed: the test is gone, leave cleanly

    threading.Thread(target=pump, daemon=True).start()
    return commands


def key_text(key: bytes | None) -> str | None:
    return None if key is None else key.decode("utf-8", "replace")


def run_confluent(args: argparse.Namespace, commands: queue.Queue[str]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": args.heartbeat_interval_ms,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    if args.assignor:
        conf["partition.assignment.strategy"] = args.assignor
    consumer = Consumer(conf)
    pending: dict[int, int] = {}

    def commit_pending() -> None:
        if not pending:
            return
        offsets = [TopicPartition(args.topic, p, o) for p, o in sorted(pending.items())]
        consumer.commit(offsets=offsets, asynchronous=False)
        emit({"e": "committed", "offsets": {str(p): o for p, o in sorted(pending.items())}})
        pending.clear()

    def on_assign(_c: Any, parts: list[Any]) -> None:
        emit({"e": "assigned", "partitions": sorted(tp.partition for tp in parts)})

    def on_revoke(_c: Any, parts: list[Any]) -> None:
        commit_pending()
        emit({"e": "revoked", "partitions": sorted(tp.partition for tp in parts)})

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)
    while True:
        try:
            if commands.get_nowait() == "close":
                break
        except queue.Empty:
            pass
        msgs = consumer.consume(num_messages=500, timeout=0.1)
        for msg in msgs:
            if msg.error():
                continue
            emit({"e": "rec", "p": msg.partition(), "o": msg.offset(), "k": key_text(msg.key())})
            pending[msg.partition()] = msg.offset() + 1
        commit_pending()
    consumer.close()
    emit({"e": "closed"})


def run_kafka_python(args: argparse.Namespace, commands: queue.Queue[str]) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    kwargs: dict[str, Any] = {
        "bootstrap_servers": args.bootstrap,
        "group_id": args.group,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": args.session_timeout_ms,
        "heartbeat_interval_ms": args.heartbeat_interval_ms,
        "metadata_max_age_ms": 1000,
    }
    if args.instance_id:
        kwargs["group_instance_id"] = args.instance_id
    if args.assignor:
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        kwargs["partition_assignment_strategy"] = [
            {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[args.assignor]
        ]
    consumer = KafkaConsumer(**kwargs)
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
            emit({"e": "assigned", "partitions": sorted(tp.partition for tp in assigned)})

    consumer.subscribe([args.topic], listener=Listener())
    while True:
        try:
            if commands.get_nowait() == "close":
                break
        except queue.Empty:
            pass
        batches = consumer.poll(timeout_ms=100, max_records=500)
        for tp, records in batches.items():
            for rec in records:
                emit({"e": "rec", "p": tp.partition, "o": rec.offset, "k": key_text(rec.key)})
                pending[tp.partition] = rec.offset + 1
        commit_pending()
    consumer.close()
    emit({"e": "closed"})


def run_aiokafka(args: argparse.Namespace, commands: queue.Queue[str]) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    async def main() -> None:
        kwargs: dict[str, Any] = {
            "bootstrap_servers": args.bootstrap,
            "group_id": args.group,
            "auto_offset_reset": "earliest",
            "enable_auto_commit": False,
            "session_timeout_ms": args.session_timeout_ms,
            "heartbeat_interval_ms": args.heartbeat_interval_ms,
            "metadata_max_age_ms": 1000,
        }
        if args.instance_id:
            kwargs["group_instance_id"] = args.instance_id
        if args.assignor:
            from aiokafka.coordinator.assignors.range import RangePartitionAssignor
            from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

            kwargs["partition_assignment_strategy"] = (
                {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[args.assignor],
            )
        consumer = AIOKafkaConsumer(**kwargs)
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
                emit({"e": "assigned", "partitions": sorted(tp.partition for tp in assigned)})

        consumer.subscribe([args.topic], listener=Listener())
        await consumer.start()
        try:
            while True:
                try:
                    if commands.get_nowait() == "close":
                        break
                except queue.Empty:
                    pass
                batches = await consumer.getmany(timeout_ms=100, max_records=500)
                for tp, records in batches.items():
                    for rec in records:
                        emit({"e": "rec", "p": tp.partition, "o": rec.offset, "k": key_text(rec.key)})
                        pending[tp.partition] = rec.offset + 1
                await commit_pending()
        finally:
            await consumer.stop()
        emit({"e": "closed"})

    asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", required=True, choices=["confluent", "kafka-python", "aiokafka"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--instance-id")
    parser.add_argument("--assignor", choices=["range", "roundrobin"])
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=500)
    args = parser.parse_args()
    commands = stdin_commands()
    runner = {"confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}
    runner[args.client](args, commands)


if __name__ == "__main__":
    main()
