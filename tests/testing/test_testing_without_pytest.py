"""``Broker`` without pytest: a unittest suite run by ``python -m unittest`` in its own process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

UNITTEST_MODULE = """
import sys
import unittest

from groupcoord.testing import Broker, TopicPartition


class OrdersTest(unittest.TestCase):
    def test_produce_fail_and_read_back(self):
        with Broker() as broker:
            broker.create_topic("orders", 1)
            self.assertEqual(broker.produce("orders", [b"a", b"b"]), [0, 1])
            broker.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER")
            self.assertEqual(broker.faults.pending_failures(), 1)
            broker.clear_faults()
            broker.advance(60)
            self.assertEqual([r.value for r in broker.records("orders")], [b"a", b"b"])
            self.assertEqual(broker.committed("nobody"), {})
        self.assertNotIn("pytest", sys.modules)  # the package imports pytest nowhere but the plugin
"""


def test_a_unittest_suite_uses_the_broker_without_pytest(tmp_path: Path) -> None:
    (tmp_path / "test_orders.py").write_text(textwrap.dedent(UNITTEST_MODULE))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "test_orders"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "test_produce_fail_and_read_back" in done.stderr
    assert "Ran 1 test" in done.stderr and "OK" in done.stderr
