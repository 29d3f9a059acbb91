"""Hand-written codecs for the most frequent group requests: OffsetCommit, Heartbeat,
JoinGroup and ConsumerGroupHeartbeat (KIP-848; its answer too).

A stable consumer sends little else, and with many small groups these are most of the
broker's work (JoinGroup: one per member per classic rebalance). The general path
(:func:`groupcoord.protocol.guard.check_request`, a Python walk of the schema, then kio's
reader building a frozen entity of checked primitive types) costs more than the coordinator's
own handling of a single-partition commit, and ~13 µs of a JoinGroup's ~55. Here each version is
read in one pass with ``struct``:

* the same bytes are accepted and rejected as by that general path: every count and length is
  checked against the bytes that remain before anything is read, a null is accepted only where
  the schema allows it, strings must be UTF-8, a tagged field is refused (none of these requests
  has one, and kio refuses a tag it does not know), and anything wrong raises :class:`MalformedRequestError`
  (the connection closes with one log line);
* an OffsetCommit is read straight into the coordinator's request
  (:class:`~groupcoord.protocol.group_messages.OffsetCommitRequest`, its topics and partitions),
  with the values the handler used to build from kio's entity: the generation, the retention in
  milliseconds (-1 where the version has none), a negative or absent leader epoch as None, the
  version it came in. The handler hands it to the coordinator as it is when every topic is
  known. Heartbeat and ConsumerGroupHeartbeat give a named tuple with the field names of kio's
  entity for that version and the same values; fields a version lacks are present with the
  value a handler's ``getattr(request, name, default)`` would give (``group_instance_id=None``,
  ``subscribed_topic_regex=None``). JoinGroup gives :class:`JoinGroupIn`: kio's field names
  except the timeouts, already whole milliseconds (``session_timeout_ms``,
  ``rebalance_timeout_ms``), which is what the handler builds the coordinator's request from
  (no ``ms`` of kio's timedeltas). ``tests/protocol/test_hot_codecs.py`` compares both paths
  over generated requests, truncations and corruptions.

:func:`offset_commit_response` writes an OffsetCommit answer body byte for byte as kio's writer
does (same test), and :func:`consumer_group_heartbeat_response` a ConsumerGroupHeartbeat one (v0
and v1 share the layout): a steady consumer-protocol member's every answer, where building kio's
entity and walking it with kio's writer cost more than the coordinator's handling.
:func:`join_group_response` (v0-9) and :func:`sync_group_response` (v0-5) write the answers of a
classic rebalance with :class:`~groupcoord.protocol.primitives.WireWriter`: a rebalance answers
every member's JoinGroup and SyncGroup at once, and the leader's JoinGroup answer lists every
member with its subscription, where kio's entities and generic writer are much slower
(docs/benchmarks.md); ``tests/protocol/test_group_responses.py`` checks them against kio's writer
at every version (from JoinGroup v6 and SyncGroup v4 the flexible layout: compact lengths and an
empty tagged-field section after every structure).
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from groupcoord.protocol.framing import MalformedRequestError
from groupcoord.protocol.group_messages import OffsetCommitPartition, OffsetCommitRequest, OffsetCommitTopic
from groupcoord.protocol.guard import _Bad, _uvarint  # one varint reader: refused alike
from groupcoord.protocol.primitives import WireWriter

__all__ = [
    "ConsumerGroupHeartbeatIn",
    "ConsumerGroupHeartbeatTopicIn",
    "HeartbeatIn",
    "JoinGroupIn",
    "consumer_group_heartbeat_response",
    "hot_reader",
    "join_group_response",
    "offset_commit_response",
    "sync_group_response",
]

OFFSET_COMMIT_KEY = 8
HEARTBEAT_KEY = 12
JOIN_GROUP_KEY = 11
CONSUMER_GROUP_HEARTBEAT_KEY = 68

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I32_I64 = struct.Struct(">iq")
_I32_I64_I32 = struct.Struct(">iqi")
_I32_I16 = struct.Struct(">ih")
_I32_I32 = struct.Struct(">ii")
#: the largest millisecond count kio turns into a timedelta (microseconds within an int64)
_MAX_TIMEDELTA_MS = (2**63 - 1) // 1000


class ConsumerGroupHeartbeatTopicIn(NamedTuple):
    topic_id: uuid.UUID | None
    partitions: tuple[int, ...]


class ConsumerGroupHeartbeatIn(NamedTuple):
    """ConsumerGroupHeartbeat v0-v1 (v0 has no regex: None, as ``getattr`` gives)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout: datetime.timedelta
    subscribed_topic_names: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    topic_partitions: tuple[ConsumerGroupHeartbeatTopicIn, ...] | None


