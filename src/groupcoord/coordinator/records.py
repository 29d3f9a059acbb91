"""Codecs for the records the coordinator writes to ``__consumer_offsets``.

Every record is a (key, value) pair. Both halves start with a big-endian int16 version; the
key version doubles as the record type:

* key v0/v1 -> offset commit (``OffsetCommitKey``: group, topic, partition); we write v1;
* key v2    -> group metadata (``GroupMetadataKey``: group);
* key v3+   -> records of the KIP-848 and share-group coordinators, which a classic-only
  coordinator skips (:class:`UnknownKey`).

A ``None`` value is a tombstone: it deletes whatever the key names.

Value versions 0-3 use the classic encoding (int16-length strings, int32-length bytes,
int32-count arrays, length -1 for null); version 4 is the first "flexible" version
(unsigned-varint lengths offset by one, and a tagged-field section closing every struct).
We read 0-4 and write what a Kafka >= 2.3 broker writes: ``OffsetCommitValue`` v3 (v1 when
the commit carries an explicit expire timestamp) and ``GroupMetadataValue`` v3.

The layouts, field by field (versions in which each field is present):

``OffsetCommitValue``: offset int64 (0+), leaderEpoch int32 (3+, -1 = none), metadata
string (0+), commitTimestamp int64 (0+), expireTimestamp int64 (1 only, -1 = none).

``GroupMetadataValue``: protocolType string (0+), generation int32 (0+), protocol nullable
string (0+), leader nullable string (0+), currentStateTimestamp int64 (2+, -1 = none),
members array (0+) of: memberId string (0+), groupInstanceId nullable string (3+),
clientId string (0+), clientHost string (0+), rebalanceTimeout int32 (1+), sessionTimeout
int32 (0+), subscription bytes (0+), assignment bytes (0+).

Decoding is strict: truncated input, trailing bytes, negative lengths, nulls where the
schema forbids them and invalid UTF-8 all raise :class:`RecordDecodeError` (a
``ValueError``), never ``IndexError`` or ``struct.error``.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from groupcoord.protocol.primitives import WireWriter

if TYPE_CHECKING:
    from groupcoord.coordinator.group import ClassicGroup

log = logging.getLogger(__name__)

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "OFFSET_COMMIT_KEY_VERSION",
    "CoordinatorRecord",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadataRecord",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordDecodeError",
    "RecordKey",
    "RecordValue",
    "UnknownKey",
    "decode_key",
    "decode_record",
    "decode_value",
    "default_value_version",
    "encode_key",
    "encode_record",
    "encode_value",
    "encoded_size",
    "java_string_hash",
    "partition_for",
]

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
MAX_VALUE_VERSION = 4
FLEXIBLE_VALUE_VERSION = 4

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class RecordDecodeError(ValueError):
    """Bytes that are not a valid ``__consumer_offsets`` key or value."""


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(slots=True, kw_only=True, init=False, unsafe_hash=True)
class OffsetCommitValue:
    # init=False and a written-out __init__: compiled (setup.py), this __init__ is native, where
    # the one dataclasses generates stays interpreted (docs/benchmarks.md, session 5). Not frozen
    # for the same reason (a frozen __init__ sets each field through object.__setattr__); still
    # hashable by value, as before.
    offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None

    def __init__(
        self,
        *,
        offset: int,
        leader_epoch: int | None,
        metadata: str,
        commit_timestamp: int,
        expire_timestamp: int | None,
    ) -> None:
        self.offset = offset
        self.leader_epoch = leader_epoch
        self.metadata = metadata
        self.commit_timestamp = commit_timestamp
        self.expire_timestamp = expire_timestamp


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberMetadataRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int | None
    members: tuple[MemberMetadataRecord, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownKey:
    """A key whose version (record type) this coordinator does not handle (3 and above)."""

    version: int
    raw: bytes


RecordKey = OffsetCommitKey | GroupMetadataKey
RecordValue = OffsetCommitValue | GroupMetadataValue


@dataclass(slots=True, kw_only=True, init=False, unsafe_hash=True)
class CoordinatorRecord:
    # Written-out __init__, hashable by value: see OffsetCommitValue.
    key: OffsetCommitKey | GroupMetadataKey
    value: OffsetCommitValue | GroupMetadataValue | None  # None is a tombstone

    def __init__(
        self, *, key: OffsetCommitKey | GroupMetadataKey, value: OffsetCommitValue | GroupMetadataValue | None
    ) -> None:
        self.key = key
        self.value = value


# --------------------------------------------------------------------------- writer


# --------------------------------------------------------------------------- reader


class _Reader:
    __slots__ = ("_data", "_flexible", "_pos", "_what")

    def __init__(self, data: bytes, what: str) -> None:
        self._data = data
        self._pos = 0
        self._flexible = False
        self._what = what

    def fail(self, msg: str) -> RecordDecodeError:
        return RecordDecodeError(f"malformed {self._what} at byte {self._pos}: {msg}")

    def set_flexible(self, flexible: bool) -> None:
        self._flexible = flexible

    def _take(self, n: int) -> bytes:
        end = self._pos + n
        if n < 0 or end > len(self._data):
            raise self.fail(f"need {n} bytes, {len(self._data) - self._pos} left")
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def int16(self) -> int:
        v: int = _I16.unpack(self._take(2))[0]
        return v

    def int32(self) -> int:
        v: int = _I32.unpack(self._take(4))[0]
        return v

    def int64(self) -> int:
        v: int = _I64.unpack(self._take(8))[0]
        return v

    def uvarint(self) -> int:
        result = 0
        for shift in range(0, 35, 7):
            (b,) = self._take(1)
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                if result > 0xFFFFFFFF:
                    break
                return result
        raise self.fail("unsigned varint longer than 32 bits")

    def _length(self, classic_width: int) -> int | None:
        """Read a length prefix; None means null. Negative lengths other than -1 are errors."""
        if self._flexible:
            n = self.uvarint()
            return None if n == 0 else n - 1
        n = self.int16() if classic_width == 2 else self.int32()
        if n == -1:
            return None
        if n < 0:
            raise self.fail(f"negative length {n}")
        return n

    def nullable_string(self) -> str | None:
        n = self._length(2)
        if n is None:
            return None
        raw = self._take(n)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"string is not valid UTF-8 ({exc.reason})") from None

    def string(self, field: str) -> str:
        s = self.nullable_string()
        if s is None:
            raise self.fail(f"{field} is null but the schema does not allow null")
        return s

    def bytes_(self, field: str) -> bytes:
        n = self._length(4)
        if n is None:
            raise self.fail(f"{field} is null but the schema does not allow null")
        return self._take(n)

    def array_length(self, field: str) -> int:
        n = self._length(4)
        if n is None:
            raise self.fail(f"{field} is null but the schema does not allow null")
        return n

    def skip_tagged_fields(self) -> None:
        if not self._flexible:
            return
        count = self.uvarint()
        for _ in range(count):
            tag = self.uvarint()
            size = self.uvarint()
            self._take(size)
            log.debug("skipped unknown tagged field %d (%d bytes) in %s", tag, size, self._what)

    def finish(self) -> None:
        left = len(self._data) - self._pos
        if left:
            raise self.fail(f"{left} trailing bytes")


# --------------------------------------------------------------------------- keys


# --------------------------------------------------------------------------- record factories
# One per record kind and tombstone, named as Kafka's GroupCoordinatorRecordHelpers
# (newGroupMetadataRecord, newOffsetCommitRecord, ...).


def new_group_metadata_record(group: ClassicGroup, assignments: dict[str, bytes]) -> CoordinatorRecord:
    """The group's metadata record: its generation, protocol, leader and members, with
    ``assignments`` (member id -> assignment bytes; a member without one gets empty bytes)."""
    protocol = group.protocol_name
    members = tuple(
        MemberMetadataRecord(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(protocol) if protocol is not None else b"",
            assignment=assignments.get(m.member_id, b""),
        )
        for m in group.members.values()
    )
    return CoordinatorRecord(
        key=GroupMetadataKey(group=group.group_id),
        value=GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation,
            protocol=protocol,
            leader=group.leader_id if group.members else None,
            current_state_timestamp=group.state_timestamp,
            members=members,
        ),
    )


def new_group_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    """Deletes the group's metadata record (DeleteGroups, expiry of an Empty group)."""
    return CoordinatorRecord(key=GroupMetadataKey(group=group_id), value=None)


