"""The consumer group protocol (KIP-848) end to end: confluent-kafka 2.16 with
``group.protocol=consumer`` against the in-process broker of ``groupcoord.testing``.

The broker hands members a 500 ms heartbeat interval (``group.consumer.heartbeat.interval.ms``,
its minimum lowered to allow it) so that reconciliation steps, which a member learns of on its
next heartbeat, take well under a second; the session timeout stays Kafka's 45 s, and session
expiry is driven by the broker's clock (``Broker.advance``), never by waiting. Every wait is a
bounded wait on an observable outcome while the consumers are polled.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.offset_commit.v9 import request as commit_v9

from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

pytestmark = pytest.mark.e2e

TOPIC = "t848"
PARTITIONS = 6
SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
}
WORKER = Path(__file__).with_name("cg848_worker.py")


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(SETTINGS) as b:
        b.create_topic(TOPIC, PARTITIONS)
        yield b


class Member:
    """One in-process consumer of the consumer protocol, with the history of its assignment."""

    def __init__(self, bootstrap: str, group: str, name: str, topic: str = TOPIC) -> None:
        self.name = name
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "client.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe([topic])
        self.history: list[frozenset[int]] = [frozenset()]
        self.consumed: dict[int, list[int]] = {}
        self.closed = False

    def poll(self) -> None:
        if self.closed:
            return
        msg = self.consumer.poll(0.05)
        if msg is not None and msg.error() is None:
            self.consumed.setdefault(msg.partition(), []).append(msg.offset())
        now = frozenset(tp.partition for tp in self.consumer.assignment())
        if now != self.history[-1]:
            self.history.append(now)

    @property
    def owned(self) -> frozenset[int]:
        return self.history[-1]

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


@pytest.fixture
def members() -> Iterator[list[Member]]:
    made: list[Member] = []
    yield made
    for m in made:
        m.close()


def pump(members: list[Member], until: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Poll every open member until ``until()`` holds (a bounded wait); after every round, no
    partition may be in two open members' assignments (a member is given a partition only once
    its previous owner has revoked it, and a client drops a partition before it says so)."""
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            owned = {m.name: sorted(m.owned) for m in members}
            raise AssertionError(f"timed out waiting for {what}; assignments {owned}")
        for m in members:
            m.poll()
        never_owned_twice([m for m in members if not m.closed])


def split(members: list[Member], sizes: list[int]) -> Callable[[], bool]:
    """Each member owns its share and together they own every partition once."""

    def ok() -> bool:
        owned = [m.owned for m in members]
        return sorted(len(o) for o in owned) == sorted(sizes) and frozenset().union(*owned) == frozenset(
            range(PARTITIONS)
        )

    return ok


def never_owned_twice(members: list[Member]) -> None:
    """No partition is in two members' current assignments."""
    finals = [m.owned for m in members]
    for i, a in enumerate(finals):
        for b in finals[i + 1 :]:
            assert not (a & b), f"partition owned twice: {sorted(a & b)}"


def produce_everywhere(broker: Broker, prefix: str, n: int) -> None:
    for p in range(PARTITIONS):
        broker.produce(TOPIC, [f"{prefix}-{p}-{i}" for i in range(n)], partition=p)


def describe_wire(broker: Broker, group: str) -> Any:
    """ConsumerGroupDescribe v1 over the wire (epochs: confluent-kafka does not expose them)."""
    host, port = broker.bootstrap.split(":")
    with WireClient(host, int(port)) as c:
        response = c.call_entity(
            _messages(69, 1),
            ConsumerGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False),
        )
    (described,) = response.groups
    return described


def _messages(key: int, version: int) -> Any:
    from groupcoord.protocol.registry import load_messages

    return load_messages(key, version)


