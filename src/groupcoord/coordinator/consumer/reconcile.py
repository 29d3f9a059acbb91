"""Member reconciliation: Kafka's ``CurrentAssignmentBuilder`` (4.1, with KAFKA-19449).

Given a member, the target assignment at ``target_epoch`` and who currently owns each partition,
:func:`reconcile` returns the member's next state. The rules that keep a partition from being
owned by two members at once:

* a member first gives up what it must revoke: while it still reports owning any of its
  ``partitions_pending_revocation`` it stays in UNREVOKED_PARTITIONS at its old epoch;
* a partition of the target that another member still owns (assigned or pending revocation) is
  not handed out: the member waits in UNRELEASED_PARTITIONS at the new epoch and picks it up on a
  later heartbeat, once the owner's revocation freed it.

``owned`` is the ``TopicPartitions`` of the heartbeat: ``None`` means "unknown" and counts as still
owning everything pending revocation.

Versions: leaving UNREVOKED_PARTITIONS moves to ``member_epoch + 1`` as in Kafka 4.0/4.1 (4.2's
KAFKA-19974 keeps the epoch); a partition pending revocation by the member itself is not counted
as unreleased (KAFKA-19449, on the 4.1 branch after 4.1.0).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from groupcoord.coordinator.consumer.assignment import Assignment
from groupcoord.coordinator.consumer.member import ConsumerGroupMember, MemberState
from groupcoord.errors import ErrorCode, KafkaError

__all__ = ["PartitionEpoch", "reconcile"]

#: (topic id, partition) -> the epoch of the member that owns it now, or -1 if free.
PartitionEpoch = Callable[[uuid.UUID, int], int]


def _owns_any(owned: Mapping[uuid.UUID, frozenset[int]] | None, partitions: Assignment) -> bool:
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & parts for t, parts in partitions.items())


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: PartitionEpoch,
    owned: Mapping[uuid.UUID, frozenset[int]] | None,
) -> ConsumerGroupMember:
    """The member after one reconciliation step (Kafka's ``CurrentAssignmentBuilder.build``).

    Raises:
        KafkaError: FENCED_MEMBER_EPOCH for a member in the UNKNOWN state that does not report
            an empty owned set.
    """
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if owned is None or any(owned.values()):
        raise KafkaError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            "The consumer group member is in a unknown state. "
            "The member must abandon all its partitions and rejoin.",
        )
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _next(
    member: ConsumerGroupMember,
    revoking_epoch: int,
    target_epoch: int,
    target: Assignment,
    partition_epoch: PartitionEpoch,
    owned: Mapping[uuid.UUID, frozenset[int]] | None,
) -> ConsumerGroupMember:
    current = member.assigned_partitions
    own_pending = member.partitions_pending_revocation
    keep: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    add: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(current):
        wanted = target.get(topic_id, frozenset())
        have = current.get(topic_id, frozenset())
        kept = have & wanted
        if kept:
            keep[topic_id] = kept
        if have - kept:
            revoke[topic_id] = have - kept
        mine_pending = own_pending.get(topic_id, frozenset())
        free = set()
        for p in wanted - kept:
            if partition_epoch(topic_id, p) != -1 and p not in mine_pending:
                unreleased = True
            else:
                free.add(p)
        if free:
            add[topic_id] = frozenset(free)
    if revoke and _owns_any(owned, revoke):
        return member.with_epoch(revoking_epoch).replace(
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned_partitions=keep,
            partitions_pending_revocation=revoke,
        )
    if add:
        assigned = dict(keep)
        for topic_id, parts in add.items():
            assigned[topic_id] = assigned.get(topic_id, frozenset()) | parts
        return member.with_epoch(target_epoch).replace(
            state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
            assigned_partitions=assigned,
            partitions_pending_revocation={},
        )
    return member.with_epoch(target_epoch).replace(
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        assigned_partitions=keep,
        partitions_pending_revocation={},
    )
