"""The broker's Prometheus endpoint: instruments, the scrape-time collector, the HTTP server.

:class:`BrokerMetrics` is built by the composition root (``groupcoord.app``) when
``metrics.listen`` is set, and installs itself on the broker's parts:

* ``Dispatcher.observe``: one ``Histogram.observe`` per answered request, on a child bound per
  API in advance (``groupcoord_request_duration_seconds{request="JoinGroup"}``; its ``_count``
  is the request counter);
* ``GroupRuntime.event_listeners``: rebalances by cause and their durations
  (:mod:`groupcoord.metrics.rebalances`);
* the server's :class:`~groupcoord.server.connection.Traffic` totals, read at scrape time.

Everything else is read when Prometheus scrapes: a custom collector asks the broker's loop for
a :class:`~groupcoord.metrics.snapshot.Snapshot` (waiting at most :data:`SNAPSHOT_TIMEOUT_S`)
and renders it. The HTTP server is ``prometheus_client``'s, on its own daemon threads, with
its own registry (several brokers in one process, as in tests, each have their own).

Every metric is listed, with its labels and meaning, in ``docs/operations.md``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CollectorRegistry,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from groupcoord.broker.state import Broker
from groupcoord.metrics.rebalances import DURATION_BUCKETS, RebalanceCounter
from groupcoord.metrics.snapshot import Snapshot, TimestampCache, take_snapshot
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


class BrokerMetrics:
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
        self.broker = broker
        self.groups = groups
        self.server = server
        self.host = host
        self.port = port
        self.address: tuple[str, int] | None = None
        #: how long a scrape waits for the loop's snapshot
        self.snapshot_timeout_s = SNAPSHOT_TIMEOUT_S
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.requests = Histogram(
            "groupcoord_request_duration_seconds",
            "Time from a request's handling to its answer being ready, by API (Kafka's name); "
            "_count is the number of requests answered.",
            ["request"],
            buckets=REQUEST_BUCKETS,
            registry=self.registry,
        )
        self.rebalance_durations = Histogram(
            "groupcoord_rebalance_duration_seconds",
            "How long a group stopped for a rebalance: from entering PreparingRebalance "
            "until Stable again (coordinator clock).",
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.rebalances = RebalanceCounter(self.rebalance_durations)
        self._observers: dict[int, Callable[[float], None]] = {}
        for key, _lo, _hi in dispatcher.registry.ranges():
            self._observers[key] = self.requests.labels(request_name(key)).observe
        dispatcher.observe = self._observe
        groups.event_listeners.append(self.rebalances.on_event)
        self.registry.register(_SnapshotCollector(self))
        self._cache: TimestampCache = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._httpd: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ hooks (on the loop)
    def _observe(self, api_key: int, seconds: float) -> None:
        try:
            self._observers[api_key](seconds)
        except KeyError:  # a route added after start
            observe = self._observers[api_key] = self.requests.labels(request_name(api_key)).observe
            observe(seconds)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> tuple[str, int]:
        """Listen (on the broker's loop); the bound (host, port). Raises OSError."""
        self._loop = asyncio.get_running_loop()
        httpd, thread = start_http_server(self.port, addr=self.host, registry=self.registry)
        thread.name = f"groupcoord-metrics-{httpd.server_address[1]}"
        self._httpd, self._thread = httpd, thread
        self.address = (self.host, int(httpd.server_address[1]))
        log.info("metrics on http://%s:%d/metrics", *_url_host(self.address))
        return self.address

    async def stop(self) -> None:
        """Close the HTTP server (its shutdown waits up to half a second, off the loop)."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        await asyncio.to_thread(httpd.shutdown)
        httpd.server_close()
        if thread is not None:
            await asyncio.to_thread(thread.join, 5.0)

    # ------------------------------------------------------------------ scrape (HTTP thread)
    def snapshot(self) -> Snapshot | None:
        """The loop's snapshot, or None (the loop is gone, or busy past the timeout)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return None
        coro = self._take()
        try:
            future = asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:  # the loop closed meanwhile
            coro.close()
            return None
        try:
            return future.result(self.snapshot_timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            log.warning(
                "metrics scrape: the event loop gave no snapshot within %.1f s", self.snapshot_timeout_s
            )
        except Exception as exc:
            log.warning("metrics scrape: no snapshot: %r", exc)
        return None

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


def _url_host(address: tuple[str, int]) -> tuple[str, int]:
    host, port = address
    return (f"[{host}]" if ":" in host else host or "0.0.0.0"), port


class _SnapshotCollector(Collector):
    """The metrics read at scrape time, from one snapshot of the loop's state."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # names vary with the snapshot: registered without a describe-time check

    def collect(self) -> Iterator[Metric]:
        snap = self._metrics.snapshot()
        if snap is None:
            return
        yield from _group_metrics(snap)
        yield from _offset_metrics(snap)
        yield from _server_metrics(snap)
        yield from _kafka_exporter_metrics(snap)


def _group_metrics(snap: Snapshot) -> Iterator[Metric]:
    by_state = GaugeMetricFamily(
        "groupcoord_groups", "Groups the coordinator holds, by state.", labels=["state"]
    )
    counts = Counter(g.state for g in snap.groups)
    for name in GROUP_STATES:
        by_state.add_metric([name], counts.get(name, 0))
    yield by_state
    members = GaugeMetricFamily("groupcoord_group_members", "Members of a group.", labels=["group"])
    generation = GaugeMetricFamily(
        "groupcoord_group_generation", "A group's generation id.", labels=["group"]
    )
    state = GaugeMetricFamily(
        "groupcoord_group_state",
        "1 for a group's current state (one series per group).",
        labels=["group", "state", "protocol_type"],
    )
    for g in snap.groups:
        members.add_metric([g.group_id], g.members)
        generation.add_metric([g.group_id], g.generation)
        state.add_metric([g.group_id, g.state, g.protocol_type], 1)
    yield members
    yield generation
    yield state
    rebalances = CounterMetricFamily(
        "groupcoord_group_rebalances",
        "Rebalances begun, by group and cause (the reason of the group's move to "
        "PreparingRebalance, as in __group_events).",
        labels=["group", "cause"],
    )
    for (group, cause), n in sorted(snap.rebalances.items()):
        rebalances.add_metric([group, cause], n)
    yield rebalances


def _offset_metrics(snap: Snapshot) -> Iterator[Metric]:
    gtp = ["group", "topic", "partition"]
    committed = GaugeMetricFamily(
        "groupcoord_group_committed_offset", "A group's committed offset of a partition.", labels=gtp
    )
    lag = GaugeMetricFamily(
        "groupcoord_group_offset_lag",
        "Records a group has yet to consume: the log end offset minus the committed offset.",
        labels=gtp,
    )
    time_lag = GaugeMetricFamily(
        "groupcoord_group_time_lag_seconds",
        "How long the first record a group has not consumed has been in the log (0: caught up).",
        labels=gtp,
    )
    for o in snap.offsets:
        labels = [o.group_id, o.topic, str(o.partition)]
        committed.add_metric(labels, o.committed)
        if o.lag is not None:
            lag.add_metric(labels, o.lag)
        if o.time_lag_s is not None:
            time_lag.add_metric(labels, o.time_lag_s)
    yield committed
    yield lag
    yield time_lag
    yield from _partition_ends(
        snap,
        (
            "groupcoord_partition_log_end_offset",
            "A partition's log end offset (its high watermark: one replica).",
        ),
        (
            "groupcoord_partition_log_start_offset",
            "A partition's log start offset (the earliest offset a fetch can read).",
        ),
    )


def _partition_ends(snap: Snapshot, end: tuple[str, str], start: tuple[str, str]) -> Iterator[Metric]:
    """Two gauges by topic and partition, each a (name, help): the log end offset, then the
    log start offset (groupcoord's names and kafka_exporter's)."""
    ends = GaugeMetricFamily(*end, labels=["topic", "partition"])
    starts = GaugeMetricFamily(*start, labels=["topic", "partition"])
    for p in snap.partitions:
        ends.add_metric([p.topic, str(p.partition)], p.log_end)
        starts.add_metric([p.topic, str(p.partition)], p.log_start)
    yield ends
    yield starts


def _server_metrics(snap: Snapshot) -> Iterator[Metric]:
    yield GaugeMetricFamily("groupcoord_connections", "Client connections open.", value=snap.connections)
    yield CounterMetricFamily(
        "groupcoord_connections_accepted", "Client connections accepted.", value=snap.connections_accepted
    )
    yield CounterMetricFamily(
        "groupcoord_connections_refused",
        "Client connections closed at once because max.connections were open.",
        value=snap.connections_refused,
    )
    yield CounterMetricFamily(
        "groupcoord_received_bytes", "Bytes received from clients (requests).", value=snap.bytes_in
    )
    yield CounterMetricFamily(
        "groupcoord_sent_bytes",
        "Bytes of answers sent to clients (fetched records included).",
        value=snap.bytes_out,
    )
    yield GaugeMetricFamily(
        "groupcoord_metrics_snapshot_seconds",
        "Event-loop time the last scrape's snapshot took.",
        value=snap.took_s,
    )


def _kafka_exporter_metrics(snap: Snapshot) -> Iterator[Metric]:
    """The names and labels of kafka_exporter (danielqsj/kafka_exporter) that its Grafana
    dashboards plot, so they work unchanged against groupcoord (docs/operations.md)."""
    yield GaugeMetricFamily("kafka_brokers", "Number of brokers in the cluster.", value=1)
    partitions = GaugeMetricFamily("kafka_topic_partitions", "Partitions of a topic.", labels=["topic"])
    per_topic = Counter(p.topic for p in snap.partitions)
    for topic, n in sorted(per_topic.items()):
        partitions.add_metric([topic], n)
    yield partitions
    yield from _partition_ends(
        snap,
        ("kafka_topic_partition_current_offset", "Current offset (log end) of a partition."),
        ("kafka_topic_partition_oldest_offset", "Oldest offset (log start) of a partition."),
    )
    ctp = ["consumergroup", "topic", "partition"]
    offset = GaugeMetricFamily(
        "kafka_consumergroup_current_offset", "Committed offset of a group at a partition.", labels=ctp
    )
    lag = GaugeMetricFamily("kafka_consumergroup_lag", "Lag of a group at a partition.", labels=ctp)
    offset_sum: defaultdict[tuple[str, str], int] = defaultdict(int)
    lag_sum: defaultdict[tuple[str, str], int] = defaultdict(int)
    for o in snap.offsets:
        offset.add_metric([o.group_id, o.topic, str(o.partition)], o.committed)
        offset_sum[o.group_id, o.topic] += o.committed
        if o.lag is not None:
            lag.add_metric([o.group_id, o.topic, str(o.partition)], o.lag)
            lag_sum[o.group_id, o.topic] += o.lag
    yield offset
    yield lag
    offset_sum_family = GaugeMetricFamily(
        "kafka_consumergroup_current_offset_sum",
        "Sum of a group's committed offsets over a topic's partitions.",
        labels=["consumergroup", "topic"],
    )
    for (group, topic), n in sorted(offset_sum.items()):
        offset_sum_family.add_metric([group, topic], n)
    yield offset_sum_family
    lag_sum_family = GaugeMetricFamily(
        "kafka_consumergroup_lag_sum",
        "Sum of a group's lag over a topic's partitions.",
        labels=["consumergroup", "topic"],
    )
    for (group, topic), n in sorted(lag_sum.items()):
        lag_sum_family.add_metric([group, topic], n)
    yield lag_sum_family
    members = GaugeMetricFamily(
        "kafka_consumergroup_members", "Members of a group.", labels=["consumergroup"]
    )
    for g in snap.groups:
        members.add_metric([g.group_id], g.members)
    yield members
