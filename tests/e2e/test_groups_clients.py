"""Real consumer groups against groupcoord: confluent-kafka, kafka-python and aiokafka.

Every member is a real client in its own process (tests/e2e/consumer_worker.py). The broker
runs with small protocol timeouts (no initial rebalance delay, 1 s minimum session timeout);
waits are bounded waits on observable outcomes, never sleeps standing in for a timeout.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import BrokerProcess, wait_until
from group_harness import Worker, partitions_split

pytestmark = pytest.mark.e2e

GROUP_SETTINGS = ("group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=1000")
CLIENTS = ["confluent", "kafka-python", "aiokafka"]
PARTITIONS = 6


@pytest.fixture
def group_broker(broker_factory: Callable[..., BrokerProcess]) -> BrokerProcess:
    return broker_factory(*GROUP_SETTINGS)


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    made: list[Worker] = []
    yield made
    for w in made:
        w.kill()


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        fut.result(timeout=20)


def produce(bootstrap: str, topic: str, n: int, start: int = 0) -> dict[int, list[int]]:
    """Produce keys k<start>..k<start+n-1> round-robin over the partitions; offsets per partition."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    acked: dict[int, list[int]] = {}
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked.setdefault(msg.partition(), []).append(msg.offset())

    for i in range(start, start + n):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % PARTITIONS,
            on_delivery=on_delivery,
        )
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []
    return {p: sorted(offs) for p, offs in acked.items()}


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "e2e-watermarks"})
    try:
        return {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)
        }
    finally:
        c.close()


def describe(bootstrap: str, group: str) -> Any:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group])[group].result(timeout=20)


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def group_events(bootstrap: str, group: str) -> list[dict[str, Any]]:
    """Every event of ``group`` in ``__group_events``, in log order, read with a real client."""
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "e2e-events-reader", "enable.auto.commit": False}
    )
    try:
        md = c.list_topics("__group_events", timeout=10)
        parts = sorted(md.topics["__group_events"].partitions)
        ends = {p: c.get_watermark_offsets(TopicPartition("__group_events", p), timeout=10)[1] for p in parts}
        wanted = {p: e for p, e in ends.items() if e > 0}
        c.assign([TopicPartition("__group_events", p, 0) for p in wanted])
        seen: dict[int, int] = dict.fromkeys(wanted, 0)
        out: list[tuple[int, int, dict[str, Any]]] = []
        while any(seen[p] < wanted[p] for p in wanted):
            msg = c.poll(5)
            assert msg is not None, "timed out reading __group_events"
            if msg.error():
                continue
            seen[msg.partition()] = msg.offset() + 1
            if msg.key() == group.encode():
                out.append((msg.partition(), msg.offset(), json.loads(msg.value())))
        return [e for _, _, e in sorted(out, key=lambda t: (t[0], t[1]))]
    finally:
        c.close()


def consumed(workers: list[Worker]) -> list[tuple[int, int]]:
    return [(p, o) for w in workers for (p, o, _k) in w.records()]


def all_offsets(acked: dict[int, list[int]]) -> list[tuple[int, int]]:
    return sorted((p, o) for p, offs in acked.items() for o in offs)


def balanced(workers: list[Worker], each: int) -> bool:
    return partitions_split(workers, PARTITIONS) and all(len(w.assignment or []) == each for w in workers)


@pytest.mark.parametrize("client", CLIENTS)
def test_three_consumers_split_six_partitions_consume_exactly_once_and_two_take_over_after_a_close(
    client: str, group_broker: BrokerProcess, workers: list[Worker]
) -> None:
    bs = group_broker.bootstrap
    topic, group = f"orders-{client}", f"group-{client}"
    create_topic(bs, topic)
    workers.extend(Worker(client, bs, group, topic) for _ in range(3))
    wait_until(lambda: balanced(workers, 2), 120, "three members owning two partitions each")

    acked = produce(bs, topic, 6000)
    assert sum(len(v) for v in acked.values()) == 6000
    wait_until(lambda: len(consumed(workers)) >= 6000, 60, "6000 records consumed")
    got = consumed(workers)
    assert Counter(got).most_common(1)[0][1] == 1, "a record was consumed twice"
    assert sorted(got) == all_offsets(acked)
    # each member consumed exactly the partitions it owns
    for w in workers:
        assert {p for p, _o, _k in w.records()} == set(w.assignment or [])
    ends = end_offsets(bs, topic)
    wait_until(lambda: committed_offsets(bs, group, topic) == ends, 30, "commits reach the log end")

    workers[0].close()
    assert workers[0].proc.returncode == 0
    survivors = workers[1:]
    wait_until(lambda: balanced(survivors, 3), 120, "the two survivors own three partitions each")
    desc = describe(bs, group)
    assert desc.state == ConsumerGroupState.STABLE
    assert len(desc.members) == 2


def test_mixed_client_group_agrees_on_roundrobin_and_splits_two_each(
    group_broker: BrokerProcess, workers: list[Worker]
) -> None:
    bs = group_broker.bootstrap
    create_topic(bs, "mixed")
    workers.extend(Worker(client, bs, "mixed-group", "mixed") for client in CLIENTS)
    wait_until(lambda: balanced(workers, 2), 90, "one member of each client owning two partitions")
    desc = describe(bs, "mixed-group")
    assert desc.state == ConsumerGroupState.STABLE
    # librdkafka offers range+roundrobin, kafka-python range+roundrobin, aiokafka roundrobin only:
    # the only protocol every member supports is roundrobin.
    assert desc.partition_assignor == "roundrobin"
    owned = {tuple(sorted(tp.partition for tp in m.assignment.topic_partitions)) for m in desc.members}
    assert sorted(p for ps in owned for p in ps) == list(range(PARTITIONS))
    assert all(len(ps) == 2 for ps in owned)


