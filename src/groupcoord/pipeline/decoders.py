"""Spark-free decoders: ``__consumer_offsets`` and ``__group_events`` records to plain rows.

The byte codecs are the coordinator's own (``groupcoord.coordinator.records``) and the client
protocol's (``groupcoord.formats.consumer_protocol``); this module only flattens what they return into rows
with the column names of the pipeline's tables. Every function here is plain Python so it is unit
tested without Spark; the Spark data sources call them inside their readers.
"""

from __future__ import annotations

import json
import logging
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    fast_offset_commit_value,
)

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

_VERSION = struct.Struct(">h")

OFFSET_COMMIT = "offset_commit"
GROUP_METADATA = "group_metadata"
UNKNOWN = "unknown"
# The records of KIP-848 consumer groups (key types 3-8 and 16; see consumer_group_row).
CG_METADATA = "consumer_group_metadata"
CG_PARTITION_METADATA = "consumer_group_partition_metadata"
CG_MEMBER_METADATA = "consumer_group_member_metadata"
CG_TARGET_METADATA = "consumer_group_target_assignment_metadata"
CG_TARGET_MEMBER = "consumer_group_target_assignment_member"
CG_CURRENT_ASSIGNMENT = "consumer_group_current_member_assignment"
CG_REGULAR_EXPRESSION = "consumer_group_regular_expression"

MEMBER_DDL = (
    "struct<member_id:string,group_instance_id:string,client_id:string,client_host:string,"
    "rebalance_timeout_ms:int,session_timeout_ms:int,subscribed_topics:array<string>,"
    "assignment:array<struct<topic:string,partitions:array<int>>>,decode_error:string>"
)

# Columns of the ``consumer-offsets`` source, in order, with Spark SQL types. Timestamps are carried
# as epoch milliseconds in the rows below and become TIMESTAMP columns in Spark.
OFFSETS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("log_partition", "int"),
    ("log_offset", "bigint"),
    ("record_time", "timestamp"),
    ("record_type", "string"),
    ("key_version", "int"),
    ("value_version", "int"),
    ("tombstone", "boolean"),
    ("group_id", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("committed_offset", "bigint"),
    ("leader_epoch", "int"),
    ("metadata", "string"),
    ("commit_time", "timestamp"),
    ("expire_time", "timestamp"),
    ("protocol_type", "string"),
    ("generation", "int"),
    ("protocol", "string"),
    ("leader", "string"),
    ("state_time", "timestamp"),
    ("members", f"array<{MEMBER_DDL}>"),
    ("decode_error", "string"),
    ("corrupt", "boolean"),
)

# The JSON fields of a ``__group_events`` value (GroupEvent.to_json()), with Spark SQL types.
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("time_ms", "bigint"),
    ("group_id", "string"),
    ("generation", "int"),
    ("type", "string"),
    ("from_state", "string"),
    ("to_state", "string"),
    ("reason", "string"),
    ("member_id", "string"),
    ("group_instance_id", "string"),
    ("client_id", "string"),
    ("client_host", "string"),
    ("client_reason", "string"),
    ("protocol_type", "string"),
    ("protocol_name", "string"),
    ("member_count", "int"),
)


def ddl(columns: Iterable[tuple[str, str]]) -> str:
    return ", ".join(f"`{name}` {typ}" for name, typ in columns)


def _version(data: bytes | None) -> int | None:
    if data is None or len(data) < 2:
        return None
    return int(_VERSION.unpack_from(data, 0)[0])


def member_row(member: MemberMetadataRecord, protocol_type: str) -> dict[str, Any]:
    """One member of a GroupMetadata value; subscription/assignment decoded for "consumer" groups."""
    topics: list[str] | None = None
    assignment: list[dict[str, Any]] | None = None
    error: str | None = None
    if protocol_type == "consumer":
        # imported here: the consumer-protocol schemas cost ~0.25 s to import, paid by every Spark
        # Python process (data source planners, workers) that imports this module otherwise
        from groupcoord.formats.consumer_protocol import decode_assignment, decode_subscription

        try:
            topics = list(decode_subscription(member.subscription).topics) if member.subscription else []
            if member.assignment:
                decoded = decode_assignment(member.assignment)
                assignment = [
                    {"topic": topic, "partitions": sorted(parts)} for topic, parts in decoded.partitions
                ]
                assignment.sort(key=lambda a: a["topic"])
            else:
                assignment = []
        except ValueError as exc:
            error = f"consumer protocol: {exc}"
    return {
        "member_id": member.member_id,
        "group_instance_id": member.group_instance_id,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "rebalance_timeout_ms": member.rebalance_timeout,
        "session_timeout_ms": member.session_timeout,
        "subscribed_topics": topics,
        "assignment": assignment,
        "decode_error": error,
    }