class HeartbeatIn(NamedTuple):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


# ---------------------------------------------------------------------------- primitives
def _string(buf: bytes, pos: int, end: int, nullable: bool, field: str) -> tuple[str | None, int]:
    if pos + 2 > end:
        raise _Bad("truncated")
    (length,) = _I16.unpack_from(buf, pos)
    pos += 2
    if length < 0:
        if length < -1:
            raise _Bad("negative length")
        if not nullable:
            raise _Bad(f"null string {field!r}, which the schema does not allow to be null")
        return None, pos
    stop = pos + length
    if stop > end:
        raise _Bad(f"string of {length} bytes overruns the frame")
    return buf[pos:stop].decode("utf-8"), stop


def _compact_string(buf: bytes, pos: int, end: int, nullable: bool, field: str) -> tuple[str | None, int]:
    if pos < end and buf[pos] < 0x80:  # one-byte length: almost every string
        n = buf[pos]
        pos += 1
    else:
        n, pos = _uvarint(buf, pos, end)
    if n == 0:
        if not nullable:
            raise _Bad(f"null string {field!r}, which the schema does not allow to be null")
        return None, pos
    stop = pos + n - 1
    if stop > end:
        raise _Bad(f"string of {n - 1} bytes overruns the frame")
    return buf[pos:stop].decode("utf-8"), stop


def _count(buf: bytes, pos: int, end: int, flexible: bool, field: str) -> tuple[int, int]:
    """An array's element count (arrays here are never nullable)."""
    if flexible:
        if pos < end and buf[pos] < 0x80:
            n = buf[pos]
            pos += 1
        else:
            n, pos = _uvarint(buf, pos, end)
        count = n - 1
    else:
        if pos + 4 > end:
            raise _Bad("truncated")
        (count,) = _I32.unpack_from(buf, pos)
        pos += 4
    if count < 0:
        if count < -1:
            raise _Bad("negative array count")
        raise _Bad(f"null array {field!r}, which the schema does not allow to be null")
    if count > end - pos:
        raise _Bad(f"array of {count} elements overruns the {end - pos} remaining bytes")
    return count, pos


def _skip_tags(buf: bytes, pos: int, end: int) -> int:
    if pos < end and buf[pos] == 0:  # no tagged fields: almost always
        return pos + 1
    count, pos = _uvarint(buf, pos, end)
    if count > end - pos:
        raise _Bad("tagged field count overruns the frame")
    if count:
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        if pos + size > end:
            raise _Bad("tagged field overruns the frame")
        # None of these requests has a tagged field at any version, and the general path (kio's
        # reader) refuses a tag it does not know, so this one does too: the same bytes are
        # refused on both paths. (Kafka's readers keep unknown tags instead; see
        # docs/coordinator-scenarios.md, "Unknown tagged fields".)
        raise _Bad(f"unknown tagged field tag: {tag}")
    return pos


def _fixed(buf: bytes, pos: int, end: int, s: struct.Struct) -> tuple[Any, ...]:
    if pos + s.size > end:
        raise _Bad("truncated")
    return s.unpack_from(buf, pos)


_StringReader = Callable[[bytes, int, int, bool, str], tuple[str | None, int]]


def _member_fields(
    buf: bytes, pos: int, end: int, string: _StringReader, has_instance: bool
) -> tuple[str | None, int, str | None, str | None, int]:
    """The fields OffsetCommit and Heartbeat both open with: group id, generation, member id
    and (from the version that has it) group instance id; then the position after them."""
    group_id, pos = string(buf, pos, end, False, "group_id")
    (generation,) = _fixed(buf, pos, end, _I32)
    pos += 4
    member_id, pos = string(buf, pos, end, False, "member_id")
    instance: str | None = None
    if has_instance:
        instance, pos = string(buf, pos, end, True, "group_instance_id")
    return group_id, generation, member_id, instance, pos


