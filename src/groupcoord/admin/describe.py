"""``groupcoord groups describe``: one group as the broker describes it, of either type.

A group is described as Kafka's ``Admin.describeConsumerGroups`` does
(``DescribeConsumerGroupsHandler``): ConsumerGroupDescribe (API 69) first; a group that answers
GROUP_ID_NOT_FOUND there (a classic group, or no group at all), or a broker without API 69, is
described with DescribeGroups (API 15). So a KIP-848 consumer group shows its type, state, group
epoch, target assignment epoch, assignor and, per member, its member epoch with its current and
target assignments; a classic group its protocol, members and decoded assignments, and the
generation and leader of its newest GroupMetadata record:

* the **generation and the leader** of a classic group are not part of any admin API (Kafka's
  own tool does not show them). They live in the group's newest GroupMetadata record in
  ``__consumer_offsets`` (partition ``partition_for(group)``), which this tool reads with Fetch, as
  any consumer of that internal topic can. That record is written when the leader's assignment
  is stored, when a static member is replaced and when the group becomes Empty, so during a
  rebalance (PreparingRebalance / CompletingRebalance) it describes the last completed
  generation, and the output says so. A group that never wrote one (offsets only) has neither.
* per partition, both types: the committed offset (OffsetFetch), the log-end offset (ListOffsets)
  and the lag, with the member that owns it (a consumer group's *current* assignment, as
  ``ConsumerGroupCommand.collectGroupsOffsets`` takes ``MemberDescription.assignment``).

Besides the full view (:func:`format_description`), the three tables of
``kafka-consumer-groups.sh --describe`` are printed as Kafka's ``ConsumerGroupCommand`` prints
them (:func:`format_state`, :func:`format_members`, :func:`format_offsets`; ``--verbose`` adds the
epochs and assignments), with its notes on stderr for an Empty, rebalancing or missing group
(:func:`state_note`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from groupcoord.admin.client import (
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    OFFSET_FETCH,
    AdminClient,
    Connection,
    check_error,
    list_offsets,
    read_partition,
)
from groupcoord.admin.command import table
from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.coordinator.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    RecordDecodeError,
    decode_record,
    partition_for,
)
from groupcoord.errors import ErrorCode
from groupcoord.formats.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
)

log = logging.getLogger(__name__)

__all__ = [
    "Assignment",
    "GroupDescription",
    "MemberDescription",
    "PartitionLag",
    "describe_group",
    "format_description",
    "format_members",
    "format_offsets",
    "format_state",
    "group_state",
    "state_note",
]

#: ``((topic, (partitions...)), ...)`` sorted by topic, partitions ascending.
Assignment = tuple[tuple[str, tuple[int, ...]], ...]

CLASSIC, CONSUMER = "classic", "consumer"
#: States in which Kafka's tool warns that the group is rebalancing (``shouldPrintMemberState``).
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    #: The member's partitions: a classic member's decoded consumer-protocol assignment (None when
    #: the group is not Stable, not a consumer-protocol group, or the bytes do not decode); a
    #: consumer group member's current assignment.
    assignment: Assignment | None
    #: Consumer groups only (None for classic members): the member epoch, and the target
    #: assignment the coordinator computed for it (at the group's target assignment epoch).
    member_epoch: int | None = None
    target_assignment: Assignment | None = None
    subscribed_topics: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    #: Consumer groups (ConsumerGroupDescribe v1's MemberType): True for a consumer-protocol
    #: member, False for a classic member inside the consumer group, None when not told.
    upgraded: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None  # None: nothing committed
    log_end: int | None  # None: the broker could not tell (e.g. the topic is gone)
    lag: int | None
    member_id: str | None
    client_id: str | None
    host: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupDescription:
    group_id: str
    #: ``classic`` or ``consumer`` (KIP-848), as ListGroups v5 names the types.
    group_type: str
    state: str
    protocol_type: str
    #: A classic group's protocol (its assignor); a consumer group's server-side assignor.
    protocol: str
    #: Classic groups: from the newest GroupMetadata record in __consumer_offsets (see above).
    generation: int | None
    leader: str | None
    metadata_current: bool  # False while a rebalance has not yet written the new generation
    coordinator: str
    coordinator_id: int | None
    members: tuple[MemberDescription, ...]
    partitions: tuple[PartitionLag, ...]
    #: Consumer groups only: the group epoch and the target assignment epoch.
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    @property
    def exists(self) -> bool:
        return not (self.state == "Dead" and not self.members and not self.partitions)


# ------------------------------------------------------------------------------ describe
def newest_group_metadata(admin: AdminClient, group_id: str) -> GroupMetadataValue | None:
    """The group's newest GroupMetadata record value in ``__consumer_offsets`` (None: none or
    a tombstone), read with Fetch from the log start to the high watermark."""
    leaders = admin.leaders([OFFSETS_TOPIC])
    count = sum(1 for t, _ in leaders if t == OFFSETS_TOPIC)
    if count == 0:
        return None
    tp = (OFFSETS_TOPIC, partition_for(group_id, count))
    conn = leaders.get(tp)
    if conn is None:
        return None
    start = list_offsets(leaders, [tp], EARLIEST_TIMESTAMP).get(tp, 0)
    end = list_offsets(leaders, [tp], LATEST_TIMESTAMP).get(tp, 0)
    found: GroupMetadataValue | None = None
    for _, rec in read_partition(conn, tp[0], tp[1], start, end):
        if rec.key is None:
            continue
        try:
            record = decode_record(bytes(rec.key), None if rec.value is None else bytes(rec.value))
        except (RecordDecodeError, ValueError):
            continue
        if record is not None and isinstance(record.key, GroupMetadataKey) and record.key.group == group_id:
            found = record.value if isinstance(record.value, GroupMetadataValue) else None
    return found


def describe_group(admin: AdminClient, group_id: str) -> GroupDescription:
    """``group_id`` described by its coordinator (ConsumerGroupDescribe, else DescribeGroups), with
    its committed offsets and lag."""
    coord, node_id = admin.coordinator_node(group_id)
    if coord.serves(CONSUMER_GROUP_DESCRIBE):
        r = coord.call(CONSUMER_GROUP_DESCRIBE, group_ids=[group_id], include_authorized_operations=False)
        g = r.groups[0]
        if int(g.error_code) != ErrorCode.GROUP_ID_NOT_FOUND:
            check_error(g.error_code, f"ConsumerGroupDescribe({group_id!r})")
            return _consumer_group(admin, coord, node_id, g)
    return _classic_group(admin, coord, node_id, group_id)


def group_state(admin: AdminClient, group_id: str) -> str:
    """Only the group's state, asked as :func:`describe_group` asks (no offsets, no log read)."""
    coord = admin.coordinator(group_id)
    if coord.serves(CONSUMER_GROUP_DESCRIBE):
        r = coord.call(CONSUMER_GROUP_DESCRIBE, group_ids=[group_id], include_authorized_operations=False)
        g = r.groups[0]
        if int(g.error_code) != ErrorCode.GROUP_ID_NOT_FOUND:
            check_error(g.error_code, f"ConsumerGroupDescribe({group_id!r})")
            return str(g.group_state)
    r = coord.call(DESCRIBE_GROUPS, groups=[group_id], include_authorized_operations=False)
    check_error(r.groups[0].error_code, f"DescribeGroups({group_id!r})")
    return str(r.groups[0].group_state)