def test_two_members_split_six_partitions_and_describe_shows_a_consumer_group(
    broker: Broker, members: list[Member]
) -> None:
    """Two members of the consumer protocol converge to 3 + 3, never owning a partition twice
    (a member gets a partition only once its previous owner revoked it); AdminClient's
    ``describe_consumer_groups`` (ConsumerGroupDescribe) reports type CONSUMER, state STABLE,
    the uniform assignor and each member's assignment; the wire answer carries the epochs.

    Mirrors Kafka 4.1 ``GroupMetadataManagerTest#testReconciliationProcess`` and
    ``ConsumerGroupDescribeRequestTest`` (core/src/test/scala/unit/kafka/server).
    """
    group = "cg-two"
    members += [Member(broker.bootstrap, group, "m1"), Member(broker.bootstrap, group, "m2")]
    pump(members, split(members, [3, 3]), "a 3 + 3 split")
    never_owned_twice(members)

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    pump(
        members,
        lambda: admin.describe_consumer_groups([group])[group].result(20).state == ConsumerGroupState.STABLE,
        "a Stable group",
    )
    desc = admin.describe_consumer_groups([group])[group].result(20)
    assert desc.type == ConsumerGroupType.CONSUMER
    assert desc.partition_assignor == "uniform"
    by_client = {m.client_id: m for m in desc.members}
    assert set(by_client) == {"m1", "m2"}
    for member in members:
        described = by_client[member.name]
        assert {tp.partition for tp in described.assignment.topic_partitions} == member.owned
        assert {tp.topic for tp in described.assignment.topic_partitions} == {TOPIC}
        assert described.target_assignment is not None
        assert {tp.partition for tp in described.target_assignment.topic_partitions} == member.owned

    wire = describe_wire(broker, group)
    assert int(wire.error_code) == 0
    assert wire.group_state == "Stable"
    assert int(wire.group_epoch) == 2 and int(wire.assignment_epoch) == 2
    assert sorted(int(m.member_epoch) for m in wire.members) == [2, 2]
    assert {int(m.member_type) for m in wire.members} == {1}


def test_a_third_member_joins_without_stopping_the_others(broker: Broker, members: list[Member]) -> None:
    """A third member joins a 3 + 3 group: the two keep consuming throughout; their
    assignments only ever shrink (each revokes one partition) and never drop to empty, which
    the classic eager protocol would do; the end is 2 + 2 + 2.

    Mirrors Kafka 4.1 ``GroupMetadataManagerTest#testReconciliationProcess`` (members keep the
    partitions they are not asked to revoke) and KIP-848's incremental reconciliation.
    """
    group = "cg-three"
    first = [Member(broker.bootstrap, group, "m1"), Member(broker.bootstrap, group, "m2")]
    members += first
    pump(members, split(members, [3, 3]), "a 3 + 3 split")
    for m in first:
        m.history = [m.owned]
    produce_everywhere(broker, "before", 10)
    members.append(Member(broker.bootstrap, group, "m3"))
    pump(members, split(members, [2, 2, 2]), "a 2 + 2 + 2 split")
    never_owned_twice(members)
    for m in first:
        for earlier, later in zip(m.history, m.history[1:], strict=False):
            assert later <= earlier, f"{m.name} gained {sorted(later - earlier)} while a member joined"
            assert later, f"{m.name} was left with nothing (stop-the-world)"
    # They kept consuming: every record of the partitions each still owns is read.
    produce_everywhere(broker, "after", 10)
    pump(
        members,
        lambda: all(sum(len(m.consumed.get(p, [])) for m in members) >= 20 for p in range(PARTITIONS)),
        "every partition's 20 records consumed",
    )
    for m in first:
        assert any(m.consumed.get(p) for p in m.owned)


def test_a_member_that_closes_hands_its_partitions_over(broker: Broker, members: list[Member]) -> None:
    """``close()`` sends the leave heartbeat (member epoch -1): its partitions move to the
    other member at once, without waiting for a session timeout (no clock is advanced).

    Mirrors Kafka 4.1 ``GroupMetadataManagerTest#testLeavingMemberBumpsGroupEpoch``.
    """
    group = "cg-close"
    members += [Member(broker.bootstrap, group, "m1"), Member(broker.bootstrap, group, "m2")]
    pump(members, split(members, [3, 3]), "a 3 + 3 split")
    leaving = members[1].consumer.memberid()
    members[1].close()
    pump(members, lambda: members[0].owned == frozenset(range(PARTITIONS)), "m1 owning all six")
    left = [e for e in broker.events(group) if e.type == "member_removed"]
    assert [(e.member_id, e.reason.value) for e in left] == [(leaving, "member_left")]
    assert [m.client_id for m in describe_wire(broker, group).members] == ["m1"]


