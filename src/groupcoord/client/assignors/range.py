"""The range assignor (Kafka's ``RangeAssignor``, protocol name ``range``).

Topic by topic, the members subscribed to the topic (in :func:`member_order`) split its
partitions into consecutive ranges: with ``P`` partitions and ``M`` members each gets
``P // M`` and the first ``P % M`` one more. Because every topic is split in the same member
order, partition ``i`` of co-partitioned topics lands on the same member.

Kafka's rack-aware variant (KIP-881, used when both members and partition replicas have
racks) is not implemented: the :class:`Assignor` interface gives assignors partition counts,
not replica racks. With racks unknown Kafka's assignor falls back to exactly this algorithm.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from groupcoord.client.assignors.base import ListAssignor, Subscription
from groupcoord.client.types import TopicPartition

log = logging.getLogger(__name__)

__all__ = ["RangeAssignor"]


class RangeAssignor(ListAssignor):
    """Consecutive ranges of each topic's partitions per subscribed member (eager)."""

    name = "range"

    def deal(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        order: list[str],
        assigned: dict[str, list[TopicPartition]],
    ) -> None:
        subscribers: dict[str, list[str]] = {}
        for m in order:
            for topic in dict.fromkeys(subscriptions[m].topics):
                subscribers.setdefault(topic, []).append(m)
        for topic in sorted(subscribers):
            count = partitions_per_topic.get(topic, 0)
            members = subscribers[topic]
            if count <= 0 or not members:
                continue
            quota, extra = divmod(count, len(members))
            start = 0
            for i, member in enumerate(members):
                length = quota + (1 if i < extra else 0)
                assigned[member].extend(TopicPartition(topic, p) for p in range(start, start + length))
                start += length
