"""What a test reads and writes through the broker's own protocol, with no client library.

Everything here goes over the wire, through the admin tool's client
(:class:`groupcoord.admin.client.AdminClient` over ``groupcoord.protocol.client``), so it works alike
for an in-process broker and a subprocess one, and it observes exactly what a client would.
Partitions and records are the client's own values (:mod:`groupcoord.client.types`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from groupcoord.admin.client import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    PRODUCE,
    AdminClient,
    AdminError,
    list_offsets,
    read_partition,
)
from groupcoord.admin.groups import committed_offsets, describe_group, topic_partitions
from groupcoord.admin.topics import create_topic as create_topic_over_wire
from groupcoord.client.types import Record, TopicPartition
from groupcoord.constants import GROUP_EVENTS_TOPIC
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.records import partition_for
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import build_batch

__all__ = [
    "GroupView",
    "MemberView",
    "Record",
    "TopicPartition",
    "committed",
    "create_topic",
    "describe",
    "events",
    "produce",
    "records",
]

_CLIENT_ID = "groupcoord-testing"


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberView:
    """One member of a group as a test sees it: the admin tool's
    :class:`~groupcoord.admin.groups.MemberDescription` with its assignment as partitions."""

    member_id: str
    client_id: str
    group_instance_id: str | None
    host: str
    #: the member's partitions: a classic member's, decoded from its consumer-protocol assignment
    #: (empty while the group is not Stable); a consumer group member's current assignment
    assignment: frozenset[TopicPartition]
    #: consumer groups (KIP-848) only, else None / empty: the member epoch and the target
    #: assignment the coordinator computed for it
    member_epoch: int | None = None
    target_assignment: frozenset[TopicPartition] = frozenset()


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupView:
    """A group as a test sees it: the admin tool's :class:`~groupcoord.admin.describe.GroupDescription`
    (ConsumerGroupDescribe for a KIP-848 consumer group; else DescribeGroups plus the newest
    GroupMetadata record) with lookups by member. ``state`` is the state's wire name (not the
    coordinator's ``GroupState`` enum)."""

    group_id: str
    #: ``classic`` or ``consumer``
    group_type: str
    state: str
    protocol_type: str
    #: a classic group's protocol; a consumer group's server-side assignor
    protocol: str
    #: classic groups: of the newest GroupMetadata record (the last completed generation during
    #: a rebalance)
    generation: int | None
    leader: str | None
    members: tuple[MemberView, ...]
    #: consumer groups only: the group epoch and the target assignment epoch
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    def member(self, client_or_member_id: str) -> MemberView:
        """The member with this member id, client id or group instance id."""
        for m in self.members:
            if client_or_member_id in (m.member_id, m.client_id, m.group_instance_id):
                return m
        raise KeyError(f"no member {client_or_member_id!r} in group {self.group_id!r}")

    def assignment(self) -> dict[str, frozenset[TopicPartition]]:
        """Client id -> partitions (for groups whose members have distinct client ids)."""
        return {m.client_id: m.assignment for m in self.members}


def describe(bootstrap: str, group: str) -> GroupView:
    with AdminClient(bootstrap, client_id=_CLIENT_ID) as admin:
        d = describe_group(admin, group)
    return GroupView(
        group_id=d.group_id,
        group_type=d.group_type,
        state=d.state,
        protocol_type=d.protocol_type,
        protocol=d.protocol,
        generation=d.generation,
        leader=d.leader,
        group_epoch=d.group_epoch,
        assignment_epoch=d.assignment_epoch,
        members=tuple(
            MemberView(
                member_id=m.member_id,
                client_id=m.client_id,
                group_instance_id=m.group_instance_id,
                host=m.host,
                assignment=_partitions(m.assignment),
                member_epoch=m.member_epoch,
                target_assignment=_partitions(m.target_assignment),
            )
            for m in d.members
        ),
    )


def _partitions(assignment: Sequence[tuple[str, Sequence[int]]] | None) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t, p) for t, ps in (assignment or ()) for p in ps)


