"""The coordinator's timer keys: one type per kind of deadline, named after Kafka's operations.

Every protocol deadline of the classic group protocol sits in one
:class:`~groupcoord.timer.KeyedTimer`, keyed by one of the values below. Scheduling a key
replaces that key's earlier timer, so each key names *one* deadline that can be pending at a
time: one join deadline per group, one session deadline per member, and so on. When a timer
fires, the coordinator dispatches on the key's type (``GroupCoordinatorShard.poll``).

========================  ==========================================  ==========================
key                       Kafka                                       on expiry
========================  ==========================================  ==========================
``DelayedJoin``           ``DelayedJoin`` / ``InitialDelayedJoin``    ``on_complete_join``
                          (Scala purgatory), ``classicGroupJoinKey``  (or extend the initial
                          (4.x ``GroupMetadataManager``)              delay, KIP-134)
``DelayedHeartbeat``      ``DelayedHeartbeat``,                       member's session expired
                          ``classicGroupHeartbeatKey``
``PendingMemberExpiry``   ``expirePendingMember`` (KIP-394)           forget the handed-out id
``PendingSync``           ``classicGroupSyncKey``                     members that never synced
                          (``expirePendingSync``)                     are removed, rebalance
``OffsetExpiry``          ``cleanupGroupMetadata`` (retention check)  expire old offsets
========================  ==========================================  ==========================

The join deadline of a group has one key whichever operation it is: a normal join phase ends
one rebalance timeout after it started, while the first one after Empty waits for
``group.initial.rebalance.delay.ms`` and extends while members keep arriving. The payload
tells them apart: ``None`` for a ``DelayedJoin``, an :class:`InitialDelayedJoin` for the
initial delay. A ``PendingSync`` carries the generation it was armed for, so a firing that
outlived its generation does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DelayedJoin:
    """The end of a group's join phase (PreparingRebalance)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class InitialDelayedJoin:
    """Payload of a :class:`DelayedJoin` armed by the first rebalance after Empty (KIP-134).

    ``delay_ms`` is the delay just armed; ``remaining_ms`` how much of the rebalance timeout
    is left for further extensions.
    """

    delay_ms: int
    remaining_ms: int


class DelayedHeartbeat:
    """A member's session deadline, pushed out by every heartbeat.

    Equal to a key of the same type with the same group and member, like the dataclasses
    here. It is written out because every heartbeat and commit hashes it in the timer: compiled
    (setup.py), this ``__hash__`` is native and kept from the start, where a dataclass's is the
    interpreted one that ``dataclasses`` generates, recomputed on every call.
    """

    __slots__ = ("_hash", "group_id", "member_id")
    __match_args__ = ("group_id", "member_id")

    def __init__(self, group_id: str, member_id: str) -> None:
        self.group_id = group_id
        self.member_id = member_id
        self._hash = hash((group_id, member_id))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if type(other) is not DelayedHeartbeat:
            return NotImplemented
        return self.group_id == other.group_id and self.member_id == other.member_id

    def __repr__(self) -> str:
        return f"DelayedHeartbeat(group_id={self.group_id!r}, member_id={self.member_id!r})"


@dataclass(frozen=True, slots=True)
class PendingMemberExpiry:
    """A member id handed out with MEMBER_ID_REQUIRED that has not come back yet (KIP-394)."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class PendingSync:
    """The deadline by which every member of a generation must have sent its SyncGroup."""

    group_id: str


@dataclass(frozen=True, slots=True)
class OffsetExpiry:
    """The periodic retention check (``offsets.retention.check.interval.ms``)."""


#: Any key the coordinator's timer holds.
@dataclass(frozen=True, slots=True)
class ConsumerGroupTimer:
    """A consumer group's timer (KIP-848: session, rebalance, regex refresh), under the key
    Kafka gives it (``session-timeout-<group>-<member>`` ...); its payload is the core's
    :class:`~groupcoord.coordinator.consumer.api.TimerSchedule`."""

    key: str


TimerKey = (
    DelayedJoin | DelayedHeartbeat | PendingMemberExpiry | PendingSync | OffsetExpiry | ConsumerGroupTimer
)

#: The one retention-check key.
OFFSET_EXPIRY = OffsetExpiry()
