"""acks=all produce latency in a broker's first second against ten seconds later (issue 27).

librdkafka's 0055 producer_latency runs against a broker its harness has just started; its
"standard settings" sub-test wants the average acks=all latency in 5-22 ms. This starts a fresh
groupcoord (an empty data dir, ``auto.create.topics.enable=true num.partitions=4`` as the suite
runs it), and as soon as it listens produces ``--messages`` records one at a time with
confluent-kafka (``acks=all``, ``linger.ms=0``), each waiting for its delivery report; then it
waits ``--later`` seconds and does the same again on the same producer. The latency of a record
is the time from ``produce()`` to its delivery report, as 0055 measures it.

Plain script, not a test:

    PYTHONPATH=src .venv/bin/python bench/first_second_latency.py [--messages 30] [--later 10]
        [--runs 3] [--label after] [--out bench/results/first_second_latency.json]

Results: JSON with, per run, the first-phase and later-phase latencies (ms) and their summary.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer

RESULTS = Path(__file__).resolve().parent / "results"


def start_broker(data_dir: Path) -> tuple[subprocess.Popen[str], str, float]:
    """A fresh broker as librdkafka's harness starts one; returns it, its address and the
    seconds from spawn to listening."""
    t0 = time.perf_counter()
    cmd = peer.serve_command(data_dir, {"auto.create.topics.enable": "true", "num.partitions": "4"})
    proc, bootstrap = peer.spawn_serve(cmd)
    return proc, bootstrap, time.perf_counter() - t0


def produce_serial(producer: Producer, topic: str, n: int) -> list[float]:
    """``n`` records one at a time; the ms from each produce() to its delivery report."""
    out: list[float] = []
    for i in range(n):
        done: list[float] = []

        def on_delivery(err: Any, _msg: Any, done: list[float] = done) -> None:
            if err is not None:
                raise SystemExit(f"delivery failed: {err}")
            done.append(time.perf_counter())

        start = time.perf_counter()
        producer.produce(topic, value=b"x" * 100, key=str(i).encode(), partition=0, on_delivery=on_delivery)
        while not done:
            producer.poll(0.01)
        out.append((done[0] - start) * 1000.0)
    return out


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "mean": round(statistics.fmean(values), 2),
        "median": round(statistics.median(values), 2),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 2),
        "max": round(ordered[-1], 2),
        "first": round(values[0], 2),
    }


def one_run(messages: int, later: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="groupcoord-first-second-") as tmp:
        proc, bootstrap, start_s = start_broker(Path(tmp) / "data")
        try:
            producer = Producer(
                {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": False}
            )
            # The topic comes from auto-creation on the producer's first metadata request, as in 0055.
            topic = "latency_first_second"
            first = produce_serial(producer, topic, messages)
            time.sleep(later)
            second = produce_serial(producer, topic, messages)
            producer.flush(10)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return {
        "start_s": round(start_s, 3),
        "first": [round(v, 2) for v in first],
        "later": [round(v, 2) for v in second],
        "first_summary": summary(first),
        "later_summary": summary(second),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=30)
    ap.add_argument("--later", type=float, default=10.0, help="seconds between the two phases")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=str(RESULTS / "first_second_latency.json"))
    args = ap.parse_args()
    runs = []
    for i in range(args.runs):
        run = one_run(args.messages, args.later)
        runs.append(run)
        print(
            f"run {i + 1}: first {args.messages}: {run['first_summary']}  "
            f"after {args.later:g} s: {run['later_summary']}",
            flush=True,
        )
    doc = {
        "label": args.label,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "load_1m": os.getloadavg()[0],
        "messages": args.messages,
        "later_s": args.later,
        "runs": runs,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
