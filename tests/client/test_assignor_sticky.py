"""Sticky and cooperative-sticky assignors on the cases of Kafka's AbstractStickyAssignorTest,
StickyAssignorTest and CooperativeStickyAssignorTest: same subscriptions, owned partitions and
generations, same expected assignment. For cooperative-sticky the expectation is the settled
assignment after the follow-up rebalances (as CooperativeStickyAssignorTest.verifyValidityAndBalance
re-runs it); the first round, with moved partitions withheld, is asserted where Kafka asserts
``partitionsTransferringOwnership``.
"""

from __future__ import annotations

import pytest
from sticky_cases import (
    KINDS,
    check_valid_and_balanced,
    fresh,
    fully_balanced,
    make,
    run,
    tps,
    v0_sticky,
    v1,
    v2,
)

from groupcoord.client.assignors import Subscription
from groupcoord.client.assignors.sticky import (
    CooperativeStickyAssignor,
    MemberData,
    StickyAssignor,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from groupcoord.client.types import TopicPartition as TP

GEN = 1
kinds = pytest.mark.parametrize("kind", KINDS)


@kinds
def test_one_consumer_no_topic_and_nonexistent_topic(kind: str) -> None:
    """testOneConsumerNoTopic, testOneConsumerNonexistentTopic."""
    assert run(kind, {}, {"consumer": fresh()}) == {"consumer": ()}
    assert run(kind, {}, {"consumer": fresh("topic")}) == {"consumer": ()}


@kinds
def test_one_consumer_gets_only_its_topics(kind: str) -> None:
    """testOneConsumerOneTopic, testOnlyAssignsPartitionsFromSubscribedTopics,
    testOneConsumerMultipleTopics."""
    assert run(kind, {"topic": 3, "other": 3}, {"consumer": fresh("topic")}) == {
        "consumer": tps("topic-0", "topic-1", "topic-2")
    }
    assert run(kind, {"topic1": 1, "topic2": 2}, {"consumer": fresh("topic1", "topic2")}) == {
        "consumer": tps("topic1-0", "topic2-0", "topic2-1")
    }


@kinds
def test_two_consumers_one_topic(kind: str) -> None:
    """testTwoConsumersOneTopicOnePartition, testTwoConsumersOneTopicTwoPartitions."""
    subs = {"consumer1": fresh("topic"), "consumer2": fresh("topic")}
    assert run(kind, {"topic": 1}, subs) == {"consumer1": tps("topic-0"), "consumer2": ()}
    assert run(kind, {"topic": 2}, subs) == {"consumer1": tps("topic-0"), "consumer2": tps("topic-1")}


@kinds
def test_multiple_consumers_mixed_topic_subscriptions(kind: str) -> None:
    """testMultipleConsumersMixedTopicSubscriptions (the general, unequal-subscriptions path)."""
    counts = {"topic1": 3, "topic2": 2}
    subs = {
        "consumer1": fresh("topic1"),
        "consumer2": fresh("topic1", "topic2"),
        "consumer3": fresh("topic1"),
    }
    result = run(kind, counts, subs)
    assert result == {
        "consumer1": tps("topic1-0", "topic1-2"),
        "consumer2": tps("topic2-0", "topic2-1"),
        "consumer3": tps("topic1-1"),
    }
    check_valid_and_balanced(counts, subs, result)


@kinds
def test_two_consumers_two_topics_six_partitions(kind: str) -> None:
    """testTwoConsumersTwoTopicsSixPartitions."""
    subs = {"consumer1": fresh("topic1", "topic2"), "consumer2": fresh("topic1", "topic2")}
    assert run(kind, {"topic1": 3, "topic2": 3}, subs) == {
        "consumer1": tps("topic1-0", "topic1-2", "topic2-1"),
        "consumer2": tps("topic1-1", "topic2-0", "topic2-2"),
    }


@kinds
def test_consumer_owning_min_quota_gets_the_max_quota(kind: str) -> None:
    """testConsumerOwningMinQuotaExpectedMaxQuota: nothing moves, consumer1 takes the free partition."""
    topics = ("topic1", "topic2")
    subs = {
        "consumer1": v2(kind, topics, tps("topic1-0", "topic2-1"), GEN),
        "consumer2": v2(kind, topics, tps("topic1-1", "topic2-2"), GEN),
    }
    assert make(kind).assign({"topic1": 2, "topic2": 3}, subs)["consumer1"].partitions == tps(
        "topic1-0", "topic2-1", "topic2-0"
    )
    assert run(kind, {"topic1": 2, "topic2": 3}, subs) == {
        "consumer1": tps("topic1-0", "topic2-1", "topic2-0"),
        "consumer2": tps("topic1-1", "topic2-2"),
    }


@kinds
def test_more_max_quota_owners_than_max_quota_slots(kind: str) -> None:
    """testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers: topic2-0 moves consumer1 -> consumer3
    (withheld in the first cooperative round)."""
    topics = ("topic1", "topic2")
    counts = {"topic1": 2, "topic2": 2}
    subs = {
        "consumer1": v2(kind, topics, tps("topic1-0", "topic2-0"), GEN),
        "consumer2": v2(kind, topics, tps("topic1-1", "topic2-1"), GEN),
        "consumer3": v2(kind, topics, (), GEN),
    }
    first = {m: a.partitions for m, a in make(kind).assign(counts, subs).items()}
    assert first["consumer3"] == (() if kind == "cooperative-sticky" else tps("topic2-0"))
    assert run(kind, counts, subs) == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1", "topic2-1"),
        "consumer3": tps("topic2-0"),
    }


