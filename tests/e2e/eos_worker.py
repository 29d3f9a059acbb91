"""An exactly-once consume-transform-produce loop in its own process, for the SIGKILL tests.

Run as ``python eos_worker.py --client confluent|aiokafka --bootstrap HOST:PORT --group G
--input IN --output OUT --transactional-id T [--instance-id I] [--batch N]``.

It consumes ``IN`` (read_committed, no auto commit) as a member of group ``G``, and for every
batch of up to ``N`` records runs one transaction: each record's result (key unchanged, value
``<value>:out``) produced to the same partition of ``OUT``, the consumer's positions sent to
the transaction (``send_offsets_to_transaction`` with the consumer's group metadata, KIP-447),
then commit. A line per event on stdout: ``ready`` once the first fetch was asked for,
``txn <records>`` after every committed transaction. Tests kill it with SIGKILL at any moment;
a restarted worker with the same transactional id fences the old one's producer, and the
same instance id (static membership) takes its place in the group without a rebalance.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def run_confluent(args: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, Producer

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "group.instance.id": args.instance_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 6000,
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "transactional.id": args.transactional_id,
            "transaction.timeout.ms": 10000,
            "linger.ms": 1,
        }
    )
    producer.init_transactions(30)
    consumer.subscribe([args.input])
    said_ready = False
    while True:
        records = consumer.consume(num_messages=args.batch, timeout=0.2)
        if not said_ready:
            say("ready")
            said_ready = True
        records = [m for m in records if m.error() is None]
        if not records:
            continue
        producer.begin_transaction()
        for m in records:
            producer.produce(args.output, key=m.key(), value=m.value() + b":out", partition=m.partition())
        positions = consumer.position(consumer.assignment())
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        say(f"txn {len(records)}")


async def run_aiokafka(args: argparse.Namespace) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    consumer = AIOKafkaConsumer(
        args.input,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        session_timeout_ms=6000,
    )
    producer = AIOKafkaProducer(
        bootstrap_servers=args.bootstrap,
        transactional_id=args.transactional_id,
        transaction_timeout_ms=10000,
        linger_ms=1,
    )
    await producer.start()
    await consumer.start()
    said_ready = False
    while True:
        batches: dict[Any, list[Any]] = await consumer.getmany(timeout_ms=200, max_records=args.batch)
        if not said_ready:
            say("ready")
            said_ready = True
        if not batches:
            continue
        n = 0
        async with producer.transaction():
            offsets: dict[TopicPartition, int] = {}
            for tp, records in batches.items():
                for m in records:
                    await producer.send(
                        args.output, key=m.key, value=m.value + b":out", partition=tp.partition
                    )
                    n += 1
                offsets[tp] = records[-1].offset + 1
            await producer.send_offsets_to_transaction(offsets, args.group)
        say(f"txn {n}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", choices=("confluent", "aiokafka"), required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--transactional-id", required=True)
    ap.add_argument("--instance-id", default="eos-worker")
    ap.add_argument("--batch", type=int, default=5)
    args = ap.parse_args()
    if args.client == "confluent":
        run_confluent(args)
    else:
        asyncio.run(run_aiokafka(args))


if __name__ == "__main__":
    main()