# ---------------------------------------------------------------------------- OffsetCommit
def _offset_commit(version: int) -> Callable[[bytes, int], OffsetCommitRequest]:
    flexible = version >= 8
    has_retention = version <= 4
    has_epoch = version >= 6
    has_instance = version >= 7
    string = _compact_string if flexible else _string
    part_struct = _I32_I64_I32 if has_epoch else _I32_I64

    if flexible:
        return _flexible_commit(version)

    def read(buf: bytes, pos: int) -> OffsetCommitRequest:
        end = len(buf)
        group_id, generation, member_id, instance, pos = _member_fields(buf, pos, end, string, has_instance)
        retention_ms = -1  # "none": the coordinator's offsets.retention.minutes applies
        if has_retention:
            (retention_ms,) = _fixed(buf, pos, end, _I64)
            pos += 8
            if not -_MAX_TIMEDELTA_MS <= retention_ms <= _MAX_TIMEDELTA_MS:
                raise _Bad("timedelta milliseconds overflow")  # kio refuses these too
        n_topics, pos = _count(buf, pos, end, flexible, "topics")
        topics = []
        for _ in range(n_topics):
            name, pos = string(buf, pos, end, False, "name")
            n_parts, pos = _count(buf, pos, end, flexible, "partitions")
            parts = []
            for _ in range(n_parts):
                fields = _fixed(buf, pos, end, part_struct)
                pos += part_struct.size
                metadata, pos = string(buf, pos, end, True, "committed_metadata")
                epoch = fields[2] if has_epoch else -1
                parts.append(
                    OffsetCommitPartition(
                        partition=fields[0],
                        offset=fields[1],
                        leader_epoch=None if epoch < 0 else epoch,
                        metadata=metadata,
                    )
                )
            topics.append(OffsetCommitTopic(name=name, partitions=tuple(parts)))  # type: ignore[arg-type]
        return OffsetCommitRequest(
            group_id=group_id,  # type: ignore[arg-type]
            generation_id=generation,
            member_id=member_id,  # type: ignore[arg-type]
            group_instance_id=instance,
            retention_time_ms=retention_ms,
            topics=tuple(topics),
            version=version,
        )

    return read


#: A named tuple made from a plain one without its generated ``__new__`` (a Python function):
#: the same object, built by ``tuple.__new__`` directly.
_new: Callable[..., Any] = tuple.__new__


def _flexible_member(buf: bytes, pos: int, end: int) -> tuple[str | None, int, str | None, str | None, int]:
    """Group id, generation, member id and instance id of a flexible OffsetCommit (v8+) or
    Heartbeat (v4), the first fields of both, and the position after them."""
    group_id, pos = _compact_string(buf, pos, end, False, "group_id")
    if pos + 4 > end:
        raise _Bad("truncated")
    (generation,) = _I32.unpack_from(buf, pos)
    pos += 4
    member_id, pos = _compact_string(buf, pos, end, False, "member_id")
    instance, pos = _compact_string(buf, pos, end, True, "group_instance_id")
    return group_id, generation, member_id, instance, pos


