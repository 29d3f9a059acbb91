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
from hypothesis import HealthCheck, settings

# Hypothesis measures each example against the wall clock (a 200 ms deadline, a too-slow health
# check): on a busy machine that fails tests for being slow, not wrong. The suite's property
# tests are about outcomes, so no example has a deadline and slowness is never a failure.
settings.register_profile("groupcoord", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("groupcoord")


def _uses_spark(item: pytest.Item) -> bool:
    return "spark" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = "spark" if _uses_spark(item) else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
    if hasattr(config, "workerinput"):  # an xdist worker: every worker collects the same order
        items.sort(key=lambda item: not _uses_spark(item))


@pytest.hookimpl(optionalhook=True)  # an xdist hook: only called when xdist runs the suite
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """Stop the run at once when ``--dist loadgroup`` would be inert.

    pytest-xdist names a test's group by suffixing its node id with ``@group``; with a pytest
    whose ``nodeid`` ignores that suffix (pytest 9.2 with xdist 3.8) the scheduler sees no
    groups, spreads every file's tests over both workers and builds each module fixture twice,
    which silently costs the suite minutes. pyproject.toml pins pytest below 9.2 for this.
    """
    config = getattr(node, "config", None)
    if config is None or config.getoption("dist", "no") != "loadgroup":
        return
    if ids and not any("@" in nodeid for nodeid in ids):
        pytest.exit(
            f"--dist loadgroup is inert with pytest {pytest.__version__}: the test groups are "
            "lost (tests/conftest.py); install the pytest version pyproject.toml pins",
            returncode=4,
        )
