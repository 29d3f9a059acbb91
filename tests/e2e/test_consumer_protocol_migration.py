"""KIP-848's online upgrade and downgrade end to end, with real clients over 127.0.0.1 against the
in-process broker of ``groupcoord.testing``: a group of confluent-kafka 2.16 classic consumers
(``group.protocol=classic``) is upgraded to a consumer group when a ``group.protocol=consumer``
member joins (confluent-kafka's, or our own ``groupcoord.client.Consumer``), the classic members
live on inside it (the server assigns; they learn of each new epoch by REBALANCE_IN_PROGRESS on
Heartbeat and re-join), and the group is downgraded back to a classic group when the
consumer-protocol member leaves.

Kafka 4.1 behaviour mirrored: ``GroupMetadataManagerTest#testConsumerGroupHeartbeatWithStableClassicGroup``
(upgrade), ``#testReconciliationInJoiningConsumerGroupWithEagerProtocol`` (classic members reconcile
through JoinGroup/SyncGroup) and ``#testLastConsumerProtocolMemberLeavingConsumerGroup`` (downgrade);
the same flow is Kafka's ``ConsumerProtocolMigrationTest`` (core/src/test/scala/unit/kafka/server).
Ownership is checked after every polling round: no partition is in two members' assignments.
The broker hands out a 500 ms heartbeat interval; the classic members heartbeat every 500 ms.
Every wait is bounded and on an observable outcome.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import ConsumerGroupType
from confluent_kafka.admin import AdminClient
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest

from groupcoord.client import Consumer as OurConsumer
from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

pytestmark = pytest.mark.e2e

TOPIC = "tmig"
PARTITIONS = 6
SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
}


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(SETTINGS) as b:
        b.create_topic(TOPIC, PARTITIONS)
        yield b


class Member:
    """A consumer of either protocol (``kind``: classic, consumer, ours), with the history of its
    assignment."""

    def __init__(self, bootstrap: str, group: str, name: str, kind: str, strategy: str = "range") -> None:
        self.name = name
        self.kind = kind
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
        if kind == "classic":
            config.update(
                {
                    "group.protocol": "classic",
                    "partition.assignment.strategy": strategy,
                    "session.timeout.ms": 10_000,
                    "heartbeat.interval.ms": 500,
                }
            )
            self.consumer: Any = RdConsumer(config)
        elif kind == "consumer":
            self.consumer = RdConsumer({**config, "group.protocol": "consumer"})
        else:
            self.consumer = OurConsumer({**config, "group.protocol": "consumer"})
        self.consumer.subscribe([TOPIC])
        self.history: list[frozenset[int]] = [frozenset()]
        self.closed = False

    def poll(self) -> None:
        if self.closed:
            return
        self.consumer.poll(0.05)
        now = frozenset(tp.partition for tp in self.consumer.assignment())
        if now != self.history[-1]:
            self.history.append(now)

    @property
    def owned(self) -> frozenset[int]:
        return frozenset() if self.closed else self.history[-1]

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.kind == "ours":
                self.consumer.close(10)
            else:
                self.consumer.close()


@pytest.fixture
def members() -> Iterator[list[Member]]:
    made: list[Member] = []
    yield made
    for m in made:
        m.close()


def never_owned_twice(members: list[Member]) -> None:
    owned = [m.owned for m in members if not m.closed]
    for i, a in enumerate(owned):
        for b in owned[i + 1 :]:
            assert not (a & b), f"partition owned twice: {sorted(a & b)}"


def pump(members: list[Member], until: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            owned = {m.name: sorted(m.owned) for m in members}
            raise AssertionError(f"timed out waiting for {what}; assignments {owned}")
        for m in members:
            m.poll()
        never_owned_twice(members)


def split(members: list[Member], sizes: list[int]) -> Callable[[], bool]:
    def ok() -> bool:
        live = [m for m in members if not m.closed]
        owned = [m.owned for m in live]
        return sorted(len(o) for o in owned) == sorted(sizes) and frozenset().union(*owned) == frozenset(
            range(PARTITIONS)
        )

    return ok


def describe_wire(broker: Broker, group: str) -> Any:
    """ConsumerGroupDescribe v1 over the wire (member types and epochs)."""
    from groupcoord.protocol.registry import load_messages

    host, port = broker.bootstrap.split(":")
    with WireClient(host, int(port)) as c:
        response = c.call_entity(
            load_messages(69, 1),
            ConsumerGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False),
        )
    (described,) = response.groups
    return described


def group_type(admin: AdminClient, group: str) -> Any:
    return admin.describe_consumer_groups([group])[group].result(20).type


# The classic members use ``range``: librdkafka's sticky assignors echo their subscription's user
# data into the assignment, which Kafka refuses to upgrade ("an unsupported custom assignor is in
# use", ``convertToConsumerGroup``) - and so do we.
@pytest.mark.parametrize("joiner", ["consumer", "ours"])
def test_classic_group_upgraded_by_a_consumer_protocol_member_and_downgraded_when_it_leaves(
    broker: Broker, members: list[Member], joiner: str
) -> None:
    strategy = "range"
    group = f"mig-{joiner}-{strategy}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    c1 = Member(broker.bootstrap, group, "c1", "classic", strategy)
    c2 = Member(broker.bootstrap, group, "c2", "classic", strategy)
    members += [c1, c2]
    pump(members, split(members, [3, 3]), "the classic group's 3 + 3 split")
    assert group_type(admin, group) == ConsumerGroupType.CLASSIC
    before = {m.name: m.owned for m in (c1, c2)}

    # The upgrade: a consumer-protocol member joins the running classic group.
    new = Member(broker.bootstrap, group, "n1", joiner)
    members.append(new)
    pump(members, split(members, [2, 2, 2]), "a 2 + 2 + 2 split after the upgrade")
    assert group_type(admin, group) == ConsumerGroupType.CONSUMER
    # The uniform assignor is sticky: each classic member kept two of its three partitions,
    # and the new member got the third of each.
    for m in (c1, c2):
        assert m.owned < before[m.name], (m.name, m.owned, before[m.name])
    assert new.owned == (before["c1"] - c1.owned) | (before["c2"] - c2.owned)
    wire = describe_wire(broker, group)
    assert int(wire.error_code) == 0 and wire.group_state == "Stable"
    types = {m.client_id: int(m.member_type) for m in wire.members}
    assert types == {"c1": 0, "c2": 0, "n1": 1}
    epochs = {int(m.member_epoch) for m in wire.members}
    assert epochs == {int(wire.group_epoch)}
    # The classic members never lost a partition they kept (cooperative reconciliation seen
    # through eager clients: each revoked everything once, then got back exactly what it keeps).
    for m in (c1, c2):
        assert m.history[-1] <= before[m.name]

    # The downgrade: the consumer-protocol member leaves; the classic members rebalance as a
    # classic group again (the range assignor over their member ids).
    new.close()
    pump(members, split(members, [3, 3]), "the classic group's 3 + 3 split after the downgrade")
    assert group_type(admin, group) == ConsumerGroupType.CLASSIC
    desc = admin.describe_consumer_groups([group])[group].result(20)
    ids = sorted((m.member_id, m.client_id) for m in desc.members)
    assert [client for _, client in ids] in (["c1", "c2"], ["c2", "c1"])
    first, second = (next(x for x in (c1, c2) if x.name == client) for _, client in ids)
    assert first.owned == frozenset({0, 1, 2}) and second.owned == frozenset({3, 4, 5})