@kinds
def test_all_consumers_under_min_quota(kind: str) -> None:
    """testAllConsumersAreUnderMinQuota: nothing is revoked, free partitions fill the members in turn."""
    topics = ("topic1", "topic2")
    subs = {
        "consumer1": v2(kind, topics, tps("topic1-0"), GEN),
        "consumer2": v2(kind, topics, tps("topic1-1"), GEN),
        "consumer3": v2(kind, topics, (), GEN),
    }
    expected = {
        "consumer1": tps("topic1-0", "topic2-1"),
        "consumer2": tps("topic1-1", "topic2-2"),
        "consumer3": tps("topic2-0"),
    }
    assert run(kind, {"topic1": 2, "topic2": 3}, subs, follow_up=False) == expected


@kinds
def test_add_remove_consumer_one_topic(kind: str) -> None:
    """testAddRemoveConsumerOneTopic (kafka-client-coordinator.md §6.4 #11)."""
    counts = {"topic": 3}
    r1 = run(kind, counts, {"consumer1": fresh("topic")})
    assert r1 == {"consumer1": tps("topic-0", "topic-1", "topic-2")}

    subs = {
        "consumer1": v2(kind, ("topic",), r1["consumer1"], GEN),
        "consumer2": v2(kind, ("topic",), (), GEN),
    }
    first = {m: a.partitions for m, a in make(kind).assign(counts, subs).items()}
    if kind == "cooperative-sticky":
        assert first == {"consumer1": tps("topic-0", "topic-1"), "consumer2": ()}  # topic-2 withheld
    r2 = run(kind, counts, subs)
    assert r2 == {"consumer1": tps("topic-0", "topic-1"), "consumer2": tps("topic-2")}

    subs = {"consumer2": v2(kind, ("topic",), r2["consumer2"], GEN)}
    assert run(kind, counts, subs) == {"consumer2": tps("topic-0", "topic-1", "topic-2")}


@kinds
def test_topic_balance_after_reassignment(kind: str) -> None:
    """testTopicBalanceAfterReassignment: each member keeps an even share of *each* topic."""
    topics = ("topic1", "topic2")
    counts = {"topic1": 12, "topic2": 12}

    def per_topic(result: dict[str, tuple[TP, ...]], n: int) -> None:
        for parts in result.values():
            assert sum(tp.topic == "topic1" for tp in parts) == n
            assert sum(tp.topic == "topic2" for tp in parts) == n

    r = run(kind, counts, {"consumer1": fresh(*topics)})
    per_topic(r, 12)
    subs = {"consumer1": v2(kind, topics, r["consumer1"], GEN), "consumer2": v2(kind, topics, (), GEN)}
    r = run(kind, counts, subs)
    per_topic(r, 6)
    subs = {m: v2(kind, topics, r[m], GEN) for m in ("consumer1", "consumer2")}
    subs |= {m: v2(kind, topics, (), GEN) for m in ("consumer3", "consumer4")}
    r = run(kind, counts, subs)
    per_topic(r, 3)
    subs = {m: v2(kind, topics, r[m], GEN) for m in ("consumer3", "consumer4")}
    r = run(kind, counts, subs)
    per_topic(r, 6)


