"""A consumer group's state (Kafka 4.1 ``ConsumerGroup``, with the parts of ``ModernGroup``).

The group is changed only by replaying records (``replay.py``): ``update_member``,
``remove_member``, ``set_target`` ... are the replay rules' primitives, and they keep the derived
indexes consistent: static members by instance id, subscription counts by topic name and by
regex, server assignor counts, the inverted target assignment and the epoch of each owned
partition (``current_partition_epoch``).

The group's state is derived after every change (``ConsumerGroup.maybeUpdateGroupState``): no
members -> EMPTY; group epoch ahead of the assignment epoch -> ASSIGNING; any member not STABLE at
the assignment epoch -> RECONCILING; else STABLE. DEAD exists but a consumer group never reaches it.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from groupcoord.coordinator.consumer.assignment import Assignment, SubscriptionType
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

__all__ = ["ConsumerGroup", "ConsumerGroupState", "ResolvedRegularExpression", "subscription_type"]


class ConsumerGroupState(enum.Enum):
    """The group states and their wire strings (DescribeGroups, ListGroups, ConsumerGroupDescribe)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedRegularExpression:
    """A regex's resolution: its topics, the metadata version and the time it was resolved at."""

    topics: frozenset[str]
    version: int
    timestamp: int


def subscription_type(
    regex_counts: Mapping[str, int],
    by_name: Mapping[str, int],
    by_regex: Mapping[str, int],
    num_members: int,
) -> SubscriptionType:
    """Kafka's ``ConsumerGroup.subscriptionType``.

    Without regexes: homogeneous iff every topic is subscribed by name by every member. With
    regexes: homogeneous iff every member uses the same single regex, nobody subscribes by name
    and each topic is matched by exactly one regex.
    """
    if not regex_counts:
        if all(by_name.get(t, 0) == num_members for t in set(by_name) | set(by_regex)):
            return SubscriptionType.HOMOGENEOUS
        return SubscriptionType.HETEROGENEOUS
    if next(iter(regex_counts.values())) != num_members:
        return SubscriptionType.HETEROGENEOUS
    for topic in set(by_name) | set(by_regex):
        if by_regex.get(topic, 0) != 1 or by_name.get(topic, 0) > 0:
            return SubscriptionType.HETEROGENEOUS
    return SubscriptionType.HOMOGENEOUS


