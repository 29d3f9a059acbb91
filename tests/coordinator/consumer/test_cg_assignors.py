"""The server assignors ``uniform`` and ``range`` on the cases of Kafka 4.1's assignor tests.

Sources: ``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/assignor/``
``RangeAssignorTest``, ``OptimizedUniformAssignmentBuilderTest`` (homogeneous; Kafka's
``UniformHomogeneousAssignmentBuilderTest``) and ``UniformHeterogeneousAssignmentBuilderTest``.
Member ids sort as Kafka's tests insert them (A < B < C) and topic ids sort t1 < t2 < t3, which
is the order in which Kafka's expected outputs were produced where they depend on order.
"""

from __future__ import annotations

import random
import uuid

import pytest

from groupcoord.coordinator.consumer.assignment import (
    Assignment,
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    SubscriptionType,
    assignment_of,
    assignment_size,
)
from groupcoord.coordinator.consumer.range_assignor import RangeAssignor
from groupcoord.coordinator.consumer.uniform_assignor import UniformAssignor

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
T3 = uuid.UUID(int=3)
HOMO = SubscriptionType.HOMOGENEOUS
HETERO = SubscriptionType.HETEROGENEOUS


def a(**kw: tuple[int, ...]) -> Assignment:
    names = {"t1": T1, "t2": T2, "t3": T3}
    return assignment_of({names[k]: v for k, v in kw.items()})


def spec(
    members: dict[str, tuple[set[uuid.UUID], Assignment]],
    kind: SubscriptionType,
    instance_ids: dict[str, str] | None = None,
) -> GroupSpec:
    inverted: dict[uuid.UUID, dict[int, str]] = {}
    for mid, (_, prev) in members.items():
        for t, parts in prev.items():
            for p in parts:
                inverted.setdefault(t, {})[p] = mid
    return GroupSpec(
        members={
            mid: MemberSpec(
                subscribed_topic_ids=frozenset(subs),
                assignment=prev,
                instance_id=(instance_ids or {}).get(mid),
            )
            for mid, (subs, prev) in members.items()
        },
        subscription_type=kind,
        assigned_partitions=inverted,
    )


# ------------------------------------------------------------------------------------ range


def test_range_one_member_no_topic_gets_nothing() -> None:
    """RangeAssignorTest.testOneMemberNoTopic."""
    out = RangeAssignor().assign(spec({"A": (set(), {})}, HOMO), {T1: 3})
    assert out == {"A": {}}


def test_range_member_subscribed_to_missing_topic_fails() -> None:
    """RangeAssignorTest.testOneMemberSubscribedToNonExistentTopic."""
    with pytest.raises(PartitionAssignorError):
        RangeAssignor().assign(spec({"A": ({T2}, {})}, HOMO), {T1: 3})


def test_range_two_members_two_topics_same_subscriptions() -> None:
    """RangeAssignorTest.testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions."""
    out = RangeAssignor().assign(spec({"A": ({T1, T3}, {}), "B": ({T1, T3}, {})}, HOMO), {T1: 3, T3: 2})
    assert out == {"A": a(t1=(0, 1), t3=(0,)), "B": a(t1=(2,), t3=(1,))}


def test_range_three_members_different_subscriptions() -> None:
    """RangeAssignorTest.testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions."""
    out = RangeAssignor().assign(
        spec({"A": ({T1, T2}, {}), "B": ({T3}, {}), "C": ({T2, T3}, {})}, HETERO), {T1: 3, T2: 3, T3: 2}
    )
    assert out == {"A": a(t1=(0, 1, 2), t2=(0, 1)), "B": a(t3=(0,)), "C": a(t2=(2,), t3=(1,))}


def test_range_more_members_than_partitions() -> None:
    """RangeAssignorTest.testFirstAssignmentNumMembersGreaterThanNumPartitions."""
    subs = {T1, T3}
    out = RangeAssignor().assign(spec({m: (subs, {}) for m in "ABC"}, HOMO), {T1: 3, T3: 2})
    assert out == {"A": a(t1=(0,), t3=(0,)), "B": a(t1=(1,), t3=(1,)), "C": a(t1=(2,))}


