"""The tables of ``groupcoord groups describe --state|--members|--offsets`` as Kafka's
``ConsumerGroupCommand`` prints them (``printStates``, ``printMembers``, ``printOffsets``), from
descriptions such as ``groupcoord.admin.describe.describe_group`` returns. The broker-facing
behaviour is in ``tests/e2e/test_groups_admin_consumer_protocol.py``; here, the cases a running
broker of this branch cannot yet produce: a consumer group holding classic and consumer-protocol
members (Kafka's UPGRADED column), and the static members' GROUP-INSTANCE-ID column."""

from __future__ import annotations

from groupcoord.admin.describe import (
    GroupDescription,
    MemberDescription,
    PartitionLag,
    format_members,
    format_offsets,
    state_note,
)


def member(
    mid: str, client: str, parts: tuple[int, ...], *, upgraded: bool | None, instance: str | None = None
) -> MemberDescription:
    assignment = (("t", parts),) if parts else ()
    return MemberDescription(
        member_id=mid,
        group_instance_id=instance,
        client_id=client,
        host="/127.0.0.1",
        assignment=assignment,
        member_epoch=7,
        target_assignment=assignment,
        upgraded=upgraded,
    )


def group(
    *members: MemberDescription, state: str = "Stable", partitions: tuple[PartitionLag, ...] = ()
) -> GroupDescription:
    return GroupDescription(
        group_id="g",
        group_type="consumer",
        state=state,
        protocol_type="consumer",
        protocol="uniform",
        generation=None,
        leader=None,
        metadata_current=True,
        coordinator="127.0.0.1:9092",
        coordinator_id=0,
        members=members,
        partitions=partitions,
        group_epoch=7,
        assignment_epoch=7,
    )


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_a_group_of_both_protocols_gets_the_upgraded_column() -> None:
    """ConsumerGroupCommand.printMembers: UPGRADED only when classic and consumer members mix."""
    mixed = group(member("m1", "new", (0, 1), upgraded=True), member("m2", "old", (2,), upgraded=False))
    assert rows(format_members(mixed, verbose=True)) == [
        [
            "GROUP",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
            "#PARTITIONS",
            "CURRENT-EPOCH",
            "CURRENT-ASSIGNMENT",
            "TARGET-EPOCH",
            "TARGET-ASSIGNMENT",
            "UPGRADED",
        ],
        ["g", "m1", "/127.0.0.1", "new", "2", "7", "t:0,1", "7", "t:0,1", "true"],
        ["g", "m2", "/127.0.0.1", "old", "1", "7", "t:2", "7", "t:2", "false"],
    ]
    alone = group(member("m1", "new", (0, 1), upgraded=True))
    assert "UPGRADED" not in format_members(alone, verbose=True)
    assert rows(format_members(alone, verbose=False)) == [
        ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
        ["g", "m1", "/127.0.0.1", "new", "2"],
    ]


def test_static_members_get_the_instance_column_and_an_empty_assignment_is_a_dash() -> None:
    g = group(member("m1", "a", (), upgraded=True, instance="i-1"), member("m2", "b", (0,), upgraded=True))
    assert rows(format_members(g, verbose=True)) == [
        [
            "GROUP",
            "CONSUMER-ID",
            "GROUP-INSTANCE-ID",
            "HOST",
            "CLIENT-ID",
            "#PARTITIONS",
            "CURRENT-EPOCH",
            "CURRENT-ASSIGNMENT",
            "TARGET-EPOCH",
            "TARGET-ASSIGNMENT",
        ],
        ["g", "m1", "i-1", "/127.0.0.1", "a", "0", "7", "-", "7", "-"],
        ["g", "m2", "-", "/127.0.0.1", "b", "1", "7", "t:0", "7", "t:0"],
    ]


def test_offsets_list_owned_partitions_by_the_busiest_member_then_the_unowned() -> None:
    """ConsumerGroupCommand.collectGroupsOffsets: members by partition count, most first; then
    committed partitions nobody owns, with '-' for the consumer columns."""

    def lag(p: int, owner: MemberDescription | None) -> PartitionLag:
        return PartitionLag(
            topic="t",
            partition=p,
            committed=1,
            log_end=3,
            lag=2,
            member_id=owner.member_id if owner else None,
            client_id=owner.client_id if owner else None,
            host=owner.host if owner else None,
        )

    small, big = member("m1", "a", (0,), upgraded=True), member("m2", "b", (1, 2), upgraded=True)
    g = group(small, big, partitions=(lag(0, small), lag(1, big), lag(2, big), lag(3, None)))
    assert [r[2] for r in rows(format_offsets(g))[1:]] == ["1", "2", "0", "3"]
    assert rows(format_offsets(g))[-1] == ["g", "t", "3", "1", "3", "2", "-", "-", "-"]


def test_notes_for_empty_rebalancing_and_missing_groups() -> None:
    assert state_note(group(state="Empty")) == "Consumer group 'g' has no active members."
    assert state_note(group(state="Reconciling")) == "Warning: Consumer group 'g' is rebalancing."
    assert state_note(group(state="Dead")) == "Error: Consumer group 'g' does not exist."
    assert state_note(group(member("m", "c", (0,), upgraded=True))) is None
