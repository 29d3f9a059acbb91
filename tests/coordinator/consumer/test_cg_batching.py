"""Kafka 4.3's assignment batching (KIP-1263, KAFKA-20291): a group's target assignment is
computed at most once per ``group.consumer.assignment.interval.ms`` (or the group's
``consumer.assignment.interval.ms``) since the last computation finished; a heartbeat that bumps
the epoch inside the interval reconciles with the last target and leaves the group Assigning; the
first heartbeat after it computes. The time of the computation is the AssignmentTimestamp tag of
the TargetAssignmentMetadata record (KAFKA-20266), so a reloaded group keeps counting from it.
Manual clock; the harness checks every record's bytes and a full replay after each call."""

from __future__ import annotations

import pytest
from cg_harness import FOO, GROUP, Harness, PreparedAssignor, image, owned, record_kinds, tps

from groupcoord.coordinator.consumer.config import ConsumerGroupConfig, GroupOverrides
from groupcoord.coordinator.consumer.group import ConsumerGroupState
from groupcoord.coordinator.consumer.manager import ConsumerGroupManager
from groupcoord.coordinator.consumer.member import MemberState
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupTargetAssignmentMetadataValue,
    decode_record,
    encode_record,
    new_target_assignment_epoch_record,
)
from groupcoord.coordinator.consumer.target import can_compute_next_target

TOPICS = image(("foo", FOO, 6))


def _harness(interval: int, start: int = 1000) -> tuple[Harness, PreparedAssignor]:
    assignor = PreparedAssignor("range")
    h = Harness.make(
        TOPICS,
        assignor=assignor,
        config=ConsumerGroupConfig(assignors=("range",), assignment_interval_ms=interval),
    )
    h.now = start
    return h, assignor


def _metadata_values(h: Harness) -> list[ConsumerGroupTargetAssignmentMetadataValue]:
    out = []
    for record in h.last.records if h.last else ():
        if isinstance(record.value, ConsumerGroupTargetAssignmentMetadataValue):
            out.append(record.value)
    return out


def test_no_previous_timestamp_computes_at_once() -> None:
    """GMMT.testCanComputeNextTargetAssignmentWithNoPreviousAssignmentTimestamp."""
    assert can_compute_next_target(0, 1000, 0)


def test_zero_interval_computes_at_once() -> None:
    """GMMT.testCanComputeNextTargetAssignmentWithZeroAssignmentIntervalMs: also before the last
    computation (a wall clock stepped back)."""
    assert can_compute_next_target(1_000_000, 0, 0)
    assert can_compute_next_target(1_000_000, 0, 999_999)
    assert can_compute_next_target(1_000_000, 0, 1_000_000)


def test_interval_must_elapse_since_the_last_computation() -> None:
    """GMMT.testCanComputeNextTargetAssignment."""
    assert not can_compute_next_target(1_000_000, 5000, 0)
    assert not can_compute_next_target(1_000_000, 5000, 999_999)
    assert not can_compute_next_target(1_000_000, 5000, 1_000_000)
    assert not can_compute_next_target(1_000_000, 5000, 1_004_999)
    assert can_compute_next_target(1_000_000, 5000, 1_005_000)
    assert can_compute_next_target(1_000_000, 5000, 1_007_500)


