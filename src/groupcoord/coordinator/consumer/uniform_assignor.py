"""The ``uniform`` server assignor, Kafka's default (4.1 ``UniformAssignor`` and its two builders).

Homogeneous subscriptions (every member subscribes to the same topics,
``UniformHomogeneousAssignmentBuilder``): balance first (member sizes differ by at most one), then
stickiness. Every member keeps up to its quota of its previous target; only the excess moves,
with the partitions of new topics and the partitions nobody held.

Heterogeneous subscriptions (``UniformHeterogeneousAssignmentBuilder``): every member keeps its
previous target for the topics it still subscribes to; the partitions nobody holds go, topic by
topic, to the least-loaded subscribers; then topics with two or more subscribers are balanced,
moving the highest-numbered partition of the most-loaded subscriber to the least-loaded one
until their totals differ by at most one (at most 16 passes over the topics, ending early after
a pass that moves nothing).

Where Kafka iterates a HashMap (members, topics of a previous target) we iterate sorted member ids
and topic ids in ``Uuid.compareTo`` order (``assignment.py``). The heterogeneous builder's member
and topic orders are fully specified by Kafka, so its outputs match Kafka's tests exactly when
member ids sort as Kafka's test inserts them. Racks are not used (Kafka 4.x, KAFKA-17747).
The cursor structure Kafka uses for "next least/most loaded member" is expressed here as a
choice by (live size, rank at the start of the topic), which visits members in the same order.
"""

from __future__ import annotations

import heapq
import uuid

from groupcoord.coordinator.consumer.assignment import (
    Assignment,
    GroupSpec,
    PartitionAssignorError,
    SubscriptionType,
    TopicDescriber,
    topic_id_order,
)

__all__ = ["UniformAssignor"]

#: Kafka's UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT.
MAX_BALANCE_PASSES = 16


class UniformAssignor:
    """``group.consumer.assignors`` name ``uniform`` (the first, default, entry in Kafka 4.x)."""

    @property
    def name(self) -> str:
        return "uniform"

    def assign(self, group: GroupSpec, topics: TopicDescriber) -> dict[str, Assignment]:
        if not group.members:
            return {}
        if group.subscription_type is SubscriptionType.HOMOGENEOUS:
            return _assign_homogeneous(group, topics)
        return _Heterogeneous(group, topics).build()


def _missing(topic_id: uuid.UUID) -> PartitionAssignorError:
    return PartitionAssignorError(
        f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata."
    )


def _assign_homogeneous(group: GroupSpec, topics: TopicDescriber) -> dict[str, Assignment]:
    member_ids = group.member_ids()
    subscribed = group.members[member_ids[0]].subscribed_topic_ids
    if not subscribed:
        return {}
    unassigned: list[tuple[uuid.UUID, int]] = []
    total = 0
    for topic_id in sorted(subscribed, key=topic_id_order):
        count = topics.get(topic_id, -1)
        if count == -1:
            raise _missing(topic_id)
        # GroupSpec.is_partition_assigned for every partition, with the topic's map looked up once
        owners = group.assigned_partitions.get(topic_id, {})
        unassigned.extend((topic_id, p) for p in range(count) if p not in owners)
        total += count
    members = len(member_ids)
    min_quota, extra_left = divmod(total, members)
    target: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for index, mid in enumerate(member_ids):
        quota = min_quota
        has_extra = extra_left > 0
        if has_extra:
            quota += 1
        kept: dict[uuid.UUID, frozenset[int]] = {}
        previous = group.members[mid].assignment
        for topic_id in sorted(previous, key=topic_id_order) if len(previous) > 1 else previous:
            if topic_id not in subscribed:
                continue  # an unsubscribed topic's partitions are dropped, not handed on
            # Kafka topics never shrink; a previous target naming partitions past the current
            # count (a topic re-created smaller here) keeps only those that exist.
            parts = previous[topic_id]
            count = topics[topic_id]
            if parts and max(parts) >= count:
                parts = frozenset(p for p in parts if p < count)
            if not parts:
                continue
            if len(parts) <= quota:
                kept[topic_id] = parts
                quota -= len(parts)
                continue
            ordered = sorted(parts)
            keep = ordered[:quota]
            unassigned.extend((topic_id, p) for p in ordered[quota:])
            quota = 0
            if keep:
                kept[topic_id] = frozenset(keep)
        # Give the extra slot back when enough later members can take the remaining extras.
        if quota > 0 and has_extra and members - index > extra_left:
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((mid, quota))
        if has_extra:
            extra_left -= 1
        target[mid] = kept
    cursor = 0
    for mid, quota in unfilled:
        mine = {t: set(p) for t, p in target[mid].items()}
        for _ in range(quota):
            if cursor >= len(unassigned):
                break
            topic_id, partition = unassigned[cursor]
            cursor += 1
            mine.setdefault(topic_id, set()).add(partition)
        target[mid] = {t: frozenset(p) for t, p in mine.items()}
    if cursor < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return dict(target)