@kinds
def test_add_remove_two_consumers_two_topics(kind: str) -> None:
    """testAddRemoveTwoConsumersTwoTopics, with its exact assignments and transfers."""
    topics = ("topic1", "topic2")
    counts = {"topic1": 3, "topic2": 4}
    r1 = run(kind, counts, {"consumer1": fresh(*topics), "consumer2": fresh(*topics)})
    assert r1 == {
        "consumer1": tps("topic1-0", "topic1-2", "topic2-1", "topic2-3"),
        "consumer2": tps("topic1-1", "topic2-0", "topic2-2"),
    }
    subs = {m: v2(kind, topics, r1[m], GEN) for m in r1} | {
        m: v2(kind, topics, (), GEN) for m in ("consumer3", "consumer4")
    }
    first = {m: a.partitions for m, a in make(kind).assign(counts, subs).items()}
    if kind == "cooperative-sticky":
        # transferring: topic1-2 and topic2-3 -> consumer3, topic2-2 -> consumer4: withheld this round
        assert first == {
            "consumer1": tps("topic1-0", "topic2-1"),
            "consumer2": tps("topic1-1", "topic2-0"),
            "consumer3": (),
            "consumer4": (),
        }
    r2 = run(kind, counts, subs)
    assert r2 == {
        "consumer1": tps("topic1-0", "topic2-1"),
        "consumer2": tps("topic1-1", "topic2-0"),
        "consumer3": tps("topic1-2", "topic2-3"),
        "consumer4": tps("topic2-2"),
    }
    subs = {m: v2(kind, topics, r2[m], GEN) for m in ("consumer3", "consumer4")}
    assert run(kind, counts, subs) == {
        "consumer3": tps("topic1-2", "topic2-3", "topic1-0", "topic2-1"),
        "consumer4": tps("topic2-2", "topic1-1", "topic2-0"),
    }


@kinds
def test_poor_round_robin_scenario_is_balanced(kind: str) -> None:
    """testPoorRoundRobinAssignmentScenario."""
    counts = {f"topic{i}": (i % 2) + 1 for i in range(1, 6)}
    all5 = tuple(counts)
    subs = {
        "consumer1": fresh(*all5),
        "consumer2": fresh("topic1", "topic3", "topic5"),
        "consumer3": fresh("topic1", "topic3", "topic5"),
        "consumer4": fresh(*all5),
    }
    result = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, result)
    assert fully_balanced(result)


@kinds
def test_add_remove_topic_two_consumers(kind: str) -> None:
    """testAddRemoveTopicTwoConsumers: adding and removing a topic keeps every existing assignment."""
    counts = {"topic": 3}
    r1 = run(kind, counts, {"consumer1": fresh("topic"), "consumer2": fresh("topic")})
    assert sorted(len(p) for p in r1.values()) == [1, 2]
    counts = {"topic": 3, "topic2": 3}
    subs = {m: v2(kind, ("topic", "topic2"), r1[m], GEN) for m in r1}
    r2 = run(kind, counts, subs)
    assert all(len(p) == 3 and set(r1[m]) <= set(p) for m, p in r2.items())
    counts = {"topic2": 3}
    subs = {m: v2(kind, ("topic2",), r2[m], GEN) for m in r2}
    r3 = run(kind, counts, subs)
    assert sorted(len(p) for p in r3.values()) == [1, 2]
    assert all(set(p) <= set(r2[m]) for m, p in r3.items())


def _names(prefix: str, n: int, width: int) -> list[str]:
    return [f"{prefix}{i:0{width}d}" for i in range(1, n)]


@kinds
def test_reassignment_after_one_consumer_leaves(kind: str) -> None:
    """testReassignmentAfterOneConsumerLeaves: 19 topics with 1..19 partitions, member i subscribes to
    topics 1..i; after c10 leaves the result is valid, balanced, and every survivor keeps its partitions
    unless balance needs them elsewhere (no partition moves between two survivors and back)."""
    topics = _names("t", 20, 2)
    counts = {t: i for i, t in enumerate(topics, start=1)}
    subs = {c: fresh(*topics[:i]) for i, c in enumerate(_names("c", 20, 2), start=1)}
    r1 = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, r1)
    subs2 = {c: v2(kind, s.topics, r1[c], GEN) for c, s in subs.items() if c != "c10"}
    r2 = run(kind, counts, subs2)
    check_valid_and_balanced(counts, subs2, r2)
    moved = sum(len(set(r1[c]) - set(r2[c])) for c in subs2)
    assert moved <= len(r1["c10"]), "survivors only give up partitions to absorb the leaver's"


