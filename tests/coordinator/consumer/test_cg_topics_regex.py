"""Topic changes, regex refreshes and the remaining epoch-bump rules of the consumer group core
(Kafka 4.1 ``GroupMetadataManagerTest``; reference §3.6 and §8)."""

from __future__ import annotations

import uuid

from cg_harness import BAR, FOO, GROUP, Harness, image, owned, record_kinds, tps

from groupcoord.coordinator.consumer.metadata import (
    TopicMetadata,
    TopicsImage,
    group_metadata_hash,
    topic_hash,
)
from groupcoord.errors import ErrorCode

FOO2 = uuid.UUID(int=0xF002)


def test_new_member_with_empty_subscription_does_not_bump() -> None:
    """Reference §3.6: a member joining with [] and no regex is added with the current target."""
    h = Harness.make(image(("foo", FOO, 2)))
    h.join("m1")
    r = h.join("m2", ())
    assert (r.error_code, r.member_epoch, r.assignment) == (0, 1, {})
    assert "R3" not in record_kinds(h.last.records if h.last else ())


def test_assignor_or_rack_change_rewrites_member_metadata_only() -> None:
    """Reference §3.6: ServerAssignor, RackId and RebalanceTimeoutMs changes write R5 and no R3."""
    h = Harness.make(image(("foo", FOO, 2)))
    h.join("m1")
    h.heartbeat(member_id="m1", member_epoch=1, server_assignor="range", rack_id="r2", rebalance_timeout_ms=9)
    assert record_kinds(h.last.records if h.last else ()) == ["R5(m1)"]
    m = h.group.members["m1"]
    assert (m.server_assignor_name, m.rack_id, m.rebalance_timeout_ms) == ("range", "r2", 9)


def test_a_created_partition_bumps_the_epoch_and_is_assigned() -> None:
    """Reference §3.6 (``GroupMetadataManager.onNewMetadataImage``): a topic's new partition marks
    the group for a refresh; its next heartbeat bumps the epoch and assigns the partition."""
    h = Harness.make(image(("foo", FOO, 2)))
    h.join("m1")
    h.manager.on_metadata_update(image(("foo", FOO, 3), version=2))
    r = h.heartbeat(member_id="m1", member_epoch=1)
    assert (r.member_epoch, r.assignment) == (2, tps(foo=(0, 1, 2)))


def test_a_deleted_topic_leaves_the_assignment() -> None:
    """Reference §3.6/§8: a deleted topic changes the hash; the next heartbeat bumps the epoch and
    the member must revoke the topic's partitions."""
    h = Harness.make(image(("foo", FOO, 2), ("bar", BAR, 1)))
    h.join("m1", ("foo", "bar"))
    h.manager.on_metadata_update(image(("foo", FOO, 2), version=2))
    r = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(tps(foo=(0, 1), bar=(0,))))
    assert r.member_epoch == 1 and r.assignment == tps(foo=(0, 1))
    assert h.group.group_epoch == 2
    r = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(tps(foo=(0, 1))))
    assert (r.member_epoch, h.group.members["m1"].partitions_pending_revocation) == (2, {})


def test_a_created_topic_refreshes_the_regexes() -> None:
    """GMMT.testConsumerGroupMemberJoinRefreshesExpiredRegexes (reference §8): a topic created
    since the last resolution makes the next heartbeat (10 s after it) resolve again."""
    h = Harness.make(image(("foo", FOO, 1)))
    h.heartbeat(
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_regex="foo.*",
        topic_partitions=(),
    )
    h.advance(0)
    assert h.group.resolved_regexes["foo.*"].topics == {"foo"}
    epoch = h.heartbeat(member_id="m1", member_epoch=1).member_epoch
    created = TopicsImage(
        [
            TopicMetadata(topic_id=FOO, name="foo", num_partitions=1),
            TopicMetadata(topic_id=FOO2, name="foo2", num_partitions=1),
        ],
        version=2,
    )
    h.manager.on_metadata_update(created)
    h.now += 5_000
    h.heartbeat(member_id="m1", member_epoch=epoch)
    assert not any(t.startswith(GROUP + "-regex") for t in h.timers)  # within 10 s of the last one
    h.now += 6_000
    h.heartbeat(member_id="m1", member_epoch=epoch)
    fired = h.advance(0)
    assert record_kinds(fired[0].records) == ["R16", "R3"]
    assert h.group.resolved_regexes["foo.*"].topics == {"foo", "foo2"}
    r = h.heartbeat(member_id="m1", member_epoch=epoch)
    assert r.assignment == {FOO: frozenset({0}), FOO2: frozenset({0})}


