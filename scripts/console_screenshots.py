"""Screenshots of the live console for the docs: ``docs/images/console-overview.png`` and
``docs/images/console-group.png``.

Starts an in-process broker with ``console.listen``, a topic of 3 partitions fed by a producer,
and a few groups of real confluent-kafka consumers (one group rebalances as a consumer leaves and
another joins), then opens the pages in headless Chromium (the tests' DevTools driver,
``tests/console/chromium_cdp.py``) and captures them after the lag sampling has drawn a few
minutes' worth... of seconds.

    PYTHONPATH=src .venv/bin/python scripts/console_screenshots.py [--out docs/images] [--seconds 40]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "console"))

from chromium_cdp import Chromium  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from console_helpers import PolledConsumer, commit_simple  # noqa: E402

from groupcoord.testing import Broker  # noqa: E402

TOPIC = "orders"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "docs" / "images"))
    ap.add_argument("--seconds", type=float, default=40.0, help="how long the group page samples lag")
    args = ap.parse_args()
    out = Path(args.out)
    with Broker({"console.listen": "127.0.0.1:0"}) as broker:
        broker.create_topic(TOPIC, 3)
        broker.create_topic("payments", 2)
        stop = threading.Event()
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})

        def produce() -> None:
            i = 0
            while not stop.is_set():
                producer.produce(TOPIC, f"order-{i}".encode(), partition=i % 3)
                producer.produce("payments", f"payment-{i}".encode(), partition=i % 2)
                producer.poll(0)
                i += 1
                time.sleep(0.02)
            producer.flush(10)

        feeder = threading.Thread(target=produce, daemon=True)
        feeder.start()
        commit_simple(broker.bootstrap, ["audit-export", "nightly-report"], "payments", 0, 0)
        consumers = [
            PolledConsumer(broker.bootstrap, "billing", "billing-api-1", [TOPIC]),
            PolledConsumer(broker.bootstrap, "billing", "billing-api-2", [TOPIC]),
            PolledConsumer(broker.bootstrap, "fraud-check", "fraud-1", [TOPIC, "payments"]),
        ]
        for c in consumers:
            assert c.assigned.wait(60)
        with Chromium(width=1400, height=900) as browser:
            page = browser.page()
            base = broker.console_url
            assert base is not None
            group_page = base + "groups/" + urllib.parse.quote("billing", safe="")
            page.goto(group_page)
            page.wait_for("document.getElementById('status').textContent==='live'")
            deadline = time.monotonic() + args.seconds
            step = 0
            while time.monotonic() < deadline:
                time.sleep(1.0)
                step += 1
                if step % 4 == 0:  # billing commits now and then, catching up part of the way
                    consumers[0].commit([(TOPIC, 0, step * 10)])
                if step == int(args.seconds * 0.4):
                    consumers[1].leave()  # a LeaveGroup: member_left
                if step == int(args.seconds * 0.6):
                    consumers.append(PolledConsumer(broker.bootstrap, "billing", "billing-api-3", [TOPIC]))
            page.wait_for("document.querySelectorAll('#rebalances-table tbody tr').length>=3")
            time.sleep(2.0)
            page.screenshot(out / "console-group.png", width=1400, height=1500)
            page.goto(base)
            page.wait_for("document.getElementById('status').textContent==='live'")
            time.sleep(1.0)
            page.screenshot(out / "console-overview.png", width=1400, height=900)
            problems = page.problems()
            if problems:
                raise SystemExit(f"the page logged problems: {problems}")
        stop.set()
        feeder.join(10)
        for c in consumers:
            if c.thread.is_alive():
                c.leave()
    print(f"wrote {out / 'console-overview.png'} and {out / 'console-group.png'}")


if __name__ == "__main__":
    main()
