"""The console's cost: commits and heartbeats with the console open against closed, on one broker
holding 10,000 groups, in one run.

Plain script, not a test. One broker process (``console.listen`` set, so the console's event
listener runs in both modes), then:

1. 10,000 groups, each with one committed offset on a 1-partition topic holding ``--records``
   records (OffsetCommit v8 with generation -1, pipelined): every group lags, so the console's
   lag sampling reads time lag too;
2. ``--rounds`` rounds, each measuring both modes (the order alternates between rounds):
   * closed: no page open;
   * open: what a browser on the overview and on one group's page asks for: ``GET /`` (all
     10,000 rows, taken before the measured window), then the overview's stream
     (``/events?since=<token>``) and the group page's stream (``/events?group=...``), read until the
     mode ends. The console then samples every group's lag every 5 s and the open group's every
     second, and pushes the rows that changed;
   in each mode ``group_bench.many_groups_loop`` runs the many-groups workload (50 connections,
   each the one member of a new group, depth 1, closed loop) for commits, then for heartbeats.

First, before any workload, ``--idle-rounds`` pairs of idle windows (``--idle-seconds`` each,
closed then open, no client but the viewer): the broker's CPU then is what the console costs by
itself (the request path has no console code). Then the rounds. Reported: the idle CPU, per mode
and round requests per second and the broker's CPU per request (``broker_us_per_request``, from
/proc), and the medians' ratios open / closed. On a shared machine the throughput of neighbouring
windows varies by more than the console could change it: read the idle CPU first.

    .venv/bin/python bench/console_bench.py [--groups 10000] [--rounds 2] [--seconds 5] [--records 100]
        [--idle-seconds 5] [--idle-rounds 3]

Results: bench/results/console_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from groupcoord.formats.batch import build_batch
from groupcoord.protocol.client import WireClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the tests' raw-wire and console helpers, as bench/fairness.py uses tests/flood_harness.py
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "console"))
from console_helpers import commit_simple

import group_bench
import peer
from wire_testing import produce

RESULTS = Path(__file__).resolve().parent / "results"
TOPIC = "console-bench-fleet"


def preload(host: str, port: int, groups: int, records: int) -> None:
    """The topic with ``records`` records, and ``groups`` simple groups committed at offset 0."""
    asyncio.run(group_bench.create_topic(host, port, TOPIC, 1))
    with WireClient(host, port, client_id="console-bench", timeout_s=120) as wire:
        # written a minute ago: every group's time lag is about a minute
        data = build_batch([(None, b"x" * 100, ())] * records, timestamp_ms=int(time.time() * 1000) - 60_000)
        produce(wire, TOPIC, data, acks=-1)
    commit_simple(f"{host}:{port}", [f"fleet-{i:05d}" for i in range(groups)], TOPIC, 0, 0)


class Viewer:
    """What a browser with the overview and one group's page open asks of the console."""

    def __init__(self, base: str, group: str) -> None:
        self.base = base
        self.group = group
        self.stop = threading.Event()
        self.bytes = 0
        self.events = 0
        self.page_s = 0.0
        self.page_bytes = 0
        self._threads: list[threading.Thread] = []
        self._streams: list[Any] = []

    def open(self) -> None:
        started = time.perf_counter()
        with urllib.request.urlopen(self.base, timeout=120) as answer:
            page = answer.read().decode("utf-8")
        self.page_s = time.perf_counter() - started
        self.page_bytes = len(page)
        since = page.split("data-since='", 1)[1].split("'", 1)[0]
        for path in (f"events?since={since}", f"events?group={self.group}"):
            stream = urllib.request.urlopen(self.base + path, timeout=120)
            self._streams.append(stream)
            thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _read(self, stream: Any) -> None:
        try:
            while not self.stop.is_set():
                line = stream.readline()
                if not line:
                    return
                self.bytes += len(line)
                if line.startswith(b"event: "):
                    self.events += 1
        except (OSError, ValueError):
            return

    def close(self) -> None:
        self.stop.set()
        for stream in self._streams:
            stream.close()
        for thread in self._threads:
            thread.join(5)