def test_regex_changed_before_its_resolution() -> None:
    """GMMT.testConsumerGroupMemberJoinsWithRegexAndUpdatesItBeforeResolutionCompleted: the
    abandoned regex is tombstoned and never resolved; the new one is. (Kafka's task resolves the
    set it was scheduled with and a later heartbeat schedules the new one; ours resolves the set in
    use when it runs, one round trip sooner: docs/coordinator-scenarios.md.)"""
    h = Harness.make(image(("foo", FOO, 1), ("bar", BAR, 1)))
    h.heartbeat(
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_regex="foo*",
        topic_partitions=(),
    )
    h.heartbeat(member_id="m1", member_epoch=1, subscribed_topic_regex="bar*")
    assert record_kinds(h.last.records if h.last else ()) == ["R5(m1)", "R16-"]
    fired = h.advance(0)
    assert record_kinds(fired[0].records) == ["R16", "R3"]
    assert set(h.group.resolved_regexes) == {"bar*"}


def test_heartbeat_to_a_group_of_another_type() -> None:
    """GMMT.testConsumerGroupHeartbeatWithNonEmptyClassicGroup: GROUP_ID_NOT_FOUND (the online
    upgrade is the shard's; this core only refuses)."""
    h = Harness.make(image(("foo", FOO, 1)))
    h.manager = type(h.manager)(is_other_group_type=lambda gid: gid == GROUP)
    r = h.join("m1")
    assert (r.error_code, r.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Group {GROUP} is not a consumer group.",
    )


def test_replaced_static_members_old_timers_do_nothing() -> None:
    """Reference §3.5 step 3: the replaced member's timers are not cancelled and find no member."""
    h = Harness.make(image(("foo", FOO, 2)))
    h.join("m1", instance_id="i1")
    old_session = h.timers[f"session-timeout-{GROUP}-m1"]
    h.heartbeat(member_id="m1", member_epoch=-2, instance_id="i1")
    h.join("m1b", instance_id="i1")
    assert h.manager.on_timer(old_session, old_session.deadline_ms).records == ()
    assert "m1b" in h.group.members


def test_events_name_joins_bumps_and_fences() -> None:
    """The events the shard forwards to __group_events: joins, epoch bumps with their cause,
    reconciliation done, fences by session timeout."""
    h = Harness.make(image(("foo", FOO, 2)))
    h.join("m1")
    kinds = [(e.kind, e.cause) for e in (h.last.events if h.last else ())]
    assert kinds == [("member-joined", ""), ("epoch-bump", "group-created"), ("reconciled", "")]
    fired = h.advance(45_001)
    assert [(e.kind, e.cause) for e in fired[0].events] == [
        ("member-fenced", "session-timeout"),
        ("epoch-bump", "session-timeout"),
    ]


def test_joiner_with_another_subscription_after_a_leave_is_heterogeneous() -> None:
    """A member leaves (the epoch is bumped, no target computed), then a member with an empty
    subscription joins: the target computed now must count the joiner's subscription, or the
    homogeneous builder would read the joiner's (empty) topics as everyone's and take m1's
    partitions away. Found by test_cg_property.py; Kafka 4.1 uses its stored subscription type
    here (docs/coordinator-scenarios.md)."""
    h = Harness.make(image(("foo", FOO, 4)))
    h.join("m2", ())
    h.join("m1", ("foo",))
    h.heartbeat(member_id="m2", member_epoch=-1)
    h.join("m0", ())
    assert h.group.target("m1") == tps(foo=(0, 1, 2, 3))
    assert h.group.target("m0") == {}


