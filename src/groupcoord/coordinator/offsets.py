"""Committed offsets: subscription parsing and the retention (expiry) rule.

Pure functions over a :class:`~groupcoord.coordinator.group.ClassicGroup`; the coordinator
turns what they return into tombstone records.
"""

from __future__ import annotations

import logging
from collections.abc import Container

from groupcoord.coordinator.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup, CommittedOffset
from groupcoord.coordinator.state import GroupState
from groupcoord.gcutil import untrack

log = logging.getLogger(__name__)


def java_string_length(s: str) -> int:
    """Java ``String.length()``: UTF-16 code units (astral characters count twice)."""
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def subscribed_topics(group: ClassicGroup) -> frozenset[str] | None:
    """Topics the members of a ``consumer`` group subscribe to, for the selected protocol.

    A consumer group without members subscribes to nothing (an empty set). ``None`` means
    "unknown": the group is not a consumer group, has no selected protocol, or a member's
    subscription bytes do not parse (Kafka's ``computeSubscribedTopics``). As in Kafka, an
    unknown subscription makes OffsetDelete treat every topic of a non-Empty consumer group as
    subscribed (``isSubscribedToTopic``: ``case None => true``), and makes retention keep every
    offset of a group that is not Empty.
    """
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not group.members:
        return frozenset()
    if group.protocol_name is None:
        return None
    from groupcoord.consumer_protocol import decode_subscription

    topics: set[str] = set()
    for member in group.members.values():
        try:
            sub = decode_subscription(member.metadata(group.protocol_name))
        except Exception as exc:  # a client's bytes must never take the coordinator down
            log.warning(
                "group=%s member=%s unparseable consumer subscription (%s); subscription unknown",
                group.group_id,
                member.member_id,
                exc,
            )
            return None
        topics.update(sub.topics)
    # Strings only, kept as long as the generation: no work for the cyclic collector.
    return untrack(frozenset(topics))


def expired_offsets(
    group: ClassicGroup,
    now_ms: int,
    retention_ms: int,
    pending: Container[tuple[str, int]] = (),
) -> list[tuple[str, int]]:
    """The (topic, partition) keys whose committed offsets have expired at ``now_ms``.

    Keys in ``pending`` (a commit of the partition is still being written) never expire: the
    tombstone would land behind the commit (Kafka's ``removeExpiredOffsets``:
    ``!pendingOffsetCommits.contains(topicPartition)``).

    * Empty group with a protocol type: retention counts from the time the group became
      Empty (falling back to the commit time).
    * Stable ``consumer`` group with a known subscription: only topics no member
      subscribes to expire, counted from the commit time.
    * Simple group (no protocol type): per commit time.
    * Otherwise nothing expires.
    An explicit expire timestamp (OffsetCommit v2-v4 retention) wins over the rule above.
    """

    def base_commit(o: CommittedOffset) -> int:
        return o.commit_timestamp

    def base_empty(o: CommittedOffset) -> int:
        return group.state_timestamp if group.state_timestamp is not None else o.commit_timestamp

    skip: frozenset[str] = frozenset()
    if group.protocol_type is not None and group.state is GroupState.EMPTY:
        base = base_empty
    elif (
        group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and group.subscribed_topics is not None
        and group.state is GroupState.STABLE
    ):
        base = base_commit
        skip = group.subscribed_topics
    elif group.protocol_type is None:
        base = base_commit
    else:
        return []
    out = []
    for key, o in group.offsets.items():
        if key[0] in skip or key in pending:
            continue
        if o.expire_timestamp is not None:
            if now_ms >= o.expire_timestamp:
                out.append(key)
        elif now_ms - base(o) >= retention_ms:
            out.append(key)
    return out
