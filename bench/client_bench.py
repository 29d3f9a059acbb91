"""Our client against kafka-python and aiokafka on the same broker, in the same run.

    .venv/bin/python bench/client_bench.py [--records 200000] [--size 512] [--rounds 3]
        [--members 100] [--out bench/results/client_bench.json]

Starts one groupcoord broker (``bench/peer.py``), produces ``--records`` records of ``--size``
bytes into a 4-partition topic with confluent-kafka, then, for ``--rounds`` rounds, consumes the
whole topic once with each consumer in turn (the order rotates each round, so the clients are
interleaved and share whatever the machine is doing):

* ``groupcoord`` - :class:`groupcoord.client.Consumer` (blocking, heartbeat thread),
* ``groupcoord-async`` - :class:`groupcoord.client.AsyncConsumer`,
* ``kafka-python`` - ``KafkaConsumer``,
* ``aiokafka`` - ``AIOKafkaConsumer``.

Each consumer subscribes with a fresh group id and ``auto.offset.reset=earliest`` and polls
until it has every record; MB/s is record-value bytes (10^6 per MB) over the time from
``subscribe`` to the last record (so the group join is included, as an application sees it),
and ``MB/s after first`` excludes the time to the first record.

Then ``--members`` of our Consumers (each polling on its own thread, one process) subscribe to
one group over a topic with as many partitions; the rebalance time is from the first subscribe
until every member owns exactly one partition. Results go to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer

PARTITIONS = 4


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(60)


def produce(bootstrap: str, topic: str, records: int, size: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000, "acks": 1})
    value = os.urandom(size)
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


class Timing:
    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.first: float | None = None
        self.count = 0
        self.end = 0.0

    def got(self, n: int) -> None:
        if n and self.first is None:
            self.first = time.perf_counter()
        self.count += n


def run_groupcoord(bootstrap: str, topic: str, total: int) -> Timing:
    from groupcoord.client import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "max.poll.records": 5000,
        }
    )
    t = Timing()
    c.subscribe([topic])
    while t.count < total:
        t.got(len(c.poll(1.0)))
    t.end = time.perf_counter()
    c.close()
    return t


def run_groupcoord_async(bootstrap: str, topic: str, total: int) -> Timing:
    from groupcoord.client import AsyncConsumer

    async def main() -> Timing:
        c = AsyncConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "max.poll.records": 5000,
            }
        )
        t = Timing()
        c.subscribe([topic])
        while t.count < total:
            t.got(len(await c.poll(1.0)))
        t.end = time.perf_counter()
        await c.close()
        return t

    return asyncio.run(main())


def run_kafka_python(bootstrap: str, topic: str, total: int) -> Timing:
    from kafka import KafkaConsumer

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=5000,
    )
    t = Timing()
    c.subscribe([topic])
    while t.count < total:
        batches = c.poll(timeout_ms=1000)
        t.got(sum(len(v) for v in batches.values()))
    t.end = time.perf_counter()
    c.close()
    return t


def run_aiokafka(bootstrap: str, topic: str, total: int) -> Timing:
    from aiokafka import AIOKafkaConsumer

    async def main() -> Timing:
        c = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=f"bench-{uuid.uuid4().hex[:8]}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        t = Timing()
        c.subscribe([topic])
        await c.start()
        try:
            while t.count < total:
                batches = await c.getmany(timeout_ms=1000, max_records=5000)
                t.got(sum(len(v) for v in batches.values()))
            t.end = time.perf_counter()
        finally:
            await c.stop()
        return t

    return asyncio.run(main())


CLIENTS: dict[str, Callable[[str, str, int], Timing]] = {
    "groupcoord": run_groupcoord,
    "groupcoord-async": run_groupcoord_async,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}


def rebalance_100(bootstrap: str, members: int) -> dict[str, Any]:
    from groupcoord.client import Consumer

    topic = f"bench-members-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, members)
    group = f"bench-members-{uuid.uuid4().hex[:8]}"
    consumers = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "session.timeout.ms": 30000,
                "heartbeat.interval.ms": 3000,
                "partition.assignment.strategy": "range",
            }
        )
        for _ in range(members)
    ]
    stop = threading.Event()

    def run(c: Any) -> None:
        while not stop.is_set():
            c.poll(0.2)

    start = time.perf_counter()
    threads = []
    for c in consumers:
        c.subscribe([topic])
        th = threading.Thread(target=run, args=(c,), daemon=True)
        th.start()
        threads.append(th)
    subscribed = time.perf_counter()
    stable_at = None
    deadline = start + 600
    while time.perf_counter() < deadline:
        owned = [c.assignment() for c in consumers]
        if all(len(o) == 1 for o in owned) and len(set().union(*owned)) == members:
            stable_at = time.perf_counter()
            break
        time.sleep(0.05)
    stop.set()
    for th in threads:
        th.join(30)
    close_start = time.perf_counter()
    for c in consumers:
        c.close()
    return {
        "members": members,
        "subscribe_all_s": round(subscribed - start, 3),
        "stable_s": None if stable_at is None else round(stable_at - start, 3),
        "close_all_s": round(time.perf_counter() - close_start, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--out", default="bench/results/client_bench.json")
    args = ap.parse_args()
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    broker = peer.start_groupcoord({"group.initial.rebalance.delay.ms": "0"})
    results: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "processor": platform.processor(),
        },
        "records": args.records,
        "size": args.size,
        "runs": [],
    }
    try:
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap, topic, PARTITIONS)
        produce(broker.bootstrap, topic, args.records, args.size)
        mb = args.records * args.size / 1e6
        for rnd in range(args.rounds):
            order = clients[rnd % len(clients) :] + clients[: rnd % len(clients)]
            for name in order:
                t = CLIENTS[name](broker.bootstrap, topic, args.records)
                end = t.end
                first = t.first or end
                run = {
                    "round": rnd,
                    "client": name,
                    "seconds": round(end - t.start, 3),
                    "mb_s": round(mb / (end - t.start), 2),
                    "first_record_s": round(first - t.start, 3),
                    "mb_s_after_first": round(mb / max(1e-9, end - first), 2),
                    "records": t.count,
                }
                results["runs"].append(run)
                print(json.dumps(run), flush=True)
        summary = {}
        for name in clients:
            rows = [r for r in results["runs"] if r["client"] == name]
            summary[name] = {
                "mb_s_median": statistics.median(r["mb_s"] for r in rows),
                "mb_s_best": max(r["mb_s"] for r in rows),
                "mb_s_after_first_median": statistics.median(r["mb_s_after_first"] for r in rows),
            }
        results["summary"] = summary
        print(json.dumps(summary, indent=1), flush=True)
        if args.members > 0:
            results["rebalance"] = rebalance_100(broker.bootstrap, args.members)
            print(json.dumps(results["rebalance"]), flush=True)
    finally:
        broker.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
