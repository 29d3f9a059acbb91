"""Produce and consume throughput (MB/s) with confluent-kafka against a groupcoord it starts.

    .venv/bin/python bench/produce_consume.py [--records 100000] [--size 1024] [--repeat 3]
        [--combos 1:none,1:lz4,all:none,all:lz4] [--out bench/results/produce_consume.json]

Starts ``python -m groupcoord serve --listen 127.0.0.1:0`` on a temporary data dir, creates a
topic per run, produces ``--records`` records of ``--size`` bytes (acks=1 and acks=all; no
compression and lz4), consumes them back with ``assign`` from offset 0, repeats each combination
``--repeat`` times, stops the broker by PID, prints best and median MB/s (1 MB = 10^6 bytes of
record values) and writes ``bench/results/produce_consume.json``.

For each consume it also records the time from ``assign`` to the first batch of records handed
to the application, the MB/s after that moment, and the broker's CPU seconds (user + system,
from ``/proc/PID/stat``) spent while the consumer ran. To measure another checkout of the broker
with the same script, put its ``src`` first on ``PYTHONPATH`` (the broker is started with this
interpreter and inherits the environment).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer

PARTITIONS = 4


def produce(
    bootstrap: str, topic: str, n: int, size: int, acks: str, codec: str, broker_pid: int
) -> tuple[float, float]:
    """Seconds to produce and flush everything, and the broker's CPU seconds meanwhile."""
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "compression.type": codec,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    payload = os.urandom(size // 2) * 2  # half-compressible
    errors = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal errors
        if err is not None:
            errors += 1

    cpu0 = peer.cpu_seconds(broker_pid)
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(
                    topic,
                    value=payload,
                    key=str(i).encode(),
                    partition=i % PARTITIONS,
                    on_delivery=on_delivery,
                )
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    if left or errors:
        raise SystemExit(f"produce failed: {left} undelivered, {errors} errors")
    return elapsed, peer.cpu_seconds(broker_pid) - cpu0


def consume(bootstrap: str, topic: str, n: int, broker_pid: int) -> dict[str, float]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    cpu0 = peer.cpu_seconds(broker_pid)
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    start = time.perf_counter()
    first = 0.0
    while got < n:
        for m in c.consume(num_messages=10000, timeout=1.0):
            if not first:
                first = time.perf_counter()
            if m.error() is None:
                got += 1
        if time.perf_counter() - start > 300:
            raise SystemExit(f"consume stalled at {got}/{n}")
    end = time.perf_counter()
    broker_cpu = peer.cpu_seconds(broker_pid) - cpu0
    c.close()
    return {
        "seconds": end - start,
        "first_record_s": first - start,
        "after_first_s": end - first,
        "broker_cpu_s": broker_cpu,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--combos",
        default="1:none,1:lz4,all:none,all:lz4",
        help="comma-separated acks:compression pairs to run (default: all four)",
    )
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "produce_consume.json"))
    args = ap.parse_args()
    combos = [tuple(c.split(":", 1)) for c in args.combos.split(",") if c]
    n, size = args.records, args.size
    mb = n * size / 1e6
    results: dict[str, Any] = {
        "records": n,
        "record_bytes": size,
        "partitions": PARTITIONS,
        "repeat": args.repeat,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        proc, bootstrap = peer.spawn_serve(peer.serve_command(Path(tmp) / "data"))
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            for acks, codec in combos:
                produce_mb, consume_mb = [], []
                produce_cpu = []
                consumes = []
                for rep in range(args.repeat):
                    topic = f"bench-{acks}-{codec}-{rep}"
                    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(10)
                    seconds, cpu = produce(bootstrap, topic, n, size, acks, codec, proc.pid)
                    produce_mb.append(mb / seconds)
                    produce_cpu.append(cpu)
                    got = consume(bootstrap, topic, n, proc.pid)
                    consumes.append(got)
                    consume_mb.append(mb / got["seconds"])
                firsts = [g["first_record_s"] for g in consumes]
                after = [mb / g["after_first_s"] for g in consumes]
                bcpu = [g["broker_cpu_s"] for g in consumes]
                run = {
                    "acks": acks,
                    "compression": codec,
                    "produce_mb_s_best": round(max(produce_mb), 1),
                    "produce_mb_s_median": round(statistics.median(produce_mb), 1),
                    "consume_mb_s_best": round(max(consume_mb), 1),
                    "consume_mb_s_median": round(statistics.median(consume_mb), 1),
                    "produce_mb_s_all": [round(x, 1) for x in produce_mb],
                    "consume_mb_s_all": [round(x, 1) for x in consume_mb],
                    "produce_broker_cpu_s_median": round(statistics.median(produce_cpu), 3),
                    "consume_first_record_s_median": round(statistics.median(firsts), 3),
                    "consume_mb_s_after_first_median": round(statistics.median(after), 1),
                    "consume_broker_cpu_s_median": round(statistics.median(bcpu), 3),
                    "consume_all": [{k: round(v, 4) for k, v in g.items()} for g in consumes],
                }
                results["runs"].append(run)
                p_best, p_med = run["produce_mb_s_best"], run["produce_mb_s_median"]
                c_best, c_med = run["consume_mb_s_best"], run["consume_mb_s_median"]
                print(
                    f"acks={acks:<3} {codec:<4} produce best {p_best:>6} median {p_med:>6} MB/s "
                    f"(broker CPU {run['produce_broker_cpu_s_median']} s)   "
                    f"consume best {c_best:>6} median {c_med:>6} MB/s   "
                    f"(first record after {run['consume_first_record_s_median']} s, "
                    f"{run['consume_mb_s_after_first_median']} MB/s after it, "
                    f"broker CPU {run['consume_broker_cpu_s_median']} s)",
                    flush=True,
                )
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    results["load_average_at_end"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
