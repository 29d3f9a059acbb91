"""The sticky assignors: ``sticky`` (eager, KIP-54) and ``cooperative-sticky`` (KIP-429).

Both compute the same assignment, with two goals in order (Kafka's ``AbstractStickyAssignor``):

1. **Balance**: with identical subscriptions, partition counts differ by at most one; in
   general, no partition can move from a member to a subscriber of its topic that has two or
   more fewer partitions.
2. **Stickiness**: a member keeps as many of the partitions it owned as balance allows.

The result is deterministic: it depends on member ids, subscriptions, owned partitions and
generations, never on dict order.

Where the previous assignment comes from
----------------------------------------
* ``sticky`` (eager: members revoke everything before joining, so the subscription's owned
  partitions are empty) carries it in its user data, in the layout Kafka's ``StickyAssignor``
  writes (version 1 of its unversioned struct, no version prefix): ``previous_assignment``
  array of {topic string, partitions int32 array}, then ``generation`` int32. Version 0 of
  that struct (no generation) is read too; unreadable user data counts as "nothing owned,
  generation -1".
* ``cooperative-sticky`` takes the owned partitions from the subscription (v1+) and the
  generation from the subscription (v2+); for v0/v1 subscriptions the generation is the int32
  Kafka's ``CooperativeStickyAssignor`` puts in its user data (we write it too).

Claims are resolved first: a partition claimed by two members of the same generation is
owned by neither; claimed in different generations, the higher generation keeps it. Owned
partitions of topics that no longer exist, no longer have that partition, or that the member
no longer subscribes to are dropped.

Two builders
------------
* All subscriptions equal (Kafka's ``ConstrainedAssignmentBuilder``): ``P`` partitions over
  ``N`` members, quotas ``P // N`` and ``ceil(P / N)``, exactly ``P % N`` members at the higher
  quota. Members, in the order a Java ``HashMap`` of their ids iterates (so a Java leader and
  we agree on who keeps the higher quota), keep owned partitions (sorted by partition, then topic)
  up to their quota; the free partitions (by topic, then partition) fill the members below
  the lower quota in turn, then those that may still take one more.
* Otherwise (the general case): owned partitions stay; each free partition (topics with
  fewer potential subscribers first) goes to its least-loaded subscriber; then single
  partitions move from a most-loaded member to a least-loaded subscriber while they differ by
  two or more, preferring partitions the donor did not own before this round, then ones the
  receiver owned in an earlier generation. Every move lowers the sum of squared counts, so
  this ends, at an assignment balanced in the sense above. (Kafka reaches such an assignment
  through its own search; on identical inputs the exact partitions may differ from Kafka's in
  this case, the balance and stickiness properties do not.)

Cooperative rounds
------------------
``cooperative-sticky`` then withholds every partition that would be handed to a member other
than its (resolved) owner while another member still claims it: the claimant revokes it,
rejoins, and the next round hands it over (Kafka's ``CooperativeStickyAssignor.adjustAssignment``).

Where we differ from Kafka's Java assignors (on purpose)
--------------------------------------------------------
* General case: same guarantees, not always the same partitions (see above).
* Claim conflicts compare each claimant's own generation (from its subscription or, for v0/v1,
  its user data); Kafka reads the *other* claimant's generation from the subscription field
  only, so a v0/v1 member counts as generation -1 there.
* A cooperative round withholds a partition from any member that did not own it (after claims
  are resolved) while another member claims it - also from a stale claimant, which Kafka's
  general path would hand it to. Strictly safer; it costs at most one more round.
* Owned partitions beyond a topic's current partition count are dropped in both builders.
* kafka-python 3's version-prefixed sticky user data is read (Kafka would drop it).

Not implemented: the rack-aware variants (KIP-881) need replica racks per partition, which the
:class:`Assignor` interface does not carry.
"""

from __future__ import annotations

import bisect
import logging
import math
import struct
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from groupcoord.client.assignors.base import (
    DEFAULT_GENERATION,
    Assignment,
    BaseAssignor,
    RebalanceProtocol,
    Subscription,
)
from groupcoord.client.types import TopicPartition

log = logging.getLogger(__name__)

