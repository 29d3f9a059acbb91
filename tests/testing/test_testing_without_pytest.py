"""``Broker`` without pytest: a unittest TestCase, and a package that imports pytest only in its plugin."""

from __future__ import annotations

import ast
import io
import unittest
from pathlib import Path

import groupcoord.testing
from groupcoord.testing import Broker


class OrdersTest(unittest.TestCase):
    """What a unittest user writes: the Broker as a context manager, no fixture."""

    __test__ = False  # run by unittest's runner below, not collected by pytest

    def test_produce_fail_and_read_back(self) -> None:
        with Broker() as broker:
            broker.create_topic("orders", 1)
            self.assertEqual(broker.produce("orders", [b"a", b"b"]), [0, 1])
            broker.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER")
            self.assertEqual(broker.faults.pending_failures(), 1)
            broker.clear_faults()
            broker.advance(60)
            self.assertEqual([r.value for r in broker.records("orders")], [b"a", b"b"])
            self.assertEqual(broker.committed("nobody"), {})


def test_a_unittest_test_case_uses_the_broker() -> None:
    out = io.StringIO()
    result = unittest.TextTestRunner(stream=out, verbosity=2).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(OrdersTest)
    )
    assert result.wasSuccessful(), out.getvalue()
    assert result.testsRun == 1


def test_no_module_of_the_package_but_the_plugin_imports_pytest() -> None:
    """So ``import groupcoord.testing`` works where pytest is not installed (a script, a notebook)."""
    package = Path(groupcoord.testing.__file__).parent
    importers = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n == "pytest" or n.startswith(("pytest.", "_pytest")) for n in names):
                importers.append(path.name)
    assert sorted(set(importers)) == ["plugin.py"]
