"""Requests, responses and results of the consumer group core: small frozen dataclasses.

ConsumerGroupHeartbeat's and ConsumerGroupDescribe's requests and responses are the protocol's
(:mod:`groupcoord.protocol.consumer_group_messages`, which the member client speaks too), named
here with the rest; the shard converts them from and to kio.

A handler returns a :class:`ConsumerGroupResult`: the records to append (already replayed into the
model, as Kafka replays a write's records before it commits), the response to send once they are
durable, the timers to schedule or cancel by key, and group events. While it computes them, a
handler gathers them in a :class:`Batch`, the one mutable type here.
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
    "Batch",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupEvent",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupResult",
    "DescribedGroup",
    "DescribedMember",
    "DescribedTopicPartitions",
    "Downgrade",
    "DowngradedMember",
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
    #: ``join-<group>-<member>``: a classic member told to rejoin must do so within its rebalance
    #: timeout (scheduled only if absent), else it is fenced
    CLASSIC_JOIN = "classic-join"
    #: ``sync-<group>-<member>``: a classic member must SyncGroup within its rebalance timeout
    #: after its JoinGroup, else it is fenced
    CLASSIC_SYNC = "classic-sync"


def timer_key(kind: TimerKind, group_id: str, member_id: str | None = None) -> str:
    if kind is TimerKind.SESSION:
        return f"session-timeout-{group_id}-{member_id}"
    if kind is TimerKind.REBALANCE:
        return f"rebalance-timeout-{group_id}-{member_id}"
    if kind is TimerKind.CLASSIC_JOIN:
        return f"join-{group_id}-{member_id}"
    if kind is TimerKind.CLASSIC_SYNC:
        return f"sync-{group_id}-{member_id}"
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
    #: keep a running timer of this key instead (Kafka's ``scheduleIfAbsent``)
    if_absent: bool = False


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
class DowngradedMember:
    """One member of the classic group a downgrade makes (``ClassicGroup.fromConsumerGroup``):
    its classic identity and protocols, and its target assignment by topic name."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    #: the consumer group's target assignment of the member, by topic name, sorted
    assignment: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Downgrade:
    """The online downgrade a result asks for (``convertToClassicGroup``): the consumer group's
    tombstones are among the records; the shard builds the classic group from this, writes its
    GroupMetadata record after them, and prepares a rebalance if a member left."""

    group_id: str
    generation: int
    members: tuple[DowngradedMember, ...]
    prepare_rebalance: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupResult:
    records: tuple[ConsumerGroupRecord, ...] = ()
    response: ConsumerGroupHeartbeatResponse | None = None
    timers: tuple[TimerSchedule | TimerCancel, ...] = ()
    events: tuple[ConsumerGroupEvent, ...] = field(default=())
    downgrade: Downgrade | None = None


@dataclass
class Batch:
    """What one handler accumulates before the manager commits it into a
    :class:`ConsumerGroupResult` (``ConsumerGroupManager.commit``): records, timers, events, the
    group whose regexes are to be resolved, the downgrade asked for."""

    records: list[ConsumerGroupRecord] = field(default_factory=list)
    timers: list[TimerSchedule | TimerCancel] = field(default_factory=list)
    events: list[ConsumerGroupEvent] = field(default_factory=list)
    regex_refresh: str | None = None
    downgrade: Downgrade | None = None
