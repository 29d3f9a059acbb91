"""What a test reads and writes through the broker's own protocol, with no client library.

Everything here goes over the wire (``groupcoord.protocol.client``), so it works alike for an
in-process broker and a subprocess one, and it observes exactly what a client would.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from groupcoord.admin import AdminClient, describe_group
from groupcoord.constants import GROUP_EVENTS_TOPIC
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.records import partition_for
from groupcoord.errors import ErrorCode
from groupcoord.protocol.client import WireClient
from groupcoord.storage.batch import build_batch, decode_records, iter_batches

__all__ = [
    "GroupMember",
    "GroupState",
    "Record",
    "TopicPartition",
    "committed",
    "create_topic",
    "describe",
    "events",
    "produce",
    "records",
]

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_FETCH, CREATE_TOPICS = 0, 1, 2, 3, 9, 19
_FETCH_MAX_BYTES = 8 << 20


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Record:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupMember:
    member_id: str
    client_id: str
    group_instance_id: str | None
    host: str
    #: the member's partitions, decoded from its consumer-protocol assignment (empty while the
    #: group is not Stable)
    assignment: frozenset[TopicPartition]


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupState:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    #: of the newest GroupMetadata record (the last completed generation during a rebalance)
    generation: int | None
    leader: str | None
    members: tuple[GroupMember, ...]

    def member(self, client_or_member_id: str) -> GroupMember:
        """The member with this member id, client id or group instance id."""
        for m in self.members:
            if client_or_member_id in (m.member_id, m.client_id, m.group_instance_id):
                return m
        raise KeyError(f"no member {client_or_member_id!r} in group {self.group_id!r}")

    def assignment(self) -> dict[str, frozenset[TopicPartition]]:
        """Client id -> partitions (for groups whose members have distinct client ids)."""
        return {m.client_id: m.assignment for m in self.members}


def _split(bootstrap: str) -> tuple[str, int]:
    host, _, port = bootstrap.rpartition(":")
    return host, int(port)


def describe(bootstrap: str, group: str) -> GroupState:
    with AdminClient(bootstrap, client_id="groupcoord-testing") as admin:
        d = describe_group(admin, group)
    return GroupState(
        group_id=d.group_id,
        state=d.state,
        protocol_type=d.protocol_type,
        protocol=d.protocol,
        generation=d.generation,
        leader=d.leader,
        members=tuple(
            GroupMember(
                member_id=m.member_id,
                client_id=m.client_id,
                group_instance_id=m.group_instance_id,
                host=m.host,
                assignment=frozenset(TopicPartition(t, p) for t, ps in (m.assignment or ()) for p in ps),
            )
            for m in d.members
        ),
    )


def committed(bootstrap: str, group: str) -> dict[TopicPartition, int]:
    with AdminClient(bootstrap, client_id="groupcoord-testing") as admin:
        coord = admin.coordinator(group)
        r = coord.call(OFFSET_FETCH, group_id=group, topics=None, require_stable=False)
    if int(r.error_code) != 0:
        raise RuntimeError(f"OffsetFetch({group!r}): {ErrorCode(int(r.error_code)).name}")
    out: dict[TopicPartition, int] = {}
    for t in r.topics:
        for p in t.partitions:
            if int(p.error_code) == 0 and int(p.committed_offset) >= 0:
                out[TopicPartition(t.name, int(p.partition_index))] = int(p.committed_offset)
    return dict(sorted(out.items()))


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    host, port = _split(bootstrap)
    with WireClient(host, port, client_id="groupcoord-testing") as c:
        r = c.call(
            CREATE_TOPICS,
            4,
            topics=[
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            timeout=30_000,
            validate_only=False,
        )
    code = int(r.topics[0].error_code)
    if code not in (0, ErrorCode.TOPIC_ALREADY_EXISTS):
        raise RuntimeError(f"CreateTopics({name!r}): {ErrorCode(code).name}")


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
    host, port = _split(bootstrap)
    with WireClient(host, port, client_id="groupcoord-testing") as c:
        r = c.call(
            PRODUCE,
            8,
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


def _partitions(c: WireClient, topic: str) -> list[int]:
    r = c.call(
        METADATA,
        4,
        topics=[{"name": topic}],
        allow_auto_topic_creation=False,
    )
    t = r.topics[0]
    if int(t.error_code) != 0:
        raise RuntimeError(f"Metadata({topic!r}): {ErrorCode(int(t.error_code)).name}")
    return sorted(int(p.partition_index) for p in t.partitions)


def _end_offset(c: WireClient, topic: str, partition: int) -> int:
    r = c.call(
        LIST_OFFSETS,
        4,
        replica_id=-1,
        isolation_level=0,
        topics=[
            {
                "name": topic,
                "partitions": [{"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}],
            }
        ],
    )
    return int(r.topics[0].partitions[0].offset)


def _fetch_partition(c: WireClient, topic: str, partition: int) -> list[Record]:
    end = _end_offset(c, topic, partition)
    out: list[Record] = []
    position = 0
    while position < end:
        r = c.call(
            FETCH,
            11,
            replica_id=-1,
            max_wait=0,
            min_bytes=0,
            max_bytes=_FETCH_MAX_BYTES,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": position,
                            "log_start_offset": -1,
                            "partition_max_bytes": _FETCH_MAX_BYTES,
                        }
                    ],
                }
            ],
            forgotten_topics_data=[],
            rack_id="",
        )
        part = r.responses[0].partitions[0]
        code = int(part.error_code)
        if code == ErrorCode.OFFSET_OUT_OF_RANGE and position == 0:
            position = int(part.log_start_offset)
            continue
        if code != 0:
            raise RuntimeError(f"Fetch {topic}-{partition} at {position}: {ErrorCode(code).name}")
        data = bytes(part.records or b"")
        advanced = position
        for pos, header in iter_batches(data):
            if header.last_offset < position:
                continue
            advanced = header.last_offset + 1
            if header.is_control:
                continue
            for rec in decode_records(data, pos):
                if rec.offset < position:
                    continue
                out.append(
                    Record(
                        topic=topic,
                        partition=partition,
                        offset=rec.offset,
                        timestamp=rec.timestamp,
                        key=None if rec.key is None else bytes(rec.key),
                        value=None if rec.value is None else bytes(rec.value),
                        headers=tuple((str(k), None if v is None else bytes(v)) for k, v in rec.headers),
                    )
                )
        if advanced == position:
            break
        position = advanced
    return out


def records(bootstrap: str, topic: str, partition: int | None = None) -> list[Record]:
    """Every record of the topic (or of one partition) now, by partition then offset."""
    host, port = _split(bootstrap)
    with WireClient(host, port, client_id="groupcoord-testing") as c:
        parts = [partition] if partition is not None else _partitions(c, topic)
        out: list[Record] = []
        for p in parts:
            out.extend(_fetch_partition(c, topic, p))
    return out


def events(bootstrap: str, group: str) -> list[GroupEvent]:
    """The group's events from ``__group_events``, oldest first."""
    host, port = _split(bootstrap)
    with WireClient(host, port, client_id="groupcoord-testing") as c:
        count = len(_partitions(c, GROUP_EVENTS_TOPIC))
        recs = _fetch_partition(c, GROUP_EVENTS_TOPIC, partition_for(group, count))
    out = []
    for r in recs:
        if r.key is not None and r.key.decode("utf-8", "replace") == group and r.value is not None:
            out.append(GroupEvent.from_json(r.value))
    return out