#: (group, topic, partition) -> its OffsetCommitKey, and -> the key's bytes: a group commits
#: the same partitions again and again, and both are immutable. Each cache starts over when
#: it reaches _KEY_CACHE_SIZE entries.
_COMMIT_KEYS: dict[tuple[str, str, int], OffsetCommitKey] = {}
_COMMIT_KEY_BYTES: dict[tuple[str, str, int], bytes] = {}
_KEY_CACHE_SIZE = 100_000


def new_offset_commit_record(
    group_id: str, topic: str, partition: int, value: OffsetCommitValue
) -> CoordinatorRecord:
    ident = (group_id, topic, partition)
    key = _COMMIT_KEYS.get(ident)
    if key is None:
        if len(_COMMIT_KEYS) >= _KEY_CACHE_SIZE:
            _COMMIT_KEYS.clear()
        key = _COMMIT_KEYS[ident] = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
    return CoordinatorRecord(key=key, value=value)


def new_offset_commit_tombstone(group_id: str, topic: str, partition: int) -> CoordinatorRecord:
    """Deletes one committed offset (OffsetDelete, DeleteGroups, expiry)."""
    key = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
    return CoordinatorRecord(key=key, value=None)


_OFFSET_KEY_HEAD = struct.Struct(">hh")
_OFFSET_VALUE_V3_HEAD = struct.Struct(">hqih")  # version, offset, leader epoch, metadata length
_VALUE_I64 = struct.Struct(">q")
_KEY_I16 = struct.Struct(">h")
_KEY_I32 = struct.Struct(">i")


