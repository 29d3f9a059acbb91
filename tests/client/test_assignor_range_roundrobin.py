"""Range and round-robin assignors on the cases of Kafka's RangeAssignorTest and RoundRobinAssignorTest.

Same subscriptions, same expected assignment (Kafka compares range results as sets; we compare
each member's exact partitions, which our assignors return sorted).
"""

from __future__ import annotations

import pytest

from groupcoord.client.assignors import Assignment, Assignor, RangeAssignor, RoundRobinAssignor, Subscription
from groupcoord.client.types import TopicPartition as TP


def sub(*topics: str, instance: str | None = None) -> Subscription:
    return Subscription(topics=topics, group_instance_id=instance)


def tps(*names: str) -> tuple[TP, ...]:
    """``tps("topic1-0", "topic2-1")``."""
    out = []
    for name in names:
        topic, _, p = name.rpartition("-")
        out.append(TP(topic, int(p)))
    return tuple(sorted(out))


def result(
    assignor: Assignor, counts: dict[str, int], subs: dict[str, Subscription]
) -> dict[str, tuple[TP, ...]]:
    out = assignor.assign(counts, subs)
    assert set(out) == set(subs), "every member gets an entry"
    assert all(isinstance(a, Assignment) for a in out.values())
    return {m: a.partitions for m, a in out.items()}


BOTH = pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor()], ids=lambda a: a.name)


@BOTH
def test_one_consumer_no_topic(assignor: Assignor) -> None:
    """testOneConsumerNoTopic (both suites)."""
    assert result(assignor, {}, {"consumer": sub()}) == {"consumer": ()}


@BOTH
def test_one_consumer_nonexistent_topic(assignor: Assignor) -> None:
    """testOneConsumerNonexistentTopic (both suites)."""
    assert result(assignor, {}, {"consumer": sub("topic")}) == {"consumer": ()}


@BOTH
def test_one_consumer_one_topic(assignor: Assignor) -> None:
    """testOneConsumerOneTopic (both suites)."""
    assert result(assignor, {"topic": 3}, {"consumer": sub("topic")}) == {
        "consumer": tps("topic-0", "topic-1", "topic-2")
    }


@BOTH
def test_only_assigns_partitions_from_subscribed_topics(assignor: Assignor) -> None:
    """testOnlyAssignsPartitionsFromSubscribedTopics (both suites)."""
    assert result(assignor, {"topic": 3, "other": 3}, {"consumer": sub("topic")}) == {
        "consumer": tps("topic-0", "topic-1", "topic-2")
    }


@BOTH
def test_one_consumer_multiple_topics(assignor: Assignor) -> None:
    """testOneConsumerMultipleTopics (both suites)."""
    assert result(assignor, {"topic1": 1, "topic2": 2}, {"consumer": sub("topic1", "topic2")}) == {
        "consumer": tps("topic1-0", "topic2-0", "topic2-1")
    }


@BOTH
def test_two_consumers_one_topic_one_partition(assignor: Assignor) -> None:
    """testTwoConsumersOneTopicOnePartition (both suites)."""
    subs = {"consumer1": sub("topic"), "consumer2": sub("topic")}
    assert result(assignor, {"topic": 1}, subs) == {"consumer1": tps("topic-0"), "consumer2": ()}


@BOTH
def test_two_consumers_one_topic_two_partitions(assignor: Assignor) -> None:
    """testTwoConsumersOneTopicTwoPartitions (both suites)."""
    subs = {"consumer1": sub("topic"), "consumer2": sub("topic")}
    assert result(assignor, {"topic": 2}, subs) == {"consumer1": tps("topic-0"), "consumer2": tps("topic-1")}


@BOTH
def test_multiple_consumers_mixed_topics(assignor: Assignor) -> None:
    """testMultipleConsumersMixedTopics (both suites give the same answer)."""
    subs = {"consumer1": sub("topic1"), "consumer2": sub("topic1", "topic2"), "consumer3": sub("topic1")}
    assert result(assignor, {"topic1": 3, "topic2": 2}, subs) == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1", "topic2-0", "topic2-1"),
        "consumer3": tps("topic1-2"),
    }


SIX = {"topic1": 3, "topic2": 3}
RANGE_SIX = (tps("topic1-0", "topic1-1", "topic2-0", "topic2-1"), tps("topic1-2", "topic2-2"))
ROUNDROBIN_SIX = (tps("topic1-0", "topic1-2", "topic2-1"), tps("topic1-1", "topic2-0", "topic2-2"))


@pytest.mark.parametrize(
    ("assignor", "expected"),
    [(RangeAssignor(), RANGE_SIX), (RoundRobinAssignor(), ROUNDROBIN_SIX)],
    ids=["range", "roundrobin"],
)
def test_two_consumers_two_topics_six_partitions(
    assignor: Assignor, expected: tuple[tuple[TP, ...], ...]
) -> None:
    """RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions,
    RoundRobinAssignorTest.testTwoDynamicConsumersTwoTopicsSixPartitions."""
    subs = {"consumer1": sub("topic1", "topic2"), "consumer2": sub("topic1", "topic2")}
    assert result(assignor, SIX, subs) == {"consumer1": expected[0], "consumer2": expected[1]}


