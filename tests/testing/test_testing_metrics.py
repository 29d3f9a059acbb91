"""``Broker.metrics_url`` (the ``metrics.listen`` endpoint's address), and a hard restart that
frees and rebinds a fixed metrics port.

A crashed process's sockets are closed by the kernel, the metrics listener's too; the
in-process hard stop closes the endpoint likewise (and nothing else of the clean shutdown), so
the restarted broker binds the same metrics port. Scrapes are parsed with prometheus_client's
own text parser and compared exactly.
"""

from __future__ import annotations

import socket
import urllib.request

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition
from prometheus_client.parser import text_string_to_metric_families

from groupcoord.testing import Broker, TopicPartition
from groupcoord.testing.broker_thread import metrics_url

pytestmark = pytest.mark.timeout(120)


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        text = response.read().decode("utf-8")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def committed_offset(url: str, group: str, topic: str, partition: int) -> float | None:
    labels = frozenset({"group": group, "topic": topic, "partition": str(partition)}.items())
    return scrape(url).get(("groupcoord_group_committed_offset", labels))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def commit(broker: Broker, group: str, topic: str, partition: int, offset: int) -> None:
    """A simple-consumer commit (no group membership): generation -1, as librdkafka sends it."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[CTopicPartition(topic, partition, offset)], asynchronous=False)
    finally:
        consumer.close()


def test_metrics_url_is_none_without_metrics_listen_and_raises_when_stopped() -> None:
    with Broker() as broker:
        assert broker.metrics_url is None
    with pytest.raises(RuntimeError, match="not running"):
        _ = broker.metrics_url


def test_a_wildcard_metrics_host_is_named_as_loopback_in_the_url() -> None:
    """What a scraper on this host dials for each bound address (IPv6 in brackets)."""
    assert metrics_url(("0.0.0.0", 9404)) == "http://127.0.0.1:9404/metrics"
    assert metrics_url(("", 9404)) == "http://127.0.0.1:9404/metrics"
    assert metrics_url(("::", 9404)) == "http://[::1]:9404/metrics"
    assert metrics_url(("::1", 9404)) == "http://[::1]:9404/metrics"
    assert metrics_url(("127.0.0.2", 9404)) == "http://127.0.0.2:9404/metrics"
    assert metrics_url(None) is None


def test_hard_restart_frees_a_fixed_metrics_port_and_the_restarted_broker_answers_there() -> None:
    """In-process ``restart(hard=True)`` with ``metrics.listen`` on a fixed port: the restarted
    broker binds the same port, ``metrics_url`` names it, and its scrape shows the committed
    offset it loaded from the log (written before the crash). (A subprocess's hard stop is a
    SIGKILL: the kernel frees the port; ``metrics_url`` in that mode is tested in
    test_testing_each_mode.py.)"""
    port = free_port()
    with Broker({"metrics.listen": f"127.0.0.1:{port}"}) as broker:
        url = f"http://127.0.0.1:{port}/metrics"
        assert broker.metrics_url == url
        broker.create_topic("orders", 2)
        broker.produce("orders", [b"a", b"b", b"c"], partition=1)
        commit(broker, "billing", "orders", 1, 2)
        assert committed_offset(url, "billing", "orders", 1) == 2

        broker.restart(hard=True)

        assert broker.metrics_url == url
        assert broker.committed("billing") == {TopicPartition("orders", 1): 2}
        assert committed_offset(url, "billing", "orders", 1) == 2
        commit(broker, "billing", "orders", 1, 3)  # the restarted broker, not a leftover endpoint
        assert committed_offset(url, "billing", "orders", 1) == 3
    with pytest.raises(OSError):
        scrape(url)  # closed with the broker