def test_session_expiry_on_the_broker_clock_removes_a_crashed_member(
    broker: Broker, members: list[Member]
) -> None:
    """A member killed with SIGKILL sends no leave; once the broker's clock passes
    ``group.consumer.session.timeout.ms`` (45 s, Kafka's default) it is fenced
    (``member_removed``, reason ``session_timeout``) and its partitions go to the survivor.
    Advancing the clock expires every session at once, so the survivor is fenced too and
    rejoins (FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID -> epoch 0, as the client does); the
    crashed one never comes back.

    Mirrors Kafka 4.1 ``GroupMetadataManagerTest#testSessionTimeoutLifecycle``.
    """
    group = "cg-crash"
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), broker.bootstrap, group, TOPIC],
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
        survivor = Member(broker.bootstrap, group, "survivor")
        members.append(survivor)
        pump(
            members,
            lambda: len(survivor.owned) == 3 and bool(lines) and len(lines[-1]["assignment"]) == 3,
            "a 3 + 3 split with the worker",
        )
        crashed_id = lines[-1]["member_id"]
        assert set(lines[-1]["assignment"]).isdisjoint(survivor.owned)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    broker.advance(46)
    pump(members, lambda: survivor.owned == frozenset(range(PARTITIONS)), "the survivor owning all six")
    desc = describe_wire(broker, group)
    assert [m.client_id for m in desc.members] == ["survivor"]
    fenced = [e for e in broker.events(group) if e.type == "member_removed" and e.member_id == crashed_id]
    assert [e.reason.value for e in fenced] == ["session_timeout"]


def test_commits_carry_the_member_epoch(broker: Broker, members: list[Member]) -> None:
    """A member's commit (OffsetCommit v9 with its member epoch) is accepted and read back;
    a commit with a stale epoch gets STALE_MEMBER_EPOCH and one from an unknown member
    UNKNOWN_MEMBER_ID, as Kafka 4.1's ``ConsumerGroup.validateOffsetCommit`` answers.

    Mirrors Kafka 4.1 ``OffsetMetadataManagerTest#testConsumerGroupOffsetCommitWithStaleMemberEpoch``
    and ``#testConsumerGroupOffsetCommitWithUnknownMemberId``.
    """
    group = "cg-commit"
    m = Member(broker.bootstrap, group, "m1")
    members.append(m)
    pump(members, lambda: m.owned == frozenset(range(PARTITIONS)), "m1 owning all six")
    produce_everywhere(broker, "x", 2)
    m.consumer.commit(offsets=[TopicPartition(TOPIC, p, 1) for p in range(PARTITIONS)], asynchronous=False)
    got = m.consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=20)
    assert [tp.offset for tp in got] == [1] * PARTITIONS

    (wire_member,) = describe_wire(broker, group).members
    epoch = int(wire_member.member_epoch)

    def commit(member_id: str, member_epoch: int) -> int:
        host, port = broker.bootstrap.split(":")
        request = commit_v9.OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=member_epoch,
            member_id=member_id,
            group_instance_id=None,
            topics=(
                commit_v9.OffsetCommitRequestTopic(
                    name=TOPIC,
                    partitions=(
                        commit_v9.OffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=5,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        ),
                    ),
                ),
            ),
        )
        with WireClient(host, int(port)) as c:
            response = c.call_entity(_messages(8, 9), request)
        return int(response.topics[0].partitions[0].error_code)

    assert commit(wire_member.member_id, epoch - 1) == 113  # STALE_MEMBER_EPOCH
    assert commit(str(uuid.uuid4()), epoch) == 25  # UNKNOWN_MEMBER_ID
    assert commit(wire_member.member_id, epoch) == 0
    got = m.consumer.committed([TopicPartition(TOPIC, 0)], timeout=20)
    assert got[0].offset == 5


