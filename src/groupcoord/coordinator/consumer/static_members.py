"""A static member rejoining under a new member id (Kafka's ``replaceStaticMember``), shared by
the consumer-protocol heartbeat (``manager.py``) and the classic JoinGroup of a member inside a
consumer group (``classic_members.py``)."""

from __future__ import annotations

from groupcoord.coordinator.consumer.api import ConsumerGroupEvent
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupRecord,
    new_current_assignment_record,
    new_current_assignment_tombstone,
    new_member_subscription_record,
    new_member_subscription_tombstone,
    new_target_assignment_record,
    new_target_assignment_tombstone,
)


def replace_static_member(
    group: ConsumerGroup,
    existing: ConsumerGroupMember,
    member_id: str,
    records: list[ConsumerGroupRecord],
    events: list[ConsumerGroupEvent],
) -> ConsumerGroupMember:
    """``member_id`` takes ``existing``'s place at epoch 0 with its subscription, target and
    assignment: the old id's records are tombstoned, the new id's appended to ``records``, and a
    ``static-member-replaced`` event to ``events``. Returns the new member."""
    member = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
    gid = group.group_id
    records += [
        new_current_assignment_tombstone(gid, existing.member_id),
        new_target_assignment_tombstone(gid, existing.member_id),
        new_member_subscription_tombstone(gid, existing.member_id),
        new_member_subscription_record(gid, member),
        new_target_assignment_record(gid, member_id, group.target(existing.member_id)),
        new_current_assignment_record(gid, member),
    ]
    events.append(
        ConsumerGroupEvent(
            kind="static-member-replaced", group_id=gid, member_id=member_id, cause=existing.member_id
        )
    )
    return member