def _flexible_commit(version: int) -> Callable[[bytes, int], OffsetCommitRequest]:
    """The reader of OffsetCommit v8-9 (flexible, with instance id and leader epoch, no
    retention).

    As the general reader above, with the loops written for the flexible layout and the usual
    empty tagged fields skipped inline; every field goes through the same helpers as there, so
    the bytes accepted and refused (and the values read) are the same.
    """

    def read_flexible_commit(buf: bytes, pos: int) -> OffsetCommitRequest:
        end = len(buf)
        group_id, generation, member_id, instance, pos = _flexible_member(buf, pos, end)
        n_topics, pos = _count(buf, pos, end, True, "topics")
        topics = []
        part_struct = _I32_I64_I32
        for _ in range(n_topics):
            name, pos = _compact_string(buf, pos, end, False, "name")
            n_parts, pos = _count(buf, pos, end, True, "partitions")
            parts = []
            for _ in range(n_parts):
                if pos + 16 > end:
                    raise _Bad("truncated")
                index, offset, epoch = part_struct.unpack_from(buf, pos)
                pos += 16
                metadata, pos = _compact_string(buf, pos, end, True, "committed_metadata")
                if pos < end and buf[pos] == 0:
                    pos += 1
                else:
                    pos = _skip_tags(buf, pos, end)
                parts.append(
                    OffsetCommitPartition(
                        partition=index,
                        offset=offset,
                        leader_epoch=None if epoch < 0 else epoch,
                        metadata=metadata,
                    )
                )
            if pos < end and buf[pos] == 0:
                pos += 1
            else:
                pos = _skip_tags(buf, pos, end)
            topics.append(OffsetCommitTopic(name=name, partitions=tuple(parts)))  # type: ignore[arg-type]
        if not (pos < end and buf[pos] == 0):
            _skip_tags(buf, pos, end)
        return OffsetCommitRequest(
            group_id=group_id,  # type: ignore[arg-type]
            generation_id=generation,
            member_id=member_id,  # type: ignore[arg-type]
            group_instance_id=instance,
            retention_time_ms=-1,
            topics=tuple(topics),
            version=version,
        )

    return read_flexible_commit


# ---------------------------------------------------------------------------- Heartbeat
def _read_flexible_heartbeat(buf: bytes, pos: int) -> HeartbeatIn:
    """Heartbeat v4, written for the flexible layout (see :func:`_flexible_commit`)."""
    end = len(buf)
    group_id, generation, member_id, instance, pos = _flexible_member(buf, pos, end)
    if not (pos < end and buf[pos] == 0):
        _skip_tags(buf, pos, end)
    return _new(HeartbeatIn, (group_id, generation, member_id, instance))  # type: ignore[no-any-return]


def _heartbeat(version: int) -> Callable[[bytes, int], HeartbeatIn]:
    flexible = version >= 4
    has_instance = version >= 3
    string = _compact_string if flexible else _string
    if flexible:
        return _read_flexible_heartbeat

    def read(buf: bytes, pos: int) -> HeartbeatIn:
        end = len(buf)
        group_id, generation, member_id, instance, pos = _member_fields(buf, pos, end, string, has_instance)
        if flexible:
            pos = _skip_tags(buf, pos, end)
        return HeartbeatIn(group_id, generation, member_id, instance)  # type: ignore[arg-type]

    return read


# ---------------------------------------------------------------------------- JoinGroup
class JoinGroupIn(NamedTuple):
    """JoinGroup v0-v9 as the handler needs it: the timeouts in whole milliseconds (v0 has no
    rebalance timeout: the session timeout, as Kafka's ``KafkaApis`` takes it), the protocols as
    (name, metadata) pairs, and None for the instance id (before v5) and the reason (before
    v8). The fields the authorization guard and the error answers read (``group_id``,
    ``member_id``, ``group_instance_id``, ``protocol_type``) have kio's names."""

    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    reason: str | None


def _bytes(buf: bytes, pos: int, end: int) -> tuple[bytes, int]:
    """A non-nullable BYTES field (int32 length)."""
    if pos + 4 > end:
        raise _Bad("truncated")
    (length,) = _I32.unpack_from(buf, pos)
    pos += 4
    if length < 0:
        if length < -1:
            raise _Bad("negative length")
        raise _Bad("null bytes 'metadata', which the schema does not allow to be null")
    stop = pos + length
    if stop > end:
        raise _Bad(f"bytes of {length} overrun the frame")
    return buf[pos:stop], stop


def _compact_bytes(buf: bytes, pos: int, end: int) -> tuple[bytes, int]:
    """A non-nullable COMPACT_BYTES field (unsigned varint length + 1)."""
    if pos < end and buf[pos] < 0x80:
        n = buf[pos]
        pos += 1
    else:
        n, pos = _uvarint(buf, pos, end)
    if n == 0:
        raise _Bad("null bytes 'metadata', which the schema does not allow to be null")
    stop = pos + n - 1
    if stop > end:
        raise _Bad(f"bytes of {n - 1} overrun the frame")
    return buf[pos:stop], stop


