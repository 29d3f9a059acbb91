"""ConsumerGroupDescribe (API 69): Kafka 4.1 ``GroupMetadataManager.consumerGroupDescribe`` and
``ConsumerGroup.asDescribedGroup``. An empty id answers INVALID_GROUP_ID; an unknown id, or one
held by a group of another type, GROUP_ID_NOT_FOUND with Kafka's message. The assignor named is
the one most members ask for, else the default (first configured). Partitions of topics missing
from the metadata are left out. Members are listed by member id."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from groupcoord.coordinator.consumer.api import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    DescribedMember,
    DescribedTopicPartitions,
)
from groupcoord.coordinator.consumer.assignment import Assignment, topic_id_order
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.metadata import TopicsImage
from groupcoord.errors import ErrorCode

__all__ = ["describe_groups"]


def describe_groups(
    request: ConsumerGroupDescribeRequest,
    groups: Mapping[str, ConsumerGroup],
    image: TopicsImage,
    assignors: tuple[str, ...],
    is_other_group_type: Callable[[str], bool],
) -> ConsumerGroupDescribeResponse:
    """ConsumerGroupDescribe (API 69), against the live state."""
    out: list[DescribedGroup] = []
    for group_id in request.group_ids:
        if not group_id:
            out.append(DescribedGroup(group_id="", error_code=ErrorCode.INVALID_GROUP_ID))
            continue
        group = groups.get(group_id)
        if group is None or is_other_group_type(group_id):
            message = (
                f"Group {group_id} is not a consumer group."
                if is_other_group_type(group_id)
                else f"Group {group_id} not found."
            )
            out.append(
                DescribedGroup(
                    group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=message
                )
            )
            continue
        out.append(_describe(group, image, assignors))
    return ConsumerGroupDescribeResponse(groups=tuple(out))


def _describe(group: ConsumerGroup, image: TopicsImage, assignors: tuple[str, ...]) -> DescribedGroup:
    members = tuple(
        DescribedMember(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
            subscribed_topic_regex=m.subscribed_topic_regex or None,
            assignment=_described_partitions(image, m.assigned_partitions),
            target_assignment=_described_partitions(image, group.target(m.member_id)),
            member_type=int(m.member_type),
        )
        for m in sorted(group.members.values(), key=lambda m: m.member_id)
    )
    return DescribedGroup(
        group_id=group.group_id,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_server_assignor(None, None, assignors) or assignors[0],
        members=members,
    )


def _described_partitions(image: TopicsImage, assignment: Assignment) -> tuple[DescribedTopicPartitions, ...]:
    out = []
    for topic_id in sorted(assignment, key=topic_id_order):
        topic = image.by_id(topic_id)
        if topic is None:
            continue  # Kafka leaves out topics missing from the metadata
        out.append(
            DescribedTopicPartitions(
                topic_id=topic_id, topic_name=topic.name, partitions=tuple(sorted(assignment[topic_id]))
            )
        )
    return tuple(out)
