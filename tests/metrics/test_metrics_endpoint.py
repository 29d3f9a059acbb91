"""The Prometheus endpoint (``metrics.listen``) scraped over HTTP while a real client group
rebalances and commits.

One in-process broker for the module (``groupcoord.testing.Broker`` with
``metrics.listen=127.0.0.1:0``); the scrape is parsed with prometheus_client's own text parser.
Counters are compared as deltas between two scrapes, gauges exactly. Clients are
confluent-kafka consumers (librdkafka), driven through a rebalance by joining, leaving and a
session expiry (``Broker.advance``).

Rebalance causes are the reasons the coordinator gives a group's move to PreparingRebalance
(Kafka's ``GroupCoordinator.prepareRebalance`` call sites: a new member joining in
``addMemberAndRebalance``, ``removeMemberAndUpdateGroup`` for a LeaveGroup and for a session
expiry in ``onExpireHeartbeat``); the same reasons ``__group_events`` records.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from prometheus_client.parser import text_string_to_metric_families

from groupcoord.testing import Broker

pytestmark = pytest.mark.timeout(120)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

TOPIC = "orders"
GROUP = "billing"
SESSION_MS = 6000
#: the records' CreateTime: an hour before the test (each partition's records share it, so the
#: batch that holds any of them carries this max timestamp, whatever the producer's batching)
HOUR_AGO_MS = int(time.time() * 1000) - 3_600_000


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker({"metrics.listen": "127.0.0.1:0"}) as b:
        yield b


def scrape(broker: Broker) -> Samples:
    url = broker.metrics_url
    assert url is not None
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode("utf-8")
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name, frozenset(sample.labels.items())] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def delta(after: Samples, before: Samples, name: str, **labels: str) -> float:
    return (value(after, name, **labels) or 0.0) - (value(before, name, **labels) or 0.0)


def consumer(broker: Broker, client_id: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": GROUP,
            "client.id": client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": 100,
            "max.poll.interval.ms": 30000,
            "topic.metadata.refresh.interval.ms": 60000,
        }
    )


def poll_until(broker: Broker, consumers: list[Consumer], members: int, generation_at_least: int) -> int:
    """Poll every consumer until the group is Stable with ``members`` members at a generation
    of at least ``generation_at_least``; that generation."""
    deadline = time.monotonic() + 60
    while True:
        for c in consumers:
            c.poll(0.05)
        state = broker.describe_group(GROUP)
        if (
            state.state == "Stable"
            and len(state.members) == members
            and state.generation is not None
            and state.generation >= generation_at_least
            and all(len(c.assignment()) > 0 for c in consumers)
        ):
            return state.generation
        assert time.monotonic() < deadline, f"group did not settle: {state}"


def produce(broker: Broker, partition: int, count: int, timestamp_ms: int) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(TOPIC, value=b"v%d" % i, partition=partition, timestamp=timestamp_ms)
    assert producer.flush(30) == 0


def test_scrapes_follow_a_group_through_rebalances_and_commits(broker: Broker) -> None:
    """Rebalances counted by cause, groups by state, members, committed offsets and lag (in
    records and in time) as the group joins, grows, shrinks, expires and commits; request
    histograms per API."""
    broker.create_topic(TOPIC, 2)
    produce(broker, 0, 5, HOUR_AGO_MS)
    produce(broker, 1, 3, HOUR_AGO_MS)
    before = scrape(broker)
    assert value(before, "groupcoord_partition_log_end_offset", topic=TOPIC, partition="0") == 5
    assert value(before, "kafka_topic_partition_current_offset", topic=TOPIC, partition="1") == 3
    assert value(before, "kafka_topic_partitions", topic=TOPIC) == 2

    a = consumer(broker, "consumer-a")
    b = consumer(broker, "consumer-b")
    try:
        a.subscribe([TOPIC])
        generation = poll_until(broker, [a], members=1, generation_at_least=1)
        a.commit(offsets=[CTopicPartition(TOPIC, 0, 2), CTopicPartition(TOPIC, 1, 3)], asynchronous=False)
        now_before = broker.clock.now_ms()
        first = scrape(broker)
        now_after = broker.clock.now_ms()

        assert value(first, "groupcoord_group_rebalances_total", group=GROUP, cause="new_member_joined") == 1
        assert delta(first, before, "groupcoord_rebalance_duration_seconds_count") == 1
        assert value(first, "groupcoord_groups", state="Stable") == 1
        for state in ("Empty", "PreparingRebalance", "CompletingRebalance", "Dead"):
            assert value(first, "groupcoord_groups", state=state) == 0
        assert value(first, "groupcoord_group_members", group=GROUP) == 1
        assert value(first, "kafka_consumergroup_members", consumergroup=GROUP) == 1
        stable = {"group": GROUP, "state": "Stable", "protocol_type": "consumer"}
        assert value(first, "groupcoord_group_state", **stable) == 1
        # committed offsets and lag, exactly what was produced and committed
        p0 = {"group": GROUP, "topic": TOPIC, "partition": "0"}
        p1 = {"group": GROUP, "topic": TOPIC, "partition": "1"}
        assert value(first, "groupcoord_group_committed_offset", **p0) == 2
        assert value(first, "groupcoord_group_committed_offset", **p1) == 3
        assert value(first, "groupcoord_group_offset_lag", **p0) == 3
        assert value(first, "groupcoord_group_offset_lag", **p1) == 0
        assert value(first, "groupcoord_group_time_lag_seconds", **p1) == 0
        time_lag = value(first, "groupcoord_group_time_lag_seconds", **p0)
        assert time_lag is not None
        assert (now_before - HOUR_AGO_MS) / 1000 <= time_lag <= (now_after - HOUR_AGO_MS) / 1000
        k0 = {"consumergroup": GROUP, "topic": TOPIC, "partition": "0"}
        assert value(first, "kafka_consumergroup_current_offset", **k0) == 2
        assert value(first, "kafka_consumergroup_lag", **k0) == 3
        assert value(first, "kafka_consumergroup_lag_sum", consumergroup=GROUP, topic=TOPIC) == 3
        assert value(first, "kafka_consumergroup_current_offset_sum", consumergroup=GROUP, topic=TOPIC) == 5
        # one OffsetCommit (auto-commit is off), and the joins and syncs of one rebalance
        assert delta(first, before, "groupcoord_request_duration_seconds_count", request="OffsetCommit") == 1
        assert delta(first, before, "groupcoord_request_duration_seconds_count", request="JoinGroup") >= 1
        assert delta(first, before, "groupcoord_request_duration_seconds_count", request="SyncGroup") >= 1
        assert value(first, "groupcoord_connections") >= 1
        assert delta(first, before, "groupcoord_received_bytes_total") > 0
        assert delta(first, before, "groupcoord_sent_bytes_total") > 0

        # B joins: a second rebalance for a new member. While only B is polled, A (eager
        # protocol) does not rejoin - librdkafka rejoins once the application's poll has
        # revoked its partitions - so the scrape sees the group stopped in PreparingRebalance.
        b.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while (d := broker.describe_group(GROUP)).state != "PreparingRebalance" or len(d.members) != 2:
            assert time.monotonic() < deadline, f"B's join did not start a rebalance: {d}"
            b.poll(0.05)
        during = scrape(broker)
        assert value(during, "groupcoord_groups", state="PreparingRebalance") == 1
        assert value(during, "groupcoord_groups", state="Stable") == 0
        preparing = {"group": GROUP, "state": "PreparingRebalance", "protocol_type": "consumer"}
        assert value(during, "groupcoord_group_state", **preparing) == 1
        assert value(during, "groupcoord_group_members", group=GROUP) == 2
        assert value(during, "groupcoord_group_rebalances_total", group=GROUP, cause="new_member_joined") == 2
        assert delta(during, before, "groupcoord_rebalance_duration_seconds_count") == 1
        # then both settle, and B leaves: a rebalance for a member leaving
        generation = poll_until(broker, [a, b], members=2, generation_at_least=generation + 1)
        b.close()
        generation = poll_until(broker, [a], members=1, generation_at_least=generation + 1)
        second = scrape(broker)
        assert value(second, "groupcoord_group_rebalances_total", group=GROUP, cause="new_member_joined") == 2
        assert value(second, "groupcoord_group_rebalances_total", group=GROUP, cause="member_left") == 1
        assert delta(second, before, "groupcoord_rebalance_duration_seconds_count") == 3
        assert value(second, "groupcoord_group_members", group=GROUP) == 1
        assert value(second, "groupcoord_group_generation", group=GROUP) == generation

        # A's session runs out (time moved past it): the group empties, then A joins anew
        broker.advance(SESSION_MS / 1000 + 1)
        poll_until(broker, [a], members=1, generation_at_least=generation + 1)
        produce(broker, 1, 2, HOUR_AGO_MS + 1000)
        third = scrape(broker)
        causes = {
            dict(labels)["cause"]: v
            for (name, labels), v in third.items()
            if name == "groupcoord_group_rebalances_total" and dict(labels)["group"] == GROUP
        }
        assert causes == {"new_member_joined": 3, "member_left": 1, "session_timeout": 1}
        # the rebalance that ended with the group Empty is not timed
        assert delta(third, before, "groupcoord_rebalance_duration_seconds_count") == 4
        assert value(third, "groupcoord_groups", state="Stable") == 1
        # new records behind the commit: p1's lag and time lag follow them
        assert value(third, "groupcoord_group_offset_lag", **p1) == 2
        assert value(third, "groupcoord_partition_log_end_offset", topic=TOPIC, partition="1") == 5
        lag1 = value(third, "groupcoord_group_time_lag_seconds", **p1)
        assert lag1 is not None and lag1 >= 3600 - 1
        assert delta(third, before, "groupcoord_request_duration_seconds_count", request="JoinGroup") >= 4
        assert delta(third, before, "groupcoord_request_duration_seconds_count", request="SyncGroup") >= 4
        assert delta(third, before, "groupcoord_request_duration_seconds_count", request="LeaveGroup") == 1
        assert delta(third, before, "groupcoord_request_duration_seconds_count", request="OffsetCommit") == 1
        # a histogram's +Inf bucket is its count
        count = value(third, "groupcoord_request_duration_seconds_count", request="JoinGroup")
        inf = value(third, "groupcoord_request_duration_seconds_bucket", request="JoinGroup", le="+Inf")
        assert inf == count
    finally:
        a.close()


def test_a_stalled_event_loop_does_not_hang_a_scrape(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    """The scrape waits for the loop's snapshot only so long, then answers with what needs no
    snapshot (the histograms, the process metrics) and logs one warning."""
    metrics = broker._app.metrics
    metrics.snapshot_timeout_s = 0.2
    held, release = threading.Event(), threading.Event()

    def hold_the_loop() -> None:
        held.set()
        release.wait(30)

    assert broker._loop is not None
    broker._loop.call_soon_threadsafe(hold_the_loop)
    try:
        assert held.wait(30)
        with caplog.at_level(logging.WARNING, logger="groupcoord.metrics.endpoint"):
            stalled = scrape(broker)
        assert value(stalled, "groupcoord_groups", state="Stable") is None
        assert value(stalled, "groupcoord_request_duration_seconds_count", request="Heartbeat") is not None
        assert value(stalled, "process_cpu_seconds_total") is not None
        # only the endpoint's records: the broker's own (e.g. its loader's) may land meanwhile
        assert [r.getMessage() for r in caplog.records if r.name == "groupcoord.metrics.endpoint"] == [
            "metrics scrape: the event loop gave no snapshot within 0.2 s"
        ]
    finally:
        release.set()
        metrics.snapshot_timeout_s = 5.0
    assert value(scrape(broker), "groupcoord_groups", state="Dead") == 0


def test_bytes_and_connections_count_exactly_what_crossed_the_socket() -> None:
    """One raw connection sends one ApiVersions v0 request and reads its answer: the byte
    counters grow by exactly the two frames, the connection counters by one."""
    with Broker({"metrics.listen": "127.0.0.1:0"}) as fresh:
        before = scrape(fresh)
        client_id = b"metrics-test"
        body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
        request = struct.pack(">i", len(body)) + body
        with socket.create_connection(("127.0.0.1", fresh.port), timeout=30) as sock:
            sock.sendall(request)
            (size,) = struct.unpack(">i", _read_exactly(sock, 4))
            answer = _read_exactly(sock, size)
            assert struct.unpack(">ih", answer[:6]) == (7, 0)  # correlation id, no error
            during = scrape(fresh)
        assert delta(during, before, "groupcoord_received_bytes_total") == len(request)
        assert delta(during, before, "groupcoord_sent_bytes_total") == 4 + size
        assert delta(during, before, "groupcoord_connections_accepted_total") == 1
        assert value(during, "groupcoord_connections") == 1
        assert delta(during, before, "groupcoord_request_duration_seconds_count", request="ApiVersions") == 1


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "connection closed early"
        data += chunk
    return data
