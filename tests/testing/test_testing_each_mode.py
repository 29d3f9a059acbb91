"""Every Broker feature works alike in-process and with ``Broker(subprocess=True)``.

One broker per mode for the module (each test uses names of its own); the subprocess broker
is reached through its control channel (``groupcoord.testing.control``) for time control and
faults, and through the Kafka wire for observation.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_testing import confluent_config
from prometheus_client.parser import text_string_to_metric_families

from groupcoord.storage.recovery import CLEAN_SHUTDOWN_FILE
from groupcoord.testing import Broker, EventReason, TopicPartition

_names = itertools.count(1)


@pytest.fixture(scope="module", params=["in_process", "subprocess"])
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    # metrics.listen: the endpoint's address reaches the parent in each mode (metrics_url)
    with Broker({"metrics.listen": "127.0.0.1:0"}, subprocess=request.param == "subprocess") as b:
        yield b
        b.clear_faults()


@pytest.fixture
def names() -> Callable[[str], str]:
    n = next(_names)
    return lambda base: f"{base}-{n}"


def wait_until(pred: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Polled:
    """A confluent-kafka consumer polled on its own thread (poll drives its group protocol)."""

    def __init__(self, config: dict[str, object], topic: str) -> None:
        self.consumer = Consumer(config)
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.05)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(30)
        self.consumer.close()


def test_advance_expires_a_45s_session_in_each_mode(broker: Broker, names: Callable[[str], str]) -> None:
    """advance(46) fires the session timer of a confluent-kafka member with a 45 s session
    (Kafka: GroupCoordinator ``onExpireHeartbeat``); the group moves to the next generation."""
    topic, group = names("orders"), names("app")
    broker.create_topic(topic, 1)
    # Heartbeats every 200 ms: the client learns of its expiry soon after (its own clock).
    member = Polled(
        confluent_config(broker, group, "c1", **{"session.timeout.ms": 45_000, "heartbeat.interval.ms": 200}),
        topic,
    )
    try:
        before = broker.wait_for_group(group, members=1)
        assert before.generation is not None
        broker.advance(46)
        wait_until(
            lambda: any(e.reason == EventReason.SESSION_TIMEOUT for e in broker.events(group)),
            "the session_timeout event",
        )
        after = broker.wait_for_group(group, members=1, generation_at_least=before.generation + 1)
        assert after.member("c1").member_id != before.member("c1").member_id
    finally:
        member.close()


def test_metrics_url_names_the_bound_metrics_endpoint_in_each_mode(
    broker: Broker, names: Callable[[str], str]
) -> None:
    """``metrics.listen=127.0.0.1:0``: ``metrics_url`` names the port the endpoint bound (in a
    subprocess, passed back on the child's stdout), and a scrape there shows a commit exactly."""
    topic, group = names("orders"), names("app")
    url = broker.metrics_url
    assert url is not None
    match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/metrics", url)
    assert match is not None and int(match.group(1)) not in (0, broker.port)
    broker.create_topic(topic, 1)
    broker.produce(topic, [b"a", b"b", b"c"])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[CTopicPartition(topic, 0, 2)], asynchronous=False)
    finally:
        consumer.close()
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode("utf-8")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    labels = (("group", group), ("partition", "0"), ("topic", topic))
    assert samples[("groupcoord_group_committed_offset", labels)] == 2
    assert samples[("groupcoord_group_offset_lag", labels)] == 1


def test_fail_next_reaches_a_confluent_commit_and_a_confluent_producer_in_each_mode(
    broker: Broker, names: Callable[[str], str]
) -> None:
    """OffsetCommit answered REBALANCE_IN_PROGRESS raises from a synchronous commit and commits
    nothing; Produce answered NOT_LEADER_OR_FOLLOWER is retried and delivered once."""
    topic, group = names("orders"), names("app")
    broker.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "p", "retry.backoff.ms": 20})
    broker.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", client_id="p")
    offsets: list[int] = []
    producer.produce(topic, b"a", partition=0, on_delivery=lambda err, msg: offsets.append(msg.offset()))
    assert producer.flush(30) == 0
    assert offsets == [0]
    assert broker.faults.pending_failures() == 0
    assert [r.value for r in broker.records(topic)] == [b"a"]

    consumer = Consumer(confluent_config(broker, group, "c1"))
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        msg = None
        while msg is None or msg.error() is not None:
            assert time.monotonic() < deadline
            msg = consumer.poll(0.1)
        broker.fail_next("OffsetCommit", "REBALANCE_IN_PROGRESS", group=group)
        with pytest.raises(KafkaException) as raised:
            consumer.commit(asynchronous=False)
        assert raised.value.args[0].code() == KafkaError.REBALANCE_IN_PROGRESS
        assert broker.committed(group) == {}
        consumer.commit(asynchronous=False)
        assert broker.committed(group) == {TopicPartition(topic, 0): 1}
    finally:
        consumer.close()


