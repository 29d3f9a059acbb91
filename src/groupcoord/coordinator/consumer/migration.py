"""The online upgrade and downgrade between a classic group and a consumer group (KIP-848's
migration, Kafka 4.1 ``GroupMetadataManager.convertToConsumerGroup`` / ``convertToClassicGroup``,
``ConsumerGroup.fromClassicGroup``, ``ClassicGroup.fromConsumerGroup``), as pure functions of the
groups' data: the shard (``coordinator/consumer_groups.py``) owns both group tables and applies them.

* **Upgrade** (:func:`upgrade_records`): a classic group of protocol type ``consumer`` becomes a
  consumer group at epoch = its generation; each classic member becomes a STABLE member at that
  epoch whose subscription, rack and owned partitions come from its JoinGroup metadata (the
  selected protocol's ``ConsumerProtocolSubscription``) and whose target and current assignment
  are its last SyncGroup assignment; its ``ClassicMemberMetadata`` keeps its session timeout and
  protocols. The records are Kafka's ``createConsumerGroupRecords`` order: every member's
  MemberMetadata, the GroupMetadata, every TargetAssignmentMember, the TargetAssignmentMetadata,
  every CurrentMemberAssignment.
* **Downgrade** (:func:`downgrade_allowed`, :func:`downgrade_of`): when only classic members would
  remain, the consumer group's tombstones are written and the shard builds a classic group of them
  (generation = the group epoch, each member's *target* assignment).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from groupcoord.coordinator.consumer.api import Downgrade, DowngradedMember, TimerKind
from groupcoord.coordinator.consumer.assignment import Assignment
from groupcoord.coordinator.consumer.config import ConsumerGroupConfig
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from groupcoord.coordinator.consumer.metadata import TopicsImage, group_metadata_hash
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupRecord,
    new_current_assignment_record,
    new_current_assignment_tombstone,
    new_group_epoch_record,
    new_group_epoch_tombstone,
    new_member_subscription_record,
    new_member_subscription_tombstone,
    new_partition_metadata_tombstone,
    new_regular_expression_tombstone,
    new_target_assignment_epoch_record,
    new_target_assignment_epoch_tombstone,
    new_target_assignment_record,
    new_target_assignment_tombstone,
)
from groupcoord.errors import ErrorCode, KafkaError
from groupcoord.formats.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)

log = logging.getLogger(__name__)

__all__ = [
    "MEMBER_TIMERS",
    "UpgradingMember",
    "downgrade_allowed",
    "downgrade_of",
    "downgrade_on_replacement",
    "group_tombstones",
    "to_assignment",
    "upgrade_records",
]

#: The timers a member may hold (all cancelled when it leaves or its group changes type).
MEMBER_TIMERS = (TimerKind.SESSION, TimerKind.REBALANCE, TimerKind.CLASSIC_JOIN, TimerKind.CLASSIC_SYNC)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpgradingMember:
    """A classic member as the upgrade reads it."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    #: its last SyncGroup assignment (b"" if it has none yet)
    assignment: bytes


def to_assignment(partitions: Iterable[tuple[str, Sequence[int]]], image: TopicsImage) -> Assignment:
    """Partitions by topic name as an assignment by topic id; unknown topics are left out, as
    Kafka's ``toTopicPartitionMap`` does."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for name, parts in partitions:
        topic = image.by_name(name)
        if topic is not None and parts:
            out[topic.topic_id] = out.get(topic.topic_id, frozenset()) | frozenset(parts)
    return out


def upgrade_records(
    group_id: str,
    generation: int,
    protocol_name: str,
    members: Sequence[UpgradingMember],
    image: TopicsImage,
) -> list[ConsumerGroupRecord]:
    """``convertToConsumerGroup``'s records (after the classic GroupMetadata tombstone, which the
    shard writes). A subscription or assignment that does not parse, or an assignment carrying
    user data (a custom assignor's: librdkafka's sticky assignors echo theirs into it), refuses
    the upgrade with GROUP_ID_NOT_FOUND and Kafka's messages (``convertToConsumerGroup``,
    ``ConsumerProtocolMigrationTest#testUpgradeFromCustomAssignor`` shape)."""
    converted: list[ConsumerGroupMember] = []
    topics: set[str] = set()
    for m in members:
        metadata = dict(m.protocols).get(protocol_name)
        try:
            if metadata is None:
                raise ConsumerProtocolError(f"member {m.member_id} has no metadata for {protocol_name}")
            subscription = decode_subscription(metadata)
            decoded = decode_assignment(m.assignment) if m.assignment else None
        except ConsumerProtocolError as exc:
            log.warning("Cannot upgrade the classic group %s to consumer group: %s", group_id, exc)
            raise KafkaError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {group_id} to consumer group because the embedded "
                "consumer protocol is malformed.",
            ) from None
        if decoded is not None and decoded.user_data:
            log.info(
                "Cannot upgrade the classic group %s to consumer group: member %s's assignment carries "
                "user data (%d bytes).",
                group_id,
                m.member_id,
                len(decoded.user_data),
            )
            raise KafkaError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {group_id} to consumer group because an unsupported custom "
                "assignor is in use. Please refer to the documentation or switch to a default assignor "
                "before re-attempting the upgrade.",
            )
        assigned = to_assignment(decoded.partitions if decoded is not None else (), image)
        topics |= set(subscription.topics)
        converted.append(
            ConsumerGroupMember(
                member_id=m.member_id,
                member_epoch=generation,
                previous_member_epoch=generation,
                state=MemberState.STABLE,
                instance_id=m.instance_id,
                rack_id=subscription.rack_id,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=frozenset(subscription.topics),
                assigned_partitions=assigned,
                classic_member_metadata=ClassicMemberMetadata(
                    session_timeout_ms=m.session_timeout_ms, supported_protocols=m.protocols
                ),
            )
        )
    records = [new_member_subscription_record(group_id, m) for m in converted]
    records.append(new_group_epoch_record(group_id, generation, group_metadata_hash(topics, image)))
    records += [new_target_assignment_record(group_id, m.member_id, m.assigned_partitions) for m in converted]
    records.append(new_target_assignment_epoch_record(group_id, generation))
    records += [new_current_assignment_record(group_id, m) for m in converted]
    return records