def test_range_static_member_replaced_keeps_its_range() -> None:
    """RangeAssignorTest.testStaticMembership: a new member id with the same instance id gets the
    same partitions; static members sort by instance id, before dynamic ones."""
    before = RangeAssignor().assign(
        spec({"A": ({T1}, {}), "B": ({T1}, {})}, HOMO, {"A": "instanceA", "B": "instanceB"}), {T1: 3}
    )
    after = RangeAssignor().assign(
        spec({"memberA1": ({T1}, {}), "B": ({T1}, {})}, HOMO, {"memberA1": "instanceA", "B": "instanceB"}),
        {T1: 3},
    )
    assert after["memberA1"] == before["A"] == a(t1=(0, 1))
    assert after["B"] == before["B"] == a(t1=(2,))


def test_range_mixed_static_members_sort_before_dynamic() -> None:
    """RangeAssignorTest.testMixedStaticMembership: static members (by instance id) come first."""
    out = RangeAssignor().assign(
        spec({"A": ({T1}, {}), "B": ({T1}, {}), "C": ({T1}, {})}, HOMO, {"C": "instanceC"}), {T1: 5}
    )
    assert out == {"C": a(t1=(0, 1)), "A": a(t1=(2, 3)), "B": a(t1=(4,))}


def test_range_member_added_reassigns_ranges() -> None:
    """RangeAssignorTest.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    subs = {T1, T2}
    out = RangeAssignor().assign(
        spec({"A": (subs, a(t1=(0, 1), t2=(0, 1))), "B": (subs, a(t1=(2,), t2=(2,))), "C": (subs, {})}, HOMO),
        {T1: 3, T2: 3},
    )
    assert out == {"A": a(t1=(0,), t2=(0,)), "B": a(t1=(1,), t2=(1,)), "C": a(t1=(2,), t2=(2,))}


# ------------------------------------------------------------------------ uniform homogeneous


def test_uniform_homogeneous_no_subscription_is_empty() -> None:
    """OptimizedUniformAssignmentBuilderTest.testOneMemberNoTopicSubscription."""
    assert UniformAssignor().assign(spec({"A": (set(), {})}, HOMO), {T1: 3}) == {}


def test_uniform_homogeneous_missing_topic_fails() -> None:
    """OptimizedUniformAssignmentBuilderTest.testOneMemberSubscribedToNonexistentTopic."""
    with pytest.raises(PartitionAssignorError):
        UniformAssignor().assign(spec({"A": ({T2}, {})}, HOMO), {T1: 3})


def test_uniform_homogeneous_first_assignment_sizes() -> None:
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks:
    5 partitions over 2 members give 3 and 2 (which topics each gets depends on Kafka's HashSet)."""
    out = UniformAssignor().assign(spec({"A": ({T1, T3}, {}), "B": ({T1, T3}, {})}, HOMO), {T1: 3, T3: 2})
    assert sorted(assignment_size(x) for x in out.values()) == [2, 3]
    assert _owned(out) == {(T1, 0), (T1, 1), (T1, 2), (T3, 0), (T3, 1)}


def test_uniform_homogeneous_more_members_than_partitions() -> None:
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions."""
    out = UniformAssignor().assign(spec({m: ({T1, T3}, {}) for m in "ABC"}, HOMO), {T1: 1, T3: 1})
    assert sorted(assignment_size(x) for x in out.values()) == [0, 1, 1]


def test_uniform_homogeneous_unbalanced_previous_moves_one_partition() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment."""
    subs = {T1, T2}
    out = UniformAssignor().assign(
        spec({"A": (subs, a(t1=(0, 1), t2=(0, 1))), "B": (subs, a(t1=(2,), t2=(2,)))}, HOMO), {T1: 3, T2: 3}
    )
    assert out == {"A": a(t1=(0, 1), t2=(0,)), "B": a(t1=(2,), t2=(1, 2))}


def test_uniform_homogeneous_member_added_takes_only_the_excess() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    subs = {T1, T2}
    out = UniformAssignor().assign(
        spec({"A": (subs, a(t1=(0, 2), t2=(0,))), "B": (subs, a(t1=(1,), t2=(1, 2))), "C": (subs, {})}, HOMO),
        {T1: 3, T2: 3},
    )
    assert out == {"A": a(t1=(0, 2)), "B": a(t1=(1,), t2=(1,)), "C": a(t2=(0, 2))}


