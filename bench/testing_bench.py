"""Figures behind docs/testing.md: start-up to first produce, and the initial rebalance delay.

    .venv/bin/python bench/testing_bench.py [--starts 5] [--trials 5] [--members 3]
        [--delays 0,100,300,1000,3000] [--out bench/results/testing_bench.json]

Start-up ("start to first produce"): from nothing to a record acknowledged by the broker,
as a test sees it, median of ``--starts`` runs each:

* ``groupcoord in-process``: ``Broker()`` started, a topic created, one confluent-kafka
  produce delivered (``Producer.flush``), broker stopped is not counted;
* ``groupcoord subprocess``: the same with ``Broker(subprocess=True)``;
* ``librdkafka mock cluster``: ``Producer({"test.mock.num.brokers": 1})`` and one delivered
  produce (the mock cluster lives inside librdkafka; it auto-creates the topic).

Testcontainers (Docker) and pytest-kafka-broker (downloads Kafka, needs a JVM) cannot run on
this machine (no Docker, no JVM, no network but PyPI): the script says so and does not guess.
mockafka-py and kafka-mocha are not installed here; they replace the client library with
Python objects (no wire protocol), so there is no broker to start.

Initial rebalance delay (``group.initial.rebalance.delay.ms``): for each delay, ``--trials``
times, ``--members`` confluent-kafka consumers are started at once (threads released by one
barrier) on a fresh group; measured are how many generations completed before the group was
Stable with all of them (1 is ideal: at 0 ms the first member forms generation 1 alone and
the next one's join revokes it) and the time from the barrier to that Stable state.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer

from groupcoord.testing import Broker


def _deliver(producer: Producer, topic: str) -> None:
    done: list[Any] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: done.append(err))
    producer.flush(30)
    if done != [None]:
        raise RuntimeError(f"produce failed: {done}")


def start_to_first_produce(subprocess: bool) -> float:
    t0 = time.perf_counter()
    with Broker(subprocess=subprocess) as broker:
        broker.create_topic("t", 1)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        _deliver(producer, "t")
        elapsed = time.perf_counter() - t0
    return elapsed


def mock_cluster_to_first_produce() -> float:
    t0 = time.perf_counter()
    producer = Producer({"test.mock.num.brokers": 1})
    _deliver(producer, "t")
    return time.perf_counter() - t0


def rebalance_trial(broker: Broker, group: str, members: int) -> tuple[int, float]:
    barrier = threading.Barrier(members + 1)
    stop = threading.Event()
    consumers: list[threading.Thread] = []

    def member(i: int) -> None:
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "client.id": f"m{i}",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 500,
            }
        )
        barrier.wait()
        c.subscribe(["rt"])
        while not stop.is_set():
            c.poll(0.05)
        c.close()

    for i in range(members):
        t = threading.Thread(target=member, args=(i,), daemon=True)
        t.start()
        consumers.append(t)
    barrier.wait()
    t0 = time.perf_counter()
    try:
        state = broker.wait_for_group(group, members=members, timeout=60)
        elapsed = time.perf_counter() - t0
        generations = state.generation or 0
    finally:
        stop.set()
        for t in consumers:
            t.join(30)
    return generations, elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--delays", default="0,100,300,1000,3000")
    ap.add_argument("--skip-start", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("bench/results/testing_bench.json"))
    args = ap.parse_args()
    results: dict[str, Any] = {}

    if not args.skip_start:
        starts: dict[str, Any] = {}
        for name, fn in (
            ("groupcoord in-process", lambda: start_to_first_produce(False)),
            ("groupcoord subprocess", lambda: start_to_first_produce(True)),
            ("librdkafka mock cluster", mock_cluster_to_first_produce),
        ):
            runs = [fn() for _ in range(args.starts)]
            starts[name] = {"median_s": statistics.median(runs), "runs_s": runs}
            print(f"{name:26s} start to first produce: median {statistics.median(runs):.3f} s  {runs}")
        for name in ("testcontainers kafka", "pytest-kafka-broker"):
            starts[name] = {
                "median_s": None,
                "why": "cannot run here: no Docker, no JVM, no network but PyPI",
            }
            print(f"{name:26s} not measured: cannot run here (no Docker, no JVM, no network but PyPI)")
        results["start_to_first_produce"] = starts

    delays: dict[str, Any] = {}
    for delay in [int(d) for d in args.delays.split(",")]:
        with Broker(settings={"group.initial.rebalance.delay.ms": delay}) as broker:
            broker.create_topic("rt", 6)
            trials = [rebalance_trial(broker, f"g{delay}-{i}", args.members) for i in range(args.trials)]
        one = sum(1 for g, _ in trials if g == 1)
        times = [t for _, t in trials]
        delays[str(delay)] = {
            "one_generation": f"{one}/{len(trials)}",
            "generations": [g for g, _ in trials],
            "median_stable_s": statistics.median(times),
            "stable_s": times,
        }
        print(
            f"delay {delay:5d} ms: one generation in {one}/{len(trials)}, generations "
            f"{[g for g, _ in trials]}, stable after median {statistics.median(times):.2f} s"
        )
    results["initial_rebalance_delay"] = {"members": args.members, "by_delay_ms": delays}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