@kinds
def test_reassignment_after_one_consumer_added(kind: str) -> None:
    """testReassignmentAfterOneConsumerAdded."""
    counts = {"topic": 20}
    subs = {c: fresh("topic") for c in _names("c", 10, 2)}
    r1 = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, r1)
    subs = {c: v2(kind, ("topic",), r1[c], GEN) for c in subs} | {"c10": v2(kind, ("topic",), (), GEN)}
    r2 = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, r2)
    assert len(r2["c10"]) == 2
    assert all(set(r2[c]) <= set(r1[c]) for c in r1)


@kinds
def test_same_subscriptions_member_leaves(kind: str) -> None:
    """testSameSubscriptions."""
    topics = _names("t", 15, 2)
    counts = {t: i for i, t in enumerate(topics, start=1)}
    subs = {c: fresh(*topics) for c in _names("c", 9, 1)}
    r1 = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, r1)
    subs = {c: v2(kind, topics, r1[c], GEN) for c in subs if c != "c5"}
    r2 = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, r2)
    assert all(set(r1[c]) <= set(r2[c]) for c in subs)


@kinds
def test_new_subscription_keeps_assignments(kind: str) -> None:
    """testNewSubscription: c0 subscribes to one more topic; everything else stays."""
    topics = _names("t", 5, 1)
    counts = dict.fromkeys(topics, 1)
    subs = {f"c{i}": fresh(*[f"t{j}" for j in range(i, 3 * i - 1)]) for i in range(3)}
    r1 = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, r1)
    subs = {c: v2(kind, s.topics, r1[c], GEN) for c, s in subs.items()}
    subs["c0"] = v2(kind, (*subs["c0"].topics, "t1"), r1["c0"], GEN)
    r2 = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, r2)


@kinds
def test_move_existing_assignments(kind: str) -> None:
    """testMoveExistingAssignments."""
    counts = {f"topic{i}": 1 for i in range(1, 7)}
    subs = {
        "consumer1": v2(kind, ("topic1", "topic2"), tps("topic1-0"), GEN),
        "consumer2": v2(kind, ("topic1", "topic2", "topic3", "topic4"), tps("topic2-0", "topic3-0"), GEN),
        "consumer3": v2(
            kind,
            ("topic2", "topic3", "topic4", "topic5", "topic6"),
            tps("topic4-0", "topic5-0", "topic6-0"),
            GEN,
        ),
    }
    result = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, result)


@kinds
def test_stickiness_when_the_leader_leaves(kind: str) -> None:
    """testStickiness: 4 members, 3 partitions; consumer1 leaves; the others keep what they had."""
    counts = {"topic1": 3}
    subs = {f"consumer{i}": fresh("topic1") for i in range(1, 5)}
    r1 = run(kind, counts, subs)
    assert all(len(p) <= 1 for p in r1.values())
    subs = {c: v2(kind, ("topic1",), r1[c], GEN) for c in ("consumer2", "consumer3", "consumer4")}
    r2 = run(kind, counts, subs)
    assert all(len(p) == 1 for p in r2.values())
    assert all(not r1[c] or r1[c] == r2[c] for c in r2)


@kinds
def test_assignment_updated_for_deleted_topic(kind: str) -> None:
    """testAssignmentUpdatedForDeletedTopic, testNoExceptionThrownWhenOnlySubscribedTopicDeleted."""
    result = run(kind, {"topic1": 1, "topic3": 100}, {"consumer": fresh("topic1", "topic2", "topic3")})
    assert len(result["consumer"]) == 101
    r = run(kind, {"topic": 3}, {"consumer": fresh("topic")})
    assert run(kind, {}, {"consumer": v2(kind, ("topic",), r["consumer"], GEN)}) == {"consumer": ()}


@kinds
def test_all_consumers_reach_expected_quota(kind: str) -> None:
    """testAllConsumersReachExpectedQuotaAndAreConsideredFilled: nothing transfers."""
    subs = {
        "consumer1": v2(kind, ("topic",), tps("topic-0", "topic-1"), GEN),
        "consumer2": v2(kind, ("topic",), tps("topic-2"), GEN),
        "consumer3": v2(kind, ("topic",), (), GEN),
    }
    assert run(kind, {"topic": 4}, subs, follow_up=False) == {
        "consumer1": tps("topic-0", "topic-1"),
        "consumer2": tps("topic-2"),
        "consumer3": tps("topic-3"),
    }


