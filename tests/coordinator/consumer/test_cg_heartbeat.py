"""ConsumerGroupHeartbeat on the consumer group core, under a manual clock.

Each test names the Kafka 4.1 test it mirrors: ``GroupMetadataManagerTest`` (GMMT,
``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/``) unless said otherwise, or
``GroupCoordinatorServiceTest`` for the request validation. Where a test relies on a later fix the
docstring says so (KAFKA-19233 from 4.2). The harness checks every record's bytes round-trip and
that replaying the log rebuilds the same groups after every step.
"""

from __future__ import annotations

import pytest
from cg_harness import BAR, FOO, GROUP, ZAR, Harness, PreparedAssignor, image, owned, record_kinds, tps

from groupcoord.coordinator.consumer.api import TimerKind
from groupcoord.coordinator.consumer.assignment import Assignment
from groupcoord.coordinator.consumer.config import ConsumerGroupConfig, GroupOverrides
from groupcoord.coordinator.consumer.group import ConsumerGroupState
from groupcoord.coordinator.consumer.member import ConsumerGroupMember, MemberState
from groupcoord.coordinator.consumer.metadata import TopicMetadata, TopicsImage, group_metadata_hash
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMetadataValue,
    new_current_assignment_record,
    new_group_epoch_record,
    new_member_subscription_record,
    new_target_assignment_epoch_record,
    new_target_assignment_record,
)
from groupcoord.errors import ErrorCode

TOPICS = image(("foo", FOO, 6), ("bar", BAR, 3), ("zar", ZAR, 1))


def seed(
    h: Harness,
    epoch: int,
    members: list[tuple[ConsumerGroupMember, Assignment]],
) -> None:
    """Load a group at ``epoch`` whose members own their targets (Kafka's ConsumerGroupBuilder)."""
    topics: set[str] = set()
    for member, _ in members:
        h.log.append(new_member_subscription_record(GROUP, member))
        topics |= member.subscribed_topic_names
    h.log.append(new_group_epoch_record(GROUP, epoch, group_metadata_hash(topics, h.manager.image)))
    for member, target in members:
        h.log.append(new_target_assignment_record(GROUP, member.member_id, target))
    h.log.append(new_target_assignment_epoch_record(GROUP, epoch))
    for member, _ in members:
        h.log.append(new_current_assignment_record(GROUP, member))
    for record in h.log:
        h.manager.replay(record)
    h.manager.on_loaded(h.now)


def member(
    member_id: str, epoch: int, assigned: Assignment, *topics: str, **kw: object
) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        member_id=member_id,
        member_epoch=epoch,
        previous_member_epoch=kw.pop("previous", epoch - 1),  # type: ignore[arg-type]
        subscribed_topic_names=frozenset(topics or ("foo", "bar")),
        rebalance_timeout_ms=5000,
        server_assignor_name="range",
        assigned_partitions=assigned,
        **kw,  # type: ignore[arg-type]
    )


# =============================================================================== validation