def test_group_written_by_4_0_moves_to_the_metadata_hash() -> None:
    """GMMT.testSubscriptionUpgradeToMetadataHash (4.1): a group loaded with hash 0 and a 4.0
    ConsumerGroupPartitionMetadata record; its first heartbeat writes R3 with the hash, the R4
    tombstone, R6 and R8 (the member moves to the new epoch)."""
    from groupcoord.coordinator.consumer.member import ConsumerGroupMember
    from groupcoord.coordinator.consumer.records import (
        ConsumerGroupPartitionMetadataKey,
        ConsumerGroupPartitionMetadataValue,
        ConsumerGroupRecord,
        PartitionMetadataTopic,
        new_current_assignment_record,
        new_group_epoch_record,
        new_member_subscription_record,
        new_target_assignment_epoch_record,
        new_target_assignment_record,
    )

    h = Harness.make(image(("foo", FOO, 2)))
    m = ConsumerGroupMember(
        member_id="m1",
        member_epoch=10,
        previous_member_epoch=9,
        subscribed_topic_names=frozenset({"foo"}),
        rebalance_timeout_ms=5000,
        assigned_partitions=tps(foo=(0, 1)),
    )
    legacy = ConsumerGroupRecord(
        key=ConsumerGroupPartitionMetadataKey(group_id=GROUP),
        value=ConsumerGroupPartitionMetadataValue(
            topics=(PartitionMetadataTopic(topic_id=FOO, topic_name="foo", num_partitions=2),)
        ),
    )
    h.log += [
        new_member_subscription_record(GROUP, m),
        legacy,
        new_group_epoch_record(GROUP, 10, 0),
        new_target_assignment_record(GROUP, "m1", tps(foo=(0, 1))),
        new_target_assignment_epoch_record(GROUP, 10),
        new_current_assignment_record(GROUP, m),
    ]
    for record in h.log:
        h.manager.replay(record)
    assert h.group.has_partition_metadata_record
    r = h.heartbeat(member_id="m1", member_epoch=10)
    assert r.member_epoch == 11
    assert record_kinds(h.last.records if h.last else ()) == ["R3", "R4-", "R6", "R8(m1)"]
    assert not h.group.has_partition_metadata_record and h.group.metadata_hash != 0


def test_regexes_are_refreshed_after_the_refresh_interval() -> None:
    """Kafka 4.1's group.consumer.regex.refresh.interval.ms (default 10 minutes): a resolution
    older than that is redone on the next heartbeat even without a created topic."""
    h = Harness.make(image(("foo", FOO, 1)))
    h.heartbeat(
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_regex="foo.*",
        topic_partitions=(),
    )
    h.advance(0)
    epoch = h.heartbeat(member_id="m1", member_epoch=1).member_epoch
    h.now += 600_000
    h.heartbeat(member_id="m1", member_epoch=epoch)
    assert f"{GROUP}-regex" not in h.timers
    h.now += 1
    h.heartbeat(member_id="m1", member_epoch=epoch)
    fired = h.advance(0)
    assert record_kinds(fired[0].records) == ["R16"]  # same topics, same hash: no bump
    assert h.group.resolved_regexes["foo.*"].timestamp == h.now


def test_an_image_hashes_each_topic_once_and_a_new_image_sees_the_change() -> None:
    """The per-image topic-hash cache (Kafka 4.1 ``GroupMetadataManager.topicHashCache``, KIP-1101)
    gives what hashing the topic gives, nothing for an absent topic, and a new image with one more
    partition hashes differently, so the group epoch still bumps on a created partition."""
    foo = TopicMetadata(topic_id=FOO, name="foo", num_partitions=3)
    before = TopicsImage([foo], version=1)
    assert before.topic_hash("foo") == topic_hash(foo)
    assert before.topic_hash("foo") == before.topic_hash("foo")
    assert before.topic_hash("bar") is None
    grown = TopicsImage([TopicMetadata(topic_id=FOO, name="foo", num_partitions=4)], version=2)
    assert grown.topic_hash("foo") != before.topic_hash("foo")
    assert group_metadata_hash({"foo", "bar"}, grown) != group_metadata_hash({"foo", "bar"}, before)