__all__ = [
    "CooperativeStickyAssignor",
    "MemberData",
    "StickyAssignor",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "sticky_assign",
]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberData:
    """What a member owned and in which generation; ``generation`` None = not known."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None


# --------------------------------------------------------------------------- user data


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int | None) -> bytes:
    """Kafka ``StickyAssignor`` user data: v1 (with generation) or, if ``generation`` is None, v0.

    Topics sorted, partitions ascending per topic.
    """
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(set(partitions)):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = bytearray(_INT32.pack(len(by_topic)))
    for topic, parts in by_topic.items():
        name = topic.encode()
        out += _INT16.pack(len(name)) + name + _INT32.pack(len(parts))
        for p in parts:
            out += _INT32.pack(p)
    if generation is not None:
        out += _INT32.pack(generation)
    return bytes(out)


def _read_previous_assignment(data: bytes) -> tuple[list[TopicPartition], int]:
    # raises struct.error / ValueError / UnicodeDecodeError on malformed input
    pos = 0
    (topics,) = _INT32.unpack_from(data, pos)
    pos += 4
    if topics < 0:
        raise ValueError("negative topic count")
    partitions: list[TopicPartition] = []
    for _ in range(topics):
        (length,) = _INT16.unpack_from(data, pos)
        pos += 2
        if length < 0 or pos + length > len(data):
            raise ValueError("bad topic name length")
        topic = data[pos : pos + length].decode()
        pos += length
        (count,) = _INT32.unpack_from(data, pos)
        pos += 4
        if count < 0:
            raise ValueError("negative partition count")
        for _ in range(count):
            (p,) = _INT32.unpack_from(data, pos)
            pos += 4
            partitions.append(TopicPartition(topic, p))
    return partitions, pos


def decode_sticky_user_data(data: bytes | None) -> MemberData:
    """Read Kafka ``StickyAssignor`` user data (v1, else v0), as ``StickyAssignor.memberData`` does.

    None or empty -> nothing owned, generation unknown; unreadable -> nothing owned,
    generation -1. kafka-python 3.x's variant (the struct behind an int16 version) is read too.
    """
    if not data:
        return MemberData(partitions=(), generation=None)
    data = bytes(data)
    try:
        partitions, pos = _read_previous_assignment(data)
    except (struct.error, ValueError, UnicodeDecodeError):
        return _decode_version_prefixed(data)
    if len(data) - pos >= 4:
        return MemberData(partitions=tuple(partitions), generation=_INT32.unpack_from(data, pos)[0])
    return MemberData(partitions=tuple(partitions), generation=None)


def _decode_version_prefixed(data: bytes) -> MemberData:
    # kafka-python 3.x writes the same struct behind an int16 version (1); Kafka and aiokafka
    # do not. Its topic count then starts 0x0001..., which Kafka's layout cannot parse, so
    # there is no ambiguity in trying this second.
    try:
        if len(data) < 2 or _INT16.unpack_from(data, 0)[0] not in (0, 1):
            raise ValueError("no version prefix")
        version = _INT16.unpack_from(data, 0)[0]
        partitions, pos = _read_previous_assignment(data[2:])
        generation = _INT32.unpack_from(data, 2 + pos)[0] if version == 1 else None
    except (struct.error, ValueError, UnicodeDecodeError):
        log.debug("unreadable sticky assignor user data of %d bytes; ignoring it", len(data))
        return MemberData(partitions=(), generation=DEFAULT_GENERATION)
    return MemberData(partitions=tuple(partitions), generation=generation)


def encode_cooperative_user_data(generation: int) -> bytes:
    """Kafka ``CooperativeStickyAssignor`` user data: the member's generation as one int32."""
    return _INT32.pack(generation)


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """The generation in cooperative-sticky user data: None if absent, -1 if unreadable."""
    if data is None:
        return None
    if len(data) < 4:
        return DEFAULT_GENERATION
    value: int = _INT32.unpack_from(bytes(data), 0)[0]
    return value


# --------------------------------------------------------------------------- the algorithm


@dataclass(slots=True)
class _Claims:
    owned: dict[str, list[TopicPartition]]  # resolved, per member, valid partitions only
    multi: set[TopicPartition]  # claimed by two members of one generation
    prev_owner: dict[TopicPartition, tuple[str, int]]  # older generations' claims (member, generation)