@kinds
@pytest.mark.parametrize("stale", [9, -1], ids=["stale-generation", "no-generation"])
def test_owned_partitions_of_a_stale_generation_are_invalidated(kind: str, stale: int) -> None:
    """testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration and ...WithNoGeneration
    (§6.4 #12): the higher generation keeps the claimed partitions; nothing transfers."""
    topics = ("topic", "topic2")
    claimed = tps("topic-0", "topic-2", "topic2-1")
    subs = {"consumer1": v2(kind, topics, claimed, 10), "consumer2": v2(kind, topics, claimed, stale)}
    assert run(kind, {"topic": 3, "topic2": 3}, subs, follow_up=False) == {
        "consumer1": claimed,
        "consumer2": tps("topic-1", "topic2-0", "topic2-2"),
    }


@kinds
def test_partition_claimed_twice_in_one_generation(kind: str) -> None:
    """testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumersInSameGeneration
    and StickyAssignorTest / CooperativeStickyAssignorTest
    .testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGenerationWith
    EqualPartitionsPerConsumer (§6.4 #14): topic-0 goes to consumer3, in the cooperative case only after
    both claimants revoked it."""
    subs = {
        "consumer1": v2(kind, ("topic",), tps("topic-0", "topic-1"), GEN),
        "consumer2": v2(kind, ("topic",), tps("topic-0", "topic-2"), GEN),
        "consumer3": v2(kind, ("topic",), (), GEN),
    }
    first = {m: a.partitions for m, a in make(kind).assign({"topic": 3}, subs).items()}
    assert first == {
        "consumer1": tps("topic-1"),
        "consumer2": tps("topic-2"),
        "consumer3": tps("topic-0") if kind == "sticky" else (),
    }
    assert run(kind, {"topic": 3}, subs)["consumer3"] == tps("topic-0")


@kinds
def test_partition_claimed_twice_with_unequal_partitions_per_consumer(kind: str) -> None:
    """...WithUnequalPartitionsPerConsumer (StickyAssignorTest and CooperativeStickyAssignorTest)."""
    subs = {
        "consumer1": v2(kind, ("topic",), tps("topic-0", "topic-1"), GEN),
        "consumer2": v2(kind, ("topic",), tps("topic-0", "topic-2"), GEN),
        "consumer3": v2(kind, ("topic",), (), GEN),
    }
    first = {m: a.partitions for m, a in make(kind).assign({"topic": 4}, subs).items()}
    assert first == {
        "consumer1": tps("topic-1", "topic-3"),
        "consumer2": tps("topic-2"),
        "consumer3": tps("topic-0") if kind == "sticky" else (),
    }


@kinds
def test_partitions_go_to_the_highest_generation(kind: str) -> None:
    """testEnsurePartitionsAssignedToHighestGeneration (§6.4 #13)."""
    topics = ("topic", "topic2", "topic3")
    subs = {
        "consumer1": v2(kind, topics, tps("topic-0", "topic2-0", "topic3-0"), 10),
        "consumer2": v2(kind, topics, tps("topic-1", "topic2-1", "topic3-1"), 9),
        "consumer3": v2(kind, topics, tps("topic2-1", "topic3-0", "topic3-2"), 8),
    }
    assert run(kind, dict.fromkeys(topics, 3), subs, follow_up=False) == {
        "consumer1": tps("topic-0", "topic2-0", "topic3-0"),
        "consumer2": tps("topic-1", "topic2-1", "topic3-1"),
        "consumer3": tps("topic-2", "topic2-2", "topic3-2"),
    }


@kinds
def test_no_reassignment_on_current_members(kind: str) -> None:
    """testNoReassignmentOnCurrentMembers: the new member gets exactly the free partitions."""
    topics = ("topic", "topic2", "topic3", "topic1")
    subs = {
        "consumer1": v2(kind, topics, (), -1),
        "consumer2": v2(kind, topics, tps("topic-0", "topic2-0", "topic1-0"), 9),
        "consumer3": v2(kind, topics, tps("topic3-2", "topic2-2", "topic1-1"), 8),
        "consumer4": v2(kind, topics, tps("topic3-1", "topic-1", "topic-2"), 7),
    }
    result = run(kind, dict.fromkeys(topics, 3), subs, follow_up=False)
    assert result["consumer1"] == tps("topic1-2", "topic2-1", "topic3-0")
    assert all(result[c] == subs[c].owned_partitions for c in ("consumer2", "consumer3", "consumer4"))