def encode_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    """Key bytes: OffsetCommitKey as version 1, GroupMetadataKey as version 2.

    An offset commit's key (one per committed partition, the hot path) is packed directly;
    anything out of the ordinary (a name too long, a partition outside int32, text UTF-8
    cannot carry) takes the checked writer, which raises its usual error.
    """
    if type(key) is OffsetCommitKey:
        ident = (key.group, key.topic, key.partition)
        data = _COMMIT_KEY_BYTES.get(ident)
        if data is not None:
            return data
        try:
            group = key.group.encode()
            topic = key.topic.encode()
        except UnicodeEncodeError:
            return _encode_key_checked(key)
        if len(group) <= 0x7FFF and len(topic) <= 0x7FFF and -0x80000000 <= key.partition <= 0x7FFFFFFF:
            data = b"".join(
                (
                    _OFFSET_KEY_HEAD.pack(OFFSET_COMMIT_KEY_VERSION, len(group)),
                    group,
                    _KEY_I16.pack(len(topic)),
                    topic,
                    _KEY_I32.pack(key.partition),
                )
            )
            if len(_COMMIT_KEY_BYTES) >= _KEY_CACHE_SIZE:
                _COMMIT_KEY_BYTES.clear()
            _COMMIT_KEY_BYTES[ident] = data
            return data
    return _encode_key_checked(key)


