"""Produce and consume throughput (MB/s) with confluent-kafka against a groupcoord it starts.

    .venv/bin/python bench/produce_consume.py [--records 100000] [--size 1024]

Starts ``python -m groupcoord serve --listen 127.0.0.1:0`` on a temporary data dir, creates a
topic per run, produces ``--records`` records of ``--size`` bytes (acks=1 and acks=all; no
compression and lz4), consumes them back with ``assign`` from offset 0, repeats each combination
``--repeat`` times, stops the broker by PID, prints best and median MB/s (1 MB = 10^6 bytes of
record values) and writes ``bench/results/produce_consume.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 4


def start_broker(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "groupcoord",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(data_dir),
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("groupcoord listening on "):
        proc.kill()
        raise SystemExit(f"broker did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].strip()


def produce(bootstrap: str, topic: str, n: int, size: int, acks: str, codec: str) -> float:
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
    return elapsed


def consume(bootstrap: str, topic: str, n: int) -> float:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    start = time.perf_counter()
    while got < n:
        for m in c.consume(num_messages=10000, timeout=1.0):
            if m.error() is None:
                got += 1
        if time.perf_counter() - start > 300:
            raise SystemExit(f"consume stalled at {got}/{n}")
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
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
        proc, bootstrap = start_broker(Path(tmp) / "data")
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            for acks in ("1", "all"):
                for codec in ("none", "lz4"):
                    produce_mb, consume_mb = [], []
                    for rep in range(args.repeat):
                        topic = f"bench-{acks}-{codec}-{rep}"
                        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(10)
                        produce_mb.append(mb / produce(bootstrap, topic, n, size, acks, codec))
                        consume_mb.append(mb / consume(bootstrap, topic, n))
                    run = {
                        "acks": acks,
                        "compression": codec,
                        "produce_mb_s_best": round(max(produce_mb), 1),
                        "produce_mb_s_median": round(statistics.median(produce_mb), 1),
                        "consume_mb_s_best": round(max(consume_mb), 1),
                        "consume_mb_s_median": round(statistics.median(consume_mb), 1),
                        "produce_mb_s_all": [round(x, 1) for x in produce_mb],
                        "consume_mb_s_all": [round(x, 1) for x in consume_mb],
                    }
                    results["runs"].append(run)
                    p_best, p_med = run["produce_mb_s_best"], run["produce_mb_s_median"]
                    c_best, c_med = run["consume_mb_s_best"], run["consume_mb_s_median"]
                    print(
                        f"acks={acks:<3} {codec:<4} produce best {p_best:>6} median {p_med:>6} MB/s   "
                        f"consume best {c_best:>6} median {c_med:>6} MB/s",
                        flush=True,
                    )
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    out = Path(__file__).parent / "results" / "produce_consume.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