def _resolve_claims(members: list[str], data: Mapping[str, MemberData], counts: Mapping[str, int]) -> _Claims:
    """Kafka's ``allSubscriptionsEqual`` ownership pass (members in Java's HashMap order)."""
    members = _java_hash_order(members)
    owned: dict[str, dict[TopicPartition, None]] = {m: {} for m in members}  # ordered sets
    holder: dict[TopicPartition, str] = {}
    multi: set[TopicPartition] = set()
    generation: dict[str, int] = {}
    for m in members:
        member_gen = data[m].generation
        generation[m] = member_gen if member_gen is not None else DEFAULT_GENERATION
    for m in members:
        gen = generation[m]
        for tp in dict.fromkeys(data[m].partitions):  # a member listing a partition twice claims it once
            if tp.partition < 0 or tp.partition >= counts.get(tp.topic, 0):
                continue
            other = holder.get(tp)
            if other is None:
                owned[m][tp] = None
                holder[tp] = m
                continue
            other_gen = generation[other]
            if gen == other_gen:
                multi.add(tp)
                owned[other].pop(tp, None)
                holder[tp] = m
            elif gen > other_gen:
                owned[m][tp] = None
                owned[other].pop(tp, None)
                holder[tp] = m
    if multi:
        log.warning(
            "%d partition(s) claimed by two members of the same generation, so owned by neither: %s",
            len(multi),
            ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(multi)[:10]),
        )
    max_generation = max(generation.values(), default=DEFAULT_GENERATION)
    prev_owner: dict[TopicPartition, tuple[str, int]] = {}
    for m in members:
        gen = generation[m]
        if gen >= max_generation:
            continue
        for tp in data[m].partitions:
            if tp not in prev_owner or gen > prev_owner[tp][1]:
                prev_owner[tp] = (m, gen)
    return _Claims(owned={m: list(parts) for m, parts in owned.items()}, multi=multi, prev_owner=prev_owner)


def _java_hash_order(members: list[str]) -> list[str]:
    """The order a ``java.util.HashMap`` keyed by these member ids iterates them in.

    Kafka's constrained builder lets members keep owned partitions in its HashMap's order,
    which decides who keeps the higher quota when more members own it than may keep it;
    following the same order gives the same assignment as a Java leader. Java orders members
    that share a bucket by insertion (the order of the JoinGroup response), which we cannot
    know; they fall back to member-id order. (Checked against a JVM's ``HashMap`` on 300
    random groups of up to 60 members: bucket order always matched.)
    """
    capacity = 16
    while len(members) > capacity * 0.75:
        capacity *= 2

    def bucket(member: str) -> int:
        h = 0
        units = member.encode("utf-16-be")
        for i in range(0, len(units), 2):
            h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(members, key=lambda m: (bucket(m), m))


def _constrained(
    members: list[str], topics: list[str], counts: Mapping[str, int], claims: _Claims
) -> dict[str, list[TopicPartition]]:
    """All members subscribe to the same topics: quota-based, see the module docstring."""
    total = sum(counts[t] for t in topics)
    n = len(members)
    min_quota = total // n
    max_quota = math.ceil(total / n)
    expected_over = total % n
    over = 0
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in members}
    under_min: list[str] = []
    at_min: list[str] = []  # may take one more partition
    kept: set[TopicPartition] = set()
    for m in _java_hash_order(members):
        owned = sorted(
            (tp for tp in claims.owned[m] if tp not in claims.multi), key=lambda tp: (tp.partition, tp.topic)
        )
        if len(owned) < min_quota:
            keep = owned
            under_min.append(m)
        elif len(owned) >= max_quota and over < expected_over:
            over += 1
            if over == expected_over:
                at_min.clear()
            keep = owned[:max_quota]
        else:
            keep = owned[:min_quota]
            if over < expected_over:
                at_min.append(m)
        assignment[m].extend(keep)
        kept.update(keep)

    free = [
        TopicPartition(t, p) for t in topics for p in range(counts[t]) if TopicPartition(t, p) not in kept
    ]
    under_min.sort()
    at_min.sort()
    i = 0
    for tp in free:
        from_under = True
        if i < len(under_min):
            member = under_min[i]
        elif under_min:
            i = 0
            member = under_min[0]
        elif at_min:
            member = at_min.pop(0)
            from_under = False
        else:  # cannot happen: the quotas add up to the partition count
            raise AssertionError(f"sticky assignor: no member left for {tp}")
        assignment[member].append(tp)
        size = len(assignment[member])
        if from_under and size == min_quota:
            under_min.pop(i)
            at_min.append(member)
        else:
            if from_under:
                i += 1
            if size == max_quota:
                over += 1
    return assignment


