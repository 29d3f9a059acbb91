"""The broker's Prometheus endpoint: instruments, the scrape-time families, the HTTP server.

:class:`BrokerMetrics` is built by the composition root (``groupcoord.app``) when
``metrics.listen`` is set, and installs itself on the broker's parts:

* ``Dispatcher.observe``: one ``Histogram.observe`` per answered request, on a child bound per
  API in advance (``groupcoord_request_duration_seconds{request="JoinGroup"}``; its ``_count``
  is the request counter);
* ``GroupRuntime.event_listeners``: rebalances by cause and their durations
  (:mod:`groupcoord.metrics.rebalances`);
* the server's :class:`~groupcoord.server.output.Traffic` totals, read at scrape time.

Everything else is read when Prometheus scrapes. The handler asks the broker's loop for a
:class:`~groupcoord.metrics.snapshot.Snapshot` (waiting at most :data:`SNAPSHOT_TIMEOUT_S`). It
answers in the format the scraper asks for (``Accept``: the text format 0.0.4 or OpenMetrics, gzip
if accepted, ``?name[]=`` filters): the instruments rendered by ``prometheus_client``, then the
snapshot's families written by :mod:`groupcoord.metrics.exposition`, several times faster than
``prometheus_client``'s generic path and the same bytes. The HTTP server is a threading WSGI
server on a daemon thread of its own (:mod:`groupcoord.metrics.http_thread`, shared with the web
console), with its own registry of instruments (several brokers in one process, as in tests,
each have their own).

Every metric is listed, with its labels and meaning, in ``docs/operations.md``.
"""

from __future__ import annotations

import gzip
import logging
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Histogram, PlatformCollector, ProcessCollector
from prometheus_client.exposition import ThreadingWSGIServer, choose_encoder, gzip_accepted

from groupcoord.broker.state import Broker
from groupcoord.metrics.exposition import Family, render
from groupcoord.metrics.http_thread import LoopHttpEndpoint, bindable, url_host
from groupcoord.metrics.rebalances import DURATION_BUCKETS, RebalanceCounter
from groupcoord.metrics.snapshot import OffsetRow, PartitionRow, Snapshot, TimestampCache, take_snapshot
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.server.app import KafkaServer
from groupcoord.server.dispatch import Dispatcher

log = logging.getLogger(__name__)

__all__ = ["GROUP_STATES", "REQUEST_BUCKETS", "SNAPSHOT_TIMEOUT_S", "BrokerMetrics", "request_name"]

#: How long a scrape waits for the loop's snapshot before answering without it.
SNAPSHOT_TIMEOUT_S = 5.0

#: Seconds: from a cached answer (~50 µs) to a JoinGroup parked through a rebalance.
REQUEST_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)

#: The classic group states, as DescribeGroups names them (each always has a series).
GROUP_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")


def request_name(api_key: int) -> str:
    """Kafka's name of an API (``JoinGroup``), as Kafka's request metrics label it."""
    try:
        return "".join(word.capitalize() for word in ApiKey(api_key).name.split("_"))
    except ValueError:
        return f"Api{api_key}"