def _empty_row(log_partition: int, log_offset: int, record_time_ms: int) -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name, _ in OFFSETS_COLUMNS}
    row["log_partition"] = log_partition
    row["log_offset"] = log_offset
    row["record_time"] = record_time_ms
    row["tombstone"] = False
    row["corrupt"] = False
    return row


def offsets_record_row(
    log_partition: int,
    log_offset: int,
    record_time_ms: int,
    key: bytes | None,
    value: bytes | None,
) -> dict[str, Any]:
    """Decode one ``__consumer_offsets`` record into a row of :data:`OFFSETS_COLUMNS`.

    Offset commits and group metadata of every key/value version are decoded; a null value is a
    tombstone (``tombstone=True``, the key's columns filled); anything undecodable becomes
    ``record_type="unknown"`` with ``decode_error`` set instead of raising.
    """
    row = _empty_row(log_partition, log_offset, record_time_ms)
    row["key_version"] = _version(key)
    row["value_version"] = _version(value)
    row["tombstone"] = value is None
    if key is None:
        row["record_type"] = UNKNOWN
        row["decode_error"] = "record without key"
        return row
    try:
        decoded_key = decode_key(key)
    except ValueError as exc:
        row["record_type"] = UNKNOWN
        row["decode_error"] = f"key: {exc}"
        return row
    if isinstance(decoded_key, OffsetCommitKey):
        row["record_type"] = OFFSET_COMMIT
        row["group_id"] = decoded_key.group
        row["topic"] = decoded_key.topic
        row["partition"] = decoded_key.partition
    elif isinstance(decoded_key, GroupMetadataKey):
        row["record_type"] = GROUP_METADATA
        row["group_id"] = decoded_key.group
    else:
        return consumer_group_row(row, key, value)
    if value is None:
        return row
    try:
        decoded = decode_value(decoded_key, value)
    except ValueError as exc:
        row["decode_error"] = f"value: {exc}"
        return row
    if isinstance(decoded, OffsetCommitValue):
        row["committed_offset"] = decoded.offset
        row["leader_epoch"] = decoded.leader_epoch
        row["metadata"] = decoded.metadata
        row["commit_time"] = decoded.commit_timestamp
        row["expire_time"] = decoded.expire_timestamp
    elif isinstance(decoded, GroupMetadataValue):
        row["protocol_type"] = decoded.protocol_type
        row["generation"] = decoded.generation
        row["protocol"] = decoded.protocol
        row["leader"] = decoded.leader
        row["state_time"] = decoded.current_state_timestamp
        row["members"] = [member_row(m, decoded.protocol_type) for m in decoded.members]
    return row


def _cg_assignment(assignment: Any) -> list[dict[str, Any]]:
    """A consumer-group record's assignment (topic id -> partitions) as ``assignment`` structs; the
    records name topics by id only, so ``topic`` is the topic id's text."""
    return [
        {"topic": str(topic_id), "partitions": sorted(int(p) for p in parts)}
        for topic_id, parts in sorted(assignment.items(), key=lambda kv: str(kv[0]))
    ]


def _cg_member(member_id: str, **fields: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "member_id": member_id,
        "group_instance_id": None,
        "client_id": None,
        "client_host": None,
        "rebalance_timeout_ms": None,
        "session_timeout_ms": None,
        "subscribed_topics": None,
        "assignment": None,
        "decode_error": None,
    }
    m.update(fields)
    return m