def _encode_key_checked(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    w = WireWriter(flexible=False, checked=True)
    if isinstance(key, OffsetCommitKey):
        w.int16(OFFSET_COMMIT_KEY_VERSION)
        w.string(key.group, "group")
        w.string(key.topic, "topic")
        w.int32(key.partition)
    elif isinstance(key, GroupMetadataKey):
        w.int16(GROUP_METADATA_KEY_VERSION)
        w.string(key.group, "group")
    else:
        raise TypeError(f"not a coordinator record key: {key!r}")
    return w.getvalue()


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | UnknownKey:
    data = bytes(data)
    r = _Reader(data, "record key")
    version = r.int16()
    if version in (0, 1):
        ok = OffsetCommitKey(group=r.string("group"), topic=r.string("topic"), partition=r.int32())
        r.finish()
        return ok
    if version == GROUP_METADATA_KEY_VERSION:
        gk = GroupMetadataKey(group=r.string("group"))
        r.finish()
        return gk
    if version < 0:
        raise r.fail(f"negative key version {version}")
    return UnknownKey(version=version, raw=data)


# --------------------------------------------------------------------------- values


def _check_version(version: int) -> None:
    if not 0 <= version <= MAX_VALUE_VERSION:
        raise ValueError(f"value version {version} is outside 0..{MAX_VALUE_VERSION}")


def default_value_version(value: OffsetCommitValue | GroupMetadataValue) -> int:
    """The version a Kafka >= 2.3 broker writes for this value."""
    if isinstance(value, OffsetCommitValue):
        return 1 if value.expire_timestamp is not None else 3
    return 3


def encode_value(
    value: OffsetCommitValue | GroupMetadataValue | None, version: int | None = None
) -> bytes | None:
    """Value bytes, or None for a tombstone.

    Without ``version`` the broker's own choice is used (:func:`default_value_version`). As
    in Kafka, an offset commit that carries an expire timestamp is written as v1, which has
    no leader epoch: the epoch is dropped there (real requests never carry both, the expire
    timestamp comes from OffsetCommit v2-v4 and the epoch from v6+). With an explicit
    ``version`` every field must be representable, else ValueError.
    """
    if value is None:
        return None
    if version is None and type(value) is OffsetCommitValue and value.expire_timestamp is None:
        # The hot path (every commit): v3 packed directly; anything a checked writer would
        # refuse (a field out of range, metadata too long or not encodable) takes it instead.
        metadata = value.metadata
        if type(metadata) is str:
            try:
                raw = metadata.encode()
                if len(raw) <= 0x7FFF:
                    epoch = value.leader_epoch
                    head = _OFFSET_VALUE_V3_HEAD.pack(
                        3, value.offset, -1 if epoch is None else epoch, len(raw)
                    )
                    return head + raw + _VALUE_I64.pack(value.commit_timestamp)
            except (UnicodeEncodeError, struct.error):
                pass
    if version is None:
        version = default_value_version(value)
        if isinstance(value, OffsetCommitValue) and version == 1 and value.leader_epoch is not None:
            log.debug(
                "offset commit with expire timestamp written as v1 drops leader epoch %d", value.leader_epoch
            )
            value = OffsetCommitValue(
                offset=value.offset,
                leader_epoch=None,
                metadata=value.metadata,
                commit_timestamp=value.commit_timestamp,
                expire_timestamp=value.expire_timestamp,
            )
    _check_version(version)
    w = WireWriter(flexible=version >= FLEXIBLE_VALUE_VERSION, checked=True)
    w.int16(version)
    if isinstance(value, OffsetCommitValue):
        _write_offset_commit_value(w, value, version)
    elif isinstance(value, GroupMetadataValue):
        _write_group_metadata_value(w, value, version)
    else:
        raise TypeError(f"not a coordinator record value: {value!r}")
    return w.getvalue()


def _write_offset_commit_value(w: WireWriter, v: OffsetCommitValue, version: int) -> None:
    if v.leader_epoch is not None and version < 3:
        raise ValueError(f"OffsetCommitValue v{version} cannot carry a leader epoch")
    if v.expire_timestamp is not None and version != 1:
        raise ValueError(f"OffsetCommitValue v{version} cannot carry an expire timestamp (only v1 can)")
    w.int64(v.offset)
    if version >= 3:
        w.int32(-1 if v.leader_epoch is None else v.leader_epoch)
    w.string(v.metadata, "metadata")
    w.int64(v.commit_timestamp)
    if version == 1:
        w.int64(-1 if v.expire_timestamp is None else v.expire_timestamp)
    w.tagged_fields()


def _write_group_metadata_value(w: WireWriter, v: GroupMetadataValue, version: int) -> None:
    if v.current_state_timestamp is not None and version < 2:
        raise ValueError(f"GroupMetadataValue v{version} cannot carry currentStateTimestamp")
    w.string(v.protocol_type, "protocolType")
    w.int32(v.generation)
    w.string(v.protocol, "protocol")
    w.string(v.leader, "leader")
    if version >= 2:
        w.int64(-1 if v.current_state_timestamp is None else v.current_state_timestamp)
    w.array_length(len(v.members))
    for m in v.members:
        if m.group_instance_id is not None and version < 3:
            raise ValueError(f"GroupMetadataValue v{version} cannot carry groupInstanceId")
        if version == 0 and m.rebalance_timeout != m.session_timeout:
            raise ValueError(
                "GroupMetadataValue v0 has no rebalanceTimeout (readers use the session timeout); "
                f"member {m.member_id!r} has {m.rebalance_timeout} != {m.session_timeout}"
            )
        w.string(m.member_id, "memberId")
        if version >= 3:
            w.string(m.group_instance_id, "groupInstanceId")
        w.string(m.client_id, "clientId")
        w.string(m.client_host, "clientHost")
        if version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
        w.tagged_fields()
    w.tagged_fields()


def decode_value(
    key: OffsetCommitKey | GroupMetadataKey | UnknownKey, data: bytes | None
) -> OffsetCommitValue | GroupMetadataValue | None:
    """Decode the value stored under ``key``; None (a tombstone) stays None."""
    if data is None:
        return None
    data = bytes(data)
    if isinstance(key, OffsetCommitKey):
        r = _Reader(data, "OffsetCommitValue")
    elif isinstance(key, GroupMetadataKey):
        r = _Reader(data, "GroupMetadataValue")
    else:
        raise RecordDecodeError(f"no value layout for record key version {key.version}")
    version = r.int16()
    if not 0 <= version <= MAX_VALUE_VERSION:
        raise r.fail(f"unsupported value version {version}")
    r.set_flexible(version >= FLEXIBLE_VALUE_VERSION)
    value: OffsetCommitValue | GroupMetadataValue
    if isinstance(key, OffsetCommitKey):
        value = _read_offset_commit_value(r, version)
    else:
        value = _read_group_metadata_value(r, version)
    r.finish()
    return value


def _read_offset_commit_value(r: _Reader, version: int) -> OffsetCommitValue:
    offset = r.int64()
    leader_epoch: int | None = None
    if version >= 3:
        leader_epoch = r.int32()
        if leader_epoch == -1:
            leader_epoch = None
    metadata = r.string("metadata")
    commit_timestamp = r.int64()
    expire_timestamp: int | None = None
    if version == 1:
        expire_timestamp = r.int64()
        if expire_timestamp == -1:
            expire_timestamp = None
    r.skip_tagged_fields()
    return OffsetCommitValue(
        offset=offset,
        leader_epoch=leader_epoch,
        metadata=metadata,
        commit_timestamp=commit_timestamp,
        expire_timestamp=expire_timestamp,
    )


def _read_group_metadata_value(r: _Reader, version: int) -> GroupMetadataValue:
    protocol_type = r.string("protocolType")
    generation = r.int32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    current_state_timestamp: int | None = None
    if version >= 2:
        current_state_timestamp = r.int64()
        if current_state_timestamp == -1:
            current_state_timestamp = None
    count = r.array_length("members")
    members: list[MemberMetadataRecord] = []
    for _ in range(count):
        member_id = r.string("memberId")
        group_instance_id = r.nullable_string() if version >= 3 else None
        client_id = r.string("clientId")
        client_host = r.string("clientHost")
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        if rebalance_timeout == -1:
            rebalance_timeout = session_timeout
        subscription = r.bytes_("subscription")
        assignment = r.bytes_("assignment")
        r.skip_tagged_fields()
        members.append(
            MemberMetadataRecord(
                member_id=member_id,
                group_instance_id=group_instance_id,
                client_id=client_id,
                client_host=client_host,
                rebalance_timeout=rebalance_timeout,
                session_timeout=session_timeout,
                subscription=subscription,
                assignment=assignment,
            )
        )
    r.skip_tagged_fields()
    return GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        current_state_timestamp=current_state_timestamp,
        members=tuple(members),
    )