@pytest.mark.parametrize(
    ("assignor", "expected"),
    [(RangeAssignor(), RANGE_SIX), (RoundRobinAssignor(), ROUNDROBIN_SIX)],
    ids=["range", "roundrobin"],
)
@pytest.mark.parametrize("high_is_static", [True, False], ids=["both-static", "one-static"])
def test_static_members_are_ordered_by_instance_id_before_dynamic_ones(
    assignor: Assignor, expected: tuple[tuple[TP, ...], ...], high_is_static: bool
) -> None:
    """testTwoStaticConsumersTwoTopicsSixPartitions and
    testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions (both suites): "consumer-b"
    (instance1) sorts before "consumer-a" (instance2, or dynamic)."""
    subs = {
        "consumer-b": sub("topic1", "topic2", instance="instance1"),
        "consumer-a": sub("topic1", "topic2", instance="instance2" if high_is_static else None),
    }
    assert result(assignor, SIX, subs) == {"consumer-b": expected[0], "consumer-a": expected[1]}


def test_range_static_member_assignment_is_persistent_when_a_dynamic_member_is_replaced() -> None:
    """RangeAssignorTest.testStaticMemberRangeAssignmentPersistent."""
    subs = {f"consumer{i}": sub("topic1", "topic2", instance=f"instance{i}") for i in (1, 2, 3)}
    subs["consumer4"] = sub("topic1", "topic2")
    expected = {
        "consumer1": tps("topic1-0", "topic1-1", "topic2-0"),
        "consumer2": tps("topic1-2", "topic2-1"),
        "consumer3": tps("topic1-3", "topic2-2"),
        "consumer4": tps("topic1-4", "topic2-3"),
    }
    counts = {"topic1": 5, "topic2": 4}
    assert result(RangeAssignor(), counts, subs) == expected
    del subs["consumer4"]
    subs["consumer5"] = sub("topic1", "topic2")
    expected["consumer5"] = expected.pop("consumer4")
    assert result(RangeAssignor(), counts, subs) == expected


def test_roundrobin_static_member_assignment_is_persistent_when_a_dynamic_member_is_replaced() -> None:
    """RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistent."""
    subs = {f"consumer{i}": sub("topic1", "topic2", instance=f"instance{i}") for i in (1, 2, 3)}
    subs["consumer4"] = sub("topic1", "topic2")
    expected = {
        "consumer1": tps("topic1-0", "topic2-1"),
        "consumer2": tps("topic1-1", "topic2-2"),
        "consumer3": tps("topic1-2"),
        "consumer4": tps("topic2-0"),
    }
    assert result(RoundRobinAssignor(), SIX, subs) == expected
    del subs["consumer4"]
    subs["consumer5"] = sub("topic1", "topic2")
    expected["consumer5"] = expected.pop("consumer4")
    assert result(RoundRobinAssignor(), SIX, subs) == expected


@pytest.mark.parametrize(
    ("assignor", "expected"),
    [
        (
            RangeAssignor(),
            {
                "instance1": tps("topic1-0", "topic1-1", "topic2-0", "topic2-1"),
                "instance2": tps("topic1-2", "topic1-3", "topic2-2", "topic2-3"),
                "instance3": tps("topic1-4", "topic2-4"),
            },
        ),
        (
            RoundRobinAssignor(),
            {
                "instance1": tps("topic1-0", "topic1-3", "topic2-1", "topic2-4"),
                "instance2": tps("topic1-1", "topic1-4", "topic2-2"),
                "instance3": tps("topic1-2", "topic2-0", "topic2-3"),
            },
        ),
    ],
    ids=["range", "roundrobin"],
)
def test_static_assignment_follows_instance_ids_when_member_ids_change(
    assignor: Assignor, expected: dict[str, tuple[TP, ...]]
) -> None:
    """testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges and
    testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges."""
    counts = {"topic1": 5, "topic2": 5}
    subs = {f"consumer{i}": sub("topic1", "topic2", instance=f"instance{i}") for i in (1, 2, 3)}

    def by_instance(s: dict[str, Subscription]) -> dict[str, tuple[TP, ...]]:
        out = result(assignor, counts, s)
        return {str(s[m].group_instance_id): parts for m, parts in out.items()}

    assert by_instance(subs) == expected
    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert by_instance(subs) == expected


def test_range_co_partitioned_topics_land_on_the_same_members() -> None:
    """RangeAssignorTest.testCoPartitionedAssignmentWithSameSubscription (its non-rack-aware result);
    topics t7-t9 have no metadata."""
    counts = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    topics = tuple(f"t{i}" for i in range(1, 10))
    subs = {f"consumer{i}": sub(*topics) for i in range(3)}
    assert result(RangeAssignor(), counts, subs) == {
        "consumer0": tps("t1-0", "t1-1", "t2-0", "t2-1", "t3-0", "t4-0", "t5-0", "t5-1", "t6-0", "t6-1"),
        "consumer1": tps("t1-2", "t1-3", "t2-2", "t2-3", "t3-1", "t4-1", "t5-2", "t6-2"),
        "consumer2": tps("t1-4", "t1-5", "t2-4", "t2-5", "t5-3", "t6-3"),
    }