def test_a_restarted_broker_reloads_the_group_from_its_log(broker: Broker, members: list[Member]) -> None:
    """After a restart the group is rebuilt from its records in ``__consumer_offsets`` (types
    3-8): same group epoch, same members with the same epochs and assignments, its committed
    offsets; the members keep heartbeating into it without rejoining from scratch.

    Mirrors Kafka 4.1 ``GroupMetadataManagerTest#testOnLoaded`` and the replay tests of
    ``GroupCoordinatorShardTest``.
    """
    group = "cg-restart"
    members += [Member(broker.bootstrap, group, "m1"), Member(broker.bootstrap, group, "m2")]
    pump(members, split(members, [3, 3]), "a 3 + 3 split")
    pump(members, lambda: describe_wire(broker, group).group_state == "Stable", "a Stable group")
    members[0].consumer.commit(
        offsets=[TopicPartition(TOPIC, p, 0) for p in members[0].owned], asynchronous=False
    )
    before = describe_wire(broker, group)
    broker.restart()
    # The coordinator loads __consumer_offsets after the broker listens: until then the group
    # answers COORDINATOR_LOAD_IN_PROGRESS (14).
    deadline = time.monotonic() + 30
    while int((after := describe_wire(broker, group)).error_code) == 14:
        assert time.monotonic() < deadline, "the group never finished loading"
        time.sleep(0.05)
    assert int(after.error_code) == 0
    assert int(after.group_epoch) == int(before.group_epoch)
    assert int(after.assignment_epoch) == int(before.assignment_epoch)

    def members_of(d: Any) -> dict[str, tuple[int, list[int]]]:
        return {
            m.member_id: (
                int(m.member_epoch),
                sorted(int(p) for t in m.assignment.topic_partitions for p in t.partitions),
            )
            for m in d.members
        }

    assert members_of(after) == members_of(before)
    owned = {m.name: m.owned for m in members}
    pump(
        members,
        lambda: (
            int(describe_wire(broker, group).group_epoch) == int(before.group_epoch)
            and all(m.owned == owned[m.name] for m in members)
        ),
        "the members still in the group after the restart",
        timeout=20,
    )
    got = members[0].consumer.committed([TopicPartition(TOPIC, p) for p in members[0].owned], timeout=20)
    assert [tp.offset for tp in got] == [0] * len(members[0].owned)
    assert int(describe_wire(broker, group).group_epoch) == int(before.group_epoch)


def test_added_partitions_are_spread_over_the_members(broker: Broker, members: list[Member]) -> None:
    """CreatePartitions on the subscribed topic makes a new topics image; the group's epoch
    bumps on the members' next heartbeats and the new partitions are assigned (4 + 4), never
    to two members at once.

    Mirrors Kafka 4.1 ``GroupMetadataManagerTest#testPartitionAssignmentChangesWithNewPartitions``
    shape and ``onNewMetadataImage``.
    """
    group = "cg-grow"
    members += [Member(broker.bootstrap, group, "m1"), Member(broker.bootstrap, group, "m2")]
    pump(members, split(members, [3, 3]), "a 3 + 3 split")
    epoch = int(describe_wire(broker, group).group_epoch)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for fut in admin.create_partitions([NewPartitions(TOPIC, 8)]).values():
        fut.result(20)

    def four_and_four() -> bool:
        owned = [m.owned for m in members]
        return [len(o) for o in owned] == [4, 4] and frozenset().union(*owned) == frozenset(range(8))

    pump(members, four_and_four, "a 4 + 4 split of eight partitions")
    assert int(describe_wire(broker, group).group_epoch) > epoch


def test_list_groups_reports_and_filters_the_group_type(broker: Broker, members: list[Member]) -> None:
    """ListGroups v5 (KIP-848): ``group_type`` is ``consumer`` or ``classic`` and the types
    filter keeps one kind (Kafka 4.x ``GroupMetadataManager.listGroups``, reference §7.5)."""
    members.append(Member(broker.bootstrap, "cg-listed", "m1"))
    classic = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "classic-listed",
            "group.protocol": "classic",
            "session.timeout.ms": 6000,
        }
    )
    try:
        classic.subscribe([TOPIC])
        deadline = time.monotonic() + 60
        while not classic.assignment() or not members[0].owned:
            assert time.monotonic() < deadline, "the two groups did not form"
            classic.poll(0.05)
            members[0].poll()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})

        def listed(**kw: Any) -> dict[str, ConsumerGroupType]:
            result = admin.list_consumer_groups(**kw).result(20)
            return {g.group_id: g.type for g in result.valid}

        both = listed()
        assert both["cg-listed"] == ConsumerGroupType.CONSUMER
        assert both["classic-listed"] == ConsumerGroupType.CLASSIC
        assert set(listed(types={ConsumerGroupType.CONSUMER})) == {"cg-listed"}
        assert set(listed(types={ConsumerGroupType.CLASSIC})) == {"classic-listed"}
    finally:
        classic.close()