@pytest.mark.parametrize(
    ("fields", "code", "message"),
    [
        ({"member_id": "", "member_epoch": 0}, ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
        (
            {"member_id": " ", "member_epoch": 5, "api_version": 0},
            ErrorCode.INVALID_REQUEST,
            "MemberId can't be empty.",
        ),
        ({"group_id": " "}, ErrorCode.INVALID_REQUEST, "GroupId can't be empty."),
        ({"instance_id": ""}, ErrorCode.INVALID_REQUEST, "InstanceId can't be empty."),
        ({"rack_id": " "}, ErrorCode.INVALID_REQUEST, "RackId can't be empty."),
        (
            {"rebalance_timeout_ms": -1},
            ErrorCode.INVALID_REQUEST,
            "RebalanceTimeoutMs must be provided in first request.",
        ),
        (
            {"topic_partitions": None},
            ErrorCode.INVALID_REQUEST,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            {"topic_partitions": ((FOO, (0,)),)},
            ErrorCode.INVALID_REQUEST,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            {"subscribed_topic_names": None},
            ErrorCode.INVALID_REQUEST,
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        ({"member_epoch": -2}, ErrorCode.INVALID_REQUEST, "InstanceId can't be null."),
        ({"member_epoch": -3}, ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid."),
        (
            {"server_assignor": "sticky"},
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
        ),
    ],
)
def test_invalid_requests_get_kafkas_error_and_message(
    fields: dict[str, object], code: ErrorCode, message: str
) -> None:
    """GroupCoordinatorServiceTest.testConsumerHeartbeatRequestValidation (4.1: the checks
    run in the service, before the shard); nothing is written and no group appears."""
    h = Harness.make(TOPICS)
    request: dict[str, object] = {
        "member_id": "m1",
        "member_epoch": 0,
        "rebalance_timeout_ms": 5000,
        "subscribed_topic_names": ("foo",),
        "topic_partitions": (),
    }
    request.update(fields)
    response = h.heartbeat(**request)
    assert (response.error_code, response.error_message) == (code, message)
    assert (
        response.member_id,
        response.member_epoch,
        response.heartbeat_interval_ms,
        response.assignment,
    ) == (
        None,
        0,
        0,
        None,
    )
    assert h.log == [] and h.manager.groups == {}


def test_member_id_generated_for_v0_join() -> None:
    """GMMT.testMemberIdGeneration: a v0 join with an empty id gets a generated one, epoch 1,
    the default interval and an empty (present) assignment."""
    h = Harness.make(image(), ids=["generated-id"])
    response = h.heartbeat(
        member_id="",
        member_epoch=0,
        api_version=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        server_assignor="range",
        topic_partitions=(),
    )
    assert response.error_code == 0
    assert (response.member_id, response.member_epoch, response.heartbeat_interval_ms) == (
        "generated-id",
        1,
        5000,
    )
    assert response.assignment == {}


def test_unknown_group_at_epoch_above_zero() -> None:
    """GMMT.testUnknownGroupId."""
    h = Harness.make(TOPICS)
    response = h.heartbeat(member_id="m1", member_epoch=100)
    assert response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert response.error_message == f"Consumer group {GROUP} not found."


def test_unknown_member_id() -> None:
    """GMMT.testUnknownMemberIdJoinsConsumerGroup."""
    h = Harness.make(TOPICS)
    h.join("m1")
    response = h.heartbeat(member_id="unknown", member_epoch=1, topic_partitions=())
    assert response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert response.error_message == f"Member unknown is not a member of group {GROUP}."


# =============================================================================== epochs


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_member_epoch_validation(static: bool) -> None:
    """GMMT.testConsumerGroupMemberEpochValidation and ...ForStaticMember: a greater or smaller
    epoch is fenced, except the previous epoch with owned partitions inside the assignment (a
    lost response to an epoch bump)."""
    h = Harness.make(TOPICS)
    instance = "i1" if static else None
    seed(
        h,
        100,
        [
            (
                member("m1", 100, tps(foo=(1, 2, 3)), "foo", previous=99, instance_id=instance),
                tps(foo=(1, 2, 3)),
            )
        ],
    )
    for epoch, parts in [(200, ()), (50, ()), (99, None)]:
        response = h.heartbeat(
            member_id="m1", member_epoch=epoch, instance_id=instance, topic_partitions=parts
        )
        assert response.error_code == ErrorCode.FENCED_MEMBER_EPOCH, epoch
    bad = h.heartbeat(member_id="m1", member_epoch=99, instance_id=instance, topic_partitions=((FOO, (4,)),))
    assert bad.error_code == ErrorCode.FENCED_MEMBER_EPOCH  # owned partitions it never had
    ok = h.heartbeat(member_id="m1", member_epoch=99, instance_id=instance, topic_partitions=((FOO, (1, 2)),))
    assert (ok.error_code, ok.member_epoch) == (0, 100)


def test_member_rejoins_with_epoch_zero_in_stable_state() -> None:
    """GMMT.testMemberCanRejoinWithEpochZeroInStableState (KAFKA-19233, Kafka 4.2; 4.1 answers
    FENCED_MEMBER_EPOCH): the member gets its epoch and full assignment back, no bump."""
    h = Harness.make(TOPICS)
    seed(h, 100, [(member("m1", 100, tps(foo=(0, 1)), "foo"), tps(foo=(0, 1)))])
    response = h.join("m1", ("foo",), server_assignor="range")
    assert (response.error_code, response.member_epoch, response.assignment) == (0, 100, tps(foo=(0, 1)))
    assert h.group.group_epoch == 100
    assert "R3" not in record_kinds(h.last.records if h.last else ())


# =============================================================================== joins and targets


def test_member_joins_empty_group() -> None:
    """GMMT.testMemberJoinsEmptyConsumerGroup: records R5, R3(1, hash), R7, R6(1), R8."""
    assignor = PreparedAssignor("range")
    assignor.prepared = {"m1": tps(foo=range(6), bar=range(3))}
    h = Harness.make(TOPICS, assignor=assignor)
    response = h.join("m1", ("foo", "bar"), server_assignor="range")
    assert (response.member_epoch, response.heartbeat_interval_ms) == (1, 5000)
    assert response.assignment == tps(foo=range(6), bar=range(3))
    assert record_kinds(h.log) == ["R5(m1)", "R3", "R7(m1)", "R6", "R8(m1)"]
    epoch_value = h.log[1].value
    assert isinstance(epoch_value, ConsumerGroupMetadataValue)
    assert epoch_value == ConsumerGroupMetadataValue(
        epoch=1, metadata_hash=group_metadata_hash({"foo", "bar"}, TOPICS)
    )
    current = h.log[4].value
    assert isinstance(current, ConsumerGroupCurrentMemberAssignmentValue)
    assert (current.member_epoch, current.previous_member_epoch, current.member_state) == (
        1,
        0,
        MemberState.STABLE,
    )
    assert h.group.state is ConsumerGroupState.STABLE


def test_updating_subscription_triggers_new_target() -> None:
    """GMMT.testUpdatingSubscriptionTriggersNewTargetAssignment."""
    assignor = PreparedAssignor("range")
    h = Harness.make(TOPICS, assignor=assignor)
    seed(h, 10, [(member("m1", 10, tps(foo=range(6)), "foo"), tps(foo=range(6)))])
    assignor.prepared = {"m1": tps(foo=range(6), bar=range(3))}
    response = h.heartbeat(member_id="m1", member_epoch=10, subscribed_topic_names=("foo", "bar"))
    assert (response.member_epoch, response.assignment) == (11, tps(foo=range(6), bar=range(3)))
    assert record_kinds(h.last.records if h.last else ()) == ["R5(m1)", "R3", "R7(m1)", "R6", "R8(m1)"]


def test_new_racks_in_metadata_trigger_an_epoch_bump() -> None:
    """GMMT.testNewRacksDataInMetadataImageTriggersEpochBump (4.1, metadata hash): R3, R6, R8."""
    assignor = PreparedAssignor("range")
    h = Harness.make(TOPICS, assignor=assignor)
    seed(h, 10, [(member("m1", 10, tps(foo=range(6)), "foo"), tps(foo=range(6)))])
    assignor.prepared = {"m1": tps(foo=range(6))}
    h.heartbeat(member_id="m1", member_epoch=10)  # loaded: the first heartbeat re-checks the hash
    racks = TopicMetadata(topic_id=FOO, name="foo", num_partitions=6, partition_racks={0: ("rack-a",)})
    h.manager.on_metadata_update(TopicsImage([racks], version=2))
    response = h.heartbeat(member_id="m1", member_epoch=10)
    assert (response.member_epoch, response.assignment) == (11, None)
    assert record_kinds(h.last.records if h.last else ()) == ["R3", "R6", "R8(m1)"]
    current = h.group.members["m1"]
    assert (current.member_epoch, current.previous_member_epoch) == (11, 10)


def test_reconciliation_process() -> None:
    """GMMT.testNewJoiningMemberTriggersNewTargetAssignment and testReconciliationProcess: a
    partition moves only after its owner revoked it; the group stays Reconciling throughout."""
    assignor = PreparedAssignor("range")
    h = Harness.make(TOPICS, assignor=assignor)
    seed(
        h,
        10,
        [
            (member("m1", 10, tps(foo=(0, 1, 2), bar=(0, 1))), tps(foo=(0, 1, 2), bar=(0, 1))),
            (member("m2", 10, tps(foo=(3, 4, 5), bar=(2,))), tps(foo=(3, 4, 5), bar=(2,))),
        ],
    )
    assignor.prepared = {
        "m1": tps(foo=(0, 1), bar=(0,)),
        "m2": tps(foo=(2, 3), bar=(2,)),
        "m3": tps(foo=(4, 5), bar=(1,)),
    }
    # 1. m3 joins: epoch 11, nothing yet (all its partitions are owned)
    r = h.join("m3", ("foo", "bar"), server_assignor="range")
    assert (r.member_epoch, r.assignment) == (11, {})
    assert record_kinds(h.last.records if h.last else ()) == [
        "R5(m3)",
        "R3",
        "R7(m1)",
        "R7(m2)",
        "R7(m3)",
        "R6",
        "R8(m3)",
    ]
    assert h.group.members["m3"].state is MemberState.UNRELEASED_PARTITIONS
    assert h.group.state is ConsumerGroupState.RECONCILING
    # 2. m1 must revoke foo:2 and bar:1
    r = h.heartbeat(member_id="m1", member_epoch=10)
    assert (r.member_epoch, r.assignment) == (10, tps(foo=(0, 1), bar=(0,)))
    m1 = h.group.members["m1"]
    assert (m1.state, m1.partitions_pending_revocation) == (
        MemberState.UNREVOKED_PARTITIONS,
        tps(foo=(2,), bar=(1,)),
    )
    # 3. m2 must revoke foo:4,5
    r = h.heartbeat(member_id="m2", member_epoch=10)
    assert (r.member_epoch, r.assignment) == (10, tps(foo=(3,), bar=(2,)))
    assert h.group.members["m2"].partitions_pending_revocation == tps(foo=(4, 5))
    # 4. m3: nothing released yet; its previous epoch moves to 11 (one R8, as in Kafka's test)
    r = h.heartbeat(member_id="m3", member_epoch=11)
    assert (r.member_epoch, r.assignment) == (11, None)
    assert record_kinds(h.last.records if h.last else ()) == ["R8(m3)"]
    assert h.group.members["m3"].previous_member_epoch == 11
    # 5. m1 acks its revocation
    r = h.heartbeat(member_id="m1", member_epoch=10, topic_partitions=owned(tps(foo=(0, 1), bar=(0,))))
    assert (r.member_epoch, r.assignment) == (11, None)
    assert h.group.members["m1"].state is MemberState.STABLE
    # 6. m2 heartbeats without acking: nothing changes, nothing is written
    r = h.heartbeat(member_id="m2", member_epoch=10)
    assert (r.member_epoch, r.assignment, h.last.records if h.last else None) == (10, None, ())
    # 7. m3 gets bar:1, which m1 released
    r = h.heartbeat(member_id="m3", member_epoch=11)
    assert (r.member_epoch, r.assignment) == (11, tps(bar=(1,)))
    assert h.group.members["m3"].state is MemberState.UNRELEASED_PARTITIONS
    # 8. m2 acks and gets foo:2, freed by m1
    r = h.heartbeat(member_id="m2", member_epoch=10, topic_partitions=owned(tps(foo=(3,), bar=(2,))))
    assert (r.member_epoch, r.assignment) == (11, tps(foo=(2, 3), bar=(2,)))
    assert h.group.state.value == "Reconciling"
    # 9. m3 acks and gets foo:4,5; the group is Stable
    r = h.heartbeat(member_id="m3", member_epoch=11, topic_partitions=owned(tps(bar=(1,))))
    assert (r.member_epoch, r.assignment) == (11, tps(foo=(4, 5), bar=(1,)))
    assert h.group.state.value == "Stable"


def test_leaving_member_bumps_group_epoch() -> None:
    """GMMT.testLeavingMemberBumpsGroupEpoch: three tombstones and R3(11) with a hash without the
    topic only the leaver subscribed to."""
    h = Harness.make(TOPICS)
    seed(
        h,
        10,
        [
            (member("m1", 10, tps(foo=(0, 1, 2)), "foo", "bar"), tps(foo=(0, 1, 2))),
            (member("m2", 10, tps(foo=(3, 4, 5)), "foo", "bar", "zar"), tps(foo=(3, 4, 5))),
        ],
    )
    r = h.heartbeat(member_id="m2", member_epoch=-1)
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == (
        0,
        "m2",
        -1,
        0,
        None,
    )
    records = h.last.records if h.last else ()
    assert record_kinds(records) == ["R8(m2)-", "R7(m2)-", "R5(m2)-", "R3"]
    assert records[3].value == ConsumerGroupMetadataValue(
        epoch=11, metadata_hash=group_metadata_hash({"foo", "bar"}, TOPICS)
    )
    assert h.group.state is ConsumerGroupState.ASSIGNING  # until some member heartbeats
    assert f"session-timeout-{GROUP}-m2" not in h.timers


def test_new_member_beyond_max_size_is_rejected() -> None:
    """GMMT.testNewMemberIsRejectedWithMaximumMembersIsReached; checked before the member, so an
    unknown member at epoch > 0 also gets GROUP_MAX_SIZE_REACHED."""
    h = Harness.make(TOPICS, config=ConsumerGroupConfig(max_size=2))
    h.join("m1")
    h.join("m2")
    r = h.join("m3")
    assert (r.error_code, r.error_message) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The consumer group has reached its maximum capacity of 2 members.",
    )
    assert h.heartbeat(member_id="m9", member_epoch=3).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert h.heartbeat(member_id="m1", member_epoch=1).error_code == 0


def test_assignor_failure_is_unknown_server_error_and_writes_nothing() -> None:
    """GMMT.testPartitionAssignorExceptionOnRegularHeartbeat."""
    assignor = PreparedAssignor("range")
    assignor.fail = True
    h = Harness.make(TOPICS, assignor=assignor)
    r = h.join("m1")
    assert (r.error_code, r.error_message) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert h.log == [] and h.manager.groups == {}


def test_full_request_gets_the_assignment_back() -> None:
    """GMMT.testConsumerGroupHeartbeatFullResponse: the assignment is sent on joins, on full
    requests and when it changed; a new regex does not bump the epoch before it is resolved."""
    h = Harness.make(image(("foo", FOO, 2)))
    r = h.join("m1", ("foo",))
    assert (r.member_epoch, r.assignment) == (1, tps(foo=(0, 1)))
    assert h.heartbeat(member_id="m1", member_epoch=1).assignment is None
    full = {
        "member_id": "m1",
        "member_epoch": 1,
        "rebalance_timeout_ms": 5000,
        "topic_partitions": owned(tps(foo=(0, 1))),
    }
    r = h.heartbeat(**full, subscribed_topic_names=("foo",))
    assert r.assignment == tps(foo=(0, 1))
    r = h.heartbeat(**full, subscribed_topic_regex="foo.*")
    assert (r.member_epoch, r.assignment) == (1, tps(foo=(0, 1)))


def test_dynamic_heartbeat_interval_and_session_timeout() -> None:
    """GMMT.testConsumerGroupDynamicConfigs: per-group overrides apply from the next heartbeat."""
    h = Harness.make(TOPICS)
    r = h.join("m1")
    assert r.heartbeat_interval_ms == 5000
    assert h.timers[f"session-timeout-{GROUP}-m1"].deadline_ms == 45000
    h.manager.set_group_overrides(
        GROUP, GroupOverrides(session_timeout_ms=50000, heartbeat_interval_ms=10000)
    )
    h.now = 1000
    assert h.heartbeat(member_id="m1", member_epoch=1).heartbeat_interval_ms == 10000
    assert h.timers[f"session-timeout-{GROUP}-m1"].deadline_ms == 51000


# =============================================================================== static members


def _static_group(h: Harness) -> None:
    seed(
        h,
        10,
        [
            (member("m1", 10, tps(foo=(0, 1, 2)), "foo", instance_id="i1"), tps(foo=(0, 1, 2))),
            (member("m2", 10, tps(foo=(3, 4, 5)), "foo", instance_id="i2"), tps(foo=(3, 4, 5))),
        ],
    )


def test_static_member_temporary_leave_writes_one_record_and_no_bump() -> None:
    """GMMT.testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves: one R8 at epoch -2."""
    h = Harness.make(TOPICS)
    _static_group(h)
    r = h.heartbeat(member_id="m2", member_epoch=-2, instance_id="i2")
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "m2", -2)
    assert record_kinds(h.last.records if h.last else ()) == ["R8(m2)"]
    parked = h.group.members["m2"]
    assert (parked.member_epoch, parked.previous_member_epoch, parked.assigned_partitions) == (
        -2,
        9,
        tps(foo=(3, 4, 5)),
    )
    assert h.group.group_epoch == 10 and h.group.state is ConsumerGroupState.RECONCILING


def test_static_member_gets_back_its_assignment_on_rejoin() -> None:
    """GMMT.testStaticMemberGetsBackAssignmentUponRejoin: the 7 replacement records, no R3."""
    h = Harness.make(TOPICS)
    _static_group(h)
    h.heartbeat(member_id="m2", member_epoch=-2, instance_id="i2")
    r = h.join("m2b", ("foo",), instance_id="i2", server_assignor="range")
    assert (r.error_code, r.member_id, r.member_epoch, r.assignment) == (0, "m2b", 10, tps(foo=(3, 4, 5)))
    assert record_kinds(h.last.records if h.last else ()) == [
        "R8(m2)-", "R7(m2)-", "R5(m2)-", "R5(m2b)", "R7(m2b)", "R8(m2b)", "R8(m2b)",
    ]  # fmt: skip
    assert "m2" not in h.group.members and h.group.static_members["i2"] == "m2b"
    assert h.group.group_epoch == 10 and h.group.state is ConsumerGroupState.STABLE


def test_static_member_rejoins_with_new_subscription_bumps() -> None:
    """GMMT.testStaticMemberRejoinsWithNewSubscribedTopics."""
    h = Harness.make(TOPICS)
    _static_group(h)
    h.heartbeat(member_id="m2", member_epoch=-2, instance_id="i2")
    r = h.join("m2b", ("foo", "bar"), instance_id="i2", server_assignor="range")
    assert (r.error_code, r.member_epoch) == (0, 11)
    assert "R3" in record_kinds(h.last.records if h.last else ())


def test_static_member_leaving_for_good_bumps() -> None:
    """GMMT.testLeavingStaticMemberBumpsGroupEpoch."""
    h = Harness.make(TOPICS)
    _static_group(h)
    r = h.heartbeat(member_id="m2", member_epoch=-1, instance_id="i2")
    assert (r.member_id, r.member_epoch) == ("m2", -1)
    assert record_kinds(h.last.records if h.last else ()) == ["R8(m2)-", "R7(m2)-", "R5(m2)-", "R3"]


@pytest.mark.parametrize(
    ("fields", "code", "message"),
    [
        (
            {"member_id": "other", "member_epoch": 0, "instance_id": "i1"},
            ErrorCode.UNRELEASED_INSTANCE_ID,
            "Static member other with instance id i1 cannot join the group because the instance id is owned "
            "by m1 member.",
        ),
        (
            {"member_id": "m9", "member_epoch": 10, "instance_id": "i9"},
            ErrorCode.UNKNOWN_MEMBER_ID,
            "Instance id i9 is unknown.",
        ),
        (
            {"member_id": "other", "member_epoch": 10, "instance_id": "i1"},
            ErrorCode.FENCED_INSTANCE_ID,
            "Static member other with instance id i1 was fenced by member m1.",
        ),
        (
            {"member_id": "m9", "member_epoch": -2, "instance_id": "i9"},
            ErrorCode.UNKNOWN_MEMBER_ID,
            "Instance id i9 is unknown.",
        ),
        (
            {"member_id": "other", "member_epoch": -2, "instance_id": "i1"},
            ErrorCode.FENCED_INSTANCE_ID,
            "Static member other with instance id i1 was fenced by member m1.",
        ),
    ],
    ids=["unreleased", "unknown", "fenced", "leave-unknown", "leave-fenced"],
)
def test_static_member_errors(fields: dict[str, object], code: ErrorCode, message: str) -> None:
    """GMMT.testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId,
    ...UnknownMemberIdExceptionWhenUnknownStaticMemberJoins,
    ...FencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins,
    ...UnknownMemberIdExceptionWhenUnknownStaticMemberLeaves,
    ...FencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdLeaves. The other members
    are not disturbed."""
    h = Harness.make(TOPICS)
    _static_group(h)
    before = dict(h.group.members)
    extra: dict[str, object] = {
        "rebalance_timeout_ms": 5000,
        "subscribed_topic_names": ("foo",),
        "topic_partitions": (),
    }
    r = h.heartbeat(**extra, **fields)
    assert (r.error_code, r.error_message) == (code, message)
    assert h.group.members == before


# =============================================================================== timers


def test_session_timeout_lifecycle() -> None:
    """GMMT.testSessionTimeoutLifecycle: each heartbeat reschedules, a leave cancels."""
    h = Harness.make(TOPICS)
    key = f"session-timeout-{GROUP}-m1"
    h.join("m1")
    assert h.timers[key].deadline_ms == 45000 and h.timers[key].kind is TimerKind.SESSION
    h.now = 5000
    h.heartbeat(member_id="m1", member_epoch=1)
    assert h.timers[key].deadline_ms == 50000
    h.heartbeat(member_id="m1", member_epoch=-1)
    assert key not in h.timers


def test_session_timeout_expiration_fences_the_member() -> None:
    """GMMT.testSessionTimeoutExpiration: R8-, R7-, R5-, R3(2, hash 0)."""
    h = Harness.make(TOPICS)
    h.join("m1")
    fired = h.advance(45001)
    assert len(fired) == 1
    assert record_kinds(fired[0].records) == ["R8(m1)-", "R7(m1)-", "R5(m1)-", "R3"]
    assert fired[0].records[3].value == ConsumerGroupMetadataValue(epoch=2, metadata_hash=0)
    assert h.group.state is ConsumerGroupState.EMPTY
    assert h.heartbeat(member_id="m1", member_epoch=1).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_session_timeout_expiration_of_a_parked_static_member() -> None:
    """GMMT.testSessionTimeoutExpirationStaticMember: -2 keeps the session timer; it fences."""
    h = Harness.make(TOPICS)
    h.join("m1", instance_id="i1")
    h.now = 1000
    h.heartbeat(member_id="m1", member_epoch=-2, instance_id="i1")
    assert h.timers[f"session-timeout-{GROUP}-m1"].deadline_ms == 45000
    fired = h.advance(44001)
    assert record_kinds(fired[0].records) == ["R8(m1)-", "R7(m1)-", "R5(m1)-", "R3"]
    assert fired[0].records[3].value == ConsumerGroupMetadataValue(epoch=2, metadata_hash=0)


def _revoking(h: Harness, rebalance_timeout_ms: int) -> None:
    h.join("m1", rebalance_timeout_ms=180000)  # epoch 1, foo 0-5 (uniform)
    h.join("m2")  # epoch 2: m1 must give up three partitions
    r = h.heartbeat(member_id="m1", member_epoch=1, rebalance_timeout_ms=rebalance_timeout_ms)
    assert h.group.members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert r.member_epoch == 1


def test_rebalance_timeout_lifecycle() -> None:
    """GMMT.testRebalanceTimeoutLifecycle: scheduled with the heartbeat's new rebalance timeout,
    cancelled on the ack; a stale firing writes nothing."""
    h = Harness.make(image(("foo", FOO, 6)))
    _revoking(h, 12000)
    key = f"rebalance-timeout-{GROUP}-m1"
    timer = h.timers[key]
    assert (timer.deadline_ms, timer.member_epoch) == (12000, 1)
    kept = h.group.members["m1"].assigned_partitions
    r = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(kept))
    assert r.member_epoch == 2
    assert key not in h.timers
    assert h.manager.on_timer(timer, 12001).records == ()


