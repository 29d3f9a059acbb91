"""The consumer-protocol member core against the coordinator core (``cg848_world``): a regex
subscription that follows topic creation, and a coordinator restart -- NOT_COORDINATOR while the
broker is away, COORDINATOR_LOAD_IN_PROGRESS while the new one loads the log, then the same
members with the same ids, epochs, partitions and committed offsets; and a member that stayed
away past its session after the restart is fenced, loses its partitions and rejoins at epoch 0.

Kafka's tests: ``GroupMetadataManagerTest`` (group-coordinator/src/test/.../group/) for the
coordinator, ``ConsumerHeartbeatRequestManagerTest`` and ``ConsumerMembershipManagerTest``
(clients/src/test/.../consumer/internals/) for the member.
"""

from __future__ import annotations

from cg848_world import GROUP, Member, World848

from groupcoord.client import messages as m
from groupcoord.client.consumer_group_events import CallbackMethod
from groupcoord.client.consumer_group_states import ConsumerGroupMemberState as S
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode
from groupcoord.runtime.in_process import call_coordinator

LOST = CallbackMethod.ON_PARTITIONS_LOST
ASSIGNED = CallbackMethod.ON_PARTITIONS_ASSIGNED


def _tps(topic: str, n: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for p in range(n))


def _group_epoch(w: World848) -> int:
    g = w.coordinator.consumer_group(GROUP)
    assert g is not None
    return g.group_epoch


def _committed(w: World848) -> dict[TopicPartition, int]:
    """What the coordinator answers an OffsetFetch of every committed offset (an admin fetch)."""
    got: list[m.OffsetFetchResponse] = []
    call_coordinator(
        w.coordinator, m.offset_fetch_request(group_id=GROUP, partitions=None), got.append, client_id="t"
    )
    w.coordinator.poll()
    (resp,) = got
    assert m.fetch_error(resp) is ErrorCode.NONE
    return {tp: f.offset for tp, f in m.fetched_offsets(resp) if f.offset >= 0}


def test_a_regex_subscription_takes_up_a_topic_created_later() -> None:
    """``subscribe_pattern`` sends ``SubscribedTopicRegex``; the coordinator resolves it against
    the topics image (never ``audit``), and when a matching topic is created the group epoch moves
    and the new partitions are shared out, incrementally, each owned once
    (GroupMetadataManagerTest.testConsumerGroupMemberJoinsWithRegex and
    testConsumerGroupRefreshesRegexOnMetadataChange... style; ConsumerMembershipManagerTest
    .testReconcileNewPartitionsAssignedAndRevoked for the member)."""
    w = World848({"orders-a": 2, "audit": 1})
    w.after_turn = w.owners
    a = w.add("a", [])
    a.core.subscribe_pattern("orders-.*")
    w.run(15_000)
    assert a.core.state is S.STABLE
    assert a.owned() == _tps("orders-a", 2)
    g = w.coordinator.consumer_group(GROUP)
    assert g is not None and g.members["a"].subscribed_topic_regex == "orders-.*"
    b = w.add("b", [])
    b.core.subscribe_pattern("orders-.*")
    w.run(20_000)
    assert a.owned() | b.owned() == _tps("orders-a", 2) and len(a.owned()) == len(b.owned()) == 1
    epoch = _group_epoch(w)
    a_before, b_before = a.owned(), b.owned()
    marks = {x.name: len(x.timeline) for x in (a, b)}

    w.create_topic("orders-b", 2)
    w.create_topic("audit-2", 1)
    w.run(30_000)

    assert _group_epoch(w) > epoch
    wanted = _tps("orders-a", 2) | _tps("orders-b", 2)
    assert set(w.owners()) == wanted  # audit and audit-2 never
    assert len(a.owned()) == len(b.owned()) == 2
    # incremental: what each owned stays with it, only the new topic's partitions are added
    assert a_before <= a.owned() and b_before <= b.owned()
    assert all(x.core.state is S.STABLE for x in (a, b))
    for x in (a, b):
        callbacks = [d for _, k, d in x.timeline[marks[x.name] :] if k == "cb"]
        assert callbacks and all(method is ASSIGNED for method, _ in callbacks), callbacks


def _committed_group(w: World848) -> tuple[Member, Member, dict[TopicPartition, int]]:
    a = w.add("a", ["foo", "bar"], **{"enable.auto.commit": True, "auto.commit.interval.ms": 600_000})
    b = w.add("b", ["foo", "bar"], **{"enable.auto.commit": True, "auto.commit.interval.ms": 600_000})
    w.run(30_000)
    assert set(w.owners()) == w.all_partitions
    offsets = {}
    for x in (a, b):
        positions = {tp: OffsetAndMetadata(offset=10 * tp.partition + 7) for tp in x.owned()}
        x.core.update_positions(positions)
        x.core.commit(None, w.now())
        offsets.update({tp: om.offset for tp, om in positions.items()})
    w.run(1_000)
    assert _committed(w) == offsets
    return a, b, offsets