class BrokerMetrics(LoopHttpEndpoint):
    """One broker's metrics and the HTTP server that exposes them.

    Args:
        broker, groups, server, dispatcher: the broker's parts (see the module docstring).
        host, port: where to listen (``metrics.listen``; port 0 picks a free one).

    :meth:`start` (on the broker's loop) binds and returns the bound (host, port), also kept
    in :attr:`address`; :meth:`stop` closes it.
    """

    def __init__(
        self,
        *,
        broker: Broker,
        groups: GroupRuntime,
        server: KafkaServer,
        dispatcher: Dispatcher[Any],
        host: str,
        port: int,
    ) -> None:
        super().__init__(
            host=host, port=port, what="metrics", says="metrics scrape", log=log, timeout_s=SNAPSHOT_TIMEOUT_S
        )
        self.broker = broker
        self.groups = groups
        self.server = server
        #: The instruments and process collectors, rendered by ``prometheus_client``; the
        #: snapshot's families are rendered by :mod:`groupcoord.metrics.exposition` and added.
        self._instruments = CollectorRegistry()
        ProcessCollector(registry=self._instruments)
        PlatformCollector(registry=self._instruments)
        self.requests = Histogram(
            "groupcoord_request_duration_seconds",
            "Time from a request's handling to its answer being ready, by API (Kafka's name); "
            "_count is the number of requests answered.",
            ["request"],
            buckets=REQUEST_BUCKETS,
            registry=self._instruments,
        )
        self.rebalance_durations = Histogram(
            "groupcoord_rebalance_duration_seconds",
            "How long a group stopped for a rebalance: from entering PreparingRebalance "
            "until Stable again (coordinator clock).",
            buckets=DURATION_BUCKETS,
            registry=self._instruments,
        )
        self.rebalances = RebalanceCounter(self.rebalance_durations)
        self._observers: dict[int, Callable[[float], None]] = {}
        for key, _lo, _hi in dispatcher.registry.ranges():
            self._observers[key] = self.requests.labels(request_name(key)).observe
        dispatcher.observe = self._observe
        groups.event_listeners.append(self.rebalances.on_event)
        self._cache: TimestampCache = {}

    # ------------------------------------------------------------------ hooks (on the loop)
    def _observe(self, api_key: int, seconds: float) -> None:
        try:
            self._observers[api_key](seconds)
        except KeyError:  # a route added after start
            observe = self._observers[api_key] = self.requests.labels(request_name(api_key)).observe
            observe(seconds)

    # ------------------------------------------------------------------ lifecycle
    def make_server(self) -> WSGIServer:
        return make_server(
            self.host,
            self.port,
            self._app,
            bindable(ThreadingWSGIServer, self.host, self.port),
            _QuietHandler,
        )

    def start(self) -> tuple[str, int]:
        address = super().start()
        log.info("metrics on http://%s:%d/metrics", *url_host(address))
        return address

    # ------------------------------------------------------------------ scrape (HTTP thread)
    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        """The /metrics answer (any path but /favicon.ico, as ``prometheus_client``'s app): the
        instruments through ``prometheus_client``, in the format the scraper asks for, and the
        snapshot's families rendered directly in the same format."""
        if environ.get("PATH_INFO") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        accept = environ.get("HTTP_ACCEPT", "")
        encoder, content_type = choose_encoder(accept)
        openmetrics = content_type.startswith("application/openmetrics-text")
        names = parse_qs(environ.get("QUERY_STRING", "")).get("name[]")
        instruments = self._instruments if not names else self._instruments.restricted_registry(names)
        snap = self.snapshot()
        families = snapshot_families(snap) if snap is not None else []
        if names:  # ?name[]=...: only the families named (as a family or by their samples)
            wanted = set(names)
            families = [f for f in families if f.name in wanted or f"{f.name}_total" in wanted]
        head = encoder(instruments)
        text = render(families, openmetrics=openmetrics).encode("utf-8")
        if openmetrics:
            body = (head[: -len(_EOF)] if head.endswith(_EOF) else head) + text + _EOF
        else:
            body = head + text
        headers = [("Content-Type", content_type)]
        if gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING", "")):
            body = gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [body]

    def snapshot(self) -> Snapshot | None:
        """The loop's snapshot, or None (the loop is gone, or busy past the timeout)."""
        return self.on_loop(self._take)

    async def _take(self) -> Snapshot:
        # Everything read here, the arguments included, is read on the loop.
        return await take_snapshot(
            self.broker,
            self.groups,
            connections=len(self.server.connections),
            traffic=self.server.traffic,
            rebalances=self.rebalances.copy(),
            cache=self._cache,
        )


_EOF = b"# EOF\n"


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per scrape on stderr is noise


#: (label values, row): an offset's (group, topic, partition), a partition's (topic, partition)
_Offsets = list[tuple[tuple[str, str, str], OffsetRow]]
_Partitions = list[tuple[tuple[str, str], PartitionRow]]


def snapshot_families(snap: Snapshot) -> list[Family]:
    """Every family a scrape reads from the loop's snapshot, in the order they are exposed.

    The label values of each offset and partition are made once and shared by groupcoord's
    families and kafka_exporter's, which label the same rows."""
    offsets: _Offsets = [((o.group_id, o.topic, str(o.partition)), o) for o in snap.offsets]
    partitions: _Partitions = [((p.topic, str(p.partition)), p) for p in snap.partitions]
    return [
        *_group_metrics(snap),
        *_offset_metrics(offsets, partitions),
        *_server_metrics(snap),
        *_kafka_exporter_metrics(snap, offsets, partitions),
    ]


def _gauge(name: str, doc: str, value: float) -> Family:
    return Family(name, doc, "gauge", (), [((), value)])


def _counter(name: str, doc: str, value: float) -> Family:
    return Family(name, doc, "counter", (), [((), value)])


def _group_metrics(snap: Snapshot) -> list[Family]:
    counts = Counter(g.state for g in snap.groups)
    groups = snap.groups
    return [
        Family(
            "groupcoord_groups",
            "Groups the coordinator holds, by state.",
            "gauge",
            ("state",),
            [((name,), counts.get(name, 0)) for name in GROUP_STATES],
        ),
        Family(
            "groupcoord_group_members",
            "Members of a group.",
            "gauge",
            ("group",),
            [((g.group_id,), g.members) for g in groups],
        ),
        Family(
            "groupcoord_group_generation",
            "A group's generation id.",
            "gauge",
            ("group",),
            [((g.group_id,), g.generation) for g in groups],
        ),
        Family(
            "groupcoord_group_state",
            "1 for a group's current state (one series per group).",
            "gauge",
            ("group", "state", "protocol_type"),
            [((g.group_id, g.state, g.protocol_type), 1) for g in groups],
        ),
        Family(
            "groupcoord_group_rebalances",
            "Rebalances begun, by group and cause (the reason of the group's move to "
            "PreparingRebalance, as in __group_events).",
            "counter",
            ("group", "cause"),
            [((group, cause), n) for (group, cause), n in sorted(snap.rebalances.items())],
        ),
    ]


