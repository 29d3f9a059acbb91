"""Helpers shared by the sticky assignor tests: subscriptions as each Kafka client version builds
them, and the validity/balance checks of Kafka's AbstractStickyAssignorTest."""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.client.assignors import Assignor, CooperativeStickyAssignor, StickyAssignor, Subscription
from groupcoord.client.assignors.sticky import encode_cooperative_user_data, encode_sticky_user_data
from groupcoord.client.types import TopicPartition as TP

KINDS = ("sticky", "cooperative-sticky")


def make(kind: str) -> Assignor:
    return StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()


def tps(*names: str) -> tuple[TP, ...]:
    """``tps("topic1-0", "topic2-1")``, sorted."""
    out = []
    for name in names:
        topic, _, p = name.rpartition("-")
        out.append(TP(topic, int(p)))
    return tuple(sorted(out))


def fresh(*topics: str) -> Subscription:
    """A first join: nothing owned, no generation (AbstractStickyAssignorTest.subscription)."""
    return Subscription(topics=topics)


def v2(kind: str, topics: tuple[str, ...], owned: tuple[TP, ...], generation: int) -> Subscription:
    """buildSubscriptionV2Above: owned partitions and generation in the subscription (and, for
    sticky, also in its user data as Kafka's StickyAssignor writes it)."""
    user_data = (
        encode_sticky_user_data(owned, generation)
        if kind == "sticky"
        else encode_cooperative_user_data(generation)
    )
    return Subscription(topics=topics, user_data=user_data, owned_partitions=owned, generation_id=generation)


def v1(kind: str, topics: tuple[str, ...], owned: tuple[TP, ...], generation: int) -> Subscription:
    """buildSubscriptionV1: owned partitions but no generation field; the generation is in the user data."""
    user_data = (
        encode_sticky_user_data(owned, generation)
        if kind == "sticky"
        else encode_cooperative_user_data(generation)
    )
    return Subscription(topics=topics, user_data=user_data, owned_partitions=owned)


def v0_sticky(topics: tuple[str, ...], owned: tuple[TP, ...], generation: int) -> Subscription:
    """StickyAssignorTest.buildSubscriptionV0: only the user data knows the previous assignment."""
    return Subscription(topics=topics, user_data=encode_sticky_user_data(owned, generation))


def run(
    kind: str, counts: Mapping[str, int], subs: Mapping[str, Subscription], *, follow_up: bool = True
) -> dict[str, tuple[TP, ...]]:
    """One assignment; for cooperative-sticky, also the follow-up rebalances the revocations cause
    (CooperativeStickyAssignorTest.verifyValidityAndBalance: at most 4), each checked for
    "no partition added to one member while revoked from another"."""
    assignor = make(kind)
    current = dict(subs)
    result = {m: a.partitions for m, a in assignor.assign(counts, current).items()}
    assert set(result) == set(current)
    if kind == "sticky" or not follow_up:
        return result
    for _ in range(5):
        revoked = cooperative_violations(current, result)
        if not revoked:
            return result
        current = {m: v2(kind, s.topics, result[m], 1) for m, s in current.items()}
        result = {m: a.partitions for m, a in assignor.assign(counts, current).items()}
    raise AssertionError("cooperative assignment did not settle within 4 follow-up rebalances")


def cooperative_violations(subs: Mapping[str, Subscription], result: Mapping[str, tuple[TP, ...]]) -> set[TP]:
    """The partitions revoked this round; asserts none of them was given to another member."""
    added: set[TP] = set()
    revoked: set[TP] = set()
    for m, sub in subs.items():
        owned, assigned = set(sub.owned_partitions), set(result[m])
        added |= assigned - owned
        revoked |= owned - assigned
    assert not (added & revoked), f"partitions moved within one cooperative round: {sorted(added & revoked)}"
    return revoked


def check_valid_and_balanced(
    counts: Mapping[str, int], subs: Mapping[str, Subscription], result: Mapping[str, tuple[TP, ...]]
) -> None:
    """Every partition of a subscribed topic assigned exactly once, only to subscribers; and no
    partition could move to a subscriber of its topic with two or more fewer partitions."""
    seen: dict[TP, str] = {}
    for m, parts in result.items():
        for tp in parts:
            assert tp.topic in subs[m].topics, f"{tp} given to {m}, not subscribed"
            assert tp not in seen, f"{tp} given to {seen[tp]} and {m}"
            seen[tp] = m
    subscribed = {t for s in subs.values() for t in s.topics}
    expected = {TP(t, p) for t in subscribed for p in range(counts.get(t, 0))}
    assert set(seen) == expected
    for donor, parts in result.items():
        for receiver, other in result.items():
            if len(parts) - len(other) >= 2:
                movable = [tp for tp in parts if tp.topic in subs[receiver].topics]
                assert not movable, (
                    f"{movable} could move from {donor} ({len(parts)}) to {receiver} ({len(other)})"
                )


def fully_balanced(result: Mapping[str, tuple[TP, ...]]) -> bool:
    sizes = [len(p) for p in result.values()]
    return max(sizes) - min(sizes) <= 1
