"""Equivalents of Kafka's GroupCoordinatorTest cases for offsets, leaving, describing and
OffsetDelete (issue 11, "Tests Kafka has and groupcoord lacks"), and the scenario-map rows
#36, #53, #67 that had no test of their own.

Same set-up as ``test_kafka_cases.py``: the sans-I/O core under the ManualClock with the
timeouts of Kafka's suite; each test names the Kafka test it mirrors.
"""

from __future__ import annotations

from coord_harness import DELAY, GROUP, Harness, Reply

from groupcoord.coordinator.records import OffsetCommitKey
from groupcoord.coordinator.state import GroupState
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteTopic,
)

NONE = ErrorCode.NONE
RANGE_ONLY = (("range", b""),)  # Kafka's test protocols: "range" with empty metadata


def _offset_delete(h: Harness, group: str, *topics: str) -> OffsetDeleteResponse:
    r: Reply[OffsetDeleteResponse] = Reply()
    h.c.offset_delete(
        OffsetDeleteRequest(
            group_id=group, topics=tuple(OffsetDeleteTopic(name=t, partitions=(0,)) for t in topics)
        ),
        r,
    )
    return r.value


def _deleted(resp: OffsetDeleteResponse) -> dict[tuple[str, int], ErrorCode]:
    return {(t.name, p.partition): p.error for t in resp.topics for p in t.partitions}


def _single_member_group(h: Harness, protocol_type: str = "consumer") -> tuple[str, int]:
    j = h.join_new(protocol_type=protocol_type, protocols=RANGE_ONLY)
    h.advance(DELAY)
    assert (j.error, j.generation_id, j.leader) == (NONE, 1, j.member_id)
    assert h.sync(j.member_id, 1, (), protocol_type=protocol_type).error is NONE
    return j.member_id, 1


# ------------------------------------------------------------------ OffsetCommit
def test_commit_in_completing_rebalance_without_a_member_id_is_unknown_member_id() -> None:
    """Kafka: testCommitOffsetInCompletingRebalanceFromUnknownMemberId: generation 1 with an
    empty member id, while the group waits for SyncGroup."""
    h = Harness()
    j = h.join_new()
    h.advance(DELAY)
    assert j.generation_id == 1 and h.state() == "CompletingRebalance"
    assert h.commit({("topic", 0): 0}, member_id="", generation=1) == {
        ("topic", 0): ErrorCode.UNKNOWN_MEMBER_ID
    }
    assert h.fetch({"topic": (0,)}) == {("topic", 0): (-1, None, "", NONE)}


def test_commit_in_completing_rebalance_with_a_later_generation_is_illegal_generation() -> None:
    """Kafka: testCommitOffsetInCompletingRebalanceFromIllegalGeneration (the member's id with
    generation + 1)."""
    h = Harness()
    j = h.join_new()
    h.advance(DELAY)
    assert h.commit({("topic", 0): 0}, member_id=j.member_id, generation=2) == {
        ("topic", 0): ErrorCode.ILLEGAL_GENERATION
    }


def test_manual_commit_with_generation_minus_one_validates_no_member_or_instance() -> None:
    """Kafka: testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId: a manual (generation
    -1) commit to a group without members succeeds whatever member id and instance id it
    carries."""
    h = Harness()
    assert h.commit({("topic", 0): 0}, member_id="", generation=-1, instance="instance-id") == {
        ("topic", 0): NONE
    }
    assert h.commit({("topic", 0): 1}, member_id="unknown", generation=-1) == {("topic", 0): NONE}
    assert h.fetch({"topic": (0,)}) == {("topic", 0): (1, None, "", NONE)}
    assert h.state() == "Empty"


def test_the_empty_string_group_can_commit_fetch_describe_and_be_deleted() -> None:
    """Kafka: testCommitAndFetchOffsetsWithEmptyGroup: for backwards compatibility group id ""
    may commit and fetch offsets, and can be described (Empty) and deleted."""
    h = Harness()
    assert h.commit({("topic", 0): 0}, group="") == {("topic", 0): NONE}
    assert h.fetch({"topic": (0,)}, group="") == {("topic", 0): (0, None, "", NONE)}
    described: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups([""], described)
    (d,) = described.value.groups
    assert (d.error, d.state) == (NONE, "Empty")
    deleted: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([""], deleted)
    assert [(x.group_id, x.error) for x in deleted.value.results] == [("", NONE)]
    assert h.fetch({"topic": (0,)}, group="") == {("topic", 0): (-1, None, "", NONE)}