def test_a_join_inside_the_interval_gets_the_last_target_and_the_next_heartbeat_computes() -> None:
    """GMMT.testConsumerGroupAssignmentInterval (interval 5000 ms). Our first epoch is 1 where
    4.3's is 2 (KAFKA-20268, group epochs starting at 1 for the assignment offload, not taken)."""
    h, assignor = _harness(5000)
    assignor.prepared = {"m1": tps(foo=range(6))}
    r1 = h.join("m1", server_assignor="range")
    assert (r1.member_epoch, r1.assignment) == (1, tps(foo=range(6)))
    assert record_kinds(h.last.records if h.last else ()) == ["R5(m1)", "R3", "R7(m1)", "R6", "R8(m1)"]
    assert _metadata_values(h) == [
        ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=1, assignment_timestamp=1000)
    ]

    # Just before the interval: member 2 joins and gets the last target (nothing) at epoch 1.
    h.now += 4995
    assignor.prepared = {"m1": tps(foo=(0, 1, 2)), "m2": tps(foo=(3, 4, 5))}
    calls = len(assignor.calls)
    r2 = h.join("m2", server_assignor="range")
    assert (r2.error_code, r2.member_epoch, r2.assignment) == (0, 1, {})
    assert record_kinds(h.last.records if h.last else ()) == ["R5(m2)", "R3", "R8(m2)"]
    assert len(assignor.calls) == calls  # the assignor did not run
    m2 = h.group.members["m2"]
    assert (m2.state, m2.member_epoch, m2.previous_member_epoch) == (MemberState.STABLE, 1, 0)
    assert (h.group.group_epoch, h.group.assignment_epoch) == (2, 1)
    assert h.group.state is ConsumerGroupState.ASSIGNING

    # The interval has passed: member 2's next heartbeat computes the target at epoch 2.
    h.now += 10
    r3 = h.heartbeat(member_id="m2", member_epoch=1)
    assert (r3.error_code, r3.member_epoch, r3.assignment) == (0, 2, None)
    assert record_kinds(h.last.records if h.last else ()) == ["R7(m1)", "R7(m2)", "R6", "R8(m2)"]
    assert _metadata_values(h) == [
        ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=2, assignment_timestamp=6005)
    ]
    m2 = h.group.members["m2"]
    assert (m2.state, m2.member_epoch, m2.previous_member_epoch) == (MemberState.UNRELEASED_PARTITIONS, 2, 1)
    assert h.group.state is ConsumerGroupState.RECONCILING

    # Member 1 revokes, member 2 gets the released partitions: the group is Stable at epoch 2.
    r4 = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(tps(foo=range(6))))
    assert (r4.member_epoch, r4.assignment) == (1, tps(foo=(0, 1, 2)))
    r5 = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(tps(foo=(0, 1, 2))))
    assert r5.member_epoch == 2
    r6 = h.heartbeat(member_id="m2", member_epoch=2)
    assert (r6.member_epoch, r6.assignment) == (2, tps(foo=(3, 4, 5)))
    assert h.group.state is ConsumerGroupState.STABLE


def test_interval_zero_computes_on_every_bump_as_kafka_4_1() -> None:
    """The same joins with batching off (interval 0, how Kafka 4.3 runs its request tests): the
    second join computes the target at once."""
    h, assignor = _harness(0)
    assignor.prepared = {"m1": tps(foo=range(6))}
    h.join("m1", server_assignor="range")
    h.now += 4995
    assignor.prepared = {"m1": tps(foo=(0, 1, 2)), "m2": tps(foo=(3, 4, 5))}
    r2 = h.join("m2", server_assignor="range")
    assert (r2.member_epoch, r2.assignment) == (2, {})
    assert record_kinds(h.last.records if h.last else ()) == [
        "R5(m2)",
        "R3",
        "R7(m1)",
        "R7(m2)",
        "R6",
        "R8(m2)",
    ]
    assert h.group.members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    assert (h.group.group_epoch, h.group.assignment_epoch) == (2, 2)


def test_many_joins_inside_one_interval_cost_one_computation() -> None:
    """The point of KIP-1263 (the 1,000-member storm of docs/benchmarks.md): twenty joins 10 ms
    apart run the assignor twice, for the first join and for the first heartbeat past the
    interval, which takes all twenty in one target."""
    h, assignor = _harness(1000)
    for i in range(20):
        assignor.prepared = {f"m{j}": {} for j in range(i + 1)}
        h.join(f"m{i}", server_assignor="range")
        h.now += 10
    assert len(assignor.calls) == 1
    assert (h.group.group_epoch, h.group.assignment_epoch) == (20, 1)
    h.now = 1000 + 1000
    assignor.prepared = {f"m{j}": tps(foo=(j,)) if j < 6 else {} for j in range(20)}
    r = h.heartbeat(member_id="m7", member_epoch=1)
    assert r.member_epoch == 20
    assert len(assignor.calls) == 2 and set(assignor.calls[-1].members) == {f"m{j}" for j in range(20)}
    assert h.group.assignment_epoch == 20 and h.group.assignment_timestamp == 2000