def _offset_metrics(rows: _Offsets, partitions: _Partitions) -> list[Family]:
    gtp = ("group", "topic", "partition")
    return [
        Family(
            "groupcoord_group_committed_offset",
            "A group's committed offset of a partition.",
            "gauge",
            gtp,
            [(labels, o.committed) for labels, o in rows],
        ),
        Family(
            "groupcoord_group_offset_lag",
            "Records a group has yet to consume: the log end offset minus the committed offset.",
            "gauge",
            gtp,
            [(labels, o.lag) for labels, o in rows if o.lag is not None],
        ),
        Family(
            "groupcoord_group_time_lag_seconds",
            "How long the first record a group has not consumed has been in the log (0: caught up).",
            "gauge",
            gtp,
            [(labels, o.time_lag_s) for labels, o in rows if o.time_lag_s is not None],
        ),
        *_partition_ends(
            partitions,
            (
                "groupcoord_partition_log_end_offset",
                "A partition's log end offset (its high watermark: one replica).",
            ),
            (
                "groupcoord_partition_log_start_offset",
                "A partition's log start offset (the earliest offset a fetch can read).",
            ),
        ),
    ]


def _partition_ends(rows: _Partitions, end: tuple[str, str], start: tuple[str, str]) -> list[Family]:
    """Two gauges by topic and partition, each a (name, help): the log end offset, then the
    log start offset (groupcoord's names and kafka_exporter's)."""
    tp = ("topic", "partition")
    return [
        Family(*end, "gauge", tp, [(labels, p.log_end) for labels, p in rows]),
        Family(*start, "gauge", tp, [(labels, p.log_start) for labels, p in rows]),
    ]


def _server_metrics(snap: Snapshot) -> list[Family]:
    return [
        _gauge("groupcoord_connections", "Client connections open.", snap.connections),
        _counter(
            "groupcoord_connections_accepted", "Client connections accepted.", snap.connections_accepted
        ),
        _counter(
            "groupcoord_connections_refused",
            "Client connections closed at once: over max.connections.per.ip, or past the listen backlog.",
            snap.connections_refused,
        ),
        _counter("groupcoord_received_bytes", "Bytes received from clients (requests).", snap.bytes_in),
        _gauge(
            "groupcoord_log_cleaner_uncleanable_partitions",
            "Compacted partitions the log cleaner skips after a failure (uncleanable-partitions-count).",
            snap.uncleanable_partitions,
        ),
        _counter(
            "groupcoord_sent_bytes",
            "Bytes of answers sent to clients (fetched records included).",
            snap.bytes_out,
        ),
        _gauge(
            "groupcoord_metrics_snapshot_seconds",
            "Event-loop time the last scrape's snapshot took.",
            snap.took_s,
        ),
    ]


def _kafka_exporter_metrics(snap: Snapshot, rows: _Offsets, partitions: _Partitions) -> list[Family]:
    """The names and labels of kafka_exporter (danielqsj/kafka_exporter) that its Grafana
    dashboards plot, so they work unchanged against groupcoord (docs/operations.md)."""
    per_topic = Counter(p.topic for p in snap.partitions)
    ctp = ("consumergroup", "topic", "partition")
    offsets: list[tuple[tuple[str, str, str], float]] = []
    lags: list[tuple[tuple[str, str, str], float]] = []
    offset_sum: defaultdict[tuple[str, str], int] = defaultdict(int)
    lag_sum: defaultdict[tuple[str, str], int] = defaultdict(int)
    for labels, o in rows:
        offsets.append((labels, o.committed))
        offset_sum[o.group_id, o.topic] += o.committed
        if o.lag is not None:
            lags.append((labels, o.lag))
            lag_sum[o.group_id, o.topic] += o.lag
    return [
        _gauge("kafka_brokers", "Number of brokers in the cluster.", 1),
        Family(
            "kafka_topic_partitions",
            "Partitions of a topic.",
            "gauge",
            ("topic",),
            [((topic,), n) for topic, n in sorted(per_topic.items())],
        ),
        *_partition_ends(
            partitions,
            ("kafka_topic_partition_current_offset", "Current offset (log end) of a partition."),
            ("kafka_topic_partition_oldest_offset", "Oldest offset (log start) of a partition."),
        ),
        Family(
            "kafka_consumergroup_current_offset",
            "Committed offset of a group at a partition.",
            "gauge",
            ctp,
            offsets,
        ),
        Family("kafka_consumergroup_lag", "Lag of a group at a partition.", "gauge", ctp, lags),
        Family(
            "kafka_consumergroup_current_offset_sum",
            "Sum of a group's committed offsets over a topic's partitions.",
            "gauge",
            ("consumergroup", "topic"),
            [(key, n) for key, n in sorted(offset_sum.items())],
        ),
        Family(
            "kafka_consumergroup_lag_sum",
            "Sum of a group's lag over a topic's partitions.",
            "gauge",
            ("consumergroup", "topic"),
            [(key, n) for key, n in sorted(lag_sum.items())],
        ),
        Family(
            "kafka_consumergroup_members",
            "Members of a group.",
            "gauge",
            ("consumergroup",),
            [((g.group_id,), g.members) for g in snap.groups],
        ),
    ]