def idle_cpu(broker: peer.BrokerProcess, seconds: float) -> float:
    """The broker's CPU (fraction of one core) over ``seconds`` with no client but the viewer."""
    cpu0 = broker.cpu_seconds()
    time.sleep(seconds)
    return (broker.cpu_seconds() - cpu0) / seconds


def measure(host: str, port: int, broker: peer.BrokerProcess, seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("commit", "heartbeat"):
        r = asyncio.run(
            group_bench.many_groups_loop(
                host, port, kind=kind, connections=50, depth=1, seconds=seconds,
                session_ms=30_000, timeout_s=120, broker=broker,
            )
        )  # fmt: skip
        out[kind] = {
            k: r.get(k) for k in ("ok", "error", "per_second", "broker_us_per_request", "p50_ms", "p99_ms")
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--records", type=int, default=100)
    ap.add_argument("--idle-seconds", type=float, default=5.0, help="each idle window")
    ap.add_argument("--idle-rounds", type=int, default=3)
    ap.add_argument("--out", default=str(RESULTS / "console_bench.json"))
    args = ap.parse_args()
    console_port = peer.free_port()
    settings = {**group_bench.GROUPCOORD_SETTINGS, "console.listen": f"127.0.0.1:{console_port}"}
    results: dict[str, Any] = {"machine": group_bench.machine(), "settings": settings, "args": vars(args)}
    broker = peer.start_groupcoord(settings)
    try:
        time.sleep(group_bench.SETTLE_S)
        started = time.perf_counter()
        preload(broker.host, broker.port, args.groups, args.records)
        results["preload_s"] = time.perf_counter() - started
        base = f"http://127.0.0.1:{console_port}/"
        # 1. idle, before any workload (whose groups would expire meanwhile): the console alone
        idle: dict[str, list[float]] = {"closed": [], "open": []}
        for _ in range(args.idle_rounds):
            idle["closed"].append(idle_cpu(broker, args.idle_seconds))
            viewer = Viewer(base, "fleet-00042")
            viewer.open()
            time.sleep(1.0)
            idle["open"].append(idle_cpu(broker, args.idle_seconds))
            viewer.close()
        results["idle_broker_cpu_fraction"] = idle
        print(f"idle: {json.dumps(idle)}", flush=True)
        # 2. the workloads, open and closed in turn
        rounds = []
        for i in range(args.rounds):
            order = ("closed", "open") if i % 2 == 0 else ("open", "closed")
            row: dict[str, Any] = {}
            for mode in order:
                viewer = None
                if mode == "open":
                    viewer = Viewer(base, "fleet-00042")
                    viewer.open()
                    time.sleep(1.0)
                row[mode] = measure(broker.host, broker.port, broker, args.seconds)
                if viewer is not None:
                    viewer.close()
                    row[mode]["viewer"] = {
                        "overview_page_s": viewer.page_s,
                        "overview_page_bytes": viewer.page_bytes,
                        "stream_events": viewer.events,
                        "stream_bytes": viewer.bytes,
                    }
                print(f"round {i + 1} {mode}: {json.dumps(row[mode])}", flush=True)
            rounds.append(row)
        results["rounds"] = rounds
        summary = {}
        for kind in ("commit", "heartbeat"):
            for metric in ("per_second", "broker_us_per_request"):
                med = {
                    mode: statistics.median(r[mode][kind][metric] for r in rounds if r[mode][kind][metric])
                    for mode in ("closed", "open")
                }
                summary[f"{kind}_{metric}"] = {**med, "open_over_closed": med["open"] / med["closed"]}
        medians = {mode: statistics.median(idle[mode]) for mode in ("closed", "open")}
        summary["idle_broker_cpu_fraction"] = {
            **medians,
            "open_minus_closed": medians["open"] - medians["closed"],
        }
        results["summary"] = summary
        results["broker_rss_bytes"] = broker.rss_bytes()
        print(json.dumps(summary, indent=1), flush=True)
    finally:
        broker.stop()
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