class ConsumerGroup:
    """One consumer group. Mutated only by replay; read by the handlers."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        #: When the last target computation finished (ms), 0 if unknown: the assignment interval
        #: (KIP-1263) counts from it. Persisted with the assignment epoch, as Kafka 4.3 does.
        self.assignment_timestamp = 0
        self.metadata_hash = 0
        #: A ConsumerGroupPartitionMetadata record written by 4.0 is still in the log: the next
        #: epoch bump writes its tombstone (4.1).
        self.has_partition_metadata_record = False
        self.members: dict[str, ConsumerGroupMember] = {}
        #: How many members are not reconciled to ``_counted_epoch`` (kept by update_member and
        #: remove_member, recounted when the assignment epoch moves), so that ``state`` does not
        #: scan every member on every request.
        self._unreconciled = 0
        self._counted_epoch = 0
        self.static_members: dict[str, str] = {}
        self.target_assignment: dict[str, Assignment] = {}
        #: topic id -> partition -> member id of the target
        self.inverted_target: dict[uuid.UUID, dict[int, str]] = {}
        #: topic id -> partition -> (owner member id, owner's epoch)
        self.partition_owners: dict[uuid.UUID, dict[int, tuple[str, int]]] = {}
        self.subscribed_names: Counter[str] = Counter()
        self.subscribed_regexes: Counter[str] = Counter()
        self.resolved_regexes: dict[str, ResolvedRegularExpression] = {}
        self.server_assignors: Counter[str] = Counter()
        #: (deadline ms, group epoch): the subscription metadata is recomputed on the next
        #: heartbeat once now >= deadline or the epoch is behind; starts due.
        self.metadata_refresh_deadline: tuple[int, int] = (0, 0)

    def snapshot(self) -> ConsumerGroup:
        """A copy that later replays do not change (members, assignments and regexes are
        immutable values; only the containers holding them are copied). The shard keeps one
        while a write of the group is in flight and puts it back if the write fails."""
        # Field by field (not through __dict__): the class is compiled with mypyc (setup.py),
        # whose instances have none.
        copy = ConsumerGroup(self.group_id)
        copy.group_epoch = self.group_epoch
        copy.assignment_epoch = self.assignment_epoch
        copy.assignment_timestamp = self.assignment_timestamp
        copy.metadata_hash = self.metadata_hash
        copy.has_partition_metadata_record = self.has_partition_metadata_record
        copy._unreconciled = self._unreconciled
        copy._counted_epoch = self._counted_epoch
        copy.metadata_refresh_deadline = self.metadata_refresh_deadline
        copy.members = dict(self.members)
        copy.static_members = dict(self.static_members)
        copy.target_assignment = dict(self.target_assignment)
        copy.inverted_target = {t: dict(parts) for t, parts in self.inverted_target.items()}
        copy.partition_owners = {t: dict(parts) for t, parts in self.partition_owners.items()}
        copy.subscribed_names = Counter(self.subscribed_names)
        copy.subscribed_regexes = Counter(self.subscribed_regexes)
        copy.resolved_regexes = dict(self.resolved_regexes)
        copy.server_assignors = Counter(self.server_assignors)
        return copy

    # ------------------------------------------------------------------------------ state

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if self._counted_epoch != self.assignment_epoch:
            self._counted_epoch = self.assignment_epoch
            self._unreconciled = sum(
                1 for m in self.members.values() if not m.is_reconciled_to(self.assignment_epoch)
            )
        if self._unreconciled:
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    # ------------------------------------------------------------------------------ members

    def member(self, member_id: str) -> ConsumerGroupMember | None:
        return self.members.get(member_id)

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def update_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        self.members[member.member_id] = member
        if old is not None and not old.is_reconciled_to(self._counted_epoch):
            self._unreconciled -= 1
        if not member.is_reconciled_to(self._counted_epoch):
            self._unreconciled += 1
        self._index(old, member)

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            if not old.is_reconciled_to(self._counted_epoch):
                self._unreconciled -= 1
            self._index(old, None)

    def _index(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None) -> None:
        if old is not None:
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
            self.subscribed_names.subtract(old.subscribed_topic_names)
            if old.subscribed_topic_regex:
                self.subscribed_regexes[old.subscribed_topic_regex] -= 1
            if old.server_assignor_name is not None:
                self.server_assignors[old.server_assignor_name] -= 1
            self._release_partitions(old)
        if new is not None:
            if new.instance_id is not None:
                self.static_members[new.instance_id] = new.member_id
            self.subscribed_names.update(new.subscribed_topic_names)
            if new.subscribed_topic_regex:
                self.subscribed_regexes[new.subscribed_topic_regex] += 1
            if new.server_assignor_name is not None:
                self.server_assignors[new.server_assignor_name] += 1
            self._own_partitions(new)
        for counter in (self.subscribed_names, self.subscribed_regexes, self.server_assignors):
            for k in [k for k, v in counter.items() if v <= 0]:
                del counter[k]

    def _release_partitions(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, parts in assignment.items():
                owners = self.partition_owners.get(topic_id)
                if owners is None:
                    continue
                for p in parts:
                    if owners.get(p, ("", 0))[0] == member.member_id:
                        del owners[p]
                if not owners:
                    del self.partition_owners[topic_id]

    def _own_partitions(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, parts in assignment.items():
                owners = self.partition_owners.setdefault(topic_id, {})
                for p in parts:
                    previous = owners.get(p)
                    if previous is not None and previous[0] != member.member_id:
                        # Kafka 4.1.x (KAFKA-19862) logs this while loading, where compaction can
                        # reorder what the loader sees; the live path never produces it.
                        log.warning(
                            "group %s: partition %s-%d owned by %s is given to %s",
                            self.group_id,
                            topic_id,
                            p,
                            previous[0],
                            member.member_id,
                        )
                    owners[p] = (member.member_id, member.member_epoch)

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member that owns the partition now, or -1 when it is free."""
        owner = self.partition_owners.get(topic_id, {}).get(partition)
        return -1 if owner is None else owner[1]

    def partition_owner(self, topic_id: uuid.UUID, partition: int) -> str | None:
        owner = self.partition_owners.get(topic_id, {}).get(partition)
        return None if owner is None else owner[0]

    # ------------------------------------------------------------------------------ targets

    def target(self, member_id: str) -> Assignment:
        return self.target_assignment.get(member_id, {})

    def set_target(self, member_id: str, assignment: Assignment) -> None:
        self.remove_target(member_id)
        self.target_assignment[member_id] = assignment
        for topic_id, parts in assignment.items():
            inverted = self.inverted_target.setdefault(topic_id, {})
            for p in parts:
                inverted[p] = member_id

    def remove_target(self, member_id: str) -> None:
        old = self.target_assignment.pop(member_id, None)
        if old is None:
            return
        for topic_id, parts in old.items():
            inverted = self.inverted_target.get(topic_id, {})
            for p in parts:
                if inverted.get(p) == member_id:
                    del inverted[p]
            if not inverted:
                self.inverted_target.pop(topic_id, None)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether some target partition of an UNRELEASED member is still owned by another."""
        for topic_id, parts in self.target(member.member_id).items():
            for p in parts:
                owner = self.partition_owner(topic_id, p)
                if owner is not None and owner != member.member_id:
                    return True
        return False

    # ------------------------------------------------------------------------------ subscriptions

    def subscription_counts(
        self,
        old: ConsumerGroupMember | None,
        new: ConsumerGroupMember | None,
        removed: Iterable[ConsumerGroupMember] = (),
        deleted_regexes: Iterable[str] = (),
    ) -> tuple[Counter[str], Counter[str], Counter[str]]:
        """(by-name counts, by-regex counts, regex counts) with ``old`` replaced by ``new``, the
        ``removed`` members taken out and the ``deleted_regexes`` not resolved
        (``computeSubscribedTopicNames`` / ``...WithoutDeletedMembers``)."""
        names = Counter(self.subscribed_names)
        regexes = Counter(self.subscribed_regexes)
        changes: list[tuple[ConsumerGroupMember, int]] = [(m, -1) for m in removed]
        if old is not None:
            changes.append((old, -1))
        if new is not None:
            changes.append((new, 1))
        for m, sign in changes:
            for name in m.subscribed_topic_names:
                names[name] += sign
            if m.subscribed_topic_regex:
                regexes[m.subscribed_topic_regex] += sign
        names = Counter({k: v for k, v in names.items() if v > 0})
        skip = set(deleted_regexes)
        regexes = Counter({k: v for k, v in regexes.items() if v > 0 and k not in skip})
        by_regex: Counter[str] = Counter()
        for regex in regexes:
            resolved = self.resolved_regexes.get(regex)
            if resolved is not None:
                by_regex.update(resolved.topics)
        return names, by_regex, regexes

    def last_regex_refresh(self) -> tuple[int | None, int]:
        """(time of the latest resolution or None, its metadata version or -1)."""
        if not self.resolved_regexes:
            return None, -1
        latest = max(self.resolved_regexes.values(), key=lambda r: r.timestamp)
        return latest.timestamp, max(r.version for r in self.resolved_regexes.values())

    def member_topic_names(self, member: ConsumerGroupMember) -> frozenset[str]:
        """The topics a member subscribes to: its names plus its regex's resolution."""
        names = member.subscribed_topic_names
        if member.subscribed_topic_regex:
            resolved = self.resolved_regexes.get(member.subscribed_topic_regex)
            if resolved is not None:
                names = names | resolved.topics
        return names

    def preferred_server_assignor(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None, configured: Iterable[str]
    ) -> str | None:
        """The assignor most members name, counting ``new`` in place of ``old``.

        Kafka breaks ties by HashMap order (unspecified); we take the one listed first in
        ``group.consumer.assignors``, then by name."""
        counts = Counter(self.server_assignors)
        if old is not None and old.server_assignor_name is not None:
            counts[old.server_assignor_name] -= 1
        if new is not None and new.server_assignor_name is not None:
            counts[new.server_assignor_name] += 1
        order = {name: i for i, name in enumerate(configured)}
        best = [(-n, order.get(name, len(order)), name) for name, n in counts.items() if n > 0]
        return min(best)[2] if best else None

    # ------------------------------------------------------------------------------ offsets

    def validate_offset_commit(
        self,
        member_id: str,
        instance_id: str | None,
        member_epoch: int,
        *,
        transactional: bool,
        api_version: int,
    ) -> None:
        """Kafka's ``ConsumerGroup.validateOffsetCommit``.

        Raises:
            KafkaError: UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION (a consumer-protocol member below
                OffsetCommit v9), STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for a classic member).
        """
        if member_epoch < 0 and not self.members:
            return
        if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
            return
        member = self._existing(member_id)
        if not transactional and not member.uses_classic_protocol and api_version < 9:
            raise KafkaError(
                ErrorCode.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the modern group protocol",
            )
        self._validate_epoch(member_epoch, member)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        """Kafka's ``ConsumerGroup.validateOffsetFetch`` (against the live state; Kafka reads a
        non-``require_stable`` fetch at the last committed offset, which the shard supplies)."""
        if member_id is None and member_epoch < 0:
            return
        member = self.members.get(member_id or "")
        if member is None:
            raise KafkaError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {self.group_id}."
            )
        self._validate_epoch(member_epoch, member)

    def validate_delete_group(self) -> None:
        if self.state is not ConsumerGroupState.EMPTY:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP)

    def _existing(self, member_id: str) -> ConsumerGroupMember:
        member = self.members.get(member_id)
        if member is None:
            raise KafkaError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {self.group_id}."
            )
        return member

    @staticmethod
    def _validate_epoch(received: int, member: ConsumerGroupMember) -> None:
        if received == member.member_epoch:
            return
        if member.uses_classic_protocol:
            raise KafkaError(
                ErrorCode.ILLEGAL_GENERATION,
                f"The received generation id {received} does not match the expected member epoch "
                f"{member.member_epoch}.",
            )
        raise KafkaError(
            ErrorCode.STALE_MEMBER_EPOCH,
            f"The received member epoch {received} does not match the expected member epoch "
            f"{member.member_epoch}.",
        )
