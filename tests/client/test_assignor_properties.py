"""Hypothesis properties of the assignors: validity for all four; balance, stickiness and the
cooperative two-phase rule for the sticky ones."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sticky_cases import check_valid_and_balanced, cooperative_violations, v2

from groupcoord.client.assignors import Subscription, get_assignor
from groupcoord.client.types import TopicPartition as TP

NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOPICS = ("a", "b", "c", "d")


@st.composite
def groups(draw: st.DrawFn, *, identical: bool = False) -> tuple[dict[str, int], dict[str, Subscription]]:
    counts = {
        t: draw(st.integers(0, 7)) for t in draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
    }
    topic_pool = sorted(set(counts) | {"zz-no-metadata"})
    n = draw(st.integers(1, 6))
    members = draw(st.lists(st.text("mnop", min_size=1, max_size=3), min_size=n, max_size=n, unique=True))
    shared = tuple(draw(st.lists(st.sampled_from(topic_pool), min_size=1, unique=True)))
    subs = {}
    for m in members:
        topics = (
            shared
            if identical
            else tuple(draw(st.lists(st.sampled_from(topic_pool), min_size=1, unique=True)))
        )
        instance = draw(st.none() | st.sampled_from(["i1", "i2", "i3", "i4", "i5", "i6"]))
        subs[m] = Subscription(topics=topics, group_instance_id=instance)
    # instance ids are unique within a group
    seen: set[str] = set()
    for m, s in list(subs.items()):
        if s.group_instance_id in seen:
            subs[m] = Subscription(topics=s.topics)
        elif s.group_instance_id is not None:
            seen.add(s.group_instance_id)
    return counts, subs


def assigned(
    name: str, counts: Mapping[str, int], subs: Mapping[str, Subscription]
) -> dict[str, tuple[TP, ...]]:
    return {m: a.partitions for m, a in get_assignor(name).assign(counts, subs).items()}


def check_valid(
    counts: Mapping[str, int], subs: Mapping[str, Subscription], result: Mapping[str, tuple[TP, ...]]
) -> None:
    assert set(result) == set(subs)
    owners: dict[TP, str] = {}
    for m, parts in result.items():
        for tp in parts:
            assert tp.topic in subs[m].topics
            assert tp not in owners
            owners[tp] = m
    subscribed = {t for s in subs.values() for t in s.topics}
    assert set(owners) == {TP(t, p) for t in subscribed for p in range(counts.get(t, 0))}


@SETTINGS
@given(st.sampled_from(NAMES), groups(), st.randoms(use_true_random=False))
def test_every_subscribed_partition_goes_to_exactly_one_subscriber_deterministically(
    name: str, group: tuple[dict[str, int], dict[str, Subscription]], rnd: object
) -> None:
    counts, subs = group
    result = assigned(name, counts, subs)
    check_valid(counts, subs, result)
    shuffled = list(subs.items())
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert assigned(name, dict(reversed(list(counts.items()))), dict(shuffled)) == result


@SETTINGS
@given(st.sampled_from(("roundrobin", "sticky", "cooperative-sticky")), groups(identical=True))
def test_identical_subscriptions_are_balanced_within_one(
    name: str, group: tuple[dict[str, int], dict[str, Subscription]]
) -> None:
    counts, subs = group
    sizes = [len(p) for p in assigned(name, counts, subs).values()]
    assert max(sizes) - min(sizes) <= 1


@SETTINGS
@given(st.sampled_from(("sticky", "cooperative-sticky")), groups())
def test_sticky_assignments_are_balanced_for_any_subscriptions(
    name: str, group: tuple[dict[str, int], dict[str, Subscription]]
) -> None:
    counts, subs = group
    check_valid_and_balanced(counts, subs, assigned(name, counts, subs))


@st.composite
def membership_changes(
    draw: st.DrawFn, *, identical: bool
) -> tuple[dict[str, int], dict[str, Subscription], dict[str, Subscription]]:
    """A settled group, then some members leave and some join (same topics for the joiners)."""
    counts, subs = draw(groups(identical=identical))
    leaving = set(draw(st.lists(st.sampled_from(sorted(subs)), unique=True, max_size=len(subs) - 1)))
    joining = draw(st.lists(st.text("xyz", min_size=1, max_size=2), unique=True, max_size=3))
    topic_pool = sorted({t for s in subs.values() for t in s.topics})
    after = {m: s for m, s in subs.items() if m not in leaving}
    for j in joining:
        topics = (
            next(iter(subs.values())).topics
            if identical
            else tuple(draw(st.lists(st.sampled_from(topic_pool), min_size=1, unique=True)))
        )
        after[j] = Subscription(topics=topics)
    return counts, subs, after


@SETTINGS
@given(st.sampled_from(("sticky", "cooperative-sticky")), membership_changes(identical=True))
def test_identical_subscriptions_each_survivor_only_gains_or_only_loses(
    name: str, change: tuple[dict[str, int], dict[str, Subscription], dict[str, Subscription]]
) -> None:
    """Maximal stickiness with identical subscriptions: a survivor keeps everything it owned (and may
    gain) or keeps a subset (when it must give some up); nothing is shuffled between survivors."""
    counts, before, after = change
    first = assigned("sticky", counts, before)
    subs = {m: v2(name, s.topics, first.get(m, ()), 1 if m in first else -1) for m, s in after.items()}
    if name == "cooperative-sticky":
        # settle the follow-up rounds first
        result = assigned(name, counts, subs)
        for _ in range(4):
            if not cooperative_violations(subs, result):
                break
            subs = {m: v2(name, s.topics, result[m], 2) for m, s in subs.items()}
            result = assigned(name, counts, subs)
        final = result
    else:
        final = assigned(name, counts, subs)
    sizes = [len(p) for p in final.values()]
    assert max(sizes) - min(sizes) <= 1
    for m in after:
        if m in first:
            old, new = set(first[m]), set(final[m])
            assert old <= new or new <= old, f"{m}: {sorted(old)} -> {sorted(new)}"


@SETTINGS
@given(membership_changes(identical=False))
def test_cooperative_never_hands_over_a_partition_in_the_round_it_is_revoked_and_settles(
    change: tuple[dict[str, int], dict[str, Subscription], dict[str, Subscription]],
) -> None:
    """KIP-429: in every round no partition is both revoked from one member and added to another;
    repeated rounds (each member reporting what it now owns) settle within 4 follow-ups to a valid,
    balanced assignment (CooperativeStickyAssignorTest.verifyValidityAndBalance)."""
    counts, before, after = change
    first = assigned("cooperative-sticky", counts, before)
    subs = {m: v2("cooperative-sticky", s.topics, first.get(m, ()), 1) for m, s in after.items()}
    result = assigned("cooperative-sticky", counts, subs)
    for generation in range(2, 7):
        if not cooperative_violations(subs, result):
            break
        subs = {m: v2("cooperative-sticky", s.topics, result[m], generation) for m, s in subs.items()}
        result = assigned("cooperative-sticky", counts, subs)
    else:
        raise AssertionError("did not settle")
    check_valid_and_balanced(counts, subs, result)


@SETTINGS
@given(st.sampled_from(("sticky", "cooperative-sticky")), membership_changes(identical=False))
def test_a_settled_sticky_assignment_is_a_fixed_point(
    name: str, change: tuple[dict[str, int], dict[str, Subscription], dict[str, Subscription]]
) -> None:
    """Stickiness in the general case: once members report what they own, rebalancing again with no
    change moves nothing (and a membership change yields a valid, balanced assignment)."""
    counts, before, after = change
    first = assigned("sticky", counts, before)
    subs = {m: v2(name, s.topics, first.get(m, ()), 1) for m, s in after.items()}
    result = assigned(name, counts, subs)
    for generation in range(2, 7):
        if name == "sticky" or not cooperative_violations(subs, result):
            break
        subs = {m: v2(name, s.topics, result[m], generation) for m, s in subs.items()}
        result = assigned(name, counts, subs)
    check_valid_and_balanced(counts, subs, result)
    again = {m: v2(name, s.topics, result[m], 9) for m, s in subs.items()}
    assert assigned(name, counts, again) == result


@SETTINGS
@given(
    st.integers(1, 12),
    st.lists(st.tuples(st.sets(st.integers(0, 7), max_size=3), st.integers(0, 3)), min_size=1, max_size=5),
)
def test_eager_sticky_stays_sticky_through_its_own_user_data_bytes(
    partitions: int, rounds: list[tuple[set[int], int]]
) -> None:
    """Each member runs its own StickyAssignor; the previous assignment travels only in the user data
    (eager: owned partitions empty), through the real subscription and assignment bytes. After every
    membership change a survivor only gains or only loses partitions, and the group stays balanced."""
    from groupcoord.client.assignors import (
        StickyAssignor,
        assignment_from_bytes,
        assignment_to_bytes,
        subscription_from_bytes,
        subscription_to_bytes,
    )

    counts = {"t": partitions}
    members: dict[str, StickyAssignor] = {"m0": StickyAssignor()}
    previous: dict[str, set[TP]] = {}
    for generation, (leaving, joining) in enumerate(rounds, start=1):
        for i in sorted(leaving):
            if len(members) > 1:
                members.pop(f"m{i}", None)
        for j in range(joining):
            members.setdefault(f"m{generation}{j}", StickyAssignor())
        subs = {
            m: subscription_from_bytes(
                subscription_to_bytes(Subscription(topics=("t",), user_data=a.subscription_user_data({"t"})))
            )
            for m, a in members.items()
        }
        leader = members[min(members)]
        wire = {m: assignment_to_bytes(a) for m, a in leader.assign(counts, subs).items()}
        current: dict[str, set[TP]] = {}
        for m, a in members.items():
            got = assignment_from_bytes(wire[m])
            a.on_assignment(got, generation)
            current[m] = set(got.partitions)
        sizes = [len(p) for p in current.values()]
        assert max(sizes) - min(sizes) <= 1
        assert set().union(*current.values()) == {TP("t", p) for p in range(partitions)}
        for m, parts in current.items():
            if m in previous:
                assert previous[m] <= parts or parts <= previous[m], (m, previous[m], parts)
        previous = current