def test_commit_with_one_partition_metadata_too_large_stores_the_others() -> None:
    """Reference §6 #67; Kafka ``GroupMetadataManager.storeOffsets`` / 4.x
    ``OffsetMetadataManager.commitOffset`` validate each partition: only the partition whose
    metadata is over offset.metadata.max.bytes fails (OFFSET_METADATA_TOO_LARGE); the others
    in the same request are written and answered NONE. When the write itself then fails, the
    partitions that were written get the mapped write error and the oversized one keeps its
    own code."""
    h = Harness(offset_metadata_max_bytes=4)

    def commit(offset: int) -> dict[tuple[str, int], ErrorCode]:
        r: Reply[OffsetCommitResponse] = Reply()
        h.c.offset_commit(
            OffsetCommitRequest(
                group_id=GROUP,
                generation_id=-1,
                member_id="",
                group_instance_id=None,
                retention_time_ms=-1,
                topics=(
                    OffsetCommitTopic(
                        name="t",
                        partitions=(
                            OffsetCommitPartition(partition=0, offset=offset, metadata="ok"),
                            OffsetCommitPartition(partition=1, offset=offset, metadata="12345"),
                            OffsetCommitPartition(partition=2, offset=offset, metadata=None),
                        ),
                    ),
                ),
            ),
            r,
        )
        return {(t.name, p.partition): p.error for t in r.value.topics for p in t.partitions}

    assert commit(7) == {("t", 0): NONE, ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE, ("t", 2): NONE}
    assert [r.key for r in h.sink.records] == [
        OffsetCommitKey(group=GROUP, topic="t", partition=0),
        OffsetCommitKey(group=GROUP, topic="t", partition=2),
    ]
    assert h.fetch({"t": (0, 1, 2)}) == {
        ("t", 0): (7, None, "ok", NONE),
        ("t", 1): (-1, None, "", NONE),
        ("t", 2): (7, None, "", NONE),
    }
    h.sink.fail = ErrorCode.NOT_ENOUGH_REPLICAS
    assert commit(8) == {
        ("t", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE,
        ("t", 2): ErrorCode.COORDINATOR_NOT_AVAILABLE,
    }
    h.sink.fail = None
    assert h.fetch({"t": (0, 2)}) == {("t", 0): (7, None, "ok", NONE), ("t", 2): (7, None, "", NONE)}


# ------------------------------------------------------------------ SyncGroup
def test_leader_assigning_nothing_gets_empty_bytes_outside_consumer_groups() -> None:
    """Reference §6 #36; Kafka: testSyncGroupEmptyAssignment (``setAndPropagateAssignment``
    fills members missing from the leader's map with empty bytes).

    For protocol types other than "consumer" we do the same: the leader, syncing an empty
    assignment, gets b"". For "consumer" groups we hand out an empty ConsumerProtocol
    assignment instead (a documented choice, docs/coordinator-scenarios.md)."""
    h = Harness()
    j = h.join_new(protocol_type="connect", protocols=RANGE_ONLY)
    h.advance(DELAY)
    s = h.sync(j.member_id, 1, (), protocol_type="connect")
    assert (s.error, s.assignment, s.protocol_type, s.protocol_name) == (NONE, b"", "connect", "range")
    assert h.state() == "Stable"
    h2 = Harness()
    j2 = h2.join_new(protocols=RANGE_ONLY)
    h2.advance(DELAY)
    s2 = h2.sync(j2.member_id, 1, ())
    assert (s2.error, s2.assignment) == (NONE, bytes.fromhex("000000000000ffffffff"))


# ------------------------------------------------------------------ LeaveGroup
def test_pending_member_leaving_lets_the_join_phase_complete() -> None:
    """Reference §6 #53; Kafka: testPendingMembersLeavesGroup (``setupGroupWithPendingMember``).

    Two members are Stable; the first rejoins (rebalance); a third gets MEMBER_ID_REQUIRED and
    is pending; the second rejoins - the phase still waits for the pending member. Its
    LeaveGroup is answered NONE and the phase completes at once with the two members."""
    h = Harness()
    (a, b), gen = h.stable_group(2)
    ra = h.join(a)
    assert h.state() == "PreparingRebalance"
    pending = h.join(session=100)
    assert pending.error is ErrorCode.MEMBER_ID_REQUIRED
    rb = h.join(b)
    g = h.c.group(GROUP)
    assert g is not None and list(g.pending_members) == [pending.member_id]
    assert h.state() == "PreparingRebalance" and not ra.done and not rb.done
    left = h.leave((pending.member_id, None))
    assert (left.error, [(m.member_id, m.error) for m in left.members]) == (NONE, [(pending.member_id, NONE)])
    assert h.state() == "CompletingRebalance"
    assert list(g.members) == [a, b] and not g.pending_members
    assert (ra.generation_id, rb.generation_id) == (gen + 1, gen + 1)


def test_leave_of_an_unknown_member_of_an_existing_group_is_unknown_member_id() -> None:
    """Kafka: testLeaveGroupUnknownConsumerExistingGroup: top-level NONE, the member's own
    result UNKNOWN_MEMBER_ID, the group untouched."""
    h = Harness()
    j = h.join_new()
    h.advance(DELAY)
    assert j.error is NONE
    r = h.leave(("consumerId", None))
    assert (r.error, [(m.member_id, m.error) for m in r.members]) == (
        NONE,
        [("consumerId", ErrorCode.UNKNOWN_MEMBER_ID)],
    )
    g = h.c.group(GROUP)
    assert g is not None and list(g.members) == [j.member_id] and h.state() == "CompletingRebalance"


# ------------------------------------------------------------------ DescribeGroups
def test_describe_of_a_stable_group_shows_the_static_members_instance_id() -> None:
    """Kafka: testDescribeGroupStableForStaticMember."""
    h = Harness()
    j = h.join(instance="leader", protocols=RANGE_ONLY)
    h.advance(DELAY)
    assert h.sync(j.member_id, 1, ((j.member_id, b""),), instance="leader").error is NONE
    r: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups([GROUP], r)
    (d,) = r.value.groups
    assert (d.error, d.state, d.protocol_type, d.protocol_data) == (NONE, "Stable", "consumer", "range")
    assert [(m.member_id, m.group_instance_id) for m in d.members] == [(j.member_id, "leader")]


# ------------------------------------------------------------------ OffsetDelete
def test_offset_delete_on_an_empty_consumer_group_deletes_only_the_named_partition() -> None:
    """Kafka: testDeleteOffsetOfEmptyConsumerGroup: after the only member left, deleting
    foo-0 answers NONE and removes it; bar-0 keeps its offset."""
    h = Harness()
    m, gen = _single_member_group(h)
    assert h.commit({("foo", 0): 37, ("bar", 0): 37}, member_id=m, generation=gen) == {
        ("foo", 0): NONE,
        ("bar", 0): NONE,
    }
    assert h.leave((m, None)).members[0].error is NONE
    assert h.state() == "Empty"
    r = _offset_delete(h, GROUP, "foo")
    assert (r.error, _deleted(r)) == (NONE, {("foo", 0): NONE})
    assert h.fetch({"foo": (0,), "bar": (0,)}) == {
        ("foo", 0): (-1, None, "", NONE),
        ("bar", 0): (37, None, "", NONE),
    }


def test_offset_delete_on_an_empty_non_consumer_group_deletes_only_the_named_partition() -> None:
    """Kafka: testDeleteOffsetOfEmptyNonConsumerGroup (protocol type "My Protocol")."""
    h = Harness()
    m, gen = _single_member_group(h, protocol_type="My Protocol")
    assert h.commit({("foo", 0): 37, ("bar", 0): 37}, member_id=m, generation=gen) == {
        ("foo", 0): NONE,
        ("bar", 0): NONE,
    }
    assert h.leave((m, None)).members[0].error is NONE
    g = h.c.group(GROUP)
    assert g is not None and g.state is GroupState.EMPTY and g.protocol_type == "My Protocol"
    r = _offset_delete(h, GROUP, "foo")
    assert (r.error, _deleted(r)) == (NONE, {("foo", 0): NONE})
    assert h.fetch({"foo": (0,), "bar": (0,)}) == {
        ("foo", 0): (-1, None, "", NONE),
        ("bar", 0): (37, None, "", NONE),
    }


def test_offset_delete_on_a_dead_group_is_group_id_not_found() -> None:
    """Kafka: testDeleteOffsetOfDeadConsumerGroup: a Dead consumer group (here one whose
    deletion is being written) answers GROUP_ID_NOT_FOUND with no partitions."""
    h = Harness()
    m, gen = _single_member_group(h)
    assert h.commit({("foo", 0): 37}, member_id=m, generation=gen) == {("foo", 0): NONE}
    assert h.leave((m, None)).members[0].error is NONE
    h.sink.hold = True
    deleted: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([GROUP], deleted)
    g = h.c.group(GROUP)
    assert g is not None and g.state is GroupState.DEAD and g.protocol_type == "consumer"
    r = _offset_delete(h, GROUP, "foo")
    assert (r.error, r.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, ())
