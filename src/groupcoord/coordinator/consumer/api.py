"""Requests, responses and results of the consumer group core: small frozen dataclasses.

The request and response types mirror kio's ``kio.schema.consumer_group_heartbeat.v1`` and
``kio.schema.consumer_group_describe.v1`` field for field, with plain ints (milliseconds, error
codes) and :class:`Assignment` maps instead of kio's wrapper types, so the core never depends on a
wire version: the shard converts from kio's request (v0 and v1 differ only in the regex field and
the member-id rule, which :attr:`ConsumerGroupHeartbeatRequest.api_version` carries) and back to
kio's response.

A handler returns a :class:`ConsumerGroupResult`: the records to append (already replayed into the
model, as Kafka replays a write's records before it commits), the response to send once they are
durable, the timers to schedule or cancel by key, and group events.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field

from groupcoord.coordinator.consumer.assignment import Assignment
from groupcoord.coordinator.consumer.records import ConsumerGroupRecord

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
    "Downgrade",
    "DowngradedMember",
    "TimerCancel",
    "TimerKind",
    "TimerSchedule",
    "timer_key",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupHeartbeatRequest:
    """ConsumerGroupHeartbeat v0/v1 (API 68), plus what the request header and peer give."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    #: v1 only
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: (topic id, partitions) pairs; None = unchanged ("unknown")
    topic_partitions: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None = None
    api_version: int = 1
    client_id: str = ""
    #: Java's InetAddress.toString(), e.g. "/127.0.0.1"
    client_host: str = ""

    def owned(self) -> dict[uuid.UUID, frozenset[int]] | None:
        if self.topic_partitions is None:
            return None
        out: dict[uuid.UUID, frozenset[int]] = {}
        for topic_id, parts in self.topic_partitions:
            out[topic_id] = out.get(topic_id, frozenset()) | frozenset(parts)
        return out

    def is_full(self) -> bool:
        """Kafka's "full request": the assignment is sent back even if it did not change."""
        return (
            self.rebalance_timeout_ms != -1
            and (self.subscribed_topic_names is not None or self.subscribed_topic_regex is not None)
            and self.topic_partitions is not None
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupHeartbeatResponse:
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: None: no Assignment field; {} an empty one
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescribeRequest:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedTopicPartitions, ...]
    target_assignment: tuple[DescribedTopicPartitions, ...]
    #: v1: 0 classic, 1 consumer
    member_type: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroup:
    group_id: str
    error_code: int = 0
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[DescribedGroup, ...]


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
