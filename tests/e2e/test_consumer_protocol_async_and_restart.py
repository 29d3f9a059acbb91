"""Our consumer-protocol (KIP-848) members end to end, beyond the synchronous ``Consumer`` with
librdkafka (``test_consumer_protocol_ours_with_librdkafka.py``):

* our ``AsyncConsumer`` with ``group.protocol=consumer`` in one group with a confluent-kafka
  (librdkafka) ``group.protocol=consumer`` member: 3 + 3, then ours closes and librdkafka takes
  all six; every record consumed exactly once, each member committing after each batch;
* a broker restart (``testing.Broker`` in a child process, stopped and started on the same port
  and data) under two of our consumer-protocol ``Consumer`` s: they find the coordinator again,
  go on with the same member ids and epochs (no member added or removed, no epoch bump: the
  reloaded group knows them), keep exactly their partitions, and the committed offsets written
  before the restart are the ones read after it;
* the offline upgrade: a group whose classic members all left is taken over by consumer-protocol
  members (ours and librdkafka's) at its committed offsets.

Every wait is a bounded wait on an observable outcome while the members are polled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer as RdConsumer

from groupcoord.client import AsyncConsumer
from groupcoord.client import Consumer as OurConsumer
from groupcoord.client.types import TopicPartition
from groupcoord.testing import Broker

pytestmark = pytest.mark.e2e

TOPIC = "t848more"
PARTITIONS = 6
SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
}
ALL = frozenset(range(PARTITIONS))


def _config(bootstrap: str, group: str, name: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "client.id": name,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }


def _produce(broker: Broker, prefix: str, n: int) -> set[bytes]:
    made: set[bytes] = set()
    for p in range(PARTITIONS):
        values = [f"{prefix}-{p}-{i}" for i in range(n)]
        broker.produce(TOPIC, values, partition=p)
        made |= {v.encode() for v in values}
    return made


def _exactly_once(consumed: list[bytes], expected: set[bytes]) -> None:
    dupes = sorted({v for v in consumed if consumed.count(v) > 1})
    assert not dupes, f"consumed twice: {dupes[:10]}"
    assert set(consumed) == expected


# --------------------------------------------------------------------------- AsyncConsumer + librdkafka
def test_our_async_consumer_and_librdkafka_share_a_consumer_group_then_ours_closes() -> None:
    """AsyncConsumer alone owns all six and consumes the first records; the librdkafka member
    joins and the group settles at 3 + 3 (uniform assignor) with no partition ever owned twice
    (the coordinator assigns a partition only once its owner acknowledged revoking it: Kafka
    ``GroupMetadataManagerTest#testReconciliationProcess``); ours closes (leave heartbeat, epoch
    -1: ``GroupMetadataManagerTest#testLeavingMemberBumpsGroupEpoch``) and librdkafka ends with
    all six. Every record is consumed exactly once, each member committing after each batch."""
    with Broker(SETTINGS) as broker:
        broker.create_topic(TOPIC, PARTITIONS)
        asyncio.run(_async_scenario(broker))


async def _async_scenario(broker: Broker) -> None:
    group = "mix-async"
    ours = AsyncConsumer(_config(broker.bootstrap, group, "ours-async"))
    ours.subscribe([TOPIC])
    ours_consumed: list[bytes] = []
    rd: RdConsumer | None = None
    rd_consumed: list[bytes] = []
    ours_open = True

    def owned_ours() -> frozenset[int]:
        return frozenset(tp.partition for tp in ours.assignment()) if ours_open else frozenset()

    def owned_rd() -> frozenset[int]:
        return frozenset(tp.partition for tp in rd.assignment()) if rd is not None else frozenset()

    async def pump(until: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}: ours {owned_ours()}, rd {owned_rd()}")
            if ours_open:
                records = await ours.poll(0.05)
                if records:
                    ours_consumed.extend(r.value or b"" for r in records)
                    await ours.commit(asynchronous=False)
            if rd is not None:
                batch = [m for m in rd.consume(num_messages=50, timeout=0.05) if m.error() is None]
                if batch:
                    rd_consumed.extend(m.value() or b"" for m in batch)
                    rd.commit(asynchronous=False)
            assert not owned_ours() & owned_rd(), f"owned twice: ours {owned_ours()}, rd {owned_rd()}"

    def everything(expected: set[bytes]) -> Callable[[], bool]:
        return lambda: set(ours_consumed) | set(rd_consumed) >= expected

    try:
        expected = _produce(broker, "a", 20)
        await pump(lambda: owned_ours() == ALL, "ours owning every partition")
        await pump(everything(expected), "the first records")
        assert set(ours_consumed) == expected

        rd = RdConsumer(_config(broker.bootstrap, group, "rd"))
        rd.subscribe([TOPIC])
        await pump(
            lambda: len(owned_ours()) == 3 and len(owned_rd()) == 3 and owned_ours() | owned_rd() == ALL,
            "a 3 + 3 split",
        )
        expected |= _produce(broker, "b", 20)
        await pump(everything(expected), "the second records")

        await ours.close(10)
        ours_open = False
        await pump(lambda: owned_rd() == ALL, "librdkafka owning every partition")
        expected |= _produce(broker, "c", 20)
        await pump(everything(expected), "the last records")
        _exactly_once(ours_consumed + rd_consumed, expected)
        assert {v for v in rd_consumed if v.startswith(b"c-")} == {v for v in expected if v.startswith(b"c-")}
        committed = broker.committed(group)
        assert committed == {TopicPartition(TOPIC, p): 60 for p in range(PARTITIONS)}
    finally:
        if ours_open:
            await ours.close(10)
        if rd is not None:
            rd.close()


# --------------------------------------------------------------------------- broker restart
class _Ours:
    def __init__(self, bootstrap: str, group: str, name: str) -> None:
        self.name = name
        self.consumer = OurConsumer(_config(bootstrap, group, name))
        self.consumer.subscribe([TOPIC])
        self.consumed: list[bytes] = []

    def poll(self) -> None:
        records = self.consumer.poll(0.05)
        if records:
            self.consumed += [r.value or b"" for r in records]
            self.consumer.commit(asynchronous=False)

    @property
    def owned(self) -> frozenset[int]:
        return frozenset(tp.partition for tp in self.consumer.assignment())


@pytest.fixture
def restartable() -> Iterator[Broker]:
    with Broker(SETTINGS, subprocess=True) as b:
        b.create_topic(TOPIC, PARTITIONS)
        yield b


def _pump(members: list[_Ours], until: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out waiting for {what}: {[(m.name, sorted(m.owned)) for m in members]}"
            )
        for m in members:
            m.poll()
        seen: dict[int, str] = {}
        for m in members:
            for p in m.owned:
                assert p not in seen, f"partition {p} owned by {seen[p]} and {m.name}"
                seen[p] = m.name


def test_a_broker_restart_keeps_our_consumer_protocol_members_their_partitions_and_offsets(
    restartable: Broker,
) -> None:
    """The broker stops (clean shutdown) and starts again on the same port and data while two of
    our consumer-protocol members run. Meanwhile their requests fail: they mark the coordinator
    unknown, look it up again after backoff and heartbeat with their member id and epoch
    (Kafka ``ConsumerHeartbeatRequestManagerTest#testHeartbeatResponseOnErrorHandling``:
    coordinator errors rediscover, a transport failure backs off). The restarted broker loads the
    group from ``__consumer_offsets`` (Kafka ``GroupMetadataManagerTest#testOnLoaded``: members,
    epochs and assignments replayed, sessions started anew), so it answers them as before: no
    member is added or removed, the group epoch does not move, each keeps exactly its partitions,
    and the offsets committed before the restart are the ones read after it. Records produced
    after the restart are consumed once, from those offsets."""
    broker = restartable
    group = "ours-restart"
    a = _Ours(broker.bootstrap, group, "ours-a")
    members = [a]
    try:
        expected = _produce(broker, "a", 20)
        _pump(members, lambda: a.owned == ALL, "a owning every partition")
        b = _Ours(broker.bootstrap, group, "ours-b")
        members.append(b)
        _pump(
            members,
            lambda: len(a.owned) == 3 and len(b.owned) == 3 and a.owned | b.owned == ALL,
            "a 3 + 3 split",
        )
        _pump(members, lambda: set(a.consumed) | set(b.consumed) >= expected, "the first records")
        before = {m.name: m.owned for m in members}
        committed = broker.committed(group)
        assert committed == {TopicPartition(TOPIC, p): 20 for p in range(PARTITIONS)}
        events_before = broker.events(group)
        joined_before = [e.member_id for e in events_before if e.type == "member_added"]
        bumps_before = [e for e in events_before if e.type == "epoch_bump"]

        broker.restart()

        expected |= _produce(broker, "b", 20)
        _pump(members, lambda: set(a.consumed) | set(b.consumed) >= expected, "the records after the restart")
        assert {m.name: m.owned for m in members} == before
        _exactly_once(a.consumed + b.consumed, expected)
        # each member went on consuming its own partitions from the offsets committed before
        for m in members:
            assert {int(v.split(b"-")[1]) for v in m.consumed if v.startswith(b"b-")} == before[m.name]
        assert broker.committed(group) == {TopicPartition(TOPIC, p): 40 for p in range(PARTITIONS)}
        events = broker.events(group)
        assert [e.member_id for e in events if e.type == "member_added"] == joined_before
        assert not [e for e in events if e.type == "member_removed"]
        assert [e for e in events if e.type == "epoch_bump"] == bumps_before
        assert restartable.starts == 2
    finally:
        for m in members:
            m.consumer.close(10)


# --------------------------------------------------------------------------- upgraded from classic
@pytest.fixture
def inproc() -> Iterator[Broker]:
    with Broker(SETTINGS) as b:
        b.create_topic(TOPIC, PARTITIONS)
        yield b


def test_a_group_emptied_of_classic_members_is_taken_over_by_consumer_protocol_members_at_its_offsets(
    inproc: Broker,
) -> None:
    """The offline upgrade: two of our classic members consume and commit, then close (the group is
    empty); our consumer-protocol member and a librdkafka one join the same group id. The first
    ConsumerGroupHeartbeat converts the empty classic group into a consumer group and its committed
    offsets stay with the id (Kafka ``GroupMetadataManager.maybeDeleteEmptyClassicGroup``:
    "Converted the empty classic group to a consumer group"), so the new members start where the
    classic ones stopped: no record is read twice across the upgrade and the last commits are
    exact. (An online upgrade, classic members still inside, is the broker's migration work.)"""
    broker = inproc
    group = "upgraded-from-classic"

    def classic(name: str) -> OurConsumer:
        c = OurConsumer({**_config(broker.bootstrap, group, name), "group.protocol": "classic"})
        c.subscribe([TOPIC])
        return c

    old = [classic("classic-a"), classic("classic-b")]
    consumed: list[bytes] = []
    expected = _produce(broker, "a", 20)
    deadline = time.monotonic() + 90
    while set(consumed) < expected:
        assert time.monotonic() < deadline, (
            f"classic members consumed {len(set(consumed))} of {len(expected)}"
        )
        for c in old:
            records = c.poll(0.05)
            if records:
                consumed += [r.value or b"" for r in records]
                c.commit(asynchronous=False)
    for c in old:
        c.close(10)
    assert broker.committed(group) == {TopicPartition(TOPIC, p): 20 for p in range(PARTITIONS)}

    ours = OurConsumer(_config(broker.bootstrap, group, "ours-848"))
    ours.subscribe([TOPIC])
    rd = RdConsumer(_config(broker.bootstrap, group, "rd-848"))
    rd.subscribe([TOPIC])
    try:
        expected |= _produce(broker, "b", 20)
        deadline = time.monotonic() + 90
        while set(consumed) < expected or len(ours.assignment()) + len(rd.assignment()) != PARTITIONS:
            assert time.monotonic() < deadline, f"consumed {len(set(consumed))} of {len(expected)}"
            records = ours.poll(0.05)
            if records:
                consumed += [r.value or b"" for r in records]
                ours.commit(asynchronous=False)
            batch = [m for m in rd.consume(num_messages=50, timeout=0.05) if m.error() is None]
            if batch:
                consumed += [m.value() or b"" for m in batch]
                rd.commit(asynchronous=False)
            mine = {tp.partition for tp in ours.assignment()}
            assert not mine & {tp.partition for tp in rd.assignment()}
        _exactly_once(consumed, expected)
        assert broker.committed(group) == {TopicPartition(TOPIC, p): 40 for p in range(PARTITIONS)}
        events = broker.events(group)
        assert [e.type for e in events if e.type == "epoch_bump"], "the id is a consumer group now"
    finally:
        ours.close(10)
        rd.close()