def test_a_coordinator_restart_keeps_members_epochs_partitions_and_offsets() -> None:
    """While the broker is away every heartbeat is answered NOT_COORDINATOR: the member forgets
    the coordinator, finds it again and heartbeats at once (no backoff); while the new coordinator
    loads the partition, COORDINATOR_LOAD_IN_PROGRESS: retried after backoff, coordinator kept.
    Once loaded from the log, the members go on with the same member id and epoch -- their first
    heartbeat after the errors is a full one (owned partitions sent) -- and nothing is revoked or
    lost, no epoch moves, and every committed offset is there
    (ConsumerHeartbeatRequestManagerTest.testHeartbeatResponseOnErrorHandling for NOT_COORDINATOR
    and COORDINATOR_LOAD_IN_PROGRESS, testHeartbeatState... full request after a failure;
    GroupMetadataManagerTest.testOnLoaded / testConsumerGroupHeartbeatWithStableMember... the
    loaded group answering its members)."""
    w = World848({"foo": 6, "bar": 3})
    w.after_turn = w.owners
    a, b, offsets = _committed_group(w)
    before = {x.name: (x.core.member_id, x.core.member_epoch, x.owned()) for x in (a, b)}
    epoch = _group_epoch(w)
    marks = {x.name: len(x.timeline) for x in (a, b)}

    w.stop_coordinator()
    w.run(8_000)
    w.start_coordinator()
    w.run(4_000)
    assert w.finish_loading() > 0
    w.run(20_000)

    assert _group_epoch(w) == epoch
    assert _committed(w) == offsets
    for x in (a, b):
        assert (x.core.member_id, x.core.member_epoch, x.owned()) == before[x.name]
        assert x.core.state is S.STABLE
        after = x.timeline[marks[x.name] :]
        errors = [d[0] for _, k, d in after if k == "hb-resp" and d[0] is not ErrorCode.NONE]
        assert ErrorCode.NOT_COORDINATOR in errors and ErrorCode.COORDINATOR_LOAD_IN_PROGRESS in errors
        assert errors.index(ErrorCode.NOT_COORDINATOR) < errors.index(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        assert not [d for _, k, d in after if k == "cb"], "nothing revoked, lost or re-assigned"
        # every heartbeat kept the member's epoch; the first answered after the errors was full
        sent = [(i, d) for i, (_, k, d) in enumerate(after) if k == "hb"]
        assert {d[0] for _, d in sent} == {before[x.name][1]}
        ok = [i for i, (_, k, d) in enumerate(after) if k == "hb-resp" and d[0] is ErrorCode.NONE]
        first_ok_request = [d for i, d in sent if i < ok[0]][-1]
        assert first_ok_request[1] == before[x.name][2]


def test_a_member_away_past_its_session_after_a_restart_is_fenced_and_rejoins_at_epoch_zero() -> None:
    """The reloaded coordinator starts every member's session anew; one that does not heartbeat
    within it is removed (the epoch moves, its partitions go to the other member). When it comes
    back with its old epoch it is answered UNKNOWN_MEMBER_ID: it releases its partitions as lost
    (onPartitionsLost), rejoins with epoch 0 and the same member id, and the group shares the
    partitions again, each owned once (GroupMetadataManagerTest.testSessionTimeoutExpiration,
    testOnLoaded; ConsumerMembershipManagerTest.testFencingWhenStateIsStable;
    ConsumerHeartbeatRequestManagerTest ... UNKNOWN_MEMBER_ID)."""
    w = World848({"foo": 6, "bar": 3}, group_consumer_session_timeout_ms=45_000)
    a, b, offsets = _committed_group(w)
    a_owned = a.owned()
    epoch = _group_epoch(w)

    w.stop_coordinator()
    w.run(5_000)
    a.alive = False
    w.start_coordinator()
    w.finish_loading()
    w.run(60_000)  # past a's session, counted from the load
    assert _group_epoch(w) > epoch
    assert b.owned() == w.all_partitions
    assert _committed(w) == offsets

    # back, it still holds its partitions until its first answer (as a Kafka client that was cut
    # off does): the single-owner check cannot apply until then
    mark = len(a.timeline)
    a.alive = True
    w.run(60_000)
    after = a.timeline[mark:]
    answers = [d for _, k, d in after if k == "hb-resp"]
    assert answers[0][0] is ErrorCode.UNKNOWN_MEMBER_ID
    assert [d for _, k, d in after if k == "cb" and d[0] is LOST] == [(LOST, a_owned)]
    rejoin = [d for _, k, d in after if k == "hb"][1]
    assert rejoin == (0, frozenset())
    assert a.core.member_id == "a" and a.core.state is S.STABLE
    assert set(w.owners()) == w.all_partitions and a.owned() and b.owned()
