"""A consumer-group member in its own process, for the end-to-end group and client tests.

The one worker of ``tests/e2e/group_harness.py`` (the broker's group tests) and
``tests/client/e2e/client_harness.py`` (the client's mixed-group tests)::

    python consumer_worker.py --client groupcoord|groupcoord-async|confluent|kafka-python|aiokafka
        --bootstrap HOST:PORT --group G --topic T [--assignor range|roundrobin|cooperative-sticky]
        [--instance-id I] [--session-timeout-ms N] [--heartbeat-interval-ms N]
        [--max-poll-interval-ms N]

Without ``--assignor`` it subscribes with the client's default assignors. It writes one JSON
object per line on stdout:

* ``{"e": "ready"}`` once the consumer exists (ours add ``"thread"``: the heartbeat thread's name),
* ``{"e": "assigned", "partitions": [..], "leader": bool|null}`` for the partitions a rebalance
  adds (eager assignors: all of them; cooperative: the increment; ``leader`` only from ours),
* ``{"e": "revoked", "partitions": [..]}`` / ``{"e": "lost", "partitions": [..]}`` for those taken away,
* ``{"e": "rec", "p": partition, "o": offset, "k": key}`` for every record consumed,
* ``{"e": "committed", "offsets": {"p": next_offset}}`` after every synchronous commit,
* ``{"e": "stalled"}`` / ``{"e": "resumed"}`` around a stall, ``{"e": "closed"}`` after a graceful close.

It commits synchronously after every batch it consumed and before partitions are revoked (not
lost ones: they may be another member's already), so a group that rebalances consumes every
record exactly once. Commands on stdin: ``close`` (leave the group and exit 0), ``stall`` (stop
calling poll until ``resume``: the poll interval runs out while heartbeats go on). SIGKILL is how
tests simulate a crash. Every client logs to stderr (warnings; with ``GROUPCOORD_WORKER_DEBUG`` set,
debug logs, and for ours every decoded answer): the client harness keeps a tail of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import queue
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

CLIENTS = ("groupcoord", "groupcoord-async", "confluent", "kafka-python", "aiokafka")
ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def partitions(parts: Any) -> list[int]:
    return sorted(tp.partition for tp in parts)


class Control:
    """Commands from stdin, read between polls; ``stall`` blocks here (no poll) until ``resume``."""

    def __init__(self) -> None:
        self.commands: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in sys.stdin:
            self.commands.put(line.strip())
        self.commands.put("close")  # stdin closed: the test is gone, leave cleanly

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


class Progress:
    """What the member consumed and has not committed yet, and the events that report it."""

    def __init__(self) -> None:
        self.pending: dict[int, int] = {}

    def consumed(self, partition: int, offset: int, key: bytes | None) -> None:
        emit(
            {
                "e": "rec",
                "p": partition,
                "o": offset,
                "k": None if key is None else key.decode("utf-8", "replace"),
            }
        )
        self.pending[partition] = offset + 1

    def commit(self, commit: Callable[[dict[int, int]], None]) -> None:
        if self.pending:
            commit(self.pending)
            self._committed()

    async def commit_async(self, commit: Callable[[dict[int, int]], Awaitable[None]]) -> None:
        if self.pending:
            await commit(self.pending)
            self._committed()

    def _committed(self) -> None:
        emit({"e": "committed", "offsets": {str(p): o for p, o in sorted(self.pending.items())}})
        self.pending.clear()

    def assigned(self, parts: Any, leader: bool | None = None) -> None:
        emit({"e": "assigned", "partitions": partitions(parts), "leader": leader})

    def revoked(self, parts: Any) -> None:
        emit({"e": "revoked", "partitions": partitions(parts)})

    def lost(self, parts: Any) -> None:
        self.pending.clear()  # the partitions may belong to another member now: do not commit
        emit({"e": "lost", "partitions": partitions(parts)})


def common(args: argparse.Namespace, *, java_names: bool) -> dict[str, Any]:
    """The settings every client gets, in Java's property names or as Python keywords."""
    conf = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": args.heartbeat_interval_ms,
        "max.poll.interval.ms": max(args.max_poll_interval_ms, args.session_timeout_ms),
        "metadata.max.age.ms": 1000,
    }
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    if java_names:
        return conf
    return {k.replace(".", "_"): v for k, v in conf.items()}