def test_rebalance_timeout_expiration_fences() -> None:
    """GMMT.testRebalanceTimeoutExpiration: m1 does not ack in time and is fenced (R3(3))."""
    h = Harness.make(image(("foo", FOO, 6)))
    _revoking(h, 10000)
    fired = h.advance(10001)
    assert record_kinds(fired[0].records) == ["R8(m1)-", "R7(m1)-", "R5(m1)-", "R3"]
    value = fired[0].records[3].value
    assert isinstance(value, ConsumerGroupMetadataValue) and value.epoch == 3


def test_on_loaded_schedules_session_and_rebalance_timers() -> None:
    """GMMT.testOnLoaded (reference §4.5): a fresh session timer per member, a rebalance timer
    for each member in UNREVOKED_PARTITIONS."""
    h = Harness.make(image(("foo", FOO, 6)))
    _revoking(h, 10000)
    timers = {t.key: t for t in h.manager.on_loaded(100)}
    assert timers[f"session-timeout-{GROUP}-m1"].deadline_ms == 45100
    assert timers[f"session-timeout-{GROUP}-m2"].deadline_ms == 45100
    assert timers[f"rebalance-timeout-{GROUP}-m1"].deadline_ms == 10100
    assert f"rebalance-timeout-{GROUP}-m2" not in timers


