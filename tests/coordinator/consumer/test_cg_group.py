"""The consumer group model: Kafka 4.1's ``ConsumerGroupTest`` and ``ConsumerGroupMemberTest``
(``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/modern/consumer/``), the
states derived from replayed records (GMMT.testConsumerGroupStates), the offset checks the
offsets manager calls, and ConsumerGroupDescribe."""

from __future__ import annotations

import uuid

import pytest
from cg_harness import BAR, FOO, GROUP, Harness, image, tps

from groupcoord.coordinator.consumer.api import ConsumerGroupDescribeRequest, DescribedTopicPartitions
from groupcoord.coordinator.consumer.assignment import SubscriptionType
from groupcoord.coordinator.consumer.group import ConsumerGroup, ConsumerGroupState, subscription_type
from groupcoord.coordinator.consumer.manager import ConsumerGroupManager
from groupcoord.coordinator.consumer.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from groupcoord.coordinator.consumer.records import (
    new_current_assignment_record,
    new_current_assignment_tombstone,
    new_group_epoch_record,
    new_group_epoch_tombstone,
    new_member_subscription_record,
    new_member_subscription_tombstone,
    new_target_assignment_epoch_record,
    new_target_assignment_epoch_tombstone,
    new_target_assignment_record,
)
from groupcoord.errors import ErrorCode, KafkaError

HOMO, HETERO = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS


def state(group: ConsumerGroup) -> ConsumerGroupState:
    return group.state


def test_group_states_follow_replayed_records() -> None:
    """GMMT.testConsumerGroupStates: Empty, Assigning, Reconciling, Stable."""
    manager = ConsumerGroupManager()
    m = ConsumerGroupMember(member_id="m1", subscribed_topic_names=frozenset({"foo"}))
    manager.replay(new_member_subscription_record(GROUP, m))
    manager.replay(new_group_epoch_record(GROUP, 11, 0))
    group = manager.groups[GROUP]
    assert state(group) is ConsumerGroupState.ASSIGNING
    manager.replay(new_target_assignment_record(GROUP, "m1", tps(foo=(0, 1))))
    manager.replay(new_target_assignment_epoch_record(GROUP, 11))
    assert state(group) is ConsumerGroupState.RECONCILING
    unrevoked = m.replace(member_epoch=11, previous_member_epoch=10, state=MemberState.UNREVOKED_PARTITIONS)
    manager.replay(new_current_assignment_record(GROUP, unrevoked))
    assert state(group) is ConsumerGroupState.RECONCILING
    manager.replay(new_current_assignment_record(GROUP, unrevoked.replace(state=MemberState.STABLE)))
    assert state(group) is ConsumerGroupState.STABLE
    # the deletion sequence empties and removes the group
    for record in (
        new_current_assignment_tombstone(GROUP, "m1"),
        new_target_assignment_record(GROUP, "m1", {}),
    ):
        manager.replay(record)
    assert group.members["m1"].member_epoch == -1
    manager.replay(new_member_subscription_tombstone(GROUP, "m1"))
    assert state(group) is ConsumerGroupState.EMPTY
    manager.replay(new_target_assignment_epoch_tombstone(GROUP))
    assert group.assignment_epoch == -1
    manager.replay(new_group_epoch_tombstone(GROUP))
    assert GROUP not in manager.groups


def test_partition_epochs_follow_members() -> None:
    """ConsumerGroupTest.testUpdatingMemberUpdatesPartitionEpoch / testDeletingMemberRemovesPartitionEpoch."""
    group = ConsumerGroup(GROUP)
    m = ConsumerGroupMember(
        member_id="m1",
        member_epoch=10,
        assigned_partitions=tps(foo=(1, 2)),
        partitions_pending_revocation=tps(bar=(3,)),
    )
    group.update_member(m)
    assert [group.current_partition_epoch(FOO, 1), group.current_partition_epoch(BAR, 3)] == [10, 10]
    assert group.current_partition_epoch(FOO, 0) == -1
    group.update_member(
        m.replace(member_epoch=11, assigned_partitions=tps(foo=(2,)), partitions_pending_revocation={})
    )
    assert [group.current_partition_epoch(FOO, 1), group.current_partition_epoch(FOO, 2)] == [-1, 11]
    assert group.current_partition_epoch(BAR, 3) == -1
    group.remove_member("m1")
    assert group.current_partition_epoch(FOO, 2) == -1


def test_waiting_on_unreleased_partition() -> None:
    """ConsumerGroupTest.testWaitingOnUnreleasedPartition."""
    group = ConsumerGroup(GROUP)
    group.update_member(
        ConsumerGroupMember(member_id="m1", member_epoch=10, assigned_partitions=tps(foo=(0,)))
    )
    m2 = ConsumerGroupMember(member_id="m2", member_epoch=10, state=MemberState.UNRELEASED_PARTITIONS)
    group.update_member(m2)
    group.set_target("m2", tps(foo=(0,)))
    assert group.waiting_on_unreleased_partition(m2)
    group.update_member(ConsumerGroupMember(member_id="m1", member_epoch=10))
    assert not group.waiting_on_unreleased_partition(m2)