# ------------------------------------------------------------------------------ ours
def run_groupcoord(args: argparse.Namespace, control: Control) -> None:
    from groupcoord.client.consumer import Consumer
    from groupcoord.client.types import OffsetAndMetadata, TopicPartition

    conf = common(args, java_names=True)
    conf["max.poll.interval.ms"] = args.max_poll_interval_ms
    if args.assignor:
        conf["partition.assignment.strategy"] = args.assignor
    consumer = Consumer(conf)
    thread = consumer.heartbeat_thread
    emit({"e": "ready", "thread": thread.name if thread is not None else None})
    progress = Progress()

    def commit() -> None:
        progress.commit(
            lambda pending: consumer.commit(
                {TopicPartition(args.topic, p): OffsetAndMetadata(offset=o) for p, o in pending.items()}
            )
        )

    def on_revoke(parts: list[TopicPartition]) -> None:
        commit()
        progress.revoked(parts)

    consumer.subscribe(
        [args.topic],
        on_assign=lambda parts: progress.assigned(parts, bool(consumer._engine.core.is_leader)),
        on_revoke=on_revoke,
        on_lost=progress.lost,
    )
    while not control.should_close():
        for rec in consumer.poll(0.1):
            progress.consumed(rec.partition, rec.offset, rec.key)
        commit()
    commit()
    consumer.close()
    emit({"e": "closed"})


def run_groupcoord_async(args: argparse.Namespace, control: Control) -> None:
    from groupcoord.client.aio import AsyncConsumer
    from groupcoord.client.types import OffsetAndMetadata, TopicPartition

    async def main() -> None:
        conf = common(args, java_names=True)
        conf["max.poll.interval.ms"] = args.max_poll_interval_ms
        if args.assignor:
            conf["partition.assignment.strategy"] = args.assignor
        consumer = AsyncConsumer(conf)
        emit({"e": "ready", "thread": None})
        progress = Progress()

        async def commit() -> None:
            await progress.commit_async(
                lambda pending: consumer.commit(
                    {TopicPartition(args.topic, p): OffsetAndMetadata(offset=o) for p, o in pending.items()}
                )
            )

        async def on_revoke(parts: list[TopicPartition]) -> None:
            await commit()
            progress.revoked(parts)

        consumer.subscribe(
            [args.topic], on_assign=progress.assigned, on_revoke=on_revoke, on_lost=progress.lost
        )
        while not control.should_close():
            for rec in await consumer.poll(0.1):
                progress.consumed(rec.partition, rec.offset, rec.key)
            await commit()
        await commit()
        await consumer.close()
        emit({"e": "closed"})

    asyncio.run(main())


# ------------------------------------------------------------------------------ theirs
def run_confluent(args: argparse.Namespace, control: Control) -> None:
    from confluent_kafka import Consumer, TopicPartition

    conf = common(args, java_names=True)
    del conf["metadata.max.age.ms"]
    conf["topic.metadata.refresh.interval.ms"] = 1000
    if args.assignor:
        conf["partition.assignment.strategy"] = args.assignor
    consumer = Consumer(conf)
    emit({"e": "ready"})
    progress = Progress()

    def commit() -> None:
        progress.commit(
            lambda pending: consumer.commit(
                offsets=[TopicPartition(args.topic, p, o) for p, o in sorted(pending.items())],
                asynchronous=False,
            )
        )

    def on_revoke(_c: Any, parts: list[Any]) -> None:
        commit()
        progress.revoked(parts)

    consumer.subscribe(
        [args.topic],
        on_assign=lambda _c, parts: progress.assigned(parts),
        on_revoke=on_revoke,
        on_lost=lambda _c, parts: progress.lost(parts),
    )
    while not control.should_close():
        for msg in consumer.consume(num_messages=500, timeout=0.1):
            if not msg.error():
                progress.consumed(msg.partition(), msg.offset(), msg.key())
        commit()
    commit()
    consumer.close()
    emit({"e": "closed"})


