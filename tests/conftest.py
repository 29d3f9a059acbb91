"""Suite-wide collection rule for parallel runs.

``make test`` runs the suite on two pytest-xdist workers with ``--dist loadgroup``. Each test
gets an ``xdist_group``: every test that uses the session's SparkSession (``tests/pipeline``'s
``spark`` fixture) is in one group, so one worker starts one JVM and analyses the scripted
scenario once; every other test is grouped with its file, so a module-scoped broker starts once.
On a worker the Spark group comes first, so that the longest group does not start last while
the other worker runs out of work. Without xdist the marks do nothing and the order stays.
"""

from __future__ import annotations

import pytest


def _uses_spark(item: pytest.Item) -> bool:
    return "spark" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = "spark" if _uses_spark(item) else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
    if hasattr(config, "workerinput"):  # an xdist worker: every worker collects the same order
        items.sort(key=lambda item: not _uses_spark(item))