def test_uniform_homogeneous_partitions_added_go_to_the_smaller_member() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics:
    the previous target is kept whole and only new partitions are handed out, keeping balance."""
    subs = {T1, T2}
    prev_a, prev_b = a(t1=(0, 2), t2=(0,)), a(t1=(1,), t2=(1, 2))
    out = UniformAssignor().assign(spec({"A": (subs, prev_a), "B": (subs, prev_b)}, HOMO), {T1: 4, T2: 5})
    assert _contains(out["A"], prev_a) and _contains(out["B"], prev_b)
    assert sorted(assignment_size(x) for x in out.values()) == [4, 5]
    assert len(_owned(out)) == 9


def test_uniform_homogeneous_member_removed_hands_its_partitions_on() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics."""
    subs = {T1, T2}
    prev_a, prev_b = a(t1=(0,), t2=(0,)), a(t1=(1,), t2=(1,))
    out = UniformAssignor().assign(spec({"A": (subs, prev_a), "B": (subs, prev_b)}, HOMO), {T1: 3, T2: 3})
    assert _contains(out["A"], prev_a) and _contains(out["B"], prev_b)
    assert [assignment_size(out["A"]), assignment_size(out["B"])] == [3, 3]


def test_uniform_homogeneous_unsubscribed_topic_is_dropped() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    out = UniformAssignor().assign(
        spec({"A": ({T2}, a(t1=(0,), t2=(0,))), "B": ({T2}, a(t1=(1,), t2=(1,)))}, HOMO), {T1: 2, T2: 2}
    )
    assert out == {"A": a(t2=(0,)), "B": a(t2=(1,))}


def test_uniform_homogeneous_balanced_assignment_is_left_alone() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentStickinessWhenAlreadyBalanced."""
    subs = {T1, T2}
    prev = {"A": a(t1=(0, 2), t2=(1,)), "B": a(t1=(1,), t2=(0, 2))}
    out = UniformAssignor().assign(spec({m: (subs, p) for m, p in prev.items()}, HOMO), {T1: 3, T2: 3})
    assert out == prev


@pytest.mark.parametrize("seed", range(8))
def test_uniform_homogeneous_random_groups_are_balanced_and_sticky(seed: int) -> None:
    """OptimizedUniformAssignmentBuilderTest.testValidityAndBalanceForLargeSampleSet, plus
    stickiness: a second run after a member joins keeps each member's partitions up to its quota."""
    rng = random.Random(seed)
    topics = {uuid.UUID(int=i + 1): rng.randint(1, 40) for i in range(rng.randint(1, 6))}
    subs = set(topics)
    members = [f"m{i:03d}" for i in range(rng.randint(1, 30))]
    out = UniformAssignor().assign(spec({m: (subs, {}) for m in members}, HOMO), topics)
    _assert_valid_and_balanced(out, topics)
    grown = {m: (subs, out.get(m, {})) for m in members}
    grown["zzz-new"] = (subs, {})
    again = UniformAssignor().assign(spec(grown, HOMO), topics)
    _assert_valid_and_balanced(again, topics)
    quota = sum(topics.values()) // len(grown)
    for m in members:
        kept = sum(len(out.get(m, {}).get(t, frozenset()) & p) for t, p in again.get(m, {}).items())
        assert kept >= min(quota, assignment_size(out.get(m, {})))


# ---------------------------------------------------------------------- uniform heterogeneous


def test_uniform_heterogeneous_no_subscription() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testTwoMembersNoTopicSubscription."""
    assert UniformAssignor().assign(spec({"A": (set(), {}), "B": (set(), {})}, HETERO), {T1: 3}) == {}


def test_uniform_heterogeneous_missing_topic_fails() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testTwoMembersSubscribedToNonexistentTopics."""
    with pytest.raises(PartitionAssignorError):
        UniformAssignor().assign(spec({"A": ({T3}, {}), "B": ({T2}, {})}, HETERO), {T1: 3})