def run_kafka_python(args: argparse.Namespace, control: Control) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.structs import OffsetAndMetadata

    kwargs = common(args, java_names=False)
    if args.assignor:
        kwargs["partition_assignment_strategy"] = [
            {
                "range": RangePartitionAssignor,
                "roundrobin": RoundRobinPartitionAssignor,
                "cooperative-sticky": CooperativeStickyAssignor,
            }[args.assignor]
        ]
    consumer = KafkaConsumer(**kwargs)
    emit({"e": "ready"})
    progress = Progress()

    def commit() -> None:
        progress.commit(
            lambda pending: consumer.commit(
                {TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1) for p, o in pending.items()}
            )
        )

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            commit()
            progress.revoked(revoked)

        def on_partitions_assigned(self, assigned: Any) -> None:
            progress.assigned(assigned)

        def on_partitions_lost(self, lost: Any) -> None:
            progress.lost(lost)

    consumer.subscribe([args.topic], listener=Listener())
    # Know the topic's partitions before the first poll joins the group. Without this the leader
    # of kafka-python 3.0.12 assigns from metadata that lacks the topic (its bootstrap metadata asks
    # for no topics), gets the topic a moment later and rejoins because its assignment snapshot no
    # longer matches its metadata snapshot. If that second join outlives the poll's timeout, the
    # leader's _perform_assignment sets the assignment snapshot to the new metadata while the
    # SyncGroup is still in flight; need_rejoin() turns False, no later poll awaits the pending join
    # task, and the member stays in the group (its heartbeats succeed) with no partitions for good.
    # Java keeps completing a pending join: AbstractCoordinator.rejoinNeededOrPending() is
    # ``rejoinNeeded || joinFuture != null``. With the partitions known here, the first generation
    # assigns them all and no metadata-driven rejoin follows. partitions_for_topic fetches metadata
    # (through the listener that rebuilds the snapshot) when the topic is not known yet.
    while not consumer.partitions_for_topic(args.topic):
        if control.should_close():
            consumer.close()
            emit({"e": "closed"})
            return
    while not control.should_close():
        for tp, records in consumer.poll(timeout_ms=100, max_records=500).items():
            for rec in records:
                progress.consumed(tp.partition, rec.offset, rec.key)
        commit()
    commit()
    consumer.close()
    emit({"e": "closed"})


def run_aiokafka(args: argparse.Namespace, control: Control) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.structs import OffsetAndMetadata

    async def main() -> None:
        kwargs = common(args, java_names=False)
        if args.assignor:
            kwargs["partition_assignment_strategy"] = (
                {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[args.assignor],
            )
        consumer = AIOKafkaConsumer(**kwargs)
        progress = Progress()

        async def commit() -> None:
            await progress.commit_async(
                lambda pending: consumer.commit(
                    {TopicPartition(args.topic, p): OffsetAndMetadata(o, "") for p, o in pending.items()}
                )
            )

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                await commit()
                progress.revoked(revoked)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                progress.assigned(assigned)

        consumer.subscribe([args.topic], listener=Listener())
        await consumer.start()
        emit({"e": "ready"})
        try:
            while not control.should_close():
                batches = await consumer.getmany(timeout_ms=100, max_records=500)
                for tp, records in batches.items():
                    for rec in records:
                        progress.consumed(tp.partition, rec.offset, rec.key)
                await commit()
            await commit()
        finally:
            await consumer.stop()
        emit({"e": "closed"})

    asyncio.run(main())


def _log_ours() -> None:
    """Our client logs to stderr (the client harness keeps its tail); with
    ``GROUPCOORD_WORKER_DEBUG`` set, every decoded answer too."""
    debug = bool(os.environ.get("GROUPCOORD_WORKER_DEBUG"))
    if debug:
        from groupcoord.client import wire

        original = wire.read_response

        def logged(request: Any, response: Any) -> Any:
            out = original(request, response)
            logging.getLogger("worker").debug("answer %s -> %s", type(request).__name__, out)
            return out

        wire.read_response = logged  # type: ignore[assignment]
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(message)s",
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", required=True, choices=CLIENTS)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--instance-id")
    parser.add_argument("--assignor", choices=ASSIGNORS)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=500)
    parser.add_argument("--max-poll-interval-ms", type=int, default=300000)
    args = parser.parse_args()
    if args.client.startswith("groupcoord"):
        _log_ours()
    else:  # their warnings (coordinator lost, join failed) reach the harness's stderr tail
        logging.basicConfig(
            level=logging.DEBUG if os.environ.get("GROUPCOORD_WORKER_DEBUG") else logging.WARNING,
            stream=sys.stderr,
            format="%(asctime)s %(name)s %(message)s",
        )
    runner = {
        "groupcoord": run_groupcoord,
        "groupcoord-async": run_groupcoord_async,
        "confluent": run_confluent,
        "kafka-python": run_kafka_python,
        "aiokafka": run_aiokafka,
    }
    runner[args.client](args, Control())


if __name__ == "__main__":
    main()