def test_killed_consumer_partitions_move_after_session_timeout_and_resume_from_committed_offsets(
    group_broker: BrokerProcess, workers: list[Worker]
) -> None:
    bs = group_broker.bootstrap
    create_topic(bs, "crash")
    workers.extend(Worker("confluent", bs, "crash-group", "crash", session_timeout_ms=3000) for _ in range(3))
    wait_until(lambda: balanced(workers, 2), 120, "three members owning two partitions each")
    first = produce(bs, "crash", 3000)
    wait_until(lambda: len(consumed(workers)) >= 3000, 60, "first 3000 records consumed")
    victim, survivors = workers[0], workers[1:]
    victim_parts = list(victim.assignment or [])
    wait_until(
        lambda: all(victim.committed().get(p) == first[p][-1] + 1 for p in victim_parts),
        30,
        "the victim committed what it consumed",
    )
    committed_by_victim = {p: victim.committed()[p] for p in victim_parts}

    victim.kill()
    second = produce(bs, "crash", 3000, start=3000)
    wait_until(
        lambda: balanced(survivors, 3), 60, "survivors own all six partitions after the session timeout"
    )
    total = {p: first[p] + second[p] for p in range(PARTITIONS)}
    wait_until(lambda: len(set(consumed(workers))) >= 6000, 60, "every record consumed")
    got = consumed(workers)
    assert sorted(set(got)) == all_offsets(total), "a record was lost"
    assert Counter(got).most_common(1)[0][1] == 1, "a committed record was consumed again"
    for p in victim_parts:
        resumed = min(o for w in survivors for (q, o, _k) in w.records() if q == p)
        assert resumed == committed_by_victim[p]


def test_static_member_restarted_within_session_timeout_keeps_partitions_without_rebalance(
    group_broker: BrokerProcess, workers: list[Worker]
) -> None:
    bs = group_broker.bootstrap
    create_topic(bs, "static")

    def member(instance: str) -> Worker:
        return Worker(
            "confluent", bs, "static-group", "static", instance_id=instance, session_timeout_ms=30000
        )

    workers.extend(member(f"instance-{i}") for i in range(3))
    wait_until(lambda: balanced(workers, 2), 120, "three static members owning two partitions each")
    before = {w: list(w.assignment or []) for w in workers}
    events_before = group_events(bs, "static-group")
    stable_generation = events_before[-1]["generation"]
    assert events_before[-1]["to_state"] == "Stable"

    seen = {w: len(w.snapshot()) for w in workers}
    restarted = workers[1]
    restarted.kill()
    replacement = member("instance-1")
    workers.append(replacement)
    wait_until(lambda: replacement.assignment is not None, 60, "the restarted instance gets its assignment")
    assert replacement.assignment == before[restarted]
    for w in (workers[0], workers[2]):
        assert w.assignment == before[w]
        assert [e for e in w.snapshot()[seen[w] :] if e["e"] in ("revoked", "lost", "assigned")] == []

    after = group_events(bs, "static-group")[len(events_before) :]
    assert [(e["type"], e["reason"]) for e in after] == [("member_updated", "static_member_replaced")]
    assert after[0]["group_instance_id"] == "instance-1"
    assert after[0]["generation"] == stable_generation
    desc = describe(bs, "static-group")
    assert desc.state == ConsumerGroupState.STABLE
    assert sorted(m.group_instance_id for m in desc.members) == ["instance-0", "instance-1", "instance-2"]


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_broker_restart_keeps_offsets_and_group_and_consumers_continue(
    how: str, group_broker: BrokerProcess, workers: list[Worker]
) -> None:
    bs = group_broker.bootstrap
    create_topic(bs, "restart")
    workers.extend(
        Worker("confluent", bs, "restart-group", "restart", session_timeout_ms=20000) for _ in range(2)
    )
    wait_until(lambda: balanced(workers, 3), 60, "two members owning three partitions each")
    first = produce(bs, "restart", 2000)
    ends = {p: offs[-1] + 1 for p, offs in first.items()}
    wait_until(lambda: committed_offsets(bs, "restart-group", "restart") == ends, 60, "commits reach the end")
    members_before = sorted(m.member_id for m in describe(bs, "restart-group").members)

    if how == "sigterm":
        assert group_broker.stop() == 0
    else:
        group_broker.kill()
    group_broker.start()

    assert committed_offsets(bs, "restart-group", "restart") == ends
    desc = describe(bs, "restart-group")
    assert desc.state == ConsumerGroupState.STABLE
    assert sorted(m.member_id for m in desc.members) == members_before

    second = produce(bs, "restart", 2000, start=2000)
    total = {p: first[p] + second[p] for p in range(PARTITIONS)}
    wait_until(lambda: len(set(consumed(workers))) >= 4000, 90, "records produced after the restart consumed")
    got = consumed(workers)
    assert sorted(set(got)) == all_offsets(total)
    assert Counter(got).most_common(1)[0][1] == 1, "a record committed before the restart was consumed again"