class _Heterogeneous:
    """One run of the heterogeneous builder; members are numbered by their sorted position."""

    def __init__(self, group: GroupSpec, topics: TopicDescriber) -> None:
        self.group = group
        self.topics = topics
        self.member_ids = group.member_ids()
        self.sizes = [0] * len(self.member_ids)
        self.subscribers: dict[uuid.UUID, list[int]] = {}
        for index, mid in enumerate(self.member_ids):
            for topic_id in group.members[mid].subscribed_topic_ids:
                if topics.get(topic_id, -1) == -1:
                    raise _missing(topic_id)
                self.subscribers.setdefault(topic_id, []).append(index)
        self.owners: dict[uuid.UUID, list[int]] = {t: [-1] * topics[t] for t in self.subscribers}
        self.target: list[dict[uuid.UUID, set[int]]] = [{} for _ in self.member_ids]

    def build(self) -> dict[str, Assignment]:
        if not self.subscribers:
            return {}
        self._keep_previous()
        unassigned = {
            t: [p for p, owner in enumerate(owners) if owner == -1] for t, owners in self.owners.items()
        }
        for topic_id in self._sorted_topics([t for t, parts in unassigned.items() if parts]):
            self._assign_unassigned(topic_id, unassigned[topic_id])
        self._balance()
        return {
            mid: {t: frozenset(p) for t, p in self.target[i].items() if p}
            for i, mid in enumerate(self.member_ids)
        }

    def _sorted_topics(self, topic_ids: list[uuid.UUID]) -> list[uuid.UUID]:
        # Partitions per subscriber descending, then fewer subscribers first, then topic id.
        def key(t: uuid.UUID) -> tuple[float, int, tuple[int, int]]:
            subs = len(self.subscribers[t])
            return (-self.topics[t] / subs, subs, topic_id_order(t))

        return sorted(topic_ids, key=key)

    def _keep_previous(self) -> None:
        for index, mid in enumerate(self.member_ids):
            spec = self.group.members[mid]
            for topic_id, parts in spec.assignment.items():
                if topic_id not in spec.subscribed_topic_ids:
                    continue
                owners = self.owners[topic_id]
                for p in parts:
                    if p < len(owners):
                        owners[p] = index
                        self.sizes[index] += 1
                        self.target[index].setdefault(topic_id, set()).add(p)

    def _move(self, topic_id: uuid.UUID, partition: int, to: int) -> None:
        old = self.owners[topic_id][partition]
        if old != -1:
            self.target[old][topic_id].discard(partition)
            self.sizes[old] -= 1
        self.target[to].setdefault(topic_id, set()).add(partition)
        self.owners[topic_id][partition] = to
        self.sizes[to] += 1

    def _ranked(self, members: list[int]) -> dict[int, int]:
        """Each subscriber's rank at the start of a topic: by (total size, member index)."""
        return {m: r for r, m in enumerate(sorted(members, key=lambda m: (self.sizes[m], m)))}

    def _assign_unassigned(self, topic_id: uuid.UUID, partitions: list[int]) -> None:
        rank = self._ranked(self.subscribers[topic_id])
        heap = [(self.sizes[m], r, m) for m, r in rank.items()]
        heapq.heapify(heap)
        for p in partitions:
            _, r, m = heapq.heappop(heap)
            self._move(topic_id, p, m)
            heapq.heappush(heap, (self.sizes[m], r, m))

    def _balance(self) -> None:
        candidates = [t for t, subs in self.subscribers.items() if len(subs) >= 2]
        if not candidates:
            return
        ordered = self._sorted_topics(candidates)
        last_moved = -1
        for _ in range(MAX_BALANCE_PASSES):
            for index, topic_id in enumerate(ordered):
                if index == last_moved:
                    return
                moved = self._balance_topic(topic_id)
                if moved > 0 or last_moved == -1:
                    last_moved = index

    def _balance_topic(self, topic_id: uuid.UUID) -> int:
        subs = self.subscribers[topic_id]
        sizes = self.sizes
        if max(sizes[m] for m in subs) - min(sizes[m] for m in subs) <= 1:
            return 0
        rank = self._ranked(subs)
        # Each subscriber's partitions of this topic as the topic started, highest last.
        blocks: dict[int, list[int]] = {m: [] for m in subs}
        for p, owner in enumerate(self.owners[topic_id]):
            if owner in blocks:
                blocks[owner].append(p)
        givers = {m for m in subs if blocks[m]}
        moved = 0
        while givers:
            most = max(givers, key=lambda m: (self.sizes[m], rank[m]))
            least = min(subs, key=lambda m: (self.sizes[m], rank[m]))
            if self.sizes[most] - self.sizes[least] <= 1:
                break
            partition = blocks[most].pop()
            if not blocks[most]:
                givers.discard(most)
            self._move(topic_id, partition, least)
            moved += 1
        return moved