# --------------------------------------------------------------------------- records


class SelfEncodingRecord(Protocol):
    """A record of another group type that writes its own bytes (the consumer groups' records
    of KIP-848, :mod:`groupcoord.coordinator.consumer.records`, which import this module)."""

    def encode(self) -> tuple[bytes, bytes | None]: ...


def encode_record(rec: CoordinatorRecord | SelfEncodingRecord) -> tuple[bytes, bytes | None]:
    if isinstance(rec, CoordinatorRecord):
        return encode_key(rec.key), encode_value(rec.value)
    return rec.encode()


def decode_record(key_bytes: bytes, value_bytes: bytes | None) -> CoordinatorRecord | None:
    """Decode one log record; None for record types a classic coordinator does not know."""
    key = decode_key(key_bytes)
    if isinstance(key, UnknownKey):
        log.warning("skipping __consumer_offsets record with unknown key version %d", key.version)
        return None
    return CoordinatorRecord(key=key, value=decode_value(key, value_bytes))


def encoded_size(rec: CoordinatorRecord) -> int:
    """Bytes of key plus value as written (the payload, without record-batch framing)."""
    key, value = encode_record(rec)
    return len(key) + (0 if value is None else len(value))


# --------------------------------------------------------------------------- partitioning


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``h = 31*h + unit`` over UTF-16 code units, as int32."""
    # An ASCII string's code units are its bytes; any other is read as big-endian UTF-16 units in
    # one unpack (a third of the time of indexing byte pairs, interpreted: loading hashes every group).
    units: bytes | tuple[int, ...]
    if s.isascii():
        units = s.encode("ascii")
    else:
        raw = s.encode("utf-16-be", "surrogatepass")
        units = struct.unpack(f">{len(raw) // 2}H", raw)
    h = 0
    for unit in units:
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition that owns ``group_id``.

    Kafka's ``Utils.abs(hashCode) % numPartitions``, where ``Utils.abs`` maps
    ``Integer.MIN_VALUE`` to 0 (Java's ``Math.abs`` would leave it negative).
    """
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    h = java_string_hash(group_id)
    h = 0 if h == -0x80000000 else abs(h)
    return h % num_partitions