# =============================================================================== regexes


def test_regex_validation() -> None:
    """GMMT.testConsumerHeartbeatRegexValidation: RE2 syntax, Kafka's (RE2/J's) message."""
    h = Harness.make(TOPICS)
    base = {"member_id": "m1", "member_epoch": 0, "rebalance_timeout_ms": 5000, "topic_partitions": ()}
    r = h.heartbeat(**base, subscribed_topic_regex="[")
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        "SubscribedTopicRegex `[` is not a valid regular expression: missing closing ].",
    )
    assert h.heartbeat(**base, subscribed_topic_regex=".*").member_epoch == 1
    r = h.heartbeat(member_id="m1", member_epoch=1, subscribed_topic_regex="(?<=x)")
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        "SubscribedTopicRegex `(?<=x)` is not a valid regular expression: "
        "invalid or unsupported Perl syntax.",
    )
    r = h.heartbeat(
        member_id="m1", member_epoch=1, subscribed_topic_names=("foo",), subscribed_topic_regex=""
    )
    assert (r.error_code, r.member_epoch) == (0, 2)


def test_member_joins_with_new_regex_then_resolution_bumps() -> None:
    """GMMT.testConsumerGroupMemberJoinsWithNewRegex: the join writes R5 and R8 at the current
    epoch; the resolution task writes R16 and R3(11); the next heartbeat assigns the topics."""
    h = Harness.make(TOPICS)
    seed(h, 10, [(member("m1", 10, tps(bar=(0, 1, 2)), "bar"), tps(bar=(0, 1, 2)))])
    h.heartbeat(member_id="m1", member_epoch=10)
    r = h.heartbeat(
        member_id="m2",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_regex="foo*",
        topic_partitions=(),
    )
    assert (r.member_epoch, r.assignment) == (10, {})
    assert record_kinds(h.last.records if h.last else ()) == ["R5(m2)", "R8(m2)"]
    fired = h.advance(0)
    assert record_kinds(fired[0].records) == ["R16", "R3"]
    assert h.group.resolved_regexes["foo*"].topics == {"foo"}
    assert h.group.group_epoch == 11
    r = h.heartbeat(member_id="m2", member_epoch=10)
    assert r.member_epoch == 11 and r.assignment == tps(foo=range(6))


