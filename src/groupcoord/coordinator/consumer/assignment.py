"""The values every part of the consumer group shares: assignments, topic ids, the assignor contract.

An *assignment* maps a topic id to the partitions of it a member holds: ``{UUID: frozenset[int]}``,
with no empty sets (a topic with no partition is absent). The maps are treated as immutable
everywhere; helpers here build new ones.

Kafka orders topic ids with ``Uuid.compareTo``: the most-significant 64 bits, then the
least-significant 64 bits, each as a *signed* long (:func:`topic_id_order`). Our assignors iterate
members in sorted member-id order and topics in that order where Kafka iterates a ``HashMap`` or
``HashSet`` (which has no order a spec can state); the reference (kafka-consumer-protocol.md §5.1)
says so, and the tests assert the properties Kafka's tests assert (balance, stickiness) plus
Kafka's exact outputs wherever those do not depend on hash order.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "Assignment",
    "GroupSpec",
    "MemberSpec",
    "PartitionAssignor",
    "PartitionAssignorError",
    "SubscriptionType",
    "TopicDescriber",
    "assignment_of",
    "assignment_size",
    "merge",
    "subtract",
    "topic_id_order",
]

#: topic id -> the partitions held; never an empty set.
Assignment = Mapping[uuid.UUID, frozenset[int]]

#: topic id -> its partition count; an absent id is a topic the metadata does not know.
TopicDescriber = Mapping[uuid.UUID, int]


class PartitionAssignorError(Exception):
    """An assignor could not compute a target (Kafka's ``PartitionAssignorException``); the
    heartbeat that ran it answers UNKNOWN_SERVER_ERROR."""


class SubscriptionType(enum.Enum):
    """Kafka's ``SubscriptionType``: whether every member subscribes to the same topics."""

    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


def topic_id_order(topic_id: uuid.UUID) -> tuple[int, int]:
    """Sort key equal to Kafka's ``Uuid.compareTo``: (msb, lsb) as signed 64-bit integers."""
    raw = topic_id.bytes
    return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)


def assignment_of(pairs: Mapping[uuid.UUID, Iterable[int]]) -> dict[uuid.UUID, frozenset[int]]:
    """An assignment from any topic -> partitions mapping, dropping empty topics."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, parts in pairs.items():
        frozen = parts if type(parts) is frozenset else frozenset(parts)
        if frozen:
            out[topic_id] = frozen
    return out


def assignment_size(assignment: Assignment) -> int:
    return sum(len(p) for p in assignment.values())


def merge(a: Assignment, b: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    """The union of two assignments."""
    out = dict(a)
    for topic_id, parts in b.items():
        out[topic_id] = out.get(topic_id, frozenset()) | parts
    return out


def subtract(a: Assignment, b: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    """The partitions of ``a`` that are not in ``b``."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, parts in a.items():
        left = parts - b.get(topic_id, frozenset())
        if left:
            out[topic_id] = left
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberSpec:
    """What an assignor knows of one member (Kafka's ``MemberSubscriptionAndAssignmentImpl``):
    the topic ids it subscribes to, its rack and instance id, and its previous target."""

    subscribed_topic_ids: frozenset[uuid.UUID]
    rack_id: str | None = None
    instance_id: str | None = None
    assignment: Assignment = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSpec:
    """The assignor's input (Kafka's ``GroupSpecImpl``).

    ``assigned_partitions`` is the inverted previous target of the whole group (topic id ->
    partition -> member id): ``is_partition_assigned`` answers from it, as Kafka's does.
    """

    members: Mapping[str, MemberSpec]
    subscription_type: SubscriptionType
    assigned_partitions: Mapping[uuid.UUID, Mapping[int, str]] = field(default_factory=dict)

    def member_ids(self) -> list[str]:
        """Member ids in the order the assignors visit them: sorted (Kafka: HashMap order)."""
        return sorted(self.members)

    def is_partition_assigned(self, topic_id: uuid.UUID, partition: int) -> bool:
        return partition in self.assigned_partitions.get(topic_id, {})


class PartitionAssignor(Protocol):
    """A server-side assignor (Kafka's ``ConsumerGroupPartitionAssignor``)."""

    @property
    def name(self) -> str: ...

    def assign(self, group: GroupSpec, topics: TopicDescriber) -> dict[str, Assignment]:
        """The full new target: member id -> assignment (a member may be absent: nothing)."""
        ...