def committed(bootstrap: str, group: str) -> dict[TopicPartition, int]:
    with AdminClient(bootstrap, client_id=_CLIENT_ID) as admin:
        offsets = committed_offsets(admin, group)
    return {TopicPartition(t, p): o for (t, p), o in sorted(offsets.items())}


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    configs: dict[str, str] | None = None,
    *,
    replication_factor: int = 1,
) -> None:
    """Create ``name`` (a topic that already exists is left as it is); replication factor -1:
    the broker's ``default.replication.factor``."""
    with AdminClient(bootstrap, client_id=_CLIENT_ID) as admin:
        try:
            create_topic_over_wire(
                admin,
                name,
                partitions=partitions,
                replication_factor=replication_factor,
                configs=configs or {},
            )
        except AdminError as exc:
            if ErrorCode.TOPIC_ALREADY_EXISTS.name not in str(exc):
                raise


def produce(
    bootstrap: str,
    topic: str,
    values: Iterable[bytes | str | None],
    *,
    key: bytes | str | None = None,
    partition: int = 0,
    headers: Sequence[tuple[str, bytes | None]] = (),
    timestamp_ms: int | None = None,
) -> list[int]:
    """Append ``values`` (one batch, acks=all) to one partition; their offsets."""

    def as_bytes(v: bytes | str | None) -> bytes | None:
        return v.encode() if isinstance(v, str) else v

    entries = [(as_bytes(key), as_bytes(v), tuple(headers)) for v in values]
    if not entries:
        return []
    batch = build_batch(
        entries, timestamp_ms=int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    )
    with AdminClient(bootstrap, client_id=_CLIENT_ID) as admin:
        # the partition's leader (with several brokers, only it appends)
        leader = admin.leaders([topic]).get((topic, partition), admin.bootstrap)
        r = leader.call(
            PRODUCE,
            transactional_id=None,
            acks=-1,
            timeout=30_000,
            topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
        )
    part = r.responses[0].partition_responses[0]
    code = int(part.error_code)
    if code != 0:
        raise RuntimeError(f"Produce to {topic}-{partition}: {ErrorCode(code).name}")
    base = int(part.base_offset)
    return list(range(base, base + len(entries)))


def _read(admin: AdminClient, topic: str, partitions: Iterable[int]) -> list[Record]:
    """Every record of these partitions now (log start to high watermark), in offset order."""
    leaders = admin.leaders([topic])
    out: list[Record] = []
    for p in partitions:
        tp = (topic, p)
        conn = leaders.get(tp)
        if conn is None:
            raise RuntimeError(f"no leader for {topic}-{p}")
        start = list_offsets(leaders, [tp], EARLIEST_TIMESTAMP).get(tp, 0)
        end = list_offsets(leaders, [tp], LATEST_TIMESTAMP).get(tp, 0)
        out.extend(
            Record(
                topic=topic,
                partition=p,
                offset=rec.offset,
                timestamp=rec.timestamp,
                key=None if rec.key is None else bytes(rec.key),
                value=None if rec.value is None else bytes(rec.value),
                headers=tuple((str(k), None if v is None else bytes(v)) for k, v in rec.headers),
                leader_epoch=header.partition_leader_epoch,
            )
            for header, rec in read_partition(conn, topic, p, start, end)
        )
    return out


def records(bootstrap: str, topic: str, partition: int | None = None) -> list[Record]:
    """Every record of the topic (or of one partition) now, by partition then offset."""
    with AdminClient(bootstrap, client_id=_CLIENT_ID) as admin:
        parts = [partition] if partition is not None else topic_partitions(admin, [topic])[topic]
        return _read(admin, topic, parts)


def events(bootstrap: str, group: str) -> list[GroupEvent]:
    """The group's events from ``__group_events``, oldest first."""
    with AdminClient(bootstrap, client_id=_CLIENT_ID) as admin:
        count = len(topic_partitions(admin, [GROUP_EVENTS_TOPIC])[GROUP_EVENTS_TOPIC])
        recs = _read(admin, GROUP_EVENTS_TOPIC, [partition_for(group, count)])
    out = []
    for r in recs:
        if r.key is not None and r.key.decode("utf-8", "replace") == group and r.value is not None:
            out.append(GroupEvent.from_json(r.value))
    return out