def consumer_group_row(row: dict[str, Any], key: bytes, value: bytes | None) -> dict[str, Any]:
    """``row`` filled from a KIP-848 consumer-group record (the coordinator's codec,
    ``coordinator.consumer.records``), in the columns group metadata uses:

    * ConsumerGroupMetadata: ``generation`` = the group epoch;
    * ConsumerGroupTargetAssignmentMetadata: ``generation`` = the target assignment epoch;
    * ConsumerGroupTargetAssignmentMember: ``members`` = that member with its target ``assignment``;
    * ConsumerGroupCurrentMemberAssignment: ``generation`` = the member epoch, ``members`` = that
      member with its assigned partitions (``assignment``);
    * ConsumerGroupMemberMetadata: ``members`` = that member's client id, host, instance id,
      rebalance timeout and subscribed topic names;
    * ConsumerGroupPartitionMetadata and ConsumerGroupRegularExpression: the group id only.

    ``protocol_type`` is ``consumer``; a member record's member id is in ``leader`` too (so a
    tombstone, which has no members, still names its member). Any other key stays ``unknown``.
    """
    # imported here, as the consumer protocol's schemas: only the few non-commit records need it
    from groupcoord.coordinator.consumer import records as cg

    try:
        k = cg.decode_key(key)
    except ValueError as exc:
        row["record_type"] = UNKNOWN
        row["decode_error"] = f"key: {exc}"
        return row
    kinds: dict[type, str] = {
        cg.ConsumerGroupMetadataKey: CG_METADATA,
        cg.ConsumerGroupPartitionMetadataKey: CG_PARTITION_METADATA,
        cg.ConsumerGroupMemberMetadataKey: CG_MEMBER_METADATA,
        cg.ConsumerGroupTargetAssignmentMetadataKey: CG_TARGET_METADATA,
        cg.ConsumerGroupTargetAssignmentMemberKey: CG_TARGET_MEMBER,
        cg.ConsumerGroupCurrentMemberAssignmentKey: CG_CURRENT_ASSIGNMENT,
        cg.ConsumerGroupRegularExpressionKey: CG_REGULAR_EXPRESSION,
    }
    if k is None or type(k) not in kinds:
        row["record_type"] = UNKNOWN
        return row
    row["record_type"] = kinds[type(k)]
    row["group_id"] = k.group_id
    row["protocol_type"] = "consumer"
    member_id = getattr(k, "member_id", None)
    row["leader"] = member_id
    if value is None:
        return row
    try:
        v = cg.decode_value(k, value)
    except ValueError as exc:
        row["decode_error"] = f"value: {exc}"
        return row
    if isinstance(v, cg.ConsumerGroupMetadataValue):
        row["generation"] = v.epoch
    elif isinstance(v, cg.ConsumerGroupTargetAssignmentMetadataValue):
        row["generation"] = v.assignment_epoch
    elif isinstance(v, cg.ConsumerGroupTargetAssignmentMemberValue) and member_id is not None:
        row["members"] = [_cg_member(member_id, assignment=_cg_assignment(v.topic_partitions))]
    elif isinstance(v, cg.ConsumerGroupCurrentMemberAssignmentValue) and member_id is not None:
        row["generation"] = v.member_epoch
        row["members"] = [_cg_member(member_id, assignment=_cg_assignment(v.assigned_partitions))]
    elif isinstance(v, cg.ConsumerGroupMemberMetadataValue) and member_id is not None:
        row["members"] = [
            _cg_member(
                member_id,
                group_instance_id=v.instance_id,
                client_id=v.client_id,
                client_host=v.client_host,
                rebalance_timeout_ms=v.rebalance_timeout_ms,
                subscribed_topics=list(v.subscribed_topic_names),
            )
        ]
    return row


def corrupt_row(log_partition: int, next_offset: int, reason: str) -> dict[str, Any]:
    """The row that marks where a corrupt or torn tail stopped the read of a segment."""
    row = _empty_row(log_partition, next_offset, 0)
    row["record_time"] = None
    row["record_type"] = UNKNOWN
    row["corrupt"] = True
    row["decode_error"] = reason
    return row


@dataclass(slots=True)
class ColumnBuffer:
    """Rows accumulated column by column (what Arrow wants), flushed every ``batch_rows`` rows."""

    names: tuple[str, ...]
    columns: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.columns = {name: [] for name in self.names}

    def __len__(self) -> int:
        return len(self.columns[self.names[0]])

    def add(self, row: dict[str, Any]) -> None:
        for name in self.names:
            self.columns[name].append(row[name])

    def take(self) -> dict[str, list[Any]]:
        out = self.columns
        self.columns = {name: [] for name in self.names}
        return out


_KEY_CACHE_LIMIT = 200_000


