"""The target assignment builder on the cases of Kafka 4.1's ``TargetAssignmentBuilderTest``
(``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/modern/``): which members
get a TargetAssignmentMember record, what the assignor sees (subscribed topic ids from names and
resolved regexes, previous targets, a replaced static member's target), and the result."""

from __future__ import annotations

from cg_harness import BAR, FOO, ZAR, PreparedAssignor, image, tps

from groupcoord.coordinator.consumer.assignment import Assignment, SubscriptionType
from groupcoord.coordinator.consumer.group import ConsumerGroup, ResolvedRegularExpression
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.target import build_target_assignment

TOPICS = image(("foo", FOO, 6), ("bar", BAR, 6))
HOMO = SubscriptionType.HOMOGENEOUS


def group_of(*members: tuple[str, tuple[str, ...], Assignment]) -> ConsumerGroup:
    group = ConsumerGroup("my-group")
    for member_id, topics, target in members:
        group.update_member(
            ConsumerGroupMember(member_id=member_id, subscribed_topic_names=frozenset(topics))
        )
        group.set_target(member_id, target)
    return group


def test_empty_group() -> None:
    """TargetAssignmentBuilderTest.testEmpty."""
    result = build_target_assignment(ConsumerGroup("g"), PreparedAssignor("range"), TOPICS, HOMO)
    assert (dict(result.targets), result.changed) == ({}, ())


def test_unchanged_assignment_writes_no_member_record() -> None:
    """TargetAssignmentBuilderTest.testAssignmentHasNotChanged; names missing from the metadata
    (zar) are not subscribed ids."""
    a1, a2 = tps(foo=(1, 2, 3), bar=(1, 2, 3)), tps(foo=(4, 5), bar=(4, 5))
    group = group_of(("member-1", ("foo", "bar", "zar"), a1), ("member-2", ("foo", "bar", "zar"), a2))
    assignor = PreparedAssignor("range")
    assignor.prepared = {"member-1": a1, "member-2": a2}
    result = build_target_assignment(group, assignor, TOPICS, HOMO)
    assert result.changed == ()
    assert dict(result.targets) == {"member-1": a1, "member-2": a2}
    (spec,) = assignor.calls
    assert spec.members["member-1"].subscribed_topic_ids == {FOO, BAR}
    assert spec.members["member-1"].assignment == a1
    assert spec.is_partition_assigned(FOO, 4) and not spec.is_partition_assigned(FOO, 0)


def test_swapped_assignment_writes_both() -> None:
    """TargetAssignmentBuilderTest.testAssignmentSwapped."""
    a1, a2 = tps(foo=(1, 2, 3)), tps(foo=(4, 5))
    group = group_of(("member-1", ("foo",), a1), ("member-2", ("foo",), a2))
    assignor = PreparedAssignor("range")
    assignor.prepared = {"member-1": a2, "member-2": a1}
    result = build_target_assignment(group, assignor, TOPICS, HOMO)
    assert result.changed == (("member-1", a2), ("member-2", a1))


def test_new_member_is_added_and_always_gets_a_record() -> None:
    """TargetAssignmentBuilderTest.testNewMember: a member without a stored target gets a record
    even when its new target is empty."""
    group = group_of(("member-1", ("foo",), tps(foo=(0, 1, 2))))
    assignor = PreparedAssignor("range")
    assignor.prepared = {"member-1": tps(foo=(0, 1, 2))}
    new = ConsumerGroupMember(member_id="member-2", subscribed_topic_names=frozenset({"foo"}))
    result = build_target_assignment(group, assignor, TOPICS, HOMO, updated={"member-2": new})
    assert result.changed == (("member-2", {}),)


def test_updated_member_is_assigned_with_its_new_subscription() -> None:
    """TargetAssignmentBuilderTest.testUpdateMember / testPartialAssignmentUpdate."""
    group = group_of(("member-1", ("foo",), tps(foo=(0, 1, 2))), ("member-2", ("foo",), tps(foo=(3, 4, 5))))
    assignor = PreparedAssignor("range")
    assignor.prepared = {"member-1": tps(foo=(0, 1, 2), bar=(0, 1, 2)), "member-2": tps(foo=(3, 4, 5))}
    updated = group.members["member-1"].replace(subscribed_topic_names=frozenset({"foo", "bar"}))
    result = build_target_assignment(
        group, assignor, TOPICS, SubscriptionType.HETEROGENEOUS, updated={"member-1": updated}
    )
    assert result.changed == (("member-1", tps(foo=(0, 1, 2), bar=(0, 1, 2))),)
    assert assignor.calls[0].members["member-1"].subscribed_topic_ids == {FOO, BAR}


def test_deleted_member_is_not_given_to_the_assignor() -> None:
    """TargetAssignmentBuilderTest.testDeleteMember."""
    group = group_of(("member-1", ("foo",), tps(foo=(0, 1, 2))), ("member-2", ("foo",), tps(foo=(3, 4, 5))))
    assignor = PreparedAssignor("range")
    assignor.prepared = {"member-1": tps(foo=range(6))}
    result = build_target_assignment(group, assignor, TOPICS, HOMO, updated={"member-2": None})
    assert set(assignor.calls[0].members) == {"member-1"}
    assert result.changed == (("member-1", tps(foo=range(6))),)


def test_replaced_static_member_takes_over_the_previous_target() -> None:
    """TargetAssignmentBuilderTest.testReplaceStaticMember."""
    group = ConsumerGroup("my-group")
    group.update_member(
        ConsumerGroupMember(member_id="member-1", instance_id="i1", subscribed_topic_names=frozenset({"foo"}))
    )
    group.set_target("member-1", tps(foo=(0, 1, 2)))
    assignor = PreparedAssignor("range")
    assignor.prepared = {"member-1b": tps(foo=(0, 1, 2))}
    replacement = group.members["member-1"].replace(member_id="member-1b")
    result = build_target_assignment(
        group, assignor, TOPICS, HOMO, updated={"member-1b": replacement, "member-1": None}
    )
    spec = assignor.calls[0]
    assert set(spec.members) == {"member-1b"}
    assert spec.members["member-1b"].assignment == tps(foo=(0, 1, 2))
    assert result.changed == (("member-1b", tps(foo=(0, 1, 2))),)


def test_regular_expressions_add_their_resolved_topics() -> None:
    """TargetAssignmentBuilderTest.testRegularExpressions: names united with the regex's topics."""
    topics = image(("foo", FOO, 6), ("bar", BAR, 6), ("zar", ZAR, 1))
    group = ConsumerGroup("my-group")
    group.update_member(
        ConsumerGroupMember(
            member_id="member-1", subscribed_topic_names=frozenset({"bar"}), subscribed_topic_regex="foo*|zar"
        )
    )
    group.resolved_regexes["foo*|zar"] = ResolvedRegularExpression(
        topics=frozenset({"foo", "zar"}), version=1, timestamp=0
    )
    assignor = PreparedAssignor("range")
    build_target_assignment(group, assignor, topics, SubscriptionType.HETEROGENEOUS)
    assert assignor.calls[0].members["member-1"].subscribed_topic_ids == {FOO, BAR, ZAR}