@kinds
def test_owned_partitions_invalidated_for_multiple_generations(kind: str) -> None:
    """testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration."""
    topics = ("topic", "topic2")
    subs = {
        "consumer1": v2(kind, topics, tps("topic-0", "topic2-1", "topic-1"), 10),
        "consumer2": v2(kind, topics, tps("topic-0", "topic2-1", "topic2-2"), 8),
    }
    assert run(kind, {"topic": 3, "topic2": 3}, subs, follow_up=False) == {
        "consumer1": tps("topic-0", "topic2-1", "topic-1"),
        "consumer2": tps("topic-2", "topic2-2", "topic2-0"),
    }


@kinds
@pytest.mark.parametrize("equal", [True, False], ids=["equal-subscriptions", "unequal-subscriptions"])
def test_assignment_with_conflicting_previous_generations(kind: str, equal: bool) -> None:
    """StickyAssignorTest.testAssignmentWithConflictingPreviousGenerations (run for both assignors)."""
    all3 = ("topic", "topic2", "topic3")
    c1_topics = all3 if equal else ("topic",)
    c2_topics = all3 if equal else ("topic", "topic2")
    c1_owned = (
        tps("topic-0", "topic-1", "topic-2", "topic2-2", "topic2-3", "topic3-0")
        if equal
        else tps("topic-0", "topic-1", "topic-2", "topic-3")
    )
    c2_owned = tps("topic-0", "topic-1", "topic2-0", "topic2-1", "topic2-2", "topic2-3")
    c3_owned = tps("topic-2", "topic-3", "topic3-0", "topic3-1", "topic3-2", "topic3-3")
    counts = dict.fromkeys(all3, 4)
    subs = {
        "consumer1": v2(kind, c1_topics, c1_owned, 1),
        "consumer2": v2(kind, c2_topics, c2_owned, 2),
        "consumer3": v2(kind, all3, c3_owned, 2),
    }
    result = run(kind, counts, subs)
    assert [len(result[c]) for c in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]
    assert set(result["consumer2"]) <= set(c2_owned)
    assert set(result["consumer3"]) <= set(c3_owned)
    check_valid_and_balanced(counts, subs, result)


@kinds
@pytest.mark.parametrize("equal", [True, False], ids=["equal-subscriptions", "unequal-subscriptions"])
def test_assignment_with_multiple_generations(kind: str, equal: bool) -> None:
    """StickyAssignorTest.testAssignmentWithMultipleGenerations1."""
    all2 = ("topic", "topic2")
    c2_topics = all2 if equal else ("topic",)
    counts = {"topic": 6, "topic2": 6}
    subs = {"consumer1": fresh(*all2), "consumer2": fresh(*c2_topics), "consumer3": fresh(*all2)}
    r1 = run(kind, counts, subs)
    assert [len(r1[c]) for c in sorted(r1)] == [4, 4, 4]
    check_valid_and_balanced(counts, subs, r1)

    subs = {
        "consumer1": v2(kind, all2, r1["consumer1"], 1),
        "consumer2": v2(kind, c2_topics, r1["consumer2"], 1),
    }
    r2 = run(kind, counts, subs)
    assert len(r2["consumer1"]) == len(r2["consumer2"]) == 6
    if equal:
        assert set(r1["consumer1"]) <= set(r2["consumer1"])
    assert set(r1["consumer2"]) <= set(r2["consumer2"])
    assert set(r2["consumer2"]) & set(r1["consumer3"])

    subs = {
        "consumer2": v2(kind, c2_topics, r2["consumer2"], 2),
        "consumer3": v2(kind, all2, r1["consumer3"], 1),
    }
    r3 = run(kind, counts, subs)
    assert len(r3["consumer2"]) == len(r3["consumer3"]) == 6
    check_valid_and_balanced(counts, subs, r3)


def test_sticky_reads_old_subscription_versions() -> None:
    """StickyAssignorTest.testAssignorWithOldVersionSubscriptions and testSchemaBackwardCompatibility:
    the previous assignment in the v0 user data (no generation) still counts."""
    subs = {
        "consumer1": v0_sticky(("topic1",), tps("topic1-0"), GEN),
        "consumer2": v1("sticky", ("topic1",), tps("topic1-1"), GEN),
        "consumer3": v2("sticky", ("topic1",), (), GEN),
    }
    assert run("sticky", {"topic1": 3}, subs) == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1"),
        "consumer3": tps("topic1-2"),
    }
    v0_user_data = encode_sticky_user_data(tps("topic-1"), None)
    subs = {
        "consumer1": v2("sticky", ("topic",), tps("topic-0", "topic-2"), 1),
        "consumer2": Subscription(topics=("topic",), user_data=v0_user_data),
        "consumer3": fresh("topic"),
    }
    result = run("sticky", {"topic": 3}, subs)
    assert [len(result[c]) for c in sorted(result)] == [1, 1, 1]
    assert set(result["consumer1"]) <= {TP("topic", 0), TP("topic", 2)}
    assert result["consumer2"] == tps("topic-1")


