"""The consumer-protocol member's assignments by topic id, and their resolution to names.

:class:`LocalAssignment` is Java's ``AbstractMembershipManager.LocalAssignment``: partitions by
topic id plus a local epoch bumped on every new target, so that an equal set of partitions
received again is still told apart (and acknowledged again). :func:`resolve` is the first step of
Java's ``maybeReconcile`` (``findResolvableAssignmentAndTriggerMetadataUpdate``): the part of the
target whose topic names are known, from Metadata or from the names of topics already assigned,
and the topic ids still unknown. :class:`Reconciliation` is one reconciliation in progress.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from groupcoord.client.consumer_group_messages import TopicIdPartitions
from groupcoord.client.types import TopicPartition

NONE_EPOCH = -1


@dataclass(frozen=True, slots=True)
class LocalAssignment:
    """Partitions by topic id with the local epoch of the target they came from."""

    local_epoch: int
    partitions: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)

    def is_none(self) -> bool:
        return self.local_epoch == NONE_EPOCH

    def updated_with(self, assignment: Mapping[uuid.UUID, frozenset[int]]) -> LocalAssignment | None:
        """Java ``updateWith``: a new target with the next local epoch, or None when unchanged."""
        if not self.is_none() and dict(assignment) == dict(self.partitions):
            return None
        return LocalAssignment(self.local_epoch + 1, dict(assignment))

    def same_as(self, other: LocalAssignment) -> bool:
        return self.local_epoch == other.local_epoch and dict(self.partitions) == dict(other.partitions)

    def wire(self) -> tuple[TopicIdPartitions, ...]:
        """The ``TopicPartitions`` field: topics by id, partitions ascending."""
        return tuple(
            TopicIdPartitions(topic_id=tid, partitions=tuple(sorted(ps)))
            for tid, ps in sorted(self.partitions.items(), key=lambda kv: str(kv[0]))
            if ps
        )


NO_ASSIGNMENT = LocalAssignment(NONE_EPOCH, {})


@dataclass(kw_only=True, slots=True)
class Reconciliation:
    """One reconciliation in progress (Java ``maybeReconcile`` .. ``revokeAndAssign``)."""

    resolved: LocalAssignment
    assigned: frozenset[TopicPartition]
    added: tuple[TopicPartition, ...]
    revoked: tuple[TopicPartition, ...]
    rejoined: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolution:
    resolved: LocalAssignment
    assigned: frozenset[TopicPartition]
    unresolved: frozenset[uuid.UUID]


def resolve(
    target: LocalAssignment, metadata_names: Mapping[uuid.UUID, str], assigned_names: dict[uuid.UUID, str]
) -> Resolution:
    """The resolvable part of ``target``; names found in Metadata are remembered in
    ``assigned_names`` (Java's local cache of assigned topic names)."""
    parts: dict[uuid.UUID, frozenset[int]] = {}
    assigned: set[TopicPartition] = set()
    unresolved: set[uuid.UUID] = set()
    for tid, ps in target.partitions.items():
        name = metadata_names.get(tid)
        if name is not None:
            assigned_names[tid] = name
        else:
            name = assigned_names.get(tid)
        if name is None:
            unresolved.add(tid)
            continue
        parts[tid] = frozenset(ps)
        assigned.update(TopicPartition(name, p) for p in ps)
    return Resolution(
        resolved=LocalAssignment(target.local_epoch, parts),
        assigned=frozenset(assigned),
        unresolved=frozenset(unresolved),
    )
