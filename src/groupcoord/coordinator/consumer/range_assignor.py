"""The ``range`` server assignor (Kafka 4.1 ``RangeAssignor``, group-coordinator module).

Members are ordered static first (by instance id), then dynamic (by member id). Each topic is cut
into ``partitions // subscribers`` sized ranges, the first ``partitions % subscribers``
subscribers in that order getting one more; each member takes the next range of every topic it
subscribes to. With the same subscriptions and partition counts, member *i* gets the same
partition numbers of every topic (co-partitioning). Racks are not used (Kafka 4.x: KAFKA-17747).
The algorithm is deterministic, so Kafka's expected outputs are reproduced exactly.
"""

from __future__ import annotations

import uuid

from groupcoord.coordinator.consumer.assignment import (
    Assignment,
    GroupSpec,
    PartitionAssignorError,
    TopicDescriber,
    topic_id_order,
)

__all__ = ["RangeAssignor"]


class _TopicRanges:
    """The range state of one topic while members are visited."""

    __slots__ = ("extra", "next_start", "num_partitions", "quota", "subscribers")

    def __init__(self, num_partitions: int) -> None:
        self.num_partitions = num_partitions
        self.subscribers = 0
        self.quota = -1
        self.extra = -1
        self.next_start = 0

    def take(self) -> range:
        if self.quota == -1:  # computed once every subscriber is counted
            self.quota, self.extra = divmod(self.num_partitions, self.subscribers)
        size = self.quota
        if self.extra > 0:
            size += 1
            self.extra -= 1
        start = self.next_start
        end = min(start + size, self.num_partitions)
        self.next_start = end
        return range(start, end)


class RangeAssignor:
    """``group.consumer.assignors`` name ``range``."""

    @property
    def name(self) -> str:
        return "range"

    def assign(self, group: GroupSpec, topics: TopicDescriber) -> dict[str, Assignment]:
        if not group.members:
            return {}
        static = sorted(
            (spec.instance_id, mid) for mid, spec in group.members.items() if spec.instance_id is not None
        )
        dynamic = sorted(mid for mid, spec in group.members.items() if spec.instance_id is None)
        order = [mid for _, mid in static] + dynamic
        ranges: dict[uuid.UUID, _TopicRanges] = {}
        for mid in order:
            for topic_id in group.members[mid].subscribed_topic_ids:
                state = ranges.get(topic_id)
                if state is None:
                    count = topics.get(topic_id, -1)
                    if count == -1:
                        raise PartitionAssignorError("Member is subscribed to a non-existent topic")
                    state = ranges[topic_id] = _TopicRanges(count)
                state.subscribers += 1
        result: dict[str, Assignment] = {}
        for mid in order:
            mine: dict[uuid.UUID, frozenset[int]] = {}
            for topic_id in sorted(group.members[mid].subscribed_topic_ids, key=topic_id_order):
                taken = ranges[topic_id].take()
                if taken:
                    mine[topic_id] = frozenset(taken)
            result[mid] = mine
        return result