def test_static_members_index() -> None:
    """ConsumerGroupTest.testGetStaticMemberByInstanceId / testRemoveStaticMember."""
    group = ConsumerGroup(GROUP)
    group.update_member(ConsumerGroupMember(member_id="m1", instance_id="i1"))
    assert group.static_member("i1") == group.members["m1"]
    assert group.static_member("i2") is None
    group.remove_member("m1")
    assert group.static_member("i1") is None and group.static_members == {}


def test_preferred_server_assignor() -> None:
    """ConsumerGroupTest.testPreferredServerAssignor: the most used, counting the update; ties
    (HashMap order in Kafka) go to the one configured first."""
    group = ConsumerGroup(GROUP)
    group.update_member(ConsumerGroupMember(member_id="m1", server_assignor_name="range"))
    group.update_member(ConsumerGroupMember(member_id="m2", server_assignor_name="range"))
    group.update_member(ConsumerGroupMember(member_id="m3", server_assignor_name="uniform"))
    assert group.preferred_server_assignor(None, None, ("uniform", "range")) == "range"
    m1 = group.members["m1"]
    assert group.preferred_server_assignor(
        m1, m1.replace(server_assignor_name="uniform"), ("uniform", "range")
    ) == ("uniform")
    assert (
        group.preferred_server_assignor(m1, m1.replace(server_assignor_name=None), ("uniform", "range"))
        == "uniform"
    )
    assert ConsumerGroup("g").preferred_server_assignor(None, None, ("uniform",)) is None


@pytest.mark.parametrize(
    ("regexes", "names", "by_regex", "members", "expected"),
    [
        ({}, {}, {}, 0, HOMO),
        ({}, {"foo": 5}, {}, 5, HOMO),
        ({}, {"foo": 4, "bar": 1}, {}, 5, HETERO),
        ({"foo*": 5}, {}, {"foo": 1}, 5, HOMO),
        ({"foo*": 5}, {}, {"foo": 1, "food": 1}, 5, HOMO),
        ({"foo*": 5}, {"foo": 1}, {"foo": 1}, 5, HETERO),
        ({"foo*": 5}, {"bar": 1}, {"foo": 1}, 5, HETERO),
        ({"foo*": 4, "bar*": 1}, {}, {"foo": 1, "bar": 1}, 5, HETERO),
    ],
)
def test_subscription_type(
    regexes: dict[str, int],
    names: dict[str, int],
    by_regex: dict[str, int],
    members: int,
    expected: SubscriptionType,
) -> None:
    """ConsumerGroupTest.testSubscriptionType, case by case."""
    assert subscription_type(regexes, names, by_regex, members) is expected


def _group_with(member: ConsumerGroupMember) -> ConsumerGroup:
    group = ConsumerGroup(GROUP)
    group.update_member(member)
    return group


def test_validate_offset_commit() -> None:
    """ConsumerGroupTest.testValidateOffsetCommit (and OffsetMetadataManagerTest's stale-epoch cases)."""
    empty = ConsumerGroup(GROUP)
    empty.validate_offset_commit("", None, -1, transactional=False, api_version=9)  # admin, empty group
    consumer = _group_with(ConsumerGroupMember(member_id="m1", member_epoch=10))
    cases = [
        (("", None, -1, False, 9), ErrorCode.UNKNOWN_MEMBER_ID),  # admin commit to a non-empty group
        (("unknown", None, 10, False, 9), ErrorCode.UNKNOWN_MEMBER_ID),
        (("m1", None, 10, False, 8), ErrorCode.UNSUPPORTED_VERSION),
        (("m1", None, 9, False, 9), ErrorCode.STALE_MEMBER_EPOCH),
        (("m1", None, 11, False, 9), ErrorCode.STALE_MEMBER_EPOCH),
    ]
    for (mid, iid, epoch, txn, version), code in cases:
        with pytest.raises(KafkaError) as info:
            consumer.validate_offset_commit(mid, iid, epoch, transactional=txn, api_version=version)
        assert info.value.code is code, (mid, epoch, version)
    consumer.validate_offset_commit("m1", None, 10, transactional=False, api_version=9)
    consumer.validate_offset_commit("m1", None, 10, transactional=True, api_version=3)  # no version check
    consumer.validate_offset_commit("", None, -1, transactional=True, api_version=3)  # txn without member
    classic = _group_with(
        ConsumerGroupMember(
            member_id="c1",
            member_epoch=10,
            classic_member_metadata=ClassicMemberMetadata(session_timeout_ms=1),
        )
    )
    with pytest.raises(KafkaError) as info:
        classic.validate_offset_commit("c1", None, 9, transactional=False, api_version=7)
    assert info.value.code is ErrorCode.ILLEGAL_GENERATION


