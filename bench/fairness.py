"""Fairness under floods: how much latency one hostile connection adds to everyone else's
Heartbeats and OffsetCommits, and what the broker's memory does meanwhile.

    .venv/bin/python bench/fairness.py [--loop uvloop|asyncio] [--probes 300]
        [--out bench/results/fairness.json]

Starts a broker process (``groupcoord.app.run`` on the chosen loop, malloc tuned as
``groupcoord serve`` does; the harness is ``tests/flood_harness.py``), fills a topic with 60 MB,
then measures ``--probes`` probe round trips (one Heartbeat and one simple-group OffsetCommit on
a connection of their own, one after the other) in each scenario:

* ``idle``: nothing else runs;
* ``fetch-flood``: another connection has written 10,000 Fetch requests allowing 50 MB each and
  reads nothing (the broker answers until that connection's unsent output reaches its bound,
  then stops reading it);
* ``api-versions-flood``: another connection pipelines ApiVersions requests as fast as the
  broker answers them and reads every answer (a client that keeps the event loop busy).

Prints and writes p50 / p99 / max probe latency per scenario and the broker's peak RSS growth.
Numbers are for the machine they ran on; ``docs/benchmarks.md`` keeps a run with its machine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from flood_harness import (
    Flood,
    api_versions_frame,
    broker_process,
    create_topic,
    fetch_frame,
    fill_topic,
    probe,
)
from groupcoord.protocol.client import WireClient


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


def _probes(client: WireClient, n: int) -> list[float]:
    return [probe(client, "bench-group", "big") for _ in range(n)]


def _busy_reader(port: int, stop: Any) -> None:
    """Pipelines ApiVersions (up to 64 outstanding) and reads every answer until ``stop``."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        frames = b"".join(api_versions_frame(i) for i in range(1, 65))
        while not stop.is_set():
            sock.sendall(frames)
            want = 64
            buf = b""
            while want:
                buf += sock.recv(1 << 16)
                while len(buf) >= 4:
                    size = int.from_bytes(buf[:4], "big")
                    if len(buf) < 4 + size:
                        break
                    buf = buf[4 + size :]
                    want -= 1


def run(loop: str, probes: int) -> dict[str, Any]:
    out: dict[str, Any] = {"loop": loop, "probes": probes}
    with (
        tempfile.TemporaryDirectory() as tmp,
        broker_process(Path(tmp), loop) as broker,
        WireClient("127.0.0.1", broker.port, timeout_s=60) as client,
    ):
        create_topic(client, "big")
        fill_topic(client, "big", 60 << 20)
        before = broker.status("VmRSS")
        out["idle"] = _summary(_probes(client, probes))

        flood = Flood(broker.port)
        samples = []
        for _ in range(probes):
            flood.push(lambda c: fetch_frame(c, "big", 50 << 20), 10_000)
            samples.append(probe(client, "bench-group", "big"))
        out["fetch-flood"] = {**_summary(samples), "flood_frames_written": flood.sent_frames}
        flood.close()

        # in a process of its own, so that it does not share this process's GIL with the probes
        stop = multiprocessing.Event()
        busy = multiprocessing.Process(target=_busy_reader, args=(broker.port, stop), daemon=True)
        busy.start()
        out["api-versions-flood"] = _summary(_probes(client, probes))
        stop.set()
        busy.join(timeout=30)
        if busy.is_alive():
            busy.kill()
        out["rss_growth_mb"] = round((broker.status("VmHWM") - before) / 2**20, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    parser.add_argument("--probes", type=int, default=300)
    parser.add_argument("--out", default="bench/results/fairness.json")
    args = parser.parse_args()
    result = run(args.loop, args.probes)
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    result["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(json.dumps(result, indent=1))
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