def _join_group(version: int) -> Callable[[bytes, int], JoinGroupIn]:
    """JoinGroup v0-v5 (classic layout; v1 adds the rebalance timeout, v5 the instance id), or
    v6-v9 from :func:`_read_flexible_join` (compact forms, tagged fields; v8 adds the reason).

    Hand-written as the readers above, for the same reason: a classic rebalance sends one per
    member, and the general path (the guard's schema walk, kio's reader, then the timedeltas
    turned back into milliseconds) cost ~13 µs of the ~55 µs of broker CPU a JoinGroup took
    (``bench/request_path_bench.py``, pure Python decode of a v9 request).
    """
    if version >= 6:
        return _flexible_join(version)
    has_rebalance = version >= 1
    has_instance = version >= 5

    def read_join(buf: bytes, pos: int) -> JoinGroupIn:
        end = len(buf)
        group_id, pos = _string(buf, pos, end, False, "group_id")
        if has_rebalance:
            session_ms, rebalance_ms = _fixed(buf, pos, end, _I32_I32)
            pos += 8
        else:
            (session_ms,) = _fixed(buf, pos, end, _I32)
            rebalance_ms = session_ms
            pos += 4
        member_id, pos = _string(buf, pos, end, False, "member_id")
        instance: str | None = None
        if has_instance:
            instance, pos = _string(buf, pos, end, True, "group_instance_id")
        protocol_type, pos = _string(buf, pos, end, False, "protocol_type")
        count, pos = _count(buf, pos, end, False, "protocols")
        protocols = []
        for _ in range(count):
            name, pos = _string(buf, pos, end, False, "name")
            metadata, pos = _bytes(buf, pos, end)
            protocols.append((name, metadata))
        return _new(  # type: ignore[no-any-return]
            JoinGroupIn,
            (group_id, session_ms, rebalance_ms, member_id, instance, protocol_type, tuple(protocols), None),
        )

    return read_join


def _flexible_join(version: int) -> Callable[[bytes, int], JoinGroupIn]:
    has_reason = version >= 8

    def read_flexible_join(buf: bytes, pos: int) -> JoinGroupIn:
        end = len(buf)
        group_id, pos = _compact_string(buf, pos, end, False, "group_id")
        if pos + 8 > end:
            raise _Bad("truncated")
        session_ms, rebalance_ms = _I32_I32.unpack_from(buf, pos)
        pos += 8
        member_id, pos = _compact_string(buf, pos, end, False, "member_id")
        instance, pos = _compact_string(buf, pos, end, True, "group_instance_id")
        protocol_type, pos = _compact_string(buf, pos, end, False, "protocol_type")
        count, pos = _count(buf, pos, end, True, "protocols")
        protocols = []
        for _ in range(count):
            name, pos = _compact_string(buf, pos, end, False, "name")
            metadata, pos = _compact_bytes(buf, pos, end)
            if pos < end and buf[pos] == 0:
                pos += 1
            else:
                pos = _skip_tags(buf, pos, end)
            protocols.append((name, metadata))
        why: str | None = None
        if has_reason:
            why, pos = _compact_string(buf, pos, end, True, "reason")
        if not (pos < end and buf[pos] == 0):
            _skip_tags(buf, pos, end)
        return _new(  # type: ignore[no-any-return]
            JoinGroupIn,
            (group_id, session_ms, rebalance_ms, member_id, instance, protocol_type, tuple(protocols), why),
        )

    return read_flexible_join


