"""Our ``Consumer`` with ``group.protocol=consumer`` (KIP-848) in its own process.

Usage: ``cg848_ours_worker.py BOOTSTRAP GROUP TOPIC``. It subscribes and polls; on every change
of its assignment it prints one JSON line ``{"assignment": [...]}``. It never closes on its own:
the test stops it by PID (SIGKILL stands for a crash: no leave heartbeat is sent).
"""

from __future__ import annotations

import json
import sys

from groupcoord.client import Consumer


def main() -> None:
    bootstrap, group, topic = sys.argv[1:4]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "client.id": "ours-worker",
        }
    )
    consumer.subscribe([topic])
    last: list[int] | None = None
    while True:
        consumer.poll(0.1)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != last:
            last = now
            sys.stdout.write(json.dumps({"assignment": now}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
