"""Replaying consumer-group records into the model (Kafka 4.1 ``GroupMetadataManager.replay``).

The one way the consumer-group state changes: the handlers produce records, and this applies them,
both on the live path (right after a handler, before the write is durable, as Kafka does) and
when a ``__consumer_offsets`` partition is loaded. Rules (reference §6.5):

* a value of type 3, 4, 5, 7 or 8 creates the group if needed; 5 and 8 create the member;
* 5 overwrites the member's subscription fields, 8 its epochs, state and partitions;
* the tombstone of 8 keeps the member at epoch -1 with no partitions, until its 5 tombstone
  removes it; the tombstone of 6 sets the assignment epoch to -1; the tombstone of 3 removes
  the group;
* a tombstone for something that does not exist is ignored.

Kafka also lets a consumer-group record replace a *simple* classic group (one that only holds
offsets); which group types exist under an id is the shard's business, so it checks that before
offering a record here.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from groupcoord.coordinator.consumer.group import ConsumerGroup, ResolvedRegularExpression
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)

__all__ = ["replay"]


def replay(groups: MutableMapping[str, ConsumerGroup], record: ConsumerGroupRecord) -> None:
    """Apply one record to ``groups`` (group id -> group)."""
    key, value = record.key, record.value
    group = groups.get(key.group_id)
    if value is None and group is None:
        return
    if group is None:
        group = groups[key.group_id] = ConsumerGroup(key.group_id)
    if isinstance(key, ConsumerGroupMetadataKey):
        if value is None:
            del groups[key.group_id]
            return
        assert isinstance(value, ConsumerGroupMetadataValue)
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash
    elif isinstance(key, ConsumerGroupPartitionMetadataKey):
        group.has_partition_metadata_record = value is not None
    elif isinstance(key, ConsumerGroupMemberMetadataKey):
        if value is None:
            group.remove_member(key.member_id)
            return
        assert isinstance(value, ConsumerGroupMemberMetadataValue)
        member = group.member(key.member_id) or ConsumerGroupMember(member_id=key.member_id)
        group.update_member(
            member.replace(
                instance_id=value.instance_id,
                rack_id=value.rack_id,
                client_id=value.client_id,
                client_host=value.client_host,
                subscribed_topic_names=frozenset(value.subscribed_topic_names),
                subscribed_topic_regex=value.subscribed_topic_regex or "",
                rebalance_timeout_ms=value.rebalance_timeout_ms,
                server_assignor_name=value.server_assignor,
                classic_member_metadata=value.classic_member_metadata,
            )
        )
    elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
        if value is None:
            group.assignment_epoch = -1
            group.assignment_timestamp = 0
            return
        assert isinstance(value, ConsumerGroupTargetAssignmentMetadataValue)
        group.assignment_epoch = value.assignment_epoch
        group.assignment_timestamp = value.assignment_timestamp
    elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
        if value is None:
            group.remove_target(key.member_id)
            return
        assert isinstance(value, ConsumerGroupTargetAssignmentMemberValue)
        group.set_target(key.member_id, value.topic_partitions)
    elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
        existing = group.member(key.member_id)
        if value is None:
            if existing is not None:
                group.update_member(
                    existing.replace(
                        member_epoch=-1,
                        previous_member_epoch=-1,
                        assigned_partitions={},
                        partitions_pending_revocation={},
                    )
                )
            return
        assert isinstance(value, ConsumerGroupCurrentMemberAssignmentValue)
        member = existing or ConsumerGroupMember(member_id=key.member_id)
        group.update_member(
            member.replace(
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=value.member_state,
                assigned_partitions=value.assigned_partitions,
                partitions_pending_revocation=value.partitions_pending_revocation,
            )
        )
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        if value is None:
            group.resolved_regexes.pop(key.regular_expression, None)
            return
        assert isinstance(value, ConsumerGroupRegularExpressionValue)
        group.resolved_regexes[key.regular_expression] = ResolvedRegularExpression(
            topics=frozenset(value.topics), version=value.version, timestamp=value.timestamp
        )
