"""The pytest plugin of ``groupcoord.testing`` (entry point ``pytest11``: ``groupcoord``).

Fixtures:

* ``kafka_broker``: a fresh in-process :class:`~groupcoord.testing.Broker` per test, with the
  settings of ``@pytest.mark.kafka_broker(settings={...})`` over the test-friendly defaults;
* ``kafka_broker_session``: one broker for the whole session (under pytest-xdist, one per
  worker: each worker is its own session), seen by each test through a
  :class:`BrokerNamespace` whose :meth:`~BrokerNamespace.topic` and
  :meth:`~BrokerNamespace.group` give names no other test uses. Injected faults are cleared
  after every test. Time moved by ``advance()`` stays moved for later tests;
* ``kafka_cluster``: a fresh in-process :class:`~groupcoord.testing.Cluster` per test, 3 brokers
  unless ``@pytest.mark.kafka_cluster(brokers=N, settings={...}, racks=[...])`` says otherwise.

When a test using either fixture fails, its report gets two sections: the broker's log tail
and the events of every group the test's requests named.

This is the only module of the package that imports pytest; the broker itself is imported
when a fixture is first used, so that merely having the plugin installed costs nothing.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from groupcoord.testing.broker import Broker
    from groupcoord.testing.cluster import Cluster

_BROKERS = pytest.StashKey[list["Broker"]]()
_names = itertools.count(1)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafka_broker(settings=None, security_protocol=..., users=..., acls=..., super_users=..., "
        "ssl_client_auth=...): broker properties (Kafka names) and security for the kafka_broker fixture",
    )
    config.addinivalue_line(
        "markers",
        "kafka_cluster(brokers=3, settings=None, racks=None): the kafka_cluster fixture's brokers, "
        "properties (Kafka names) and racks",
    )


class BrokerNamespace:
    """The session broker as one test sees it: every :class:`Broker` method, plus names of
    topics and groups that belong to this test alone."""

    def __init__(self, broker: Broker, prefix: str) -> None:
        self.broker = broker
        self.prefix = prefix

    def topic(self, name: str = "topic") -> str:
        return f"{self.prefix}.{name}"

    def group(self, name: str = "group") -> str:
        return f"{self.prefix}.{name}"

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def __getattr__(self, name: str) -> Any:
        return getattr(self.broker, name)


def _settings(request: pytest.FixtureRequest) -> dict[str, object]:
    marker = request.node.get_closest_marker("kafka_broker")
    if marker is None:
        return {}
    settings = marker.kwargs.get("settings") or (marker.args[0] if marker.args else None) or {}
    return dict(settings)


#: The security arguments ``@pytest.mark.kafka_broker`` passes to :class:`Broker`.
_SECURITY_ARGS = ("security_protocol", "users", "acls", "super_users", "ssl_client_auth")


def _security(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("kafka_broker")
    if marker is None:
        return {}
    return {k: v for k, v in marker.kwargs.items() if k in _SECURITY_ARGS}


def _track(request: pytest.FixtureRequest, broker: Broker) -> None:
    request.node.stash.setdefault(_BROKERS, []).append(broker)
    broker.faults.groups_seen.clear()


@pytest.fixture
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """A fresh in-process broker for this test (settings and security:
    ``@pytest.mark.kafka_broker(settings={...}, security_protocol="SASL_SSL", users={...},
    acls=True, super_users=[...])``; ``broker.client_config(user, client=...)`` connects)."""
    from groupcoord.testing.broker import Broker

    with Broker(settings=_settings(request), **_security(request)) as broker:
        _track(request, broker)
        yield broker


@pytest.fixture
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A fresh in-process cluster of several brokers for this test
    (``@pytest.mark.kafka_cluster(brokers=3, settings={...}, racks=[...])``): coordinators and
    leaders that move, brokers that stop and start (docs/cluster.md)."""
    from groupcoord.testing.cluster import Cluster

    marker = request.node.get_closest_marker("kafka_cluster")
    options = dict(marker.kwargs) if marker is not None else {}
    unknown = set(options) - {"brokers", "settings", "racks"}
    if unknown:
        raise pytest.UsageError(f"@pytest.mark.kafka_cluster does not take {sorted(unknown)}")
    cluster = Cluster(
        settings=options.get("settings"), brokers=options.get("brokers", 3), racks=options.get("racks")
    )
    with cluster:
        _track(request, cluster)
        yield cluster


@pytest.fixture(scope="session")
def _groupcoord_session_broker() -> Iterator[Broker]:
    from groupcoord.testing.broker import Broker

    with Broker() as broker:
        yield broker


@pytest.fixture
def kafka_broker_session(
    request: pytest.FixtureRequest, _groupcoord_session_broker: Broker
) -> Iterator[BrokerNamespace]:
    """The session's broker, with a topic/group namespace of this test's own."""
    broker = _groupcoord_session_broker
    if request.node.get_closest_marker("kafka_broker") is not None:
        raise pytest.UsageError(
            "@pytest.mark.kafka_broker settings apply to kafka_broker, not the session broker"
        )
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", request.node.name)[:60]
    _track(request, broker)
    try:
        yield BrokerNamespace(broker, f"t{next(_names)}-{slug}")
    finally:
        broker.clear_faults()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for broker in item.stash.get(_BROKERS, []):
        if not broker.running:
            continue
        report.sections.append(("groupcoord broker log (tail)", broker.log_tail(60) or "(empty)"))
        for group in sorted(broker.faults.groups_seen):
            try:
                lines = [
                    f"{e.time_ms} gen={e.generation} {e.type} {e.from_state or ''}->{e.to_state or ''} "
                    f"reason={e.reason.value} member={e.member_id or ''} client={e.client_id or ''}"
                    for e in broker.events(group)
                ]
            except Exception as exc:  # the report must not hide the test's own failure
                lines = [f"(could not read the events: {exc!r})"]
            report.sections.append((f"groupcoord events of group {group!r}", "\n".join(lines) or "(none)"))
