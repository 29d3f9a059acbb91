"""Fetch response bodies (v0-v16) encoded by hand, with the record bytes left out as regions.

A Fetch response is mostly record bytes. kio's writer copies them into the encoded body; this
encoder writes everything else and hands back the body as pieces in order: ``bytes`` for the
fields, and whatever object stood for a partition's records (a file region to be sent with
``os.sendfile``) where the records go. Only the size of such an object is needed here, so its
length prefix can be written ahead of it. The bytes are those kio writes for the same response
(``tests/broker/test_fetch_zero_copy.py`` compares them at every version; v0-v3, whose
classes are in ``protocol.old_versions``, in ``tests/broker/test_old_versions_produce_fetch.py``).
Before v4 a partition has no last stable offset, log start offset or aborted transactions, and
v0 has no throttle time.

What the broker sends: no aborted transactions (null), preferred read replica -1; of the tagged
fields only KIP-951's (v16+): a partition's current leader (tag 1) and the response's node
endpoints (tag 0), which a broker that is not the leader sends (diverging epoch and snapshot id
keep their defaults).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from groupcoord.protocol.primitives import uvarint_bytes

MIN_VERSION = 0
MAX_VERSION = 16
FIRST_FLEXIBLE = 12
FIRST_TOPIC_ID = 13
#: KIP-951: the current leader and node endpoints tagged fields are sent from this version
FIRST_LEADER_HINT = 16

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PART_V0 = struct.Struct(">ihq")  # partition, error, high watermark
_PART_V4 = struct.Struct(">ihqq")  # partition, error, high watermark, last stable offset
_PART_V5 = struct.Struct(">ihqqq")  # + log start offset
_TOP_V7 = struct.Struct(">ihi")  # throttle, error, session id
_ABORTED = struct.Struct(">qq")  # producer id, first offset
_LEADER = struct.Struct(">BBBiiB")  # 1 tagged field, tag 1, size 9, leader id, leader epoch, no tags


class Sized(Protocol):
    @property
    def length(self) -> int: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionOut:
    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    #: the record bytes, or a stand-in for them (e.g. a file region) of ``records.length`` bytes
    records: bytes | Sized
    #: (producer id, first offset) of each aborted transaction in ``records`` (read_committed
    #: fetches); None is written as a null array
    aborted_transactions: tuple[tuple[int, int], ...] | None = None
    #: KIP-951 (v16+): (leader id, leader epoch) of the partition, sent as the CurrentLeader
    #: tagged field unless None or (-1, -1), its default (Kafka writes a tagged field only when
    #: it differs from its default)
    current_leader: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class NodeEndpoint:
    """One entry of the response's NodeEndpoints (KIP-951, v16+)."""

    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicOut:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionOut, ...]


def encode_fetch_body(
    version: int,
    topics: list[TopicOut],
    *,
    throttle_ms: int = 0,
    error_code: int = 0,
    session_id: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
) -> list[bytes | Sized]:
    """The response body (no size prefix, no response header) as pieces to write in order;
    consecutive fields are merged into one ``bytes`` piece. ``node_endpoints`` and each
    partition's ``current_leader`` are written from v16 only."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"Fetch response v{version} is not supported")
    flexible = version >= FIRST_FLEXIBLE
    by_id = version >= FIRST_TOPIC_ID
    part_s = _PART_V5 if version >= 5 else _PART_V4
    old = version < 4
    with_replica = version >= 11
    hints = version >= FIRST_LEADER_HINT
    out: list[bytes | Sized] = []
    buf = bytearray()
    if version >= 7:
        buf += _TOP_V7.pack(throttle_ms, error_code, session_id)
    elif version >= 1:
        buf += _I32.pack(throttle_ms)
    buf += uvarint_bytes(len(topics) + 1) if flexible else _I32.pack(len(topics))
    for topic in topics:
        if by_id:
            buf += topic.topic_id.bytes
        else:
            name = topic.name.encode()
            buf += uvarint_bytes(len(name) + 1) if flexible else _I16.pack(len(name))
            buf += name
        parts = topic.partitions
        buf += uvarint_bytes(len(parts) + 1) if flexible else _I32.pack(len(parts))
        for p in parts:
            if old:
                buf += _PART_V0.pack(p.partition, p.error_code, p.high_watermark)
            elif version >= 5:
                buf += part_s.pack(
                    p.partition, p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset
                )
            else:
                buf += part_s.pack(p.partition, p.error_code, p.high_watermark, p.last_stable_offset)
            aborted = p.aborted_transactions
            if old:
                pass  # no aborted transactions before v4
            elif aborted is None:
                buf += b"\x00" if flexible else b"\xff\xff\xff\xff"
            else:
                buf += uvarint_bytes(len(aborted) + 1) if flexible else _I32.pack(len(aborted))
                for producer_id, first_offset in aborted:
                    buf += _ABORTED.pack(producer_id, first_offset)
                    if flexible:
                        buf += b"\x00"
            if with_replica:
                buf += b"\xff\xff\xff\xff"
            records = p.records
            if isinstance(records, bytes):
                size = len(records)
                buf += uvarint_bytes(size + 1) if flexible else _I32.pack(size)
                buf += records
            else:
                size = records.length
                buf += uvarint_bytes(size + 1) if flexible else _I32.pack(size)
                out.append(bytes(buf))
                out.append(records)
                buf = bytearray()
            leader = p.current_leader
            if hints and leader is not None and leader != (-1, -1):
                buf += _LEADER.pack(1, 1, 9, leader[0], leader[1], 0)
            elif flexible:
                buf += b"\x00"  # partition tagged fields
        if flexible:
            buf += b"\x00"  # topic tagged fields
    if hints and node_endpoints:
        buf += _node_endpoints(node_endpoints)
    elif flexible:
        buf += b"\x00"  # response tagged fields
    if buf or not out:
        out.append(bytes(buf))
    return out


def _node_endpoints(nodes: Sequence[NodeEndpoint]) -> bytes:
    """The response's tagged fields holding only NodeEndpoints (tag 0): a compact array of
    (node id, host, port, rack) structs, each with no tagged fields of its own."""
    field = bytearray(uvarint_bytes(len(nodes) + 1))
    for node in nodes:
        host = node.host.encode()
        field += _I32.pack(node.node_id) + uvarint_bytes(len(host) + 1) + host
        field += _I32.pack(node.port)
        if node.rack is None:
            field += b"\x00"
        else:
            rack = node.rack.encode()
            field += uvarint_bytes(len(rack) + 1) + rack
        field += b"\x00"
    return b"\x01\x00" + uvarint_bytes(len(field)) + bytes(field)
