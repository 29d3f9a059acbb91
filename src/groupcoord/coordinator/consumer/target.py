"""Computing a new target assignment (Kafka 4.1 ``TargetAssignmentBuilder``).

The builder takes every member of the group with one change applied (a member added or updated,
or removed), turns each into the assignor's :class:`MemberSpec` (subscribed topic ids: its names
that exist in the topics image, united with its regex's resolution; its rack and instance id;
its previous target, which a static member replacing another id takes over), runs the assignor,
and reports every member whose new target differs from the stored one. A member with no stored
target counts as changed even when its new target is empty, as in Kafka (the first member of a
group with no topics gets an empty TargetAssignmentMember record).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.coordinator.consumer.assignment import (
    Assignment,
    GroupSpec,
    MemberSpec,
    PartitionAssignor,
    SubscriptionType,
    assignment_of,
)
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.metadata import TopicsImage

__all__ = ["TargetAssignmentResult", "build_target_assignment", "can_compute_next_target"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetAssignmentResult:
    #: every member's new target
    targets: Mapping[str, Assignment]
    #: the members whose target record must be written, in member-id order
    changed: tuple[tuple[str, Assignment], ...]


def build_target_assignment(
    group: ConsumerGroup,
    assignor: PartitionAssignor,
    image: TopicsImage,
    subscription_type: SubscriptionType,
    *,
    updated: Mapping[str, ConsumerGroupMember | None] | None = None,
) -> TargetAssignmentResult:
    """Run ``assignor`` over the group with ``updated`` (member id -> new member, or None to
    remove it) applied.

    Raises:
        PartitionAssignorError: from the assignor.
    """
    members: dict[str, ConsumerGroupMember] = dict(group.members)
    previous: dict[str, Assignment] = {mid: group.target(mid) for mid in members}
    for member_id, member in (updated or {}).items():
        if member is None:
            members.pop(member_id, None)
            previous.pop(member_id, None)
            continue
        members[member_id] = member
        prior = group.target(member_id)
        if member.instance_id is not None:
            holder = group.static_members.get(member.instance_id)
            if holder is not None and holder != member_id:
                prior = group.target(holder)
                members.pop(holder, None)
                previous.pop(holder, None)
        previous[member_id] = prior
    # Members mostly share their subscription: resolve each distinct one once per build.
    topic_ids: dict[tuple[frozenset[str], str | None], frozenset[uuid.UUID]] = {}
    specs = {}
    for member_id, member in members.items():
        key = (member.subscribed_topic_names, member.subscribed_topic_regex)
        ids = topic_ids.get(key)
        if ids is None:
            ids = topic_ids[key] = _topic_ids(group, member, image)
        specs[member_id] = MemberSpec(
            subscribed_topic_ids=ids,
            rack_id=member.rack_id,
            instance_id=member.instance_id,
            assignment=previous[member_id],
        )
    new = assignor.assign(
        GroupSpec(
            members=specs, subscription_type=subscription_type, assigned_partitions=group.inverted_target
        ),
        image.partition_counts(),
    )
    # assignment_of drops empty topics: an assignor's output is compared and written as is
    targets = {member_id: assignment_of(new.get(member_id, {})) for member_id in members}
    changed = tuple(
        (member_id, targets[member_id])
        for member_id in sorted(members)
        if member_id not in group.target_assignment
        or group.target_assignment[member_id] != targets[member_id]
    )
    return TargetAssignmentResult(targets=targets, changed=changed)


def can_compute_next_target(assignment_timestamp: int, interval_ms: int, now: int) -> bool:
    """Kafka 4.3's ``canComputeNextTargetAssignment`` (KIP-1263): at once when the time of the
    last computation is unknown (0: none yet, an upgraded classic group, a record written by 4.1)
    or the interval is 0 (also the way out after a large backward step of the wall clock); else
    once ``interval_ms`` has elapsed since the last computation finished."""
    if assignment_timestamp == 0 or interval_ms == 0:
        return True
    return now >= assignment_timestamp + interval_ms


def _topic_ids(group: ConsumerGroup, member: ConsumerGroupMember, image: TopicsImage) -> frozenset[uuid.UUID]:
    ids = set()
    for name in group.member_topic_names(member):
        topic = image.by_name(name)
        if topic is not None:
            ids.add(topic.topic_id)
    return frozenset(ids)