def _general(
    members: list[str],
    subscribed: Mapping[str, frozenset[str]],
    topics: list[str],
    counts: Mapping[str, int],
    claims: _Claims,
) -> dict[str, list[TopicPartition]]:
    """Different subscriptions: keep owned partitions, place free ones, then move toward balance."""
    potential = {t: [m for m in members if t in subscribed[m]] for t in topics}
    assignment: dict[str, list[TopicPartition]] = {}
    owner: dict[TopicPartition, str] = {}
    for m in members:
        assignment[m] = [tp for tp in claims.owned[m] if tp.topic in subscribed[m] and tp not in claims.multi]
        for tp in assignment[m]:
            owner[tp] = m
    kept = {m: frozenset(parts) for m, parts in assignment.items()}

    for topic in sorted(topics, key=lambda t: (len(potential[t]), t)):
        if not potential[topic]:
            continue
        for p in range(counts[topic]):
            tp = TopicPartition(topic, p)
            if tp in owner:
                continue
            member = min(potential[topic], key=lambda m: (len(assignment[m]), m))
            assignment[member].append(tp)
            owner[tp] = member

    return _balance(members, subscribed, assignment, kept, claims)


class _Holdings:
    """One member's partitions per topic, split into kept (owned before) and new, each sorted."""

    __slots__ = ("kept", "new", "size")

    def __init__(self) -> None:
        self.kept: dict[str, list[TopicPartition]] = {}
        self.new: dict[str, list[TopicPartition]] = {}
        self.size = 0

    def add(self, tp: TopicPartition, kept: bool) -> None:
        bisect.insort((self.kept if kept else self.new).setdefault(tp.topic, []), tp)
        self.size += 1

    def remove(self, tp: TopicPartition, kept: bool) -> None:
        bucket = (self.kept if kept else self.new)[tp.topic]
        del bucket[bisect.bisect_left(bucket, tp)]
        self.size -= 1

    def movable(self, topics: frozenset[str]) -> bool:
        return any(self.new.get(t) or self.kept.get(t) for t in topics)

    def smallest(self, topics: frozenset[str], kept: bool) -> TopicPartition | None:
        buckets = self.kept if kept else self.new
        heads = [buckets[t][0] for t in topics if buckets.get(t)]
        return min(heads) if heads else None


