"""Requests, responses and results of the consumer group core: small frozen dataclasses.

ConsumerGroupHeartbeat's and ConsumerGroupDescribe's requests and responses are the protocol's
(:mod:`groupcoord.protocol.consumer_group_messages`, which the member client speaks too), named
here with the rest; the shard converts them from and to kio.

A handler returns a :class:`ConsumerGroupResult`: the records to append (already replayed into the
model, as Kafka replays a write's records before it commits), the response to send once they are
durable, the timers to schedule or cancel by key, and group events.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from groupcoord.coordinator.consumer.records import ConsumerGroupRecord
from groupcoord.protocol.consumer_group_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedGroup,
    DescribedMember,
    DescribedTopicPartitions,
)

__all__ = [
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupEvent",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupResult",
    "DescribedGroup",
    "DescribedMember",
    "DescribedTopicPartitions",
    "TimerCancel",
    "TimerKind",
    "TimerSchedule",
    "timer_key",
]


class TimerKind(enum.Enum):
    """What a timer is for; its key is Kafka's (``GroupMetadataManager``'s timer and executor keys)."""

    #: ``session-timeout-<group>-<member>``: fence the member
    SESSION = "session"
    #: ``rebalance-timeout-<group>-<member>``: fence the member if still at ``member_epoch``
    REBALANCE = "rebalance"
    #: ``<group>-regex``: resolve the group's regexes (Kafka runs this on its executor)
    REGEX_REFRESH = "regex-refresh"


def timer_key(kind: TimerKind, group_id: str, member_id: str | None = None) -> str:
    if kind is TimerKind.SESSION:
        return f"session-timeout-{group_id}-{member_id}"
    if kind is TimerKind.REBALANCE:
        return f"rebalance-timeout-{group_id}-{member_id}"
    return f"{group_id}-regex"


@dataclass(frozen=True, slots=True, kw_only=True)
class TimerSchedule:
    """(Re)schedule ``key`` to fire at ``deadline_ms``; scheduling a key replaces its timer. When it
    fires, the shard hands this same value to :meth:`ConsumerGroupManager.on_timer`."""

    key: str
    deadline_ms: int
    kind: TimerKind
    group_id: str
    member_id: str | None = None
    #: the member epoch a rebalance timer remembers
    member_epoch: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TimerCancel:
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupEvent:
    """Something ``__group_events`` and the metrics want to know: ``kind`` is one of
    ``epoch-bump``, ``member-joined``, ``member-left``, ``member-fenced``, ``reconciled``,
    ``static-member-left-temporarily``, ``static-member-replaced``; ``cause`` says why."""

    kind: str
    group_id: str
    member_id: str | None = None
    group_epoch: int | None = None
    cause: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupResult:
    records: tuple[ConsumerGroupRecord, ...] = ()
    response: ConsumerGroupHeartbeatResponse | None = None
    timers: tuple[TimerSchedule | TimerCancel, ...] = ()
    events: tuple[ConsumerGroupEvent, ...] = field(default=())