def _nullable_count(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """A compact nullable array's element count, -1 for null."""
    if pos < end and buf[pos] < 0x80:
        n = buf[pos]
        pos += 1
    else:
        n, pos = _uvarint(buf, pos, end)
    count = n - 1
    if count > end - pos:
        raise _Bad(f"array of {count} elements overruns the {end - pos} remaining bytes")
    return count, pos


_ZERO_UUID = bytes(16)


def _consumer_group_heartbeat(version: int) -> Callable[[bytes, int], ConsumerGroupHeartbeatIn]:
    """ConsumerGroupHeartbeat v0 and v1 (flexible; v1 adds SubscribedTopicRegex). A zero topic
    id reads as None, as kio's reader gives it."""
    has_regex = version >= 1

    def read(buf: bytes, pos: int) -> ConsumerGroupHeartbeatIn:
        end = len(buf)
        group_id, pos = _compact_string(buf, pos, end, False, "group_id")
        member_id, pos = _compact_string(buf, pos, end, False, "member_id")
        (epoch,) = _fixed(buf, pos, end, _I32)
        pos += 4
        instance_id, pos = _compact_string(buf, pos, end, True, "instance_id")
        rack_id, pos = _compact_string(buf, pos, end, True, "rack_id")
        (timeout_ms,) = _fixed(buf, pos, end, _I32)
        pos += 4
        count, pos = _nullable_count(buf, pos, end)
        names: tuple[str, ...] | None = None
        if count >= 0:
            read_names = []
            for _ in range(count):
                name, pos = _compact_string(buf, pos, end, False, "subscribed_topic_names")
                read_names.append(name)
            names = tuple(read_names)  # type: ignore[arg-type]
        regex: str | None = None
        if has_regex:
            regex, pos = _compact_string(buf, pos, end, True, "subscribed_topic_regex")
        assignor, pos = _compact_string(buf, pos, end, True, "server_assignor")
        count, pos = _nullable_count(buf, pos, end)
        topics: tuple[ConsumerGroupHeartbeatTopicIn, ...] | None = None
        if count >= 0:
            read_topics = []
            for _ in range(count):
                if pos + 16 > end:
                    raise _Bad("truncated")
                raw = buf[pos : pos + 16]
                pos += 16
                n, pos = _count(buf, pos, end, True, "partitions")
                if pos + 4 * n > end:
                    raise _Bad("truncated")
                parts = struct.unpack_from(f">{n}i", buf, pos)
                pos += 4 * n
                pos = _skip_tags(buf, pos, end)
                topic_id = None if raw == _ZERO_UUID else uuid.UUID(bytes=bytes(raw))
                read_topics.append(ConsumerGroupHeartbeatTopicIn(topic_id, parts))
            topics = tuple(read_topics)
        _skip_tags(buf, pos, end)
        return ConsumerGroupHeartbeatIn(
            group_id,  # type: ignore[arg-type]
            member_id,  # type: ignore[arg-type]
            epoch,
            instance_id,
            rack_id,
            datetime.timedelta(milliseconds=timeout_ms),
            names,
            regex,
            assignor,
            topics,
        )

    return read


_READERS: dict[tuple[int, int], Callable[[bytes, int], Any]] = {
    **{(OFFSET_COMMIT_KEY, v): _offset_commit(v) for v in range(2, 10)},
    **{(HEARTBEAT_KEY, v): _heartbeat(v) for v in range(0, 5)},
    **{(CONSUMER_GROUP_HEARTBEAT_KEY, v): _consumer_group_heartbeat(v) for v in range(0, 2)},
    **{(JOIN_GROUP_KEY, v): _join_group(v) for v in range(0, 10)},
}


def hot_reader(api_key: int, version: int, name: str) -> Callable[[bytes, int], Any] | None:
    """The hand-written reader of one (key, version), or None where the general path serves.

    The reader takes the frame and the body's offset and raises
    :class:`MalformedRequestError` for anything the general path would refuse.
    """
    read = _READERS.get((api_key, version))
    if read is None:
        return None

    def checked(frame: bytes, offset: int) -> Any:
        try:
            return read(frame, offset)
        except (_Bad, UnicodeDecodeError, OverflowError) as exc:
            raise MalformedRequestError(f"bad {name} v{version} body: {exc}") from None

    return checked


# ---------------------------------------------------------------------------- answers
def offset_commit_response(version: int, topics: Iterable[tuple[str, Iterable[tuple[int, int]]]]) -> bytes:
    """The body of an OffsetCommit answer (throttle time 0): ``(topic, [(partition, error code)])``."""
    topics = list(topics)
    if version >= 8 and len(topics) == 1:
        name, parts = topics[0]
        plist = list(parts)
        raw = name.encode("utf-8")
        if len(plist) == 1 and len(raw) < 0x7F:  # one partition of one topic: every short count is one byte
            index, code = plist[0]
            return b"".join(
                (b"\0\0\0\0\x02", bytes((len(raw) + 1,)), raw, b"\x02", _I32_I16.pack(index, code), b"\0\0\0")
            )
        topics = [(name, plist)]
    out = bytearray()
    if version >= 8:
        out += b"\0\0\0\0"
        out += _uvarint_bytes(len(topics) + 1)
        for name, parts in topics:
            raw = name.encode("utf-8")
            out += _uvarint_bytes(len(raw) + 1)
            out += raw
            plist = list(parts)
            out += _uvarint_bytes(len(plist) + 1)
            for index, code in plist:
                out += _I32_I16.pack(index, code)
                out.append(0)
            out.append(0)
        out.append(0)
        return bytes(out)
    if version >= 3:
        out += b"\0\0\0\0"
    out += _I32.pack(len(topics))
    for name, parts in topics:
        raw = name.encode("utf-8")
        out += _I16.pack(len(raw))
        out += raw
        plist = list(parts)
        out += _I32.pack(len(plist))
        for index, code in plist:
            out += _I32_I16.pack(index, code)
    return bytes(out)


def consumer_group_heartbeat_response(
    error_code: int,
    error_message: str | None,
    member_id: str | None,
    member_epoch: int,
    heartbeat_interval_ms: int,
    assignment: Sequence[tuple[uuid.UUID, Sequence[int]]] | None,
    throttle_time_ms: int = 0,
) -> bytes:
    """The body of a ConsumerGroupHeartbeat answer, v0 or v1 (flexible): ``assignment`` is None
    (the nullable struct absent) or its topics with their partitions, in the order to write them."""
    out = bytearray(_I32.pack(throttle_time_ms))
    out += _I16.pack(error_code)
    for text in (error_message, member_id):
        if text is None:
            out.append(0)
        else:
            raw = text.encode("utf-8")
            out += _uvarint_bytes(len(raw) + 1)
            out += raw
    out += _I32_I32.pack(member_epoch, heartbeat_interval_ms)
    if assignment is None:
        out.append(0xFF)  # a null struct: int8 -1
    else:
        out.append(1)
        out += _uvarint_bytes(len(assignment) + 1)
        for topic_id, partitions in assignment:
            out += topic_id.bytes
            out += _uvarint_bytes(len(partitions) + 1)
            for p in partitions:
                out += _I32.pack(p)
            out.append(0)  # the topic's tagged fields
        out.append(0)  # the assignment's
    out.append(0)  # the answer's
    return bytes(out)


def _uvarint_bytes(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def join_group_response(
    version: int,
    *,
    error: int,
    generation_id: int,
    protocol_type: str | None,
    protocol_name: str | None,
    leader: str,
    skip_assignment: bool,
    member_id: str,
    members: Iterable[tuple[str, str | None, bytes]],
    throttle_ms: int = 0,
) -> bytes:
    """A JoinGroup response body; ``members`` are (member id, group instance id, metadata).

    Before v7 the protocol name is not nullable (None is written as ""), and protocol type
    and skip_assignment (v9) are not in the message; the instance id is there from v5.
    """
    w = WireWriter(flexible=version >= 6)
    if version >= 2:
        w.int32(throttle_ms)
    w.int16(error)
    w.int32(generation_id)
    if version >= 7:
        w.string(protocol_type)
        w.string(protocol_name)
    else:
        w.string(protocol_name or "")
    w.string(leader)
    if version >= 9:
        w.boolean(skip_assignment)
    w.string(member_id)
    listed = list(members)
    w.array_length(len(listed))
    for mid, instance_id, metadata in listed:
        w.string(mid)
        if version >= 5:
            w.string(instance_id)
        w.bytes_(metadata)
        w.tagged_fields()
    w.tagged_fields()
    return w.getvalue()


def sync_group_response(
    version: int,
    *,
    error: int,
    protocol_type: str | None,
    protocol_name: str | None,
    assignment: bytes,
    throttle_ms: int = 0,
) -> bytes:
    """A SyncGroup response body (protocol type and name from v5)."""
    w = WireWriter(flexible=version >= 4)
    if version >= 1:
        w.int32(throttle_ms)
    w.int16(error)
    if version >= 5:
        w.string(protocol_type)
        w.string(protocol_name)
    w.bytes_(assignment)
    w.tagged_fields()
    return w.getvalue()
