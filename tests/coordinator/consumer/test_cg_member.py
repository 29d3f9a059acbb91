"""A consumer group member: Kafka 4.1's ``ConsumerGroupMemberTest``
(``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/modern/consumer/``)."""

from __future__ import annotations

from cg_harness import BAR, FOO, GROUP, tps

from groupcoord.coordinator.consumer.manager import ConsumerGroupManager
from groupcoord.coordinator.consumer.member import (
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
    MemberType,
)
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupRecord,
)


def test_new_member_defaults() -> None:
    """ConsumerGroupMemberTest.testNewMember: epoch 0, previous -1, STABLE, nothing assigned."""
    m = ConsumerGroupMember(member_id="member-id")
    assert (m.member_epoch, m.previous_member_epoch, m.state) == (0, -1, MemberState.STABLE)
    assert (m.instance_id, m.rack_id, m.rebalance_timeout_ms, m.client_id, m.client_host) == (
        None,
        None,
        -1,
        "",
        "",
    )
    assert (m.subscribed_topic_names, m.subscribed_topic_regex, m.server_assignor_name) == (
        frozenset(),
        "",
        None,
    )
    assert (m.assigned_partitions, m.partitions_pending_revocation, m.member_type) == (
        {},
        {},
        MemberType.CONSUMER,
    )


def test_equality_is_field_by_field() -> None:
    """ConsumerGroupMemberTest.testEquals: the heartbeat writes R5 only when a field changed."""
    a = ConsumerGroupMember(member_id="m", client_id="c", assigned_partitions=tps(foo=(1,)))
    assert a == ConsumerGroupMember(member_id="m", client_id="c", assigned_partitions=tps(foo=(1,)))
    assert a != a.replace(client_host="/h")


def test_update_member_from_heartbeat_fields() -> None:
    """ConsumerGroupMemberTest.testUpdateMember: absent fields keep the stored value."""
    m = ConsumerGroupMember(
        member_id="member-id",
        member_epoch=10,
        previous_member_epoch=9,
        instance_id="instance-id",
        rack_id="rack-id",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=frozenset({"foo", "bar"}),
        subscribed_topic_regex="regex",
        server_assignor_name="range",
        assigned_partitions=tps(foo=(1, 2, 3)),
        partitions_pending_revocation=tps(bar=(4, 5, 6)),
    )
    assert m.maybe_update() == m
    u = m.maybe_update(
        instance_id="new-instance-id",
        rack_id="new-rack-id",
        rebalance_timeout_ms=6000,
        server_assignor_name="new-assignor",
        subscribed_topic_names=["zar"],
        subscribed_topic_regex="new-regex",
    )
    assert (u.instance_id, u.rack_id, u.rebalance_timeout_ms, u.server_assignor_name) == (
        "new-instance-id",
        "new-rack-id",
        6000,
        "new-assignor",
    )
    assert (u.subscribed_topic_names, u.subscribed_topic_regex) == (frozenset({"zar"}), "new-regex")
    assert (u.assigned_partitions, u.member_epoch) == (m.assigned_partitions, 10)


def test_update_with_member_metadata_and_current_assignment_values() -> None:
    """ConsumerGroupMemberTest.testUpdateWithConsumerGroupMemberMetadataValue and
    ...CurrentMemberAssignmentValue, through replay."""
    manager = ConsumerGroupManager()
    manager.replay(
        ConsumerGroupRecord(
            key=ConsumerGroupMemberMetadataKey(group_id=GROUP, member_id="m"),
            value=ConsumerGroupMemberMetadataValue(
                instance_id="instance-id",
                rack_id="rack-id",
                client_id="client-id",
                client_host="host-id",
                subscribed_topic_names=("foo", "bar"),
                subscribed_topic_regex="",
                rebalance_timeout_ms=1000,
                server_assignor="range",
                classic_member_metadata=ClassicMemberMetadata(session_timeout_ms=1, supported_protocols=()),
            ),
        )
    )
    manager.replay(
        ConsumerGroupRecord(
            key=ConsumerGroupCurrentMemberAssignmentKey(group_id=GROUP, member_id="m"),
            value=ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=10,
                previous_member_epoch=9,
                state=1,
                assigned_partitions=tps(foo=(0, 1)),
                partitions_pending_revocation=tps(bar=(2,)),
            ),
        )
    )
    m = manager.groups[GROUP].members["m"]
    assert (m.instance_id, m.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms) == (
        "instance-id",
        "rack-id",
        "client-id",
        "host-id",
        1000,
    )
    assert (m.subscribed_topic_names, m.server_assignor_name, m.member_type) == (
        frozenset({"foo", "bar"}),
        "range",
        MemberType.CLASSIC,
    )
    assert (m.member_epoch, m.previous_member_epoch, m.state) == (10, 9, MemberState.UNREVOKED_PARTITIONS)
    assert (m.assigned_partitions, m.partitions_pending_revocation) == (
        {FOO: frozenset({0, 1})},
        {BAR: frozenset({2})},
    )


def test_is_reconciled_to() -> None:
    """ModernGroupMember.isReconciledTo: STABLE at the assignment epoch."""
    m = ConsumerGroupMember(member_id="m", member_epoch=5)
    assert m.is_reconciled_to(5) and not m.is_reconciled_to(6)
    assert not m.replace(state=MemberState.UNRELEASED_PARTITIONS).is_reconciled_to(5)


def test_unknown_state_value() -> None:
    """MemberState.fromValue: an unknown int8 is UNKNOWN (value 127)."""
    assert MemberState.from_value(2) is MemberState.UNRELEASED_PARTITIONS
    assert MemberState.from_value(42) is MemberState.UNKNOWN and int(MemberState.UNKNOWN) == 127