def test_api_versions_advertise_the_consumer_group_apis_and_group_version(broker: Broker) -> None:
    """ApiVersions: ConsumerGroupHeartbeat and ConsumerGroupDescribe v0-1, and the
    ``group.version`` feature finalized at 1; supported 0-1 only from ApiVersions v4 (Kafka
    omits features whose minimum is 0 from older versions, KAFKA-17492). Mirrors Kafka 4.1
    ``ApiVersionsRequestTest`` and ``ApiVersionsResponse.createApiVersionsResponse``."""
    host, port = broker.bootstrap.split(":")
    with WireClient(host, int(port)) as c:
        v4 = c.call(18, 4, client_software_name="t", client_software_version="1")
        v3 = c.call(18, 3, client_software_name="t", client_software_version="1")
    ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in v4.api_keys}
    assert ranges[68] == (0, 1) and ranges[69] == (0, 1)
    assert [(f.name, int(f.min_version), int(f.max_version)) for f in v4.supported_features] == [
        ("group.version", 0, 1)
    ]
    assert [(f.name, int(f.min_version_level), int(f.max_version_level)) for f in v4.finalized_features] == [
        ("group.version", 1, 1)
    ]
    assert list(v3.supported_features) == []
    assert [f.name for f in v3.finalized_features] == ["group.version"]


def test_the_consumer_protocol_can_be_turned_off() -> None:
    """``group.coordinator.rebalance.protocols=classic``: the APIs stay advertised and a
    heartbeat gets UNSUPPORTED_VERSION (Kafka 4.x ``KafkaApis.isConsumerGroupProtocolEnabled``),
    which confluent-kafka reports as a fatal error to the application."""
    with Broker({**SETTINGS, "group.coordinator.rebalance.protocols": "classic"}) as b:
        b.create_topic(TOPIC, 1)
        errors: list[Any] = []
        c = Consumer(
            {
                "bootstrap.servers": b.bootstrap,
                "group.id": "off",
                "group.protocol": "consumer",
                "error_cb": errors.append,
            }
        )
        try:
            c.subscribe([TOPIC])
            deadline = time.monotonic() + 30
            while not errors:
                assert time.monotonic() < deadline, "no error reported"
                msg = c.poll(0.1)
                if msg is not None and msg.error() is not None:
                    errors.append(msg.error())
        finally:
            c.close()
        assert any(e.code() == KafkaError._FATAL and "ConsumerGroupHeartbeat" in e.str() for e in errors), (
            errors
        )
        assert any("API version not supported" in e.str() for e in errors), errors


def test_a_regex_subscription_follows_a_created_topic(broker: Broker, members: list[Member]) -> None:
    """librdkafka sends ``^orders-.*`` as ``SubscribedTopicRegex`` (v1); the broker resolves it
    with RE2 over whole topic names. A topic created later that matches is picked up once the
    regex is refreshed (at most every 10 s, Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS, passed
    here on the broker's clock); one that does not match is not.

    Mirrors Kafka 4.1 ``GroupMetadataManagerTest#testConsumerGroupMemberJoinRefreshesExpiredRegexes``.
    """
    broker.create_topic("orders-a", 2)
    m = Member(broker.bootstrap, "cg-regex", "m1", topic="^orders-.*")
    members.append(m)

    def owned() -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in m.consumer.assignment()}

    pump(members, lambda: owned() == {("orders-a", 0), ("orders-a", 1)}, "orders-a's two partitions")
    broker.create_topic("orders-b", 3)
    broker.create_topic("payments", 1)
    broker.advance(11)
    want = {("orders-a", 0), ("orders-a", 1), ("orders-b", 0), ("orders-b", 1), ("orders-b", 2)}
    pump(members, lambda: owned() == want, "orders-a and orders-b")