def test_cooperative_reads_old_subscription_versions() -> None:
    """CooperativeStickyAssignorTest.testAssignorWithOldVersionSubscriptions (§6.4 #15)."""
    subs = {
        "consumer1": v1("cooperative-sticky", ("topic1",), tps("topic1-0"), GEN),
        "consumer2": v1("cooperative-sticky", ("topic1",), tps("topic1-1"), GEN),
        "consumer3": v2("cooperative-sticky", ("topic1",), (), GEN),
    }
    assert run("cooperative-sticky", {"topic1": 3}, subs) == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1"),
        "consumer3": tps("topic1-2"),
    }


# --------------------------------------------------------------------------- member data


def test_sticky_member_data_always_honours_the_user_data() -> None:
    """StickyAssignorTest.testMemberDataWithInconsistentData / testMemberDataWillHonorUserData."""
    assignor = StickyAssignor()
    assignor.on_assignment(
        __import__("groupcoord.client.assignors", fromlist=["Assignment"]).Assignment(
            partitions=tps("topic-1")
        ),
        GEN,
    )
    user_data = assignor.subscription_user_data({"topic"})
    sub = Subscription(topics=("topic",), user_data=user_data, owned_partitions=tps("topic-0"))
    assert assignor.member_data(sub) == MemberData(partitions=tps("topic-1"), generation=GEN)
    sub = Subscription(
        topics=("topic",),
        user_data=encode_sticky_user_data(tps("topic1-0", "topic2-1"), GEN - 1),
        generation_id=GEN,
    )
    assert assignor.member_data(sub) == MemberData(partitions=tps("topic1-0", "topic2-1"), generation=GEN - 1)


def test_cooperative_member_data_prefers_subscription_fields() -> None:
    """CooperativeStickyAssignorTest.testMemberDataWithInconsistentData,
    testMemberDataWithEmptyPartitionsAndEqualGeneration, ...AndHigherGeneration."""
    assignor = CooperativeStickyAssignor()
    sub = Subscription(
        topics=("topic",), user_data=encode_cooperative_user_data(GEN), owned_partitions=tps("topic-0")
    )
    assert assignor.member_data(sub) == MemberData(partitions=tps("topic-0"), generation=GEN)
    sub = Subscription(
        topics=("topic",),
        user_data=encode_cooperative_user_data(GEN - 1),
        owned_partitions=(),
        generation_id=GEN,
    )
    assert assignor.member_data(sub) == MemberData(partitions=(), generation=GEN)


def test_cooperative_generation_user_data_round_trip() -> None:
    """CooperativeStickyAssignorTest.testEncodeAndDecodeGeneration / testDecodeGeneration."""
    assignor = CooperativeStickyAssignor()
    assert assignor.subscription_user_data({"topic"}) == b"\xff\xff\xff\xff"
    assert decode_cooperative_user_data(assignor.subscription_user_data({"topic"})) == -1
    from groupcoord.client.assignors import Assignment

    assignor.on_assignment(Assignment(), 10)
    assert assignor.subscription_user_data({"topic"}) == b"\x00\x00\x00\x0a"
    assert decode_cooperative_user_data(None) is None
    assert decode_cooperative_user_data(b"") == -1  # kafka-python's v1 subscriptions carry b""


def test_sticky_user_data_bytes_are_kafkas_v1_struct() -> None:
    """StickyAssignor.serializeTopicPartitionAssignment: [topic, [partition]] then int32 generation,
    no version prefix; v0 lacks the generation; garbage reads as nothing owned, generation -1."""
    data = encode_sticky_user_data((TP("t", 3), TP("a", 1), TP("t", 0)), 7)
    assert data == bytes.fromhex(
        "000000020001 61 00000001 000000010001 74 00000002 00000000 0000000300000007".replace(" ", "")
    )
    assert decode_sticky_user_data(data) == MemberData(
        partitions=(TP("a", 1), TP("t", 0), TP("t", 3)), generation=7
    )
    assert decode_sticky_user_data(data[:-4]) == MemberData(
        partitions=(TP("a", 1), TP("t", 0), TP("t", 3)), generation=None
    )
    assert decode_sticky_user_data(b"\x00\x00\x00\x05\x00") == MemberData(partitions=(), generation=-1)
    assert decode_sticky_user_data(None) == MemberData(partitions=(), generation=None)
    assert StickyAssignor().subscription_user_data({"t"}) is None