def test_delay_and_disconnect_in_each_mode(broker: Broker, names: Callable[[str], str]) -> None:
    """delay holds a confluent commit's answer (a lower bound on the wait; the commit applies);
    disconnect severs the client's connections now (it reconnects and commits again), or the
    connection of its next request of one API, unhandled (an idempotent producer resends it)."""
    topic, group = names("orders"), names("app")
    broker.create_topic(topic, 1)
    consumer = Consumer(confluent_config(broker, group, "slow"))
    try:
        broker.delay("OffsetCommit", 0.5, count=1, client_id="slow")
        started = time.monotonic()
        consumer.commit(offsets=[CTopicPartition(topic, 0, 1)], asynchronous=False)
        assert time.monotonic() - started >= 0.5
        assert broker.committed(group) == {TopicPartition(topic, 0): 1}
        assert broker.disconnect("slow") >= 1
        consumer.commit(offsets=[CTopicPartition(topic, 0, 2)], asynchronous=False)
        assert broker.committed(group) == {TopicPartition(topic, 0): 2}
    finally:
        consumer.close()
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "idem",
            "enable.idempotence": True,
            "retry.backoff.ms": 20,
            "reconnect.backoff.ms": 20,
        }
    )
    broker.disconnect("idem", api="Produce")
    producer.produce(topic, b"x", partition=0)
    assert producer.flush(30) == 0
    assert broker.faults.pending_disconnections() == 0
    assert [r.value for r in broker.records(topic)] == [b"x"]


def test_drop_heartbeats_and_clear_faults_in_each_mode(broker: Broker, names: Callable[[str], str]) -> None:
    """The member whose heartbeats vanish is expired by the broker's own session timer and the
    other gets both partitions; after clear_faults it rejoins and the group splits again."""
    topic, group = names("orders"), names("app")
    broker.create_topic(topic, 2)
    fast = {"session.timeout.ms": 1_000, "heartbeat.interval.ms": 100}
    a = Polled(confluent_config(broker, group, "a", **fast), topic)
    b = Polled(confluent_config(broker, group, "b", **fast), topic)
    try:
        state = broker.wait_for_group(group, members=2)
        assert state.generation is not None
        broker.drop_heartbeats(group, "b")
        alone = broker.wait_for_group(group, members=1, generation_at_least=state.generation + 1)
        assert alone.member("a").assignment == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        broker.clear_faults()
        assert alone.generation is not None
        again = broker.wait_for_group(group, members=2, generation_at_least=alone.generation + 1)
        assert len(again.member("a").assignment) == len(again.member("b").assignment) == 1
    finally:
        a.close()
        b.close()


def test_the_control_entry_point_refuses_to_start_without_the_parents_token(tmp_path: object) -> None:
    """Only groupcoord.testing starts the child (it sets the token); run by hand it exits 2."""
    from groupcoord.testing.control import TOKEN_ENV

    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "groupcoord.testing", "--data-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert TOKEN_ENV in done.stderr
    assert done.stdout == ""


def test_the_child_broker_stops_when_the_test_process_dies_without_stopping_it(tmp_path: Path) -> None:
    """A test process killed mid-test (say by a timeout) leaves no broker running: the child
    sees its stdin pipe from the parent end and stops itself, cleanly."""
    script = (
        "import os, sys\n"
        "from groupcoord.testing import Broker\n"
        "b = Broker(subprocess=True, data_dir=sys.argv[1]).start()\n"
        "print(b.pid, flush=True)\n"
        "os._exit(0)  # no stop, no close: as if killed\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "data")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    child = int(done.stdout.strip())

    def ended() -> bool:
        try:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        return state in ("Z", "X")  # a zombie no one reaped has still ended

    try:
        wait_until(ended, "the orphaned broker process to stop", timeout=60)
    finally:
        if not ended():
            os.kill(child, signal.SIGKILL)
    # and it stopped cleanly (its partitions closed with the clean-shutdown marker)
    assert (tmp_path / "data" / "__consumer_offsets-0" / CLEAN_SHUTDOWN_FILE).exists()