def _balance(
    members: list[str],
    subscribed: Mapping[str, frozenset[str]],
    assignment: dict[str, list[TopicPartition]],
    kept: Mapping[str, frozenset[TopicPartition]],
    claims: _Claims,
) -> dict[str, list[TopicPartition]]:
    """Move single partitions from the most-loaded to the least-loaded eligible member while
    their counts differ by two or more. The partition moved is, in order of preference: one the
    donor did not own before this round and the receiver owned in an earlier generation; one the
    donor did not own; one the receiver owned earlier; the smallest."""
    holdings = {m: _Holdings() for m in members}
    owner: dict[TopicPartition, str] = {}
    for m in members:
        for tp in assignment[m]:
            holdings[m].add(tp, tp in kept[m])
            owner[tp] = m
    earlier: dict[str, list[TopicPartition]] = {}
    for tp, (m, _gen) in sorted(claims.prev_owner.items()):
        earlier.setdefault(m, []).append(tp)
    order = sorted((holdings[m].size, m) for m in members)

    def choose(donor: str, receiver: str) -> TopicPartition:
        topics = subscribed[receiver]
        back = [tp for tp in earlier.get(receiver, ()) if owner.get(tp) == donor and tp.topic in topics]
        for was_kept in (False, True):
            for tp in back:
                if (tp in kept[donor]) is was_kept:
                    return tp
            best = holdings[donor].smallest(topics, was_kept)
            if best is not None:
                return best
        raise AssertionError("choose() called for a pair with nothing movable")

    while True:
        move: tuple[str, str] | None = None
        for receiver_size, receiver in order:
            for donor_size, donor in reversed(order):
                if donor_size - receiver_size < 2:
                    break
                if holdings[donor].movable(subscribed[receiver]):
                    move = (donor, receiver)
                    break
            if move is not None:
                break
        if move is None:
            break
        donor, receiver = move
        tp = choose(donor, receiver)
        for m in move:
            del order[bisect.bisect_left(order, (holdings[m].size, m))]
        holdings[donor].remove(tp, tp in kept[donor])
        holdings[receiver].add(tp, tp in kept[receiver])
        owner[tp] = receiver
        for m in move:
            bisect.insort(order, (holdings[m].size, m))

    return {
        m: [tp for bucket in (*h.kept.values(), *h.new.values()) for tp in bucket]
        for m, h in holdings.items()
    }


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    member_data: Mapping[str, MemberData],
    *,
    cooperative: bool,
) -> dict[str, Assignment]:
    """The sticky assignment (withholding moved partitions if ``cooperative``); see the module docstring."""
    members = sorted(subscriptions)
    if not members:
        return {}
    subscribed = {m: frozenset(subscriptions[m].topics) for m in members}
    topics = sorted(t for t in set().union(*subscribed.values()) if partitions_per_topic.get(t, 0) > 0)
    counts = {t: partitions_per_topic[t] for t in topics}
    claims = _resolve_claims(members, member_data, counts)
    if all(subscribed[m] == subscribed[members[0]] for m in members):
        result = _constrained(members, topics, counts, claims)
    else:
        result = _general(members, subscribed, topics, counts, claims)

    if cooperative:
        claimants: dict[TopicPartition, set[str]] = {}
        for m in members:
            for tp in member_data[m].partitions:
                claimants.setdefault(tp, set()).add(m)
        resolved = {m: set(claims.owned[m]) - claims.multi for m in members}
        for m in members:
            withheld = [tp for tp in result[m] if tp not in resolved[m] and claimants.get(tp, set()) - {m}]
            if withheld:
                log.debug("withholding %s from %s until their owners revoke them", withheld, m)
                result[m] = [tp for tp in result[m] if tp not in withheld]
    return {m: Assignment(partitions=tuple(sorted(result[m]))) for m in members}


# --------------------------------------------------------------------------- the assignors


class StickyAssignor(BaseAssignor):
    """Kafka's ``StickyAssignor`` (eager): the previous assignment travels in the user data."""

    name = "sticky"
    rebalance_protocol = RebalanceProtocol.EAGER

    def __init__(self) -> None:
        self._member_assignment: tuple[TopicPartition, ...] | None = None
        self._generation = DEFAULT_GENERATION

    def subscription_user_data(self, topics: AbstractSet[str]) -> bytes | None:
        if self._member_assignment is None:
            return None
        return encode_sticky_user_data(self._member_assignment, self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        """Always the user data: an eager member has revoked its partitions before joining."""
        return decode_sticky_user_data(subscription.user_data)

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        data = {m: self.member_data(sub) for m, sub in subscriptions.items()}
        return sticky_assign(partitions_per_topic, subscriptions, data, cooperative=False)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._member_assignment = assignment.partitions
        self._generation = generation


class CooperativeStickyAssignor(BaseAssignor):
    """Kafka's ``CooperativeStickyAssignor`` (KIP-429): owned partitions from the subscription."""

    name = "cooperative-sticky"
    rebalance_protocol = RebalanceProtocol.COOPERATIVE

    def __init__(self) -> None:
        self._generation = DEFAULT_GENERATION

    def subscription_user_data(self, topics: AbstractSet[str]) -> bytes | None:
        return encode_cooperative_user_data(self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        """Owned partitions from the subscription; the generation from it (v2+) or the user data."""
        if subscription.generation_id >= 0:
            return MemberData(partitions=subscription.owned_partitions, generation=subscription.generation_id)
        return MemberData(
            partitions=subscription.owned_partitions,
            generation=decode_cooperative_user_data(subscription.user_data),
        )

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        data = {m: self.member_data(sub) for m, sub in subscriptions.items()}
        return sticky_assign(partitions_per_topic, subscriptions, data, cooperative=True)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._generation = generation