# ---------------------------------------------------------------- fast path for bulk readers

_FAST_V3 = struct.Struct(">hqih")  # OffsetCommitValue v3: version, offset, leader epoch, metadata length
_FAST_V1 = struct.Struct(">hqh")  # OffsetCommitValue v1: version, offset, metadata length
_FAST_I64 = struct.Struct(">q")


def fast_offset_commit_value(value: bytes) -> tuple[int, int, int | None, str, int, int | None] | None:
    """(version, offset, leader epoch, metadata, commit ts, expire ts) for the two value layouts
    brokers write (v3; v1 when an expire timestamp is set), read with fixed structs; None for any
    other version or anything unexpected, in which case the caller uses the full codec
    (``records.decode_value``), which the tests show this agrees with."""
    n = len(value)
    if n < 2:
        return None
    version = value[1] if value[0] == 0 else -1
    if version == 3 and n >= 24:
        _v, offset, epoch, mlen = _FAST_V3.unpack_from(value, 0)
        if mlen < 0 or 16 + mlen + 8 != n:
            return None
        try:
            meta = value[16 : 16 + mlen].decode("utf-8") if mlen else ""
        except UnicodeDecodeError:
            return None  # the full codec reports it, with the field and the byte
        (commit_ts,) = _FAST_I64.unpack_from(value, 16 + mlen)
        return 3, offset, None if epoch == -1 else epoch, meta, commit_ts, None
    if version == 1 and n >= 28:
        _v, offset, mlen = _FAST_V1.unpack_from(value, 0)
        if mlen < 0 or 12 + mlen + 16 != n:
            return None
        try:
            meta = value[12 : 12 + mlen].decode("utf-8") if mlen else ""
        except UnicodeDecodeError:
            return None
        commit_ts, expire_ts = struct.unpack_from(">qq", value, 12 + mlen)
        return 1, offset, None, meta, commit_ts, None if expire_ts == -1 else expire_ts
    return None
