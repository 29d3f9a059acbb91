"""Structured group events: every state transition and every member added, updated or removed.

The coordinator hands each event to its ``event_sink``; the broker publishes them and the
analytics pipeline is built on them. The schema is documented in ``docs/group-events.md``.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field, fields
from typing import Any

#: ``epoch_bump``: a consumer group (KIP-848) moved to a new group epoch (its rebalance).
EVENT_TYPES = ("state_change", "member_added", "member_removed", "member_updated", "epoch_bump")


class EventReason(enum.StrEnum):
    """Why something happened to a group (closed set)."""

    NEW_MEMBER_JOINED = "new_member_joined"
    MEMBER_REJOINED_WITH_NEW_METADATA = "member_rejoined_with_new_metadata"
    LEADER_REJOINED = "leader_rejoined"
    MEMBER_LEFT = "member_left"
    SESSION_TIMEOUT = "session_timeout"
    PENDING_MEMBER_EXPIRED = "pending_member_expired"
    NEW_MEMBER_JOIN_TIMEOUT = "new_member_join_timeout"
    SYNC_TIMEOUT = "sync_timeout"
    NOT_REJOINED_BEFORE_REBALANCE_TIMEOUT = "not_rejoined_before_rebalance_timeout"
    STATIC_MEMBER_REPLACED = "static_member_replaced"
    FENCED = "fenced"
    MAX_SIZE_EXCEEDED = "max_size_exceeded"
    GROUP_DELETED = "group_deleted"
    OFFSETS_EXPIRED = "offsets_expired"
    LOADED = "loaded"
    JOIN_COMPLETED = "join_completed"
    ASSIGNMENT_PERSISTED = "assignment_persisted"
    ASSIGNMENT_PERSIST_FAILED = "assignment_persist_failed"
    GROUP_CREATED = "group_created"
    COORDINATOR_UNLOADED = "coordinator_unloaded"
    PROTOCOL_CHANGED = "protocol_changed"
    # Consumer groups (KIP-848).
    SUBSCRIPTION_CHANGED = "subscription_changed"
    REGEX_CHANGED = "regex_changed"
    TOPIC_METADATA_CHANGED = "topic_metadata_changed"
    REBALANCE_TIMEOUT = "rebalance_timeout"
    STATIC_MEMBER_LEFT_TEMPORARILY = "static_member_left_temporarily"
    RECONCILED = "reconciled"
    MEMBER_UPDATED = "member_updated"
    #: KIP-848 migration: a classic group became a consumer group, or the reverse
    GROUP_UPGRADED = "group_upgraded"
    GROUP_DOWNGRADED = "group_downgraded"
    CLASSIC_JOIN_TIMEOUT = "classic_join_timeout"


#: The consumer group core's causes (``ConsumerGroupEvent.cause``) as event reasons.
CONSUMER_EVENT_CAUSES = {
    "group-created": EventReason.GROUP_CREATED,
    "member-joined": EventReason.NEW_MEMBER_JOINED,
    "subscription-changed": EventReason.SUBSCRIPTION_CHANGED,
    "regex-changed": EventReason.REGEX_CHANGED,
    "regex-resolved": EventReason.REGEX_CHANGED,
    "metadata-changed": EventReason.TOPIC_METADATA_CHANGED,
    "member-left": EventReason.MEMBER_LEFT,
    "session-timeout": EventReason.SESSION_TIMEOUT,
    "rebalance-timeout": EventReason.REBALANCE_TIMEOUT,
    "join-timeout": EventReason.CLASSIC_JOIN_TIMEOUT,
    "sync-timeout": EventReason.SYNC_TIMEOUT,
}

#: The consumer group core's event kinds (``ConsumerGroupEvent.kind``) as (event type, reason
#: when the cause does not name one): how ``coordinator/consumer_groups.py`` publishes them.
CONSUMER_EVENT_KINDS = {
    "epoch-bump": ("epoch_bump", EventReason.MEMBER_UPDATED),
    "member-joined": ("member_added", EventReason.NEW_MEMBER_JOINED),
    "member-left": ("member_removed", EventReason.MEMBER_LEFT),
    "member-fenced": ("member_removed", EventReason.FENCED),
    "reconciled": ("member_updated", EventReason.RECONCILED),
    "static-member-left-temporarily": ("member_updated", EventReason.STATIC_MEMBER_LEFT_TEMPORARILY),
    "static-member-replaced": ("member_added", EventReason.STATIC_MEMBER_REPLACED),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupEvent:
    time_ms: int
    group_id: str
    generation: int
    type: str
    from_state: str | None
    to_state: str | None
    reason: EventReason
    member_id: str | None
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    client_reason: str | None
    protocol_type: str | None
    protocol_name: str | None
    member_count: int
    #: the event as published to ``__group_events``: the JSON of the fields above, UTF-8.
    #: Serialized once, when the event is made: the broker's write tick reads it, and the event
    #: never changes (frozen)
    encoded: bytes = field(init=False, repr=False, compare=False, default=b"")

    def __post_init__(self) -> None:
        if self.type not in EVENT_TYPES:
            raise ValueError(f"unknown group event type {self.type!r}")
        # Flat fields only: a dict of them is what asdict() would build, without its deep copy.
        d = {name: getattr(self, name) for name in _FIELDS}
        d["reason"] = self.reason.value
        encoded = json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        object.__setattr__(self, "encoded", encoded)

    def to_json(self) -> bytes:
        """The event's JSON (``docs/group-events.md``), as published: :attr:`encoded`."""
        return self.encoded

    @classmethod
    def from_json(cls, data: bytes | str) -> GroupEvent:
        d: dict[str, Any] = json.loads(data)
        d["reason"] = EventReason(d["reason"])
        return cls(**d)


#: the fields of the JSON: every field but the derived ``encoded``
_FIELDS = tuple(f.name for f in fields(GroupEvent) if f.init)