def _assignment(topics: Any) -> Assignment:
    return tuple(
        sorted((t.topic_name, tuple(sorted(int(p) for p in t.partitions))) for t in topics if t.partitions)
    )


#: ConsumerGroupDescribe v1's MemberType (-1 unknown, 0 classic, 1 consumer) as Kafka's
#: ``MemberDescription.upgraded`` reads it.
_MEMBER_TYPES = {0: False, 1: True}


def _consumer_group(admin: AdminClient, coord: Connection, node_id: int, g: Any) -> GroupDescription:
    members = tuple(
        MemberDescription(
            member_id=m.member_id,
            group_instance_id=m.instance_id,
            client_id=m.client_id,
            host=m.client_host,
            assignment=_assignment(m.assignment.topic_partitions),
            member_epoch=int(m.member_epoch),
            target_assignment=_assignment(m.target_assignment.topic_partitions),
            subscribed_topics=tuple(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            upgraded=_MEMBER_TYPES.get(int(getattr(m, "member_type", -1))),
        )
        for m in g.members
    )
    return GroupDescription(
        group_id=g.group_id,
        group_type=CONSUMER,
        state=g.group_state,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol=g.assignor_name,
        generation=None,
        leader=None,
        metadata_current=True,
        coordinator=coord.address,
        coordinator_id=node_id,
        members=tuple(sorted(members, key=lambda m: (m.client_id, m.member_id))),
        partitions=_partitions(admin, coord, g.group_id, members),
        group_epoch=int(g.group_epoch),
        assignment_epoch=int(g.assignment_epoch),
    )


def _classic_group(admin: AdminClient, coord: Connection, node_id: int, group_id: str) -> GroupDescription:
    r = coord.call(DESCRIBE_GROUPS, groups=[group_id], include_authorized_operations=False)
    g = r.groups[0]
    check_error(g.error_code, f"DescribeGroups({group_id!r})")
    members = []
    for m in g.members:
        assignment: Assignment | None = None
        raw = bytes(m.member_assignment)
        if g.protocol_type == CONSUMER_PROTOCOL_TYPE and raw:
            try:
                assignment = decode_assignment(raw).partitions
            except ConsumerProtocolError as exc:
                log.warning("member %s: undecodable assignment: %s", m.member_id, exc)
        members.append(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=getattr(m, "group_instance_id", None),
                client_id=m.client_id,
                host=m.client_host,
                assignment=assignment,
            )
        )
    record = newest_group_metadata(admin, group_id)
    return GroupDescription(
        group_id=group_id,
        group_type=CLASSIC,
        state=g.group_state,
        protocol_type=g.protocol_type,
        protocol=g.protocol_data,
        generation=record.generation if record is not None else None,
        leader=record.leader if record is not None else None,
        metadata_current=g.group_state in ("Stable", "Empty", "Dead"),
        coordinator=coord.address,
        coordinator_id=node_id,
        members=tuple(sorted(members, key=lambda m: (m.client_id, m.member_id))),
        partitions=_partitions(admin, coord, group_id, members),
    )


