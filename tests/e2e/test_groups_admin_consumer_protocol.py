"""``groupcoord groups`` and ``groupcoord.testing``'s ``describe_group`` on a KIP-848 consumer group:
confluent-kafka 2.16 members with ``group.protocol=consumer`` against the in-process broker, the
CLI run as its own process.

What Kafka's tools do, and these tests hold ours to:

* ``Admin.describeConsumerGroups`` (``DescribeConsumerGroupsHandler``) asks ConsumerGroupDescribe
  and falls back to DescribeGroups only on GROUP_ID_NOT_FOUND, so a consumer group shows its own
  state (never DescribeGroups' Dead), its group epoch, target assignment epoch and assignor, and
  per member its epoch, current and target assignment (``ConsumerGroupCommand.printStates``/
  ``printMembers`` with ``--verbose``, ``collectGroupsOffsets`` for the lag);
* ``--list --type`` lists the type (ListGroups v5);
* ``resetOffsets`` refuses a group that is not Empty or Dead ("Assignments can only be reset if
  the group ... is inactive, but the current state is ..."); OffsetDelete answers
  GROUP_SUBSCRIBED_TO_TOPIC for the partitions of a topic the members subscribe to
  (``OffsetMetadataManager.deleteOffsets`` with ``ConsumerGroup.isSubscribedToTopic``); DeleteGroups answers
  NON_EMPTY_GROUP for a consumer group with members (``GroupMetadataManager.deleteGroups`` ->
  ``ConsumerGroup.validateDeleteGroup``), and deletes it once it is Empty.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from groupcoord.testing import Broker
from groupcoord.testing.wire import TopicPartition as Partition

pytestmark = pytest.mark.e2e

TOPIC = "cg-admin"
GROUP = "cg-admin-group"
PARTITIONS = 4
SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
}
PRODUCED = {0: 5, 1: 6, 2: 7, 3: 8}
COMMITTED = {0: 2, 1: 3, 2: 4, 3: 5}


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(SETTINGS) as b:
        b.create_topic(TOPIC, PARTITIONS)
        for p, n in PRODUCED.items():
            b.produce(TOPIC, [f"v{i}" for i in range(n)], partition=p)
        yield b


def member(broker: Broker, name: str) -> Any:
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": GROUP,
            "group.protocol": "consumer",
            "client.id": name,
            "enable.auto.commit": False,
        }
    )
    c.subscribe([TOPIC])
    return c


def owned(c: Any) -> frozenset[int]:
    return frozenset(tp.partition for tp in c.assignment())


def pump_until_split(consumers: list[Any], broker: Broker, timeout: float = 60.0) -> None:
    """Poll until the members own two partitions each and the group is Stable (a bounded wait)."""
    deadline = time.monotonic() + timeout
    while True:
        for c in consumers:
            c.poll(0.05)
        if sorted(len(owned(c)) for c in consumers) == [2, 2]:
            view = broker.describe_group(GROUP)
            if view.state == "Stable":
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"no 2+2 split; owned {[sorted(owned(c)) for c in consumers]}")


def cli(broker: Broker, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord", "groups", *args, "--bootstrap", broker.bootstrap],
        capture_output=True,
        text=True,
        timeout=60,
    )


def rows(text: str, first_header: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header + " "))
    out = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        out.append(line.split())
    return out


@pytest.fixture
def consumers(broker: Broker) -> Iterator[list[Any]]:
    made = [member(broker, "alpha"), member(broker, "beta")]
    yield made
    for c in made:
        c.close()


def commit_known_offsets(consumers: list[Any]) -> None:
    for c in consumers:
        mine = [TopicPartition(TOPIC, p, COMMITTED[p]) for p in sorted(owned(c))]
        c.commit(offsets=mine, asynchronous=False)


def test_describe_shows_the_consumer_group_with_its_epochs_assignments_and_lag(
    broker: Broker, consumers: list[Any]
) -> None:
    """Kafka's DescribeConsumerGroupsHandler (ConsumerGroupDescribe first) and
    ConsumerGroupCommand.printStates/printMembers/printOffsets."""
    pump_until_split(consumers, broker)
    commit_known_offsets(consumers)

    view = broker.wait_for_group(GROUP, members=2, generation_at_least=2)  # the group epoch, here
    assert (view.group_type, view.state, view.protocol_type, view.protocol) == (
        "consumer",
        "Stable",
        "consumer",
        "uniform",
    )
    assert view.group_epoch is not None and view.group_epoch >= 2  # one bump per join
    assert view.assignment_epoch == view.group_epoch
    assert view.generation is None and view.leader is None
    by_client = {m.client_id: m for m in view.members}
    assert sorted(by_client) == ["alpha", "beta"]
    for c, name in zip(consumers, ("alpha", "beta"), strict=True):
        m = by_client[name]
        assert m.member_epoch == view.assignment_epoch
        assert m.assignment == m.target_assignment == {Partition(TOPIC, p) for p in owned(c)}

    listed = cli(broker, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (entry,) = [g for g in json.loads(listed.stdout) if g["group_id"] == GROUP]
    assert (entry["group_type"], entry["state"], entry["protocol_type"]) == ("consumer", "Stable", "consumer")
    only_classic = cli(broker, "list", "--type", "classic")
    assert only_classic.returncode == 0 and GROUP not in only_classic.stdout
    only_consumer = cli(broker, "list", "--type", "CONSUMER")
    assert rows(only_consumer.stdout, "GROUP") == [[GROUP, "consumer", "Stable", "consumer"]]
    bad = cli(broker, "list", "--type", "share")
    assert bad.returncode == 2 and "unknown group type 'share'" in bad.stderr

    full = cli(broker, "describe", GROUP)
    assert full.returncode == 0, full.stderr
    heading = dict(line.split(":", 1) for line in full.stdout.split("\n\n")[0].splitlines())
    assert {k: v.strip() for k, v in heading.items()} == {
        "Group": GROUP,
        "Coordinator": broker.bootstrap,
        "Type": "consumer",
        "State": "Stable",
        "Group epoch": str(view.group_epoch),
        "Target assignment epoch": str(view.assignment_epoch),
        "Assignor": "uniform",
        "Members": "2",
    }
    assert "Dead" not in full.stdout

    as_json = cli(broker, "describe", GROUP, "--json")
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert (data["group_type"], data["group_epoch"], data["assignment_epoch"]) == (
        "consumer",
        view.group_epoch,
        view.assignment_epoch,
    )
    # MemberType 1 (ConsumerGroupDescribe v1): both are consumer-protocol members
    assert sorted((m["client_id"], m["member_epoch"], m["upgraded"]) for m in data["members"]) == [
        ("alpha", view.assignment_epoch, True),
        ("beta", view.assignment_epoch, True),
    ]

    state = cli(broker, "describe", GROUP, "--state", "--verbose")
    assert state.returncode == 0 and state.stderr == ""
    header, *data = state.stdout.splitlines()
    assert header.split() == [
        "GROUP",
        "COORDINATOR",
        "(ID)",
        "ASSIGNMENT-STRATEGY",
        "STATE",
        "GROUP-EPOCH",
        "TARGET-ASSIGNMENT-EPOCH",
        "#MEMBERS",
    ]
    assert data[0].split() == [
        GROUP,
        broker.bootstrap,
        "(0)",
        "uniform",
        "Stable",
        str(view.group_epoch),
        str(view.assignment_epoch),
        "2",
    ]

    members = cli(broker, "describe", GROUP, "--members", "--verbose")
    assert members.returncode == 0, members.stderr
    got = {r[3]: r for r in rows(members.stdout, "GROUP")}
    for c, name in zip(consumers, ("alpha", "beta"), strict=True):
        text = f"{TOPIC}:" + ",".join(str(p) for p in sorted(owned(c)))
        assert got[name] == [
            GROUP,
            by_client[name].member_id,
            by_client[name].host,
            name,
            "2",
            str(view.assignment_epoch),
            text,
            str(view.assignment_epoch),
            text,
        ]

    offsets = cli(broker, "describe", GROUP, "--offsets")
    assert offsets.returncode == 0, offsets.stderr
    table = {int(r[2]): r for r in rows(offsets.stdout, "GROUP")}
    assert sorted(table) == [0, 1, 2, 3]
    for p, r in table.items():
        alpha = by_client["alpha"]
        owner = alpha if Partition(TOPIC, p) in alpha.assignment else by_client["beta"]
        assert r[:7] == [
            GROUP,
            TOPIC,
            str(p),
            str(COMMITTED[p]),
            str(PRODUCED[p]),
            str(PRODUCED[p] - COMMITTED[p]),
            owner.member_id,
        ]


def test_delete_and_reset_answer_as_kafka_while_members_are_up_and_work_once_it_is_empty(
    broker: Broker, consumers: list[Any]
) -> None:
    """ConsumerGroupCommand.resetOffsets (only Empty or Dead groups) and DeleteGroups'
    NON_EMPTY_GROUP for a consumer group with members (ConsumerGroup.validateDeleteGroup)."""
    pump_until_split(consumers, broker)
    commit_known_offsets(consumers)

    subscribed = cli(broker, "delete-offsets", "--group", GROUP, "--topic", TOPIC)
    assert subscribed.returncode == 1
    assert rows(subscribed.stdout, "TOPIC") == [
        [TOPIC, str(p), "GROUP_SUBSCRIBED_TO_TOPIC"] for p in PRODUCED
    ]

    refused = cli(broker, "delete", "--group", GROUP)
    assert refused.returncode == 1
    assert rows(refused.stdout, "GROUP") == [[GROUP, "NON_EMPTY_GROUP"]]

    reset = cli(broker, "reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--execute")
    assert reset.returncode == 1
    assert (
        f"Assignments can only be reset if the group '{GROUP}' is inactive, but the current state is Stable."
        in reset.stderr
    )
    assert broker.committed(GROUP) == {Partition(TOPIC, p): o for p, o in COMMITTED.items()}

    for c in consumers:
        c.close()
    consumers.clear()
    empty = broker.wait_for_group(GROUP, state="Empty", members=0)
    assert empty.group_type == "consumer"

    note = cli(broker, "describe", GROUP, "--members")
    assert note.returncode == 0
    assert f"Consumer group '{GROUP}' has no active members." in note.stderr

    reset = cli(broker, "reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--execute")
    assert reset.returncode == 0, reset.stderr
    assert broker.committed(GROUP) == {Partition(TOPIC, p): 0 for p in PRODUCED}
    # with no member left, nobody subscribes: the offsets of a topic can go
    dropped = cli(broker, "delete-offsets", "--group", GROUP, "--topic", f"{TOPIC}:3")
    assert dropped.returncode == 0, dropped.stderr
    assert broker.committed(GROUP) == {Partition(TOPIC, p): 0 for p in (0, 1, 2)}

    deleted = cli(broker, "delete", "--group", GROUP)
    assert deleted.returncode == 0, deleted.stderr
    assert rows(deleted.stdout, "GROUP") == [[GROUP, "ok"]]
    assert broker.committed(GROUP) == {}
    gone = cli(broker, "describe", GROUP, "--state")
    assert gone.returncode == 1
    assert f"Error: Consumer group '{GROUP}' does not exist." in gone.stderr
