"""Member reconciliation: the 14 cases of Kafka 4.1's ``CurrentAssignmentBuilderTest``
(``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/modern/consumer/``), plus the
KAFKA-19449 rule (4.1 branch) that a member's own pending revocation is not "unreleased"."""

from __future__ import annotations

import uuid

import pytest

from groupcoord.coordinator.consumer.assignment import Assignment, assignment_of
from groupcoord.coordinator.consumer.member import ConsumerGroupMember, MemberState
from groupcoord.coordinator.consumer.reconcile import reconcile
from groupcoord.errors import ErrorCode, KafkaError

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
STABLE = MemberState.STABLE
UNREVOKED = MemberState.UNREVOKED_PARTITIONS
UNRELEASED = MemberState.UNRELEASED_PARTITIONS


def tp(p1: tuple[int, ...], p2: tuple[int, ...]) -> Assignment:
    return assignment_of({T1: p1, T2: p2})


def member(
    state: MemberState, epoch: int, previous: int, assigned: Assignment, pending: Assignment | None = None
) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        member_id="m",
        state=state,
        member_epoch=epoch,
        previous_member_epoch=previous,
        assigned_partitions=assigned,
        partitions_pending_revocation=pending or {},
    )


def owned(a: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    return dict(a)


def test_stable_to_stable() -> None:
    """CurrentAssignmentBuilderTest.testStableToStable: same partitions, epoch moves to the target."""
    m = member(STABLE, 10, 10, tp((1, 2, 3), (4, 5, 6)))
    out = reconcile(m, 11, tp((1, 2, 3), (4, 5, 6)), lambda t, p: 10, None)
    assert out == member(STABLE, 11, 10, tp((1, 2, 3), (4, 5, 6)))


def test_stable_to_stable_with_new_free_partitions() -> None:
    """CurrentAssignmentBuilderTest.testStableToStableWithNewPartitions."""
    m = member(STABLE, 10, 10, tp((1, 2, 3), (4, 5, 6)))
    out = reconcile(m, 11, tp((1, 2, 3, 4), (4, 5, 6, 7)), lambda t, p: -1, None)
    assert out == member(STABLE, 11, 10, tp((1, 2, 3, 4), (4, 5, 6, 7)))


def test_stable_to_unrevoked_keeps_the_old_epoch() -> None:
    """CurrentAssignmentBuilderTest.testStableToUnrevokedPartitions."""
    m = member(STABLE, 10, 10, tp((1, 2, 3), (4, 5, 6)))
    out = reconcile(m, 11, tp((2, 3, 4), (5, 6, 7)), lambda t, p: -1, None)
    assert out == member(UNREVOKED, 10, 10, tp((2, 3), (5, 6)), tp((1,), (4,)))


def test_stable_to_unreleased_when_new_partitions_are_owned_elsewhere() -> None:
    """CurrentAssignmentBuilderTest.testStableToUnreleasedPartitions."""
    m = member(STABLE, 10, 10, tp((1, 2, 3), (4, 5, 6)))
    out = reconcile(m, 11, tp((1, 2, 3, 4), (4, 5, 6, 7)), lambda t, p: 10, None)
    assert out == member(UNRELEASED, 11, 10, tp((1, 2, 3), (4, 5, 6)))


def test_stable_to_unreleased_when_member_already_dropped_the_revoked_partition() -> None:
    """CurrentAssignmentBuilderTest.testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions:
    owned = [] means the member already gave t2:6 up, so no UNREVOKED step."""
    m = member(STABLE, 10, 10, tp((1, 2, 3), (4, 5, 6)))
    out = reconcile(m, 11, tp((1, 2, 3), (4, 5, 7)), lambda t, p: 10 if (t, p) == (T2, 7) else -1, {})
    assert out == member(UNRELEASED, 11, 10, tp((1, 2, 3), (4, 5)))


def test_unrevoked_to_stable_once_revocation_is_acknowledged() -> None:
    """CurrentAssignmentBuilderTest.testUnrevokedPartitionsToStable."""
    m = member(UNREVOKED, 10, 10, tp((2, 3), (5, 6)), tp((1,), (4,)))
    out = reconcile(m, 11, tp((2, 3), (5, 6)), lambda t, p: -1, owned(tp((2, 3), (5, 6))))
    assert out == member(STABLE, 11, 10, tp((2, 3), (5, 6)))


@pytest.mark.parametrize(
    "reported",
    [None, tp((1, 2, 3), (5, 6)), tp((2, 3), (4, 5, 6))],
    ids=["unknown", "still-owns-t1-1", "still-owns-t2-4"],
)
def test_remains_unrevoked_while_any_revoked_partition_is_owned(reported: Assignment | None) -> None:
    """CurrentAssignmentBuilderTest.testRemainsInUnrevokedPartitions."""
    m = member(UNREVOKED, 10, 10, tp((2, 3), (5, 6)), tp((1,), (4,)))
    report = None if reported is None else owned(reported)
    assert reconcile(m, 12, tp((3,), (6,)), lambda t, p: -1, report) is m


def test_unrevoked_to_unrevoked_lands_on_an_intermediate_epoch() -> None:
    """CurrentAssignmentBuilderTest.testUnrevokedPartitionsToUnrevokedPartitions (4.1: epoch + 1)."""
    m = member(UNREVOKED, 10, 10, tp((2, 3), (5, 6)), tp((1,), (4,)))
    out = reconcile(m, 12, tp((3,), (6,)), lambda t, p: -1, owned(tp((2, 3), (5, 6))))
    assert out == member(UNREVOKED, 11, 10, tp((3,), (6,)), tp((2,), (5,)))


def test_unrevoked_to_unreleased() -> None:
    """CurrentAssignmentBuilderTest.testUnrevokedPartitionsToUnreleasedPartitions."""
    m = member(UNREVOKED, 11, 10, tp((2, 3), (5, 6)))
    out = reconcile(m, 11, tp((2, 3, 4), (5, 6, 7)), lambda t, p: 10, owned(tp((2, 3), (5, 6))))
    assert out == member(UNRELEASED, 11, 11, tp((2, 3), (5, 6)))


def test_unreleased_to_stable() -> None:
    """CurrentAssignmentBuilderTest.testUnreleasedPartitionsToStable."""
    m = member(UNRELEASED, 11, 11, tp((2, 3), (5, 6)))
    out = reconcile(m, 12, tp((2, 3), (5, 6)), lambda t, p: 10, None)
    assert out == member(STABLE, 12, 11, tp((2, 3), (5, 6)))


def test_unreleased_to_stable_when_partitions_are_freed() -> None:
    """CurrentAssignmentBuilderTest.testUnreleasedPartitionsToStableWithNewPartitions."""
    m = member(UNRELEASED, 11, 11, tp((2, 3), (5, 6)))
    out = reconcile(m, 11, tp((2, 3, 4), (5, 6, 7)), lambda t, p: -1, None)
    assert out == member(STABLE, 11, 11, tp((2, 3, 4), (5, 6, 7)))


def test_unreleased_stays_unreleased_and_unchanged() -> None:
    """CurrentAssignmentBuilderTest.testUnreleasedPartitionsToUnreleasedPartitions."""
    m = member(UNRELEASED, 11, 11, tp((2, 3), (5, 6)))
    assert reconcile(m, 11, tp((2, 3, 4), (5, 6, 7)), lambda t, p: 10, None) == m


def test_unreleased_to_unrevoked() -> None:
    """CurrentAssignmentBuilderTest.testUnreleasedPartitionsToUnrevokedPartitions."""
    m = member(UNRELEASED, 11, 11, tp((2, 3), (5, 6)))
    out = reconcile(m, 12, tp((3,), (6,)), lambda t, p: 10, None)
    assert out == member(UNREVOKED, 11, 11, tp((3,), (6,)), tp((2,), (5,)))


@pytest.mark.parametrize("reported", [None, tp((3,), ())], ids=["unknown", "non-empty"])
def test_unknown_state_fences_a_member_that_owns_partitions(reported: Assignment | None) -> None:
    """CurrentAssignmentBuilderTest.testUnknownState: FENCED_MEMBER_EPOCH unless owned = []."""
    m = member(MemberState.UNKNOWN, 11, 11, tp((3,), (6,)), tp((2,), (5,)))
    with pytest.raises(KafkaError) as info:
        reconcile(m, 12, tp((3,), (6,)), lambda t, p: -1, None if reported is None else owned(reported))
    assert info.value.code is ErrorCode.FENCED_MEMBER_EPOCH


def test_unknown_state_with_nothing_owned_reconciles_to_the_target() -> None:
    """CurrentAssignmentBuilderTest.testUnknownState, last step."""
    m = member(MemberState.UNKNOWN, 11, 11, tp((3,), (6,)), tp((2,), (5,)))
    out = reconcile(m, 12, tp((3,), (6,)), lambda t, p: -1, {})
    assert out == member(STABLE, 12, 11, tp((3,), (6,)))


def test_own_pending_revocation_is_not_unreleased() -> None:
    """KAFKA-19449 (4.1 branch, CurrentAssignmentBuilderTest on that branch): a partition the
    member itself is revoking, given back to it by a newer target, is not waited for."""
    m = member(UNREVOKED, 10, 10, tp((2,), ()), tp((1,), ()))
    out = reconcile(m, 12, tp((1, 2), ()), lambda t, p: 10, owned(tp((2,), ())))
    assert out == member(STABLE, 12, 10, tp((1, 2), ()))
