"""The round-robin assignor (Kafka's ``RoundRobinAssignor``, protocol name ``roundrobin``).

All partitions of all subscribed topics, topics by name and partitions ascending, are dealt
one at a time to the members in :func:`member_order`, cycling; a member not subscribed to a
partition's topic is skipped for that partition (and the cycle goes on from the next member
after the one that took it).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from groupcoord.client.assignors.base import ListAssignor, Subscription
from groupcoord.client.types import TopicPartition

log = logging.getLogger(__name__)

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(ListAssignor):
    """Partitions dealt to subscribed members in turn (eager)."""

    name = "roundrobin"

    def deal(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        order: list[str],
        assigned: dict[str, list[TopicPartition]],
    ) -> None:
        topic_sets = {m: frozenset(subscriptions[m].topics) for m in order}
        turn = 0
        for topic in sorted({t for sub in subscriptions.values() for t in sub.topics}):
            for partition in range(partitions_per_topic.get(topic, 0)):
                # some member is subscribed to this topic, so the scan ends within one cycle
                while topic not in topic_sets[order[turn]]:
                    turn = (turn + 1) % len(order)
                assigned[order[turn]].append(TopicPartition(topic, partition))
                turn = (turn + 1) % len(order)
