"""Our ``Consumer`` with ``group.protocol=consumer`` (KIP-848) in one group with confluent-kafka
(librdkafka) ``group.protocol=consumer`` members, against the in-process broker of
``groupcoord.testing`` over 127.0.0.1.

Two orders of joining (ours first, then librdkafka; librdkafka first, then ours) and ours closing
(its partitions move to the librdkafka member). Every member commits synchronously after each
batch it consumed; at the end every produced record was consumed exactly once across the group.
Ownership is checked after every round: no partition is in two members' assignments (the
coordinator gives a partition to a member only once its previous owner acknowledged revoking it:
Kafka ``GroupMetadataManagerTest#testReconciliationProcess``; a member drops a partition before
it acknowledges: ``ConsumerMembershipManagerTest#testReconcilePartitionsRevokedNoAutoCommitNoCallbacks``).
The broker hands out a 500 ms heartbeat interval so reconciliation steps are quick; every wait is
a bounded wait on an observable outcome while the members are polled.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as RdConsumer

from groupcoord.client import Consumer as OurConsumer
from groupcoord.testing import Broker

pytestmark = pytest.mark.e2e

TOPIC = "t848mix"
PARTITIONS = 6
SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
}
OURS_WORKER = Path(__file__).with_name("cg848_ours_worker.py")


def _member_config(bootstrap: str, group: str, name: str) -> dict[str, object]:
    """The settings both kinds of member take: the consumer protocol, manual commits."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "client.id": name,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }


class Ours:
    """Our consumer-protocol Consumer; commits synchronously after each non-empty batch."""

    kind = "ours"

    def __init__(self, bootstrap: str, group: str, name: str) -> None:
        self.name = name
        self.consumer = OurConsumer(_member_config(bootstrap, group, name))
        self.consumer.subscribe([TOPIC])
        self.consumed: list[bytes] = []
        self.closed = False

    def poll(self) -> None:
        if self.closed:
            return
        records = self.consumer.poll(0.05)
        if records:
            self.consumed += [r.value or b"" for r in records]
            self.consumer.commit(asynchronous=False)

    @property
    def owned(self) -> frozenset[int]:
        if self.closed:
            return frozenset()
        return frozenset(tp.partition for tp in self.consumer.assignment())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close(10)


class Rd:
    """A confluent-kafka consumer-protocol member; commits synchronously after each batch."""

    kind = "librdkafka"

    def __init__(self, bootstrap: str, group: str, name: str) -> None:
        self.name = name
        self.consumer = RdConsumer(_member_config(bootstrap, group, name))
        self.consumer.subscribe([TOPIC])
        self.consumed: list[bytes] = []
        self.closed = False

    def poll(self) -> None:
        if self.closed:
            return
        batch = [m for m in self.consumer.consume(num_messages=50, timeout=0.05) if m.error() is None]
        if batch:
            self.consumed += [m.value() or b"" for m in batch]
            self.consumer.commit(asynchronous=False)

    @property
    def owned(self) -> frozenset[int]:
        if self.closed:
            return frozenset()
        return frozenset(tp.partition for tp in self.consumer.assignment())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


Member = Ours | Rd


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(SETTINGS) as b:
        b.create_topic(TOPIC, PARTITIONS)
        yield b


@pytest.fixture
def members() -> Iterator[list[Member]]:
    made: list[Member] = []
    yield made
    for m in made:
        m.close()