def test_validate_offset_fetch() -> None:
    """ConsumerGroupTest.testValidateOffsetFetch (live state; the read-offset case is the shard's)."""
    group = _group_with(ConsumerGroupMember(member_id="m1", member_epoch=10))
    group.validate_offset_fetch(None, -1)
    for mid, epoch, code in [
        ("unknown", 10, ErrorCode.UNKNOWN_MEMBER_ID),
        ("m1", 9, ErrorCode.STALE_MEMBER_EPOCH),
    ]:
        with pytest.raises(KafkaError) as info:
            group.validate_offset_fetch(mid, epoch)
        assert info.value.code is code
    group.validate_offset_fetch("m1", 10)


def test_validate_delete_group() -> None:
    """ConsumerGroupTest.testValidateDeleteGroup: only an Empty group."""
    ConsumerGroup(GROUP).validate_delete_group()
    with pytest.raises(KafkaError) as info:
        _group_with(ConsumerGroupMember(member_id="m1")).validate_delete_group()
    assert info.value.code is ErrorCode.NON_EMPTY_GROUP


def test_manager_offset_checks_and_delete() -> None:
    """The offsets manager's entry points: False for a group that is not a consumer group; the
    group's tombstones in Kafka's DeleteGroups order (ConsumerGroupTest.testCreateGroupTombstoneRecords)."""
    h = Harness.make(image(("foo", FOO, 2)))
    assert h.manager.validate_offset_commit("nope", "m", None, 1) is False
    h.join("m1")
    assert h.manager.validate_offset_commit(GROUP, "m1", None, 1) is True
    with pytest.raises(KafkaError) as info:
        h.manager.validate_offset_fetch(GROUP, "m1", 7)
    assert info.value.code is ErrorCode.STALE_MEMBER_EPOCH
    with pytest.raises(KafkaError):
        h.manager.delete_group(GROUP)
    h.heartbeat(member_id="m1", member_epoch=-1)
    records = h.manager.delete_group(GROUP)
    names = [type(r.key).__name__.removeprefix("ConsumerGroup").removesuffix("Key") for r in records]
    assert names == ["TargetAssignmentMetadata", "PartitionMetadata", "Metadata"]
    assert all(r.value is None for r in records)
    for r in records:
        h.manager.replay(r)
    assert GROUP not in h.manager.groups


def test_describe() -> None:
    """GMMT.testConsumerGroupDescribeNoErrors / ...WithErrors and
    ConsumerGroupTest.testAsDescribedGroup: errors per group, state, epochs, assignor, members
    with topic names; partitions of unknown topics are left out."""
    gone = uuid.UUID(int=99)
    h = Harness.make(image(("foo", FOO, 2), ("bar", BAR, 1)))
    h.join(
        "m1", ("foo", "bar"), server_assignor="range", client_id="cid", client_host="/10.0.0.1", rack_id="r1"
    )
    response = h.manager.consumer_group_describe(
        ConsumerGroupDescribeRequest(group_ids=(GROUP, "missing", ""))
    )
    described, missing, empty = response.groups
    assert (missing.error_code, missing.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group missing not found.",
    )
    assert (empty.group_id, empty.error_code) == ("", ErrorCode.INVALID_GROUP_ID)
    assert (
        described.group_state,
        described.group_epoch,
        described.assignment_epoch,
        described.assignor_name,
    ) == (
        "Stable",
        1,
        1,
        "range",
    )
    (m,) = described.members
    assert (m.member_id, m.member_epoch, m.client_id, m.client_host, m.rack_id, m.member_type) == (
        "m1",
        1,
        "cid",
        "/10.0.0.1",
        "r1",
        1,
    )
    assert m.subscribed_topic_names == ("bar", "foo") and m.subscribed_topic_regex is None
    assert (
        m.assignment
        == m.target_assignment
        == (
            DescribedTopicPartitions(topic_id=BAR, topic_name="bar", partitions=(0,)),
            DescribedTopicPartitions(topic_id=FOO, topic_name="foo", partitions=(0, 1)),
        )
    )
    group = h.manager.groups[GROUP]
    group.update_member(
        group.members["m1"].replace(
            assigned_partitions={**group.members["m1"].assigned_partitions, gone: frozenset({0})}
        )
    )
    (again,) = h.manager.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=(GROUP,))).groups
    assert [t.topic_name for t in again.members[0].assignment] == ["bar", "foo"]


def test_describe_of_a_group_of_another_type() -> None:
    """A group of another type answers "is not a consumer group" (reference §1.6; GMMT's
    testConsumerGroupDescribeOnShareGroup / ...OnStreamsGroup make the same check)."""
    manager = ConsumerGroupManager(is_other_group_type=lambda gid: gid == "classic")
    (g,) = manager.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=("classic",))).groups
    assert (g.error_code, g.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group classic is not a consumer group.",
    )