class OffsetsColumns:
    """Decoded ``__consumer_offsets`` records accumulated as columns of :data:`OFFSETS_COLUMNS`.

    Offset commits (the bulk of the topic) take a fast path: keys are decoded once per distinct key
    bytes (a group commits the same partitions over and over) and v1/v3 values are read with
    :func:`fast_offset_commit_value`; everything else goes through :func:`offsets_record_row`.
    """

    names = tuple(name for name, _ in OFFSETS_COLUMNS)

    def __init__(self) -> None:
        self._keys: dict[bytes, tuple[int, str, str, int] | None] = {}
        self.columns: dict[str, list[Any]] = {}
        self._reset()

    def _reset(self) -> None:
        self.columns = {name: [] for name in self.names}
        self._n = 0
        self._slow = 0

    def take_with_nulls(self) -> tuple[dict[str, list[Any]], frozenset[str] | None]:
        """The columns, and the names known to be all null (every row took the commit fast path)."""
        all_null = _ALL_NULL_WHEN_FAST if self._slow == 0 else None
        return self.take(), all_null

    def __len__(self) -> int:
        return self._n

    def take(self) -> dict[str, list[Any]]:
        out = self.columns
        self._reset()
        return out

    def _commit_key(self, key: bytes) -> tuple[int, str, str, int] | None:
        info = self._keys.get(key, False)
        if info is not False:
            return info  # type: ignore[return-value]
        result: tuple[int, str, str, int] | None = None
        try:
            decoded = decode_key(key)
        except ValueError:
            decoded = None
        if isinstance(decoded, OffsetCommitKey):
            result = (int(_VERSION.unpack_from(key, 0)[0]), decoded.group, decoded.topic, decoded.partition)
        if len(self._keys) >= _KEY_CACHE_LIMIT:
            self._keys.clear()
        self._keys[key] = result
        return result

    def add(
        self, log_partition: int, log_offset: int, record_time_ms: int, key: bytes | None, value: bytes | None
    ) -> None:
        if key is not None and value is not None:
            k = self._commit_key(key)
            if k is not None:
                try:
                    v = fast_offset_commit_value(value)
                except ValueError:  # e.g. metadata that is not UTF-8: the full codec reports it
                    v = None
                if v is not None:
                    c = self.columns
                    c["log_partition"].append(log_partition)
                    c["log_offset"].append(log_offset)
                    c["record_time"].append(record_time_ms)
                    c["record_type"].append(OFFSET_COMMIT)
                    c["key_version"].append(k[0])
                    c["value_version"].append(v[0])
                    c["tombstone"].append(False)
                    c["group_id"].append(k[1])
                    c["topic"].append(k[2])
                    c["partition"].append(k[3])
                    c["committed_offset"].append(v[1])
                    c["leader_epoch"].append(v[2])
                    c["metadata"].append(v[3])
                    c["commit_time"].append(v[4])
                    c["expire_time"].append(v[5])
                    for name in _GROUP_ONLY:
                        c[name].append(None)
                    c["decode_error"].append(None)
                    c["corrupt"].append(False)
                    self._n += 1
                    return
        self.add_row(offsets_record_row(log_partition, log_offset, record_time_ms, key, value))

    def add_row(self, row: dict[str, Any]) -> None:
        for name in self.names:
            self.columns[name].append(row[name])
        self._n += 1
        self._slow += 1


_GROUP_ONLY = ("protocol_type", "generation", "protocol", "leader", "state_time", "members")
_ALL_NULL_WHEN_FAST = frozenset((*_GROUP_ONLY, "decode_error"))


def group_event_row(value: bytes | None) -> dict[str, Any] | None:
    """One ``__group_events`` value (GroupEvent JSON) as a row of :data:`EVENT_COLUMNS`; None when
    the value is null or not a JSON object."""
    if value is None:
        return None
    try:
        obj = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        log.warning("undecodable group event value (%d bytes)", len(value))
        return None
    if not isinstance(obj, dict):
        return None
    return {name: obj.get(name) for name, _ in EVENT_COLUMNS}


def to_record_batch(
    columns: dict[str, list[Any]], schema: pa.Schema, all_none: frozenset[str] | None = None
) -> pa.RecordBatch:
    """Build an Arrow batch whose schema equals ``schema`` exactly (Spark checks type and nullability).
    Timestamp columns arrive as epoch milliseconds."""
    import pyarrow as pa

    arrays = []
    for f in schema:
        values = columns[f.name]
        if all_none is not None and f.name in all_none:
            arrays.append(pa.nulls(len(values), type=f.type))
            continue
        if pa.types.is_timestamp(f.type):
            arrays.append(pa.array(values, type=pa.int64()).cast(pa.timestamp("ms", tz="UTC")).cast(f.type))
        else:
            arrays.append(pa.array(values, type=f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
