"""The scrape's own text renderer (``groupcoord.metrics.exposition``) writes exactly what
``prometheus_client`` writes for the same metric families, in the Prometheus text format 0.0.4 and
in OpenMetrics 1.0; and the endpoint serves both, as Prometheus negotiates them (``Accept``), with
gzip and with a ``name[]`` filter.

The reference is ``prometheus_client`` itself (``generate_latest`` and
``openmetrics.exposition.generate_latest`` over ``GaugeMetricFamily`` / ``CounterMetricFamily``):
label names sorted, label values escaped (backslash, newline, double quote), values formatted as
Go does (``floatToGoString``: an exponent from a million up), counters' ``_total`` names.
"""

from __future__ import annotations

import gzip
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from groupcoord.metrics.exposition import Family, as_prometheus_metric, render
from groupcoord.testing import Broker

pytestmark = pytest.mark.timeout(120)

TRICKY = ["plain", 'quote"d', "back\\slash", "new\nline", "ünïcödé ✓", "", 'all\\"\n', "{braces}=,"]

FAMILIES = [
    Family("t_no_labels", "A gauge without labels.", "gauge", (), [((), 7)]),
    Family("t_counter_no_labels", "A counter: _total.", "counter", (), [((), 12)]),
    Family(
        "t_one",
        'Help with a back\\slash, a "quote" and a\nnewline.',
        "gauge",
        ("group",),
        [((v,), i) for i, v in enumerate(TRICKY)],
    ),
    # Label names out of order: both renderers sort them (consumergroup, partition, topic).
    Family(
        "t_three",
        "Three labels.",
        "gauge",
        ("consumergroup", "topic", "partition"),
        [
            ((v, f"topic-{i}", str(i)), v2)
            for i, (v, v2) in enumerate(
                zip(TRICKY, [0, -3, 999_999, 1_000_000, 12_345_678_901, 2**63 - 1, 0.25, 1e-7], strict=True)
            )
        ],
    ),
    Family(
        "t_two_counter",
        "By group and cause.",
        "counter",
        ("group", "cause"),
        [(("g", "member_left"), 3), (('g"', "x"), 0)],
    ),
    Family(
        "t_four",
        "Four labels.",
        "gauge",
        ("d", "b", "c", "a"),
        [(("4", "2", "3", "1"), 1.5), (("", "", "", ""), -0.0)],
    ),
    Family("t_empty", "No series.", "gauge", ("group",), []),
]


class _Fixed(Collector):
    def __init__(self, metrics: list[Metric]) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self._metrics


def _reference() -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(_Fixed([as_prometheus_metric(f) for f in FAMILIES]))
    return registry


def test_the_text_format_is_prometheus_clients_byte_for_byte() -> None:
    ours = render(FAMILIES, openmetrics=False)
    assert ours == generate_latest(_reference()).decode("utf-8")
    assert 't_one{group="quote\\"d"} 1.0\n' in ours
    assert 't_three{consumergroup="new\\nline",partition="3",topic="topic-3"} 1e+06\n' in ours
    assert "# HELP t_counter_no_labels_total A counter: _total.\n" in ours


def test_openmetrics_is_prometheus_clients_byte_for_byte() -> None:
    ours = render(FAMILIES, openmetrics=True) + "# EOF\n"
    assert ours == generate_openmetrics(_reference()).decode("utf-8")
    assert "# TYPE t_counter_no_labels counter\nt_counter_no_labels_total 12.0\n" in ours


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker({"metrics.listen": "127.0.0.1:0"}) as b:
        b.create_topic("orders", 2)
        yield b


def _get(
    broker: Broker, *, accept: str | None = None, gzip_ok: bool = False, query: str = ""
) -> tuple[str, str]:
    url = broker.metrics_url
    assert url is not None
    request = urllib.request.Request(url + query)
    if accept is not None:
        request.add_header("Accept", accept)
    if gzip_ok:
        request.add_header("Accept-Encoding", "gzip")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        body = response.read()
        if gzip_ok:
            assert response.headers["Content-Encoding"] == "gzip"
            body = gzip.decompress(body)
        return response.headers["Content-Type"], body.decode("utf-8")


def test_prometheus_asking_for_openmetrics_gets_one_document_with_the_snapshot_and_the_instruments(
    broker: Broker,
) -> None:
    # Prometheus 2.x/3.x's default scrape Accept header.
    accept = (
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
        "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
    )
    content_type, text = _get(broker, accept=accept, gzip_ok=True)
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
    assert text.endswith("# EOF\n") and text.count("# EOF") == 1
    families = {f.name: f for f in parse_openmetrics(text)}
    assert {s.labels["state"]: s.value for s in families["groupcoord_groups"].samples} == {
        "Empty": 0.0,
        "PreparingRebalance": 0.0,
        "CompletingRebalance": 0.0,
        "Stable": 0.0,
        "Dead": 0.0,
    }
    ends = {
        (s.labels["topic"], s.labels["partition"]): s.value
        for s in families["kafka_topic_partition_current_offset"].samples
    }
    assert ends[("orders", "0")] == 0.0 and ends[("orders", "1")] == 0.0
    assert families["groupcoord_connections_accepted"].type == "counter"
    assert "groupcoord_request_duration_seconds" in families  # an instrument
    assert "process_cpu_seconds" in families  # prometheus_client's process collector


def test_the_text_format_and_a_name_filter(broker: Broker) -> None:
    content_type, text = _get(broker)
    assert content_type.startswith("text/plain; version=0.0.4")
    names = {f.name for f in text_string_to_metric_families(text)}
    assert {"groupcoord_groups", "kafka_brokers", "groupcoord_request_duration_seconds"} <= names
    _, filtered = _get(broker, query="?name[]=kafka_brokers&name[]=groupcoord_connections")
    assert {f.name for f in text_string_to_metric_families(filtered)} == {
        "kafka_brokers",
        "groupcoord_connections",
    }