def downgrade_allowed(
    config: ConsumerGroupConfig, group: ConsumerGroup, leaving: Sequence[ConsumerGroupMember]
) -> bool:
    """``validateOnlineDowngradeWithFencedMembers``: every remaining member uses the classic
    protocol, one remains at least, the policy allows downgrades and ``group.max.size`` holds
    them."""
    gone = {m.member_id for m in leaving}
    remaining = [m for mid, m in group.members.items() if mid not in gone]
    if not remaining or not all(m.uses_classic_protocol for m in remaining):
        return False
    return config.downgrade_enabled and len(remaining) <= config.classic_max_size


def downgrade_of(
    group: ConsumerGroup,
    leaving: Sequence[ConsumerGroupMember],
    image: TopicsImage,
    joining: ConsumerGroupMember | None = None,
) -> Downgrade:
    """The classic group ``ClassicGroup.fromConsumerGroup`` makes of the members that remain, and
    of ``joining`` if a static member replaced the (one) leaving member: it takes the leaving
    member's target assignment, and no rebalance follows."""
    gone = {m.member_id for m in leaving}
    members = [m for mid, m in group.members.items() if mid not in gone]
    targets = {m.member_id: group.target(m.member_id) for m in members}
    if joining is not None:
        members.append(joining)
        targets[joining.member_id] = group.target(leaving[0].member_id)
    converted = []
    for m in members:
        classic = m.classic_member_metadata
        if classic is None:
            continue
        assignment = []
        for topic_id, parts in targets[m.member_id].items():
            topic = image.by_id(topic_id)
            if topic is not None and parts:
                assignment.append((topic.name, tuple(sorted(parts))))
        converted.append(
            DowngradedMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=classic.session_timeout_ms,
                protocols=classic.supported_protocols,
                assignment=tuple(sorted(assignment)),
            )
        )
    return Downgrade(
        group_id=group.group_id,
        generation=group.group_epoch,
        members=tuple(converted),
        prepare_rebalance=joining is None,
    )


def downgrade_on_replacement(
    config: ConsumerGroupConfig, group: ConsumerGroup, replaced: ConsumerGroupMember
) -> bool:
    """``validateOnlineDowngradeWithReplacedMemberId``: a classic static member replaced the
    group's last consumer-protocol member, the policy allows downgrades, and ``group.max.size``
    holds the group."""
    if replaced.uses_classic_protocol:
        return False
    others = (m for mid, m in group.members.items() if mid != replaced.member_id)
    if not all(m.uses_classic_protocol for m in others):
        return False
    return config.downgrade_enabled and len(group.members) <= config.classic_max_size


def group_tombstones(
    group: ConsumerGroup, members: Iterable[str] | None = None
) -> tuple[ConsumerGroupRecord, ...]:
    """``ConsumerGroup.createGroupTombstoneRecords`` (DeleteGroups and the downgrade); with
    ``members``, those ids instead of the group's (``createGroupTombstoneRecordsWithReplacedMember``)."""
    gid = group.group_id
    ids = sorted(group.members) if members is None else list(members)
    return (
        *(new_current_assignment_tombstone(gid, m) for m in ids),
        *(new_target_assignment_tombstone(gid, m) for m in ids),
        new_target_assignment_epoch_tombstone(gid),
        *(new_member_subscription_tombstone(gid, m) for m in ids),
        *(new_regular_expression_tombstone(gid, r) for r in sorted(group.resolved_regexes)),
        new_partition_metadata_tombstone(gid),
        new_group_epoch_tombstone(gid),
    )