def _partitions(
    admin: AdminClient, coord: Connection, group_id: str, members: Sequence[MemberDescription]
) -> tuple[PartitionLag, ...]:
    """Each partition the group committed or a member owns: committed offset, log end, lag, owner."""
    owners: dict[tuple[str, int], MemberDescription] = {}
    for member in members:
        for topic, parts in member.assignment or ():
            for p in parts:
                owners[(topic, p)] = member
    f = coord.call(OFFSET_FETCH, group_id=group_id, topics=None, require_stable=False)
    check_error(f.error_code, f"OffsetFetch({group_id!r})")
    committed: dict[tuple[str, int], int] = {}
    for t in f.topics:
        for p in t.partitions:
            check_error(p.error_code, f"OffsetFetch({group_id!r}) {t.name}-{int(p.partition_index)}")
            if int(p.committed_offset) >= 0:
                committed[(t.name, int(p.partition_index))] = int(p.committed_offset)
    wanted = sorted(set(committed) | set(owners))
    leaders = admin.leaders({t for t, _ in wanted}) if wanted else {}
    ends = list_offsets(leaders, wanted, LATEST_TIMESTAMP)
    out = []
    for tp in wanted:
        owner = owners.get(tp)
        done = committed.get(tp)
        end = ends.get(tp)
        out.append(
            PartitionLag(
                topic=tp[0],
                partition=tp[1],
                committed=done,
                log_end=end,
                lag=None if done is None or end is None else max(end - done, 0),
                member_id=owner.member_id if owner else None,
                client_id=owner.client_id if owner else None,
                host=owner.host if owner else None,
            )
        )
    return tuple(out)