def test_uniform_heterogeneous_first_assignment() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopics."""
    out = UniformAssignor().assign(spec({"A": ({T1, T3}, {}), "B": ({T3}, {})}, HETERO), {T1: 3, T3: 6})
    assert out == {"A": a(t1=(0, 1, 2), t3=(4,)), "B": a(t3=(0, 1, 2, 3, 5))}


def test_uniform_heterogeneous_unbalanced_previous() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment."""
    out = UniformAssignor().assign(
        spec(
            {
                "A": ({T1}, a(t1=(0, 1, 2))),
                "B": ({T1, T2}, a(t1=(3,), t2=(0,))),
                "C": ({T1, T2, T3}, a(t1=(4, 5), t2=(1, 2, 3), t3=(0, 1, 2, 3))),
            },
            HETERO,
        ),
        {T1: 6, T2: 4, T3: 4},
    )
    assert out == {
        "A": a(t1=(0, 1, 2, 5)),
        "B": a(t1=(3,), t2=(0, 1, 2, 3)),
        "C": a(t1=(4,), t3=(0, 1, 2, 3)),
    }


def test_uniform_heterogeneous_member_and_partitions_added() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics."""
    out = UniformAssignor().assign(
        spec(
            {"A": ({T1}, a(t1=(0, 2), t2=(0,))), "B": ({T1, T2}, a(t1=(1,), t2=(1, 2))), "C": ({T1, T2}, {})},
            HETERO,
        ),
        {T1: 6, T2: 7},
    )
    assert out == {"A": a(t1=(0, 2, 3, 4, 5)), "B": a(t1=(1,), t2=(1, 2, 6)), "C": a(t2=(0, 3, 4, 5))}


def test_uniform_heterogeneous_member_removed() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics."""
    out = UniformAssignor().assign(
        spec({"A": ({T1, T3}, a(t1=(0, 1, 2), t3=(0, 1))), "B": ({T2}, a(t2=(3, 4, 5, 6)))}, HETERO),
        {T1: 3, T2: 8, T3: 3},
    )
    assert out == {"A": a(t1=(0, 1, 2), t3=(0, 1, 2)), "B": a(t2=(0, 1, 2, 3, 4, 5, 6, 7))}


def test_uniform_heterogeneous_subscription_removed() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    out = UniformAssignor().assign(
        spec({"A": ({T1}, a(t1=(0, 2), t2=(1, 3))), "B": ({T1, T2}, a(t1=(1,), t2=(0, 2, 4)))}, HETERO),
        {T1: 3, T2: 5},
    )
    assert out == {"A": a(t1=(0, 1, 2)), "B": a(t2=(0, 1, 2, 3, 4))}


def test_uniform_heterogeneous_member_without_subscription_gets_nothing() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions."""
    out = UniformAssignor().assign(spec({"A": ({T1}, {}), "B": (set(), {})}, HETERO), {T1: 3})
    assert out == {"A": a(t1=(0, 1, 2)), "B": {}}


@pytest.mark.parametrize("seed", range(8))
def test_uniform_heterogeneous_random_groups_cover_every_subscribed_partition(seed: int) -> None:
    """Every subscribed partition is given to exactly one subscriber of its topic."""
    rng = random.Random(seed)
    topics = {uuid.UUID(int=i + 1): rng.randint(1, 20) for i in range(rng.randint(2, 6))}
    ordered = sorted(topics, key=lambda t: t.int)
    members: dict[str, tuple[set[uuid.UUID], Assignment]] = {
        f"m{i:02d}": (set(rng.sample(ordered, rng.randint(1, len(topics)))), {})
        for i in range(rng.randint(2, 12))
    }
    out = UniformAssignor().assign(spec(members, HETERO), topics)
    wanted = {(t, p) for subs, _ in members.values() for t in subs for p in range(topics[t])}
    seen: set[tuple[uuid.UUID, int]] = set()
    for mid, assignment in out.items():
        for t, parts in assignment.items():
            assert t in members[mid][0]
            for p in parts:
                assert (t, p) not in seen
                seen.add((t, p))
    assert seen == wanted


# ----------------------------------------------------------------------------------- helpers


def _owned(out: dict[str, Assignment]) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for x in out.values() for t, parts in x.items() for p in parts}


def _contains(big: Assignment, small: Assignment) -> bool:
    return all(parts <= big.get(t, frozenset()) for t, parts in small.items())


def _assert_valid_and_balanced(out: dict[str, Assignment], topics: dict[uuid.UUID, int]) -> None:
    seen = [(t, p) for x in out.values() for t, parts in x.items() for p in parts]
    assert len(seen) == len(set(seen)) == sum(topics.values())
    sizes = [assignment_size(x) for x in out.values()]
    assert max(sizes) - min(sizes) <= 1
