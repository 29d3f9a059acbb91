"""100 of our consumer-protocol (KIP-848) members against 100 of our classic members, same broker,
same run.

    .venv/bin/python bench/members848_bench.py [--members 100] [--rounds 3]
        [--modes consumer,classic] [--records 100000] [--size 512]
        [--out bench/results/members848.json]

Starts one groupcoord broker (``bench/peer.py``) with ``group.initial.rebalance.delay.ms=0`` and the
consumer groups' heartbeat interval set to the classic members' 3 s (``group.consumer.heartbeat.
interval.ms`` and its minimum), so both protocols heartbeat alike. Then, for ``--rounds`` rounds,
each mode in turn (the order rotates each round, so the modes share whatever the machine does):

* **form**: ``--members`` of our ``Consumer`` s (each polling on its own thread, one process)
  subscribe to a fresh group over a topic of ``2 x members`` partitions; ``stable_s`` is from the
  first subscribe until every member owns exactly two partitions, none owned twice;
* **join**: one more member subscribes to that stable group; ``join_s`` is from its subscribe
  until the partitions are spread again (every member owns one or two, the newcomer at least one,
  none owned twice); ``revoking`` is how many of the other members had ``on_revoke`` called with
  partitions meanwhile (the eager classic protocol revokes everything from everyone; KIP-848 only
  what moves), ``changed`` how many of them own another set afterwards.

Modes: ``consumer`` (``group.protocol=consumer``, the broker's ``uniform`` assignor), ``classic``
(``range``, eager), ``classic-coop`` (``cooperative-sticky``). ``--records`` > 0 also measures one
member of each protocol reading ``--records`` records of ``--size`` bytes from a 4-partition topic
(MB/s from subscribe to the last record, join included), interleaved the same way.
Results go to ``--out`` as JSON, with the medians per mode.
"""

from __future__ import annotations

import argparse
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import client_bench
import peer

MODES: dict[str, dict[str, object]] = {
    "consumer": {"group.protocol": "consumer"},
    "classic": {
        "session.timeout.ms": 30000,
        "heartbeat.interval.ms": 3000,
        "partition.assignment.strategy": "range",
    },
    "classic-coop": {
        "session.timeout.ms": 30000,
        "heartbeat.interval.ms": 3000,
        "partition.assignment.strategy": "cooperative-sticky",
    },
}
BROKER_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "3000",
    "group.consumer.min.heartbeat.interval.ms": "3000",
}


class Member:
    """One of our consumers polling on its own thread; counts the partitions revoked from it."""

    def __init__(self, bootstrap: str, group: str, mode: str, name: str) -> None:
        from groupcoord.client import Consumer

        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name, **MODES[mode]}
        )
        self.revoked = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on_revoke(self, partitions: list[Any]) -> None:
        if partitions:
            self.revoked += 1

    def start(self, topic: str) -> None:
        self.consumer.subscribe([topic], on_revoke=self._on_revoke)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.2)

    def owned(self) -> frozenset[Any]:
        return frozenset(self.consumer.assignment())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def _wait(cond: Callable[[], bool], limit_s: float) -> float | None:
    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        if cond():
            return time.perf_counter()
        time.sleep(0.05)
    return None


def _spread(members: list[Member], partitions: int, sizes: set[int]) -> bool:
    owned = [m.owned() for m in members]
    total = sum(len(o) for o in owned)
    return (
        total == partitions
        and len(frozenset().union(*owned)) == partitions
        and all(len(o) in sizes for o in owned)
    )


def form_and_join(bootstrap: str, mode: str, n: int) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    topic, group = f"b848-{mode}-{tag}", f"b848-{mode}-{tag}"
    partitions = 2 * n
    client_bench.create_topic(bootstrap, topic, partitions)
    members = [Member(bootstrap, group, mode, f"m{i}") for i in range(n)]
    out: dict[str, Any] = {"mode": mode, "members": n, "partitions": partitions}
    try:
        start = time.perf_counter()
        for m in members:
            m.start(topic)
        out["subscribe_all_s"] = round(time.perf_counter() - start, 3)
        stable = _wait(lambda: _spread(members, partitions, {2}), 600)
        out["stable_s"] = None if stable is None else round(stable - start, 3)
        if stable is None:
            return out
        time.sleep(1.0)  # settled: nothing in flight before the join
        before = {id(m): m.owned() for m in members}
        revoked_before = {id(m): m.revoked for m in members}
        newcomer = Member(bootstrap, group, mode, "newcomer")
        joined_at = time.perf_counter()
        newcomer.start(topic)
        everyone = [*members, newcomer]
        spread = _wait(lambda: bool(newcomer.owned()) and _spread(everyone, partitions, {1, 2}), 600)
        out["join_s"] = None if spread is None else round(spread - joined_at, 3)
        out["revoking"] = sum(1 for m in members if m.revoked > revoked_before[id(m)])
        out["changed"] = sum(1 for m in members if m.owned() != before[id(m)])
        members.append(newcomer)
    finally:
        for m in members:
            m.stop()
        closing = time.perf_counter()
        for m in members:
            m.consumer.close()
        out["close_all_s"] = round(time.perf_counter() - closing, 3)
    return out


def read_all(bootstrap: str, topic: str, records: int, mode: str) -> float:
    from groupcoord.client import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"b848-read-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **MODES[mode],
        }
    )
    start = time.perf_counter()
    c.subscribe([topic])
    got = 0
    deadline = start + 600
    while got < records and time.perf_counter() < deadline:
        got += len(c.poll(0.5))
    elapsed = time.perf_counter() - start
    c.close()
    if got < records:
        raise RuntimeError(f"{mode}: read {got} of {records}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="consumer,classic")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--out", default="bench/results/members848.json")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    broker = peer.start_groupcoord(BROKER_SETTINGS)
    results: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_at_start": os.getloadavg(),
        },
        "broker_settings": BROKER_SETTINGS,
        "groups": [],
        "reads": [],
    }
    try:
        topic = None
        if args.records > 0:
            topic = f"b848-read-{uuid.uuid4().hex[:8]}"
            client_bench.create_topic(broker.bootstrap, topic, client_bench.PARTITIONS)
            client_bench.produce(broker.bootstrap, topic, args.records, args.size)
        for rnd in range(args.rounds):
            order = modes[rnd % len(modes) :] + modes[: rnd % len(modes)]
            for mode in order:
                row = {"round": rnd, **form_and_join(broker.bootstrap, mode, args.members)}
                results["groups"].append(row)
                print(json.dumps(row), flush=True)
            if topic is not None:
                for mode in order:
                    s = read_all(broker.bootstrap, topic, args.records, mode)
                    read = {"round": rnd, "mode": mode, "seconds": round(s, 3)}
                    read["mb_s"] = round(args.records * args.size / 1e6 / s, 2)
                    results["reads"].append(read)
                    print(json.dumps(read), flush=True)
        summary: dict[str, Any] = {}
        for mode in modes:
            rows = [r for r in results["groups"] if r["mode"] == mode]
            summary[mode] = {
                key: statistics.median(r[key] for r in rows if r.get(key) is not None)
                for key in ("stable_s", "join_s", "revoking", "changed")
                if any(r.get(key) is not None for r in rows)
            }
            reads = [r["mb_s"] for r in results["reads"] if r["mode"] == mode]
            if reads:
                summary[mode]["read_mb_s"] = statistics.median(reads)
        results["summary"] = summary
        results["load_average_at_end"] = os.getloadavg()
        print(json.dumps(summary, indent=1), flush=True)
    finally:
        broker.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