# ------------------------------------------------------------------------------ output
def _dash(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def _assignment_text(assignment: Assignment | None) -> str:
    if assignment is None:
        return "-"
    if not assignment:
        return "(none)"
    return " ".join(f"{topic}:{','.join(str(p) for p in parts)}" for topic, parts in assignment)


def _kafka_assignment(assignment: Assignment | None) -> str:
    """``topic:0,1;other:2`` (``ConsumerGroupCommand.getAssignmentString``), ``-`` when empty."""
    if not assignment:
        return "-"
    return ";".join(f"{topic}:{','.join(str(p) for p in parts)}" for topic, parts in sorted(assignment))


def _count(assignment: Assignment | None) -> int:
    return sum(len(parts) for _, parts in assignment or ())


def format_description(d: GroupDescription) -> str:
    """The full view: a heading, the members (with epochs and target assignments for a consumer
    group) and the partitions with their lag."""
    head = [
        ("Group", d.group_id),
        ("Coordinator", d.coordinator),
        ("Type", d.group_type),
        ("State", d.state),
    ]
    if d.group_type == CONSUMER:
        head += [
            ("Group epoch", _dash(d.group_epoch)),
            ("Target assignment epoch", _dash(d.assignment_epoch)),
            ("Assignor", _dash(d.protocol)),
        ]
    else:
        note = "" if d.metadata_current else " (last completed generation; a rebalance is in progress)"
        head += [
            ("Protocol type", _dash(d.protocol_type)),
            ("Protocol", _dash(d.protocol)),
            ("Generation", _dash(d.generation) + (note if d.generation is not None else "")),
            ("Leader", _dash(d.leader)),
        ]
    head.append(("Members", str(len(d.members))))
    width = max(len(k) for k, _ in head) + 1
    out = [f"{(k + ':').ljust(width)} {v}" for k, v in head]
    if not d.exists:
        out += ["", f"Group {d.group_id!r} does not exist (or was deleted)."]
    if d.members and d.group_type == CONSUMER:
        out.append("")
        out += table(
            (
                "MEMBER-ID",
                "INSTANCE-ID",
                "CLIENT-ID",
                "HOST",
                "EPOCH",
                "ASSIGNMENT",
                "TARGET-EPOCH",
                "TARGET-ASSIGNMENT",
            ),
            [
                (
                    m.member_id,
                    _dash(m.group_instance_id),
                    m.client_id,
                    m.host,
                    _dash(m.member_epoch),
                    _assignment_text(m.assignment),
                    _dash(d.assignment_epoch),
                    _assignment_text(m.target_assignment),
                )
                for m in d.members
            ],
        )
    elif d.members:
        out.append("")
        out += table(
            ("MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"),
            [
                (m.member_id, _dash(m.group_instance_id), m.client_id, m.host, _assignment_text(m.assignment))
                for m in d.members
            ],
        )
    if d.partitions:
        out.append("")
        out += _partition_table(d, with_group=False)
    return "\n".join(out) + "\n"


def _partition_table(d: GroupDescription, *, with_group: bool) -> list[str]:
    headers = [
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]
    rows = [
        [
            p.topic,
            str(p.partition),
            _dash(p.committed),
            _dash(p.log_end),
            _dash(p.lag),
            _dash(p.member_id),
            _dash(p.host),
            _dash(p.client_id),
        ]
        for p in _kafka_partition_order(d)
    ]
    if with_group:
        headers.insert(0, "GROUP")
        rows = [[d.group_id, *r] for r in rows]
    return table(headers, rows)


def _kafka_partition_order(d: GroupDescription) -> list[PartitionLag]:
    """Kafka's order (``collectGroupsOffsets``): members by how many partitions they own, most
    first, each member's partitions by topic and partition; then the unowned committed ones."""
    sizes = {m.member_id: _count(m.assignment) for m in d.members}
    owned = [p for p in d.partitions if p.member_id is not None]
    owned.sort(key=lambda p: (-sizes.get(p.member_id or "", 0), p.member_id or "", p.topic, p.partition))
    return owned + [p for p in d.partitions if p.member_id is None]


def state_note(d: GroupDescription) -> str | None:
    """What Kafka's tool says on stderr before a group's table (``shouldPrintMemberState``):
    a missing group, one without active members, one that is rebalancing; None when Stable."""
    if not d.exists:
        return f"Error: Consumer group '{d.group_id}' does not exist."
    if d.state == "Empty":
        return f"Consumer group '{d.group_id}' has no active members."
    if d.state in REBALANCING_STATES:
        return f"Warning: Consumer group '{d.group_id}' is rebalancing."
    return None


def format_state(d: GroupDescription, *, verbose: bool) -> str:
    """``--describe --state``: coordinator, assignment strategy, state, members (``--verbose``:
    and the group epoch and target assignment epoch, ``-`` for a classic group)."""
    coordinator = f"{d.coordinator}  ({_dash(d.coordinator_id)})"
    strategy = _dash(d.protocol)
    if verbose:
        headers: tuple[str, ...] = (
            "GROUP",
            "COORDINATOR (ID)",
            "ASSIGNMENT-STRATEGY",
            "STATE",
            "GROUP-EPOCH",
            "TARGET-ASSIGNMENT-EPOCH",
            "#MEMBERS",
        )
        row: tuple[str, ...] = (
            d.group_id,
            coordinator,
            strategy,
            d.state,
            _dash(d.group_epoch),
            _dash(d.assignment_epoch),
            str(len(d.members)),
        )
    else:
        headers = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
        row = (d.group_id, coordinator, strategy, d.state, str(len(d.members)))
    return "\n".join(table(headers, [row])) + "\n"


def format_members(d: GroupDescription, *, verbose: bool) -> str:
    """``--describe --members``: one row per member with its partition count (``--verbose``: its
    epoch and current assignment, the target epoch and target assignment, and whether it was
    upgraded to the consumer protocol when classic and consumer-protocol members share the group)."""
    with_instance = any(m.group_instance_id for m in d.members)
    headers = ["GROUP", "CONSUMER-ID", *(["GROUP-INSTANCE-ID"] if with_instance else []), "HOST", "CLIENT-ID"]
    headers.append("#PARTITIONS")
    # Kafka adds UPGRADED when the group holds members of both protocols (a migration)
    mixed = {m.upgraded for m in d.members} >= {True, False}
    if verbose:
        headers += ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        headers += ["UPGRADED"] if mixed else []
    rows = []
    for m in d.members:
        row = [d.group_id, m.member_id, *([_dash(m.group_instance_id)] if with_instance else []), m.host]
        row += [m.client_id, str(_count(m.assignment))]
        if verbose:
            row += [
                _dash(m.member_epoch),
                _kafka_assignment(m.assignment),
                _dash(d.assignment_epoch if d.group_type == CONSUMER else None),
                _kafka_assignment(m.target_assignment),
            ]
            row += [_dash(None if m.upgraded is None else str(m.upgraded).lower())] if mixed else []
        rows.append(row)
    return "\n".join(table(headers, rows)) + "\n"


def format_offsets(d: GroupDescription) -> str:
    """``--describe --offsets``: the partitions with the group's name in the first column."""
    return "\n".join(_partition_table(d, with_group=True)) + "\n"