def pump(members: list[Member], until: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Poll every open member until ``until()`` holds (bounded); no partition owned twice."""
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            owned = {m.name: sorted(m.owned) for m in members}
            raise AssertionError(f"timed out waiting for {what}; assignments {owned}")
        for m in members:
            m.poll()
        seen: dict[int, str] = {}
        for m in members:
            for p in m.owned:
                assert p not in seen, f"partition {p} owned by {seen[p]} and {m.name}"
                seen[p] = m.name


def produce(broker: Broker, prefix: str, n: int) -> set[bytes]:
    made: set[bytes] = set()
    for p in range(PARTITIONS):
        values = [f"{prefix}-{p}-{i}" for i in range(n)]
        broker.produce(TOPIC, values, partition=p)
        made |= {v.encode() for v in values}
    return made


def consumed_all(members: list[Member], expected: set[bytes]) -> Callable[[], bool]:
    return lambda: {v for m in members for v in m.consumed} >= expected


def exactly_once(members: list[Member], expected: set[bytes]) -> None:
    every = [v for m in members for v in m.consumed]
    dupes = sorted({v for v in every if every.count(v) > 1})
    assert not dupes, f"consumed twice: {dupes[:10]}"
    assert set(every) == expected


def owns(member: Member, n: int) -> Callable[[], bool]:
    return lambda: len(member.owned) == n


def split_3_3(a: Member, b: Member) -> Callable[[], bool]:
    return lambda: (
        len(a.owned) == 3 and len(b.owned) == 3 and a.owned | b.owned == frozenset(range(PARTITIONS))
    )


@pytest.mark.parametrize("ours_first", [True, False], ids=["ours-first", "librdkafka-first"])
def test_ours_and_librdkafka_share_a_consumer_group_then_ours_closes(
    broker: Broker, members: list[Member], ours_first: bool
) -> None:
    """The first member alone owns all six partitions and consumes the first records; the second
    joins and the group settles at 3 + 3 (the uniform assignor) with no partition ever owned
    twice; both consume the next records; ours closes (a leave heartbeat, epoch -1: Kafka
    ``GroupMetadataManagerTest#testLeavingMemberBumpsGroupEpoch``) and the librdkafka member
    ends owning all six and consumes the last records. Every record is consumed exactly once,
    each member committing after each batch."""
    group = f"mix-{'ours' if ours_first else 'rd'}-first"

    def make(kind: str) -> Member:
        # librdkafka joins from its own thread once subscribed: each member is made when it joins
        return Ours(broker.bootstrap, group, "ours") if kind == "ours" else Rd(broker.bootstrap, group, "rd")

    expected = produce(broker, "a", 20)
    first = make("ours" if ours_first else "rd")
    members.append(first)
    pump(members, owns(first, PARTITIONS), "the first member owning every partition")
    pump(members, consumed_all(members, expected), "the first records")
    assert set(first.consumed) == expected

    second = make("rd" if ours_first else "ours")
    members.append(second)
    pump(members, split_3_3(first, second), "a 3 + 3 split")
    expected |= produce(broker, "b", 20)
    pump(members, consumed_all(members, expected), "the second records")
    assert split_3_3(first, second)()
    ours, rd = (first, second) if ours_first else (second, first)
    assert isinstance(ours, Ours) and isinstance(rd, Rd)

    ours.close()
    pump(members, owns(rd, PARTITIONS), "the librdkafka member owning every partition")
    assert rd.owned == frozenset(range(PARTITIONS))
    expected |= produce(broker, "c", 20)
    pump(members, consumed_all(members, expected), "the last records")
    exactly_once(members, expected)
    assert {v for v in rd.consumed if v.startswith(b"c-")} == {v for v in expected if v.startswith(b"c-")}


def test_ours_sigkilled_its_partitions_go_to_librdkafka_after_the_session_timeout(
    broker: Broker, members: list[Member]
) -> None:
    """Our consumer-protocol member in its own process, killed with SIGKILL, sends no leave; once
    the broker's clock passes group.consumer.session.timeout.ms (45 s) it is removed with reason
    ``session_timeout`` and the librdkafka member ends owning all six partitions (Kafka
    ``GroupMetadataManagerTest#testSessionTimeoutLifecycle``)."""
    group = "mix-ours-killed"
    proc = subprocess.Popen(
        [sys.executable, str(OURS_WORKER), broker.bootstrap, group, TOPIC],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ},
    )
    lines: list[dict[str, Any]] = []
    reader = threading.Thread(
        target=lambda: [lines.append(json.loads(x)) for x in proc.stdout or ()], daemon=True
    )
    reader.start()
    try:
        pump(
            members, lambda: bool(lines) and len(lines[-1]["assignment"]) == PARTITIONS, "ours owning all six"
        )
        rd = Rd(broker.bootstrap, group, "rd")
        members.append(rd)
        pump(
            members,
            lambda: len(rd.owned) == 3 and len(lines[-1]["assignment"]) == 3,
            "a 3 + 3 split with our worker",
        )
        assert set(lines[-1]["assignment"]).isdisjoint(rd.owned)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    broker.advance(46)
    pump(members, lambda: rd.owned == frozenset(range(PARTITIONS)), "the librdkafka member owning all six")
    events = broker.events(group)
    ours_ids = {e.member_id for e in events if e.type == "member_added" and e.client_id == "ours-worker"}
    assert len(ours_ids) == 1
    removed = [e for e in events if e.type == "member_removed" and e.member_id in ours_ids]
    assert [e.reason.value for e in removed] == ["session_timeout"]
    assert rd.owned == frozenset(range(PARTITIONS))