def test_regex_update_tombstones_the_old_one() -> None:
    """GMMT.testConsumerGroupMemberJoinsWithUpdatedRegex: R5 and the old regex's R16 tombstone;
    the resolution then writes the new R16 and R3."""
    h = Harness.make(TOPICS)
    h.heartbeat(
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_regex="foo*",
        topic_partitions=(),
    )
    h.advance(0)
    epoch = h.heartbeat(member_id="m1", member_epoch=1).member_epoch
    assert epoch == h.group.group_epoch == 2
    h.now += 20_000  # past Kafka's 10 s minimum between two resolutions
    h.heartbeat(member_id="m1", member_epoch=epoch, subscribed_topic_regex="foo*|bar*")
    assert record_kinds(h.last.records if h.last else ())[:2] == ["R5(m1)", "R16-"]
    fired = h.advance(0)
    assert record_kinds(fired[0].records) == ["R16", "R3"]
    assert h.group.resolved_regexes["foo*|bar*"].topics == {"foo", "bar"}


def test_resolved_regex_removed_when_its_last_member_leaves() -> None:
    """GMMT.testResolvedRegularExpressionsRemovedWhenMembersLeaveOrFenced."""
    h = Harness.make(TOPICS)
    h.heartbeat(
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_regex="foo*",
        topic_partitions=(),
    )
    h.advance(0)
    r = h.heartbeat(member_id="m1", member_epoch=-1)
    assert r.member_epoch == -1
    assert record_kinds(h.last.records if h.last else ()) == ["R8(m1)-", "R7(m1)-", "R5(m1)-", "R16-", "R3"]
    assert h.group.resolved_regexes == {}
