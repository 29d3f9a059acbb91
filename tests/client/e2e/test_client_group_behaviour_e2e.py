"""Group behaviour of our clients against a real broker process, with real peers from PyPI.

* the heartbeat thread of the seeds (002): a real thread named
  ``kafka-coordinator-heartbeat-thread | <group.id>``, created when the consumer starts
  (Java ``AbstractCoordinator.startHeartbeatThreadIfNeeded`` / ``HeartbeatThread``), gone
  after close;
* a SIGKILLed member's partitions move to the survivors once its session times out
  (Kafka ``GroupCoordinator.onExpireHeartbeat``);
* a member whose application stops polling for longer than ``max.poll.interval.ms`` leaves
  the group from its heartbeat thread (Java ``HeartbeatThread.run`` -> ``maybeLeaveGroup(
  "consumer poll timeout has expired.")``), so its partitions move although its session is
  far from expiring, and it rejoins and gets partitions back when it polls again (its old
  ones reported as lost: ``onJoinPrepare`` with a reset generation);
* AsyncConsumer and GroupMember basics.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from client_harness import Member, describe, new_name, partitioned_exactly, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import ClientBroker

from groupcoord.client.aio import AsyncConsumer
from groupcoord.client.consumer import Consumer
from groupcoord.client.group_member import GroupMember
from groupcoord.client.types import OffsetAndMetadata, TopicPartition


def make_topic(bootstrap: str, partitions: int) -> str:
    name = new_name("beh")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    return name


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=i % partitions)
    assert p.flush(30) == 0


def heartbeat_threads(group: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"kafka-coordinator-heartbeat-thread | {group}"]


def test_heartbeat_thread_is_named_after_the_group_and_runs_from_start_to_close(
    client_broker: ClientBroker,
) -> None:
    group = new_name("hb")
    assert heartbeat_threads(group) == []
    consumer = Consumer({"bootstrap.servers": client_broker.bootstrap, "group.id": group})
    try:
        threads = heartbeat_threads(group)
        assert len(threads) == 1
        assert threads[0] is consumer.heartbeat_thread
        assert threads[0].is_alive()  # created and started with the consumer, before subscribe
    finally:
        consumer.close()
    assert heartbeat_threads(group) == []
    # a consumer without a group has no heartbeat thread
    plain = Consumer({"bootstrap.servers": client_broker.bootstrap})
    try:
        assert plain.heartbeat_thread is None
    finally:
        plain.close()


def test_async_consumer_heartbeats_from_a_task_named_like_the_thread_and_starts_no_thread(
    client_broker: ClientBroker,
) -> None:
    group = new_name("aiohb")
    topic = make_topic(client_broker.bootstrap, 1)

    async def main() -> tuple[str | None, bool, bool]:
        before = {t.ident for t in threading.enumerate()}
        async with AsyncConsumer({"bootstrap.servers": client_broker.bootstrap, "group.id": group}) as c:
            c.subscribe([topic])
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while not c.assignment() and loop.time() < deadline:
                await c.poll(0.2)
            task = c.heartbeat_task
            name = task.get_name() if task is not None else None
            alive = task is not None and not task.done()
            new_threads = {t.ident for t in threading.enumerate()} - before
        return name, alive, bool(new_threads)

    name, alive, new_threads = asyncio.run(main())
    assert name == f"kafka-coordinator-heartbeat-thread | {group}"
    assert alive
    assert not new_threads


def test_kafka_python_member_on_a_just_created_topic_gets_every_partition_in_its_first_assignment(
    client_broker: ClientBroker,
) -> None:
    """The worker's kafka-python member knows the topic before it joins, so it never relies on
    a metadata-driven rejoin.

    kafka-python 3.0.12 joins with bootstrap metadata that names no topics; as leader it then
    assigns nothing, learns the topic and rejoins. When that rejoin outlives a poll's timeout, its
    ``_perform_assignment`` makes the assignment snapshot equal to the metadata snapshot while the
    SyncGroup is in flight, ``need_rejoin()`` turns False and no poll ever completes the pending
    join: the member heartbeats in generation 2 owning nothing (the SIGKILL test below saw
    ``owned=[] recs=0`` so, about one run in ten beside a CPU burner). Java's consumer keeps
    completing a pending join (``AbstractCoordinator.rejoinNeededOrPending``: ``rejoinNeeded ||
    joinFuture != null``). The worker waits for the topic's partitions before its first poll;
    without that its first assignment is empty in most runs and this test fails.
    """
    topic = make_topic(client_broker.bootstrap, 4)
    member = Member("kafka-python", client_broker.bootstrap, new_name("first"), topic, "range")
    try:
        wait_for(lambda: member.owned() == {0, 1, 2, 3}, what=lambda: describe([member]) + member.tail())
        first = member.first("assigned")
        assert first is not None and first["partitions"] == [0, 1, 2, 3]
        assert member.close() == 0, member.tail()
    finally:
        member.kill()


#: The members' session timeout: long enough that a pure-Python client's heartbeats on a busy CI
#: machine do not miss it before the kill (at 3 s a lone kafka-python member was seen never to settle).
SESSION_MS = 6000


@pytest.mark.parametrize("killed", ["groupcoord", "kafka-python"])
def test_sigkilled_member_partitions_move_to_the_survivor_after_the_session_timeout(
    client_broker: ClientBroker, killed: str
) -> None:
    topic = make_topic(client_broker.bootstrap, 4)
    group = new_name("kill")
    survivor_client = "kafka-python" if killed == "groupcoord" else "groupcoord"
    members: list[Member] = []
    try:
        victim = Member(killed, client_broker.bootstrap, group, topic, "range", session_timeout_ms=SESSION_MS)
        members.append(victim)
        wait_for(lambda: victim.owned() == {0, 1, 2, 3}, what=lambda: describe(members) + victim.tail())
        survivor = Member(
            survivor_client, client_broker.bootstrap, group, topic, "range", session_timeout_ms=SESSION_MS
        )
        members.append(survivor)
        wait_for(
            lambda: partitioned_exactly(members, 4) and bool(survivor.owned()) and bool(victim.owned()),
            what=lambda: describe(members),
        )
        before = survivor.owned()
        victim.kill()  # no LeaveGroup: only the session timeout can free its partitions
        wait_for(lambda: survivor.owned() == {0, 1, 2, 3}, what=lambda: describe(members))
        assert before < {0, 1, 2, 3}
        produce(client_broker.bootstrap, topic, 40, 4)
        wait_for(lambda: len(survivor.records()) >= 40, what=lambda: describe(members))
        assert sorted(survivor.records()) == sorted((p, o) for p in range(4) for o in range(10))
        assert survivor.close() == 0, survivor.tail()
    finally:
        for m in members:
            m.kill()


def test_member_stalled_past_max_poll_interval_loses_its_partitions_and_gets_them_back(
    client_broker: ClientBroker,
) -> None:
    topic = make_topic(client_broker.bootstrap, 4)
    group = new_name("stall")
    members: list[Member] = []
    try:
        # session.timeout.ms 60 s: nothing in this test waits that long, so any move of the
        # stalled member's partitions comes from its poll timeout (2 s), not from its session
        ours = Member(
            "groupcoord",
            client_broker.bootstrap,
            group,
            topic,
            "range",
            session_timeout_ms=60000,
            heartbeat_interval_ms=300,
            max_poll_interval_ms=2000,
        )
        members.append(ours)
        other = Member("confluent", client_broker.bootstrap, group, topic, "range", session_timeout_ms=60000)
        members.append(other)
        wait_for(
            lambda: partitioned_exactly(members, 4) and bool(ours.owned()) and bool(other.owned()),
            what=lambda: describe(members),
        )
        ours_before = ours.owned()
        ours.send("stall")
        wait_for(lambda: ours.saw("stalled"), what="stall acknowledged")
        wait_for(lambda: other.owned() == {0, 1, 2, 3}, timeout=40, what=lambda: describe(members))
        assert not ours.saw("resumed")
        ours.send("resume")
        wait_for(
            lambda: partitioned_exactly(members, 4) and bool(ours.owned()) and bool(other.owned()),
            what=lambda: describe(members),
        )
        lost = ours.first("lost")
        assert lost is not None and set(lost["partitions"]) == ours_before
        produce(client_broker.bootstrap, topic, 40, 4)
        wait_for(lambda: len(ours.records()) + len(other.records()) >= 40, what=lambda: describe(members))
        assert sorted(ours.records() + other.records()) == sorted((p, o) for p in range(4) for o in range(10))
        for m in members:
            assert m.close() == 0, m.tail()
    finally:
        for m in members:
            m.kill()


def test_async_consumer_shares_a_group_with_confluent_and_resumes_from_commits(
    client_broker: ClientBroker,
) -> None:
    topic = make_topic(client_broker.bootstrap, 4)
    group = new_name("aio")
    members: list[Member] = []
    try:
        ours = Member("groupcoord-async", client_broker.bootstrap, group, topic, "range")
        members.append(ours)
        wait_for(lambda: ours.owned() == {0, 1, 2, 3}, what=lambda: describe(members))
        other = Member("confluent", client_broker.bootstrap, group, topic, "range")
        members.append(other)
        wait_for(
            lambda: partitioned_exactly(members, 4) and bool(ours.owned()) and bool(other.owned()),
            what=lambda: describe(members),
        )
        produce(client_broker.bootstrap, topic, 80, 4)
        wait_for(lambda: len(ours.records()) + len(other.records()) >= 80, what=lambda: describe(members))
        assert sorted(ours.records() + other.records()) == sorted((p, o) for p in range(4) for o in range(20))
        for m in members:
            assert m.close() == 0, m.tail()

        async def resume() -> list[tuple[int, int]]:
            got: list[tuple[int, int]] = []
            async with AsyncConsumer(
                {
                    "bootstrap.servers": client_broker.bootstrap,
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                }
            ) as c:
                c.subscribe([topic])
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 60
                while len(got) < 8 and loop.time() < deadline:
                    got += [(r.partition, r.offset) for r in await c.poll(0.5)]
                committed = await c.committed([TopicPartition(topic, p) for p in range(4)])
                assert committed == {TopicPartition(topic, p): OffsetAndMetadata(offset=20) for p in range(4)}
            return got

        produce(client_broker.bootstrap, topic, 8, 4)
        assert sorted(asyncio.run(resume())) == sorted((p, o) for p in range(4) for o in (20, 21))
    finally:
        for m in members:
            m.kill()


def test_group_members_elect_one_leader_that_sees_every_members_metadata(client_broker: ClientBroker) -> None:
    group = new_name("elect")
    seen: dict[str, list[tuple[str, bytes]]] = {}
    assigned: dict[str, list[tuple[bytes, int]]] = {}
    revoked: dict[str, int] = {}
    lock = threading.Lock()

    def make(name: str) -> GroupMember:
        def assign(protocol: str, members: list[tuple[str, str | None, bytes]]) -> dict[str, bytes]:
            with lock:
                seen[name] = sorted((mid, md) for mid, _, md in members)
            leader_md = b"leader:" + name.encode()
            return {mid: leader_md + b"|" + md for mid, _, md in members}

        def on_assigned(assignment: bytes, generation: int) -> None:
            with lock:
                assigned.setdefault(name, []).append((assignment, generation))

        def on_revoked() -> None:
            with lock:
                revoked[name] = revoked.get(name, 0) + 1

        return GroupMember(
            {
                "bootstrap.servers": client_broker.bootstrap,
                "group.id": group,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 300,
                "rebalance.timeout.ms": 10000,
            },
            protocol_type="election",
            protocols=[("v1", name.encode())],
            assign=assign,
            on_assigned=on_assigned,
            on_revoked=on_revoked,
        )

    names = ["a", "b", "c"]
    members = {n: make(n) for n in names}
    stop = threading.Event()

    def run(member: GroupMember) -> None:
        while not stop.is_set():
            member.poll(0.1)

    threads = [threading.Thread(target=run, args=(m,), daemon=True) for m in members.values()]
    for t in threads:
        t.start()
    try:

        def settled() -> bool:
            with lock:
                gens = {assigned[n][-1][1] for n in names if n in assigned}
                if len(gens) != 1 or len(assigned) != 3:
                    return False
            leaders = [n for n, m in members.items() if m.is_leader]
            return len(leaders) == 1 and all(m.assignment is not None for m in members.values())

        wait_for(settled, what=lambda: f"one generation with one leader: {assigned}")
        leader = next(n for n, m in members.items() if m.is_leader)
        ids = {n: m.member_id for n, m in members.items()}
        with lock:
            # the leader saw every member's own metadata
            assert seen[leader] == sorted((ids[n], n.encode()) for n in names)
            for n in names:
                assert assigned[n][-1][0] == b"leader:" + leader.encode() + b"|" + n.encode()
        # the leader leaves: the others are revoked and one of them leads the next generation
        stop.set()
        for t in threads:
            t.join(10)
        members[leader].close()
        rest = [n for n in names if n != leader]
        stop.clear()
        threads = [threading.Thread(target=run, args=(members[n],), daemon=True) for n in rest]
        for t in threads:
            t.start()

        def re_elected() -> bool:
            leaders = [n for n in rest if members[n].is_leader]
            with lock:
                return len(leaders) == 1 and all(
                    assigned[n][-1][0].startswith(b"leader:" + leaders[0].encode()) for n in rest
                )

        wait_for(re_elected, what=lambda: f"a new leader among {rest}: {assigned}")
        with lock:
            assert all(revoked.get(n, 0) >= 1 for n in rest)
            new_leader = next(n for n in rest if members[n].is_leader)
            assert seen[new_leader] == sorted((members[n].member_id, n.encode()) for n in rest)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        for m in members.values():
            m.close()


def test_group_member_refuses_the_consumer_protocol_type_and_unknown_keys() -> None:
    from groupcoord.client.errors import ConfigError

    with pytest.raises(ConfigError, match="consumer"):
        GroupMember(
            {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"},
            protocol_type="consumer",
            protocols=[("v1", b"")],
            assign=lambda p, m: {},
        )
    with pytest.raises(ConfigError, match=r"no\.such"):
        GroupMember(
            {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "no.such": 1},
            protocol_type="x",
            protocols=[("v1", b"")],
            assign=lambda p, m: {},
        )
