"""The partition-assignor interface of the consumer protocol, and its values.

An assignor is named in JoinGroup (one protocol per configured assignor, in preference
order); the coordinator picks one name every member supports, and the elected leader runs
that assignor over every member's :class:`Subscription`. Each member then receives its
:class:`Assignment` in SyncGroup and hands it to its own instance of the same assignor
(:meth:`Assignor.on_assignment`), which may remember it for the next round's user data.

Writing a custom assignor
-------------------------
Any object with the attributes and methods of :class:`Assignor` works (it is a
``typing.Protocol``); subclassing :class:`BaseAssignor` gives the optional parts defaults::

    class OneOwner(BaseAssignor):
        name = "one-owner"            # the JoinGroup protocol name; every member must use it

        def assign(self, partitions_per_topic, subscriptions):
            first = min(subscriptions)
            return {
                member: Assignment(partitions=tuple(
                    TopicPartition(t, p)
                    for t in sorted(sub.topics) for p in range(partitions_per_topic.get(t, 0))
                ) if member == first else ())
                for member, sub in subscriptions.items()
            }

Rules, as in Kafka's ``ConsumerPartitionAssignor``:

* ``assign`` is called on the leader only. ``partitions_per_topic`` holds the partition count
  of every subscribed topic the leader's metadata knows (topics without metadata are absent);
  ``subscriptions`` is keyed by member id. Return an entry for *every* member (an empty
  :class:`Assignment` for members that get nothing); never give one partition to two members.
* ``rebalance_protocol`` is ``EAGER`` unless the assignor implements KIP-429: a
  ``COOPERATIVE`` assignor must never give a member a partition that another member owns
  (``Subscription.owned_partitions``) in the same round: it leaves such a partition out, the
  owner revokes it, rejoins, and the next round hands it over. A cooperative assignor also
  supports eager rebalancing (all members revoke everything before joining, so nothing is
  owned), which is how a group with one eager assignor configured still runs.
* ``subscription_user_data(topics)`` is called on every member before each JoinGroup; its
  bytes reach the leader's ``assign`` as ``Subscription.user_data`` of that member.
* ``on_assignment(assignment, generation)`` is called on every member after SyncGroup with
  its own assignment and the new generation id.
* Assignors are per consumer instance and are not called concurrently.

Wire form
---------
The byte layout of subscriptions and assignments lives in :mod:`groupcoord.formats.consumer_protocol`;
:func:`subscription_to_bytes` / :func:`subscription_from_bytes` and
:func:`assignment_to_bytes` / :func:`assignment_from_bytes` convert these client values to
and from it. Like Kafka's Java client (``ConsumerProtocol.serializeSubscription``), we write
subscription and assignment version 3 whatever the assignor, with topics sorted and owned
partitions sorted and grouped by topic; librdkafka also writes subscription v3, kafka-python
v0 (v1 for cooperative-sticky) and aiokafka v0, and every one of them reads the others'
versions (newer versions only append fields).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from groupcoord.client.types import TopicPartition
from groupcoord.formats import consumer_protocol as cp

log = logging.getLogger(__name__)

__all__ = [
    "ASSIGNMENT_VERSION",
    "DEFAULT_GENERATION",
    "SUBSCRIPTION_VERSION",
    "Assignment",
    "Assignor",
    "BaseAssignor",
    "RebalanceProtocol",
    "Subscription",
    "assignment_from_bytes",
    "assignment_to_bytes",
    "group_by_topic",
    "member_order",
    "min_subscription_version",
    "select_rebalance_protocol",
    "subscription_from_bytes",
    "subscription_to_bytes",
    "validate_cooperative_assignment",
]

DEFAULT_GENERATION = -1
"""The generation id of a member that has none (Kafka's ``DEFAULT_GENERATION``)."""

SUBSCRIPTION_VERSION = 3
"""The subscription version we write (the Java client's ``HIGHEST_SUPPORTED_VERSION``)."""

ASSIGNMENT_VERSION = 3
"""The assignment version we write (Java writes 3 too; v1-v3 are byte-identical to v0 after the prefix)."""


class RebalanceProtocol(enum.IntEnum):
    """How a group rebalances (Kafka's ``ConsumerPartitionAssignor.RebalanceProtocol``).

    EAGER: every member revokes all its partitions before rejoining. COOPERATIVE (KIP-429):
    members keep their partitions while rejoining and revoke only what the new assignment
    takes away; a partition changes owner across two rebalances. Ordered so that the
    group's protocol is the smallest one all configured assignors support.
    """

    EAGER = 0
    COOPERATIVE = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class Subscription:
    """One member's subscription, as the leader's assignor sees it.

    ``generation_id`` is the member's generation when it joined, ``-1`` when it has none or
    its subscription version (< 2) cannot carry one. ``rack_id`` is ``None`` when unset
    (librdkafka sends an empty string for "no rack"; it reads as ``None``).
    ``group_instance_id`` is not part of the payload: the leader takes it from the JoinGroup
    member list; assignors order static members first by it.
    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = DEFAULT_GENERATION
    rack_id: str | None = None
    group_instance_id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Assignment:
    """The partitions the leader gave one member, and the assignor's optional user data."""

    partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes | None = None


@runtime_checkable
class Assignor(Protocol):
    """A partition assignor (Kafka's ``ConsumerPartitionAssignor``); see the module docstring."""

    name: str
    """The protocol name sent in JoinGroup: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``."""

    rebalance_protocol: RebalanceProtocol
    """The most capable protocol supported: ``COOPERATIVE`` implies ``EAGER`` is supported too."""

    def subscription_user_data(self, topics: AbstractSet[str]) -> bytes | None:
        """User data to put in this member's subscription (``None`` for none)."""
        ...

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """The leader's assignment: member id -> Assignment, one entry per member."""
        ...

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        """This member's own assignment of generation ``generation`` arrived."""
        ...


class BaseAssignor:
    """Defaults for custom assignors: eager, no user data, nothing remembered."""

    name: str = ""
    rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER

    def subscription_user_data(self, topics: AbstractSet[str]) -> bytes | None:
        return None

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        raise NotImplementedError

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class ListAssignor(BaseAssignor):
    """An eager assignor that deals each member, in :func:`member_order`, a list of partitions:
    subclasses fill the lists in :meth:`deal`."""

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        order = member_order(subscriptions)
        assigned: dict[str, list[TopicPartition]] = {m: [] for m in order}
        if order:
            self.deal(partitions_per_topic, subscriptions, order, assigned)
        return {m: Assignment(partitions=tuple(parts)) for m, parts in assigned.items()}

    def deal(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        order: list[str],
        assigned: dict[str, list[TopicPartition]],
    ) -> None:
        raise NotImplementedError


def select_rebalance_protocol(assignors: Iterable[Assignor]) -> RebalanceProtocol:
    """The protocol a consumer with these assignors runs: the highest one all support.

    Java's ``ConsumerCoordinator`` constructor: [range, cooperative-sticky] runs EAGER,
    [cooperative-sticky] alone COOPERATIVE. No assignors -> ValueError.
    """
    protocols = [a.rebalance_protocol for a in assignors]
    if not protocols:
        raise ValueError("no partition assignor configured")
    return min(protocols)


def member_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Member ids in Kafka's assignor order (``AbstractPartitionAssignor.MemberInfo.compareTo``).

    Static members (with a group instance id) first, by instance id, so a static member
    keeps its place across restarts with a new member id; then dynamic members by member id.
    """
    return sorted(
        subscriptions,
        key=lambda m: (
            (0, subscriptions[m].group_instance_id or "", m)
            if subscriptions[m].group_instance_id is not None
            else (1, m, "")
        ),
    )


def group_by_topic(partitions: Iterable[TopicPartition]) -> cp.TopicPartitions:
    """Partitions grouped by topic in first-seen topic order, partitions in given order."""
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return tuple((topic, tuple(parts)) for topic, parts in grouped.items())


def _ungroup(grouped: cp.TopicPartitions) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic, p) for topic, parts in grouped for p in parts)


def min_subscription_version(sub: Subscription) -> int:
    """The lowest subscription version that carries every field ``sub`` sets."""
    if sub.rack_id is not None:
        return 3
    if sub.generation_id != DEFAULT_GENERATION:
        return 2
    if sub.owned_partitions:
        return 1
    return 0


def subscription_to_bytes(sub: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    """JoinGroup protocol metadata for ``sub`` (topics sorted, owned partitions sorted and grouped).

    A version too low for the fields set raises :class:`ConsumerProtocolError` (a ValueError).
    """
    return cp.encode_subscription(
        cp.Subscription(
            topics=tuple(sorted(set(sub.topics))),
            user_data=sub.user_data,
            owned_partitions=group_by_topic(sorted(set(sub.owned_partitions))),
            generation_id=sub.generation_id,
            rack_id=sub.rack_id,
            version=version,
        )
    )


def subscription_from_bytes(data: bytes, *, group_instance_id: str | None = None) -> Subscription:
    """Parse a member's JoinGroup metadata (any version); ``ConsumerProtocolError`` if malformed."""
    raw = cp.decode_subscription(data)
    return Subscription(
        topics=raw.topics,
        user_data=raw.user_data,
        owned_partitions=_ungroup(raw.owned_partitions),
        generation_id=raw.generation_id if raw.generation_id >= 0 else DEFAULT_GENERATION,
        rack_id=raw.rack_id or None,
        group_instance_id=group_instance_id,
    )


def assignment_to_bytes(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    """SyncGroup assignment bytes: partitions grouped per topic in first-seen order."""
    return cp.encode_assignment(
        cp.Assignment(
            partitions=group_by_topic(assignment.partitions), user_data=assignment.user_data, version=version
        )
    )


def assignment_from_bytes(data: bytes) -> Assignment:
    """Parse a SyncGroup assignment (any version); ``ConsumerProtocolError`` if malformed or empty."""
    raw = cp.decode_assignment(data)
    return Assignment(partitions=_ungroup(raw.partitions), user_data=raw.user_data)


def validate_cooperative_assignment(
    subscriptions: Mapping[str, Subscription], assignments: Mapping[str, Assignment]
) -> None:
    """Refuse an assignment that gives a member a partition another member still owns.

    Java's ``ConsumerCoordinator.validateCooperativeAssignment`` (run for custom assignors
    under COOPERATIVE): a partition both revoked from one member and added to another in the
    same round raises ``ValueError`` naming the partitions.
    """
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member, sub in subscriptions.items():
        assigned = set(assignments[member].partitions) if member in assignments else set()
        owned = set(sub.owned_partitions)
        added |= assigned - owned
        revoked |= owned - assigned
    both = added & revoked
    if both:
        raise ValueError(
            "the cooperative assignor reassigned partitions still owned by another member: "
            + ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(both))
        )