def test_group_override_of_the_interval() -> None:
    """GMMT.testDynamicBrokerAndGroupConfigs (assignment interval): the group's
    ``consumer.assignment.interval.ms`` wins over the broker's, and its removal restores it."""
    h, assignor = _harness(5000)
    assert h.manager.assignment_interval_ms(GROUP) == 5000
    h.manager.set_group_overrides(GROUP, GroupOverrides(session_timeout_ms=50_000))
    assert h.manager.assignment_interval_ms(GROUP) == 5000
    h.manager.set_group_overrides(GROUP, GroupOverrides(assignment_interval_ms=0))
    assert h.manager.assignment_interval_ms(GROUP) == 0
    assert h.manager.assignment_interval_ms("other") == 5000
    assignor.prepared = {"m1": tps(foo=range(6))}
    h.join("m1", server_assignor="range")
    h.now += 10
    assignor.prepared = {"m1": tps(foo=(0, 1, 2)), "m2": tps(foo=(3, 4, 5))}
    assert h.join("m2", server_assignor="range").member_epoch == 2  # computed at once
    h.manager.set_group_overrides(GROUP, None)
    assert h.manager.assignment_interval_ms(GROUP) == 5000
    h.now += 10
    assert h.join("m3", server_assignor="range").member_epoch == 2  # batched again
    assert (h.group.group_epoch, h.group.assignment_epoch) == (3, 2)


def test_a_static_member_replaced_inside_the_interval_gets_the_old_target() -> None:
    """``fromLastTargetAssignment`` looks the target up by instance id: a static member that
    rejoins under a new id while a computation is pending gets its predecessor's target."""
    h, assignor = _harness(5000)
    assignor.prepared = {"s1": tps(foo=range(6))}
    h.join("s1", instance_id="i1", server_assignor="range")
    h.now += 10
    h.join("m2", server_assignor="range")  # bumps to 2, batched
    h.heartbeat(member_id="s1", member_epoch=-2, instance_id="i1")
    r = h.join("s1b", instance_id="i1", server_assignor="range")
    assert (r.error_code, r.member_epoch, r.assignment) == (0, 1, tps(foo=range(6)))
    assert h.group.static_members["i1"] == "s1b" and h.group.state is ConsumerGroupState.ASSIGNING


@pytest.mark.parametrize("interval", [0, 5000])
def test_the_timestamp_survives_a_reload(interval: int) -> None:
    """The AssignmentTimestamp is in the log (KAFKA-20266): a manager loaded from it counts the
    interval from the same computation; with batching off it does not matter."""
    h, assignor = _harness(interval)
    assignor.prepared = {"m1": tps(foo=range(6))}
    h.join("m1", server_assignor="range")
    loaded = ConsumerGroupManager(
        config=ConsumerGroupConfig(assignors=("range",), assignment_interval_ms=interval),
        assignors={"range": assignor},
        image=TOPICS,
    )
    for record in h.log:
        loaded.replay(record)
    loaded.on_loaded(h.now)
    assert loaded.groups[GROUP].assignment_timestamp == 1000
    h.manager = loaded
    h.now += 100
    assert h.join("m2", server_assignor="range").member_epoch == (2 if interval == 0 else 1)


def test_metadata_record_bytes_with_and_without_the_timestamp() -> None:
    """ConsumerGroupTargetAssignmentMetadataValue v0: tagged field 0 AssignmentTimestamp int64,
    written only when not 0 (a 4.1 record and an upgraded classic group's have none)."""
    key, value = encode_record(new_target_assignment_epoch_record("grp", 7, 1_700_000_000_123))
    stamp = (1_700_000_000_123).to_bytes(8, "big")
    assert value == b"\x00\x00" + (7).to_bytes(4, "big") + b"\x01\x00\x08" + stamp
    decoded = decode_record(key, value)
    assert decoded is not None and decoded.value == ConsumerGroupTargetAssignmentMetadataValue(
        assignment_epoch=7, assignment_timestamp=1_700_000_000_123
    )
    key, value = encode_record(new_target_assignment_epoch_record("grp", 7))
    assert value == b"\x00\x00" + (7).to_bytes(4, "big") + b"\x00"
    decoded = decode_record(key, value)
    assert decoded is not None and decoded.value == ConsumerGroupTargetAssignmentMetadataValue(
        assignment_epoch=7, assignment_timestamp=0
    )