@kinds
def test_subscription_not_equal_and_same_partition_claimed_in_three_generations(kind: str) -> None:
    """testSubscriptionNotEqualAndAssignSamePartitionWith3Generation: whatever the generation order of
    the three claimants of topic-2, nothing is assigned twice and every member gets 1 or 2."""
    for g1, g2, g3 in ((1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)):
        subs = {
            "consumer1": v2(kind, ("topic",), tps("topic-0", "topic-2"), g1),
            "consumer2": v2(kind, ("topic",), tps("topic-1", "topic-2", "topic-3"), g2),
            "consumer3": v2(kind, ("topic",), tps("topic-2", "topic-4", "topic-5"), g3),
            "consumer4": v2(kind, ("topic1",), tps("topic1-0"), 2),
        }
        result = run(kind, {"topic": 6, "topic1": 1}, subs)
        every = [tp for parts in result.values() for tp in parts]
        assert len(every) == len(set(every)) == 7
        assert all(1 <= len(parts) <= 2 for parts in result.values())


@kinds
def test_non_equal_subscriptions_at_scale(kind: str) -> None:
    """testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout at half its size (50 topics x 100
    partitions, 250 members: a quarter on the first half of the topics, the rest on the second half),
    then the same group again with what each member owns: valid and balanced, and nothing moves."""
    topics = [f"t{i:03d}" for i in range(50)]
    counts = dict.fromkeys(topics, 100)
    subs = {f"c{i:03d}": fresh(*(topics[:25] if i % 4 == 0 else topics[25:])) for i in range(250)}
    r1 = run(kind, counts, subs, follow_up=False)
    check_valid_and_balanced(counts, subs, r1)
    again = {m: v2(kind, s.topics, r1[m], GEN) for m, s in subs.items()}
    assert run(kind, counts, again, follow_up=False) == r1


@kinds
def test_many_members_leaving_with_random_subscriptions(kind: str) -> None:
    """testLargeAssignmentWithMultipleConsumersLeavingAndRandomSubscription (seeded): 40 topics of 1-10
    partitions, 200 members with random subscriptions, 50 random members leave."""
    import random

    rnd = random.Random(20241025)
    topics = [f"t{i:02d}" for i in range(40)]
    counts = {t: rnd.randint(1, 10) for t in topics}
    subs = {f"c{i:03d}": fresh(*{rnd.choice(topics) for _ in range(rnd.randrange(20))}) for i in range(200)}
    r1 = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, r1)
    subs = {m: v2(kind, s.topics, r1[m], GEN) for m, s in subs.items()}
    for m in rnd.sample(sorted(subs), 50):
        del subs[m]
    r2 = run(kind, counts, subs)
    check_valid_and_balanced(counts, subs, r2)


def test_constrained_members_are_visited_in_java_hashmap_order() -> None:
    """Which member keeps the higher quota follows Kafka's HashMap iteration; the expected order was
    printed by a JVM (OpenJDK 17, ``new HashMap<String, Integer>()`` with these 16 keys)."""
    from groupcoord.client.assignors.sticky import _java_hash_order

    java_order = [
        "consumer-4-2fa91425-cb00-8853-9d2c-67eda13ffe79",
        "consumer-9-a66b0d38-9d95-847e-bd29-9753a7677796",
        "consumer-5-244caf9c-4dab-b481-7253-edc618187993",
        "consumer-6-e3eff9c0-cf44-dd3f-89e7-d15f17362f25",
        "consumer-1-73ab4876-7734-d7c1-c7fd-e805ec99108d",
        "consumer-3-79cb9e86-830c-71c2-cdcc-69292f45e678",
        "consumer-10-d4ea65d0-03d7-1684-9f85-58a628518867",
        "instance-\u00e9-1",
        "consumer-2-309d6b79-965e-da32-dae4-45508201e2bd",
        "consumer-7-986e86cb-0ab8-ab67-a26b-7f62b1852f27",
        "consumer3",
        "consumer-0-db5b5fab-8f4d-3e27-dda1-494c73cf256d",
        "consumer2",
        "consumer1",
        "consumer-8-73f778aa-f6fa-5db8-656a-bd72fb710734",
        "consumer-11-09208a65-0f3e-bdd3-102b-938b8743feb6",
    ]
    assert _java_hash_order(sorted(java_order)) == java_order
